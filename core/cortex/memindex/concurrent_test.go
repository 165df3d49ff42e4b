package memindex

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// Queries and snapshot writes only read the index: the cortex runs them
// at once under its read lock (run with -race).
func TestQueriesAndSnapshotWritesMayRunAtOnce(t *testing.T) {
	old := foldAfter
	foldAfter = 5
	x := randomIndex(3000, 11)
	for i := range 100 {
		x.Put(goalRow(fmt.Sprintf("b%04d", i), 1, "active", fmt.Sprintf("late%d", i)))
	}
	foldAfter = old
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s := x.Match(Filter{Reader: []string{"a", "b"}[(g+i)%2], WordPrefixes: []string{"al"}})
				x.Checksum(s)
				x.Page(s, nil, 10)
				x.CountsByType(s)
				x.Row(fmt.Sprintf("i%06d", i))
				if i%10 == 0 {
					var buf bytes.Buffer
					_ = x.WriteSnapshot(&buf)
				}
			}
		})
	}
	wg.Wait()
}
