package cortex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
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
	// loading: the build is loading the store's snapshot, a second at a
	// million items, so queries wait for it rather than read the index
	// keys (seconds, and hundreds of MB of garbage, at that size).
	loading bool
	// loaded is closed once loading is over: the snapshot is in use, or
	// it turned out unusable (the index is then built from the items,
	// which takes long, and queries read the index keys meanwhile), or
	// the build failed. endLoad closes it.
	loaded   chan struct{}
	loadOnce sync.Once
	// From the snapshot loaded at open (source "snapshot", with replayed
	// items read again), or built from every item ("items").
	source   string
	replayed int
	// changed counts items changed since the last save; saving is true
	// while one runs; closed once the engine closes.
	changed        int
	saving, closed bool
	store          *storage.Store
	log            *slog.Logger
	wg             sync.WaitGroup
	// cache keeps the matches of recent queries until the index changes.
	cache matchCache
}

// matched is what a query's filters select: the set, and its count,
// checksum and counts by type, which cost a walk over every match.
type matched struct {
	set      *roaring.Bitmap
	count    int
	checksum string
	byType   map[string]int
	// pages keeps the pages asked of it (by cursor and limit): the page
	// walks every match of the first priority ranks.
	mu    sync.Mutex
	pages map[string]pageOf
}

// pageOf is a page's ids and whether more follow.
type pageOf struct {
	ids  []string
	more bool
}

// matchedPages is how many pages one cached query keeps.
const matchedPages = 8

// page is idx.Page of the matches, from cursor on, kept for the next ask.
func (m *matched) page(idx *memindex.Index, set *roaring.Bitmap, after *memindex.Position, cursor string, limit int) ([]string, bool) {
	key := fmt.Sprintf("%d/%s", limit, cursor)
	m.mu.Lock()
	p, ok := m.pages[key]
	m.mu.Unlock()
	if ok {
		return p.ids, p.more
	}
	ids, more := idx.Page(set, after, limit)
	m.mu.Lock()
	if m.pages == nil || len(m.pages) >= matchedPages {
		m.pages = map[string]pageOf{}
	}
	m.pages[key] = pageOf{ids, more}
	m.mu.Unlock()
	return ids, more
}

// matchCache keeps the matches of the last few distinct filters for one
// index generation. The console and agents ask the same queries again
// (every turn, every redraw, every next page) far more often than items
// change; any change starts a new generation and empties it.
type matchCache struct {
	mu         sync.Mutex
	idx        *memindex.Index // (a rebuilt index counts generations anew)
	generation uint64
	entries    map[string]*matched
}

// matchCacheSize bounds the cache (the matches of a wide query at a
// million items are a bitmap of some tens of kilobytes).
const matchCacheSize = 32

func cacheKey(f memindex.Filter) string {
	b, _ := json.Marshal(f) // a struct of strings, lists and times: never fails
	return string(b)
}

// get returns the matches of f in idx as it stands, or nil. A nil cache
// has none.
func (c *matchCache) get(idx *memindex.Index, f memindex.Filter) *matched {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != idx || c.generation != idx.Generation() {
		return nil
	}
	return c.entries[cacheKey(f)]
}

// put keeps m as the matches of f in idx as it stands.
func (c *matchCache) put(idx *memindex.Index, f memindex.Filter, m *matched) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || c.idx != idx || c.generation != idx.Generation() || len(c.entries) >= matchCacheSize {
		c.idx, c.generation, c.entries = idx, idx.Generation(), map[string]*matched{}
	}
	c.entries[cacheKey(f)] = m
}

