package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
	"golang.org/x/sys/unix"
)

// ErrDamaged: a file of the store failed its checksum or could not be read.
// Test for it with errors.Is; the *DamagedError in the chain names the file.
var ErrDamaged = errors.New("storage damaged")

// DamagedError says which file of a store is damaged and how. engram never
// answers from a damaged file: it refuses to open the store, or fails the
// read, with this error.
type DamagedError struct {
	// File is the damaged file's path, or the directory when Badger did not
	// say which file.
	File string
	// Reason says what is wrong with it.
	Reason string
	// Dropped is how many bytes of a log would be lost by opening anyway
	// (0 when not a log).
	Dropped int64
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%v: %s: %s (run engram check for a full report; engram restore FILE restores a backup into a new directory)",
		ErrDamaged, e.File, e.Reason)
}

// Unwrap lets errors.Is(err, ErrDamaged) hold.
func (e *DamagedError) Unwrap() error { return ErrDamaged }

// Badger's file names (see its memtable.go, value.go, table/table.go).
const (
	manifestName  = "MANIFEST"
	walExt        = ".mem"
	vlogExt       = ".vlog"
	tableExt      = ".sst"
	logHeaderSize = 20 // Badger's vlogHeaderSize: key id and base IV
)

// castagnoli is the CRC Badger checksums its log entries with.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// preflight looks at a data directory before Badger opens it, and refuses
// what Badger would open wrongly: tables without a MANIFEST (Badger would
// start an empty store and, on close, overwrite them), a MANIFEST with an
// unreadable tail (Badger would drop it, then delete the tables it names),
// and a write-ahead or value log with valid entries after a damaged one
// (Badger would drop every later entry without a word). With
// acceptTruncation, damaged log tails are reported in warnings instead, and
// Badger drops them. tables says how the tables were verified, with their
// sums to record (tablesums.go).
func preflight(dir string, acceptTruncation bool) (warnings []string, tables tableReport, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, tables, err
	}
	var logs []string
	hasManifest, hasData := false, false
	lastVlog, lastFid := "", -1
	for _, e := range entries {
		name := e.Name()
		switch ext := filepath.Ext(name); {
		case name == manifestName:
			hasManifest = true
		case ext == tableExt:
			hasData = true
		case ext == walExt:
			if emptyNewest(entries, e) {
				// A kill between creating a memtable's log and sizing it
				// leaves it empty; Badger then refuses to open. Only the
				// newest log can be that one, and it holds nothing.
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return nil, tables, err
				}
				continue
			}
			hasData = true
			logs = append(logs, name)
		case ext == vlogExt:
			if emptyNewest(entries, e) {
				// The same for a value log: a kill between creating and
				// sizing the newest leaves it empty, holding nothing.
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					return nil, tables, err
				}
				continue
			}
			hasData = true
			// Badger replays only the newest value log; older ones are
			// checked when read (VerifyValueChecksum).
			if fid, err := strconv.Atoi(strings.TrimSuffix(name, ext)); err == nil && fid > lastFid {
				lastVlog, lastFid = name, fid
			}
		}
	}
	if hasData && !hasManifest {
		return nil, tables, &DamagedError{File: filepath.Join(dir, manifestName),
			Reason: "missing: the directory holds tables and logs but not the MANIFEST that lists them, so engram will not open it " +
				"(opening would start an empty store over them); restore a backup with engram restore FILE into a new directory, or put the MANIFEST back"}
	}
	if !hasManifest {
		// A new store: no table to verify, and those its first run
		// writes are recorded at close like any run's.
		return nil, tableReport{sums: map[string]tableSum{}}, nil
	}
	listed, err := checkManifest(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, tables, err
	}
	// Badger opens tables in goroutines of its own, where a panic on a
	// damaged one cannot be caught: verify each here first (in full, or
	// by its whole-file sum when it was verified in full before). A table
	// the MANIFEST does not list is one a kill cut off while it was being
	// written; Badger deletes it at open.
	tables = checkTables(dir, tableCheck{listed: listed, known: readTableSums(dir)})
	if tables.bad != "" {
		return nil, tables, &DamagedError{File: tables.bad, Reason: tables.reason}
	}
	if lastVlog != "" {
		logs = append(logs, lastVlog)
	}
	slices.Sort(logs)
	for _, name := range logs {
		path := filepath.Join(dir, name)
		end, dropped, err := scanLog(path)
		if err != nil {
			return nil, tables, &DamagedError{File: path, Reason: err.Error()}
		}
		if dropped == 0 {
			continue
		}
		damage := &DamagedError{File: path, Dropped: dropped,
			Reason: fmt.Sprintf("the log is damaged at byte %d: %d bytes of acknowledged writes after it would be lost "+
				"(engram check --repair drops them and opens the rest)", end, dropped)}
		if !acceptTruncation {
			return nil, tables, damage
		}
		warnings = append(warnings, fmt.Sprintf("%s: dropped %d damaged bytes from byte %d on", path, dropped, end))
	}
	return warnings, tables, nil
}

