//go:build !noplanning

package planner_test

// Issue 14, bug 3: an aborted plan executed again with another failure
// policy applies it, and a person retries, skips or marks done one failed
// subtask, without a model.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/planner"
)

// abortedAtB makes plan p: A, then B (failing failTimes times, or always
// for 0), then C
// after B; D on its own, last. Run one at a time under abort, it stops
// at B with C and D pending.
func abortedAtB(t *testing.T, r *rig, failTimes int) result {
	t.Helper()
	b := st("B", "fail", map[string]any{"message": "the oven is broken"}, "A")
	if failTimes > 0 {
		b = st("B", "test.flaky", map[string]any{"name": "B", "fail_times": failTimes}, "A")
	}
	r.create("p",
		st("A", "test.record", map[string]any{"name": "A"}),
		b,
		st("C", "test.record", map[string]any{"name": "C"}, "B"),
		st("D", "test.record", map[string]any{"name": "D"}))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	if res.Plan.Status != planner.PlanAborted {
		t.Fatalf("the first run: %s", res.Plan.Status)
	}
	return res
}

func statuses(p *planner.Plan) string {
	var out []string
	for _, s := range p.Subtasks {
		out = append(out, s.ID+"="+s.Status)
	}
	return strings.Join(out, " ")
}

func TestExecutingAnAbortedPlanWithSkipSkipsTheFailure(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 0)
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "skip"})
	if got, want := statuses(res.Plan), "A=Completed B=Skipped C=Skipped D=Completed"; got != want {
		t.Errorf("subtasks %s, want %s", got, want)
	}
	if res.Plan.Status != planner.PlanPartial {
		t.Errorf("plan %s, want partial", res.Plan.Status)
	}
	if b := subtaskOf(t, res.Plan, "B"); !strings.Contains(b.Error, "the oven is broken") {
		t.Errorf("B keeps why it failed: %+v", b)
	}
}

func TestExecutingAnAbortedPlanWithRetryRunsTheFailureAgain(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 1)
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "retry"})
	if got, want := statuses(res.Plan), "A=Completed B=Completed C=Completed D=Completed"; got != want {
		t.Errorf("subtasks %s, want %s", got, want)
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Attempts != 2 || b.Error != "" || r.probes.Calls("B") != 2 {
		t.Errorf("B: %+v", b)
	}
	if r.probes.Calls("A") != 1 {
		t.Errorf("A ran again: %v", r.probes.Order())
	}
}

func TestRetrySubtaskRunsItAgainAndThePlanGoesOn(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 1)
	rec := r.record()
	res := decodeResult(t, r.do("plan.subtask_retry", map[string]any{"plan_id": "p", "subtask": "B"}))
	if got, want := statuses(res.Plan), "A=Completed B=Completed C=Completed D=Completed"; got != want {
		t.Errorf("subtasks %s, want %s", got, want)
	}
	if res.Plan.Status != planner.PlanCompleted {
		t.Errorf("plan %s", res.Plan.Status)
	}
	rec.runs(t, 1)
	if !slices.Contains(rec.changes(), "subtask_retried") {
		t.Errorf("plan.changed: %v", rec.changes())
	}
}

func TestRetryOfASkippedSubtaskRunsItsDependentsToo(t *testing.T) {
	r := newRig(t)
	r.create("p",
		st("B", "test.flaky", map[string]any{"name": "B", "fail_times": 1}),
		st("C", "test.record", map[string]any{"name": "C"}, "B"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "skip"})
	if got := statuses(res.Plan); got != "B=Skipped C=Skipped" {
		t.Fatalf("first run: %s", got)
	}
	r.fail(errs.Validation, "plan.subtask_retry", map[string]any{"plan_id": "p", "subtask": "C"})
	res = decodeResult(t, r.do("plan.subtask_retry", map[string]any{"plan_id": "p", "subtask": "B"}))
	if got := statuses(res.Plan); got != "B=Completed C=Completed" || res.Plan.Status != planner.PlanCompleted {
		t.Errorf("after the retry: %s, %s", got, res.Plan.Status)
	}
}

