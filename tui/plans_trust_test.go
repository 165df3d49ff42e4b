//go:build !noplanning

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/planner"
)

// A subtask whose model-proposed action engram refused shows the refusal,
// and one whose result is hidden from this reader says so instead of
// looking empty (issue 13, items 1 and 5).
func TestSubtaskDetailShowsRefusedActionsAndHiddenResults(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	m := New(engine, Options{StatusFade: time.Hour})
	p := plansOf(m)
	d := &planner.Plan{ID: "p", Goal: "g", Subtasks: []*planner.Subtask{
		{ID: "wipe", Description: "Clean up old notes", Status: planner.Completed,
			Warning: `the model proposed memory.forget, which a model-made subtask may not run; it ran its description instead`},
		{ID: "read", Description: "Read the goal", Status: planner.Completed, Redacted: true},
	}}
	for _, c := range []struct{ step, want string }{
		{"wipe", "⚠ the model proposed memory.forget"},
		{"read", "result hidden"},
	} {
		p.plan.step = c.step
		text := strings.Join(p.stepDetail(d, 120), "\n")
		if !strings.Contains(text, c.want) {
			t.Errorf("subtask %s: the detail does not show %q:\n%s", c.step, c.want, text)
		}
	}
}
