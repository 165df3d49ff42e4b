package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// damageFixture is what the damage tests write, and expect to read back.
type damageFixture struct {
	want map[string][]byte
}

// writeFixture writes 300 small items (they live in the write-ahead log and
// the tables) and 2 large ones (over Badger's value threshold: they live in
// the value log) into s, each in its own commit.
func writeFixture(t *testing.T, s *Store) damageFixture {
	t.Helper()
	f := damageFixture{want: map[string][]byte{}}
	for i := range 300 {
		key := fmt.Sprintf("item/%04d", i)
		f.want[key] = fmt.Appendf(nil, `{"id":%d,"status":"active","text":"the launch review number %d is on Friday"}`, i, i)
	}
	for i := range 2 {
		f.want[fmt.Sprintf("big/%d", i)] = bytes.Repeat(fmt.Appendf(nil, "large value %d; ", i), (3<<20)/16)
	}
	for k, v := range f.want {
		if err := s.Update(t.Context(), func(tx *Tx) error { return tx.Set([]byte(k), v) }); err != nil {
			t.Fatalf("writing %s: %v", k, err)
		}
	}
	return f
}

// snapshots returns two copies of one store's directory: "closed" (closed
// cleanly: items in tables) and "crashed" (copied while open, as kill -9
// leaves it: items in the write-ahead log). They are made once for the
// package's tests (TestMain removes them), which copy them before they
// change anything: writing the 6 MB fixture took a second per test.
func snapshots(t *testing.T) (closed, crashed string, f damageFixture) {
	t.Helper()
	shared.once.Do(func() {
		root, err := os.MkdirTemp("", "engram-storage-snapshots-")
		if err != nil {
			t.Fatal(err)
		}
		shared.root = root
		shared.closed, shared.crashed, shared.f = makeSnapshots(t, root)
		shared.made = true
	})
	if !shared.made {
		t.Fatal("the store snapshots could not be made: see the first test that asked for them")
	}
	return shared.closed, shared.crashed, shared.f
}

// shared is what snapshots made.
var shared struct {
	once            sync.Once
	made            bool
	root            string
	closed, crashed string
	f               damageFixture
}

// removeSnapshots removes what snapshots made (TestMain calls it).
func removeSnapshots() {
	if shared.root != "" {
		_ = os.RemoveAll(shared.root) // best effort: a leftover temporary directory harms nothing
	}
}

// makeSnapshots writes the fixture to a store under root and makes the
// two copies of its directory that snapshots returns.
func makeSnapshots(t *testing.T, root string) (closed, crashed string, f damageFixture) {
	t.Helper()
	mkdir := func(name string) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	live := mkdir("live")
	s, err := Open(Options{Dir: live})
	if err != nil {
		t.Fatal(err)
	}
	f = writeFixture(t, s)
	crashed = mkdir("crashed")
	copyDir(t, live, crashed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Open and close once more: the value log with the large values is no
	// longer the newest, so Badger reads it only when a value is read (and
	// VerifyValueChecksum is what catches a flip in it).
	s, err = Open(Options{Dir: live})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed = mkdir("closed")
	copyDir(t, live, closed)
	return closed, crashed, f
}

// copyDir copies a store directory, keeping Badger's preallocated logs
// sparse (only their non-zero 64 KiB chunks are written).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockFileName {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		zero := make([]byte, len(buf))
		info, err := src.Stat()
		if err != nil {
			t.Fatal(err)
		}
		var off int64
		for {
			if data, err := unix.Seek(int(src.Fd()), off, unix.SEEK_DATA); err == nil && data > off {
				off = data
			} else if errors.Is(err, unix.ENXIO) {
				off = info.Size()
			}
			n, err := src.ReadAt(buf, off)
			if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
				if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
					t.Fatal(werr)
				}
			}
			off += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.Truncate(off); err != nil {
			t.Fatal(err)
		}
		_ = src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// filesWith lists dir's files ending in ext.
