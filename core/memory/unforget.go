package memory

import (
	"context"
	"fmt"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// UnforgottenEvent is the payload of EventUnforgotten.
type UnforgottenEvent struct {
	// ID is the item brought back.
	ID string `json:"id"`
	// Store is the store it is in.
	Store string `json:"store"`
}

// StoreChangedEvent is the payload of EventStoreChanged.
type StoreChangedEvent struct {
	// Change is what changed: configured (created, or its limits or
	// policy), shared or revoked (its access list).
	Change string `json:"change"`
	// Store is the store that changed.
	Store string `json:"store"`
}

// Events of the changes a memorize or forget does not cover: a console
// showing a store follows them as it follows those (issue 14, bug 8).
var (
	EventUnforgotten  = events.Define[UnforgottenEvent]("memory.unforgotten", "after a soft-forgotten item is brought back by memory.unforget")
	EventStoreChanged = events.Define[StoreChangedEvent]("memory.store.changed", "after memory.configure, memory.share or memory.revoke changes a store's settings or access list")
)

// UnforgetArgs is memory.unforget's arguments.
type UnforgetArgs struct {
	// Store is the store holding the item.
	Store string `json:"store" arg:"required" help:"the store"`
	// ID is the soft-forgotten item to bring back.
	ID string `json:"id" arg:"required" help:"the soft-forgotten item"`
}

// UnforgetResult is memory.unforget's result.
type UnforgetResult struct {
	// Item is the item, live again.
	Item *Item `json:"item"`
	// Evicted are the items the store evicted to make room for it (per
	// on_full evict): never null.
	Evicted []string `json:"evicted"`
}

func (m *Memory) actUnforget(ctx context.Context, call action.Call, a UnforgetArgs) (UnforgetResult, error) {
	if _, err := m.Store(a.Store); err != nil {
		return UnforgetResult{}, err
	}
	s := &store{env: m.env, name: a.Store}
	res, err := s.unforget(ctx, call, a.ID)
	return res, m.afterFailure(ctx, call, err)
}

// unforget brings a soft-forgotten item back among the live ones: into the
// live ordering indexes and postings, counted against the limits again
// (making room per the store's policy, as a memorize does). It needs write,
// as a soft forget does; an erased item cannot come back.
func (s *store) unforget(ctx context.Context, call action.Call, id string) (UnforgetResult, error) {
	if id == "" {
		return UnforgetResult{}, kit.Validation("id", "name the soft-forgotten item to bring back")
	}
	var res UnforgetResult
	err := s.env.Update(ctx, func(tx *kit.Txn) error {
		st, err := s.loadAs(tx.Tx, call, access.Write)
		if err != nil {
			return err
		}
		it, err := s.get(tx.Tx, id)
		if errs.KindOf(err) == errs.NotFound {
			return errs.New(errs.NotFound, "store %q has no item %q: an item forgotten hard is erased and cannot come back", s.name, id).With("field", "id")
		} else if err != nil {
			return err
		}
		if !it.Deleted {
			return kit.Validation("id", "item %q of store %q is not forgotten: only a soft-forgotten item can be brought back", id, s.name)
		}
		evicted, err := s.makeRoom(tx, call, st, it)
		if err != nil {
			return err
		}
		// Out of the deleted ordering indexes and postings, into the live ones.
		for _, k := range s.orderKeys(it) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		if _, err := s.index().Remove(tx.Tx, it.ID, it.Text, attrDeleted); err != nil {
			return err
		}
		it.Deleted, it.DeletedAt, it.Evicted = false, nil, false
		if err := tx.SetJSON(itemKey(s.name, it.ID), it); err != nil {
			return err
		}
		for _, k := range s.orderKeys(it) {
			if err := tx.Set(k, nil); err != nil {
				return err
			}
		}
		if _, err := s.index().Add(tx.Tx, it.ID, it.Text, attrLive); err != nil {
			return err
		}
		st.Deleted--
		st.ItemCount++
		st.TokenUsage += it.TokensEstimate
		st.bottomAdd(s.impSortKey(it))
		if err := tx.SetJSON(stateKey(s.name), st); err != nil {
			return err
		}
		EventUnforgotten.Publish(tx, st.audience(), UnforgottenEvent{ID: it.ID, Store: s.name})
		res = UnforgetResult{Item: it, Evicted: evicted}
		_, err = tx.Trace(call, "memory.unforgotten", fmt.Sprintf("memory %s: brought back item %s", s.name, it.ID), UnforgottenEvent{ID: it.ID, Store: s.name})
		return err
	})
	if err != nil {
		return UnforgetResult{}, err
	}
	return res, nil
}
