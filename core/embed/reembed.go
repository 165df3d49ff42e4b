package embed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/engram-console/engram/storage"
)

// ReembedCount is what a reembed found in one subsystem.
type ReembedCount struct {
	// Source names the subsystem.
	Source string `json:"source"`
	// Examined counts its items that carry (or should carry) a vector.
	Examined int `json:"examined"`
	// Current counts those whose vector is the configured model's.
	Current int `json:"current"`
	// Queued counts those queued now: their vector was missing or made by
	// another model or of another dimension.
	Queued int `json:"queued"`
	// Waiting counts those that were already waiting for a vector.
	Waiting int `json:"waiting"`
}

// ReembedResult is what a reembed queued.
type ReembedResult struct {
	Model     string         `json:"model"`
	Dimension int            `json:"dimension,omitempty"`
	Sources   []ReembedCount `json:"sources"`
	// Queued is the sum of the sources' Queued; Pending is the queue's
	// length now (engine.info's embeddings.pending shows it go down).
	Queued  int `json:"queued"`
	Pending int `json:"pending"`
	// Purged counts the cached vectors dropped: made by another model (or
	// of another dimension than the model's now, or unreadable), of no
	// use to the configured model, whose cache keys are its own.
	Purged int `json:"purged"`
}

// ErrNoModel is Reembed's error without an embedding model.
var ErrNoModel = errors.New("no embedding model is configured; start engram with --llm and an embedding model to reembed")

// markChunk is how many markers one transaction of a reembed writes.
const markChunk = 256

// purgeChunk is how many cached vectors one transaction of a purge reads
// (and so deletes at most): a large cache is never purged in one huge
// transaction. A queue's purgeChunk overrides it (tests).
const purgeChunk = 512

// Reembed queues every item of the sources (all when only is empty) whose
// vector is missing, or was made by another model than the configured
// one, or has another dimension than the model's vectors now (asked of the
// model with one short text). Items already waiting keep their marker and
// are queued if the queue did not know them, so it is idempotent: running
// it again marks nothing new. Then it purges the cache of every source's
// stores (see purge): the texts are queued first, so that a reembed cut
// short anywhere has lost nothing it reported, and the next one finishes.
func (q *Queue) Reembed(ctx context.Context, only string) (ReembedResult, error) {
	if !q.Enabled() {
		return ReembedResult{}, ErrNoModel
	}
	model := q.Model()
	q.mu.Lock()
	dim := q.stats.Dimension
	sources := append([]Source(nil), q.sources...)
	q.mu.Unlock()
	// The model's dimension now (it may have changed under the same
	// name); the last one seen if it cannot be asked.
	if vecs, err := q.call([]string{"dimension probe"}); err == nil {
		dim = len(vecs[0])
	}
	res := ReembedResult{Model: model, Dimension: dim, Sources: []ReembedCount{}}
	found := false
	for _, s := range sources {
		if only != "" && s.Name != only {
			continue
		}
		found = true
		count := ReembedCount{Source: s.Name}
		for _, st := range s.Stores() {
			var stale []Item
			var waiting []job
			err := st.View(func(tx *storage.Tx) error {
				return s.Items(tx, func(it Item) error {
					count.Examined++
					if ok, err := tx.Has(it.Marker); err != nil {
						return err
					} else if ok {
						count.Waiting++
						waiting = append(waiting, job{store: st, marker: string(it.Marker)})
						return nil
					}
					v, err := tx.Get(it.Vector)
					if err != nil && !errors.Is(err, storage.ErrNotFound) {
						return err
					}
					if err == nil {
						m, d := Header(v)
						if m == model && (dim == 0 || d == dim) {
							count.Current++
							return nil
						}
					}
					stale = append(stale, it)
					return nil
				})
			})
			if err != nil {
				return ReembedResult{}, fmt.Errorf("reading %s's vectors: %w", s.Name, err)
			}
			// A marker the queue does not know (one a copy brought along)
			// would wait forever: queue it (enqueue skips those queued).
			q.enqueue(waiting...)
			for start := 0; start < len(stale); start += markChunk {
				chunk := stale[start:min(start+markChunk, len(stale))]
				marked := 0
				err := st.Update(ctx, func(tx *storage.Tx) error {
					marked = 0
					for _, it := range chunk {
						// Written again since it was read (a new marker,
						// or already its new text's vector): the text
						// read above is stale, so it is left alone.
						if again, err := changedSince(tx, it, model, dim); err != nil {
							return err
						} else if again {
							continue
						}
						if err := q.Mark(tx, it.Marker, Marker{Text: it.Text, Item: it.Key, Vector: it.Vector}); err != nil {
							return err
						}
						marked++
					}
					return nil
				})
				if err != nil {
					return ReembedResult{}, fmt.Errorf("queueing %s's texts: %w", s.Name, err)
				}
				count.Queued += marked
			}
		}
		res.Queued += count.Queued
		res.Sources = append(res.Sources, count)
	}
	if only != "" && !found {
		return ReembedResult{}, fmt.Errorf("source: no subsystem %q keeps vectors", only)
	}
	purged, err := q.purge(ctx, q.stores(), model, dim)
	if err != nil {
		return ReembedResult{}, fmt.Errorf("purging the cached vectors of other models: %w", err)
	}
	res.Purged = purged
	res.Pending = q.Stats().Pending
	return res, nil
}

