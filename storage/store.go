// Package storage is engram's only door to Badger: durable or in-memory
// stores, read-only and read-write transactions (the latter retried on
// Badger's transaction conflicts), key-only prefix scans for index lookups,
// and leased sequences. It knows nothing of goals, threads or plans; keys.go
// holds the one table of key prefixes.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/y"
	"golang.org/x/sys/unix"
)

// Errors of opening a store. Each is wrapped in an *OpenError that names the
// directory and says what to do; test for them with errors.Is.
// LockFileName is the data directory's lock file: the engram holding it
// owns the directory, and it holds that engram's pid.
const LockFileName = "engram.lock"

var (
	// ErrLocked: another process (usually another engram) holds the directory.
	ErrLocked = errors.New("data directory is in use")
	// ErrNotDirectory: the path exists and is not a directory.
	ErrNotDirectory = errors.New("data path is not a directory")
	// ErrNotWritable: the directory cannot be written (permissions, read-only file system).
	ErrNotWritable = errors.New("data directory is not writable")
)

// Errors of using a store.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("key not found")
	// ErrConflict: a read-write transaction kept conflicting with concurrent
	// ones after every retry.
	ErrConflict = errors.New("transaction conflict")
	// ErrTooBig: a transaction wrote more than Badger accepts in one commit.
	ErrTooBig = errors.New("transaction too big")
	// ErrStop, returned from a scan callback, ends the scan without error.
	ErrStop = errors.New("stop scan")
	// ErrReadOnly: a write inside View.
	ErrReadOnly = errors.New("storage: write in a read-only transaction (use Update)")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store is closed")
)

// OpenError says why a data directory could not be opened.
type OpenError struct {
	Dir    string
	Reason error  // one of ErrLocked, ErrNotDirectory, ErrNotWritable, or Badger's error
	Hint   string // what the user can do about it
}

