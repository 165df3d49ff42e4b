package cortex

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/storage"
)

// checkStored verifies what the cortex stored (engram check), in one read
// transaction:
//
//   - every item decodes and is stored under its own id;
//   - its audit chain: each entry's hash, each link, and versions
//     1..global_version with no gap, anchored by the chain head;
//   - its version snapshots: exactly 1..global_version;
//   - its index entries (indexKeys) are all there, and every entry under
//     idx/cortex/ is one that an item's indexKeys lists (none names a
//     missing item, none is stale: an old status, a revoked reader);
//   - no audit entry, snapshot or chain head is left of an item that
//     does not exist.
//
// A problem names the item; index problems are summed up per item, so one
// damaged item is one line however many keys it has.
func (c *Cortex) checkStored(ctx context.Context) ([]string, error) {
	var problems []string
	err := c.env.Store.View(func(tx *storage.Tx) error {
		problems = nil
		ck := &indexCheck{seed: maphash.MakeSeed(), missing: map[string][]string{}, stale: map[string][]string{},
			unreadable: map[string]bool{}, versions: map[string]int{}}
		// The index keys there are, as hashes: comparing sorted 8-byte
		// hashes in memory is much faster than a point read per expected
		// key, and costs 16 bytes an index key (some 200 MB at a million items).
		err := tx.Keys(storage.Prefix(indexPrefix()), func(k []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ck.actual = append(ck.actual, ck.hash(k))
			return nil
		})
		if err != nil {
			return err
		}
		slices.Sort(ck.actual)
		err = tx.Scan(storage.Prefix(itemPrefix()), func(key, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, err := ck.item(tx, key, value)
			problems = append(problems, p...)
			return err
		})
		if err != nil {
			return err
		}
		slices.Sort(ck.expected)
		// Every index key no item lists is stale or dangling.
		err = tx.Keys(storage.Prefix(indexPrefix()), func(k []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, ok := slices.BinarySearch(ck.expected, ck.hash(k)); !ok {
				id := storage.LastPart(k)
				ck.stale[id] = append(ck.stale[id], string(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		problems = append(problems, ck.indexProblems()...)
		p, err := ck.trails(ctx, tx)
		problems = append(problems, p...)
		return err
	})
	if err != nil {
		return problems, err
	}
	// A fresh engine (engram check opens one) is still loading its index:
	// wait, so that the comparison is made.
	select {
	case <-c.Indexed():
	case <-ctx.Done():
		return problems, ctx.Err()
	}
	drift, err := c.checkMemoryIndex()
	return append(problems, drift...), err
}

// checkMemoryIndex compares the in-memory query index with the items
// stored, in one snapshot: it must hold every item, field for field, and
// nothing else. (Skipped while a commit is under way, as a query would
// skip the index; items that do not decode are reported by the item
// check.)
func (c *Cortex) checkMemoryIndex() ([]string, error) {
	var problems []string
	err := c.index.read(context.Background(), func(idx *memindex.Index) error {
		return c.env.Store.View(func(tx *storage.Tx) error {
			items := 0
			err := tx.Scan(storage.Prefix(itemPrefix()), func(_, value []byte) error {
				var it Item
				if json.Unmarshal(value, &it) != nil {
					return nil
				}
				items++
				if got, ok := idx.Row(it.ID); !ok || !sameRow(got, rowOf(&it)) {
					problems = append(problems, fmt.Sprintf("the query index in memory is not up to date with item %s (it holds %+v): "+
						"restart engram to rebuild it (delete %s in the data directory if it persists)", it.ID, got, snapshotFile))
				}
				return nil
			})
			if n := idx.Len(); err == nil && n != items {
				problems = append(problems, fmt.Sprintf("the query index in memory holds %d items, the store %d: restart engram to rebuild it", n, items))
			}
			return err
		})
	}, func() error { return nil })
	return problems, err
}

// sameRow compares two rows field by field (times by instant, lists
// ignoring order).
func sameRow(a, b memindex.Row) bool {
	sameList := func(x, y []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y)))
	}
	sameDue := (a.Due == nil) == (b.Due == nil) && (a.Due == nil || a.Due.Equal(*b.Due))
	return a.ID == b.ID && a.Version == b.Version && a.Type == b.Type && a.Status == b.Status && a.Rank == b.Rank &&
		sameDue && a.Blocking == b.Blocking && a.Created.Equal(b.Created) && a.Deleted == b.Deleted &&
		a.Owner == b.Owner && a.Org == b.Org && a.Parent == b.Parent &&
		sameList(a.Readers, b.Readers) && sameList(a.Tags, b.Tags) && sameList(a.Words, b.Words)
}

func indexPrefix() []byte { return storage.PrefixKey(storage.PrefixIndex, space) }

// indexCheck is the state of one index check: the hashes of the index
// keys there are and of those the items list, and per item id what
// differs.
type indexCheck struct {
	seed             maphash.Seed
	actual, expected []uint64
	// missing and stale are index keys by item id: listed by the item but
	// not there, and there but listed by no item.
	missing, stale map[string][]string
	// unreadable items' index entries are not reported again.
	unreadable map[string]bool
	// versions are the readable items' versions, by id: what their
	// snapshots should be, and which ids exist.
	versions map[string]int
}

func (ck *indexCheck) hash(k []byte) uint64 { return maphash.Bytes(ck.seed, k) }

// item checks one stored item (key, value) and notes its index keys.
func (ck *indexCheck) item(tx *storage.Tx, key, value []byte) ([]string, error) {
	id := storage.LastPart(key)
	var it Item
	if err := json.Unmarshal(value, &it); err != nil {
		ck.unreadable[id] = true
		return []string{fmt.Sprintf("cortex item at key %q: unreadable: %v", key, err)}, nil
	}
	if it.ID != id {
		ck.unreadable[id] = true
		return []string{fmt.Sprintf("cortex item at key %q says it is item %q", key, it.ID)}, nil
	}
	var problems []string
	_, check, err := readHistory(tx, it.ID, it.GlobalVersion)
	if err != nil {
		return nil, err
	}
	if !check.Verified {
		problems = append(problems, fmt.Sprintf("cortex item %s: audit chain broken at version %d: %s", it.ID, check.BrokenAt, check.Problem))
	}
	ck.versions[it.ID] = it.GlobalVersion
	for _, k := range indexKeys(&it) {
		h := ck.hash(k)
		ck.expected = append(ck.expected, h)
		if _, ok := slices.BinarySearch(ck.actual, h); !ok {
			ck.missing[it.ID] = append(ck.missing[it.ID], string(k))
		}
	}
	return problems, nil
}

// indexProblems sums up, per item id, the index keys missing and stale.
func (ck *indexCheck) indexProblems() []string {
	ids := map[string]bool{}
	for id := range ck.missing {
		ids[id] = true
	}
	for id := range ck.stale {
		ids[id] = true
	}
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if ck.unreadable[id] {
			continue // reported as unreadable
		}
		missing, stale := ck.missing[id], ck.stale[id]
		if _, exists := ck.versions[id]; !exists {
			problems = append(problems, fmt.Sprintf("cortex index: %s for item %s, which does not exist", keyList(stale), id))
			continue
		}
		var what []string
		if len(missing) > 0 {
			what = append(what, "missing "+keyList(missing))
		}
		if len(stale) > 0 {
			what = append(what, "stale "+keyList(stale))
		}
		problems = append(problems, fmt.Sprintf("cortex item %s: its index does not match it: %s", id, strings.Join(what, "; ")))
	}
	return problems
}

// keyList names a few keys and how many there are in all.
func keyList(keys []string) string {
	const shown = 3
	slices.Sort(keys)
	out := "index entry " + fmt.Sprintf("%q", keys[0])
	if len(keys) > 1 {
		out = fmt.Sprintf("%d index entries", len(keys))
		quoted := make([]string, 0, shown)
		for _, k := range keys[:min(shown, len(keys))] {
			quoted = append(quoted, fmt.Sprintf("%q", k))
		}
		out += " (" + strings.Join(quoted, ", ")
		if len(keys) > shown {
			out += ", …"
		}
		out += ")"
	}
	return out
}

// trails checks, in one key scan per family, what is kept beside the
// items: an item at version n has the snapshots 1..n (their contents are
// the audit chain's business); and no audit entry, snapshot or chain head
// is left of an item that does not exist (items are never removed, so
// these mean a lost item). One scan per family rather than one per item:
// opening an iterator costs more the larger the store.
func (ck *indexCheck) trails(ctx context.Context, tx *storage.Tx) ([]string, error) {
	var problems []string
	left := map[string][]string{} // item id → what is left of it
	snapshotted := 0              // readable items with a snapshot
	for _, family := range []struct{ part, what string }{
		{"audit", "audit entries"}, {"ver", "version snapshots"}, {"head", "chain head"},
	} {
		var snaps snapshots
		err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixCortex, family.part)), func(k []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			parts := storage.SplitKey(storage.PrefixCortex, k)
			if len(parts) < 2 {
				return nil
			}
			id := parts[1]
			if id != snaps.id {
				// The keys of one item are together: a new one starts.
				problems = append(problems, snaps.end()...)
				_, readable := ck.versions[id]
				if !readable && !ck.unreadable[id] {
					left[id] = append(left[id], family.what)
				}
				snaps = snapshots{id: id, last: ck.versions[id], want: 1, check: readable && family.part == "ver"}
				if snaps.check {
					snapshotted++
				}
			}
			snaps.next(k)
			return nil
		})
		if err != nil {
			return nil, err
		}
		problems = append(problems, snaps.end()...)
	}
	if snapshotted < len(ck.versions) {
		// Some item has no snapshot at all, so the scan did not meet it:
		// find it (only in a damaged store).
		for _, id := range slices.Sorted(maps.Keys(ck.versions)) {
			ok, err := tx.Has(versionKey(id, 1))
			if err != nil {
				return nil, err
			}
			if !ok {
				problems = append(problems, fmt.Sprintf("cortex item %s: version snapshot v1 is missing (the item is at v%d)", id, ck.versions[id]))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(left)) {
		problems = append(problems, fmt.Sprintf("cortex item %s does not exist, but its %s remain", id, strings.Join(left[id], ", ")))
	}
	return problems, nil
}

// snapshots checks the version snapshot keys of one item, in order.
type snapshots struct {
	id         string
	last, want int // the item's version; the next snapshot expected
	check      bool
	problem    string
}

func (s *snapshots) next(k []byte) {
	if !s.check || s.problem != "" {
		return
	}
	v, err := storage.ParseUint64(storage.LastPart(k))
	switch {
	case err != nil:
		s.problem = fmt.Sprintf("version snapshot key %q has no version", k)
	case int(v) > s.last:
		s.problem = fmt.Sprintf("has a version snapshot v%d beyond its version v%d", v, s.last)
	case int(v) != s.want:
		s.problem = fmt.Sprintf("version snapshot v%d is missing", s.want)
	default:
		s.want++
	}
}

// end is the item's problem, if any, once all its keys were seen.
func (s *snapshots) end() []string {
	if !s.check {
		return nil
	}
	if s.problem == "" && s.want <= s.last {
		s.problem = fmt.Sprintf("version snapshot v%d is missing (the item is at v%d)", s.want, s.last)
	}
	if s.problem == "" {
		return nil
	}
	return []string{fmt.Sprintf("cortex item %s: %s", s.id, s.problem)}
}