// purge deletes the cached vectors in stores that are of no use to model
// (whose vectors have dimension dim, when known): another model's, of
// another dimension (the model changed under its name), or unreadable.
// The worker only ever reads model's entries (CacheKey hashes the model
// with the text), so the rest is dead weight once the model changed.
//
// Once a store's cache is purged, the records of the models that cached
// there (Uncache reads them) name model alone.
//
// It goes in chunks of purgeChunk entries, each its own transaction, from
// where the last one stopped: a kill between two leaves the chunks done
// purged and the rest in place, which the next reembed purges. Only cache
// entries go, never a vector or a marker, so nothing acknowledged is
// lost. A chunk reads every entry it deletes, so one the worker rewrites
// meanwhile (for model) makes the two transactions conflict, and the
// chunk is run again on what the worker wrote.
func (q *Queue) purge(ctx context.Context, stores []*storage.Store, model string, dim int) (int, error) {
	chunk := purgeChunk
	if q.purgeChunk > 0 {
		chunk = q.purgeChunk
	}
	total := 0
	for _, st := range stores {
		start := cachePrefix()
		kept := false
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			var last []byte
			purged := 0
			err := st.Update(ctx, func(tx *storage.Tx) error {
				last, purged = nil, 0
				var doomed [][]byte
				read := 0
				err := tx.Scan(storage.Range{Prefix: cachePrefix(), Start: start}, func(k, v []byte) error {
					if read == chunk {
						return storage.ErrStop
					}
					read++
					last = k
					if m, d := Header(v); checkCached(v) != nil || m != model || dim > 0 && d != dim {
						doomed = append(doomed, k)
					} else {
						kept = true
					}
					return nil
				})
				if err != nil {
					return err
				}
				for _, k := range doomed {
					if err := tx.Delete(k); err != nil {
						return err
					}
				}
				purged = len(doomed)
				return nil
			})
			if err != nil {
				return total, err
			}
			total += purged
			if q.afterPurgeChunk != nil {
				q.afterPurgeChunk()
			}
			if last == nil {
				break
			}
			start = append(slices.Clone(last), 0)
		}
		// The store caches model's vectors only now: Uncache need not
		// delete under the other models any more, and it must under
		// model's (entries cached before models were recorded).
		err := st.Update(ctx, func(tx *storage.Tx) error {
			models, err := cachedModels(tx)
			if err != nil {
				return err
			}
			for _, m := range models {
				if m != model {
					if err := tx.Delete(modelsKey(m)); err != nil {
						return err
					}
				}
			}
			if kept {
				return recordModel(tx, model)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// SourceNames names the registered sources.
func (q *Queue) SourceNames() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, len(q.sources))
	for i, s := range q.sources {
		out[i] = s.Name
	}
	return out
}

// changedSince says whether it was written again after a reembed read it:
// it has a marker now, or a vector of model (and dimension dim) already.
func changedSince(tx *storage.Tx, it Item, model string, dim int) (bool, error) {
	if ok, err := tx.Has(it.Marker); err != nil || ok {
		return ok, err
	}
	v, err := tx.Get(it.Vector)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	m, d := Header(v)
	return m == model && (dim == 0 || d == dim), nil
}