func (e *OpenError) Error() string {
	msg := fmt.Sprintf("%v: %s", e.Reason, e.Dir)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap lets errors.Is see the reason.
func (e *OpenError) Unwrap() error { return e.Reason }

// Options configure Open.
type Options struct {
	// Dir is the durable store's directory, created if missing. Ignored when InMemory.
	Dir string
	// InMemory keeps everything in RAM (Badger's in-memory mode); nothing is written to disk.
	InMemory bool
	// SyncWrites makes every commit wait for fsync, so that acknowledged writes
	// survive power loss too, not only a crash of the process.
	SyncWrites bool
	// Logger receives Badger's own messages; nil discards them. They never go
	// to the terminal.
	Logger *slog.Logger
	// MaxRetries bounds how often Update re-runs a transaction that hit a
	// conflict; 0 means the default (48: about two seconds of backoff, so
	// that a long transaction outlasts a stream of short ones on its keys).
	MaxRetries int
	// ReadOnly opens a durable store for reading only (engram check and
	// backup): nothing is written, so it opens on a full file system too.
	ReadOnly bool
	// AcceptTruncation opens a store whose write-ahead or value log is
	// damaged, dropping the damaged entry and every one after it (as Badger
	// would), and lists what was dropped in Warnings. Without it such a
	// store is refused with a *DamagedError.
	AcceptTruncation bool
	// MinFree is the free space, in bytes, below which writes are refused
	// with a *FullError; 0 means DefaultMinFree.
	MinFree uint64
	// ReadOnlyWhenFull opens a store whose file system is below MinFree
	// read-only rather than refusing it: reads work, and every write is
	// refused with the *FullError (Store.FullAtOpen), so that a person can
	// still look at their data. Without it such an Open fails.
	ReadOnlyWhenFull bool
	// Statfs measures free space; nil means the file system's (statfs(2)).
	// Tests inject a fake one.
	Statfs Statfs
	// GCTick starts a value-log garbage collection pass (CollectGarbage)
	// on every receive; nil means a ticker of DefaultGCInterval. Tests
	// inject a channel. Close stops it, then runs a last pass.
	GCTick <-chan time.Time

	// valueThreshold and valueLogFileSize replace Badger's value threshold
	// and the value log's file size when not 0 (tests: small values in
	// small files, so that garbage collection has something to collect).
	valueThreshold   int64
	valueLogFileSize int64
	memTableSize     int64
}

// Store is an open Badger database.
type Store struct {
	db         *badger.DB
	dir        string
	inMemory   bool
	lockFile   *os.File
	maxRetries int
	readOnly   bool
	// fullAtOpen is why a store opened read-only (Options.ReadOnlyWhenFull):
	// every write is refused with it.
	fullAtOpen *FullError
	// space refuses writes when the file system runs out of room (nil in memory).
	space *space
	// warnings are what opening dropped (Options.AcceptTruncation).
	warnings []string
	// tableSums are the sums of the tables verified in full (at open or
	// at an earlier one), recorded again at close with the tables written
	// since (tablesums.go). nil when nothing is recorded (read-only).
	tableSums map[string]tableSum
	// tablesInFull counts the tables open verified block by block (the
	// others matched their sums).
	tablesInFull int
	logger       *slog.Logger
	// lastReadError is Badger's last logged failure to read a value: Badger
	// logs it and hands back an empty value, so Tx checks for that and
	// names the file from this message.
	lastReadError atomic.Pointer[string]

	// gc collects the value log's garbage in the background (nil in
	// memory and read-only).
	gc *collector

	mu        sync.Mutex
	sequences map[string]*Sequence
	closed    bool
}

const (
	lockFileName   = LockFileName
	defaultRetries = 48
	// aloneAfter is how many conflicts a transaction loses before it runs
	// with every other update of the store held back.
	aloneAfter      = 3
	sequenceLeasing = 64
	// memTableSize bounds one transaction (15% of it) and what Badger maps
	// per memtable; DefaultMinFree is derived from it.
	memTableSize = 64 << 20
	// valueLogFileSize is the size of a value log file (Badger maps twice it).
	valueLogFileSize = 64 << 20
)

// Open opens (creating if needed) the store described by opts.
func Open(opts Options) (*Store, error) {
	s := &Store{inMemory: opts.InMemory, readOnly: opts.ReadOnly && !opts.InMemory, maxRetries: opts.MaxRetries, sequences: map[string]*Sequence{}}
	if s.maxRetries <= 0 {
		s.maxRetries = defaultRetries
	}
	bopts := badger.DefaultOptions("").
		WithLogger(badgerLogger{l: opts.Logger, lastReadError: &s.lastReadError}).
		WithSyncWrites(opts.SyncWrites).
		// One transaction may write at most 15% of a memtable: 64 MiB (Badger's
		// default) lets a batch of a few thousand updates commit atomically.
		WithMemTableSize(memTableSize).
		WithNumMemtables(3).
		// Queries answer from the cortex index in memory, so blocks are
		// read for the items of a page, not scanned: a small block cache
		// (Badger needs one with compression) does as well as 32 MB did,
		// which held some 70 MB of the heap at a million items. Table
		// indexes stay in their memory-mapped files: the index cache only
		// serves encrypted stores.
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(0).
		WithValueLogFileSize(valueLogFileSize).
		WithNumCompactors(2).
		// Close compacts level 0 into the tree, dropping the older versions
		// of keys updated since the last compaction (a store updated in
		// place would otherwise leave them on disk until enough new
		// writes came to compact them), and so counting their stale
		// value-log entries for the next collection.
		WithCompactL0OnClose(true).
		// Verify every table block and every value-log value against its
		// checksum when read, so that a damaged file fails the read rather
		// than answering with altered data. (Whole tables are verified
		// before Badger opens them: see preflight.)
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true)
	if opts.valueThreshold > 0 {
		bopts = bopts.WithValueThreshold(opts.valueThreshold)
	}
	if opts.memTableSize > 0 {
		bopts = bopts.WithMemTableSize(opts.memTableSize)
	}
	if opts.valueLogFileSize > 0 {
		bopts = bopts.WithValueLogFileSize(opts.valueLogFileSize)
	}
	if opts.InMemory {
		bopts = bopts.WithInMemory(true)
	} else {
		if opts.Dir == "" {
			return nil, errors.New("storage: no data directory given")
		}
		dir, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("storage: data directory %q: %w", opts.Dir, err)
		}
		s.dir = dir
		if err := prepareDir(dir); err != nil {
			return nil, err
		}
		lock, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		s.lockFile = lock
		bopts = bopts.WithDir(dir).WithValueDir(dir)
		if err := s.beforeOpen(opts); err != nil {
			s.unlock()
			return nil, err
		}
		bopts = bopts.WithReadOnly(s.readOnly)
	}
	db, err := openBadger(bopts)
	if err != nil {
		s.unlock()
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, &OpenError{Dir: s.dir, Reason: ErrNotWritable, Hint: "fix its permissions or choose another with --data"}
		}
		if s.fullAtOpen != nil && truncateNeeded(err) {
			// Reading only needs the logs clean; cleaning them needs room.
			return nil, fmt.Errorf("%w (and its logs end in writes an earlier engram did not close, so it cannot be opened read-only either)", s.fullAtOpen)
		}
		if s.readOnly && truncateNeeded(err) {
			return nil, &OpenError{Dir: s.dir, Reason: err,
				Hint: "its logs end in writes an earlier engram did not close; open it once with engram (which needs free space) before reading it read-only"}
		}
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENOMEM) {
			// Our lock is held and the directory is writable: what else
			// stops Badger is a damaged file.
			return nil, damagedOpen(s.dir, err)
		}
		return nil, &OpenError{Dir: s.dir, Reason: err, Hint: "see the log file for Badger's messages"}
	}
	s.db = db
	if s.readOnly {
		s.tableSums = nil
	} else if s.tableSums != nil {
		s.recordTableSums()
	}
	if s.space != nil {
		s.space.tables = s.tableBytes
	}
	if !s.inMemory && !s.readOnly {
		s.startGC(opts.GCTick)
	}
	return s, nil
}

