package memindex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The snapshot format: a magic line, the dictionaries (every value of
// every field, in code order, and the codes in name order), then the
// rows in id order as codes,
// then a CRC-32C of everything before it. Loading rebuilds the sets from
// the rows without a map lookup per value, which is what makes a million
// items load in well under a second.
const magic = "engram cortex index v1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// row flags.
const (
	flagDue = 1 << iota
	flagBlocking
	flagDeleted
	flagOrg
	flagParent
	flagAbsent
)

func (x *Index) dictionaries() []*dictionary {
	return []*dictionary{x.types, x.statuses, x.readers, x.tags, x.owners, x.orgs, x.parents, x.words}
}

// WriteSnapshot writes the index to w. It only reads the index, so
// queries may run meanwhile; changes may not.
func (x *Index) WriteSnapshot(w io.Writer) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	var buf []byte
	uvarint := func(n uint64) { buf = binary.AppendUvarint(buf, n) }
	varint := func(n int64) { buf = binary.AppendVarint(buf, n) }
	str := func(s string) { uvarint(uint64(len(s))); buf = append(buf, s...) }
	codes := func(cs []uint32) {
		uvarint(uint64(len(cs)))
		for _, c := range cs {
			uvarint(uint64(c))
		}
	}
	flush := func() error {
		_, err := bw.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = append(buf, magic...)
	for _, d := range x.dictionaries() {
		uvarint(uint64(len(d.names)))
		for _, n := range d.names {
			str(n)
			if len(buf) > 64<<10 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		codes(d.table.merged())
	}
	// The rows in id order: loaded, their ordinals follow their ids, so
	// the checksum has no misfits to sort.
	uvarint(uint64(len(x.rows)))
	for _, o := range x.ids.merged() {
		i := int(o)
		rw := &x.rows[i]
		str(rw.id)
		if !rw.present { // removed: the ordinal stays its id's
			buf = append(buf, flagAbsent)
			continue
		}
		var flags byte
		for _, f := range []struct {
			bit byte
			on  bool
		}{{flagDue, rw.hasDue}, {flagBlocking, rw.blocking}, {flagDeleted, x.deleted.Contains(uint32(i))}, {flagOrg, rw.hasOrg}, {flagParent, rw.hasParent}} {
			if f.on {
				flags |= f.bit
			}
		}
		buf = append(buf, flags)
		uvarint(uint64(rw.version))
		buf = append(buf, rw.rank)
		if rw.hasDue {
			varint(rw.due.sec)
			uvarint(uint64(rw.due.nsec))
		}
		varint(rw.created.sec)
		uvarint(uint64(rw.created.nsec))
		uvarint(uint64(rw.typ))
		uvarint(uint64(rw.status))
		uvarint(uint64(rw.owner))
		if rw.hasOrg {
			uvarint(uint64(rw.org))
		}
		if rw.hasParent {
			uvarint(uint64(rw.parent))
		}
		codes(rw.readers)
		codes(rw.tags)
		codes(rw.words)
		if len(buf) > 64<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// errCorrupt is what ReadSnapshot returns for a snapshot that is not one.
var errCorrupt = errors.New("memindex: the snapshot is damaged or not one")

// ReadSnapshot loads an index written by WriteSnapshot from data.
func ReadSnapshot(data []byte) (x *Index, err error) {
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, errCorrupt
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: its checksum does not match", errCorrupt)
	}
	r := &reader{text: string(body), pos: len(magic)}
	defer func() {
		// A snapshot whose checksum matches yet decodes wrong is a bug's;
		// it is still refused, not trusted.
		if p := recover(); p != nil {
			x, err = nil, fmt.Errorf("%w: %v", errCorrupt, p)
		}
	}()
	x = New()
	for _, d := range x.dictionaries() {
		n := r.count()
		d.names = make([]string, n)
		d.sets = make([]postings, n)
		for i := range d.names {
			d.names[i] = r.str()
		}
		d.table.sorted = r.codes(len(d.names))
	}
	x.rows = make([]row, r.count())
	for i := range x.rows {
		o := uint32(i)
		rw := &x.rows[i]
		rw.id = r.str()
		if i > 0 && rw.id < x.maxID {
			x.misfit.Add(o)
		}
		x.maxID = max(x.maxID, rw.id)
		flags := r.byte()
		if flags&flagAbsent != 0 {
			continue
		}
		rw.present = true
		rw.version = int(r.uvarint())
		rw.rank = min(r.byte(), uint8(len(x.rank)-1))
		if flags&flagDue != 0 {
			rw.hasDue = true
			rw.due = stamp{r.varint(), int32(r.uvarint())}
		}
		rw.blocking = flags&flagBlocking != 0
		rw.created = stamp{r.varint(), int32(r.uvarint())}
		rw.typ = r.code(len(x.types.names))
		rw.status = r.code(len(x.statuses.names))
		rw.owner = r.code(len(x.owners.names))
		if flags&flagOrg != 0 {
			rw.hasOrg, rw.org = true, r.code(len(x.orgs.names))
		}
		if flags&flagParent != 0 {
			rw.hasParent, rw.parent = true, r.code(len(x.parents.names))
		}
		rw.readers = r.codes(len(x.readers.names))
		rw.tags = r.codes(len(x.tags.names))
		rw.words = r.codes(len(x.words.names))

		x.rank[rw.rank].Add(o)
		if flags&flagDeleted != 0 {
			x.deleted.Add(o)
		} else {
			x.live.Add(o)
		}
		// Ordinals only grow here, so every add appends.
		x.types.sets[rw.typ].add(o)
		x.statuses.sets[rw.status].add(o)
		x.owners.sets[rw.owner].add(o)
		if rw.hasOrg {
			x.orgs.sets[rw.org].add(o)
		}
		if rw.hasParent {
			x.parents.sets[rw.parent].add(o)
		}
		for _, c := range rw.readers {
			x.readers.sets[c].add(o)
		}
		for _, c := range rw.tags {
			x.tags.sets[c].add(o)
		}
		for _, c := range rw.words {
			x.words.sets[c].add(o)
		}
	}
	x.ids.sorted = make([]uint32, len(x.rows))
	for i := range x.ids.sorted {
		x.ids.sorted[i] = uint32(i)
	}
	if !x.misfit.IsEmpty() {
		panic("rows out of id order")
	}
	if r.pos != len(r.text) {
		return nil, fmt.Errorf("%w: %d bytes left over", errCorrupt, len(r.text)-r.pos)
	}
	return x, nil
}

// reader decodes a snapshot's body; it panics on a short or bad one
// (ReadSnapshot recovers). Strings are slices of the body, which is one
// string: a million ids and words cost no allocation each.
type reader struct {
	text  string
	pos   int
	arena []uint32 // the code lists are slices of it
}

func (r *reader) uvarint() uint64 {
	var n uint64
	for shift := 0; ; shift += 7 {
		if shift > 63 {
			panic("a number too long")
		}
		b := r.text[r.pos]
		r.pos++
		n |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return n
		}
	}
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) byte() byte {
	b := r.text[r.pos]
	r.pos++
	return b
}

// count reads a length that must fit in what is left.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.text)-r.pos) {
		panic("a count past the end")
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.count()
	s := r.text[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *reader) code(limit int) uint32 {
	c := r.uvarint()
	if c >= uint64(limit) {
		panic("a code outside its dictionary")
	}
	return uint32(c)
}

func (r *reader) codes(limit int) []uint32 {
	n := r.count()
	if n == 0 {
		return nil
	}
	if cap(r.arena)-len(r.arena) < n {
		r.arena = make([]uint32, 0, max(n, 64<<10))
	}
	start := len(r.arena)
	for range n {
		r.arena = append(r.arena, r.code(limit))
	}
	return r.arena[start:len(r.arena):len(r.arena)]
}