// emptyNewest reports whether e is an empty file with the highest number
// among the directory's files of its kind: what a kill between creating a
// log and sizing it leaves. An older log cut to nothing is damage, and
// Badger refuses it.
func emptyNewest(entries []os.DirEntry, e os.DirEntry) bool {
	info, err := e.Info()
	if err != nil || info.Size() != 0 {
		return false
	}
	ext := filepath.Ext(e.Name())
	fid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ext))
	if err != nil {
		return false
	}
	for _, o := range entries {
		if filepath.Ext(o.Name()) != ext {
			continue
		}
		if other, err := strconv.Atoi(strings.TrimSuffix(o.Name(), ext)); err == nil && other > fid {
			return false
		}
	}
	return true
}

// checkManifest replays the MANIFEST as Badger will, and calls it damaged
// when Badger would silently drop a part of it.
// It returns the ids of the tables the MANIFEST lists.
func checkManifest(path string) (map[uint64]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &DamagedError{File: path, Reason: err.Error()}
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := f.Stat()
	if err != nil {
		return nil, &DamagedError{File: path, Reason: err.Error()}
	}
	m, end, err := replayManifest(f)
	if err != nil {
		return nil, &DamagedError{File: path, Reason: err.Error()}
	}
	if end < info.Size() {
		return nil, &DamagedError{File: path, Dropped: info.Size() - end,
			Reason: fmt.Sprintf("its last %d bytes are unreadable (truncated or damaged): opening would forget tables and delete them", info.Size()-end)}
	}
	listed := make(map[uint64]bool, len(m.Tables))
	for id := range m.Tables {
		listed[id] = true
	}
	return listed, nil
}

// replayManifest runs Badger's own MANIFEST reader, turning a panic into an error.
func replayManifest(f *os.File) (_ badger.Manifest, end int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable: %v", r)
		}
	}()
	return badger.ReplayManifestFile(f, 0, badger.DefaultOptions(""))
}

// scanLog reads a Badger log file (a memtable's write-ahead log or a value
// log) entry by entry as Badger's replay does, and returns where its valid
// entries end and how many bytes after that are not zero: data Badger's
// replay would drop. Badger preallocates its logs with zeros, so a clean
// log (even after kill -9) has only zeros after its last entry.
func scanLog(path string) (end, dropped int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := info.Size()
	if size < logHeaderSize {
		return 0, 0, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, logHeaderSize, size-logHeaderSize), 1<<16)
	end = logHeaderSize
	for {
		n, ok := readLogEntry(r, size-end)
		if !ok {
			break
		}
		end += n
	}
	// Count the bytes from end to the last non-zero byte.
	last, err := lastNonZero(f, end, size)
	if err != nil {
		return end, 0, err
	}
	if last > end {
		// Only a log still at the size Badger preallocated can end in an
		// entry a kill cut short; a shorter one was cut, a damage.
		torn := false
		if size >= preallocated {
			if torn, err = tornTail(f, end, last); err != nil {
				return end, 0, err
			}
		}
		if !torn {
			dropped = last - end
		}
	}
	if filepath.Ext(path) == walExt && size < preallocated {
		// A write-ahead log shorter than Badger makes it was cut: by
		// Badger or engram to the end of its last whole transaction (see
		// trimWriteAheadLogs), or by damage. A transaction still open at
		// the end is the damage's: Badger would drop its writes.
		committed, err := committedEnd(path)
		if err != nil {
			return end, dropped, err
		}
		if committed < end {
			dropped += end - committed
			end = committed
		}
	}
	return end, dropped, nil
}

// preallocated is the size Badger gives a new log file: twice the memtable
// size for a write-ahead log, twice the value log file size for a value log.
const preallocated = 2 * min(memTableSize, valueLogFileSize)

// maxTorn bounds the tail tornTail reads: one entry of a log (a value-log
// entry holds one value).
const maxTorn = 16 << 20

