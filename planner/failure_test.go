//go:build !noplanning

package planner_test

// Failure policies: abort, skip (and what depends on the failure), retry
// with backoff and its fallback. Seed 002, scenarios 001.3R-UNIT-021..025
// and 001.3R-INT-011.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/planner"
)

// Seed scenario 001.3R-UNIT-021 (AbortStopsOnFirstFailure).
func TestAbortStopsAtTheFirstFailure(t *testing.T) {
	r := newRig(t)
	r.create("p",
		st("A", "test.record", map[string]any{"name": "A"}),
		st("B", "fail", map[string]any{"message": "the oven is broken"}, "A"),
		st("C", "test.record", map[string]any{"name": "C"}, "B"),
		st("D", "test.record", map[string]any{"name": "D"}))
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "abort"})
	if res.Plan.Status != "aborted" {
		t.Errorf("status %s", res.Plan.Status)
	}
	status := map[string]string{"A": planner.Completed, "B": planner.Failed, "C": planner.Pending, "D": planner.Pending}
	for id, want := range status {
		if s := subtaskOf(t, res.Plan, id); s.Status != want {
			t.Errorf("%s is %s, want %s", id, s.Status, want)
		}
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Error != "task.fail: the oven is broken (attempt 1)" || b.Attempts != 1 {
		t.Errorf("B: %+v", b)
	}
	if r.probes.Calls("C")+r.probes.Calls("D") != 0 {
		t.Errorf("ran after the failure: %v", r.probes.Order())
	}
	if res.Progress != (planner.Counts{Completed: 1, Failed: 1, Pending: 2, Total: 4}) {
		t.Errorf("progress %+v", res.Progress)
	}
}

// Seed scenario 001.3R-UNIT-022 (SkipMarksSkippedAndContinues).
func TestSkipMarksTheFailureSkippedAndGoesOn(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "fail", nil), st("B", "test.record", map[string]any{"name": "B"}), st("C", "test.record", map[string]any{"name": "C"}, "B"))
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "skip"})
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Skipped || !strings.Contains(a.Error, "failing as asked") {
		t.Errorf("A: %+v", a)
	}
	if res.Plan.Status != "partial" || res.Progress != (planner.Counts{Completed: 2, Skipped: 1, Total: 3}) {
		t.Errorf("%s %+v", res.Plan.Status, res.Progress)
	}
	if !slices.Equal(r.probes.Order(), []string{"B", "C"}) {
		t.Errorf("ran %v", r.probes.Order())
	}
}

