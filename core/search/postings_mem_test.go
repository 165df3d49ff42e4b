package search

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/engram-console/engram/storage"
)

// A list Postings returns holds each document's id, not the whole key it
// was read from: memory's remember keeps such lists in memory (its term
// cache, bounded by a count of postings), and a key under a long space and
// term is several times the id.
func TestPostingsHoldOnlyTheirDocumentIDs(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "memory/a-store-whose-name-is-long-enough-to-matter-" + fmt.Sprint(60)}
	// 5,000 postings (20,000 before: slow to write under -race) measure
	// the same bytes per posting: what is kept grows with n (the list's
	// slack from appending is at most a quarter of it at any n), and the
	// heap's noise of a few KB is under 2 bytes a posting against a limit
	// of 80 and the ~96 more that whole keys would take.
	const n = 5_000
	for chunk := 0; chunk < n; chunk += 1000 {
		err := s.Update(context.Background(), func(tx *storage.Tx) error {
			for i := chunk; i < chunk+1000; i++ {
				if _, err := ix.Add(tx, fmt.Sprintf("item%06d", i), "launch review", 0); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var list []Posting
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	err := s.View(func(tx *storage.Tx) error {
		var err error
		list, err = ix.Postings(tx, "launch")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := heap()
	if len(list) != n {
		t.Fatalf("%d postings, want %d", len(list), n)
	}
	// The Posting itself is 40 bytes (and the slack of appending), its id
	// (10 bytes) 16; the whole key took about 96 more.
	if per := float64(after-before) / n; per > 80 {
		t.Errorf("a posting holds %.0f bytes: more than its id is kept", per)
	}
	runtime.KeepAlive(list)
}