func TestSkipSubtaskSkipsItsDependentsAndRunsTheRest(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 0)
	res := decodeResult(t, r.do("plan.subtask_skip", map[string]any{"plan_id": "p", "subtask": "B", "note": "no oven today"}))
	if got, want := statuses(res.Plan), "A=Completed B=Skipped C=Skipped D=Completed"; got != want {
		t.Errorf("subtasks %s, want %s", got, want)
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Note != "no oven today" || b.MarkedBy != "local" {
		t.Errorf("B: %+v", b)
	}
	if res.Plan.Status != planner.PlanPartial || r.probes.Calls("C") != 0 {
		t.Errorf("plan %s, C ran %d times", res.Plan.Status, r.probes.Calls("C"))
	}
}

func TestMarkSubtaskDoneRecordsTheNoteAsItsResult(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 0)
	rec := r.record()
	res := decodeResult(t, r.do("plan.subtask_done", map[string]any{"plan_id": "p", "subtask": "B", "note": "baked it next door"}))
	if got, want := statuses(res.Plan), "A=Completed B=Completed C=Completed D=Completed"; got != want {
		t.Errorf("subtasks %s, want %s", got, want)
	}
	b := subtaskOf(t, res.Plan, "B")
	if string(b.Result) != `{"note":"baked it next door"}` || b.Note != "baked it next door" || b.Error != "" || b.StartedAt != nil {
		t.Errorf("B: %+v (result %s)", b, b.Result)
	}
	results, _ := res.State["results"].(map[string]any)
	if !jsonEqual(results["B"], map[string]any{"note": "baked it next door"}) {
		t.Errorf("the state's results.B: %v", results["B"])
	}
	rec.runs(t, 1)
	if !slices.Contains(rec.changes(), "subtask_done") {
		t.Errorf("plan.changed: %v", rec.changes())
	}
	trace := string(r.do("trace.list", map[string]any{}))
	if !strings.Contains(trace, "marked done by hand: baked it next door") {
		t.Errorf("the trace has no entry for it: %s", trace)
	}
}

func TestSubtaskActionsRefuseBadRequestsAndChangeNothing(t *testing.T) {
	r := newRig(t)
	abortedAtB(t, r, 0)
	before := planJSON(t, decodePlan(t, r.do("plan.get", map[string]any{"plan_id": "p"})))
	for _, tc := range []struct {
		action string
		args   map[string]any
		kind   errs.Kind
		field  string
	}{
		{"plan.subtask_done", map[string]any{"plan_id": "p", "subtask": "B", "note": "  "}, errs.Validation, "note"},
		{"plan.subtask_done", map[string]any{"plan_id": "p", "subtask": "B", "note": strings.Repeat("x", 2001)}, errs.Validation, "note"},
		{"plan.subtask_done", map[string]any{"plan_id": "p", "subtask": "A", "note": "again"}, errs.Validation, "subtask"},
		{"plan.subtask_retry", map[string]any{"plan_id": "p", "subtask": "Z"}, errs.Validation, "subtask"},
		{"plan.subtask_retry", map[string]any{"plan_id": "p", "subtask": "A"}, errs.Validation, "subtask"},
		{"plan.subtask_skip", map[string]any{"plan_id": "p", "subtask": "A"}, errs.Validation, "subtask"},
		{"plan.subtask_skip", map[string]any{"plan_id": "nope", "subtask": "B"}, errs.NotFound, "plan_id"},
	} {
		e := r.fail(tc.kind, tc.action, tc.args)
		if e.Details["field"] != tc.field {
			t.Errorf("%s %v: field %v, want %s (%s)", tc.action, tc.args, e.Details["field"], tc.field, e.Message)
		}
	}
	r.Fail(bob, "plan.subtask_skip", map[string]any{"plan_id": "p", "subtask": "B"}, errs.Permission)
	if after := planJSON(t, decodePlan(t, r.do("plan.get", map[string]any{"plan_id": "p"}))); after != before {
		t.Errorf("a refused request changed the plan:\n%s\n%s", before, after)
	}
}

