//go:build !noplanning

package planner_test

// Replanning: the unfinished work replaced by the model's new subtasks, the
// completed kept, within max_replans. Seed 002, scenarios
// 001.3R-UNIT-026..028 and 001.3R-INT-010, 012, 013.

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/planner"
)

// Seed scenario 001.3R-UNIT-026 (ReplanPreservesCompletedSubtasks).
func TestReplanKeepsCompletedSubtasks(t *testing.T) {
	r, before := replanRig(t, `{"subtasks": [
		{"id": "B2", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "noop"}},
		{"id": "C2", "description": "Bake", "dependencies": ["B2"], "action": {"name": "noop"}}]}`)
	p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, B2:Pending, C2:Pending" {
		t.Fatalf("after replan: %s", got)
	}
	// A is exactly as it was: status, result, delta, times, attempts.
	if a, was := subtaskOf(t, p, "A"), subtaskOf(t, before, "A"); !jsonEqual(a, was) {
		t.Errorf("A changed:\n%+v\n%+v", a, was)
	}
	if p.ReplanCount != 1 || p.Status != "aborted" {
		t.Errorf("plan %+v", p)
	}
	// Stored so; and running it now runs only the new subtasks, on A's result.
	res := r.execute("p", nil)
	if res.Plan.Status != "completed" || subtaskOf(t, res.Plan, "A").Attempts != 1 || res.State["flour"] != "500g" {
		t.Errorf("after replan, run: %s %s %v", res.Plan.Status, ids(res.Plan), res.State)
	}
}

// Seed scenario 001.3R-UNIT-027 (ReplanRemovesFailedAndPendingSubtasks).
func TestReplanReplacesFailedAndPendingSubtasks(t *testing.T) {
	// The model reuses the ids B and C: they are new subtasks, with nothing
	// of the old ones (clean slate), and the old ones are gone.
	r, _ := replanRig(t, `{"subtasks": [
		{"id": "B", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "noop"}},
		{"id": "C", "description": "Bake", "dependencies": ["B"], "action": {"name": "noop"}}]}`)
	p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, B:Pending, C:Pending" {
		t.Fatalf("after replan: %s", got)
	}
	b := subtaskOf(t, p, "B")
	if b.Description != "Buy flour elsewhere" || b.Error != "" || b.Attempts != 0 || b.StartedAt != nil || b.FinishedAt != nil ||
		b.Action == nil || b.Action.Name != "noop" {
		t.Errorf("B kept something of the failed one: %+v", b)
	}
	// The model was told what failed and what was done, to plan the rest.
	prompt := r.model.Requests()[0].Messages[0].Content
	for _, want := range []string{"REMAINING work only", "- A: A → {\"key\":\"flour\",\"value\":\"500g\"}", "- B: B (failed: task.fail: the shop is closed (attempt 1))", "- C: C\n"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the replan prompt lacks %q:\n%s", want, prompt)
		}
	}
	// If the model reuses a completed id, the new subtask is renamed.
	r, _ = replanRig(t, `{"subtasks": [{"id": "A", "description": "Again", "action": {"name": "noop"}}]}`)
	p = decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, A-2:Pending" {
		t.Errorf("after replan: %s", got)
	}
}

