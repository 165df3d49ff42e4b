package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/ids"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func newEnv(t *testing.T) *Env {
	t.Helper()
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	tr, err := trace.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	c := clock.NewFixed(t0)
	return &Env{
		Store: st, Clock: c, IDs: ids.New(c, "test"), Events: events.NewBroker(c),
		Trace: tr, Actions: action.NewRegistry(), LLM: llm.Offline{},
	}
}

var key = storage.Key(storage.PrefixMeta, "kit-test")

func stored(t *testing.T, env *Env, k []byte) (string, bool) {
	t.Helper()
	var v []byte
	err := env.Store.View(func(tx *storage.Tx) error {
		var err error
		v, err = tx.Get(k)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v), true
}

func names(evs []events.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Name)
	}
	return strings.Join(s, ",")
}

func TestUpdatePublishesAfterCommit(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(10)
	defer tap.Close()
	err := env.Update(context.Background(), func(tx *Txn) error {
		tx.Publish("item.created", events.Everyone(), 1)
		tx.PublishProgress("plan.progress", events.Everyone(), 2)
		if err := tx.Set(key, []byte("v")); err != nil {
			return err
		}
		tx.Publish("item.mutated", events.Everyone(), 3)
		if evs := tap.Drain(); len(evs) != 0 {
			t.Errorf("events published before commit: %s", names(evs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := tap.Drain()
	if got := names(evs); got != "item.created,plan.progress,item.mutated" {
		t.Fatalf("after commit: %q", got)
	}
	if !evs[1].Progress || evs[0].Progress || evs[0].Data != 1 || evs[2].Data != 3 {
		t.Fatalf("events %+v", evs)
	}
	if v, ok := stored(t, env, key); !ok || v != "v" {
		t.Fatalf("not committed: %q %v", v, ok)
	}
}

func TestUpdateErrorPublishesAndWritesNothing(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(10)
	defer tap.Close()
	boom := errs.New(errs.Validation, "no")
	err := env.Update(context.Background(), func(tx *Txn) error {
		if err := tx.Set(key, []byte("v")); err != nil {
			return err
		}
		if _, err := tx.Trace(action.Call{Turn: "t1", Principal: "p"}, "x", "m", nil); err != nil {
			return err
		}
		tx.Publish("item.mutated", events.Everyone(), nil)
		return fmt.Errorf("failing: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the fn's error", err)
	}
	if evs := tap.Drain(); len(evs) != 0 {
		t.Fatalf("a failed update published %s", names(evs))
	}
	if _, ok := stored(t, env, key); ok {
		t.Fatal("a failed update wrote its key")
	}
	if n, turns, _ := env.Trace.Count(); n != 0 || turns != 0 {
		t.Fatalf("a failed update left %d trace entries", n)
	}
}

// TestUpdateRetryPublishesOnlyCommittedAttempt makes the first attempt
// conflict with a concurrent write: events the aborted attempt queued must
// not be published.
func TestUpdateRetryPublishesOnlyCommittedAttempt(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(10)
	defer tap.Close()
	attempts := 0
	err := env.Update(context.Background(), func(tx *Txn) error {
		attempts++
		if _, err := tx.Get(key); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if attempts == 1 {
			// Someone else writes the key we read: our commit must conflict.
			if err := env.Store.Update(context.Background(), func(o *storage.Tx) error { return o.Set(key, []byte("other")) }); err != nil {
				return err
			}
		}
		tx.Publish(fmt.Sprintf("attempt.%d", attempts), events.Everyone(), nil)
		return tx.Set(key, []byte(fmt.Sprint("mine ", attempts)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Fatalf("%d attempts; the conflict did not happen", attempts)
	}
	if got := names(tap.Drain()); got != "attempt.2" {
		t.Fatalf("published %q, want only the committed attempt's event", got)
	}
	if v, _ := stored(t, env, key); v != "mine 2" {
		t.Fatalf("stored %q", v)
	}
}

func TestTxnTrace(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(10)
	defer tap.Close()
	call := action.Call{Principal: "agent_a", Turn: "turn_1", Clock: env.Clock}
	var entry trace.Entry
	err := env.Update(context.Background(), func(tx *Txn) error {
		var err error
		entry, err = tx.Trace(call, "item.mutated", "goal g1 updated", map[string]int{"version": 2})
		if err != nil {
			return err
		}
		// Not visible outside the transaction, nor announced, until commit.
		if got, _, _ := env.Trace.List(trace.Filter{}); len(got) != 0 {
			t.Errorf("entry visible before commit: %+v", got)
		}
		if evs := tap.Drain(); len(evs) != 0 {
			t.Errorf("published before commit: %s", names(evs))
		}
		_, err = tx.Trace(action.Call{Principal: "agent_a"}, "note", "no data, no turn", nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if entry.Seq == 0 || entry.TurnID != "turn_1" || entry.Principal != "agent_a" || entry.Kind != "item.mutated" ||
		!entry.At.Equal(t0) || string(entry.Data) != `{"version":2}` {
		t.Fatalf("entry %+v", entry)
	}
	got, _, err := env.Trace.List(trace.Filter{TurnID: "turn_1"})
	if err != nil || len(got) != 1 {
		t.Fatalf("List by turn: %+v, %v", got, err)
	}
	if g, _ := json.Marshal(got[0]); string(g) != mustJSON(t, entry) {
		t.Fatalf("listed %s, returned %s", g, mustJSON(t, entry))
	}
	evs := tap.Drain()
	if names(evs) != EventTraceRecorded.Name()+","+EventTraceRecorded.Name() {
		t.Fatalf("events %q", names(evs))
	}
	if e, ok := evs[0].Data.(trace.Entry); !ok || e.Seq != entry.Seq {
		t.Fatalf("trace.recorded data %#v", evs[0].Data)
	}
	if e := evs[1].Data.(trace.Entry); e.Data != nil || e.TurnID != "" {
		t.Fatalf("second entry %+v", e)
	}

	// Data that cannot be encoded is an error, and the entry is not written.
	err = env.Update(context.Background(), func(tx *Txn) error {
		_, err := tx.Trace(call, "x", "y", map[string]any{"c": make(chan int)})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "trace data") {
		t.Fatalf("unencodable data: %v", err)
	}
	if n, _, _ := env.Trace.Count(); n != 2 {
		t.Fatalf("%d entries", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCounts(t *testing.T) {
	env := newEnv(t)
	if got, err := env.Counts(); err != nil || len(got) != 0 {
		t.Fatalf("no counters: %v, %v", got, err)
	}
	env.AddCounter("cortex", func() (map[string]int, error) { return map[string]int{"items": 3, "goals": 1}, nil })
	n := 0
	env.AddCounter("history", func() (map[string]int, error) { n++; return map[string]int{"utterances": n}, nil })
	got, err := env.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["cortex"]["items"] != 3 || got["cortex"]["goals"] != 1 || got["history"]["utterances"] != 1 {
		t.Fatalf("Counts = %v", got)
	}
	// Counters run on every call.
	if got, _ = env.Counts(); got["history"]["utterances"] != 2 {
		t.Fatalf("second Counts = %v", got)
	}
	// A failing counter fails Counts, naming the subsystem.
	boom := errors.New("disk gone")
	env.AddCounter("episodic", func() (map[string]int, error) { return nil, boom })
	if _, err := env.Counts(); !errors.Is(err, boom) || !strings.Contains(err.Error(), "counting episodic") {
		t.Fatalf("failing counter: %v", err)
	}
	// Registering a name again replaces the counter.
	env.AddCounter("episodic", func() (map[string]int, error) { return map[string]int{"threads": 0}, nil })
	if got, err := env.Counts(); err != nil || len(got["episodic"]) != 1 {
		t.Fatalf("replaced counter: %v, %v", got, err)
	}
}

type provider struct{ name string }

func (p provider) Name() string                                        { return p.name }
func (p provider) Context(context.Context, TurnStart) (Section, error) { return Section{}, nil }
func (p provider) Commit(context.Context, *Txn, TurnEnd) (any, error) {
	return nil, nil
}

func TestProviders(t *testing.T) {
	env := newEnv(t)
	if len(env.Providers()) != 0 {
		t.Fatal("providers on a new env")
	}
	for _, n := range []string{"memory", "cortex", "history", "episodic"} {
		env.AddProvider(provider{n})
	}
	var got []string
	for _, p := range env.Providers() {
		got = append(got, p.Name())
	}
	if strings.Join(got, ",") != "cortex,episodic,history,memory" {
		t.Fatalf("providers %v, want sorted by name", got)
	}
	// Providers returns a copy.
	ps := env.Providers()
	ps[0] = provider{"zzz"}
	if env.Providers()[0].Name() != "cortex" {
		t.Fatal("Providers exposed its slice")
	}
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), "history") {
				t.Fatalf("duplicate provider: recover() = %v", r)
			}
		}()
		env.AddProvider(provider{"history"})
	}()
	if len(env.Providers()) != 4 {
		t.Fatalf("%d providers after the duplicate", len(env.Providers()))
	}
}

func TestValidation(t *testing.T) {
	e := Validation("limit", "must be 0 or more, got %d", -1)
	if e.Kind != errs.Validation || e.Message != "limit: must be 0 or more, got -1" || e.Details["field"] != "limit" {
		t.Fatalf("Validation = %+v", e)
	}
	// A field name with % in it (user input, e.g. a turn.end updates key) is
	// not a format string.
	e = Validation("updates.%s%d", "no provider named %q", "%s%d")
	if e.Message != `updates.%s%d: no provider named "%s%d"` {
		t.Fatalf("message %q", e.Message)
	}
	if e.Details["field"] != "updates.%s%d" {
		t.Fatalf("details %v", e.Details)
	}
	// %w keeps the cause.
	cause := errors.New("bad time")
	if e := Validation("at", "not RFC 3339: %w", cause); !errors.Is(e, cause) || !errors.Is(e, errs.ErrValidation) {
		t.Fatalf("cause lost: %+v", e)
	}
}
