package kit

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/storage"
)

var counted = storage.Key(storage.PrefixMeta, "kit-test-count")

// bump adds one to the count at counted inside tx, and says so with an
// event.
func bump(tx *Txn) error {
	n := 0
	if v, err := tx.Get(counted); err == nil {
		n, _ = strconv.Atoi(string(v))
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	tx.Publish("x.bumped", events.Everyone(), n+1)
	return tx.Set(counted, []byte(strconv.Itoa(n+1)))
}

// A joinable request that goes on after one of its Updates failed (as
// cortex.update's max_retries does after a conflict) runs its later
// Update once, committed with the request's pending record: its write
// and its event happen once, and a retry gets its answer. (Such an Update cannot join the request's transaction: on its
// own it committed, and the transaction, which had read what it wrote,
// conflicted and ran the request again, up to the store's retry limit.)
func TestAJoinableRequestThatGoesOnAfterAFailedUpdateWritesOnce(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(100)
	defer tap.Close()
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Joinable: true}
	run := func(ctx context.Context) (json.RawMessage, error) {
		err := env.Update(ctx, func(tx *Txn) error {
			if _, err := tx.Get(counted); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			return errs.New(errs.Conflict, "moved on")
		})
		if errs.KindOf(err) != errs.Conflict {
			return nil, err
		}
		if err := env.Update(ctx, bump); err != nil {
			return nil, err
		}
		// The bump committed on its own: with the request's pending
		// record, so that a retry after a kill now does not run it again.
		if _, rec, recorded := committed(t, env); !recorded || rec.State != oncePending {
			t.Errorf("the bump committed with a %q record (%v); want the pending one", rec.State, recorded)
		}
		return json.RawMessage(`{"ok":true}`), nil
	}
	out, err := env.RunOnce(context.Background(), o, run)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := stored(t, env, counted); n != "1" {
		t.Errorf("the count is %q after one request; want 1", n)
	}
	if got := names(tap.Drain()); got != "x.bumped" {
		t.Errorf("events %q; want one x.bumped", got)
	}
	if again, err := env.RunOnce(context.Background(), o, run); err != nil || string(again) != string(out) {
		t.Errorf("the retry: %s, %v; want %s", again, err, out)
	}
	if n, _ := stored(t, env, counted); n != "1" {
		t.Errorf("the count is %q after the retry; want 1", n)
	}
}

// An Update that a joinable request makes inside another of its Updates
// never commits on its own with nothing to tell a retry that the request
// ran: not while the request is joined (that one rolls back, and the
// request runs again unjoined), and then with its pending record.
func TestAJoinableRequestsNestedUpdateNeverCommitsUnmarked(t *testing.T) {
	env := newEnv(t)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Joinable: true}
	runs := 0
	out, err := env.RunOnce(context.Background(), o, func(ctx context.Context) (json.RawMessage, error) {
		runs++
		err := env.Update(ctx, func(tx *Txn) error {
			if err := tx.Set(key, []byte("outer")); err != nil {
				return err
			}
			return env.Update(ctx, bump)
		})
		if err != nil {
			return nil, err
		}
		if n, ok := stored(t, env, counted); ok {
			if _, rec, recorded := committed(t, env); !recorded {
				t.Errorf("run %d: the nested Update committed (count %q) with no record of the request (%+v)", runs, n, rec)
			}
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wrote, rec, recorded := committed(t, env)
	if n, _ := stored(t, env, counted); !wrote || n != "1" || !recorded || rec.State != onceDone || rec.Result != string(out) {
		t.Errorf("after RunOnce: wrote %v, count %q, record %+v (%v); want both writes once and the done record", wrote, n, rec, recorded)
	}
}

// A joinable request whose transaction conflicts runs again from fresh
// state: what the first run queued (its event, its AfterCommit work) is
// dropped with it, so each happens once, after the commit.
func TestAJoinableRequestRunAgainAfterAConflictPublishesOnce(t *testing.T) {
	env := newEnv(t)
	tap := env.Events.Tap(100)
	defer tap.Close()
	o := Once{Key: "k1", Principal: "alice", Action: "x.do", Joinable: true}
	runs, after := 0, 0
	_, err := env.RunOnce(context.Background(), o, func(ctx context.Context) (json.RawMessage, error) {
		runs++
		err := env.Update(ctx, func(tx *Txn) error {
			tx.AfterCommit(func(context.Context) { after++ })
			return bump(tx)
		})
		if err != nil {
			return nil, err
		}
		if runs == 1 {
			// Another writer changes what the first run read.
			if err := env.Store.Update(context.Background(), func(tx *storage.Tx) error { return tx.Set(counted, []byte("10")) }); err != nil {
				return nil, err
			}
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := stored(t, env, counted); runs != 2 || n != "11" {
		t.Fatalf("%d runs, count %q; want the conflict to run it again on the other writer's 10", runs, n)
	}
	if got := names(tap.Drain()); got != "x.bumped" || after != 1 {
		t.Errorf("events %q, AfterCommit ran %d times; want one x.bumped and one AfterCommit", got, after)
	}
}
