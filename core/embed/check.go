package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/engram-console/engram/storage"
)

// cachePrefix is the key prefix of the cached vectors (CacheKey).
func cachePrefix() []byte { return storage.PrefixKey(storage.PrefixIndex, "embed", "cache") }

// stampPrefix is the key prefix of the version stamps (stampKey).
func stampPrefix() []byte { return storage.PrefixKey(storage.PrefixIndex, "embed", "stamp") }

// stampLen is the length of every stamp newStamp makes.
const stampLen = 16

// Check verifies the keys the queue keeps beside the subsystems' own, for
// engram check: each cached vector must be a whole record naming its
// model, and each version stamp must be one newStamp makes (a stamp whose
// vectors are all gone is no problem: a kill between a drop's last chunk
// and its Forget leaves one, and it is only read to compare). It reads the
// stores of every registered source, with or without a model. The
// subsystems check their vectors and pending markers themselves
// (CheckRecord, CheckMarker): those belong to their items. A problem
// names the key; Repair (check --repair) and embeddings.reembed drop a
// cached vector that does not read (the cache is only a shortcut: the
// model is asked again).
func (q *Queue) Check(ctx context.Context) ([]string, error) {
	var problems []string
	for _, st := range q.stores() {
		err := st.View(func(tx *storage.Tx) error {
			n := 0
			err := tx.Scan(storage.Prefix(cachePrefix()), func(k, v []byte) error {
				if n++; n%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := checkCached(v); err != nil {
					problems = append(problems, fmt.Sprintf("embeddings: cached vector %q is unreadable: %v (check --repair or embeddings.reembed drops it)", k, err))
				}
				return nil
			})
			if err != nil {
				return err
			}
			return tx.Scan(storage.Prefix(stampPrefix()), func(k, v []byte) error {
				if n++; n%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if len(v) != stampLen {
					problems = append(problems, fmt.Sprintf("embeddings: version stamp %q is %d bytes, not %d", k, len(v), stampLen))
				}
				return nil
			})
		})
		if err != nil {
			return problems, err
		}
	}
	return problems, ctx.Err()
}

// CheckMarker says what is wrong with a pending marker stored at a key
// whose item is at item and vector at vector, for engram check: nil when
// it decodes and names those two keys. Whether the item exists is the
// subsystem's to say (it reads its items anyway).
func CheckMarker(v, item, vector []byte) error {
	var m Marker
	if err := json.Unmarshal(v, &m); err != nil {
		return fmt.Errorf("unreadable: %v", err)
	}
	if string(m.Item) != string(item) || string(m.Vector) != string(vector) {
		return fmt.Errorf("names item %q and vector %q, not %q and %q", m.Item, m.Vector, item, vector)
	}
	return nil
}

// stores are the stores of every registered source, each once.
func (q *Queue) stores() []*storage.Store {
	q.mu.Lock()
	sources := append([]Source(nil), q.sources...)
	q.mu.Unlock()
	var out []*storage.Store
	seen := map[*storage.Store]bool{}
	for _, s := range sources {
		for _, st := range s.Stores() {
			if !seen[st] {
				seen[st] = true
				out = append(out, st)
			}
		}
	}
	return out
}

// repairChunk is how many keys one transaction of a repair deletes.
const repairChunk = 256

// Repair drops, for engram check --repair, the embedding keys check
// reports that hold nothing to lose, and says what it dropped, a line
// each: cached vectors that do not read (the model is asked again), version
// stamps that are not one newStamp makes (the vectors are read afresh),
// and pending markers that do not read or whose item is gone (the worker
// drops a gone item's marker itself once a model runs; a text whose
// marker went is found by embeddings.reembed, its vector being missing).
// Stored vectors and markers that name another item's keys are left to
// the subsystems' checks, which name them: whether to drop one is not the
// queue's to say. It deletes in chunks, each its own transaction.
func (q *Queue) Repair(ctx context.Context) ([]string, error) {
	q.mu.Lock()
	sources := append([]Source(nil), q.sources...)
	q.mu.Unlock()
	var dropped []string
	for _, st := range q.stores() {
		var doomed [][]byte
		var why []string
		err := st.View(func(tx *storage.Tx) error {
			err := tx.Scan(storage.Prefix(cachePrefix()), func(k, v []byte) error {
				if err := checkCached(v); err != nil {
					doomed, why = append(doomed, k), append(why, fmt.Sprintf("the cached vector %q: %v", k, err))
				}
				return ctx.Err()
			})
			if err != nil {
				return err
			}
			err = tx.Scan(storage.Prefix(stampPrefix()), func(k, v []byte) error {
				if len(v) != stampLen {
					doomed, why = append(doomed, k), append(why, fmt.Sprintf("the version stamp %q: %d bytes, not %d", k, len(v), stampLen))
				}
				return ctx.Err()
			})
			if err != nil {
				return err
			}
			for _, s := range sources {
				if !slices.Contains(s.Stores(), st) {
					continue
				}
				err := tx.Scan(storage.Prefix(s.Markers), func(k, v []byte) error {
					var m Marker
					if err := json.Unmarshal(v, &m); err != nil {
						doomed, why = append(doomed, k), append(why, fmt.Sprintf("the pending embedding %q: unreadable: %v", k, err))
						return ctx.Err()
					}
					if ok, err := tx.Has(m.Item); err != nil {
						return err
					} else if !ok {
						doomed, why = append(doomed, k), append(why, fmt.Sprintf("the pending embedding %q: its item %q is gone", k, m.Item))
					}
					return ctx.Err()
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return dropped, err
		}
		for start := 0; start < len(doomed); start += repairChunk {
			end := min(start+repairChunk, len(doomed))
			err := st.Update(ctx, func(tx *storage.Tx) error {
				for _, k := range doomed[start:end] {
					if err := tx.Delete(k); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return dropped, err
			}
			dropped = append(dropped, why[start:end]...)
		}
	}
	return dropped, nil
}
