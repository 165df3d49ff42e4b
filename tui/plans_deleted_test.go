//go:build !noplanning

package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/planner"
)

// A plan deleted elsewhere (tour.remove, the palette) leaves the Plans tab
// quietly: no "no plan" error for the plan it showed.
func TestADeletedPlanLeavesThePlansTabWithoutAnError(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	do(t, engine, "plan.create", "", `{"id": "gone", "goal": "Soon deleted", "subtasks": [{"id": "a", "action": {"name": "noop"}}]}`)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("4")
	waitFor(t, tm, "[4 Plans]", "Soon deleted")
	do(t, engine, "plan.delete", "", `{"plan_id": "gone"}`)
	waitFor(t, tm, "No plans yet")
	if v := finish(t, tm).View(); strings.Contains(v, "NotFoundError") {
		t.Errorf("the Plans tab reports the deleted plan as an error:\n%s", v)
	}
}

// plansDriver runs the Plans pane of a console by hand, so that a test
// decides when each request runs and when its answer lands.
type plansDriver struct {
	t     *testing.T
	m     *Model
	p     *plansPane
	shown []string // the failures the status line would show
}

func newPlansDriver(t *testing.T, engine conn.Conn) *plansDriver {
	m := New(engine, Options{StatusFade: time.Hour})
	t.Cleanup(m.cancel)
	m.Update(tea.WindowSizeMsg{Width: goldenWidth, Height: goldenHeight})
	p := plansOf(m)
	p.still = true
	return &plansDriver{t: t, m: m, p: p}
}

// run runs cmd's requests now and returns their answers, undelivered.
func (d *plansDriver) run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if batch, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range batch {
			out = append(out, d.run(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

// deliver hands the answers to the pane as the console does (a failure
// the pane does not show itself goes to the status line), then runs and
// delivers whatever they ask for, until nothing is left.
func (d *plansDriver) deliver(msgs ...tea.Msg) {
	for len(msgs) > 0 {
		msg := msgs[0]
		msgs = msgs[1:]
		if a, ok := msg.(addressed); ok && a.failure() != nil && !d.m.quietFailure(a) {
			d.shown = append(d.shown, a.failure().Error())
		}
		msgs = append(msgs, d.run(d.p.Update(msg))...)
	}
}

// deleted is the event plan.delete sends.
func deleted(id string) events.Event {
	return events.Event{Name: planner.EventPlanChanged.Name(), Data: planner.PlanChangedEvent{Change: "deleted", PlanID: id}}
}

// TestAReloadAnsweredAfterTheDeletionShowsNoError: a reload of the list
// and the plan asked before the plan was deleted, answered after the
// deletion event (a loaded machine), leaves the tab without the plan and
// the status line without "no plan".
func TestAReloadAnsweredAfterTheDeletionShowsNoError(t *testing.T) {
	t.Parallel()
	for _, stale := range []string{"plan.get runs after the deletion", "plan.list ran before the deletion"} {
		t.Run(stale, func(t *testing.T) {
			engine, _, _ := newPlanEngine(t)
			do(t, engine, "plan.create", "", `{"id": "gone", "goal": "Soon deleted", "subtasks": [{"id": "a", "action": {"name": "noop"}}]}`)
			d := newPlansDriver(t, engine)
			d.deliver(d.run(d.p.Init())...)
			d.deliver(d.run(d.p.Focus())...)
			if d.p.shown() == nil {
				t.Fatal("the plan did not load")
			}
			var late []tea.Msg
			reload := d.p.reloadAll() // a Focus: issued, not yet run
			if stale == "plan.list ran before the deletion" {
				// An event's list reload, answered before the deletion
				// (the plan in it), delivered after.
				late = d.run(d.p.refresh(&d.p.list.load, d.p.loadList))
			}
			do(t, engine, "plan.delete", "", `{"plan_id": "gone"}`)
			d.deliver(d.run(d.p.Update(deleted("gone")))...)
			d.deliver(append(late, d.run(reload)...)...)
			if len(d.shown) > 0 {
				t.Errorf("the status line shows %q for a deleted plan", d.shown)
			}
			if v := d.p.View(); !strings.Contains(v, "No plans yet") || strings.Contains(v, "NotFoundError") {
				t.Errorf("the Plans tab after the deletion:\n%s", v)
			}
		})
	}
}
