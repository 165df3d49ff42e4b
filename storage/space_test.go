package storage

import (
	"errors"
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
