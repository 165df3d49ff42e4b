//go:build !noplanning

package planner_test

// plan.status: the counts per status and the subtasks asked for. Seed 002,
// scenarios 001.3R-UNIT-029..032.

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// Seed scenario 001.3R-UNIT-029 (StatusCountsEachStatus).
func TestStatusCountsEachStatus(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`))
	want := planner.Counts{Completed: 2, InProgress: 1, Pending: 1, Failed: 1, Total: 5}
	if s.Counts != want || s.Status != "running" || len(s.Subtasks) != 5 {
		t.Errorf("status %+v, want counts %+v", s, want)
	}
	// The same counts from the Go API, on a plan built by hand.
	p := &planner.Plan{}
	for id, status := range map[string]string{"A": planner.Completed, "B": planner.Completed, "C": planner.InProgress, "D": planner.Pending, "E": planner.Failed} {
		p.Subtasks = append(p.Subtasks, &planner.Subtask{ID: id, Status: status})
	}
	if c := p.Count(); c != want {
		t.Errorf("Count %+v", c)
	}
}

// Seed scenario 001.3R-UNIT-030 (StatusIncludeCompletedFalseFilters).
func TestStatusWithoutCompletedLeavesThemOut(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_completed": false}`))
	var listed []string
	for _, st := range s.Subtasks {
		listed = append(listed, st.ID+":"+st.Status)
	}
	if !slices.Equal(listed, []string{"C:InProgress", "D:Pending", "E:Failed"}) {
		t.Errorf("listed %v", listed)
	}
	if s.Completed != 2 || s.Total != 5 {
		t.Errorf("the counts must still count completed ones: %+v", s.Counts)
	}
	if all := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_completed": true}`)); len(all.Subtasks) != 5 {
		t.Errorf("include_completed true lists %d", len(all.Subtasks))
	}
}

// Seed scenario 001.3R-UNIT-031 (StatusIncludeDetailsReturnsDescriptions).
func TestStatusWithDetailsGivesDescriptions(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_details": true}`))
	want := map[string]string{"A": "first", "B": "second", "C": "third", "D": "fourth", "E": "fifth"}
	for _, st := range s.Subtasks {
		if st.Description == nil || *st.Description != want[st.ID] {
			t.Errorf("%s: description %v", st.ID, st.Description)
		}
		switch st.ID {
		case "A":
			if !jsonEqual(st.Result, map[string]any{"name": "A", "call": 1}) {
				t.Errorf("A's result %s", st.Result)
			}
		case "E":
			if st.Error == nil || *st.Error != "task.fail: no (attempt 1)" || st.Attempts != 1 {
				t.Errorf("E: %+v", st)
			}
		}
	}
	for _, st := range decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`)).Subtasks {
		if st.Description != nil || st.Result != nil || st.Error != nil {
			t.Errorf("without include_details: %+v", st)
		}
	}
}

// Seed scenario 001.3R-UNIT-032 (StatusOnEmptyPlanReturnsZeroCounts).
func TestStatusOfAnEmptyPlanCountsZero(t *testing.T) {
	if c := (&planner.Plan{}).Count(); c != (planner.Counts{}) {
		t.Errorf("Count %+v", c)
	}
	// plan.create refuses an empty plan (UNIT-002), but one can be stored
	// otherwise (an older engram, a hand-made checkpoint): its status is
	// all zeros, and an empty list.
	r := newRig(t)
	b, err := planner.EncodeCheckpoint(&planner.Plan{ID: "empty", Goal: "Nothing", Status: "pending", CreatedAt: t0, UpdatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	err = r.e.Env().Store.Update(t.Context(), func(tx *storage.Tx) error { return tx.Set(storage.Key(storage.PrefixPlan, "empty"), b) })
	if err != nil {
		t.Fatal(err)
	}
	out := r.do("plan.status", `{"plan_id": "empty", "include_details": true}`)
	if string(out) != `{"plan_id":"empty","status":"pending","completed":0,"in_progress":0,"pending":0,"failed":0,"skipped":0,"total":0,"subtasks":[]}` {
		t.Errorf("plan.status: %s", out)
	}
	// And running it fails validation rather than "completing" nothing.
	r.fail(errs.Validation, "plan.execute", `{"plan_id": "empty"}`)
}

type statusResult struct {
	planner.Counts
	PlanID   string `json:"plan_id"`
	Status   string `json:"status"`
	Subtasks []struct {
		ID          string          `json:"id"`
		Status      string          `json:"status"`
		Attempts    int             `json:"attempts"`
		Description *string         `json:"description"`
		Result      json.RawMessage `json:"result"`
		Error       *string         `json:"error"`
	} `json:"subtasks"`
}

func decodeStatus(t testing.TB, raw json.RawMessage) statusResult {
	t.Helper()
	var s statusResult
	if err := json.Unmarshal(raw, &s); err != nil || s.Subtasks == nil {
		t.Fatalf("plan.status: %s (%v)", raw, err)
	}
	return s
}

// liveStatusRig runs plan p — A, B Completed; C InProgress (a gate); D
// Pending (waits for C); E Failed — and holds it there.
func liveStatusRig(t *testing.T) (*rig, <-chan asyncResult) {
	r := newRig(t)
	rec := r.record()
	r.do("plan.create", `{"id": "p", "goal": "Five", "subtasks": [
		{"id": "A", "description": "first", "action": {"name": "test.record", "args": {"name": "A"}}},
		{"id": "B", "description": "second", "action": {"name": "test.record", "args": {"name": "B"}}},
		{"id": "C", "description": "third", "action": {"name": "test.gate", "args": {"name": "C"}}},
		{"id": "D", "description": "fourth", "dependencies": ["C"], "action": {"name": "noop"}},
		{"id": "E", "description": "fifth", "action": {"name": "fail", "args": {"message": "no"}}}]}`)
	done := r.executeAsync("p", map[string]any{"max_concurrent": 4})
	for _, id := range []string{"A", "B", "E"} {
		rec.waitEvent(t, planner.EventSubtaskFinished.Name(), id)
	}
	waitFor(t, r.probes.Started("C"), "C to start")
	t.Cleanup(func() {
		r.probes.Release("C")
		<-done
	})
	return r, done
}
