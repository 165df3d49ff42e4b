//go:build noplanning

// Package planner is left out of this build (-tags noplanning) but for its
// data types: its actions say how to get them back, and its graph library
// is not linked.
package planner

import "github.com/engram-console/engram/core/kit"

// Options configure the planner (unused in this build).
type Options struct{}

// Subsystem marks the plan.* actions as left out of this build.
func Subsystem(Options) func(env *kit.Env) error {
	return func(env *kit.Env) error {
		for _, ns := range []string{"plan", "state", "task"} {
			env.Actions.Removed(ns, "this engram was built with -tags noplanning; rebuild without it (go build .) for the planner")
		}
		return nil
	}
}
