//go:build !noplanning

package planner

import (
	"context"
	"errors"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// A plan stored as running when the planner starts was interrupted: only
// one engram process owns a data directory (its lock), and the planner is
// new, so nobody runs it any more (issue 14, bug 1: after a kill -9 a plan
// said "running" forever, and the console offered only to cancel it).
//
// When engram becomes one owner process that several clients talk to
// (issue 15), that process is still the only one that runs plans, so
// marking at open stays right; only a second process running plans on the
// same store would need a lease per run instead.

// markInterrupted marks every plan stored as running interrupted, in one
// transaction, and makes their InProgress subtasks Pending again (plan.resume
// runs them). A store that refuses writes (opened read-only on a full disk)
// keeps them as they are: reads show them interrupted anyway (shownStatus).
func (pl *Planner) markInterrupted() {
	var marked []string
	err := pl.env.Update(context.Background(), func(tx *kit.Txn) error {
		marked = marked[:0]
		var ids []string
		err := tx.Keys(storage.Prefix(planPrefix()), func(k []byte) error {
			if parts := storage.SplitKey(storage.PrefixPlan, k); len(parts) == 1 {
				ids = append(ids, parts[0])
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			p, err := loadPlan(tx.Tx, id)
			if err != nil || p.Status != PlanRunning {
				continue // an unreadable plan stays as it is (engram check names it)
			}
			p.Status = PlanInterrupted
			for _, s := range p.Subtasks {
				if s.Status == InProgress {
					s.Status = Pending
				}
			}
			if err := savePlan(tx.Tx, p); err != nil {
				return err
			}
			marked = append(marked, id)
		}
		return nil
	})
	switch {
	case errors.Is(err, storage.ErrFull):
		pl.env.Log.Warn("plans left running by an earlier engram stay so in the store (it is read-only); they read as interrupted", "err", err)
	case err != nil:
		pl.env.Log.Warn("marking the plans an earlier engram left running as interrupted failed; they read as interrupted", "err", err)
	case len(marked) > 0:
		pl.env.Log.Info("plans interrupted by the end of an earlier engram (plan.resume continues them)", "plans", marked)
	}
}

// shownStatus is the status readers see of a stored plan: running only
// while this planner runs it. A plan stored as running that it does not
// (the store refused markInterrupted's write) was interrupted.
func (pl *Planner) shownStatus(p *Plan) {
	if p == nil || p.Status != PlanRunning {
		return
	}
	pl.mu.Lock()
	_, busy := pl.running[p.ID]
	pl.mu.Unlock()
	if !busy {
		p.Status = PlanInterrupted
	}
}
