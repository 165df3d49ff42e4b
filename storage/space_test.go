package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// Badger compacts in the background even while writes are refused, and a
// compaction writes its new tables before it deletes the old: the free
// space writes leave grows with the tables (a review saw compaction fill
// a 400 MB tmpfs after writes stopped at a fixed margin, and die of SIGBUS).
func TestWritesLeaveRoomToCompactEveryTable(t *testing.T) {
	const mib = 1 << 20
	tables := uint64(200 * mib)
	sp := &space{dir: "/data", minFree: 160 * mib,
		statfs: func(string) (uint64, error) { return 300 * mib, nil },
		tables: func() uint64 { return tables }}
	var full *FullError
	if err := sp.check(); !errors.As(err, &full) || full.Need != 360*mib || full.Free != 300*mib {
		t.Fatalf("300 MiB free beside 200 MiB of tables: %v, want a FullError needing 360 MiB", err)
	}
	tables = 100 * mib
	if err := sp.check(); err != nil {
		t.Errorf("300 MiB free beside 100 MiB of tables: %v, want writes allowed", err)
	}
}

// Issue 13 item 6: a store whose file system is already full when engram
// starts opens read-only (ReadOnlyWhenFull) rather than not at all: reads
// work, a transaction that writes nothing succeeds, every write and every
// sequence number is refused with the *FullError and counted, nothing is
// stored, and the next open with room writes again.
func TestFullDiskAtOpenReadsAndRefusesWrites(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	statfs := func(string) (uint64, error) { return free.Load(), nil }
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: statfs})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	free.Store(10 << 20)
	s, err = Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true})
	if err != nil {
		t.Fatalf("opening on a full disk with ReadOnlyWhenFull: %v", err)
	}
	full := s.FullAtOpen()
	if full == nil || full.Free != 10<<20 {
		t.Fatalf("FullAtOpen = %+v, want the free space seen at open", full)
	}
	if v, ok := get(t, s, "a"); !ok || v != "1" {
		t.Fatalf("reading: %q %v", v, ok)
	}
	// A transaction that finds what it would create succeeds.
	err = s.Update(t.Context(), func(tx *Tx) error {
		if _, err := tx.Get([]byte("a")); err == nil {
			return nil
		}
		return tx.Set([]byte("a"), []byte("0"))
	})
	if err != nil {
		t.Fatalf("a transaction that writes nothing: %v", err)
	}
	refusedBefore := s.FullRefusals()
	err = s.Update(t.Context(), func(tx *Tx) error { return tx.Set([]byte("b"), []byte("2")) })
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("writing: %v, want a FullError naming %s", err, dir)
	}
	if err := s.Update(t.Context(), func(tx *Tx) error { return tx.Delete([]byte("a")) }); !errors.Is(err, ErrFull) {
		t.Fatalf("deleting: %v, want ErrFull", err)
	}
	if s.FullRefusals() != refusedBefore+2 {
		t.Errorf("FullRefusals = %d, want %d", s.FullRefusals(), refusedBefore+2)
	}
	seq, err := s.Sequence("ids")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Next(); !errors.Is(err, ErrFull) {
		t.Errorf("a sequence number: %v, want ErrFull", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("closing a read-only store: %v", err)
	}

	// A new store has nothing to read: it is refused.
	if _, err := Open(Options{Dir: t.TempDir(), MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true}); !errors.Is(err, ErrFull) {
		t.Fatalf("creating a store on a full disk: %v, want ErrFull", err)
	}
	// Without the option it is refused, as before; with room it writes.
	if _, err := Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: statfs}); !errors.Is(err, ErrFull) {
		t.Fatalf("opening on a full disk without ReadOnlyWhenFull: %v, want ErrFull", err)
	}
	free.Store(1 << 30)
	s, err = Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.FullAtOpen() != nil {
		t.Fatal("opened read-only with room to write")
	}
	put(t, s, "b", "2")
	if v, ok := get(t, s, "a"); !ok || v != "1" {
		t.Fatalf("a after the read-only run: %q %v", v, ok)
	}
}

