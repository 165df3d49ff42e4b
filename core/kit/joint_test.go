package kit

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/storage"
)

// Updates under Join run inside the open transaction (issue 13, item 8):
// their writes commit or roll back with it, and their events wait for its
// commit.
func TestJoinedUpdatesCommitOrRollBackWithTheOuterTransaction(t *testing.T) {
	env := newEnv(t)
	inner := storage.Key(storage.PrefixMeta, "kit-inner")
	for _, outerFails := range []bool{true, false} { // the failure first: nothing stored yet
		tap := env.Events.Tap(10)
		err := env.Update(context.Background(), func(tx *Txn) error {
			ctx, joint := Join(context.Background(), tx)
			err := env.Update(ctx, func(tx *Txn) error {
				tx.Publish("item.created", events.Everyone(), 1)
				return tx.Set(inner, []byte("inner"))
			})
			if err != nil {
				return err
			}
			if _, ok := stored(t, env, inner); ok {
				t.Error("a joined write was visible before the outer commit")
			}
			if joint.Close() {
				t.Error("the joint says a joined Update failed")
			}
			if outerFails {
				return errors.New("outer fails")
			}
			return tx.Set(key, []byte("outer"))
		})
		_, innerThere := stored(t, env, inner)
		_, outerThere := stored(t, env, key)
		evs := tap.Drain()
		tap.Close()
		if outerFails {
			if err == nil || innerThere || outerThere || len(evs) != 0 {
				t.Errorf("outer failed (%v): inner %v, outer %v, events %s", err, innerThere, outerThere, names(evs))
			}
			continue
		}
		if err != nil || !innerThere || !outerThere || names(evs) != "item.created" {
			t.Errorf("outer committed (%v): inner %v, outer %v, events %s", err, innerThere, outerThere, names(evs))
		}
	}
}

// After a joined fn fails, and after Close, Updates under the context open
// their own transactions again: a refused action's trace entry, written
// after its failure, survives the outer rollback.
func TestUpdatesAfterAFailedOneOrCloseNoLongerJoin(t *testing.T) {
	env := newEnv(t)
	note := storage.Key(storage.PrefixMeta, "kit-note")
	late := storage.Key(storage.PrefixMeta, "kit-late")
	var ctx context.Context
	_ = env.Update(context.Background(), func(tx *Txn) error {
		var joint *Joint
		ctx, joint = Join(context.Background(), tx)
		if err := env.Update(ctx, func(tx *Txn) error { return errors.New("refused") }); err == nil {
			t.Fatal("the failing fn did not fail")
		}
		if err := env.Update(ctx, func(tx *Txn) error { return tx.Set(note, []byte("denied")) }); err != nil {
			t.Fatal(err)
		}
		if !joint.Close() {
			t.Error("the joint does not say a joined Update failed")
		}
		return errors.New("the action failed")
	})
	if _, ok := stored(t, env, note); !ok {
		t.Error("the note written after the failure rolled back with the outer transaction")
	}
	// The outer transaction is gone: an Update under its context (work
	// left running after the action) commits on its own.
	if err := env.Update(ctx, func(tx *Txn) error { return tx.Set(late, []byte("late")) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored(t, env, late); !ok {
		t.Error("an Update after Close did not commit")
	}
}