// startIndexing loads (or builds) the query index in the background:
// queries read the store's index keys until it is ready. Closing the
// engine stops it and saves a snapshot for the next open.
func (c *Cortex) startIndexing() {
	li := &c.index
	li.store, li.log = c.env.Store, c.env.Log
	li.built, li.loaded = make(chan struct{}), make(chan struct{})
	// A store with a snapshot file most likely loads it (build says for
	// sure once it has read the token): queries wait from the start.
	if dir := li.store.Dir(); dir != "" {
		_, err := os.Stat(filepath.Join(dir, snapshotFile))
		li.loading = err == nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	loadsSnapshot := li.loading
	li.wg.Go(func() {
		if buildStartHook != nil {
			buildStartHook(li.store.Dir())
		}
		// Snapshots are of large indexes (snapshotMinItems), and a load
		// allocates the file's bytes and the index at once: with the
		// default GOGC the heap would peak near twice that (700 MB at a
		// million items, where 580 MB do with 50).
		lowGC := loadsSnapshot && os.Getenv("GOGC") == ""
		if lowGC {
			startLoadGC()
		}
		err := li.build(ctx)
		if err != nil && ctx.Err() == nil {
			li.log.Warn("building the cortex query index failed; queries read the store's index keys", "err", err)
		}
		li.mu.RLock()
		large := li.idx != nil && li.idx.Len() >= snapshotMinItems
		li.mu.RUnlock()
		endLoadGC(lowGC, large)
		// Indexed says the load is over once its memory is settled too
		// (engram check and the memory benchmark wait on it). Queries do
		// not wait for this: they use the index as soon as build sets it.
		close(li.built)
	})
	c.env.OnClose(func() error {
		cancel()
		li.mu.Lock()
		li.closed = true // no more background saves
		li.mu.Unlock()
		li.wg.Wait()
		li.mu.Lock()
		worth := li.worthSaving()
		li.mu.Unlock()
		if worth {
			if err := li.save(li.store); err != nil {
				// Only the next open is slower: it builds from the items.
				li.log.Warn("saving the cortex query index failed", "err", err)
			}
		}
		return nil
	})
}

// loadGCPercent is the GOGC while a snapshot loads (see startIndexing).
const loadGCPercent = 50

// gcLoads is what the cortexes of a process (tests, a program embedding
// engines) change of its one GC percent: the snapshot loads under way,
// the percent from before the first of them, and whether one that ended
// meanwhile holds a large index.
var gcLoads struct {
	sync.Mutex
	n      int
	before int
	held   bool
}

// startLoadGC lowers the GC percent for a snapshot's load; the first of
// overlapping loads keeps the percent there was.
func startLoadGC() {
	gcLoads.Lock()
	defer gcLoads.Unlock()
	if gcLoads.n == 0 {
		gcLoads.before = debug.SetGCPercent(loadGCPercent)
	}
	gcLoads.n++
}

// endLoadGC settles the GC percent once an index is built (loaded: it
// was built under startLoadGC; large: it is one to hold the heap near
// live for). While other loads run, it stays theirs; the last to end
// holds the heap near live if any ended large, or restores the percent
// from before the first.
func endLoadGC(loaded, large bool) {
	gcLoads.Lock()
	defer gcLoads.Unlock()
	if loaded {
		gcLoads.n--
	}
	gcLoads.held = gcLoads.held || large
	if gcLoads.n > 0 {
		return
	}
	switch {
	case gcLoads.held:
		holdHeapNearLive()
	case loaded:
		debug.SetGCPercent(gcLoads.before)
	}
	gcLoads.held = false
}

// heapHeadroom is how far past the live heap the Go heap may grow
// between collections once a large index is held (see holdHeapNearLive).
const heapHeadroom = 96 << 20

// holdHeapNearLive is called once a large index has loaded. Loading it
// left hundreds of MB of garbage (the snapshot's bytes, what decoding
// took), which the Go runtime would keep from the system long after: it
// goes back now. And with the default GOGC=100 the heap grows to twice
// the live heap before a collection: with a million items' index live,
// half a GB more than needed. So the collector's target becomes the live
// heap plus heapHeadroom (at least 25% of it), unless the person running
// engram set GOGC. The index's rows hold no pointers, so the collector's
// work per cycle stays small. (Issue 17: ≤ 600 MB resident at 1M items.)
func holdHeapNearLive() {
	debug.FreeOSMemory()
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetGCPercent(gcPercentFor(sample[0].Value.Uint64()))
}

// gcPercentFor is the GOGC that lets a heap of live bytes grow by
// heapHeadroom, or by 25% of it if that is more, and never by more than
// the default's 100%.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	return int(min(max(100*heapHeadroom/live, 25), 100))
}

