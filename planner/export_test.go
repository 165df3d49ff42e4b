//go:build !noplanning

package planner

import (
	"context"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Internals the external tests (package planner_test) look at.

// StoredPlan reads a plan as the store holds it (with its progress records
// laid over it), not the live snapshot Get returns while it runs: what a
// crashed engram would resume from.
func StoredPlan(env *kit.Env, id string) (*Plan, error) {
	var p *Plan
	err := env.Store.View(func(tx *storage.Tx) error {
		var err error
		p, err = loadPlan(tx, id)
		return err
	})
	return p, err
}

// ReadCheckpointFile reads a checkpoint file (checkpoint: PATH).
var ReadCheckpointFile = readCheckpointFile

// ParseProposal parses a model's answer as decompose does.
var ParseProposal = parseProposal

// SaveStoredPlan writes p as the store's record of its plan, as an engram
// that stopped at that moment would have left it.
func SaveStoredPlan(env *kit.Env, p *Plan) error {
	return env.Store.Update(context.Background(), func(tx *storage.Tx) error { return savePlan(tx, p) })
}
