//go:build !noplanning

package planner_test

import (
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/enginetest"
)

// A store holding a plan, and nothing else, is not empty to engine.info
// (the console offers its tour on an empty store).
func TestEngineInfoIsNotEmptyWithAPlan(t *testing.T) {
	r := newRig(t)
	empty := func() bool {
		var info conn.Info
		enginetest.Decode(t, r.do("engine.info", `{"counts": false}`), &info)
		return info.Empty
	}
	if !empty() {
		t.Fatal("a new store is not empty")
	}
	r.do("plan.create", map[string]any{"id": "p", "goal": "Breakfast", "subtasks": []any{st("toast", "noop", nil)}})
	if empty() {
		t.Fatal("a store with a plan is empty")
	}
}