// tornTail reports whether the bytes f[end:last] (the last non-zero one
// at last-1) are an entry cut short by a kill in the middle of writing it:
// its header says it is longer than what is there, and no valid entry
// starts inside it. Such an entry was never acknowledged, and Badger is
// right to drop it. Anything else after the last valid entry is damage.
func tornTail(f *os.File, end, last int64) (bool, error) {
	if last-end > maxTorn {
		return false, nil
	}
	buf := make([]byte, last-end)
	if _, err := f.ReadAt(buf, end); err != nil && err != io.EOF {
		return false, err
	}
	// Go copies a large entry head and tail last, so a kill can leave its
	// body written and its first bytes still zero: a header not written
	// yet. Every entry Badger logs has a non-zero meta byte, so a zero one
	// is that, unless some meta byte makes the entry whole and valid: then
	// it was written, and a flipped bit zeroed its meta.
	if buf[0] != 0 || metaZeroed(buf) {
		if n, whole := entryLength(buf); whole || n < 0 {
			return false, nil // a complete entry with a bad checksum, or no entry at all
		}
	}
	for off := 1; off < len(buf); off++ {
		if entryAt(buf[off:]) {
			return false, nil // a valid entry after the bad one: damage
		}
	}
	return true, nil
}

// metaZeroed reports whether b, an entry whose meta byte is zero, is a
// whole valid entry with some other meta byte.
func metaZeroed(b []byte) bool {
	fixed := slices.Clone(b)
	for m := 1; m < 256; m++ {
		fixed[0] = byte(m)
		if entryAt(fixed) {
			return true
		}
	}
	return false
}

// entryLength decodes the header at b's start and returns the entry's full
// length and whether b holds all of it; -1 for a header that is not one.
// A header cut short counts as an entry longer than b.
func entryLength(b []byte) (int64, bool) {
	if len(b) < 2 {
		return int64(len(b)) + 1, false
	}
	r := bytes.NewReader(b[2:])
	klen, err1 := binary.ReadUvarint(r)
	vlen, err2 := binary.ReadUvarint(r)
	_, err3 := binary.ReadUvarint(r)
	if err := errors.Join(err1, err2, err3); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return int64(len(b)) + 1, false
		}
		return -1, false
	}
	if klen > 1<<16 {
		return -1, false
	}
	n := int64(len(b)-r.Len()) + int64(klen) + int64(vlen) + crc32.Size
	return n, n <= int64(len(b))
}

// readLogEntry reads one entry: a header (meta, user meta, uvarint key
// length, value length, expiry), key, value and a CRC32 over all of them.
// It returns the entry's length and whether it was whole, valid and not the
// zero entry that ends a preallocated log.
func readLogEntry(r *bufio.Reader, room int64) (int64, bool) {
	e, ok := readWALEntry(r, room)
	return e.length, ok
}

// entryAt reports what readLogEntry reports for a reader over b (room:
// len(b)): whether b starts with a whole, valid entry that is not the zero
// one. It reads b in place: tornTail tries every offset of a tail, and a
// reader and a copy of the rest at each one made opening a damaged store
// take most of a second.
func entryAt(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	head := 2
	var v [3]uint64 // key length, value length, expiry
	for i := range v {
		x, n := binary.Uvarint(b[head:])
		if n <= 0 {
			return false
		}
		v[i], head = x, head+n
	}
	klen, vlen := v[0], v[1]
	if b[0] == 0 && b[1] == 0 && klen == 0 && vlen == 0 && v[2] == 0 {
		return false
	}
	if klen > 1<<16 || vlen > uint64(len(b)) {
		return false
	}
	end := head + int(klen) + int(vlen)
	if end+crc32.Size > len(b) {
		return false
	}
	return binary.BigEndian.Uint32(b[end:]) == crc32.Checksum(b[:end], castagnoli)
}

// teeByteReader reads bytes one at a time, hashing and counting them.
type teeByteReader struct {
	r *bufio.Reader
	w io.Writer
	n int
}

func (t *teeByteReader) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		_, _ = t.w.Write([]byte{b}) // a hash never fails
		t.n++
	}
	return b, err
}

// lastNonZero returns the offset just after the last non-zero byte in
// f[from:to], or from when they are all zero. It skips the holes of a
// sparse file (Badger's preallocated logs are mostly hole).
func lastNonZero(f *os.File, from, to int64) (int64, error) {
	buf := make([]byte, 1<<16)
	zero := make([]byte, len(buf))
	last := from
	for off := from; off < to; {
		if data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA); err == nil && data > off {
			off = data
		} else if errors.Is(err, unix.ENXIO) {
			break // nothing but a hole up to the end
		}
		if off >= to {
			break
		}
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if !bytes.Equal(buf[:n], zero[:n]) {
			i := n - 1
			for buf[i] == 0 {
				i--
			}
			last = off + int64(i) + 1
		}
		off += int64(n)
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return last, nil
}

