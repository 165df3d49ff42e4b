// Package memindex is the cortex's query index in memory: for every item
// the fields that queries filter and sort by, and for every value of those
// fields the set of items that have it, as roaring bitmaps. A query is a
// few bitmap intersections instead of a scan of index keys.
//
// The index holds no data of its own: Badger holds the items, and the
// cortex feeds the index each committed change (Put). Reads (queries,
// WriteSnapshot) may run at once; a change needs the index to itself. The
// cortex guards it so (liveIndex.mu in core/cortex/liveindex.go).
package memindex

import (
	"encoding/binary"
	"math"
	"strings"
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
	nsec uint32
}

func (s stamp) time() time.Time { return time.Unix(s.sec, int64(s.nsec)).UTC() }

func stampOf(t time.Time) stamp { return stamp{t.Unix(), uint32(t.Nanosecond())} }

func (s stamp) compare(o stamp) int {
	if s.sec != o.sec {
		if s.sec < o.sec {
			return -1
		}
		return 1
	}
	return int(s.nsec) - int(o.nsec)
}

// row is a Row as stored: values as dictionary codes, in 64 bytes. A
// million rows are most of a loaded index, so nothing in it is a pointer
// or a slice header: the id is the Index's (Index.id), and the readers,
// tags and words are one run of the Index's codes arena.
type row struct {
	createdSec, dueSec   int64
	createdNsec, dueNsec uint32
	// version is the item's, or bigVersion with the version in
	// Index.bigVersions (one past 32 bits).
	version                         uint32
	typ, status, owner, org, parent uint32 // codes; org and parent only if set
	// The row's readers, tags and words are the size bytes of
	// Index.codes from start (see Index.run).
	start, size uint32
	rank, flags uint8
}

// row flags.
const (
	rowPresent   = 1 << iota // false once removed
	rowHasDue                // due is set
	rowBlocking              // the item blocks
	rowHasOrg                // org is set
	rowHasParent             // parent is set
)

// bigVersion is a row's version when the real one is in Index.bigVersions.
const bigVersion = math.MaxUint32

func (rw *row) has(flag uint8) bool { return rw.flags&flag != 0 }

func (rw *row) created() stamp { return stamp{rw.createdSec, rw.createdNsec} }
func (rw *row) due() stamp     { return stamp{rw.dueSec, rw.dueNsec} }

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
	// snapshot loaded, and those added since once there were enough to
	// fold in), in ordinal order, each followed by a newline; idEnds[o]
	// is where ordinal o's newline ends. Hashing a run of ordinals is one
	// write of a slice of it (Checksum). The ids of later ordinals are in
	// addedIDs.
	idBlock  string
	idEnds   []uint32
	addedIDs []string
	// codes holds every row's readers, tags and words, a run of bytes for
	// each row: the count and codes of each as uvarints (what a snapshot
	// holds of them too). Most codes take a byte or two, not four. A
	// change appends the row's new run: deadCodes counts the bytes no
	// row's run holds any more, and once they are half, the arena is
	// copied without them (compactIfHalfDead).
	codes     []byte
	deadCodes int
	// scratch is run's buffer for the changes, which have the index to
	// themselves.
	scratch []uint32
	// bigVersions holds the versions that do not fit a row's 32 bits.
	bigVersions map[uint32]int
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
	x.ids.name = x.id
	return x
}

