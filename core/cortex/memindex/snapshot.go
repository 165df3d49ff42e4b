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

// The snapshot format: a magic line, the dictionaries (for each, its
// names side by side in code order, the length of each, and the codes in
// name order), then the ids side by side in id order, the number of codes
// the rows hold, and the rows in id order as codes, then a CRC-32C of
// everything before it. Loading rebuilds the sets from the rows without a
// map lookup per value, which is what makes a million items load in well
// under a second. Version 1 kept each name with its own length; it is
// refused (the cortex then builds the index from the items).
const magic = "engram cortex index v2\n"

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
	flush := func() error {
		_, err := bw.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = append(buf, magic...)
	for _, d := range x.dictionaries() {
		n := d.len()
		uvarint(uint64(n))
		var names strings.Builder
		for c := range n {
			names.WriteString(d.name(uint32(c)))
		}
		str(names.String())
		for c := range n {
			uvarint(uint64(len(d.name(uint32(c)))))
			if len(buf) > 64<<10 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		for _, c := range d.table.merged() {
			uvarint(uint64(c))
		}
	}
	// The rows in id order: loaded, their ordinals follow their ids, so
	// the checksum has no misfits to sort.
	order := x.ids.merged()
	// First every id, each ended by a newline, as one string: loaded,
	// the ids lie side by side in memory in id order, and a checksum
	// hashes a run of them in one write (idBlock).
	uvarint(uint64(len(x.rows)))
	var ids strings.Builder
	arena := 0 // the bytes of the rows' runs: the loaded arena's size
	for _, o := range order {
		id := x.id(o)
		if strings.Contains(id, "\n") {
			return fmt.Errorf("memindex: id %q has a newline: not saved", id)
		}
		ids.WriteString(id)
		ids.WriteByte('\n')
		if rw := &x.rows[o]; rw.has(rowPresent) {
			arena += int(rw.size)
		}
	}
	str(ids.String())
	uvarint(uint64(arena))
	for _, o := range order {
		rw := &x.rows[o]
		if !rw.has(rowPresent) { // removed: the ordinal stays its id's
			buf = append(buf, flagAbsent)
			continue
		}
		var flags byte
		for _, f := range []struct {
			bit byte
			on  bool
		}{{flagDue, rw.has(rowHasDue)}, {flagBlocking, rw.has(rowBlocking)}, {flagDeleted, x.deleted.Contains(o)}, {flagOrg, rw.has(rowHasOrg)}, {flagParent, rw.has(rowHasParent)}} {
			if f.on {
				flags |= f.bit
			}
		}
		buf = append(buf, flags)
		uvarint(uint64(x.version(o)))
		buf = append(buf, rw.rank)
		if rw.has(rowHasDue) {
			varint(rw.dueSec)
			uvarint(uint64(rw.dueNsec))
		}
		varint(rw.createdSec)
		uvarint(uint64(rw.createdNsec))
		uvarint(uint64(rw.typ))
		uvarint(uint64(rw.status))
		uvarint(uint64(rw.owner))
		if rw.has(rowHasOrg) {
			uvarint(uint64(rw.org))
		}
		if rw.has(rowHasParent) {
			uvarint(uint64(rw.parent))
		}
		// The run is the readers, tags and words as the snapshot holds
		// them: counts and codes as uvarints.
		buf = append(buf, x.codes[rw.start:rw.start+rw.size]...)
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

// ReadSnapshot loads an index written by WriteSnapshot from data. The
// index keeps none of data: its ids and names are copied out, one string
// for each block of them.
func ReadSnapshot(data []byte) (x *Index, err error) {
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, errCorrupt
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: its checksum does not match", errCorrupt)
	}
	r := &reader{data: body, pos: len(magic)}
	defer func() {
		// A snapshot whose checksum matches yet decodes wrong is a bug's;
		// it is still refused, not trusted.
		if p := recover(); p != nil {
			x, err = nil, fmt.Errorf("%w: %v", errCorrupt, p)
		}
	}()
	x = New()
	for _, d := range x.dictionaries() {
		// A name's length takes a byte at least: room for n is at most
		// the bytes left. The sets wait for the table to be checked.
		n := r.count()
		d.block = r.str()
		d.ends = make([]uint32, 0, r.room(n, 1))
		end := uint64(0)
		for range n {
			end += r.uvarint()
			if end > uint64(len(d.block)) {
				panic("names past their block")
			}
			d.ends = append(d.ends, uint32(end))
		}
		if end != uint64(len(d.block)) {
			panic("a name block longer than its names")
		}
		d.table.sorted = make([]uint32, 0, r.room(n, 1))
		for range n {
			d.table.sorted = append(d.table.sorted, r.code(n))
		}
		// Lookups bisect the table: it must hold every code once, in
		// strictly increasing name order (so no name twice either).
		for i := 1; i < len(d.table.sorted); i++ {
			if d.name(d.table.sorted[i-1]) >= d.name(d.table.sorted[i]) {
				panic("a name table out of name order")
			}
		}
		d.sets = make([]postings, n)
	}
	n := r.count()
	x.idBlock = r.str()
	x.idEnds = make([]uint32, 0, r.room(n, 1))
	for i := range len(x.idBlock) {
		if x.idBlock[i] == '\n' {
			x.idEnds = append(x.idEnds, uint32(i+1))
		}
	}
	if len(x.idEnds) != n || len(x.idBlock) > math.MaxUint32 {
		panic("an id block that does not hold every id")
	}
	arena := r.count()
	x.codes = make([]byte, 0, arena)
	x.rows = make([]row, 0, r.room(n, 16))
	for i := range n {
		o := uint32(i)
		x.rows = append(x.rows, row{})
		rw := &x.rows[i]
		id := x.blockID(o)
		if i > 0 && id <= x.maxID { // (an id twice is out of order too)
			x.misfit.Add(o)
		}
		x.maxID = max(x.maxID, id)
		flags := r.byte()
		if flags&flagAbsent != 0 {
			continue
		}
		rw.flags = rowPresent
		x.setVersion(o, int(r.uvarint()))
		rw.rank = min(r.byte(), uint8(len(x.rank)-1))
		if flags&flagDue != 0 {
			rw.flags |= rowHasDue
			rw.dueSec, rw.dueNsec = r.varint(), uint32(r.uvarint())
		}
		if flags&flagBlocking != 0 {
			rw.flags |= rowBlocking
		}
		rw.createdSec, rw.createdNsec = r.varint(), uint32(r.uvarint())
		rw.typ = r.code(x.types.len())
		rw.status = r.code(x.statuses.len())
		rw.owner = r.code(x.owners.len())
		if flags&flagOrg != 0 {
			rw.flags |= rowHasOrg
			rw.org = r.code(x.orgs.len())
		}
		if flags&flagParent != 0 {
			rw.flags |= rowHasParent
			rw.parent = r.code(x.parents.len())
		}
		// The run is kept as it is, once its codes are checked.
		start := r.pos
		codes := r.codes(x.scratch[:0], x.readers.len())
		nr := len(codes)
		codes = r.codes(codes, x.tags.len())
		nt := len(codes)
		codes = r.codes(codes, x.words.len())
		x.scratch = codes
		if len(x.codes)+r.pos-start > math.MaxUint32 {
			panic("more codes than an arena holds")
		}
		rw.start, rw.size = uint32(len(x.codes)), uint32(r.pos-start)
		x.codes = append(x.codes, r.data[start:r.pos]...)

		// Ordinals only grow here, so every add appends.
		x.addRunToSets(o, rw, codes[:nr], codes[nr:nt], codes[nt:], flags&flagDeleted != 0)
	}
	if len(x.codes) != arena {
		panic("rows that hold other than their count of code bytes")
	}
	x.ids.sorted = make([]uint32, len(x.rows))
	for i := range x.ids.sorted {
		x.ids.sorted[i] = uint32(i)
	}
	if !x.misfit.IsEmpty() {
		panic("rows out of id order")
	}
	if r.pos != len(r.data) {
		return nil, fmt.Errorf("%w: %d bytes left over", errCorrupt, len(r.data)-r.pos)
	}
	return x, nil
}

// reader decodes a snapshot's body; it panics on a short or bad one
// (ReadSnapshot recovers).
type reader struct {
	data []byte
	pos  int
}

func (r *reader) uvarint() uint64 {
	// binary.Uvarint, as Index.run decodes the runs: a number too long
	// for 64 bits or cut short is refused here, not misread there.
	if b := r.data[r.pos]; b < 0x80 { // most are one byte
		r.pos++
		return uint64(b)
	}
	n, k := binary.Uvarint(r.data[r.pos:])
	if k <= 0 {
		panic("a number too long or cut short")
	}
	r.pos += k
	return n
}

func (r *reader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) byte() byte {
	b := r.data[r.pos]
	r.pos++
	return b
}

// room is how many of n things to make room for ahead, each taking at
// least size bytes of what is left (a real snapshot's rows take more
// than 16): a count beyond that grows as things are actually decoded.
func (r *reader) room(n, size int) int { return min(n, (len(r.data)-r.pos)/size) }

// count reads a length that must fit in what is left.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.data)-r.pos) {
		panic("a count past the end")
	}
	return int(n)
}

// str is a string of its own: the index keeps none of the snapshot's
// bytes.
func (r *reader) str() string {
	n := r.count()
	s := string(r.data[r.pos : r.pos+n])
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

// codes reads a count and as many codes, and appends them to buf.
func (r *reader) codes(buf []uint32, limit int) []uint32 {
	for range r.count() {
		buf = append(buf, r.code(limit))
	}
	return buf
}
