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

// postings is a set of ordinals: a sorted slice while small, a roaring
// bitmap once large.
type postings struct {
	small []uint32
	big   *roaring.Bitmap
}

func (p *postings) add(o uint32) {
	if p.big != nil {
		p.big.Add(o)
		return
	}
	i, found := slices.BinarySearch(p.small, o)
	if found {
		return
	}
	p.small = slices.Insert(p.small, i, o)
	if len(p.small) > smallMax {
		p.big = roaring.BitmapOf(p.small...)
		p.small = nil
	}
}

func (p *postings) remove(o uint32) {
	if p.big != nil {
		p.big.Remove(o)
		return
	}
	if i, found := slices.BinarySearch(p.small, o); found {
		p.small = slices.Delete(p.small, i, i+1)
	}
}

func (p *postings) len() uint64 {
	if p.big != nil {
		return p.big.GetCardinality()
	}
	return uint64(len(p.small))
}

// bitmap is the set as a bitmap the caller must not change.
func (p *postings) bitmap() *roaring.Bitmap {
	if p.big != nil {
		return p.big
	}
	return roaring.BitmapOf(p.small...)
}

// dictionary gives the distinct values of one field (types, tags, words…)
// small codes, and keeps the posting list of each.
type dictionary struct {
	// block holds the names of the first len(ends) codes (those a snapshot
	// loaded) side by side; ends[c] is where code c's name ends. A million
	// words then cost four bytes each beside their text, not a string
	// header. The names of later codes are in added.
	block string
	ends  []uint32
	added []string
	sets  []postings
	table nameTable
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
	d.sets = append(d.sets, postings{})
	d.table.add(name, c)
	return c
}

// lookup returns the posting list of name, or nil.
func (d *dictionary) lookup(name string) *postings {
	c, ok := d.table.find(name)
	if !ok {
		return nil
	}
	return &d.sets[c]
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
		if p := d.lookup(n); p != nil && p.len() > 0 {
			bms = append(bms, p.bitmap())
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