// damagedOpen turns Badger's failure to open dir (an error or a panic) into
// a DamagedError naming the file, found by opening every table alone.
func damagedOpen(dir string, cause any) error {
	if bad, reason := findBadTable(dir, nil); bad != "" {
		return &DamagedError{File: bad, Reason: reason}
	}
	file := dir
	msg := fmt.Sprint(cause)
	if m := regexp.MustCompile(regexp.QuoteMeta(dir) + `/[^\s"':]+`).FindString(msg); m != "" {
		file = m
	}
	return &DamagedError{File: file, Reason: "Badger could not open it: " + msg}
}

// findBadTable opens every table file of dir alone (of those listed, when
// listed is not nil), verifying every block's checksum, and returns the
// first that fails and why ("" when none does).
func findBadTable(dir string, listed map[uint64]bool) (file, reason string) {
	r := checkTables(dir, tableCheck{listed: listed})
	return r.bad, r.reason
}

// tableCheck says which tables checkTables verifies, and how.
type tableCheck struct {
	// listed, when not nil, limits the check to the tables it holds (by
	// file number): those the MANIFEST lists.
	listed map[uint64]bool
	// known, when not nil, asks for every passing table's sum (see
	// tablesums.go) and gives the sums of tables verified in full before:
	// a table whose sum is the same is not decompressed again.
	known map[string]tableSum
	// trustKnown takes a known table of the recorded size as verified
	// without reading it (at close: its record is of the bytes verified
	// at open, and the next open compares them again).
	trustKnown bool
}

// tableReport is what checkTables found.
type tableReport struct {
	// bad is the first table in name order that failed ("" when none
	// did), and reason says why.
	bad, reason string
	// sums are those of the tables that passed, when tableCheck.known
	// was given.
	sums map[string]tableSum
	// inFull counts the tables verified block by block.
	inFull int
}

// checkTables verifies the tables of dir as c says, on every core.
func checkTables(dir string, c tableCheck) (r tableReport) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+tableExt)) // the pattern is valid
	slices.Sort(paths)
	// Every table, on every core: at a million items, 2 s of block checks
	// or 0.2 s of sums. The first bad table in name order is reported,
	// whichever finishes first.
	reasons := make([]string, len(paths))
	sums := make([]*tableSum, len(paths))
	var inFull atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf []byte
			for i := range next {
				name := filepath.Base(paths[i])
				id, err := strconv.ParseUint(strings.TrimSuffix(name, tableExt), 10, 64)
				if c.listed != nil && err == nil && !c.listed[id] {
					continue
				}
				known, isKnown := c.known[name]
				if c.trustKnown && isKnown {
					if info, err := os.Stat(paths[i]); err == nil && info.Size() == known.size {
						sums[i] = &known
						continue
					}
				}
				var sum tableSum
				if c.known != nil {
					// The sum is taken before the full check: a byte that
					// changes in between then fails the next open's
					// comparison rather than being trusted.
					if buf == nil {
						buf = make([]byte, 1<<20)
					}
					if sum, err = sumFile(paths[i], buf); err != nil {
						reasons[i] = fmt.Sprintf("unreadable: %v", err)
						continue
					}
					if isKnown && sum == known {
						sums[i] = &sum
						continue
					}
				}
				inFull.Add(1)
				if err := verifyTable(paths[i]); err != nil {
					reasons[i] = err.Error()
					continue
				}
				if c.known != nil {
					sums[i] = &sum
				}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	r.inFull = int(inFull.Load())
	if c.known != nil {
		r.sums = map[string]tableSum{}
		for i, s := range sums {
			if s != nil {
				r.sums[filepath.Base(paths[i])] = *s
			}
		}
	}
	for i, reason := range reasons {
		if reason != "" {
			r.bad, r.reason = paths[i], reason
			break
		}
	}
	return r
}

// verifyTable opens one table read-only and verifies its checksums, turning
// a panic inside Badger into an error.
func verifyTable(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable: %v", r)
		}
	}()
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return err
	}
	t, err := table.OpenTable(mf, table.Options{
		ChkMode: options.OnTableAndBlockRead, BlockSize: 4 << 10, Compression: options.Snappy,
	})
	if err != nil {
		return fmt.Errorf("checksum verification failed: %w", err)
	}
	return t.Close(-1)
}

