package kit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// counter returns a run function that increments a stored counter in one
// Update and returns it, and a way to read how often it ran.
func counter(env *Env) (func(ctx context.Context) (json.RawMessage, error), *atomic.Int32) {
	var runs atomic.Int32
	return func(ctx context.Context) (json.RawMessage, error) {
		n := runs.Add(1)
		err := env.Update(ctx, func(tx *Txn) error {
			return tx.Set(key, []byte{byte(n)})
		})
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"n":` + string(rune('0'+n)) + `,"html":"<&>"}`), nil
	}, &runs
}

func TestRunOnceRecordsTheCommitWithTheWriteItself(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Args: json.RawMessage(`{"a": 1}`)}
	// The engine dies after the action's commit, before the result is
	// recorded: what is left is the action's write and the pending record,
	// committed together.
	rec, _ := json.Marshal(onceRecord{State: oncePending, Action: o.Action, ArgsSHA256: argsHash(o.Args), Principal: o.Principal, At: t0})
	m := &onceMark{key: storage.Key(storage.PrefixIdempotency, o.Principal, o.Key), pending: rec}
	err := env.Update(context.WithValue(context.Background(), onceKey{}, m), func(tx *Txn) error {
		return tx.Set(key, []byte("written"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored(t, env, m.key); !ok {
		t.Fatal("the action's commit did not record the pending key")
	}
	run, runs := counter(env)
	_, err = env.RunOnce(context.Background(), o, run)
	var ee *errs.Error
	if !errors.As(err, &ee) || ee.Kind != errs.Conflict || !strings.Contains(ee.Message, "result was lost") {
		t.Fatalf("retry after a lost result: %v, want a ConflictError saying the result was lost", err)
	}
	if runs.Load() != 0 {
		t.Errorf("the retry ran the action again")
	}
}

func TestRunOnceReplaysTheFirstResultByteForByte(t *testing.T) {
	env := newEnv(t)
	run, runs := counter(env)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Args: json.RawMessage(`{"a": 1}`)}
	first, err := env.RunOnce(context.Background(), o, run)
	if err != nil {
		t.Fatal(err)
	}
	o.Args = json.RawMessage(`{ "a":1 }`) // the same args, spaced otherwise
	again, err := env.RunOnce(context.Background(), o, run)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) || runs.Load() != 1 {
		t.Errorf("retry: %s after %d run(s), want %s after 1", again, runs.Load(), first)
	}
	// Another principal's same key is another request.
	o.Principal = "bob"
	if _, err := env.RunOnce(context.Background(), o, run); err != nil || runs.Load() != 2 {
		t.Errorf("bob's same key: %v after %d run(s), want a run of its own", err, runs.Load())
	}
}

func TestRunOnceRefusesTheKeyForAnotherRequest(t *testing.T) {
	env := newEnv(t)
	run, runs := counter(env)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Args: json.RawMessage(`{"a":1}`)}
	if _, err := env.RunOnce(context.Background(), o, run); err != nil {
		t.Fatal(err)
	}
	for _, other := range []Once{
		{Key: "k1", Principal: "alice", Action: "x.do", Args: json.RawMessage(`{"a":2}`)},
		{Key: "k1", Principal: "alice", Action: "x.other", Args: json.RawMessage(`{"a":1}`)},
	} {
		_, err := env.RunOnce(context.Background(), other, run)
		var ee *errs.Error
		if !errors.As(err, &ee) || ee.Kind != errs.Validation || ee.Details["field"] != "idempotency_key" ||
			!strings.Contains(ee.Message, "already used for another request") {
			t.Errorf("%s %s: %v, want a ValidationError naming idempotency_key", other.Action, other.Args, err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
}

func TestRunOnceRecordsNothingForAFailedRun(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do"}
	fails := true
	run := func(ctx context.Context) (json.RawMessage, error) {
		// Something commits even when the action fails (a denial's
		// trace entry).
		if err := env.Update(ctx, func(tx *Txn) error { return tx.Set(key, []byte("noted")) }); err != nil {
			return nil, err
		}
		if fails {
			return nil, errs.New(errs.NotFound, "not yet")
		}
		return json.RawMessage(`{"ok":true}`), nil
	}
	if _, err := env.RunOnce(context.Background(), o, run); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("first run: %v", err)
	}
	if _, ok := stored(t, env, storage.Key(storage.PrefixIdempotency, "alice", "k1")); ok {
		t.Error("a failed run left a record under its key")
	}
	fails = false
	if out, err := env.RunOnce(context.Background(), o, run); err != nil || string(out) != `{"ok":true}` {
		t.Errorf("the retry: %s, %v; want it to run", out, err)
	}
}

func TestRunOnceChecksTheKey(t *testing.T) {
	env := newEnv(t)
	run, runs := counter(env)
	for _, k := range []string{strings.Repeat("k", 129), "tab\there", "café", "nul\x00"} {
		_, err := env.RunOnce(context.Background(), Once{Key: k, Principal: "alice", Action: "x.do"}, run)
		var ee *errs.Error
		if !errors.As(err, &ee) || ee.Kind != errs.Validation || ee.Details["field"] != "idempotency_key" {
			t.Errorf("key %q: %v, want a ValidationError naming idempotency_key", k, err)
		}
	}
	if _, err := env.RunOnce(context.Background(), Once{Key: strings.Repeat("~", 128) + "", Principal: "alice", Action: "x.do"}, run); err != nil {
		t.Errorf("a 128-byte key: %v", err)
	}
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1 (bad keys run nothing)", runs.Load())
	}
}

func TestRunOnceForgetsAKeyAfterADay(t *testing.T) {
	env := newEnv(t)
	clk := env.Clock.(*clock.Fixed)
	run, runs := counter(env)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do"}
	if _, err := env.RunOnce(context.Background(), o, run); err != nil {
		t.Fatal(err)
	}
	clk.Advance(IdempotencyWindow - time.Nanosecond)
	if _, err := env.RunOnce(context.Background(), o, run); err != nil || runs.Load() != 1 {
		t.Fatalf("within the day: %v, %d runs; want a replay", err, runs.Load())
	}
	other := Once{Key: "k2", Principal: "alice", Action: "x.do"}
	clk.Advance(time.Nanosecond)
	if _, err := env.RunOnce(context.Background(), other, run); err != nil {
		t.Fatal(err)
	}
	// Recording k2 a day after k1 dropped k1's record.
	if _, ok := stored(t, env, storage.Key(storage.PrefixIdempotency, "alice", "k1")); ok {
		t.Error("k1's record outlived its day")
	}
	if _, err := env.RunOnce(context.Background(), o, run); err != nil || runs.Load() != 3 {
		t.Errorf("a day later: %v, %d runs; want k1 to run again", err, runs.Load())
	}
}

func TestRunOnceRefusesTheSameKeyWhileItRuns(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do"}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := env.RunOnce(context.Background(), o, func(ctx context.Context) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`{}`), nil
		})
		done <- err
	}()
	<-started
	_, err := env.RunOnce(context.Background(), o, func(ctx context.Context) (json.RawMessage, error) {
		t.Error("the same key ran twice at once")
		return json.RawMessage(`{}`), nil
	})
	if errs.KindOf(err) != errs.Conflict || !strings.Contains(err.Error(), "still running") {
		t.Errorf("the same key while it runs: %v, want a ConflictError", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