// id is ordinal o's id.
func (x *Index) id(o uint32) string {
	if o < uint32(len(x.idEnds)) {
		return x.blockID(o)
	}
	return x.addedIDs[o-uint32(len(x.idEnds))]
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

// version is the version row o holds.
func (x *Index) version(o uint32) int {
	if v := x.rows[o].version; v != bigVersion {
		return int(v)
	}
	return x.bigVersions[o]
}

// setVersion makes v row o's version.
func (x *Index) setVersion(o uint32, v int) {
	if v >= 0 && v < bigVersion {
		x.rows[o].version = uint32(v)
		return
	}
	x.rows[o].version = bigVersion
	if x.bigVersions == nil {
		x.bigVersions = map[uint32]int{}
	}
	x.bigVersions[o] = v
}

// run appends the readers, tags and words of row rw to buf and returns
// the three (buf's room is reused: several readers of the index may call
// it at once, each with its own buf).
func (x *Index) run(rw *row, buf []uint32) (readers, tags, words []uint32) {
	b := x.codes[rw.start : rw.start+rw.size]
	out := buf[:0]
	var ends [3]int
	for i := range ends {
		n, k := binary.Uvarint(b)
		b = b[k:]
		for range n {
			c, k := binary.Uvarint(b)
			b = b[k:]
			out = append(out, uint32(c))
		}
		ends[i] = len(out)
	}
	return out[:ends[0]], out[ends[0]:ends[1]], out[ends[1]:ends[2]]
}

// foldAfter is the fewest added ids or names folded into their block at
// once; more are once they are an eighth of the block's (a variable for
// the tests). An index built by puts then keeps them as a loaded one
// does: four bytes each beside their text, not a string header, and not
// the caller's string, which may be a slice of far more (a word of an
// item's whole text).
var foldAfter = 4096

// fold appends each of added and sep to block, and where that ends to
// ends; it returns added empty. A block past 32-bit offsets is left as it
// is.
func fold(block string, ends []uint32, added []string, sep string) (string, []uint32, []string) {
	size := len(block)
	for _, s := range added {
		size += len(s) + len(sep)
	}
	if size > math.MaxUint32 {
		return block, ends, added
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(block)
	for _, s := range added {
		b.WriteString(s)
		b.WriteString(sep)
		ends = append(ends, uint32(b.Len()))
	}
	clear(added)
	return b.String(), ends, added[:0]
}

// Len is the number of items indexed.
func (x *Index) Len() int { return int(x.live.GetCardinality() + x.deleted.GetCardinality()) }

// Generation changes whenever the index does.
func (x *Index) Generation() uint64 { return x.generation }

// Row returns what the index holds of item id (times in UTC).
func (x *Index) Row(id string) (Row, bool) {
	o, ok := x.ids.find(id)
	if !ok || !x.rows[o].has(rowPresent) {
		return Row{}, false
	}
	rw := &x.rows[o]
	names := func(d *dictionary, codes []uint32) []string {
		var out []string
		for _, c := range codes {
			out = append(out, d.name(c))
		}
		return out
	}
	readers, tags, words := x.run(rw, nil)
	r := Row{ID: id, Version: x.version(o), Type: x.types.name(rw.typ), Status: x.statuses.name(rw.status), Rank: int(rw.rank),
		Blocking: rw.has(rowBlocking), Created: rw.created().time(), Deleted: x.deleted.Contains(o), Owner: x.owners.name(rw.owner),
		Readers: names(x.readers, readers), Tags: names(x.tags, tags), Words: names(x.words, words)}
	if rw.has(rowHasDue) {
		due := rw.due().time()
		r.Due = &due
	}
	if rw.has(rowHasOrg) {
		r.Org = x.orgs.name(rw.org)
	}
	if rw.has(rowHasParent) {
		r.Parent = x.parents.name(rw.parent)
	}
	return r, true
}

// Version returns the version of item id the index holds (0: none).
func (x *Index) Version(id string) int {
	if o, ok := x.ids.find(id); ok && x.rows[o].has(rowPresent) {
		return x.version(o)
	}
	return 0
}

// Put indexes r, replacing what the index held for the same id unless
// that was a later version (changes may arrive out of commit order).
func (x *Index) Put(r Row) {
	o, known := x.ids.find(r.ID)
	if known && x.rows[o].has(rowPresent) {
		if x.version(o) >= r.Version {
			return
		}
		x.unlink(o)
	}
	if !known {
		o = uint32(len(x.rows))
		x.rows = append(x.rows, row{})
		x.addedIDs = append(x.addedIDs, r.ID)
		if len(x.addedIDs) >= max(foldAfter, len(x.idEnds)/8) {
			x.idBlock, x.idEnds, x.addedIDs = fold(x.idBlock, x.idEnds, x.addedIDs, "\n")
		}
		x.ids.add(r.ID, o)
		if len(x.rows) > 1 && r.ID < x.maxID {
			x.misfit.Add(o)
		}
		if r.ID > x.maxID {
			x.maxID = r.ID
		}
	}
	x.link(o, r)
	x.compactIfHalfDead()
	x.generation++
}

// link indexes r under ordinal o.
func (x *Index) link(o uint32, r Row) {
	created := stampOf(r.Created)
	rw := row{createdSec: created.sec, createdNsec: created.nsec, flags: rowPresent}
	if r.Due != nil {
		due := stampOf(*r.Due)
		rw.dueSec, rw.dueNsec, rw.flags = due.sec, due.nsec, rw.flags|rowHasDue
	}
	if r.Blocking {
		rw.flags |= rowBlocking
	}
	rw.rank = uint8(min(max(r.Rank, 0), len(x.rank)-1))
	rw.typ = x.types.code(r.Type)
	rw.status = x.statuses.code(r.Status)
	rw.owner = x.owners.code(r.Owner)
	if r.Org != "" {
		rw.org, rw.flags = x.orgs.code(r.Org), rw.flags|rowHasOrg
	}
	if r.Parent != "" {
		rw.parent, rw.flags = x.parents.code(r.Parent), rw.flags|rowHasParent
	}
	start := len(x.codes)
	for _, list := range []struct {
		d     *dictionary
		names []string
	}{{x.readers, r.Readers}, {x.tags, r.Tags}, {x.words, r.Words}} {
		x.codes = binary.AppendUvarint(x.codes, uint64(len(list.names)))
		for _, n := range list.names {
			x.codes = binary.AppendUvarint(x.codes, uint64(list.d.code(n)))
		}
	}
	if len(x.codes) > math.MaxUint32 {
		panic("memindex: more than 4 GB of readers, tags and words")
	}
	rw.start, rw.size = uint32(start), uint32(len(x.codes)-start)
	x.rows[o] = rw
	x.setVersion(o, r.Version)
	x.addToSets(o, &x.rows[o], r.Deleted)
}

// compactIfHalfDead copies the arena without its dead codes once they are
// half of it, so that an engram that runs for long, changing the same
// items, does not grow without bound.
func (x *Index) compactIfHalfDead() {
	if x.deadCodes < 4096 || x.deadCodes < len(x.codes)/2 {
		return
	}
	codes := make([]byte, 0, len(x.codes)-x.deadCodes)
	for i := range x.rows {
		rw := &x.rows[i]
		if !rw.has(rowPresent) {
			continue
		}
		start := uint32(len(codes))
		codes = append(codes, x.codes[rw.start:rw.start+rw.size]...)
		rw.start = start
	}
	x.codes, x.deadCodes = codes, 0
}

// eachSet calls bitmap and list with every set a row's ordinal belongs
// in, but live and deleted: what adding and removing it go through.
// readers, tags and words are the row's run (Index.run).
func (x *Index) eachSet(rw *row, readers, tags, words []uint32, bitmap func(*roaring.Bitmap), list func(d *dictionary, c uint32)) {
	bitmap(x.rank[rw.rank])
	list(x.types, rw.typ)
	list(x.statuses, rw.status)
	list(x.owners, rw.owner)
	if rw.has(rowHasOrg) {
		list(x.orgs, rw.org)
	}
	if rw.has(rowHasParent) {
		list(x.parents, rw.parent)
	}
	for _, c := range readers {
		list(x.readers, c)
	}
	for _, c := range tags {
		list(x.tags, c)
	}
	for _, c := range words {
		list(x.words, c)
	}
}

// addToSets puts ordinal o, whose row is rw, in every set it belongs in.
func (x *Index) addToSets(o uint32, rw *row, deleted bool) {
	readers, tags, words := x.run(rw, x.scratch)
	x.scratch = readers[:0] // its room, grown if it had to
	x.addRunToSets(o, rw, readers, tags, words, deleted)
}

// addRunToSets is addToSets with the row's run decoded.
func (x *Index) addRunToSets(o uint32, rw *row, readers, tags, words []uint32, deleted bool) {
	x.eachSet(rw, readers, tags, words, func(b *roaring.Bitmap) { b.Add(o) }, func(d *dictionary, c uint32) { d.add(c, o) })
	if deleted {
		x.deleted.Add(o)
	} else {
		x.live.Add(o)
	}
}

// unlink removes ordinal o from every set (the ordinal stays the id's);
// its run of codes is dead.
func (x *Index) unlink(o uint32) {
	rw := &x.rows[o]
	readers, tags, words := x.run(rw, x.scratch)
	x.scratch = readers[:0]
	x.eachSet(rw, readers, tags, words, func(b *roaring.Bitmap) { b.Remove(o) }, func(d *dictionary, c uint32) { d.remove(c, o) })
	x.live.Remove(o)
	x.deleted.Remove(o)
	x.deadCodes += int(rw.size)
	if rw.version == bigVersion {
		delete(x.bigVersions, o)
	}
	*rw = row{}
}

// Remove drops item id from the index.
func (x *Index) Remove(id string) {
	if o, ok := x.ids.find(id); ok && x.rows[o].has(rowPresent) {
		x.unlink(o)
		x.compactIfHalfDead()
		x.generation++
	}
}

// withPrefix is the bitmap of items having a word that starts with p.
func (x *Index) withPrefix(p string) *roaring.Bitmap {
	var bms []*roaring.Bitmap
	x.words.table.withPrefix(p, func(c uint32) {
		if x.words.sets[c].n > 0 {
			bms = append(bms, x.words.bitmap(c))
		}
	})
	if len(bms) == 0 {
		return roaring.New()
	}
	return roaring.FastOr(bms...)
}
