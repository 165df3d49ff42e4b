package memindex

import (
	"slices"

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
	codes map[string]uint32
	names []string
	sets  []postings
}

func newDictionary() *dictionary {
	return &dictionary{codes: map[string]uint32{}}
}

// code returns the code of name, adding it if new.
func (d *dictionary) code(name string) uint32 {
	if c, ok := d.codes[name]; ok {
		return c
	}
	c := uint32(len(d.names))
	d.codes[name] = c
	d.names = append(d.names, name)
	d.sets = append(d.sets, postings{})
	return c
}

// lookup returns the posting list of name, or nil.
func (d *dictionary) lookup(name string) *postings {
	c, ok := d.codes[name]
	if !ok {
		return nil
	}
	return &d.sets[c]
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