func TestSubtaskActionsOnAPlanThatNeverRanSayToExecuteIt(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "noop", nil))
	e := r.fail(errs.Validation, "plan.subtask_skip", map[string]any{"plan_id": "p", "subtask": "A"})
	if !strings.Contains(e.Message, "plan.execute") {
		t.Errorf("%s", e.Message)
	}
}

func TestFreshExecuteRunsACompletedPlanAgain(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "test.record", map[string]any{"name": "A"}))
	r.execute("p", nil)
	res := r.execute("p", map[string]any{"fresh": true})
	if res.Plan.Status != planner.PlanCompleted || r.probes.Calls("A") != 2 {
		t.Errorf("plan %s, A ran %d times", res.Plan.Status, r.probes.Calls("A"))
	}
	if a := subtaskOf(t, res.Plan, "A"); a.Attempts != 1 {
		t.Errorf("a fresh run counts attempts anew: %+v", a)
	}
	r.execute("p", nil)
	if r.probes.Calls("A") != 3-1 {
		t.Errorf("without fresh a completed plan runs nothing: A ran %d times", r.probes.Calls("A"))
	}
}

func TestPlansFromYAMLGetAReadableID(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	named := write("Release Plan.yaml", "goal: Ship it\nsubtasks: [{id: a}]\n")
	for _, want := range []string{"release-plan", "release-plan-2"} {
		if p := decodePlan(t, r.do("plan.create", map[string]any{"file": named})); p.ID != want {
			t.Errorf("id %q, want %q", p.ID, want)
		}
	}
	odd := write("___.yml", "goal: Publish the Q3 report!\nsubtasks: [{id: a}]\n")
	if p := decodePlan(t, r.do("plan.create", map[string]any{"file": odd})); p.ID != "publish-the-q3-report" {
		t.Errorf("from the goal: %q", p.ID)
	}
	given := write("x.yaml", "id: mine\ngoal: g\nsubtasks: [{id: a}]\n")
	if p := decodePlan(t, r.do("plan.create", map[string]any{"file": given})); p.ID != "mine" {
		t.Errorf("a given id: %q", p.ID)
	}
	if p := decodePlan(t, r.do("plan.create", map[string]any{"file": named, "id": "chosen"})); p.ID != "chosen" {
		t.Errorf("an id in the args: %q", p.ID)
	}
}

func TestShareAndRevokePublishPlanChanged(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "noop", nil))
	rec := r.record()
	r.do("plan.share", map[string]any{"plan_id": "p", "principal": "bob", "permissions": []string{"read"}})
	r.do("plan.revoke", map[string]any{"plan_id": "p", "principal": "bob"})
	deadline := 0
	for !slices.Equal(rec.changes(), []string{"shared", "revoked"}) && deadline < 100 {
		<-rec.signal
		deadline++
	}
	if got := rec.changes(); !slices.Equal(got, []string{"shared", "revoked"}) {
		t.Errorf("plan.changed: %v", got)
	}
}

// A run holds the plan before it reads it: executes racing on one plan
// never start from a copy another run is changing, so no completed
// subtask runs twice (before, a run could read the plan, wait for another
// run to end, then run it again from what it had read).
func TestRacingExecutesRunEachSubtaskOnce(t *testing.T) {
	r := newRig(t)
	var subtasks []map[string]any
	for _, id := range []string{"a", "b", "c", "d"} {
		subtasks = append(subtasks, st(id, "test.record", map[string]any{"name": id}))
	}
	r.create("p", subtasks...)
	var runs []<-chan asyncResult
	for range 16 {
		runs = append(runs, r.executeAsync("p", map[string]any{"max_concurrent": 1}))
	}
	for _, ch := range runs {
		res := <-ch
		if res.err != nil && errs.KindOf(res.err) != errs.Conflict {
			t.Errorf("a racing execute: %v", res.err)
		}
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		if n := r.probes.Calls(id); n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
}
