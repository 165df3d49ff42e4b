//go:build !noplanning

package tui

import (
	"strings"
	"testing"
)

// A plan deleted elsewhere (tour.remove, the palette) leaves the Plans tab
// quietly: no "no plan" error for the plan it showed.
func TestADeletedPlanLeavesThePlansTabWithoutAnError(t *testing.T) {
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
