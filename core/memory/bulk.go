package memory

import (
	"context"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
)

// MemorizeMany memorizes items into a store in one transaction, through
// the same code as memory.memorize (prepare, then memorizeIn: the item,
// its indexes and postings, the store's counters, the event), so that it
// writes what that many memorize calls would, one commit instead of one
// each: for loading benchmark stores quickly (core/scale). A bad item
// fails the whole call and nothing is stored. Keep a call's items to a
// few thousand: a transaction has a size limit.
func (m *Memory) MemorizeMany(ctx context.Context, call action.Call, storeName string, items []Item) error {
	s := &store{env: m.env, name: storeName}
	return m.env.Update(ctx, func(tx *kit.Txn) error {
		for _, it := range items {
			if err := s.prepare(call, &it); err != nil {
				return err
			}
			if _, err := s.memorizeIn(tx, call, it); err != nil {
				return err
			}
		}
		return nil
	})
}