func filesWith(t *testing.T, dir, ext string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// dataEnd is where a file's content ends: a log's last entry, else its size.
func dataEnd(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if ext := filepath.Ext(path); ext == walExt || ext == vlogExt {
		end, _, err := scanLog(path)
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	return info.Size()
}

// flipBit flips one bit of the file at off.
func flipBit(t *testing.T, path string, off int64, bit uint) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1 << bit
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// assertNeverWrong opens dir and reads everything back: opening either
// fails with a *DamagedError naming a file of dir, or every read returns
// exactly what was written or a *DamagedError. Never altered data, never a
// written key missing, never a panic.
func assertNeverWrong(t *testing.T, dir string, f damageFixture, what string) (refused bool) {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		var d *DamagedError
		if !errors.As(err, &d) {
			t.Errorf("%s: opening failed without a DamagedError: %v", what, err)
			return true
		}
		if !strings.HasPrefix(d.File, dir) {
			t.Errorf("%s: the error names %q, not a file of %s: %v", what, d.File, dir, err)
		}
		return true
	}
	defer func() { _ = s.Close() }() // a damaged store may fail to close; what was read is the point
	for key, want := range f.want {
		var got []byte
		err := s.View(func(tx *Tx) error {
			var err error
			got, err = tx.Get([]byte(key))
			return err
		})
		var d *DamagedError
		switch {
		case errors.As(err, &d):
			if !strings.HasPrefix(d.File, dir) {
				t.Errorf("%s: reading %s: the error names %q, not a file of %s", what, key, d.File, dir)
			}
		case err != nil:
			t.Errorf("%s: reading %s: not a DamagedError: %v", what, key, err)
		case !bytes.Equal(got, want):
			t.Errorf("%s: reading %s returned altered data with no error", what, key)
		}
	}
	seen := 0
	err = s.View(func(tx *Tx) error {
		return tx.Scan(Prefix(nil), func(k, v []byte) error {
			if want, ok := f.want[string(k)]; ok && !bytes.Equal(v, want) {
				t.Errorf("%s: scanning %s returned altered data with no error", what, k)
			}
			seen++
			return nil
		})
	})
	if err == nil && seen < len(f.want) {
		t.Errorf("%s: a scan saw %d of %d keys with no error", what, seen, len(f.want))
	}
	if err != nil && !errors.Is(err, ErrDamaged) {
		t.Errorf("%s: scan: not a DamagedError: %v", what, err)
	}
	return false
}

// Issue 13 item 2: single-bit flips in every kind of file of a store copy
// (tables, value log, write-ahead log, MANIFEST) never give ok with altered
// data, a missing item, or a panic: the store is refused or the read fails,
// naming the file.
func TestBitFlipsNeverReturnAlteredData(t *testing.T) {
	closed, crashed, f := snapshots(t)
	rng := rand.New(rand.NewPCG(13, 2))
	cases := []struct {
		snapshot, ext string
		flips         int
	}{
		{closed, tableExt, 25},
		{closed, vlogExt, 12},
		{closed, manifestName, 6},
		{crashed, walExt, 12},
		{crashed, vlogExt, 6},
	}
	for _, c := range cases {
		files := filesWith(t, c.snapshot, c.ext)
		if len(files) == 0 {
			t.Fatalf("no %s file in the snapshot", c.ext)
		}
		refused := 0
		flips := c.flips
		if raceDetector {
			// The race detector finds nothing in this single-threaded
			// matrix and makes each open five times slower: a quarter
			// of the flips keeps CI quick; the full run is without it.
			flips = (flips + 3) / 4
		}
		for i := range flips {
			file := files[i%len(files)]
			end := dataEnd(t, file)
			off := rng.Int64N(end)
			if c.ext == vlogExt && i%2 == 0 {
				off = logHeaderSize + rng.Int64N(min(end-logHeaderSize, 4096)) // the entries' headers too
			}
			dir := t.TempDir()
			copyDir(t, c.snapshot, dir)
			target := filepath.Join(dir, filepath.Base(file))
			flipBit(t, target, off, uint(rng.IntN(8)))
			if assertNeverWrong(t, dir, f, fmt.Sprintf("bit flip in %s at %d", filepath.Base(file), off)) {
				refused++
			}
		}
		t.Logf("%s flips: %d of %d refused at open, the rest failed reads or read intact", c.ext, refused, flips)
	}
}

// Issue 13 item 2: a truncated file, or a missing MANIFEST, never opens as
// a store with items silently missing; a missing MANIFEST is refused (it
// used to open empty and overwrite the tables on close).
func TestTruncationAndMissingManifestAreRefused(t *testing.T) {
	closed, crashed, f := snapshots(t)
	for _, c := range []struct{ snapshot, ext string }{
		{closed, tableExt}, {closed, manifestName}, {closed, vlogExt}, {crashed, walExt},
	} {
		for _, keep := range []float64{0.5, 0.97} {
			dir := t.TempDir()
			copyDir(t, c.snapshot, dir)
			file := filesWith(t, dir, c.ext)[0]
			size := dataEnd(t, file)
			cut := int64(float64(size) * keep)
			if c.ext == walExt && transactionEnds(t, file)[cut] {
				// A log cut exactly where a transaction ends is, byte for
				// byte, what Badger leaves when it reopens a store after
				// a kill: no check can tell the two apart. One byte
				// less is a cut inside an entry, which must be caught.
				cut--
			}
			if err := os.Truncate(file, cut); err != nil {
				t.Fatal(err)
			}
			assertNeverWrong(t, dir, f, fmt.Sprintf("%s cut to %.0f%%", filepath.Base(file), keep*100))
		}
	}

	dir := t.TempDir()
	copyDir(t, closed, dir)
	tables := filesWith(t, dir, tableExt)
	before, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, manifestName)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Dir: dir})
	var d *DamagedError
	if !errors.As(err, &d) || d.File != filepath.Join(dir, manifestName) || !strings.Contains(err.Error(), "engram restore") {
		t.Fatalf("opening without a MANIFEST: got %v, want a DamagedError naming the MANIFEST and engram restore", err)
	}
	after, err := os.ReadFile(tables[0])
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the table changed after a refused open (err %v)", err)
	}
}

