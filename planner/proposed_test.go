//go:build !noplanning

package planner_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

// proposedRig is a rig whose model decomposes "Tidy up" into a subtask
// without an action and one whose action the model chose (state.set, which
// a model may choose), as the plan "tidy".
func proposedRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t)
	r.model.Answers = []llmtest.Answer{llmtest.Text(`{"subtasks": [
		{"id": "look", "description": "Look around"},
		{"id": "note", "description": "Note it", "dependencies": ["look"], "action": {"name": "state.set", "args": {"key": "noted", "value": true}}}]}`)}
	r.do("plan.decompose", `{"goal": "Tidy up", "id": "tidy"}`)
	return r
}

// The actions a model chose are marked as proposed, and a run that asks
// (proposed_actions "ask", as the console sends) refuses to start while the
// plan holds one nobody approved, naming it, and changes nothing (issue 13,
// item 1: a model's choice is shown to the person and confirmed first).
func TestAskingRunRefusesAPlanHoldingModelChosenActions(t *testing.T) {
	r := proposedRig(t)
	before := r.do("plan.get", `{"plan_id": "tidy"}`)
	p := decodePlan(t, before)
	if s := subtaskOf(t, p, "note"); !s.Proposed || s.ApprovedBy != "" {
		t.Fatalf("the model's action is not marked as proposed: %+v", s)
	}
	if s := subtaskOf(t, p, "look"); s.Proposed {
		t.Errorf("a subtask without an action is marked as proposed: %+v", s)
	}
	e := r.fail(errs.Validation, "plan.execute", `{"plan_id": "tidy", "proposed_actions": "ask"}`)
	if e.Details["field"] != "proposed_actions" || !strings.Contains(e.Message, "note (state.set)") {
		t.Errorf("plan.execute: %+v, want a refusal naming note (state.set) and the field proposed_actions", e)
	}
	if after := r.do("plan.get", `{"plan_id": "tidy"}`); string(after) != string(before) {
		t.Errorf("a refused run changed the plan:\n%s\n%s", before, after)
	}
	if len(r.model.Requests()) != 1 {
		t.Errorf("a refused run asked the model: %d requests", len(r.model.Requests()))
	}
	r.fail(errs.Validation, "plan.execute", `{"plan_id": "tidy", "proposed_actions": "sure"}`)

	// plan.resume asks too: a plan that failed and was replanned holds
	// the replan's proposal.
	r.model.Answers = append(r.model.Answers,
		llmtest.Text(`{"subtasks": [{"id": "again", "description": "Count again", "action": {"name": "task.noop"}}]}`))
	r.create("p", st("a", "fail", nil))
	if res := r.execute("p", nil); res.Plan.Status != planner.PlanAborted {
		t.Fatalf("plan p: %s", res.Plan.Status)
	}
	r.do("plan.replan", `{"plan_id": "p"}`)
	before = r.do("plan.get", `{"plan_id": "p"}`)
	e = r.fail(errs.Validation, "plan.resume", `{"plan_id": "p", "proposed_actions": "ask"}`)
	if !strings.Contains(e.Message, "again (task.noop)") {
		t.Errorf("plan.resume: %+v, want a refusal naming again (task.noop)", e)
	}
	if after := r.do("plan.get", `{"plan_id": "p"}`); string(after) != string(before) {
		t.Errorf("a refused resume changed the plan:\n%s\n%s", before, after)
	}
	res := decodeResult(t, r.do("plan.resume", `{"plan_id": "p", "proposed_actions": "approve"}`))
	if s := subtaskOf(t, res.Plan, "again"); s.Status != planner.Completed || s.ApprovedBy != "local" {
		t.Errorf("the approved resume: again %s, approved by %q", s.Status, s.ApprovedBy)
	}
}

// Approving runs the actions the plan holds, and records who approved
// each; the default (run) runs them unapproved, as before.
func TestApprovingRunRecordsWhoApprovedAndRunsTheActions(t *testing.T) {
	r := proposedRig(t)
	r.model.Answers = append(r.model.Answers, llmtest.Text("looked"))
	res := r.execute("tidy", map[string]any{"proposed_actions": "approve"})
	if res.Plan.Status != planner.PlanCompleted {
		t.Fatalf("plan %s: %s", res.Plan.Status, ids(res.Plan))
	}
	note := subtaskOf(t, res.Plan, "note")
	if note.ApprovedBy != "local" || !note.Proposed {
		t.Errorf("note: proposed %v, approved by %q; want proposed, approved by local", note.Proposed, note.ApprovedBy)
	}
	if res.State["noted"] != true {
		t.Errorf("the approved state.set did not run: state %v", res.State)
	}
	if s := subtaskOf(t, decodePlan(t, r.do("plan.get", `{"plan_id": "tidy"}`)), "note"); s.ApprovedBy != "local" {
		t.Errorf("the approval was not stored: %+v", s)
	}

	r = proposedRig(t)
	r.model.Answers = append(r.model.Answers, llmtest.Text("looked"))
	res = r.execute("tidy", nil)
	if note := subtaskOf(t, res.Plan, "note"); res.State["noted"] != true || note.ApprovedBy != "" {
		t.Errorf("the default run: state %v, approved by %q", res.State, note.ApprovedBy)
	}
}

