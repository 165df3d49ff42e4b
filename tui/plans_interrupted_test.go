//go:build !noplanning

package tui

import (
	"context"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// relaunchAfterKill seeds the plans, runs the report one subtask at a
// time until enrich is held at the gate, and leaves the store as a kill -9
// at that moment would: the report stored running, with fetch and parse
// completed and enrich in progress. Then it opens a new engine on the
// store, as a relaunch does, and returns it with its gate.
func relaunchAfterKill(t *testing.T) (conn.Conn, *planGate) {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFixed(goldenTime)
	engine, gate := newPlanEngineAt(t, dir, clk)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := conn.Call(ctx, engine, planner.ActionPlanExecute, planner.ExecuteArgs{PlanID: "report", MaxConcurrent: 1})
		done <- err
	}()
	gate.waitEntered(t)
	live := getPlan(t, engine, "report")
	if live.Status != planner.PlanRunning {
		t.Fatalf("the report mid-run is %s", live.Status)
	}
	cancel()
	select {
	case err := <-done:
		_ = err // cancelled on purpose: how the run says so does not matter here
	case <-time.After(waitLimit):
		t.Fatal("the run did not end")
	}
	b, err := planner.EncodeCheckpoint(live)
	if err != nil {
		t.Fatal(err)
	}
	err = engine.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixPlan, "report"), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	closeEngine(t, engine)
	relaunched, gate := newPlanEngineAt(t, dir, clk)
	return sameDataDir{relaunched}, gate
}

// sameDataDir names the data directory the same in every run, so that the
// header of a golden frame does not show a temporary directory.
type sameDataDir struct{ conn.Conn }

func (c sameDataDir) Info(ctx context.Context) (conn.Info, error) {
	info, err := c.Conn.Info(ctx)
	info.DataDir = "~/.local/share/engram"
	return info, err
}

// TestGoldenPlansInterrupted: after a kill -9 mid-run and a relaunch, the
// report reads interrupted (no spinner), says r resumes it, and the footer
// puts r first (issue 14, bug 1).
func TestGoldenPlansInterrupted(t *testing.T) {
	t.Parallel()
	engine, _ := relaunchAfterKill(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "↯ interrupted: r resumes it", "interrupted 2/6", "2 of 6 completed · 4 pending")
	m := finish(t, tm)
	requireGolden(t, m)
	p := plansOf(m)
	if p.running() {
		t.Error("the pane thinks something runs: its spinner would turn")
	}
	if k := p.Keys(); len(k) == 0 || k[0].Help().Key != "r" {
		t.Errorf("the footer starts with %v, want r", k)
	}
}

// An interrupted plan: c says nothing runs it and r resumes it, x offers a
// run, and r resumes it to the end (issue 14, bug 1: r said "running
// already", c "nothing to cancel", x "running: c cancels it").
func TestPlansResumeAPlanInterruptedByAStoppedEngram(t *testing.T) {
	t.Parallel()
	engine, gate := relaunchAfterKill(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "↯ interrupted: r resumes it")
	tm.Type("c")
	waitFor(t, tm, "Plan report is not running (engram stopped mid-run): r resumes it.")
	tm.Type("x")
	waitFor(t, tm, "Execute report", "[abort]")
	keys(tm, tea.KeyEsc)
	gate.release()
	tm.Type("r")
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "completed  6/6")
	finish(t, tm)
	if d := getPlan(t, engine, "report"); d.Status != planner.PlanCompleted {
		t.Errorf("after r: %s %s", d.Status, statuses(d))
	}
}
