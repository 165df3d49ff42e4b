//go:build !noplanning

package planner_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/engram-console/engram/planner"
)

// Issue 14, bug 1: a plan an engram was running when it stopped (kill -9,
// a crash) was stored as "running", and stayed so forever: the next engram
// does not run it, yet every reader said it ran. The planner marks it
// interrupted when it opens the store, and plan.resume completes it.
func TestPlanLeftRunningByAStoppedEngramReadsInterruptedAndResumes(t *testing.T) {
	dir := t.TempDir()
	r := newRigWith(t, rigOptions{dir: dir})
	sequential4(r)
	done := r.executeAsync("p", map[string]any{"max_concurrent": 2})
	waitFor(t, r.probes.Started("C"), "C to start")
	// What a kill -9 at this moment leaves in the store: the plan running,
	// A and B completed, C (say) recorded in progress.
	left, err := planner.StoredPlan(r.e.Env(), "p")
	if err != nil || left.Status != planner.PlanRunning {
		t.Fatalf("the stored plan mid-run: %v %v", left, err)
	}
	subtaskOf(t, left, "C").Status = planner.InProgress
	r.do("plan.cancel", `{"plan_id": "p"}`)
	await(t, done)
	if err := planner.SaveStoredPlan(r.e.Env(), left); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}

	r = newRigWith(t, rigOptions{dir: dir})
	if got := decodePlan(t, r.do("plan.get", `{"plan_id": "p"}`)); got.Status != planner.PlanInterrupted ||
		ids(got) != "A:Completed, B:Completed, C:Pending, D:Pending" {
		t.Errorf("plan.get: %s %s, want interrupted with C and D pending", got.Status, ids(got))
	}
	var status planner.StatusResult
	if err := json.Unmarshal(r.do("plan.status", `{"plan_id": "p"}`), &status); err != nil {
		t.Fatal(err)
	}
	if status.Status != planner.PlanInterrupted || status.InProgress != 0 || status.Pending != 2 || status.Completed != 2 {
		t.Errorf("plan.status: %+v, want interrupted, 2 completed, 2 pending", status)
	}
	var list planner.ListResult
	if err := json.Unmarshal(r.do("plan.list", `{}`), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Plans) != 1 || list.Plans[0].Status != planner.PlanInterrupted {
		t.Errorf("plan.list: %+v", list.Plans)
	}
	var info struct {
		Counts map[string]map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(r.do("engine.info", `{}`), &info); err != nil {
		t.Fatal(err)
	}
	if c := info.Counts["planner"]; c["running"] != 0 || c["interrupted"] != 1 {
		t.Errorf("engine.info counts the plans %v, want 0 running, 1 interrupted", c)
	}
	// The store says so too (not only what readers are shown).
	if stored, err := planner.StoredPlan(r.e.Env(), "p"); err != nil || stored.Status != planner.PlanInterrupted {
		t.Errorf("stored: %v %v", stored, err)
	}

	rec := r.record()
	r.probes.Release("C")
	res := decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`))
	rec.runs(t, 1)
	if res.Plan.Status != planner.PlanCompleted || !slices.Equal(rec.started(), []string{"C", "D"}) {
		t.Errorf("resumed: %s, started %v, want completed after running C and D", res.Plan.Status, rec.started())
	}
}

// A plan this planner runs reads running, stored or live; the marking
// at open leaves plans of every other status as they were.
func TestOnlyStoredRunningPlansAreMarkedInterrupted(t *testing.T) {
	dir := t.TempDir()
	r := newRigWith(t, rigOptions{dir: dir})
	r.create("done", st("a", "noop", nil))
	r.execute("done", nil)
	r.create("cancelled", st("a", "noop", nil), st("b", "noop", nil, "a"))
	left, err := planner.StoredPlan(r.e.Env(), "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	left.Status = planner.PlanCancelled
	left.Settings = &planner.Settings{MaxConcurrent: 1, OnSubtaskFailure: "abort", Fallback: "abort"}
	if err := planner.SaveStoredPlan(r.e.Env(), left); err != nil {
		t.Fatal(err)
	}
	r.create("new", st("a", "noop", nil))
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	r = newRigWith(t, rigOptions{dir: dir})
	for id, want := range map[string]string{"done": planner.PlanCompleted, "cancelled": planner.PlanCancelled, "new": planner.PlanPending} {
		if got := decodePlan(t, r.do("plan.get", map[string]any{"plan_id": id})); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
}
