package cortex

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

// Benchmarks of retrieval and of writes (seed 6.4's query latencies are in
// latency_bench_test.go). Each reports the median time of one operation as
// p50-ms besides Go's mean ns/op. The data set (itemSpecs: three types, five
// statuses, four priorities, 20 tags plus "security", due dates, blocking
// flags, two owners) is built once, outside the timed loop.

// latencies collects one duration per operation.
type latencies []time.Duration

func (l *latencies) time(fn func()) {
	start := time.Now()
	fn()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := l.sorted()
	b.ReportMetric(float64(s[len(s)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(s[len(s)*99/100])/1e6, "p99-ms")
}

// p50 is the median; 0 without samples.
func (l latencies) p50() time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l.sorted()[len(l)/2]
}

func (l latencies) sorted() latencies {
	s := slices.Clone(l)
	slices.Sort(s)
	return s
}

// BenchmarkCortexActive10k is turn-start retrieval: no filters but the
// caller's open items, first page in priority order.
func BenchmarkCortexActive10k(b *testing.B) {
	e := newEnv(b)
	e.bulkCreate(itemSpecs(10_000, 7), 250)
	var l latencies
	for b.Loop() {
		l.time(func() {
			if _, err := e.Try(agentA, "cortex.active", obj{"limit": 20}); err != nil {
				b.Fatal(err)
			}
		})
	}
	l.report(b)
}

func BenchmarkCortexBatchUpdate100(b *testing.B) {
	e := newEnv(b)
	e.bulkCreate(ownedBy(itemSpecs(1000, 7), "agent_a"), 250)
	var l latencies
	round := 0
	for b.Loop() {
		ups := make([]obj, 100)
		for i := range ups {
			ups[i] = obj{"id": fmt.Sprintf("item_%06d", (round*100+i)%1000), "updates": obj{"progress": round % 101, "title": fmt.Sprintf("round %d", round)}}
		}
		round++
		l.time(func() {
			if _, err := e.Try(agentA, "cortex.batch_update", obj{"updates": ups}); err != nil {
				b.Fatal(err)
			}
		})
	}
	l.report(b)
}

func benchmarkUpdate(b *testing.B, sync bool) {
	store, err := storage.Open(storage.Options{Dir: b.TempDir(), SyncWrites: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := store.Close(); err != nil {
			b.Errorf("closing the store: %v", err)
		}
	})
	e := newEnvOn(b, store)
	e.bulkCreate(ownedBy(itemSpecs(1000, 7), "agent_a"), 250)
	var l latencies
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("item_%06d", i%1000)
		i++
		l.time(func() {
			if _, err := e.Try(call{As: "agent_a", Turn: "turn_bench"}, "cortex.update", obj{"id": id, "updates": obj{"progress": i % 101}}); err != nil {
				b.Fatal(err)
			}
		})
	}
	l.report(b)
}

// BenchmarkCortexUpdate: one cortex.update on a durable store, as the
// console uses it (Badger's own durability: survives a crash of the process).
func BenchmarkCortexUpdate(b *testing.B) { benchmarkUpdate(b, false) }

// BenchmarkCortexUpdateSync: the same with an fsync per commit (survives
// power loss).
func BenchmarkCortexUpdateSync(b *testing.B) { benchmarkUpdate(b, true) }

func ownedBy(specs []spec, owner string) []spec {
	for i := range specs {
		specs[i].owner = owner
	}
	return specs
}
