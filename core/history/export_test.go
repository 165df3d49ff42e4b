package history

import (
	"context"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// HoldFolds returns opts with every fold left pending (as a crash right
// after a write would leave it), for the tests of resuming them.
func HoldFolds(opts Options) Options {
	opts.holdFolds = true
	return opts
}

// WithBulkChunk returns opts with BulkLoad committing n writes to a
// transaction instead of bulkChunk.
func WithBulkChunk(opts Options, n int) Options {
	opts.bulkChunk = n
	return opts
}

// SeedEvictions makes conversation c (which must not exist yet) hold what
// n writes into a full buffer of 1 leave behind, built directly (writing a
// million utterances would take an hour): its counters, a summary covering
// [0, n-1] folded up to n, and the n fold keys those writes made and their
// folds deleted. The archive itself is left out: no write reads it.
func SeedEvictions(h *History, c string, n int) error {
	st, backend, err := h.storeOf(c)
	if err != nil {
		return err
	}
	ctx := context.Background()
	const chunk = 20_000
	for start := 0; start < n; start += chunk {
		err := st.Update(ctx, func(tx *storage.Tx) error {
			for i := start; i < min(start+chunk, n); i++ {
				if err := tx.Delete(foldKey(c, i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	now := h.env.Clock.Now()
	conv := newConversation(action.Call{Principal: access.LegacyOwner}, c, backend, now)
	conv.BufferSize, conv.NextIndex, conv.FirstBuffered, conv.EvictedCount, conv.UpdatedAt = 1, n, n, n, now
	rec := summaryRecord{Extractive: text.Summary{Parts: []text.Part{{Spans: []text.Span{{From: 0, To: n - 1}},
		Speaker: "earlier", Text: "Maria, Lisbon, $40,000", Entities: []string{"Maria", "Lisbon", "$40,000"}, Level: 3}}},
		UpdatedAt: now, NextFold: n}
	err = st.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.SetJSON(convKey(c), conv); err != nil {
			return err
		}
		return tx.SetJSON(sumKey(c), rec)
	})
	if err != nil {
		return err
	}
	return h.env.Store.Update(ctx, func(tx *storage.Tx) error { return tx.Set(whereKey(c), []byte(backend)) })
}

// WhereKey is the key naming conversation c's backend, for tests that
// damage it.
func WhereKey(c string) []byte { return whereKey(c) }

// InMemoryStore is the in-memory backend's own store (nil until a
// conversation lives there, or when the engine's store is in memory).
func InMemoryStore(h *History) *storage.Store {
	h.stores.mu.Lock()
	defer h.stores.mu.Unlock()
	return h.stores.memory
}

// SearchScanning is Search scoring from the posting keys in the store, as
// every search did before the postings were kept in memory: the reference
// the tests hold the fast path to.
func SearchScanning(h *History, ctx context.Context, call action.Call, req SearchRequest) ([]Hit, error) {
	return h.search(ctx, call, req, false)
}

// SearchPostings is plain BM25 from the postings in memory, as
// history.search ranked before the hybrid ranker: what the postings
// tests hold to SearchScanning.
func SearchPostings(h *History, ctx context.Context, call action.Call, req SearchRequest) ([]Hit, error) {
	return h.searchBM25(ctx, call, req, true)
}

// HybridBuilds is how many times a conversation's hybrid index was built
// from the store.
func HybridBuilds(h *History) int64 { return h.hybrid.builds.Load() }

// ForgetHybrid throws conversation c's hybrid index away, as a restart
// does: the next search builds it from the store.
func ForgetHybrid(h *History, c string) { h.hybrid.forget(c) }

// HybridLen is how many utterances conversation c's hybrid index holds
// (-1 when there is none).
func HybridLen(h *History, c string) int {
	h.hybrid.mu.Lock()
	hi := h.hybrid.convs[c]
	h.hybrid.mu.Unlock()
	if hi == nil {
		return -1
	}
	hi.mu.RLock()
	defer hi.mu.RUnlock()
	return hi.ix.Len()
}

// IndexBuilds is how many times the postings of a conversation were read
// from the store into memory.
func IndexBuilds(h *History) int64 { return h.postings.builds.Load() }

// CachedIndexVersion is the index version of conversation c's postings in
// memory (ok false when none are).
func CachedIndexVersion(h *History, c string) (v uint64, ok bool) {
	h.postings.mu.RLock()
	defer h.postings.mu.RUnlock()
	ix := h.postings.convs[c]
	if ix == nil {
		return 0, false
	}
	return ix.version, true
}

// ForgetPostings throws conversation c's postings in memory away, as a
// restart does: the next search reads them from the store.
func ForgetPostings(h *History, c string) { h.postings.forget(c) }

// PostingsBytes is about how much memory conversation c's postings in
// memory take (their arrays; 0 when none are kept).
func PostingsBytes(h *History, c string) int {
	h.postings.mu.RLock()
	defer h.postings.mu.RUnlock()
	ix := h.postings.convs[c]
	if ix == nil {
		return 0
	}
	n := cap(ix.length)*4 + cap(ix.speaker)
	for term, l := range ix.terms {
		n += len(term) + 16 + cap(l.ids)*4 + cap(l.tfs) + (cap(l.blockTF)+cap(l.blockLength))*4 + 80
	}
	return n
}

// PendingFolds counts the folds waiting in the durable store, read
// without settling them (as every action that reads a summary does).
func PendingFolds(h *History) (int, error) {
	st, err := h.stores.get(BackendDurable)
	if err != nil {
		return 0, err
	}
	n := 0
	err = st.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(storage.PrefixKey(storage.PrefixHistory, "fold"))
		return err
	})
	return n, err
}

// Nearest is nearest on conversation c, for the tests.
func Nearest(h *History, c string, q []float32, n int) ([]int, map[int]float64, error) {
	st, _, err := h.storeOf(c)
	if err != nil {
		return nil, nil, err
	}
	var order []int
	var cos map[int]float64
	err = st.View(func(tx *storage.Tx) error {
		order, cos, err = nearestWhere(tx, c, q, n, nil)
		return err
	})
	return order, cos, err
}

// AfterBuildSnapshot has every index build of h (hybrid and postings)
// call fn once it has read the store, before it builds or installs: a
// test holds a build there to write meanwhile. Set it before searching.
func AfterBuildSnapshot(h *History, fn func(c string)) {
	h.hybrid.afterSnapshot = fn
	h.postings.afterSnapshot = fn
}