// trimWriteAheadLogs cuts each write-ahead log in dir to the end of its
// last whole entry, as Badger does when it opens a store to write: a kill
// leaves a log at the size Badger preallocated, and Badger refuses to open
// such a log read-only. Cutting only frees space, so it is safe on a full
// file system, and it drops nothing a kill did not already cut (only the
// zeros after the entries, or a torn last entry); a log with damage inside
// is left alone (preflight has refused or accepted it). A log that cannot
// be cut is left too: Badger then says why it cannot open.
func trimWriteAheadLogs(dir string, logger *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != walExt {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil {
			continue
		}
		// Only a log preflight found whole up to its zeros (or a torn
		// last entry, a kill's) is cut, and only to where Badger's own
		// replay stops: the end of its last whole transaction.
		_, dropped, err := scanLog(path)
		if err != nil || dropped > 0 {
			continue
		}
		end, err := committedEnd(path)
		if err != nil || end >= info.Size() {
			continue
		}
		if err := os.Truncate(path, end); err != nil && logger != nil {
			logger.Warn("storage: could not trim a write-ahead log to open it read-only", "file", path, "err", err, "component", "storage")
		}
	}
}

// Badger's meta bits of a write-ahead log entry: part of a transaction,
// and the entry that ends one (its value the transaction's timestamp).
const (
	bitTxn    = 1 << 6
	bitFinTxn = 1 << 7
)

// committedEnd returns where the write-ahead log at path stops holding
// whole transactions: the offset Badger's replay ends at (logFile.iterate),
// after the last entry that ends a transaction, or after the last entry
// outside any transaction. A transaction a kill cut short, its end entry
// unwritten, was never acknowledged.
func committedEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	if size < logHeaderSize {
		return size, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, logHeaderSize, size-logHeaderSize), 1<<16)
	offset, valid := int64(logHeaderSize), int64(logHeaderSize)
	var open uint64 // the timestamp of the transaction being read (0: none)
	for {
		e, ok := readWALEntry(r, size-offset)
		if !ok {
			return valid, nil
		}
		offset += e.length
		switch {
		case e.meta&bitTxn != 0:
			if len(e.key) < 8 {
				return valid, nil
			}
			ts := math.MaxUint64 - binary.BigEndian.Uint64(e.key[len(e.key)-8:])
			if open == 0 {
				open = ts
			}
			if open != ts {
				return valid, nil
			}
		case e.meta&bitFinTxn != 0:
			ts, err := strconv.ParseUint(string(e.value), 10, 64)
			if err != nil || ts != open {
				return valid, nil
			}
			open, valid = 0, offset
		default:
			if open != 0 {
				return valid, nil
			}
			valid = offset
		}
	}
}

// walEntry is one entry of a write-ahead log, read whole.
type walEntry struct {
	meta       byte
	key, value []byte
	length     int64
}

// readWALEntry reads one entry (see readLogEntry), keeping its meta byte,
// key and value: one value, at most the file's size (room).
func readWALEntry(r *bufio.Reader, room int64) (walEntry, bool) {
	crc := crc32.New(castagnoli)
	tee := &teeByteReader{r: r, w: crc}
	meta, err1 := tee.ReadByte()
	userMeta, err2 := tee.ReadByte()
	klen, err3 := binary.ReadUvarint(tee)
	vlen, err4 := binary.ReadUvarint(tee)
	expires, err5 := binary.ReadUvarint(tee)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return walEntry{}, false
	}
	if meta == 0 && userMeta == 0 && klen == 0 && vlen == 0 && expires == 0 {
		return walEntry{}, false
	}
	if klen > 1<<16 || vlen > uint64(max(room, 0)) {
		return walEntry{}, false // a value length of 2^63 or more would wrap to negative below
	}
	body := int64(klen) + int64(vlen)
	if body+int64(tee.n)+crc32.Size > room {
		return walEntry{}, false
	}
	buf := make([]byte, body)
	if _, err := io.ReadFull(r, buf); err != nil {
		return walEntry{}, false
	}
	_, _ = crc.Write(buf) // a hash never fails
	var sum [crc32.Size]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
		return walEntry{}, false
	}
	return walEntry{meta: meta, key: buf[:klen], value: buf[klen:], length: int64(tee.n) + body + crc32.Size}, true
}