// worthSaving: a snapshot would spare the next open reading items (mu
// held). Small stores build fast from their items and are not saved.
func (li *liveIndex) worthSaving() bool {
	return li.idx != nil && li.store != nil && li.store.Dir() != "" && li.store.Writable() &&
		li.idx.Len() >= snapshotMinItems && li.changed > 0
}

// saveInBackground saves a snapshot once enough items changed since the
// last one (mu held).
func (li *liveIndex) saveInBackground() {
	if li.changed < saveAfterChanges || li.saving || li.closed || !li.worthSaving() {
		return
	}
	li.saving = true
	li.wg.Go(func() {
		if err := li.save(li.store); err != nil {
			li.log.Warn("saving the cortex query index failed", "err", err)
		}
		li.mu.Lock()
		li.saving = false
		li.mu.Unlock()
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
		p.li.changed += len(p.rows)
		p.li.saveInBackground()
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

// endLoad ends the snapshot's loading, releasing the queries that wait
// for it (mu held).
func (li *liveIndex) endLoad() {
	li.loading = false
	li.loadOnce.Do(func() { close(li.loaded) })
}

// snapshotLoadHook, when set (tests), runs as a snapshot of the store in
// dir starts loading.
var snapshotLoadHook func(dir string)

// waitForLoadHook, when set (tests), runs as a query starts waiting for
// the snapshot of the store in dir to load.
var waitForLoadHook func(dir string)

// buildStartHook, when set (tests), runs as the index of the store in dir
// starts loading or building.
var buildStartHook func(dir string)

// itemsBuildHook, when set (tests), runs as the index of the store in dir
// starts being built from the items.
var itemsBuildHook func(dir string)

// read runs fn with the index if a query may use it now (see liveIndex),
// holding it for reading; else it runs fallback. While a snapshot loads it
// waits for it (or for ctx to end).
func (li *liveIndex) read(ctx context.Context, fn func(idx *memindex.Index) error, fallback func() error) error {
	li.mu.RLock()
	if li.idx == nil && li.loading {
		loaded := li.loaded
		li.mu.RUnlock()
		if waitForLoadHook != nil {
			waitForLoadHook(li.store.Dir())
		}
		select {
		case <-loaded:
		case <-ctx.Done():
			return ctx.Err()
		}
		li.mu.RLock()
	}
	if li.idx == nil || li.inflight > 0 {
		li.mu.RUnlock()
		return fallback()
	}
	defer li.mu.RUnlock()
	return fn(li.idx)
}

// build loads the store's snapshot, or reads every item into a new
// index. Rows committed meanwhile are kept aside and applied after (Put
// keeps the later version of an item), so nothing committed is missed.
func (li *liveIndex) build(ctx context.Context) error {
	li.mu.Lock()
	li.building, li.backlog = true, nil
	li.mu.Unlock()
	var idx *memindex.Index
	source, replayed := "snapshot", 0
	err := li.store.View(func(tx *storage.Tx) error {
		var err error
		if idx, replayed, err = loadSnapshot(tx, li.store.Dir()); err != nil || idx != nil {
			return err
		}
		// No usable snapshot (none, another store's, damaged): building
		// from the items takes long, and queries read the index keys
		// meanwhile.
		li.mu.Lock()
		li.endLoad()
		li.mu.Unlock()
		if itemsBuildHook != nil {
			itemsBuildHook(li.store.Dir())
		}
		source, idx = "items", memindex.New()
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
	li.endLoad()
	if err == nil {
		for _, r := range li.backlog {
			idx.Put(r)
		}
		li.idx, li.source, li.replayed = idx, source, replayed
		li.changed = replayed
		if source == "items" {
			// Every item was read: a snapshot now spares the next open that.
			li.changed = saveAfterChanges
		}
		li.saveInBackground()
	} else {
		li.idx = nil // queries read the store's key index instead
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
