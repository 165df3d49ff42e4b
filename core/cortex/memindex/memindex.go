// Package memindex is the cortex's query index in memory: for every item
// the fields that queries filter and sort by, and for every value of those
// fields the set of items that have it, as roaring bitmaps. A query is a
// few bitmap intersections instead of a scan of index keys.
//
// The index holds no data of its own: Badger holds the items, and the
// cortex feeds the index each committed change (Put). It is not safe for
// concurrent use; the cortex guards it (see core/cortex/cache.go).
package memindex

import (
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// Row is what the index keeps of one item.
type Row struct {
	ID      string
	Version int
	Type    string
	Status  string
	// Rank is the priority's place in the active order (critical 0).
	Rank     int
	Due      *time.Time
	Blocking bool
	Created  time.Time
	Deleted  bool
	// Readers are the principals that may read the item.
	Readers []string
	Tags    []string
	Owner   string
	Org     string
	Parent  string
	// Words are the distinct words of title and description.
	Words []string
}

// stamp is a time as the order key sorts it: seconds, then nanoseconds.
type stamp struct {
	sec  int64
	nsec int32
}

func (s stamp) time() time.Time { return time.Unix(s.sec, int64(s.nsec)).UTC() }

func stampOf(t time.Time) stamp { return stamp{t.Unix(), int32(t.Nanosecond())} }

func (s stamp) compare(o stamp) int {
	if s.sec != o.sec {
		if s.sec < o.sec {
			return -1
		}
		return 1
	}
	return int(s.nsec) - int(o.nsec)
}

// row is a Row as stored: values as dictionary codes.
type row struct {
	id                   string
	version              int
	due, created         stamp
	hasDue, blocking     bool
	rank                 uint8
	typ, status          uint32
	owner, org, parent   uint32 // codes; org and parent only if set
	hasOrg, hasParent    bool
	readers, tags, words []uint32
	present              bool // false once removed
}

// Index is the in-memory query index. The zero value is not usable; use New.
type Index struct {
	ids  nameTable // id → ordinal
	rows []row     // by ordinal
	// live and deleted split the items; rank holds one bitmap per priority
	// rank (0 critical … 4 an unknown priority).
	live, deleted                                                *roaring.Bitmap
	rank                                                         [5]*roaring.Bitmap
	types, statuses, readers, tags, owners, orgs, parents, words *dictionary
	// misfit holds the ordinals whose id sorts before an earlier
	// ordinal's: every other ordinal's id sorts after all lower ones, so a
	// bitmap walk yields ids in order without sorting (see Checksum).
	misfit *roaring.Bitmap
	maxID  string
	// idBlock holds the ids of the first len(idEnds) ordinals (those a
	// snapshot loaded), in ordinal order, each followed by a newline;
	// idEnds[o] is where ordinal o's newline ends. Hashing a run of
	// ordinals is one write of a slice of it (Checksum).
	idBlock string
	idEnds  []uint32
	// generation counts changes, so callers can cache what they derive.
	generation uint64
}

// New returns an empty index.
func New() *Index {
	x := &Index{
		live: roaring.New(), deleted: roaring.New(), misfit: roaring.New(),
		types: newDictionary(), statuses: newDictionary(), readers: newDictionary(), tags: newDictionary(),
		owners: newDictionary(), orgs: newDictionary(), parents: newDictionary(), words: newDictionary(),
	}
	for i := range x.rank {
		x.rank[i] = roaring.New()
	}
	x.ids.name = func(o uint32) string { return x.rows[o].id }
	return x
}

// blockID is ordinal o's id in idBlock (o < len(idEnds)).
func (x *Index) blockID(o uint32) string {
	start := uint32(0)
	if o > 0 {
		start = x.idEnds[o-1]
	}
	return x.idBlock[start : x.idEnds[o]-1]
}

// blockRun is the ids of ordinals from..to (inclusive, all in idBlock)
// with their newlines: what the checksum hashes for them.
func (x *Index) blockRun(from, to uint32) string {
	start := uint32(0)
	if from > 0 {
		start = x.idEnds[from-1]
	}
	return x.idBlock[start:x.idEnds[to]]
}

// Len is the number of items indexed.
func (x *Index) Len() int { return int(x.live.GetCardinality() + x.deleted.GetCardinality()) }

// Generation changes whenever the index does.
func (x *Index) Generation() uint64 { return x.generation }

// Row returns what the index holds of item id (times in UTC).
func (x *Index) Row(id string) (Row, bool) {
	o, ok := x.ids.find(id)
	if !ok || !x.rows[o].present {
		return Row{}, false
	}
	rw := &x.rows[o]
	names := func(d *dictionary, codes []uint32) []string {
		var out []string
		for _, c := range codes {
			out = append(out, d.names[c])
		}
		return out
	}
	r := Row{ID: id, Version: rw.version, Type: x.types.names[rw.typ], Status: x.statuses.names[rw.status], Rank: int(rw.rank),
		Blocking: rw.blocking, Created: rw.created.time(), Deleted: x.deleted.Contains(o), Owner: x.owners.names[rw.owner],
		Readers: names(x.readers, rw.readers), Tags: names(x.tags, rw.tags), Words: names(x.words, rw.words)}
	if rw.hasDue {
		due := rw.due.time()
		r.Due = &due
	}
	if rw.hasOrg {
		r.Org = x.orgs.names[rw.org]
	}
	if rw.hasParent {
		r.Parent = x.parents.names[rw.parent]
	}
	return r, true
}

// Version returns the version of item id the index holds (0: none).
func (x *Index) Version(id string) int {
	if o, ok := x.ids.find(id); ok && x.rows[o].present {
		return x.rows[o].version
	}
	return 0
}

// Put indexes r, replacing what the index held for the same id unless
// that was a later version (changes may arrive out of commit order).
func (x *Index) Put(r Row) {
	o, known := x.ids.find(r.ID)
	if known && x.rows[o].present {
		if x.rows[o].version >= r.Version {
			return
		}
		x.unlink(o)
	}
	if !known {
		o = uint32(len(x.rows))
		x.rows = append(x.rows, row{id: r.ID})
		x.ids.add(r.ID, o)
		if len(x.rows) > 1 && r.ID < x.maxID {
			x.misfit.Add(o)
		}
		if r.ID > x.maxID {
			x.maxID = r.ID
		}
	}
	x.link(o, r)
	x.generation++
}

// link indexes r under ordinal o.
func (x *Index) link(o uint32, r Row) {
	rw := row{id: r.ID, version: r.Version, created: stampOf(r.Created), blocking: r.Blocking, present: true}
	if r.Due != nil {
		rw.due, rw.hasDue = stampOf(*r.Due), true
	}
	rw.rank = uint8(min(max(r.Rank, 0), len(x.rank)-1))
	rw.typ = x.types.code(r.Type)
	rw.status = x.statuses.code(r.Status)
	rw.owner = x.owners.code(r.Owner)
	if r.Org != "" {
		rw.org, rw.hasOrg = x.orgs.code(r.Org), true
	}
	if r.Parent != "" {
		rw.parent, rw.hasParent = x.parents.code(r.Parent), true
	}
	rw.readers = codesOf(x.readers, r.Readers)
	rw.tags = codesOf(x.tags, r.Tags)
	rw.words = codesOf(x.words, r.Words)
	x.rows[o] = rw
	x.addToSets(o, &x.rows[o], r.Deleted)
}

// codesOf is the codes of names, each added if new.
func codesOf(d *dictionary, names []string) []uint32 {
	if len(names) == 0 {
		return nil
	}
	codes := make([]uint32, 0, len(names))
	for _, n := range names {
		codes = append(codes, d.code(n))
	}
	return codes
}

// eachSet calls bitmap and list with every set a row's ordinal belongs
// in, but live and deleted: what adding and removing it go through.
func (x *Index) eachSet(rw *row, bitmap func(*roaring.Bitmap), list func(*postings)) {
	bitmap(x.rank[rw.rank])
	list(&x.types.sets[rw.typ])
	list(&x.statuses.sets[rw.status])
	list(&x.owners.sets[rw.owner])
	if rw.hasOrg {
		list(&x.orgs.sets[rw.org])
	}
	if rw.hasParent {
		list(&x.parents.sets[rw.parent])
	}
	for _, c := range rw.readers {
		list(&x.readers.sets[c])
	}
	for _, c := range rw.tags {
		list(&x.tags.sets[c])
	}
	for _, c := range rw.words {
		list(&x.words.sets[c])
	}
}

// addToSets puts ordinal o, whose row is rw, in every set it belongs in.
func (x *Index) addToSets(o uint32, rw *row, deleted bool) {
	x.eachSet(rw, func(b *roaring.Bitmap) { b.Add(o) }, func(p *postings) { p.add(o) })
	if deleted {
		x.deleted.Add(o)
	} else {
		x.live.Add(o)
	}
}

// unlink removes ordinal o from every set (the ordinal stays the id's).
func (x *Index) unlink(o uint32) {
	rw := &x.rows[o]
	x.eachSet(rw, func(b *roaring.Bitmap) { b.Remove(o) }, func(p *postings) { p.remove(o) })
	x.live.Remove(o)
	x.deleted.Remove(o)
	*rw = row{id: rw.id}
}

// Remove drops item id from the index.
func (x *Index) Remove(id string) {
	if o, ok := x.ids.find(id); ok && x.rows[o].present {
		x.unlink(o)
		x.generation++
	}
}

// withPrefix is the bitmap of items having a word that starts with p.
func (x *Index) withPrefix(p string) *roaring.Bitmap {
	var bms []*roaring.Bitmap
	x.words.table.withPrefix(p, func(c uint32) {
		if s := &x.words.sets[c]; s.len() > 0 {
			bms = append(bms, s.bitmap())
		}
	})
	if len(bms) == 0 {
		return roaring.New()
	}
	return roaring.FastOr(bms...)
}