// truncateNeeded reports Badger's refusal to open read-only a log that
// ends in unwritten room (a kill left it): Badger wraps the error in a way
// errors.Is does not see through, so its text is matched.
func truncateNeeded(err error) bool {
	return errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error())
}

// tableBytes is the size on disk of the store's tables: what compaction
// may have to rewrite.
func (s *Store) tableBytes() uint64 {
	// Close unmaps the tables: reading their indexes after (or while) it
	// runs faults. A closed store writes nothing, so it needs no room.
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tableBytesLocked()
}

// tableBytesLocked is tableBytes for a caller holding s.mu.
func (s *Store) tableBytesLocked() uint64 {
	if s.closed {
		return 0
	}
	var n uint64
	for _, t := range s.db.Tables() {
		n += uint64(t.OnDiskSize)
	}
	return n
}

// beforeOpen refuses a damaged directory and, unless reading only, a full
// file system, before Badger touches either.
func (s *Store) beforeOpen(opts Options) error {
	warnings, tables, err := preflight(s.dir, opts.AcceptTruncation)
	if err != nil {
		return err
	}
	s.warnings, s.tableSums, s.tablesInFull, s.logger = warnings, tables.sums, tables.inFull, opts.Logger
	for _, w := range warnings {
		if opts.Logger != nil {
			opts.Logger.Warn("storage: opened a damaged log: "+w, "component", "storage")
		}
	}
	if s.readOnly {
		return nil
	}
	s.space = &space{dir: s.dir, statfs: opts.Statfs, minFree: opts.MinFree}
	if s.space.statfs == nil {
		s.space.statfs = freeSpace
	}
	if s.space.minFree == 0 {
		s.space.minFree = DefaultMinFree
	}
	// Badger writes as it opens (a new log, tables for the logs it
	// replays): on a full file system that would be a SIGBUS.
	err = s.space.check()
	var full *FullError
	if errors.As(err, &full) && opts.ReadOnlyWhenFull && hasManifest(s.dir) {
		if opts.Logger != nil {
			opts.Logger.Warn("storage: opened read-only: "+full.Error(), "component", "storage")
		}
		s.readOnly, s.fullAtOpen = true, full
		trimWriteAheadLogs(s.dir, opts.Logger)
		return nil
	}
	return err
}

