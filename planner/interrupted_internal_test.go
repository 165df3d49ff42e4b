//go:build !noplanning

package planner

import (
	"testing"

	"github.com/engram-console/engram/core/kit"
)

// On a store that refused markInterrupted's write (read-only on a full
// disk), a plan stored as running reads interrupted unless this planner
// runs it (issue 14, bug 1).
func TestStoredRunningPlanNobodyRunsReadsInterrupted(t *testing.T) {
	pl := New(&kit.Env{}, Options{})
	left := &Plan{ID: "left", Status: PlanRunning}
	pl.shownStatus(left)
	if left.Status != PlanInterrupted {
		t.Errorf("a plan nobody runs: %s, want interrupted", left.Status)
	}
	if !pl.claim("mine", nil, func() {}) {
		t.Fatal("claim")
	}
	mine := &Plan{ID: "mine", Status: PlanRunning}
	pl.shownStatus(mine)
	if mine.Status != PlanRunning {
		t.Errorf("a plan this planner runs: %s, want running", mine.Status)
	}
}
