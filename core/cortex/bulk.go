package cortex

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/kit"
)

// BulkItem is one item for BulkCreate: what cortex.create takes, and the
// principal who creates (and so owns) it.
type BulkItem struct {
	Type   string
	ID     string
	Owner  string
	Fields map[string]json.RawMessage
}

// BulkOptions configure BulkCreate.
type BulkOptions struct {
	// Start is the time before the first item: item i is created at
	// Start + (i+1) ms, as one Create after another a millisecond apart.
	Start time.Time
	// SetClock moves the engine clock (the one ids and trace entries are
	// stamped with) to an item's time before its ids are drawn and before
	// its writes, and to the last item's time at the end; nil leaves the
	// engine clock alone (ids and trace entries then carry its time).
	SetClock func(time.Time)
	// PerTx is how many items one transaction writes (default 250).
	PerTx int
	// Progress, when set, is told how many items are written after each
	// transaction (for a progress line on stderr).
	Progress func(done int)
}

// BulkCreate writes items as cortex.create would, one after another a
// millisecond apart, PerTx to a transaction — only faster: it draws the
// ids and times in Create's order, builds and seals the items and their
// audit entries on every core, then writes them in order through
// writeMutation, the path every mutation takes. What it writes is byte
// for byte what Create writes (TestBulkCreateWritesWhatCreateWrites). It
// is for building benchmark stores (core/scale); it publishes the same
// events as Create. Items are validated as Create validates them; the
// first bad one stops the load, leaving the transactions before it
// committed. It returns the time of the last item.
func (c *Cortex) BulkCreate(ctx context.Context, items []BulkItem, opts BulkOptions) (time.Time, error) {
	perTx := opts.PerTx
	if perTx <= 0 {
		perTx = 250
	}
	type prepared struct {
		call          action.Call
		at            time.Time
		txID, mutID   string
		it            *Item
		entry         *Mutation
		sealed, state []byte
		err           error
	}
	preps := make([]prepared, len(items))
	// The ids, in Create's order: insert draws the transaction's, then
	// commitMutation the mutation's, each at the item's time.
	// The generator stamps ids with the engine clock: it is set first.
	setClock := opts.SetClock
	if setClock == nil {
		setClock = func(time.Time) {}
	}
	at := opts.Start
	for i, s := range items {
		at = at.Add(time.Millisecond)
		setClock(at)
		who := action.Call{Principal: s.Owner, Clock: clock.NewFixed(at)}
		preps[i] = prepared{call: who, at: at, txID: c.env.IDs.New()}
		preps[i].mutID = c.env.IDs.New()
	}
	// What reads nothing stored, on every core.
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(items); i += workers {
				p, s := &preps[i], items[i]
				if p.it, p.err = c.newItem(p.call, s.Type, s.ID, s.Fields); p.err != nil {
					continue
				}
				p.entry = newMutation(nil, p.it, mutation{call: p.call, txID: p.txID, kind: "create"}, p.mutID)
				// A new item's chain starts empty.
				p.sealed, p.state, p.err = sealMutation(p.entry, p.it, "")
			}
		})
	}
	wg.Wait()
	// The writes, in order: insert's checks, the mutation, the trace entry
	// (stamped with the engine clock, so set to the item's time).
	for start := 0; start < len(preps); start += perTx {
		chunk := preps[start:min(start+perTx, len(preps))]
		err := c.env.Update(ctx, func(tx *kit.Txn) error {
			for j, p := range chunk {
				if p.err != nil {
					return fmt.Errorf("item %s: %w", items[start+j].ID, p.err)
				}
				if ok, err := tx.Has(itemKey(p.it.ID)); err != nil {
					return err
				} else if ok {
					return fmt.Errorf("item %s already exists", p.it.ID)
				}
				if err := c.checkParent(tx.Tx, p.call, p.it); err != nil {
					return fmt.Errorf("item %s: %w", p.it.ID, err)
				}
				setClock(p.at)
				if err := c.writeMutation(tx, nil, p.it, p.entry, p.sealed, p.state); err != nil {
					return err
				}
				if err := traceCreated(tx, p.call, p.it); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return at, fmt.Errorf("bulk create of items %d..%d: %w", start, start+len(chunk)-1, err)
		}
		if opts.Progress != nil {
			opts.Progress(start + len(chunk))
		}
	}
	setClock(at)
	return at, nil
}