// hasManifest reports whether dir holds a store already (a new one has
// nothing to read, and cannot be created read-only).
func hasManifest(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "MANIFEST"))
	return err == nil
}

// RefuseWrite counts a write refused because the store was opened
// read-only for want of space, and returns the *FullError to refuse it
// with; nil when the store writes. For writes that go with this store's but
// land elsewhere (an in-memory conversation, whose trace and directory
// entries are here).
func (s *Store) RefuseWrite() error {
	if s.fullAtOpen == nil {
		return nil
	}
	s.space.mu.Lock()
	s.space.refusals++
	s.space.mu.Unlock()
	return s.fullAtOpen
}

// Writable reports whether the store takes writes: opened neither
// read-only nor read-only for want of space.
func (s *Store) Writable() bool { return !s.readOnly && s.fullAtOpen == nil }

// FullAtOpen is why the store was opened read-only (Options.ReadOnlyWhenFull):
// its file system was too full to write. Nil when it writes.
func (s *Store) FullAtOpen() *FullError { return s.fullAtOpen }

// errBadgerPanic marks a panic inside Badger, caught.
var errBadgerPanic = errors.New("panic inside Badger")

// openBadger opens Badger, turning a panic (Badger panics on some damaged
// tables) into an error.
func openBadger(bopts badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errBadgerPanic, r)
		}
	}()
	return badger.Open(bopts)
}

// Warnings are what opening had to drop from damaged logs
// (Options.AcceptTruncation); empty for a healthy store.
func (s *Store) Warnings() []string { return slices.Clone(s.warnings) }

// prepareDir makes sure dir is a directory engram can write to.
func prepareDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err == nil && !info.IsDir():
		what := "a regular file"
		switch m := info.Mode(); {
		case m&fs.ModeCharDevice != 0: // /dev/null
			what = "a character device"
		case m&fs.ModeDevice != 0:
			what = "a device"
		case m&fs.ModeNamedPipe != 0:
			what = "a named pipe"
		case !m.IsRegular():
			what = "not a directory"
		}
		return &OpenError{Dir: dir, Reason: ErrNotDirectory, Hint: "it is " + what + "; choose a directory with --data"}
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			if errors.Is(err, syscall.ENOTDIR) {
				return notDirectory(dir)
			}
			return notWritable(dir, err)
		}
	case errors.Is(err, syscall.ENOTDIR):
		return notDirectory(dir)
	case err != nil:
		return notWritable(dir, err)
	}
	// Creating a file is the only reliable test of writability (access(2)
	// says yes to root, and to read-only mounts until the first write).
	probe, err := os.CreateTemp(dir, ".engram-write-probe-*")
	if err != nil {
		return notWritable(dir, err)
	}
	_ = probe.Close()           // empty: nothing to lose
	_ = os.Remove(probe.Name()) // best effort: a leftover empty probe file harms nothing
	return nil
}

// notDirectory is the error for a path below a regular file (ENOTDIR).
func notDirectory(dir string) error {
	return &OpenError{Dir: dir, Reason: ErrNotDirectory, Hint: "a part of the path is a regular file; choose a directory with --data"}
}

func notWritable(dir string, err error) error {
	reason := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Err
	}
	return &OpenError{Dir: dir, Reason: fmt.Errorf("%w: %v", ErrNotWritable, reason), Hint: "fix its permissions or choose another with --data"}
}

