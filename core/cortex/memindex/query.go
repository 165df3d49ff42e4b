package memindex

import (
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// Filter selects items; empty fields match everything.
type Filter struct {
	// Reader must be among the item's readers.
	Reader         string
	IncludeDeleted bool
	Types          []string
	Statuses       []string
	Ranks          []int
	// Tags: any of them.
	Tags               []string
	Owner, Org, Parent string
	// WordPrefixes: each must start a word of the item.
	WordPrefixes []string
	// DueBefore: due strictly before; DueAfter: due at or after. Either
	// leaves out items without a due date.
	DueBefore, DueAfter *time.Time
}

// Match returns the ordinals of the items f selects.
func (x *Index) Match(f Filter) *roaring.Bitmap {
	reader, ok := x.readers.lookup(f.Reader)
	if !ok {
		return roaring.New()
	}
	sets := []*roaring.Bitmap{x.readers.bitmap(reader)}
	if !f.IncludeDeleted {
		sets = append(sets, x.live)
	}
	if len(f.Types) > 0 {
		sets = append(sets, x.types.union(f.Types))
	}
	if len(f.Statuses) > 0 {
		sets = append(sets, x.statuses.union(f.Statuses))
	}
	if len(f.Ranks) > 0 {
		var bms []*roaring.Bitmap
		for _, r := range f.Ranks {
			if r >= 0 && r < len(x.rank) {
				bms = append(bms, x.rank[r])
			}
		}
		sets = append(sets, roaring.FastOr(bms...))
	}
	if len(f.Tags) > 0 {
		sets = append(sets, x.tags.union(f.Tags))
	}
	for _, one := range []struct {
		d    *dictionary
		name string
	}{{x.owners, f.Owner}, {x.orgs, f.Org}, {x.parents, f.Parent}} {
		if one.name != "" {
			sets = append(sets, one.d.union([]string{one.name}))
		}
	}
	for _, w := range f.WordPrefixes {
		sets = append(sets, x.withPrefix(w))
	}
	// The smallest set first: FastAnd's hint.
	slices.SortFunc(sets, func(a, b *roaring.Bitmap) int {
		return int(a.GetCardinality()) - int(b.GetCardinality())
	})
	out := sets[0].Clone()
	for _, s := range sets[1:] {
		if out.IsEmpty() {
			break
		}
		out.And(s)
	}
	if f.DueBefore != nil || f.DueAfter != nil {
		var before, after stamp
		if f.DueBefore != nil {
			before = stampOf(*f.DueBefore)
		}
		if f.DueAfter != nil {
			after = stampOf(*f.DueAfter)
		}
		keep := roaring.New()
		it := out.Iterator()
		for it.HasNext() {
			o := it.Next()
			rw := &x.rows[o]
			if !rw.has(rowHasDue) || (f.DueBefore != nil && rw.due().compare(before) >= 0) || (f.DueAfter != nil && rw.due().compare(after) < 0) {
				continue
			}
			keep.Add(o)
		}
		out = keep
	}
	return out
}

// CountsByType splits the set's size by item type.
func (x *Index) CountsByType(set *roaring.Bitmap) map[string]int {
	out := map[string]int{}
	for c := range x.types.len() {
		if n := x.types.bitmap(uint32(c)).AndCardinality(set); n > 0 {
			out[x.types.name(uint32(c))] = int(n)
		}
	}
	return out
}

// Checksum is the hex SHA-256 of the set's ids, sorted, one per line: the
// checksum a cortex query reports.
func (x *Index) Checksum(set *roaring.Bitmap) string {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	write := func(ids string) { // one id and its newline, or a run of them
		if len(buf)+len(ids) > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
			if len(ids) > cap(buf) {
				_, _ = io.WriteString(h, ids)
				return
			}
		}
		buf = append(buf, ids...)
	}
	// Ordinals that are not misfits come in id order; the few misfits are
	// sorted and merged in.
	var misfits []string
	if !x.misfit.IsEmpty() && set.Intersects(x.misfit) {
		for _, o := range roaring.And(set, x.misfit).ToArray() {
			misfits = append(misfits, x.id(o))
		}
		slices.Sort(misfits)
		set = roaring.AndNot(set, x.misfit)
	}
	// A run of consecutive ordinals a snapshot loaded is one slice of
	// idBlock: no fetch of each row.
	inBlock := uint32(len(x.idEnds))
	runFrom, runTo, inRun := uint32(0), uint32(0), false
	flush := func() {
		if inRun {
			write(x.blockRun(runFrom, runTo))
			inRun = false
		}
	}
	it := set.ManyIterator()
	ords := make([]uint32, 1024)
	for n := it.NextMany(ords); n > 0; n = it.NextMany(ords) {
		for _, o := range ords[:n] {
			var id string
			if o < inBlock {
				id = x.blockID(o)
			} else {
				id = x.addedIDs[o-inBlock]
			}
			if len(misfits) > 0 && misfits[0] < id {
				flush()
				for len(misfits) > 0 && misfits[0] < id {
					write(misfits[0] + "\n")
					misfits = misfits[1:]
				}
			}
			switch {
			case o >= inBlock:
				flush()
				write(id + "\n")
			case inRun && o == runTo+1:
				runTo = o
			default:
				flush()
				runFrom, runTo, inRun = o, o, true
			}
		}
	}
	flush()
	for _, id := range misfits {
		write(id + "\n")
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// Position is a place in the active order: priority rank, due date (none
// last), blocking first, oldest first, then id.
type Position struct {
	Rank     int
	Due      *time.Time
	Blocking bool
	Created  time.Time
	ID       string
}

// key is a Position as rows compare. A row's key holds its ordinal, and
// its id is fetched only when two keys tie on everything else: walking a
// rank's rows then reads nothing but the rows.
type key struct {
	rank         uint8
	hasDue       bool
	blocking     bool
	isRow        bool // o is set, not id
	o            uint32
	due, created stamp
	id           string
}

func (p Position) key() key {
	k := key{rank: uint8(min(max(p.Rank, 0), 255)), blocking: p.Blocking, created: stampOf(p.Created), id: p.ID}
	if p.Due != nil {
		k.hasDue, k.due = true, stampOf(*p.Due)
	}
	return k
}

// key is row o's key.
func (x *Index) key(o uint32) key {
	rw := &x.rows[o]
	return key{rank: rw.rank, hasDue: rw.has(rowHasDue), due: rw.due(), created: rw.created(), blocking: rw.has(rowBlocking), isRow: true, o: o}
}

// keyID is k's id.
func (x *Index) keyID(k *key) string {
	if k.isRow {
		return x.id(k.o)
	}
	return k.id
}

// compare orders keys: the active order.
func (x *Index) compare(a, b key) int {
	if a.rank != b.rank {
		return int(a.rank) - int(b.rank)
	}
	if a.hasDue != b.hasDue {
		if a.hasDue {
			return -1
		}
		return 1
	}
	if a.hasDue {
		if c := a.due.compare(b.due); c != 0 {
			return c
		}
	}
	if a.blocking != b.blocking {
		if a.blocking {
			return -1
		}
		return 1
	}
	if c := a.created.compare(b.created); c != 0 {
		return c
	}
	if a.isRow && b.isRow && a.o == b.o {
		return 0
	}
	return strings.Compare(x.keyID(&a), x.keyID(&b))
}

// Page returns the ids of the first limit items of set in active order
// that come strictly after after (nil: from the start), and whether more
// follow.
func (x *Index) Page(set *roaring.Bitmap, after *Position, limit int) (ids []string, more bool) {
	var from key
	if after != nil {
		from = after.key()
	}
	// Priority rank leads the order: take the ranks in turn, and stop once
	// the page (and one more, to know whether more follow) is full.
	want := limit + 1
	var page []key
	for r := range x.rank {
		if after != nil && r < int(from.rank) {
			continue
		}
		bucket := roaring.And(set, x.rank[r])
		if bucket.IsEmpty() {
			continue
		}
		top := &maxHeap{x: x}
		it := bucket.ManyIterator()
		ords := make([]uint32, 1024)
		for n := it.NextMany(ords); n > 0; n = it.NextMany(ords) {
			for _, o := range ords[:n] {
				k := x.key(o)
				if after != nil && x.compare(k, from) <= 0 {
					continue
				}
				if top.Len() < want-len(page) {
					heap.Push(top, k)
				} else if x.compare(k, top.keys[0]) < 0 {
					top.keys[0] = k
					heap.Fix(top, 0)
				}
			}
		}
		got := top.keys
		slices.SortFunc(got, x.compare)
		page = append(page, got...)
		if len(page) >= want {
			break
		}
	}
	more = len(page) > limit
	page = page[:min(limit, len(page))]
	ids = make([]string, len(page))
	for i := range page {
		ids[i] = x.keyID(&page[i])
	}
	return ids, more
}

// maxHeap keeps the smallest keys seen, largest on top.
type maxHeap struct {
	keys []key
	x    *Index
}

func (h *maxHeap) Len() int           { return len(h.keys) }
func (h *maxHeap) Less(i, j int) bool { return h.x.compare(h.keys[i], h.keys[j]) > 0 }
func (h *maxHeap) Swap(i, j int)      { h.keys[i], h.keys[j] = h.keys[j], h.keys[i] }
func (h *maxHeap) Push(v any)         { h.keys = append(h.keys, v.(key)) }
func (h *maxHeap) Pop() any {
	v := h.keys[len(h.keys)-1]
	h.keys = h.keys[:len(h.keys)-1]
	return v
}
