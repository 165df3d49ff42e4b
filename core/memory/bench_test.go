package memory_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/memory"
)

// percentiles reports the p50, p90 and p99 of per-operation timings.
func percentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.90), "p90-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// big is an engine holding a store "big" of 100,000 items, built once per
// process (the benchmark function runs several times).
var big struct {
	once sync.Once
	r    *rig
	err  error
}

const bigSize = 100_000

func bigRig(b *testing.B) *rig {
	big.once.Do(func() {
		start := time.Now()
		r := newRig(&noCleanup{TB: b})
		r.configure(map[string]any{"store": "big", "type": "episodic"})
		c := newCorpus(1)
		const batch = 1000
		items := make([]memory.Item, 0, batch)
		for i := range bigSize {
			items = append(items, c.item(i))
			if len(items) == batch || i == bigSize-1 {
				if err := r.m.MemorizeMany(context.Background(), r.call(), "big", items); err != nil {
					big.err = err
					return
				}
				items = items[:0]
			}
		}
		big.r = r
		b.Logf("built %d items in %v", bigSize, time.Since(start).Round(time.Millisecond))
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	big.r.T = b
	return big.r
}

// timeRemember runs memory.remember b.N times through e.Do, as a batch
// step would, with args in turn, and returns each call's time. It fails b
// when no call found anything.
func timeRemember(b *testing.B, e *core.Engine, args []json.RawMessage) []time.Duration {
	ctx := context.Background()
	times := make([]time.Duration, 0, b.N)
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		raw, err := e.Do(ctx, core.Request{Action: "memory.remember", Args: args[i%len(args)]})
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if len(raw) > len(`{"items":[]}`) {
			found++
		}
	}
	b.StopTimer()
	if found == 0 {
		b.Fatal("nothing found")
	}
	return times
}

// noCleanup keeps the shared engine open when the benchmark that built it ends.
type noCleanup struct{ testing.TB }

func (noCleanup) Cleanup(func()) {}

// BenchmarkMemoryRemember100k: remember with a 2-3 word prompt over 100,000
// items, through engine.Do as a batch step would (default limit 10, the
// episodic store's recency order among the relevant items).
func BenchmarkMemoryRemember100k(b *testing.B) {
	r := bigRig(b)
	if c := r.capacity("big"); c.ItemCount != bigSize {
		b.Fatalf("capacity %+v", c)
	}
	args := make([]json.RawMessage, len(benchPrompts))
	for i, p := range benchPrompts {
		args[i], _ = json.Marshal(map[string]any{"store": "big", "prompt": p})
	}
	times := timeRemember(b, r.e, args)
	percentiles(b, times)
}

// BenchmarkMemoryMemorize: memorize ~20-token items through engine.Do into
// a durable store (storage on a temp dir) bounded to 2,000 items and
// 40,000 tokens with on_full evict, pre-filled with 1,500 items: once it is
// full, memorizing evicts the least important items.
func BenchmarkMemoryMemorize(b *testing.B) {
	r := newRigWith(b, rigOptions{dir: b.TempDir()})
	r.configure(map[string]any{"store": "bounded", "type": "working", "max_items": 2000, "token_budget": 40000, "on_full": "evict"})
	c := newCorpus(2)
	pre := make([]memory.Item, 1500)
	for i := range pre {
		pre[i] = c.item(i)
	}
	if err := r.m.MemorizeMany(context.Background(), r.call(), "bounded", pre); err != nil {
		b.Fatal(err)
	}
	args := make([]json.RawMessage, b.N)
	for i := range args {
		it := c.item(len(pre) + i)
		args[i], _ = json.Marshal(map[string]any{"store": "bounded", "item": map[string]any{
			"type": it.Type, "text": it.Text, "agent_id": it.AgentID, "tags": it.Tags, "importance": it.Importance,
			"timestamp": it.Timestamp,
		}})
	}
	ctx := context.Background()
	times := make([]time.Duration, 0, b.N)
	evicted := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		raw, err := r.e.Do(ctx, core.Request{Action: "memory.memorize", Args: args[i]})
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		var res struct {
			Evicted []string `json:"evicted"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			b.Fatal(err)
		}
		evicted += len(res.Evicted)
	}
	b.StopTimer()
	percentiles(b, times)
	b.ReportMetric(float64(evicted)/float64(b.N), "evicted/op")
	cp := r.capacity("bounded")
	if cp.ItemCount > 2000 || cp.TokenUsage > 40000 {
		b.Fatalf("over the limits: %+v", cp)
	}
}
