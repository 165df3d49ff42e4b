//go:build !noplanning

package tui

// Issue 14, bug 3 and the Plans friction: after an abort the console
// offers what works without a model (x with a policy, r, and t/s/m on a
// failed subtask); x on a completed plan offers a fresh run; c and q ask
// before stopping a run; the tab follows shares and revokes.

import (
	"context"
	"encoding/json"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/planner"
)

// abortedReport seeds the plans with enrich failing (failTimes times, or
// always for 0), runs the report one at a time under abort in the
// console, and walks to enrich: fetch, then → parse, ↓ enrich.
func abortedReport(t *testing.T, failTimes, width, height int) (conn.Conn, *teatest.TestModel) {
	t.Helper()
	engine, clk, _ := newPlanEngine(t)
	enrich := `{"name": "task.fail", "args": {"message": "last year's archive is offline"}}`
	if failTimes > 0 {
		enrich = `{"name": "task.fail", "args": {"times": 1, "message": "last year's archive is offline"}}`
	}
	seedPlans(t, engine, clk, enrich)
	tm := startPlans(t, engine, width, height)
	waitFor(t, tm, "[4 Plans]", "stage 3", "report · Publish the weekly report")
	execute(t, tm, 0, "1")
	// The status line, the plan and its line in the list: the frames
	// taken after this hold all three.
	waitFor(t, tm, "Plan report aborted", "x runs it again with a", "aborted    2/6")
	return engine, tm
}

// walkToEnrich selects enrich in the DAG.
func walkToEnrich(t *testing.T, tm *teatest.TestModel) {
	t.Helper()
	keys(tm, tea.KeyEnter, tea.KeyRight, tea.KeyDown)
	waitFor(t, tm, "▸ enrich · ✗ Failed", "t retry")
}

func TestRetrySubtaskKeyRunsTheFailureAgain(t *testing.T) {
	t.Parallel()
	engine, tm := abortedReport(t, 1, goldenWidth, goldenHeight)
	walkToEnrich(t, tm)
	tm.Type("t")
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "completed  6/6")
	finish(t, tm)
	if d := getPlan(t, engine, "report"); d.Status != planner.PlanCompleted || d.SubtaskByID("enrich").Attempts != 2 {
		t.Errorf("after t: %s %s", d.Status, statuses(d))
	}
}

func TestSkipSubtaskKeySkipsItAndRunsTheRest(t *testing.T) {
	t.Parallel()
	engine, tm := abortedReport(t, 0, goldenWidth, goldenHeight)
	walkToEnrich(t, tm)
	tm.Type("s")
	waitFor(t, tm, "Plan report partial: 3 of 6 completed, 3 skipped", "partial    3/6")
	finish(t, tm)
	want := "fetch:Completed parse:Completed enrich:Skipped merge:Skipped publish:Skipped notify:Completed"
	if got := statuses(getPlan(t, engine, "report")); got != want {
		t.Errorf("after s: %s, want %s", got, want)
	}
}

func TestMarkDoneKeyAsksForANoteAndRecordsIt(t *testing.T) {
	t.Parallel()
	engine, tm := abortedReport(t, 0, goldenWidth, goldenHeight)
	walkToEnrich(t, tm)
	tm.Type("m")
	waitFor(t, tm, "Mark enrich done by hand", "note: ")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "say what was done")
	tm.Type("copied the figures by hand")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "completed  6/6")
	finish(t, tm)
	e := getPlan(t, engine, "report").SubtaskByID("enrich")
	if e.Status != planner.Completed || e.Note != "copied the figures by hand" || e.MarkedBy != "local" {
		t.Errorf("enrich: %+v", e)
	}
}

func TestSubtaskKeysExplainWhatTheyActOn(t *testing.T) {
	t.Parallel()
	_, tm := abortedReport(t, 0, goldenWidth, goldenHeight)
	keys(tm, tea.KeyEnter) // fetch, completed
	waitFor(t, tm, "▸ fetch · ✓ Completed")
	tm.Type("t")
	waitFor(t, tm, "Subtask fetch is Completed: retry works on a failed or skipped subtask.")
	m := finish(t, tm)
	if k := plansOf(m).stepKeys(); len(k) != 0 {
		t.Errorf("a completed subtask offers %v", k)
	}
}

