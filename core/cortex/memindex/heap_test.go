package memindex

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// scaleWords are engram scale's item words (core/scale/data.go).
var scaleWords = []string{"login", "migration", "security", "review", "deploy", "billing", "search", "cache", "latency", "report",
	"onboarding", "backup", "audit", "alerting", "pricing", "mobile", "export", "import", "quota", "roadmap"}

// scaleRows are n rows shaped like the index rows of engram scale's items
// (core/scale Items, which this package cannot import): ids item_000000…
// in order, three types, five statuses, four priorities, a quarter
// blocking, four in five due, 0-3 of twenty tags and "security" on one in
// six, owner agent_a (agent_b one in ten) and its only reader, and the
// words of "<w> <w> item <i>" and "about <w> and <w>": a number each
// item alone has, and twenty-three words most items share.
func scaleRows(n int, seed uint64) []Row {
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	types := []string{"goal", "action", "question"}
	statuses := []string{"active", "in_progress", "blocked", "completed", "archived"}
	rows := make([]Row, n)
	for i := range rows {
		w := func() string { return scaleWords[rng.IntN(len(scaleWords))] }
		words := []string{}
		for _, s := range []string{w(), w(), "item", fmt.Sprint(i), "about", w(), "and", w()} {
			if len(s) >= 2 && !contains(words, s) {
				words = append(words, s)
			}
		}
		r := Row{ID: fmt.Sprintf("item_%06d", i), Version: i + 1, Type: types[rng.IntN(3)], Status: statuses[rng.IntN(5)],
			Rank: rng.IntN(4), Blocking: rng.IntN(4) == 0, Created: start.Add(time.Duration(i) * time.Millisecond), Words: words}
		if rng.IntN(5) > 0 {
			d := start.Add(time.Duration(rng.IntN(24*60)) * time.Hour)
			r.Due = &d
		}
		for range rng.IntN(4) {
			r.Tags = append(r.Tags, fmt.Sprintf("tag%02d", rng.IntN(20)))
		}
		if rng.IntN(6) == 0 {
			r.Tags = append(r.Tags, "security")
		}
		r.Owner = "agent_a"
		if rng.IntN(10) == 0 {
			r.Owner = "agent_b"
		}
		r.Readers = []string{r.Owner}
		rows[i] = r
	}
	return rows
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkLoadedIndexHeap1M: the heap a loaded index of a million items
// shaped like engram scale's (scaleRows) keeps once the snapshot's bytes
// are gone (heap-MB), and the time loading it takes (load-ms): issue 17's
// resident memory target is 600 MB for the whole engram at 1M items.
func BenchmarkLoadedIndexHeap1M(b *testing.B) {
	n := 1_000_000
	if testing.Short() || raceDetector {
		n = 20_000
	}
	data := func() []byte {
		x := New()
		for _, r := range scaleRows(n, 7) {
			x.Put(r)
		}
		var buf bytes.Buffer
		if err := x.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}()
	var x *Index
	var heap, load float64
	b.ResetTimer()
	for b.Loop() {
		x = nil
		before := heapInUse()
		buf := bytes.Clone(data) // the file's bytes, dropped once loaded
		began := time.Now()
		var err error
		if x, err = ReadSnapshot(buf); err != nil {
			b.Fatal(err)
		}
		load += float64(time.Since(began).Milliseconds())
		buf = nil
		heap = float64(heapInUse()-before) / 1e6
		runtime.KeepAlive(buf)
	}
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(load/float64(b.N), "load-ms")
	b.ReportMetric(float64(len(data))/1e6, "snapshot-MB")
	runtime.KeepAlive(x)
}

// A row of the index is at most 64 bytes: a million of them are most of
// a loaded index (issue 17's memory target).
func TestARowTakesAtMost64Bytes(t *testing.T) {
	if n := unsafe.Sizeof(row{}); n > 64 {
		t.Errorf("a row takes %d bytes", n)
	}
}

// A loaded index keeps none of the snapshot's bytes and little of its
// own beside the rows: about a hundred and thirty bytes an item shaped
// like engram scale's (a million: 600 MB is the whole engram's budget).
func TestALoadedIndexTakesLittleMoreThanItsRows(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("measures the heap of 100,000 items")
	}
	const n = 100_000
	x := New()
	for _, r := range scaleRows(n, 7) {
		x.Put(r)
	}
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	x = nil
	before := heapInUse()
	data := bytes.Clone(buf.Bytes()) // the file's bytes, dropped once loaded
	y, err := ReadSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	data = nil
	perItem := float64(heapInUse()-before) / n
	if perItem > 150 {
		t.Errorf("a loaded index takes %.0f bytes an item, want at most 150", perItem)
	}
	t.Logf("%.0f bytes an item", perItem)
	runtime.KeepAlive(y)
	runtime.KeepAlive(data)
	runtime.KeepAlive(buf)
}

// BenchmarkActivePage1M: cortex.active's work on the index of a million
// items shaped like engram scale's (scaleRows), built by puts and loaded
// from a snapshot: the open items of agent_a (about half a million) and
// the first page of 50 in active order.
func BenchmarkActivePage1M(b *testing.B) {
	n := 1_000_000
	if testing.Short() || raceDetector {
		n = 20_000
	}
	built := New()
	for _, r := range scaleRows(n, 7) {
		built.Put(r)
	}
	loaded := reloaded(b, built)
	f := Filter{Reader: "agent_a", Statuses: []string{"active", "in_progress", "blocked"}}
	for name, x := range map[string]*Index{"built": built, "loaded": loaded} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				x.Page(x.Match(f), nil, 50)
			}
		})
	}
}