// Seed scenario 001.3R-UNIT-023 (SkipPropagatesToDependents).
func TestSkipSkipsWhatDependsOnTheFailure(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	r.create("p", st("A", "fail", nil), st("B", "test.record", map[string]any{"name": "B"}, "A"), st("C", "test.record", map[string]any{"name": "C"}, "B"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "skip"})
	rec.runs(t, 1)
	for _, id := range []string{"A", "B", "C"} {
		if s := subtaskOf(t, res.Plan, id); s.Status != planner.Skipped {
			t.Errorf("%s is %s", id, s.Status)
		}
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Error != "a dependency (A) was skipped" || b.Attempts != 0 {
		t.Errorf("B: %+v", b)
	}
	if c := subtaskOf(t, res.Plan, "C"); c.Error != "a dependency (B) was skipped" {
		t.Errorf("C: %+v", c)
	}
	// "0 completed, 3 skipped".
	if res.Progress.Completed != 0 || res.Progress.Skipped != 3 || res.Progress.Total != 3 {
		t.Errorf("progress %+v", res.Progress)
	}
	if r.probes.Calls("B")+r.probes.Calls("C") != 0 {
		t.Errorf("skipped subtasks ran: %v", r.probes.Order())
	}
	if rec.seq(planner.EventSubtaskStarted.Name(), "B") != 0 || rec.seq(planner.EventSubtaskFinished.Name(), "C") == 0 {
		t.Errorf("events %+v", rec.plan())
	}
	st := decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`))
	if st.Completed != 0 || st.Skipped != 3 || st.Status != "partial" {
		t.Errorf("status %+v", st)
	}
}

// Seed scenario 001.3R-UNIT-024 (RetryWithExponentialBackoff).
func TestRetryBacksOffExponentially(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 99}), st("B", "noop", nil, "A"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 3, "fallback": "skip"})
	ms := time.Millisecond
	if times := r.probes.times["A"]; !slices.Equal(times, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms}) {
		t.Errorf("A attempted at %v, want t=0, 100ms, 300ms, 700ms", times)
	}
	if waits := r.sleep.Waits(); !slices.Equal(waits, []time.Duration{100 * ms, 200 * ms, 400 * ms}) {
		t.Errorf("backoffs %v", waits)
	}
	// Still failing: the fallback (skip) takes over.
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Skipped || a.Attempts != 4 || !strings.Contains(a.Error, "transient failure 4") {
		t.Errorf("A: %+v", a)
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Status != planner.Skipped {
		t.Errorf("B: %+v", b)
	}

	// A transient failure that clears: completed on the third attempt, at ≈300ms.
	r = newRig(t)
	r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 2}))
	res = r.execute("p", map[string]any{"on_subtask_failure": "retry"})
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Completed || a.Attempts != 3 || res.Plan.Settings.MaxRetries != 3 {
		t.Errorf("A: %+v (settings %+v)", a, res.Plan.Settings)
	}
	if times := r.probes.times["A"]; !slices.Equal(times, []time.Duration{0, 100 * ms, 300 * ms}) {
		t.Errorf("attempts at %v", times)
	}
}

// Seed scenario 001.3R-UNIT-025 (RetryExhaustionTriggersFallback).
func TestSpentRetriesFallBack(t *testing.T) {
	for _, tc := range []struct {
		fallback, status, aStatus string
	}{
		{"", "aborted", planner.Failed},
		{"abort", "aborted", planner.Failed},
		{"skip", "partial", planner.Skipped},
		{"replan", "completed", ""},
	} {
		t.Run("fallback="+tc.fallback, func(t *testing.T) {
			r := decomposeRig(t, `{"subtasks": [{"id": "A2", "description": "Another way", "action": {"name": "noop"}}]}`)
			r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 99}), st("B", "test.record", map[string]any{"name": "B"}))
			res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 2, "fallback": tc.fallback, "max_concurrent": 1})
			if n := r.probes.Calls("A"); n != 3 {
				t.Errorf("A tried %d times; max_retries 2 is 3 attempts", n)
			}
			if res.Plan.Status != tc.status {
				t.Errorf("plan %s, want %s (%s)", res.Plan.Status, tc.status, ids(res.Plan))
			}
			if tc.fallback == "replan" {
				if r.model.Calls() != 1 || res.Plan.ReplanCount != 1 || subtaskOf(t, res.Plan, "A2").Status != planner.Completed {
					t.Errorf("replan: %d calls, %s", r.model.Calls(), ids(res.Plan))
				}
				return
			}
			if a := subtaskOf(t, res.Plan, "A"); a.Status != tc.aStatus || a.Attempts != 3 {
				t.Errorf("A: %+v", a)
			}
			if r.model.Calls() != 0 {
				t.Errorf("the model was asked")
			}
		})
	}
}

// Seed scenario 001.3R-INT-011 (PartialResultsAfterAbort).
func TestAbortKeepsPartialResults(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "state.set", map[string]any{"key": "dough", "value": "ready"}),
		st("A2", "state.incr", map[string]any{"key": "loaves", "by": 2}, "A"),
		st("B", "fail", map[string]any{"message": "oven broke"}, "A2"),
		st("C", "state.set", map[string]any{"key": "baked", "value": true}, "B"))
	out, err := r.try("plan.execute", `{"plan_id": "p", "on_subtask_failure": "abort"}`)
	if err != nil {
		t.Fatalf("an aborted run is still a result: %v", err)
	}
	res := decodeResult(t, out)
	if res.Plan.Status != "aborted" || res.Progress != (planner.Counts{Completed: 2, Failed: 1, Pending: 1, Total: 4}) {
		t.Errorf("%s %+v", res.Plan.Status, res.Progress)
	}
	if res.State["dough"] != "ready" || res.State["loaves"] != 2.0 || res.State["baked"] != nil {
		t.Errorf("partial state %v", res.State)
	}
	// The same partial results are stored: plan.get shows them.
	stored := decodePlan(t, r.do("plan.get", `{"plan_id": "p"}`))
	if planJSON(t, stored) != planJSON(t, res.Plan) {
		t.Errorf("stored:\n%s\nreturned:\n%s", planJSON(t, stored), planJSON(t, res.Plan))
	}
}