// Issue 13 item 6: a store a kill (or a SIGBUS on a full disk) left with
// unfinished write-ahead logs opens read-only on a full file system too:
// the logs are cut after their last whole transaction (which only frees space),
// every acknowledged write reads back, and the store writes again once
// there is room.
func TestKilledStoreOnAFullDiskOpensReadOnly(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	statfs := func(string) (uint64, error) { return free.Load(), nil }
	crashed := killedCopy(t, func(s *Store) {
		for i := range 200 {
			put(t, s, fmt.Sprintf("k%03d", i), fmt.Sprint(i))
		}
	})

	free.Store(10 << 20)
	s, err := Open(Options{Dir: crashed, MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true})
	if err != nil {
		t.Fatalf("opening a killed store on a full disk: %v", err)
	}
	if s.FullAtOpen() == nil {
		t.Fatal("not opened read-only")
	}
	for i := range 200 {
		if v, ok := get(t, s, fmt.Sprintf("k%03d", i)); !ok || v != fmt.Sprint(i) {
			t.Fatalf("k%03d: %q %v, want %d", i, v, ok, i)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	free.Store(1 << 30)
	s, err = Open(Options{Dir: crashed, MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	put(t, s, "k200", "200")
	if v, ok := get(t, s, "k000"); !ok || v != "0" {
		t.Fatalf("k000 once there is room: %q %v", v, ok)
	}
}

// A kill (or a SIGBUS) in the middle of a commit leaves the commit's first
// entries whole and its closing entry unwritten: the write-ahead log is cut
// to the end of the last whole transaction, where Badger's replay stops, so
// the store opens read-only on a full disk; the unfinished commit, never
// acknowledged, is not there (a review found the cut stopped at the last
// whole entry instead, and the store did not open).
func TestStoreKilledMidCommitOnAFullDiskOpensReadOnly(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	statfs := func(string) (uint64, error) { return free.Load(), nil }
	crashed := killedCopy(t, func(s *Store) {
		for i := range 50 {
			put(t, s, fmt.Sprintf("k%03d", i), fmt.Sprint(i))
		}
		err := s.Update(t.Context(), func(tx *Tx) error {
			for _, k := range []string{"m1", "m2", "m3"} {
				if err := tx.Set([]byte(k), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	// Zero the last entry, the one that closes the three-key commit.
	path := filesWith(t, crashed, walExt)[0]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last, end int64 = 0, logHeaderSize
	r := bufio.NewReader(bytes.NewReader(data[end:]))
	for {
		n, ok := readLogEntry(r, int64(len(data))-end)
		if !ok {
			break
		}
		last, end = end, end+n
	}
	clear(data[last:end])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	free.Store(10 << 20)
	s, err := Open(Options{Dir: crashed, MinFree: 100 << 20, Statfs: statfs, ReadOnlyWhenFull: true})
	if err != nil {
		t.Fatalf("opening a store killed mid-commit on a full disk: %v", err)
	}
	defer func() { _ = s.Close() }()
	for i := range 50 {
		if v, ok := get(t, s, fmt.Sprintf("k%03d", i)); !ok || v != fmt.Sprint(i) {
			t.Fatalf("k%03d: %q %v", i, v, ok)
		}
	}
	for _, k := range []string{"m1", "m2", "m3"} {
		if _, ok := get(t, s, k); ok {
			t.Errorf("%s of the unfinished commit is there", k)
		}
	}
}

// killedCopy writes to a new store with write, and returns a copy of its
// directory as a kill -9 would leave it: logs at their preallocated size,
// nothing flushed.
func killedCopy(t *testing.T, write func(s *Store)) string {
	t.Helper()
	live := t.TempDir()
	s, err := Open(Options{Dir: live})
	if err != nil {
		t.Fatal(err)
	}
	write(s)
	crashed := t.TempDir()
	copyDir(t, live, crashed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return crashed
}
