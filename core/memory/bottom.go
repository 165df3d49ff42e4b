package memory

import (
	"errors"
	"slices"

	"github.com/engram-console/engram/storage"
)

// Walking the live items least important first (to evict, to forget the
// least important, to fit a number of tokens) starts at the bottom of the
// imp index, which is where eviction deletes entries: Badger skips deleted
// keys one by one until a compaction drops them, so a walk from the start
// of the index would step over every item ever evicted. The store's state
// therefore keeps the bottom of the index itself:
//
//   - ImpLow lists, in order, the imp sort keys of the live items below
//     ImpFrom (a few at most: items memorized less important than any
//     other);
//   - every other live item's sort key is at least ImpFrom.
//
// A walk yields ImpLow's items, then scans the index from ImpFrom. Eviction
// moves ImpFrom to the first item it keeps, so the entries it deleted lie
// behind the next walk's start.

// maxImpLow bounds ImpLow; past it, ImpFrom comes down to its largest keys.
const maxImpLow = 16

// impSortKey is an item's key in the imp index after the index's prefix.
func (s *store) impSortKey(it *Item) string {
	return string(idxKey(s.name, "imp", importanceKey(it.Importance), storage.Time(it.Timestamp), it.ID)[len(idxPrefix(s.name, "imp")):])
}

// bottomAdd records a new live item's sort key.
func (st *state) bottomAdd(k string) {
	if k >= st.ImpFrom {
		return
	}
	i, _ := slices.BinarySearch(st.ImpLow, k)
	st.ImpLow = slices.Insert(st.ImpLow, i, k)
	if len(st.ImpLow) > maxImpLow {
		st.ImpFrom = st.ImpLow[maxImpLow]
		st.ImpLow = slices.Clip(st.ImpLow[:maxImpLow])
	}
}

// bottomRemove forgets a live item's sort key (the item is leaving).
func (st *state) bottomRemove(k string) {
	if k >= st.ImpFrom {
		return
	}
	if i, ok := slices.BinarySearch(st.ImpLow, k); ok {
		st.ImpLow = slices.Delete(st.ImpLow, i, i+1)
	}
	if len(st.ImpLow) == 0 {
		st.ImpLow = nil
	}
}

// walkImp calls fn with the live items, least important (then oldest)
// first, and each one's sort key. fn may return storage.ErrStop.
func (s *store) walkImp(tx *storage.Tx, st *state, fn func(k string, it *Item) error) error {
	for _, k := range slices.Clone(st.ImpLow) {
		it, err := s.get(tx, storage.LastPart([]byte(k)))
		if err != nil {
			return err
		}
		if err := fn(k, it); err != nil {
			if errors.Is(err, storage.ErrStop) {
				return nil
			}
			return err
		}
	}
	prefix := idxPrefix(s.name, "imp")
	return tx.Keys(storage.Range{Prefix: prefix, Start: append(slices.Clone(prefix), st.ImpFrom...)}, func(key []byte) error {
		it, err := s.get(tx, storage.LastPart(key))
		if err != nil {
			return err
		}
		return fn(string(key[len(prefix):]), it)
	})
}
