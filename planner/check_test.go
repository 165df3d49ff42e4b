//go:build !noplanning

package planner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// The index-vs-record check of the planner (issue 13, item 2: engram check
// verifies "index vs records").

// checkProblems runs every checker and returns the planner's problems.
func (r *rig) checkProblems(t *testing.T) []string {
	t.Helper()
	all, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all["planner"]
}

// healthyPlans writes a mix through the actions: a plan run to completion,
// one run with a failing subtask skipped, a replaced plan (plan.create over
// a deleted id), a shared plan, a pending one, and a deleted one (whose
// access list is retired).
func healthyPlans(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.create("done", st("A", "task.noop", nil), st("B", "task.noop", nil, "A"))
	r.execute("done", nil)
	r.create("partial", st("A", "task.noop", nil), st("B", "task.fail", nil, "A"), st("C", "task.noop", nil))
	r.execute("partial", map[string]any{"on_subtask_failure": "skip"})
	r.create("again", st("A", "task.noop", nil))
	r.do("plan.delete", map[string]any{"plan_id": "again"})
	r.create("again", st("A", "task.noop", nil), st("B", "task.noop", nil)) // reuses the retired id
	r.create("shared", st("A", "task.noop", nil))
	r.do("plan.share", map[string]any{"plan_id": "shared", "principal": "bob", "permissions": []string{"read"}})
	r.create("pending", st("A", "task.noop", nil))
	r.create("gone", st("A", "task.noop", nil))
	r.do("plan.delete", map[string]any{"plan_id": "gone"})
	return r
}

// TestCheckFindsNoProblemInHealthyPlans: runs, deletes, a reused id and a
// share leave every plan's records consistent.
func TestCheckFindsNoProblemInHealthyPlans(t *testing.T) {
	r := healthyPlans(t)
	if p := r.checkProblems(t); len(p) != 0 {
		t.Fatalf("healthy plans have problems:\n%s", strings.Join(p, "\n"))
	}
}

// TestCheckFindsNoProblemWhileAPlanRuns: a run's per-subtask progress
// records, written beside the plan before it is saved whole, are not
// problems.
func TestCheckFindsNoProblemWhileAPlanRuns(t *testing.T) {
	r := healthyPlans(t)
	r.create("p", st("A", "task.noop", nil), st("B", "test.gate", map[string]any{"name": "g"}, "A"))
	done := r.executeAsync("p", nil)
	waitFor(t, r.probes.Started("g"), "the gate")
	stored, err := planner.StoredPlan(r.e.Env(), "p")
	if err != nil || stored.Subtasks[0].Status != planner.Completed {
		t.Fatalf("A's progress should be stored while B runs: %v %+v", err, stored)
	}
	problems := r.checkProblems(t)
	r.probes.Release("g")
	await(t, done)
	if len(problems) != 0 {
		t.Fatalf("a running plan has problems:\n%s", strings.Join(problems, "\n"))
	}
}

// TestCheckFindsEachPlanInconsistency damages the healthy plans one way at
// a time; the check names that damage, and only it.
func TestCheckFindsEachPlanInconsistency(t *testing.T) {
	progress := func(plan, sid, recordID string) func(tx *storage.Tx) error {
		return func(tx *storage.Tx) error {
			return tx.SetJSON(storage.Key(storage.PrefixPlan, plan, "s", sid), planner.Subtask{ID: recordID, Status: planner.Completed})
		}
	}
	cases := []struct {
		name   string
		damage func(tx *storage.Tx) error
		want   string
	}{
		{"an unreadable plan record", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixPlan, "pending"), []byte("EPLN garbage"))
		}, "plan pending: record unreadable: checkpoint unreadable"},
		{"a plan record under another plan's id", func(tx *storage.Tx) error {
			b, err := tx.Get(storage.Key(storage.PrefixPlan, "pending"))
			if err != nil {
				return err
			}
			if err := tx.Set(storage.Key(storage.PrefixPlan, "copy"), b); err != nil {
				return err
			}
			return tx.SetJSON(storage.Key(storage.PrefixPlan, "copy", "acl"), map[string]string{"owner": "agent"})
		}, `plan copy: its record is a checkpoint of plan "pending"`},
		{"progress of a subtask the plan does not have", progress("pending", "Z", "Z"),
			"plan pending: progress of subtask Z is stored, but the plan has no such subtask"},
		{"progress of a plan that does not exist", progress("gone", "A", "A"),
			"plan gone: progress of subtask A is stored, but the plan does not exist"},
		{"progress that names another subtask", progress("done", "A", "B"),
			`plan done: progress record of subtask A says it is subtask "B"`},
		{"unreadable progress", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixPlan, "partial", "s", "C"), []byte("{"))
		}, "plan partial: progress of subtask C unreadable"},
		{"an access list without its plan", func(tx *storage.Tx) error {
			return tx.SetJSON(storage.Key(storage.PrefixPlan, "ghost", "acl"), map[string]string{"owner": "agent"})
		}, "plan ghost: an access list is stored, but the plan does not exist"},
		{"an unreadable access list", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixPlan, "shared", "acl"), []byte("not json"))
		}, "plan shared: access list unreadable"},
		{"a retired access list beside a live plan", func(tx *storage.Tx) error {
			return tx.SetJSON(storage.Key(storage.PrefixIndex, "plan retired", "shared"), map[string]string{"owner": "agent"})
		}, "plan shared: a retired access list is kept for it, but the plan is live"},
		{"an unreadable retired access list", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixIndex, "plan retired", "gone"), []byte("["))
		}, "plan gone (deleted): retired access list unreadable"},
		{"a key the planner does not write", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixPlan, "done", "x"), nil)
		}, `plan record at key "plan/done/x": not a key the planner writes`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := healthyPlans(t)
			if err := r.e.Env().Store.Update(context.Background(), tc.damage); err != nil {
				t.Fatal(err)
			}
			got := r.checkProblems(t)
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("want one problem saying %q, got:\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}

// BenchmarkCheckPlans checks 1,000 plans of 10 subtasks each (with their
// access lists: 2,000 records, 10,000 subtasks), 100 of them deleted.
//
//	go test -run '^$' -bench CheckPlans -benchtime 20x ./planner
func BenchmarkCheckPlans(b *testing.B) {
	r := newRig(b)
	subtasks := make([]map[string]any, 10)
	for i := range subtasks {
		subtasks[i] = st(fmt.Sprintf("S%d", i), "task.noop", nil)
	}
	for k := 0; k < 1000; k++ {
		id := fmt.Sprintf("plan-%04d", k)
		r.do("plan.create", map[string]any{"id": id, "goal": "Goal of " + id, "subtasks": subtasks})
		if k%10 == 0 {
			r.do("plan.delete", map[string]any{"plan_id": id})
		}
	}
	env := r.e.Env()
	for b.Loop() {
		all, err := env.Check(context.Background())
		if err != nil || len(all["planner"]) != 0 {
			b.Fatal(err, all["planner"])
		}
	}
}
