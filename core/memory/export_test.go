package memory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/storage"
)

// Check verifies a store's indexes against its items and counters: every
// item has exactly its index entries (live ones under time/ and imp/,
// forgotten ones under del/), its postings carry its deletion mark, the
// counters match, and the bottom of the imp index (bottom.go) holds.
func (m *Memory) Check(storeName string) error {
	s := &store{env: m.env, name: storeName}
	return m.env.Store.View(func(tx *storage.Tx) error {
		st, err := s.load(tx)
		if err != nil {
			return err
		}
		items := map[string]*Item{}
		live, tokens, deleted, length := 0, 0, 0, 0
		want := map[string]bool{}
		err = tx.Scan(storage.Prefix(itemPrefix(s.name)), func(k, v []byte) error {
			it, err := s.get(tx, storage.LastPart(k))
			if err != nil {
				return err
			}
			items[it.ID] = it
			if it.Deleted {
				deleted++
			} else {
				live++
				tokens += it.TokensEstimate
			}
			for _, k := range s.itemIndexKeys(it) {
				want[string(k)] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		if st.ItemCount != live || st.TokenUsage != tokens || st.Deleted != deleted || st.Docs != len(items) {
			return fmt.Errorf("counters %d items, %d tokens, %d deleted, %d docs; counted %d, %d, %d, %d",
				st.ItemCount, st.TokenUsage, st.Deleted, st.Docs, live, tokens, deleted, len(items))
		}
		var problems []string
		err = tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "memory", s.name)), func(k []byte) error {
			if !want[string(k)] {
				problems = append(problems, "stray index key "+string(k))
			}
			delete(want, string(k))
			return nil
		})
		if err != nil {
			return err
		}
		for k := range want {
			problems = append(problems, "missing index key "+k)
		}
		seenLength := map[string]int{}
		err = tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, s.index().Space, "t")), func(k []byte) error {
			last := storage.LastPart(k)
			j := strings.LastIndexByte(last, '.')
			i := strings.LastIndexByte(last[:j], '.')
			doc, attr := last[:i], last[i+1]
			it, ok := items[doc]
			switch {
			case !ok:
				problems = append(problems, "posting of no item: "+string(k))
			case it.Deleted != (attr == attrDeleted):
				problems = append(problems, fmt.Sprintf("posting %s: attr %c for deleted=%v", k, attr, it.Deleted))
			}
			var n int
			if _, err := fmt.Sscan(last[j+1:], &n); err != nil {
				problems = append(problems, fmt.Sprintf("posting %s: length: %v", k, err))
			}
			seenLength[doc] = n
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range seenLength {
			length += n
		}
		if length != st.TotalLength {
			problems = append(problems, fmt.Sprintf("total_length %d, postings say %d", st.TotalLength, length))
		}
		// The bottom of the imp index.
		if !slices.IsSorted(st.ImpLow) || len(st.ImpLow) > maxImpLow {
			problems = append(problems, fmt.Sprintf("imp_low not sorted or too long: %q", st.ImpLow))
		}
		prefix := idxPrefix(s.name, "imp")
		low := 0
		err = tx.Keys(storage.Prefix(prefix), func(k []byte) error {
			sk := string(k[len(prefix):])
			if _, ok := slices.BinarySearch(st.ImpLow, sk); ok {
				low++
				if sk >= st.ImpFrom {
					problems = append(problems, fmt.Sprintf("imp_low key %q not below imp_from %q", sk, st.ImpFrom))
				}
			} else if sk < st.ImpFrom {
				problems = append(problems, fmt.Sprintf("live key %q below imp_from %q but not in imp_low", sk, st.ImpFrom))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if low != len(st.ImpLow) {
			problems = append(problems, fmt.Sprintf("imp_low %q names %d keys that are not live", st.ImpLow, len(st.ImpLow)-low))
		}
		if len(problems) > 0 {
			slices.Sort(problems)
			return fmt.Errorf("store %s:\n%s", s.name, strings.Join(problems, "\n"))
		}
		return nil
	})
}

// SetSummarizeProgress sets the hook summarize calls each time it looks at
// its context, with the number of items read (nil: none).
func SetSummarizeProgress(f func(read int)) { summarizeProgress = f }

// SetTurnWholeSearch sets the most live items a store may hold for a turn
// to search it whole, and returns a function restoring the old value.
func SetTurnWholeSearch(n int) (restore func()) {
	old := turnWholeSearch
	turnWholeSearch = n
	return func() { turnWholeSearch = old }
}

// SetTermCache turns the postings cache on or off (it is on by default).
func SetTermCache(on bool) { termCacheOff.Store(!on) }

// SetMaxWindowKeys bounds the time index keys a recall reads to learn
// which items its windows hold, until restore is called: a small bound
// makes any window broad.
func SetMaxWindowKeys(n int) (restore func()) {
	old := maxWindowKeys
	maxWindowKeys = n
	return func() { maxWindowKeys = old }
}

// ForgottenScans is how many times a recall has read a store's
// soft-forgotten items from the store (not from the cache).
func ForgottenScans() int64 { return forgottenScans.Load() }
