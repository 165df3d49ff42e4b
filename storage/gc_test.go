package storage

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// gcTestOptions make values go to the value log, in 1 MB files. Close
// compacts what it flushes: a compaction that drops a key's older versions
// is what tells the collector which files are stale.
func gcTestOptions(dir string, tick <-chan time.Time) Options {
	return Options{Dir: dir, GCTick: tick, valueThreshold: 64, valueLogFileSize: 1 << 20, memTableSize: 1 << 20}
}

const gcKeys, gcRounds = 300, 30

func gcValue(k, r int) []byte { return bytes.Repeat(fmt.Appendf(nil, "%04d-%02d|", k, r), 400) }

// openStale opens a store at dir holding gcKeys keys each written gcRounds
// times (about 29 MB of value log, nearly all of it stale), closed once
// so that a compaction has counted the stale values.
func openStale(t *testing.T, dir string, tick <-chan time.Time) *Store {
	t.Helper()
	s, err := Open(gcTestOptions(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	for r := range gcRounds {
		err := s.Update(context.Background(), func(tx *Tx) error {
			for k := range gcKeys {
				if err := tx.Set(fmt.Appendf(nil, "k/%04d", k), gcValue(k, r)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(gcTestOptions(dir, tick)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// diskUsage is DiskUsage(dir), failing the test on an error.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	n, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// lastValuesRead checks that every key reads the value of the last round.
func lastValuesRead(t *testing.T, s *Store) {
	t.Helper()
	got := readAll(t, s)
	for k := range gcKeys {
		if v := got[fmt.Sprintf("k/%04d", k)]; !bytes.Equal(v, gcValue(k, gcRounds-1)) {
			t.Fatalf("k/%04d reads %.20q..., want its last value", k, v)
		}
	}
}

// TestBackgroundCollectionReclaimsValueLogSpace: values overwritten many
// times leave stale copies in the value log; on a tick of its clock, the
// background collector rewrites the stale files and the store's disk
// usage falls, while every key still reads its last value (issue 17: disk
// after 1M updates to the same items).
func TestBackgroundCollectionReclaimsValueLogSpace(t *testing.T) {
	dir := t.TempDir()
	tick := make(chan time.Time)
	s := openStale(t, dir, tick)
	before := diskUsage(t, dir)
	for range 2 { // the second tick is taken once the first pass is over
		select {
		case tick <- time.Time{}:
		case <-time.After(10 * time.Second):
			t.Fatal("no collector takes the store's ticks")
		}
	}
	after := diskUsage(t, dir)
	if after > before/2 {
		t.Errorf("disk usage %d bytes after a tick, %d before: want at most half", after, before)
	}
	lastValuesRead(t, s)
}

// TestCloseCollectsValueLogGarbage: closing a store runs a collection
// pass, so that a store closed after heavy updates leaves no stale value
// log behind.
func TestCloseCollectsValueLogGarbage(t *testing.T) {
	dir := t.TempDir()
	s := openStale(t, dir, make(chan time.Time)) // never ticks
	before := diskUsage(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after := diskUsage(t, dir)
	if after > before/2 {
		t.Errorf("disk usage %d bytes after Close, %d before: want at most half", after, before)
	}
	s, err := Open(gcTestOptions(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	lastValuesRead(t, s)
}
