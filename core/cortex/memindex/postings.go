package memindex

import (
	"maps"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// smallMax is the most ids a posting list keeps as a plain sorted slice.
// Most words of a million items name one or two items (a number, a
// name); a roaring bitmap for each would cost ~150 bytes where a slice
// costs a few.
const smallMax = 32

// postings is a set of ordinals in 8 bytes, as a dictionary keeps one
// for each of its names: a single ordinal inline (most words of a million
// items name one item: a number, a name), a sorted slice of the
// dictionary's lists while small, one of its bitmaps once large. A slice
// header in every one would cost 24 bytes a name.
type postings struct {
	// n is how many ordinals a list holds, or bigSet for a bitmap.
	n uint32
	// ref is the ordinal (n 1), the index in lists (n 2…smallMax) or the
	// index in bigs (n bigSet).
	ref uint32
}

// bigSet is a postings' n when it is a bitmap.
const bigSet = ^uint32(0)

// add puts ordinal o in name c's set.
func (d *dictionary) add(c, o uint32) {
	p := &d.sets[c]
	switch {
	case p.n == bigSet:
		d.bigs[p.ref].Add(o)
	case p.n == 0:
		*p = postings{n: 1, ref: o}
	case p.n == 1:
		if p.ref == o {
			return
		}
		list := []uint32{min(p.ref, o), max(p.ref, o)}
		*p = postings{n: 2, ref: d.newList(list)}
	default:
		list := d.lists[p.ref]
		i, found := slices.BinarySearch(list, o)
		if found {
			return
		}
		list = slices.Insert(list, i, o)
		if len(list) > smallMax {
			d.freeList(p.ref)
			d.bigs = append(d.bigs, roaring.BitmapOf(list...))
			*p = postings{n: bigSet, ref: uint32(len(d.bigs) - 1)}
			return
		}
		d.lists[p.ref], p.n = list, uint32(len(list))
	}
}

// remove takes ordinal o out of name c's set.
func (d *dictionary) remove(c, o uint32) {
	p := &d.sets[c]
	switch {
	case p.n == bigSet:
		d.bigs[p.ref].Remove(o)
	case p.n == 0:
	case p.n == 1:
		if p.ref == o {
			*p = postings{}
		}
	default:
		list := d.lists[p.ref]
		i, found := slices.BinarySearch(list, o)
		if !found {
			return
		}
		list = slices.Delete(list, i, i+1)
		if len(list) == 1 {
			d.freeList(p.ref)
			*p = postings{n: 1, ref: list[0]}
			return
		}
		d.lists[p.ref], p.n = list, uint32(len(list))
	}
}

// newList keeps list among the lists and returns its index.
func (d *dictionary) newList(list []uint32) uint32 {
	if n := len(d.freeLists); n > 0 {
		i := d.freeLists[n-1]
		d.freeLists = d.freeLists[:n-1]
		d.lists[i] = list
		return i
	}
	d.lists = append(d.lists, list)
	return uint32(len(d.lists) - 1)
}

// freeList gives list i back for reuse.
func (d *dictionary) freeList(i uint32) {
	d.lists[i] = nil
	d.freeLists = append(d.freeLists, i)
}

// bitmap is name c's set as a bitmap the caller must not change.
func (d *dictionary) bitmap(c uint32) *roaring.Bitmap {
	switch p := d.sets[c]; {
	case p.n == bigSet:
		return d.bigs[p.ref]
	case p.n == 0:
		return roaring.New()
	case p.n == 1:
		return roaring.BitmapOf(p.ref)
	default:
		return roaring.BitmapOf(d.lists[p.ref]...)
	}
}

// dictionary gives the distinct values of one field (types, tags, words…)
// small codes, and keeps the posting list of each.
type dictionary struct {
	// block holds the names of the first len(ends) codes (those a snapshot
	// loaded, and those added since once there were enough to fold in)
	// side by side; ends[c] is where code c's name ends. A million words
	// then cost four bytes each beside their text, not a string header.
	// The names of later codes are in added.
	block string
	ends  []uint32
	added []string
	sets  []postings // by code
	// lists and bigs hold the sets of more than one ordinal (postings);
	// freeLists are the indexes of lists no set uses now.
	lists     [][]uint32
	freeLists []uint32
	bigs      []*roaring.Bitmap
	table     nameTable
}

func newDictionary() *dictionary {
	d := &dictionary{}
	d.table.name = d.name
	return d
}

// len is the number of names.
func (d *dictionary) len() int { return len(d.ends) + len(d.added) }

// name is code c's name.
func (d *dictionary) name(c uint32) string {
	if c < uint32(len(d.ends)) {
		start := uint32(0)
		if c > 0 {
			start = d.ends[c-1]
		}
		return d.block[start:d.ends[c]]
	}
	return d.added[c-uint32(len(d.ends))]
}

// code returns the code of name, adding it if new.
func (d *dictionary) code(name string) uint32 {
	if c, ok := d.table.find(name); ok {
		return c
	}
	c := uint32(d.len())
	d.added = append(d.added, name)
	if len(d.added) >= max(foldAfter, len(d.ends)/8) {
		d.block, d.ends, d.added = fold(d.block, d.ends, d.added, "")
	}
	d.sets = append(d.sets, postings{})
	d.table.add(name, c)
	return c
}

// lookup returns the code of name and whether its set has any ordinal.
func (d *dictionary) lookup(name string) (uint32, bool) {
	c, ok := d.table.find(name)
	return c, ok && d.sets[c].n > 0
}

// nameTable finds codes by name without a map entry per name: a list of
// the codes sorted by name, searched by bisection, and a map of the names
// added since it was last merged in. Loading a million words or ids into
// a map costs more than the rest of loading an index.
type nameTable struct {
	name   func(code uint32) string
	sorted []uint32
	recent map[string]uint32
}

// mergeAfter is the fewest recent names a table keeps before merging them
// into its sorted list. A merge copies the list, so a large table waits
// for more (a sixteenth of its size): adding stays cheap at a million.
const mergeAfter = 4096

func (t *nameTable) compare(c uint32, name string) int { return strings.Compare(t.name(c), name) }

func (t *nameTable) find(name string) (uint32, bool) {
	if c, ok := t.recent[name]; ok {
		return c, true
	}
	if i, ok := slices.BinarySearchFunc(t.sorted, name, t.compare); ok {
		return t.sorted[i], true
	}
	return 0, false
}

func (t *nameTable) add(name string, c uint32) {
	if t.recent == nil {
		t.recent = map[string]uint32{}
	}
	t.recent[name] = c
	if len(t.recent) > max(mergeAfter, len(t.sorted)/16) {
		t.sorted = t.merged()
		clear(t.recent)
	}
}

// merged is the sorted list with the recent names merged in; it changes
// nothing.
func (t *nameTable) merged() []uint32 {
	byName := func(a, b uint32) int { return strings.Compare(t.name(a), t.name(b)) }
	recent := slices.SortedFunc(maps.Values(t.recent), byName)
	out := make([]uint32, 0, len(t.sorted)+len(recent))
	i, j := 0, 0
	for i < len(t.sorted) && j < len(recent) {
		if byName(t.sorted[i], recent[j]) <= 0 {
			out = append(out, t.sorted[i])
			i++
		} else {
			out = append(out, recent[j])
			j++
		}
	}
	return append(append(out, t.sorted[i:]...), recent[j:]...)
}

// withPrefix calls fn with the code of every name that starts with p.
func (t *nameTable) withPrefix(p string, fn func(c uint32)) {
	start, _ := slices.BinarySearchFunc(t.sorted, p, t.compare)
	for _, c := range t.sorted[start:] {
		if !strings.HasPrefix(t.name(c), p) {
			break
		}
		fn(c)
	}
	for name, c := range t.recent {
		if strings.HasPrefix(name, p) {
			fn(c)
		}
	}
}

// union is the bitmap of every ordinal in any of names' lists.
func (d *dictionary) union(names []string) *roaring.Bitmap {
	var bms []*roaring.Bitmap
	for _, n := range names {
		if c, ok := d.lookup(n); ok {
			bms = append(bms, d.bitmap(c))
		}
	}
	switch len(bms) {
	case 0:
		return roaring.New()
	case 1:
		return bms[0].Clone()
	}
	return roaring.FastOr(bms...)
}
