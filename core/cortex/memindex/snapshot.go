package memindex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"
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
	order := x.ids.merged()
	// First every id, each ended by a newline, as one string: loaded,
	// the ids lie side by side in memory in id order, and a checksum
	// hashes a run of them in one write (idBlock).
	uvarint(uint64(len(x.rows)))
	var ids strings.Builder
	for _, o := range order {
		id := x.rows[o].id
		if strings.Contains(id, "\n") {
			return fmt.Errorf("memindex: id %q has a newline: not saved", id)
		}
		ids.WriteString(id)
		ids.WriteByte('\n')
	}
	str(ids.String())
	for _, o := range order {
		i := int(o)
		rw := &x.rows[i]
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
		// A name takes a byte at least: room for n is at most 16 bytes
		// (a string header) a byte left. The sets wait for the table
		// to be checked.
		n := r.count()
		d.names = make([]string, 0, r.room(n, 1))
		for range n {
			d.names = append(d.names, r.str())
		}
		d.table.sorted = r.codes(len(d.names))
		// Lookups bisect the table: it must hold every code once, in
		// strictly increasing name order (so no name twice either).
		if len(d.table.sorted) != len(d.names) {
			panic("a name table that lacks names")
		}
		for i := 1; i < len(d.table.sorted); i++ {
			if d.names[d.table.sorted[i-1]] >= d.names[d.table.sorted[i]] {
				panic("a name table out of name order")
			}
		}
		d.sets = make([]postings, len(d.names))
	}
	n := r.count()
	x.idBlock = r.str()
	x.idEnds = make([]uint32, 0, r.room(n, 1))
	for i, c := range []byte(x.idBlock) {
		if c == '\n' {
			x.idEnds = append(x.idEnds, uint32(i+1))
		}
	}
	if len(x.idEnds) != n || len(x.idBlock) > math.MaxUint32 {
		panic("an id block that does not hold every id")
	}
	x.rows = make([]row, 0, r.room(n, 16))
	for i := range n {
		o := uint32(i)
		x.rows = append(x.rows, row{})
		rw := &x.rows[i]
		rw.id = x.blockID(o)
		if i > 0 && rw.id <= x.maxID { // (an id twice is out of order too)
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

		// Ordinals only grow here, so every add appends.
		x.addToSets(o, rw, flags&flagDeleted != 0)
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

// room is how many of n things to make room for ahead, each taking at
// least size bytes of what is left (a real snapshot's rows take more
// than 16): a count beyond that grows as things are actually decoded.
func (r *reader) room(n, size int) int { return min(n, (len(r.text)-r.pos)/size) }

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