// Issue 13 item 2: a damaged write-ahead log can still be opened on
// purpose (engram check --repair): what is dropped is reported.
func TestAcceptTruncationReportsWhatWasDropped(t *testing.T) {
	_, crashed, _ := snapshots(t)
	dir := t.TempDir()
	copyDir(t, crashed, dir)
	wal := filesWith(t, dir, walExt)[0]
	flipBit(t, wal, dataEnd(t, wal)/3, 3)
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("without AcceptTruncation: got %v, want ErrDamaged", err)
	}
	s, err := Open(Options{Dir: dir, AcceptTruncation: true})
	if err != nil {
		t.Fatalf("with AcceptTruncation: %v", err)
	}
	defer func() { _ = s.Close() }()
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], filepath.Base(wal)) || !strings.Contains(w[0], "dropped") {
		t.Fatalf("warnings = %q, want one naming %s and what was dropped", w, filepath.Base(wal))
	}
}

// A kill in the middle of writing an entry leaves a prefix of it after the
// last whole entry: that write was never acknowledged, and the store opens
// with everything acknowledged (kill -9 must keep working).
func TestEntryCutShortByAKillStillOpens(t *testing.T) {
	dir, file, end, f := crashedWAL(t)
	first := firstEntry(t, file)
	n, whole := entryLength(first)
	if !whole {
		t.Fatalf("the first entry is not whole in 4 KiB (%d bytes)", n)
	}
	if _, err := file.WriteAt(first[:n/2], end); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	if assertNeverWrong(t, dir, f, "an entry cut short") {
		t.Fatal("a log ending in an entry cut short was refused")
	}
}

