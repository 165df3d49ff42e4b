package memory_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/scale"
)

// storeDirEnv names a store built before by `engram scale --memories
// 1000000 --data DIR` for BenchmarkMemoryRemember1M to open instead of
// building one (several minutes) in its temporary directory.
const storeDirEnv = "ENGRAM_BENCH_MEMORIES_1M"

// BenchmarkMemoryRemember1M: memory.remember with a 2-3 word prompt over
// 1,000,000 items of an episodic store (scale.Build's memories: the memory
// tests' corpus — short sentences over a vocabulary of about 170 words,
// six agents, twenty tags), on a durable store, through engine.Do as a
// batch step would (default limit 10, recency order among the relevant
// items). Target (issue 17): p50 ≤ 20 ms. first-p50-µs is the median of
// each prompt's first recall, before its terms' postings are cached. Building the store takes a few
// minutes; set ENGRAM_BENCH_MEMORIES_1M=DIR to use one built with
// `engram scale --data DIR --memories 1000000`.
func BenchmarkMemoryRemember1M(b *testing.B) {
	const n = 1_000_000
	dir := os.Getenv(storeDirEnv)
	if dir == "" {
		dir = b.TempDir()
		start := time.Now()
		if _, err := scale.Build(context.Background(), scale.Options{Dir: dir, Memories: n, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		b.Logf("built %d memories in %v", n, time.Since(start).Round(time.Millisecond))
	}
	e, err := core.Open(core.Options{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ctx := context.Background()
	args := make([]json.RawMessage, len(benchPrompts))
	for i, p := range benchPrompts {
		args[i], _ = json.Marshal(map[string]any{"store": scale.MemoryStore, "prompt": p})
	}
	raw, err := e.Do(ctx, core.Request{Action: "memory.capacity", Args: json.RawMessage(`{"store":"` + scale.MemoryStore + `"}`)})
	if err != nil {
		b.Fatal(err)
	}
	var capacity struct {
		ItemCount int `json:"item_count"`
	}
	if err := json.Unmarshal(raw, &capacity); err != nil || capacity.ItemCount != n {
		b.Fatalf("the store holds %s, want %d items (%v)", raw, n, err)
	}
	times := timeRemember(b, e, args)
	// The first recall of a prompt reads its terms' postings from the
	// store (then the cache holds them): its median is reported apart.
	cold := slices.Clone(times[:min(len(times), len(benchPrompts))])
	slices.Sort(cold)
	b.ReportMetric(float64(cold[len(cold)/2].Nanoseconds())/1000, "first-p50-µs")
	percentiles(b, times)
}
