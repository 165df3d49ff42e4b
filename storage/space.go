package storage

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrFull: the data directory's file system has too little free space to
// write safely. Reads still work; test for it with errors.Is, and read the
// *FullError in the chain for the figures.
var ErrFull = errors.New("storage full")

// FullError says how much space is free and how much engram needs.
type FullError struct {
	Dir  string
	Free uint64 // bytes free for an unprivileged writer
	Need uint64 // bytes engram keeps free (Options.MinFree, plus the tables' size)
}

func (e *FullError) Error() string {
	return fmt.Sprintf("%v: %s free on %s, engram needs %s free to write safely (a margin for its logs, and the size of its tables for compaction); free space or move --data",
		ErrFull, bytesText(e.Free), e.Dir, bytesText(e.Need))
}

// Unwrap lets errors.Is(err, ErrFull) hold.
func (e *FullError) Unwrap() error { return ErrFull }

// bytesText prints a byte count for people: "12.5 MiB".
func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Statfs returns the bytes free to an unprivileged writer on the file system
// holding path. Options.Statfs replaces it in tests.
type Statfs func(path string) (uint64, error)

// freeSpace is the real Statfs.
func freeSpace(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// DefaultMinFree is the free space a durable store keeps: Badger writes its
// logs and tables through memory maps, and a write into a mapped page the
// file system cannot back kills the process (SIGBUS) rather than returning
// an error. Besides a commit's own writes, Badger may at any time flush a
// full memtable into a table (up to memTableSize) while the next memtable's
// log fills (another memTableSize), and compact tables (a few base tables at
// a time). The margin covers all three.
const DefaultMinFree = 2*memTableSize + 32<<20

// space watches the free space of a durable store's file system.
type space struct {
	dir     string
	statfs  Statfs
	minFree uint64
	// tables is the size of the store's tables, once it is open. Badger
	// compacts in the background whether or not writes are refused, and
	// a compaction writes new tables before it deletes the old: at worst
	// as much again as the tables it merges, so the margin grows with
	// them (a review saw compaction fill a 400 MB tmpfs after writes
	// had stopped at the fixed margin, and die of SIGBUS).
	tables func() uint64

	mu       sync.Mutex
	roomy    time.Time // when free space was last seen at roomyFactor × minFree or more
	refusals int       // writes refused for want of space, since open
}

// A free space of roomyFactor × minFree or more is trusted for roomyFor
// without asking again: filling the rest of the margin that fast would take
// another process writing gigabytes a second. Closer to the limit, every
// write asks (statfs(2) costs about 2 µs, a small commit about 16 µs).
const (
	roomyFactor = 4
	roomyFor    = 50 * time.Millisecond
)

// check returns a *FullError when less than minFree bytes are free.
func (sp *space) check() error {
	if sp == nil {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if time.Since(sp.roomy) < roomyFor {
		return nil
	}
	free, err := sp.statfs(sp.dir)
	if err != nil {
		return fmt.Errorf("storage: measuring the free space of %s: %w", sp.dir, err)
	}
	need := sp.need()
	if free >= roomyFactor*need {
		sp.roomy = time.Now()
	}
	if free < need {
		sp.refusals++
		return &FullError{Dir: sp.dir, Free: free, Need: need}
	}
	return nil
}

// hasRoom reports whether the margin and the tables' size are free, without counting
// a refusal: for the store's own housekeeping (garbage collection), which
// is skipped, not refused, when space is short.
// tables is the size of the store's tables (the caller may hold the
// store's lock, which need's tables function takes).
func (sp *space) hasRoom(tables uint64) bool {
	if sp == nil {
		return true
	}
	free, err := sp.statfs(sp.dir)
	return err == nil && free >= sp.minFree+tables
}

// need is the free space writes leave: the margin, plus what compacting
// every table could take.
func (sp *space) need() uint64 {
	if sp.tables == nil {
		return sp.minFree
	}
	return sp.minFree + sp.tables()
}

// FullRefusals is how many writes this store refused because its file system
// was full (0 for an in-memory store): main's exit status tells it apart.
func (s *Store) FullRefusals() int {
	if s.space == nil {
		return 0
	}
	s.space.mu.Lock()
	defer s.space.mu.Unlock()
	return s.space.refusals
}