// Approval covers what the person saw: an action a replan proposes during
// an approving run is not run; its subtask runs its description, and says
// why.
func TestActionsProposedDuringAnApprovedRunRunTheirDescription(t *testing.T) {
	r := newRig(t)
	r.model.Answers = []llmtest.Answer{
		llmtest.Text(`{"subtasks": [{"id": "again", "description": "Count again", "action": {"name": "state.set", "args": {"key": "counted", "value": true}}}]}`),
		llmtest.Text("counted by hand"),
	}
	r.create("p", st("a", "fail", nil))
	res := r.execute("p", map[string]any{"on_subtask_failure": "replan", "proposed_actions": "approve"})
	again := subtaskOf(t, res.Plan, "again")
	if again.Status != planner.Completed || res.State["counted"] != nil {
		t.Fatalf("again: %s, state %v; want completed without its action", again.Status, res.State)
	}
	var answer map[string]any
	if err := json.Unmarshal(again.Result, &answer); err != nil || !strings.Contains(again.Warning, "nobody approved") {
		t.Errorf("again: result %s, warning %q", again.Result, again.Warning)
	}
	if again.ApprovedBy != "" {
		t.Errorf("again was approved by %q, though nobody saw it", again.ApprovedBy)
	}
}

// Another principal's approval is its own: bob, granted write on alice's
// plan, approves as bob.
func TestApprovalNamesThePrincipalThatApproved(t *testing.T) {
	r := proposedRig(t)
	r.model.Answers = append(r.model.Answers, llmtest.Text("looked"))
	r.do("plan.share", `{"plan_id": "tidy", "principal": "bob", "permissions": ["read", "write"]}`)
	raw := r.Do(enginetest.Who{As: "bob"}, "plan.execute", `{"plan_id": "tidy", "proposed_actions": "approve"}`, nil)
	res := decodeResult(t, raw)
	if by := subtaskOf(t, res.Plan, "note").ApprovedBy; by != "bob" {
		t.Errorf("approved by %q, want bob", by)
	}
	if !slices.ContainsFunc(res.Plan.Subtasks, func(s *planner.Subtask) bool { return s.ID == "note" && s.Status == planner.Completed }) {
		t.Errorf("note did not run: %s", ids(res.Plan))
	}
}

// Approval names what the person was shown: if a replan changed the
// model's actions between the showing and the yes, the run does not start
// and nothing runs (a review found approve ran an action nobody saw).
func TestApprovalOfActionsNoLongerWaitingRunsNothing(t *testing.T) {
	r := proposedRig(t)
	shown := []map[string]any{{"subtask": "note", "action": map[string]any{"name": "state.set", "args": map[string]any{"value": true, "key": "noted"}}}}
	r.model.Answers = append(r.model.Answers,
		llmtest.Text(`{"subtasks": [{"id": "sneak", "description": "x", "action": {"name": "state.set", "args": {"key": "unseen", "value": 1}}}]}`))
	r.do("plan.replan", `{"plan_id": "tidy"}`)
	before := r.do("plan.get", `{"plan_id": "tidy"}`)
	e := r.fail(errs.Conflict, "plan.execute", map[string]any{"plan_id": "tidy", "proposed_actions": "approve", "approved": shown})
	if e.Details["field"] != "approved" {
		t.Errorf("the refusal: %+v, want it to name the field approved", e)
	}
	if after := r.do("plan.get", `{"plan_id": "tidy"}`); string(after) != string(before) {
		t.Errorf("a refused approval changed the plan:\n%s\n%s", before, after)
	}
	// What waits now, as shown (the args' key order does not matter),
	// runs.
	now := []map[string]any{{"subtask": "sneak", "action": map[string]any{"name": "state.set", "args": map[string]any{"value": 1, "key": "unseen"}}}}
	res := decodeResult(t, r.do("plan.execute", map[string]any{"plan_id": "tidy", "proposed_actions": "approve", "approved": now}))
	if res.State["unseen"] != 1.0 || subtaskOf(t, res.Plan, "sneak").ApprovedBy != "local" {
		t.Errorf("the approved run: state %v, plan %s", res.State, ids(res.Plan))
	}
	r.fail(errs.Validation, "plan.execute", map[string]any{"plan_id": "tidy", "approved": now})
}

// Approved arguments are compared exactly: numbers as written (not as
// float64, which cannot tell 9007199254740993 from ...992), and an
// approval naming an action when none waits any more is refused too.
func TestApprovalComparesArgumentsExactly(t *testing.T) {
	r := newRig(t)
	r.model.Answers = []llmtest.Answer{llmtest.Text(`{"subtasks": [{"id": "big", "description": "x", "action": {"name": "state.set", "args": {"key": "n", "value": 9007199254740993}}}]}`)}
	r.do("plan.decompose", `{"goal": "Count", "id": "p"}`)
	near := []map[string]any{{"subtask": "big", "action": map[string]any{"name": "state.set", "args": json.RawMessage(`{"key": "n", "value": 9007199254740992}`)}}}
	r.fail(errs.Conflict, "plan.execute", map[string]any{"plan_id": "p", "proposed_actions": "approve", "approved": near})
	exact := []map[string]any{{"subtask": "big", "action": map[string]any{"name": "state.set", "args": json.RawMessage(`{"value": 9007199254740993, "key": "n"}`)}}}
	res := decodeResult(t, r.do("plan.execute", map[string]any{"plan_id": "p", "proposed_actions": "approve", "approved": exact}))
	if res.Plan.Status != planner.PlanCompleted {
		t.Fatalf("the exactly approved run: %s", res.Plan.Status)
	}
	r.create("q", st("a", "noop", nil))
	r.fail(errs.Conflict, "plan.execute", map[string]any{"plan_id": "q", "proposed_actions": "approve", "approved": exact})
}
