//go:build !noplanning

package tui

import (
	"regexp"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/planner"
)

// A run's end shows in the plans list in the same update as in the plan
// and the status line: the console never says "aborted" above a list that
// still says pending. A reload of the list or the plan read before the end
// and answered after it (a loaded machine) does not bring "pending" back.
func TestARunsEndShowsInTheListAtOnceAndStays(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "task.fail"}`)
	d := newPlansDriver(t, engine)
	d.deliver(d.run(d.p.Init())...)
	d.deliver(d.run(d.p.Focus())...)
	if d.p.shown() == nil || d.p.currentID() != "report" {
		t.Fatalf("the report did not load: %q", d.p.currentID())
	}
	pending, aborted := regexp.MustCompile(`pending +0/6`), regexp.MustCompile(`aborted +3/6`)
	if v := d.p.View(); !pending.MatchString(v) {
		t.Fatalf("before the run the list does not say pending 0/6:\n%s", v)
	}
	// Reloads read before the run, answered after its end.
	late := d.run(d.p.reloadAll())
	runs := d.run(d.p.askOrRun(runAsk{plan: "report", verb: "execute", execute: planner.ExecuteArgs{PlanID: "report", MaxConcurrent: 4}}))
	var end tea.Msg
	for _, m := range runs {
		if _, ok := m.(resultMsg[planner.ExecuteResult]); ok {
			end = m
		}
	}
	if end == nil {
		t.Fatalf("no plan.execute answer among %v", runs)
	}
	status := d.run(d.p.Update(end)) // the status line's text, among the reloads
	said := false
	for _, m := range status {
		if s, ok := m.(statusMsg); ok && regexp.MustCompile(`^Plan report aborted`).MatchString(s.text) {
			said = true
		}
	}
	if !said {
		t.Fatalf("the run's end says nothing in the status line: %v", status)
	}
	check := func(when string) {
		t.Helper()
		v := d.p.View()
		if !aborted.MatchString(v) || pending.MatchString(v) {
			t.Errorf("%s, the status line says aborted but the list does not:\n%s", when, v)
		}
		if sh := d.p.shown(); sh == nil || sh.Status != planner.PlanAborted {
			t.Errorf("%s, the plan shown is not aborted: %+v", when, sh)
		}
	}
	check("in the update that ends the run")
	var next []tea.Msg
	for _, m := range late {
		next = append(next, d.run(d.p.Update(m))...)
		check("after a reload read before the end")
	}
	d.deliver(append(status, next...)...)
	check("after the reloads that follow")
}