// Seed scenario 001.3R-UNIT-028 (MaxReplansExceeded).
func TestReplanBeyondMaxReplansFails(t *testing.T) {
	answer := `{"subtasks": [{"id": "B", "description": "Try again", "dependencies": ["A"], "action": {"name": "fail"}}]}`
	r, _ := replanRig(t, answer, answer, answer, answer)
	for i := 1; i <= 3; i++ {
		if p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`)); p.ReplanCount != i || p.MaxReplans != 3 {
			t.Fatalf("replan %d: count %d of %d", i, p.ReplanCount, p.MaxReplans)
		}
	}
	before := r.do("plan.get", `{"plan_id": "p"}`)
	e := r.fail(errs.MaxReplansExceeded, "plan.replan", `{"plan_id": "p"}`)
	if !strings.Contains(e.Message, "4 > 3") || !strings.Contains(e.Message, "replanned 3 times") {
		t.Errorf("message %q does not give the count (4 > 3)", e.Message)
	}
	if e.Details["replan_count"] != 3 || e.Details["max_replans"] != 3 || e.Details["attempted"] != 4 {
		t.Errorf("details %v", e.Details)
	}
	if after := r.do("plan.get", `{"plan_id": "p"}`); !bytes.Equal(after, before) {
		t.Errorf("the plan changed:\n%s\n%s", before, after)
	}
	if r.model.Calls() != 3 {
		t.Errorf("the model was asked %d times; the fourth replan must not ask", r.model.Calls())
	}
	// max_replans is the plan's own: 0 forbids any replan.
	r = newRig(t)
	r.do("plan.create", `{"id": "z", "goal": "g", "max_replans": 0, "subtasks": [{"id": "a"}]}`)
	if e := r.fail(errs.MaxReplansExceeded, "plan.replan", `{"plan_id": "z"}`); !strings.Contains(e.Message, "1 > 0") {
		t.Errorf("%q", e.Message)
	}
	r.fail(errs.Validation, "plan.create", `{"id": "y", "goal": "g", "max_replans": -1, "subtasks": [{"id": "a"}]}`)
}

// Seed scenario 001.3R-INT-010 (ReplanPolicyInvokesReplan).
func TestReplanPolicyReplansTheFailedWork(t *testing.T) {
	r := decomposeRig(t, replanAnswer)
	rec := r.record()
	r.create("p", st("A", "test.record", map[string]any{"name": "A"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"), st("C", "noop", nil, "B"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	rec.runs(t, 1)
	if res.Plan.Status != "completed" || res.Plan.ReplanCount != 1 || ids(res.Plan) != "A:Completed, B2:Completed, C2:Completed" {
		t.Fatalf("%s, %d replans: %s", res.Plan.Status, res.Plan.ReplanCount, ids(res.Plan))
	}
	if r.probes.Calls("A") != 1 || !slices.Equal(r.probes.Order(), []string{"A", "B2", "C2"}) {
		t.Errorf("ran %v", r.probes.Order())
	}
	changed := slices.Contains(rec.changes(), "replanned")
	if !changed {
		t.Error("no plan.changed replanned event")
	}
	// A replan that keeps failing ends at max_replans: the run fails, saying why.
	fails := `{"subtasks": [{"id": "B", "description": "Again", "dependencies": ["A"], "action": {"name": "fail"}}]}`
	r = decomposeRig(t, fails, fails, fails, fails)
	r.create("p", st("A", "noop", nil), st("B", "fail", nil, "A"))
	res = r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	if res.Plan.Status != "failed" || res.Plan.ReplanCount != 3 || r.model.Calls() != 3 {
		t.Errorf("%s after %d replans, %d model calls", res.Plan.Status, res.Plan.ReplanCount, r.model.Calls())
	}
}

// Seed scenario 001.3R-INT-012 (ReplanUsesSameProvider).
func TestReplanAsksTheSameModel(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "A", "description": "first", "action": {"name": "noop"}},
		{"id": "B", "description": "second", "dependencies": ["A"], "action": {"name": "fail"}}]}`, replanAnswer)
	r.model.Model = "planner-model"
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Bake bread", "id": "bread"}`))
	if p.Provider != "scripted" {
		t.Errorf("provider %q", p.Provider)
	}
	res := r.execute("bread", map[string]any{"on_subtask_failure": "replan"})
	if res.Plan.Status != "completed" || res.Plan.Provider != "scripted" {
		t.Errorf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	// Both calls went to the one model, with the same instructions.
	reqs := r.model.Requests()
	if len(reqs) != 2 || reqs[0].System != reqs[1].System || !reqs[1].JSON || len(reqs[1].Schema) == 0 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if !strings.HasPrefix(reqs[1].Messages[0].Content, "Goal: Bake bread\n") {
		t.Errorf("replan prompt %q", reqs[1].Messages[0].Content)
	}
}

// Seed scenario 001.3R-INT-013 (ReplanPromptIncludesFailureContext).
func TestReplanPromptSaysWhatFailed(t *testing.T) {
	r := decomposeRig(t, replanAnswer)
	r.create("p", st("A", "state.set", map[string]any{"key": "flour", "value": "500g"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"), st("C", "noop", nil, "B"))
	r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	prompt := r.model.Requests()[0].Messages[0].Content
	for _, want := range []string{
		"Goal: Goal of p",
		"- A: A → {\"key\":\"flour\",\"value\":\"500g\"}",
		"- B: B (failed: task.fail: the shop is closed (attempt 1))",
		"- C: C",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the replan prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// replanRig has plan p with A Completed, B Failed, C Pending (an aborted run).
func replanRig(t *testing.T, answers ...string) (*rig, *planner.Plan) {
	r := decomposeRig(t, answers...)
	r.create("p",
		st("A", "state.set", map[string]any{"key": "flour", "value": "500g"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"),
		st("C", "noop", nil, "B"))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	if got := []string{res.Plan.Subtasks[0].Status, res.Plan.Subtasks[1].Status, res.Plan.Subtasks[2].Status}; !slices.Equal(got, []string{planner.Completed, planner.Failed, planner.Pending}) {
		t.Fatalf("setup: %s", ids(res.Plan))
	}
	return r, res.Plan
}

// replanAnswer replaces a failed B.
const replanAnswer = `{"subtasks": [
	{"id": "B2", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "test.record", "args": {"name": "B2"}}},
	{"id": "C2", "description": "Bake", "dependencies": ["B2"], "action": {"name": "test.record", "args": {"name": "C2"}}}]}`
