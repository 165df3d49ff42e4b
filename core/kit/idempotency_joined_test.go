package kit

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// committed reports what another reader of the store sees now: whether
// the test's write committed, and the record under alice's key k1.
func committed(t *testing.T, env *Env) (wrote bool, rec onceRecord, recorded bool) {
	t.Helper()
	err := env.Store.View(func(tx *storage.Tx) error {
		var err error
		if wrote, err = tx.Has(key); err != nil {
			return err
		}
		err = tx.GetJSON(storage.Key(storage.PrefixIdempotency, "alice", "k1"), &rec)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		recorded = err == nil
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return wrote, rec, recorded
}

// A joinable request's write and its answer commit together: once the
// action has done its work and before RunOnce records the answer (where
// an engine killed would leave a retry only "its result was lost"),
// nothing of it has committed; afterwards both have.
func TestAJoinableRequestCommitsWithItsAnswer(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Joinable: true}
	runs := 0
	out, err := env.RunOnce(context.Background(), o, func(ctx context.Context) (json.RawMessage, error) {
		runs++
		if err := env.Update(ctx, func(tx *Txn) error { return tx.Set(key, []byte("written")) }); err != nil {
			return nil, err
		}
		if wrote, rec, recorded := committed(t, env); wrote || recorded {
			t.Errorf("after the action's Update, before its answer: the write committed %v, a %q record %v; want neither until the answer commits with them",
				wrote, rec.State, recorded)
		}
		return json.RawMessage(`{"n":1}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wrote, rec, recorded := committed(t, env)
	if !wrote || !recorded || rec.State != onceDone || rec.Result != string(out) {
		t.Fatalf("after RunOnce: wrote %v, record %+v (%v); want the write and the done record with %s", wrote, rec, recorded, out)
	}
	again, err := env.RunOnce(context.Background(), o, func(context.Context) (json.RawMessage, error) {
		t.Error("the retry ran the action again")
		return nil, nil
	})
	if err != nil || string(again) != string(out) || runs != 1 {
		t.Errorf("the retry: %s, %v after %d runs; want %s from the record", again, err, runs, out)
	}
}

// A joinable request that fails rolls its writes back with its
// transaction and records nothing: a retry runs it again.
func TestAFailedJoinableRequestLeavesNothing(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Joinable: true}
	fails := true
	run := func(ctx context.Context) (json.RawMessage, error) {
		err := env.Update(ctx, func(tx *Txn) error {
			if err := tx.Set(key, []byte("written")); err != nil {
				return err
			}
			if fails {
				return errs.New(errs.Permission, "not yours")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"ok":true}`), nil
	}
	if _, err := env.RunOnce(context.Background(), o, run); errs.KindOf(err) != errs.Permission {
		t.Fatalf("the failing run: %v, want its PermissionError", err)
	}
	if wrote, rec, recorded := committed(t, env); wrote || recorded {
		t.Fatalf("a failed run left its write (%v) or a %q record (%v)", wrote, rec.State, recorded)
	}
	fails = false
	if out, err := env.RunOnce(context.Background(), o, run); err != nil || string(out) != `{"ok":true}` {
		t.Errorf("the retry: %s, %v; want it to run", out, err)
	}
}