// lockDir takes an exclusive, non-blocking lock on dir/engram.lock and writes
// our pid into it, so a second engram can say who holds the directory.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, notWritable(dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		_ = f.Close() // nothing was written to it
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &OpenError{Dir: dir, Reason: ErrLocked,
				Hint: "another engram" + holder + " has it open; close that one or choose another directory with --data"}
		}
		return nil, &OpenError{Dir: dir, Reason: fmt.Errorf("locking %s: %w", path, err)}
	}
	if err := f.Truncate(0); err == nil {
		// Best effort: the pid only names the holder in another engram's
		// error; the lock is held either way.
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func (s *Store) unlock() {
	if s.lockFile != nil {
		// Closing the file releases the lock as well, and the file holds
		// nothing but our pid: neither error would change anything.
		_ = unix.Flock(int(s.lockFile.Fd()), unix.LOCK_UN)
		_ = s.lockFile.Close()
		s.lockFile = nil
	}
}

// Dir is the store's absolute directory, or "" for an in-memory store.
func (s *Store) Dir() string { return s.dir }

// InMemory reports whether nothing is written to disk.
func (s *Store) InMemory() bool { return s.inMemory }

// Close stops the background garbage collector, runs a last pass of it,
// releases sequences, closes Badger and unlocks the directory. It is safe
// to call more than once.
func (s *Store) Close() error {
	s.stopGC() // before the lock: a pass under way takes it
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var errs []error
	if s.gc != nil && s.space.hasRoom(s.tableBytesLocked()) {
		if _, err := s.collect(); err != nil {
			errs = append(errs, err)
		}
	}
	s.closed = true
	for _, seq := range s.sequences {
		if seq.seq == nil {
			continue // a read-only store's
		}
		if err := seq.seq.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, err)
	} else if s.tableSums != nil {
		// The tables this run wrote (flushes, compactions, the last
		// compaction of level 0) are verified now, so that the next open
		// only sums them.
		report := checkTables(s.dir, tableCheck{known: s.tableSums, trustKnown: true})
		if report.bad != "" && s.logger != nil {
			// Not recorded: the next open checks it in full and refuses
			// the store, naming it.
			s.logger.Warn("storage: a table this run wrote failed its check at close: "+report.reason, "file", report.bad, "component", "storage")
		}
		s.tableSums = report.sums
		s.recordTableSums()
	}
	s.unlock()
	return errors.Join(errs...)
}

// recordTableSums writes the sums of the tables verified in full. Failing
// costs only time (the next open verifies those tables in full again), so
// it is logged, not returned.
func (s *Store) recordTableSums() {
	if err := writeTableSums(s.dir, s.tableSums); err != nil && s.logger != nil {
		s.logger.Warn("storage: could not record the verified tables' sums: "+err.Error(), "component", "storage")
	}
}

// isClosed reports whether Close has run.
func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// View runs fn in a read-only transaction. Use it for every query: an
// iterator inside a read-write transaction would put every key it visits
// into the conflict set.
func (s *Store) View(fn func(tx *Tx) error) error {
	return s.mapErr(s.db.View(func(txn *badger.Txn) error { return fn(&Tx{txn: txn, store: s}) }))
}

// Update runs fn in a read-write transaction and commits it. When the commit
// conflicts with a concurrent transaction, fn runs again on fresh reads (with
// a short, jittered backoff), up to the store's retry limit; fn must therefore
// have no effects outside tx. Either everything fn wrote is committed or
// nothing is.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if s.fullAtOpen != nil {
		return s.updateWhenFull(fn)
	}
	if s.readOnly {
		return fmt.Errorf("%w: the store was opened read-only", ErrReadOnly)
	}
	if s.isClosed() {
		return ErrClosed
	}
	if err := s.space.check(); err != nil {
		return err
	}
	backoff := 200 * time.Microsecond
	for attempt := 1; ; attempt++ {
		var tx *Tx
		err := s.db.Update(func(txn *badger.Txn) error {
			tx = &Tx{txn: txn, writable: true, store: s}
			if err := fn(tx); err != nil {
				return err
			}
			tx.beforeCommit()
			return nil
		})
		tx.afterCommit(err == nil)
		if !errors.Is(err, badger.ErrConflict) {
			return s.mapErr(err)
		}
		if attempt >= s.maxRetries {
			return fmt.Errorf("%w: still conflicting after %d attempts", ErrConflict, attempt)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 50*time.Millisecond)
	}
}

// updateWhenFull runs fn on a store opened read-only for want of space:
// on a snapshot, each write refused with the *FullError. A transaction that
// writes nothing (one that creates what is missing, and finds it there)
// succeeds, so that reading goes on.
func (s *Store) updateWhenFull(fn func(tx *Tx) error) error {
	var tx *Tx
	err := s.db.View(func(txn *badger.Txn) error {
		tx = &Tx{txn: txn, store: s, refuse: s.fullAtOpen}
		return fn(tx)
	})
	tx.afterCommit(false) // nothing was written
	if errors.Is(err, ErrFull) {
		s.space.mu.Lock()
		s.space.refusals++
		s.space.mu.Unlock()
	}
	return s.mapErr(err)
}

