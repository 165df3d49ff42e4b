//go:build !noplanning

package planner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// A checkpointed subtask whose joinable action goes on after one of its
// Updates failed (cortex.update's max_retries after a conflict) writes
// once. (That later Update could not join the subtask's transaction: on
// its own it committed, the transaction, which had read what it wrote,
// conflicted, and the subtask ran again, up to the store's retry limit.)
func TestACheckpointedSubtaskThatGoesOnAfterAFailedUpdateWritesOnce(t *testing.T) {
	r := newRig(t)
	r.do("plan.create", map[string]any{"id": "p", "goal": "Bump once", "subtasks": []map[string]any{st("bump", "test.bump_after_conflict", nil)}})
	res, err := r.pl.Execute(context.Background(), callOf(r), "p", planner.ExecuteRequest{Checkpoint: true})
	if err != nil || res.Progress.Completed != 1 {
		t.Fatalf("the plan: %v, %+v; want its one subtask completed", err, res.Progress)
	}
	var n string
	err = r.probes.env.Store.View(func(tx *storage.Tx) error {
		v, err := tx.Get(bumpedKey)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		n = string(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != "1" {
		t.Errorf("the count is %q after one subtask; want 1", n)
	}
}
