package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// readAll returns every key and value of the store at dir.
func readAll(t *testing.T, s *Store) map[string][]byte {
	t.Helper()
	got := map[string][]byte{}
	if err := s.View(func(tx *Tx) error {
		return tx.Scan(Prefix(nil), func(k, v []byte) error { got[string(k)] = v; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// Issue 13 item 2: backup then restore into a new directory gives back
// every key and value; restore refuses a non-empty directory and a damaged
// backup, writing nothing.
func TestBackupRestoreRoundTripPreservesEverything(t *testing.T) {
	src := openDurable(t, t.TempDir())
	f := writeFixture(t, src)
	if _, err := src.Verify(); err != nil {
		t.Fatalf("Verify of a healthy store: %v", err)
	}
	file := filepath.Join(t.TempDir(), "engram.backup")
	if err := src.BackupTo(file); err != nil {
		t.Fatal(err)
	}
	if err := src.BackupTo(file); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second backup over the first: %v, want a refusal", err)
	}

	dir := filepath.Join(t.TempDir(), "restored")
	if err := RestoreFrom(file, Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if err := RestoreFrom(file, Options{Dir: dir}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("restoring into a non-empty directory: %v, want ErrNotEmpty", err)
	}
	restored := openDurable(t, dir)
	got := readAll(t, restored)
	for k, v := range f.want {
		if !bytes.Equal(got[k], v) {
			t.Errorf("restored %s differs", k)
		}
	}
	if len(got) != len(f.want) {
		t.Errorf("restored %d keys, want %d", len(got), len(f.want))
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 4
	bad := filepath.Join(t.TempDir(), "bad.backup")
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if err := RestoreFrom(bad, Options{Dir: empty}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("restoring a damaged backup: %v, want ErrDamaged", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("a refused restore left %d files", len(entries))
	}
}

// Issue 13 item 6: when the file system is nearly full, writes are refused
// with a FullError naming the free space and the directory, reads go on,
// nothing crashes, and writing resumes once space is freed.
func TestFullDiskRefusesWritesAndKeepsServingReads(t *testing.T) {
	var free atomic.Uint64
	free.Store(300 << 20) // under 4 × MinFree: every write asks
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: func(string) (uint64, error) { return free.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	put(t, s, "a", "1")

	free.Store(99 << 20)
	err = s.Update(t.Context(), func(tx *Tx) error { return tx.Set([]byte("b"), []byte("2")) })
	var full *FullError
	if !errors.As(err, &full) || !errors.Is(err, ErrFull) || full.Free != 99<<20 || !strings.Contains(err.Error(), dir) {
		t.Fatalf("writing on a full disk: %v, want a FullError naming %s", err, dir)
	}
	if s.FullRefusals() != 1 {
		t.Fatalf("FullRefusals = %d, want 1", s.FullRefusals())
	}
	if v, ok := get(t, s, "a"); !ok || v != "1" {
		t.Fatalf("reading on a full disk: %q %v", v, ok)
	}
	if _, ok := get(t, s, "b"); ok {
		t.Fatal("the refused write was stored")
	}

	free.Store(500 << 20)
	put(t, s, "b", "2")
	if v, ok := get(t, s, "b"); !ok || v != "2" {
		t.Fatalf("writing after space was freed: %q %v", v, ok)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening on a full file system is refused before Badger writes.
	free.Store(1 << 20)
	if _, err := Open(Options{Dir: dir, MinFree: 100 << 20, Statfs: func(string) (uint64, error) { return free.Load(), nil }}); !errors.Is(err, ErrFull) {
		t.Fatalf("opening on a full disk: %v, want ErrFull", err)
	}
	ro, err := Open(Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatalf("opening read-only: %v", err)
	}
	defer func() { _ = ro.Close() }()
	if v, ok := get(t, ro, "b"); !ok || v != "2" {
		t.Fatalf("reading read-only: %q %v", v, ok)
	}
}

// BenchmarkFreeSpaceCheck is what every Update now adds: one statfs(2).
func BenchmarkFreeSpaceCheck(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := freeSpace(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate is one small durable commit, the free-space check included.
func BenchmarkUpdate(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for b.Loop() {
		if err := s.Update(b.Context(), func(tx *Tx) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
			b.Fatal(err)
		}
	}
}
