//go:build noplanning

package tui

// plannerBuilt: this build leaves the planner out (-tags noplanning): the
// Plans tab only says so, and loads nothing.
const plannerBuilt = false
