package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// openClose opens the store in dir and closes it, returning how many
// tables the open verified block by block.
func openClose(t *testing.T, dir string) int {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	n := s.tablesInFull
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// A table verified in full once is, at the next open, only compared with
// its recorded whole-file sum: the close that wrote the tables verified
// and recorded them, so reopening decompresses none of them.
func TestOpenOnlySumsTablesVerifiedBefore(t *testing.T) {
	dir := closedStore(t)
	tables := filesWith(t, dir, tableExt)
	if len(tables) == 0 {
		t.Fatal("no table in the store")
	}
	if n := openClose(t, dir); n != 0 {
		t.Fatalf("reopening verified %d of %d unchanged tables in full, want none", n, len(tables))
	}
	sums := readTableSums(dir)
	buf := make([]byte, 4096)
	for _, path := range filesWith(t, dir, tableExt) {
		want, err := sumFile(path, buf)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := sums[filepath.Base(path)]; !ok || got != want {
			t.Errorf("%s: recorded %+v (recorded: %v), want %+v", filepath.Base(path), got, ok, want)
		}
	}
}

// A sums file that is damaged, cut or of another format is ignored: every
// table is verified in full again, the store opens, and the file is
// written anew.
func TestDamagedSumsFileMeansFullVerification(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"a flipped byte": func(b []byte) []byte { b[len(tableSumsHeader)+3] ^= 1; return b },
		"cut":            func(b []byte) []byte { return b[:len(b)-12] },
		"another format": func(b []byte) []byte { return append([]byte("engram table sums 9\n"), b[len(tableSumsHeader):]...) },
		"empty":          func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			dir := closedStore(t)
			path := filepath.Join(dir, tableSumsName)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(raw), 0o600); err != nil {
				t.Fatal(err)
			}
			tables := len(filesWith(t, dir, tableExt))
			if n := openClose(t, dir); n != tables {
				t.Fatalf("verified %d of %d tables in full, want all", n, tables)
			}
			if n := openClose(t, dir); n != 0 {
				t.Fatalf("the next open verified %d tables in full: the sums were not written anew", n)
			}
		})
	}
}

// A table whose sum is not the recorded one (here the record is changed,
// as rot would change the table's bytes) is verified in full again, and
// its sum recorded anew when it passes.
func TestTableWithAnotherSumIsVerifiedInFullAgain(t *testing.T) {
	dir := closedStore(t)
	sums := readTableSums(dir)
	name := filepath.Base(filesWith(t, dir, tableExt)[0])
	good := sums[name]
	sums[name] = tableSum{size: good.size, crc: good.crc ^ 1}
	if err := writeTableSums(dir, sums); err != nil {
		t.Fatal(err)
	}
	if n := openClose(t, dir); n != 1 {
		t.Fatalf("verified %d tables in full, want the one whose sum differs", n)
	}
	if got := readTableSums(dir)[name]; got != good {
		t.Fatalf("recorded %+v for it after, want its sum %+v", got, good)
	}
}

// A new store's first run records the tables its close wrote, as every
// later run does: the open after creating a store (or restoring a backup
// into a new directory, which is the same) then sums its tables rather
// than verifying them all in full.
func TestNewStoresTablesAreRecordedAtItsFirstClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	writeFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tables := len(filesWith(t, dir, tableExt))
	if tables == 0 {
		t.Fatal("no table in the store")
	}
	if n := openClose(t, dir); n != 0 {
		t.Fatalf("the open after a new store's first run verified %d of %d tables in full, want none", n, tables)
	}
}

// Failing to record the sums (here the record's name is taken by a
// directory, as a full disk fails the write) leaves no temporary file
// behind in the data directory: the store still opens and closes.
func TestFailedSumsRecordLeavesNoTemporaryFile(t *testing.T) {
	dir := closedStore(t)
	path := filepath.Join(dir, tableSumsName)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	openClose(t, dir)
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("%s.tmp is left behind (stat: %v)", tableSumsName, err)
	}
}