func TestExecutingAnAbortedPlanWithSkipFromTheConsole(t *testing.T) {
	t.Parallel()
	engine, tm := abortedReport(t, 0, goldenWidth, goldenHeight)
	tm.Type("x")
	waitFor(t, tm, "Execute report", "the failed subtasks now: run once more")
	keys(tm, tea.KeyRight)
	waitFor(t, tm, "the failed subtasks now: skipped, with whatever depends on them")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Plan report partial: 3 of 6 completed, 3 skipped", "on failure skip")
	finish(t, tm)
	if d := getPlan(t, engine, "report"); d.Status != planner.PlanPartial || d.SubtaskByID("enrich").Status != planner.Skipped {
		t.Errorf("after x skip: %s %s", d.Status, statuses(d))
	}
}

func TestExecuteOnACompletedPlanOffersAFreshRun(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, work(100))
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	keys(tm, tea.KeyDown)
	waitFor(t, tm, "breakfast · Prepare breakfast", "x run again")
	tm.Type("x")
	waitFor(t, tm, "Plan breakfast completed. Run it again from the start?", "y run it again")
	tm.Type("n")
	waitFor(t, tm, "Nothing ran.")
	tm.Type("x")
	waitFor(t, tm, "Run it again from the start?")
	tm.Type("y")
	waitFor(t, tm, "Plan breakfast completed: 3 of 3 completed")
	finish(t, tm)
	d := getPlan(t, engine, "breakfast")
	if d.Status != planner.PlanCompleted || d.SubtaskByID("toast").Attempts != 1 || d.Settings.OnSubtaskFailure != "abort" {
		t.Errorf("after the fresh run: %s %s %+v", d.Status, statuses(d), d.SubtaskByID("toast"))
	}
	if !d.SubtaskByID("toast").StartedAt.After(goldenTime.Add(-30 * 60 * 1e9)) {
		t.Errorf("toast did not run again: started %v", d.SubtaskByID("toast").StartedAt)
	}
}

func TestQuittingWhileAPlanRunsAsksFirst(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	gate.waitEntered(t)
	waitFor(t, tm, "1 running")
	tm.Type("q")
	waitFor(t, tm, "Plan report is running: quit and cancel it (r resumes it later)?", "y quit")
	tm.Type("n")
	waitFor(t, tm, "Still here: nothing was stopped.")
	keys(tm, tea.KeyCtrlC)
	waitFor(t, tm, "quit and cancel it")
	tm.Type("y")
	m := final(t, tm) // y quits by itself
	if !m.quitting {
		t.Error("y did not quit")
	}
	_ = engine
}

func TestPlansTabFollowsSharesAndRevokesByOthers(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No plans yet.")
	as := func(who, name, args string) {
		t.Helper()
		if _, err := engine.Do(context.Background(), conn.Request{Action: name, Args: json.RawMessage(args), Principal: who}); err != nil {
			t.Fatalf("%s as %s: %v", name, who, err)
		}
	}
	as("alice", "plan.create", `{"id": "alices", "goal": "Alice's plan", "subtasks": [{"id": "a", "action": {"name": "task.noop"}}]}`)
	as("alice", "plan.share", `{"plan_id": "alices", "principal": "local", "permissions": ["read"]}`)
	waitFor(t, tm, "alices", "Alice's plan")
	as("alice", "plan.revoke", `{"plan_id": "alices", "principal": "local"}`)
	waitFor(t, tm, "No plans yet.")
	finish(t, tm)
}

// TestGoldenPlansAborted120: an aborted plan says what works without a
// model under its header, and the footer leads with x and r (issue 14).
func TestGoldenPlansAborted120(t *testing.T) {
	t.Parallel()
	_, tm := abortedReport(t, 0, 120, 36)
	m := finish(t, tm)
	requireGoldenSized(t, m, 120, 36)
}

// TestGoldenPlansAborted80: the same at 80x24.
func TestGoldenPlansAborted80(t *testing.T) {
	t.Parallel()
	_, tm := abortedReport(t, 0, 80, 24)
	m := finish(t, tm)
	requireGoldenSized(t, m, 80, 24)
}

// TestGoldenPlansAbortedSubtask80: on the failed subtask, the footer leads
// with t and s, and ? lists m.
func TestGoldenPlansAbortedSubtask80(t *testing.T) {
	t.Parallel()
	_, tm := abortedReport(t, 0, 80, 24)
	walkToEnrich(t, tm)
	m := finish(t, tm)
	requireGoldenSized(t, m, 80, 24)
}