// Go copies a large entry's body before its head, so a kill can leave a
// log whose last entry has its body written and its header still zero.
// That entry was never acknowledged: the store opens without it.
func TestEntryWithItsHeaderNotYetWrittenStillOpens(t *testing.T) {
	dir, file, end, f := crashedWAL(t)
	// An entry of the log longer than 40 bytes (which one comes first
	// depends on when Badger switched logs: it may be a short one).
	ends, _ := walEntryEnds(t, file.Name())
	var first []byte
	for i, e := range ends {
		start := int64(logHeaderSize)
		if i > 0 {
			start = ends[i-1]
		}
		if e-start >= 40 && e-start <= 4096 {
			first = make([]byte, e-start)
			if _, err := file.ReadAt(first, start); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	n, whole := entryLength(first)
	if first == nil || !whole || n < 40 {
		t.Fatalf("no whole entry of 40 bytes or more in the log (%d bytes)", n)
	}
	// Its body, but not its first 32 bytes.
	if _, err := file.WriteAt(first[32:n], end+32); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	if assertNeverWrong(t, dir, f, "an entry whose header was not written") {
		t.Fatal("a log ending in an entry without its header was refused")
	}
}

// A kill between creating a memtable's or value log file and sizing it
// leaves an empty file, which Badger refuses to open; engram opens the
// store.
func TestEmptyLogLeftByAKillStillOpens(t *testing.T) {
	_, crashed, f := snapshots(t)
	dir := t.TempDir()
	copyDir(t, crashed, dir)
	for _, name := range []string{"00099" + walExt, "000099" + vlogExt} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if assertNeverWrong(t, dir, f, "empty logs") {
		t.Fatal("a directory with empty log files was refused")
	}
}

// A kill while Badger writes a new table leaves a partial table file the
// MANIFEST does not list yet. Badger deletes it at open; engram must not
// call the store damaged for it.
func TestUnlistedTableCutShortByAKillStillOpens(t *testing.T) {
	closed, crashed, f := snapshots(t)
	dir := t.TempDir()
	copyDir(t, crashed, dir)
	tables := filesWith(t, closed, tableExt)
	if len(tables) == 0 {
		t.Fatal("the closed snapshot has no table to copy")
	}
	data, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "999999"+tableExt)
	if err := os.WriteFile(orphan, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	if assertNeverWrong(t, dir, f, "an unlisted table cut short") {
		t.Fatal("a directory with an unlisted partial table was refused")
	}
}

// A review found that zeroing the meta byte of a log's last entry (one bit
// of the end-of-transaction marker) made the store open without that
// transaction: a header with any byte set is a header written, and its bad
// checksum is damage.
func TestLastEntryWithAFlippedMetaByteIsRefused(t *testing.T) {
	dir, file, end, f := crashedWAL(t)
	// Find where the last entry starts.
	r := bufio.NewReader(io.NewSectionReader(file, logHeaderSize, end-logHeaderSize))
	last, at := int64(-1), int64(logHeaderSize)
	for {
		n, ok := readLogEntry(r, end-at)
		if !ok {
			break
		}
		last, at = at, at+n
	}
	if last < 0 {
		t.Fatal("the log has no entry")
	}
	if _, err := file.WriteAt([]byte{0}, last); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	if !assertNeverWrong(t, dir, f, "the last entry's meta byte zeroed") {
		t.Error("a log whose last entry lost its meta byte opened")
	}
}

// crashedWAL copies the store a kill left and opens its write-ahead log
// for writing: the copy, the log, where its entries end, and what the
// store should hold.
func crashedWAL(t *testing.T) (dir string, wal *os.File, end int64, f damageFixture) {
	t.Helper()
	_, crashed, f := snapshots(t)
	dir = t.TempDir()
	copyDir(t, crashed, dir)
	path := filesWith(t, dir, walExt)[0]
	end = dataEnd(t, path)
	wal, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return dir, wal, end, f
}

// firstEntry reads the first 4 KiB of a log's entries.
func firstEntry(t *testing.T, wal *os.File) []byte {
	t.Helper()
	first := make([]byte, 4096)
	if _, err := wal.ReadAt(first, logHeaderSize); err != nil {
		t.Fatal(err)
	}
	return first
}

// walEntryEnds returns the offsets where the entries of the write-ahead log
// at path end, each with whether it ends a transaction.
func walEntryEnds(t *testing.T, path string) (ends []int64, finishes []bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(data[logHeaderSize:]))
	off := int64(logHeaderSize)
	for {
		e, ok := readWALEntry(r, int64(len(data))-off)
		if !ok {
			return ends, finishes
		}
		off += e.length
		ends = append(ends, off)
		finishes = append(finishes, e.meta&bitTxn == 0)
	}
}

// transactionEnds is the set of offsets where a transaction of the
// write-ahead log at path ends.
func transactionEnds(t *testing.T, path string) map[int64]bool {
	t.Helper()
	ends, finishes := walEntryEnds(t, path)
	set := map[int64]bool{}
	for i, end := range ends {
		if finishes[i] {
			set[end] = true
		}
	}
	return set
}

// A write-ahead log cut between a transaction's write and the entry that
// ends the transaction is whole entry by entry, but Badger would drop the
// write: it is refused, not opened with the item missing.
func TestAWriteAheadLogCutInsideATransactionIsRefused(t *testing.T) {
	_, crashed, f := snapshots(t)
	dir := t.TempDir()
	copyDir(t, crashed, dir)
	file := filesWith(t, dir, walExt)[0]
	ends, finishes := walEntryEnds(t, file)
	cut := int64(-1)
	for i := len(ends) / 2; i < len(ends); i++ {
		if !finishes[i] {
			cut = ends[i]
			break
		}
	}
	if cut < 0 {
		t.Fatal("no write inside a transaction in the second half of the log")
	}
	if err := os.Truncate(file, cut); err != nil {
		t.Fatal(err)
	}
	if !assertNeverWrong(t, dir, f, fmt.Sprintf("%s cut after a write, before its transaction ends", filepath.Base(file))) {
		t.Error("the store opened; want it refused with a DamagedError naming the log")
	}
}

// entryAt, which tornTail and metaZeroed use to try every offset of a
// tail in place, answers what readLogEntry answers for a reader over the
// same bytes: on whole entries, on entries cut short, with a bit flipped,
// and on bytes that are no entry at all.
func TestEntryAtAgreesWithReadLogEntry(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	entry := func(meta byte, key, value []byte, expires uint64) []byte {
		b := []byte{meta, 0}
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = binary.AppendUvarint(b, uint64(len(value)))
		b = binary.AppendUvarint(b, expires)
		b = append(append(b, key...), value...)
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	var inputs [][]byte
	for range 300 {
		e := entry(byte(1+rng.UintN(255)), random(rng.IntN(40)), random(rng.IntN(300)), rng.Uint64N(1<<40))
		inputs = append(inputs, e, append(slices.Clone(e), random(rng.IntN(20))...), e[:rng.IntN(len(e))])
		flipped := slices.Clone(e)
		flipped[rng.IntN(len(flipped))] ^= 1 << rng.UintN(8)
		inputs = append(inputs, flipped, random(rng.IntN(64)))
	}
	zero := entry(0, nil, nil, 0)
	inputs = append(inputs, zero, make([]byte, 16), nil, []byte{1},
		[]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0},       // a key length over 2^64
		[]byte{1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}) // a value length over the room
	whole := 0
	for _, b := range inputs {
		_, want := readLogEntry(bufio.NewReader(bytes.NewReader(b)), int64(len(b)))
		if got := entryAt(b); got != want {
			t.Errorf("entryAt(%x) = %v, readLogEntry says %v", b, got, want)
		}
		if want {
			whole++
		}
	}
	if whole < 300 {
		t.Errorf("only %d of %d inputs were whole entries: the comparison tells little", whole, len(inputs))
	}
}

// A damaged value read inside an Update is the *DamagedError a View
// gives, saying which value could not be read and naming the store: the
// transaction knows its store (it once did not, and naming the file
// dereferenced nil, reported as a panic inside Badger).
func TestADamagedValueReadInAnUpdateIsADamagedError(t *testing.T) {
	closed, _, _ := snapshots(t)
	dir := t.TempDir()
	copyDir(t, closed, dir)
	for _, file := range filesWith(t, dir, vlogExt) {
		if end := dataEnd(t, file); end > 1<<20 {
			flipBit(t, file, end/2, 2) // inside a large value
		}
	}
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	var d *DamagedError
	for _, key := range []string{"big/0", "big/1"} {
		err := s.Update(t.Context(), func(tx *Tx) error {
			_, err := tx.Get([]byte(key))
			return err
		})
		if err == nil {
			continue // the flip hit the other value
		}
		if !errors.As(err, &d) || !strings.Contains(err.Error(), "could not be read") || !strings.HasPrefix(d.File, dir) {
			t.Fatalf("reading %s in an Update: %v (file %q); want a DamagedError saying the value could not be read", key, err, d.File)
		}
		return
	}
	t.Fatal("no large value was damaged: the test flips the wrong bytes")
}
