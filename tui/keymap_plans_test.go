//go:build !noplanning

package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
)

// The Plans tab's states of keyStates: an engram built without the
// planner (-tags noplanning) has no plans to walk.
func init() {
	keyStates = append(keyStates, []keyState{
		{name: "plans list", tab: tabPlans, seed: plansEngine,
			enter: func(t *testing.T, tm *teatest.TestModel) {
				waitFor(t, tm, "Publish the weekly report", "stage 4") // the DAG too: enter and x need it
			}},
		{name: "plans execute prompt", tab: tabPlans, seed: plansEngine,
			enter: func(t *testing.T, tm *teatest.TestModel) {
				waitFor(t, tm, "Publish the weekly report", "stage 4") // the DAG too: enter and x need it
				tm.Type("x")
				waitFor(t, tm, "Enter execute")
			}},
		{name: "plans subtasks", tab: tabPlans, seed: plansEngine,
			enter: func(t *testing.T, tm *teatest.TestModel) {
				waitFor(t, tm, "Publish the weekly report", "stage 4") // the DAG too: enter and x need it
				keys(tm, tea.KeyEnter)
				waitFor(t, tm, "Esc back")
			}},
		{name: "plans aborted subtasks", tab: tabPlans, seed: abortedPlanEngine,
			enter: func(t *testing.T, tm *teatest.TestModel) {
				waitFor(t, tm, "Publish the weekly report", "✗ aborted", "stage 4")
				keys(tm, tea.KeyEnter)
				waitFor(t, tm, "Esc back")
			}},
	}...)
}

func plansEngine(t *testing.T) conn.Conn {
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, work(1200))
	return engine
}

// abortedPlanEngine has the report plan aborted at its failed enrich.
func abortedPlanEngine(t *testing.T) conn.Conn {
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "task.fail"}`)
	do(t, engine, "plan.execute", "", `{"plan_id": "report", "max_concurrent": 1}`)
	return engine
}
