//go:build !noplanning

package tui

// plannerBuilt: this build has the planner (see planner_left_out_test.go),
// so the Plans tab has plans to load and walk.
const plannerBuilt = true