// mapErr is the package's mapErr, with a *DamagedError that names no file
// given the file of this store that Badger's message names.
func (s *Store) mapErr(err error) error {
	err = mapErr(err)
	var d *DamagedError
	if errors.As(err, &d) && d.File == "" {
		d.File = s.damagedFile(d.Reason)
	}
	return err
}

// damagedFile is the file of the store a Badger message names, or the
// store's directory when it names none.
func (s *Store) damagedFile(msg string) string {
	if s.dir == "" {
		return "(in-memory store)"
	}
	if m := regexp.MustCompile(regexp.QuoteMeta(s.dir) + `/[^\s"':]+`).FindString(msg); m != "" {
		return m
	}
	return s.dir
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrDamaged):
		return err
	case errors.Is(err, y.ErrChecksumMismatch), errors.Is(err, errBadgerPanic):
		return &DamagedError{Reason: err.Error()}
	case errors.Is(err, badger.ErrDBClosed):
		return ErrClosed
	case errors.Is(err, badger.ErrTxnTooBig):
		return fmt.Errorf("%w: split the change into smaller ones", ErrTooBig)
	case strings.HasPrefix(err.Error(), "Key with size"), strings.HasPrefix(err.Error(), "Value with size"):
		// Badger appends a hex dump of the data; keep only its first line.
		first, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("%w: %s", ErrTooBig, strings.TrimSuffix(strings.TrimSpace(first), " Key:"))
	}
	return err
}

// Sequence returns the named leased counter, creating it on first use.
// Numbers are unique and increasing across restarts; a crash may skip a few.
func (s *Store) Sequence(name string) (*Sequence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if seq, ok := s.sequences[name]; ok {
		return seq, nil
	}
	if s.readOnly {
		// Badger leases sequences by writing; a read-only store hands
		// out none, and says why when asked.
		var refuse error = fmt.Errorf("%w: the store was opened read-only", ErrReadOnly)
		if s.fullAtOpen != nil {
			refuse = s.fullAtOpen
		}
		seq := &Sequence{refuse: refuse}
		s.sequences[name] = seq
		return seq, nil
	}
	bs, err := s.db.GetSequence(Key(PrefixSeq, name), sequenceLeasing)
	if err != nil {
		return nil, fmt.Errorf("storage: sequence %s: %w", name, err)
	}
	seq := &Sequence{seq: bs}
	s.sequences[name] = seq
	return seq, nil
}

// Sequence hands out increasing numbers starting at 1.
type Sequence struct {
	seq    *badger.Sequence
	refuse error // why a read-only store's sequence has no numbers
}

// Next returns the next number (ErrClosed once the store is closed and the
// current lease is used up).
func (q *Sequence) Next() (uint64, error) {
	if q.refuse != nil {
		return 0, q.refuse
	}
	n, err := q.seq.Next()
	if err != nil {
		return 0, fmt.Errorf("storage: sequence: %w", mapErr(err))
	}
	return n + 1, nil
}

// badgerLogger sends Badger's messages to engram's log, never the terminal.
type badgerLogger struct {
	l             *slog.Logger
	lastReadError *atomic.Pointer[string]
}

func (b badgerLogger) log(level slog.Level, format string, args ...any) {
	if level == slog.LevelError && strings.HasPrefix(format, "Unable to read") {
		msg := fmt.Sprintf(format, args...)
		b.lastReadError.Store(&msg)
	}
	if b.l == nil {
		return
	}
	b.l.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
}

func (b badgerLogger) Errorf(f string, a ...any)   { b.log(slog.LevelError, f, a...) }
func (b badgerLogger) Warningf(f string, a ...any) { b.log(slog.LevelWarn, f, a...) }
func (b badgerLogger) Infof(f string, a ...any)    { b.log(slog.LevelInfo, f, a...) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.log(slog.LevelDebug, f, a...) }
