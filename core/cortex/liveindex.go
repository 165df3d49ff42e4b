package cortex

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/storage"
)

// liveIndex keeps the in-memory query index (memindex) exactly in step with
// the store, so that a query answers from bitmaps what it would answer
// from the index keys in Badger.
//
// Exactness rests on one rule: a query uses the index only while no
// transaction that changes items is committing. Each such transaction
// counts itself in before Badger commits (inflight) and applies its rows
// and counts itself out after, both under mu. A query holds mu for reading
// from before its snapshot opens until it is done, and finds inflight 0:
// so every commit its snapshot sees is applied, and none it doesn't see
// is. When a commit is under way, or the index is still being built, the
// query reads the index keys in Badger instead (Query.scan): slower,
// never wrong.
type liveIndex struct {
	mu       sync.RWMutex
	idx      *memindex.Index // nil until built
	inflight int
	// building: a build is reading the store; rows committed meanwhile
	// wait in backlog for it.
	building bool
	backlog  []memindex.Row
	// built is closed once the index is in use (or its build failed).
	built chan struct{}
}

// startIndexing builds the query index in the background: queries read
// the store's index keys until it is ready. Closing the engine stops it.
func (c *Cortex) startIndexing() {
	c.index.built = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.index.built)
		if err := c.index.build(ctx, c.env.Store); err != nil && ctx.Err() == nil {
			c.env.Log.Warn("building the cortex query index failed; queries read the store's index keys", "err", err)
		}
	}()
	c.env.OnClose(func() error {
		cancel()
		<-done
		return nil
	})
}

// Indexed is closed once queries answer from the in-memory index (or its
// build failed and they keep reading the store).
func (c *Cortex) Indexed() <-chan struct{} { return c.index.built }

// pendingRows is a transaction's part in the index: the rows of the items
// it wrote, applied once it commits.
type pendingRows struct {
	li      *liveIndex
	rows    map[string]memindex.Row
	counted bool
}

type pendingKey struct{}

// stage records that tx writes it, for the index once tx commits.
func (li *liveIndex) stage(tx *storage.Tx, it *Item) {
	p := tx.Hook(pendingKey{}, func() storage.CommitHook {
		return &pendingRows{li: li, rows: map[string]memindex.Row{}}
	}).(*pendingRows)
	p.rows[it.ID] = rowOf(it) // the last write of an item in tx wins
}

// BeforeCommit counts the transaction in: queries stop using the index
// until it has been applied.
func (p *pendingRows) BeforeCommit() {
	p.li.mu.Lock()
	p.li.inflight++
	p.counted = true
	p.li.mu.Unlock()
}

// AfterCommit applies the rows if the transaction committed, and counts
// it out.
func (p *pendingRows) AfterCommit(committed bool) {
	p.li.mu.Lock()
	defer p.li.mu.Unlock()
	if committed {
		for _, r := range p.rows {
			p.li.put(r)
		}
	}
	if p.counted {
		p.li.inflight--
	}
}

// put applies a committed row (mu held).
func (li *liveIndex) put(r memindex.Row) {
	switch {
	case li.idx != nil:
		li.idx.Put(r)
	case li.building:
		li.backlog = append(li.backlog, r)
	}
}

// read runs fn with the index if a query may use it now (see liveIndex),
// holding it for reading; else it runs fallback.
func (li *liveIndex) read(fn func(idx *memindex.Index) error, fallback func() error) error {
	li.mu.RLock()
	if li.idx == nil || li.inflight > 0 {
		li.mu.RUnlock()
		return fallback()
	}
	defer li.mu.RUnlock()
	return fn(li.idx)
}

// build reads every item of the store into a new index. Rows committed
// while it reads are kept aside and applied after (Put keeps the later
// version of an item), so nothing committed is missed.
func (li *liveIndex) build(ctx context.Context, store *storage.Store) error {
	li.mu.Lock()
	li.building, li.backlog = true, nil
	li.mu.Unlock()
	idx := memindex.New()
	err := store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(itemPrefix()), func(_, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var it Item
			if err := json.Unmarshal(value, &it); err != nil {
				return err
			}
			idx.Put(rowOf(&it))
			return nil
		})
	})
	li.mu.Lock()
	defer li.mu.Unlock()
	li.building = false
	if err == nil {
		for _, r := range li.backlog {
			idx.Put(r)
		}
		li.idx = idx
	}
	li.backlog = nil
	return err
}

// rowOf is what the index keeps of it.
func rowOf(it *Item) memindex.Row {
	return memindex.Row{
		ID: it.ID, Version: it.GlobalVersion, Type: it.Type, Status: it.Status, Rank: priorityRank(it.Priority),
		Due: it.DueAt, Blocking: it.Blocking, Created: it.CreatedAt, Deleted: it.DeletedAt != nil,
		Readers: it.readers(), Tags: it.Tags, Owner: it.Owner, Org: it.Org, Parent: it.Parent,
		Words: words(it.Title + " " + it.Description),
	}
}
