package cortex

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Seed 000 §6.4 (issue 14, "Seed behaviour still done by hand"): queries
// with several filters answer in under 500 ms over 10,000 items and under
// 2 s over 100,000. The benchmarks below measure the p50 of a mix of such
// queries. With -latency-gate they also fail when that p50 is over the
// seed's bound, which .ci/run uses: the bounds are far above today's
// figures, so the gate catches an order-of-magnitude regression without
// flaking on a slow or busy machine.

var latencyGate = flag.Bool("latency-gate", false, "fail BenchmarkSeedLatency* when p50 exceeds seed 000 §6.4's bound")

// seedQueries is the query mix: the multi-filter queries of seed 6.4's
// correctness test (type, status, tags, priority, due dates, text), and
// the one query the benchmarks timed before; each for its first page.
func seedQueries() []Query {
	dueBefore, dueAfter := t0.Add(40*24*time.Hour), t0.Add(10*24*time.Hour)
	return []Query{
		{Type: "goal", Status: []string{"active", "in_progress"}, Tags: []string{"security", "tag03"},
			Priority: []string{"critical", "high"}, DueBefore: &dueBefore, Limit: 10},
		{Type: "action", Status: []string{"blocked", "active"}, DueAfter: &dueAfter, Tags: []string{"tag07"}, Limit: 25},
		{Text: "secur migr", Priority: []string{"low", "medium"}, Limit: 40},
		{Status: []string{"completed"}, Tags: []string{"tag01", "tag02", "tag19"}, Limit: 200},
		{Type: "goal", Status: []string{"active", "in_progress"}, Tags: []string{"security"}, Priority: []string{"critical", "high"}},
	}
}

// benchmarkSeedLatency builds n items, checks once that every query of
// the mix counts exactly the brute-force matches (a fast wrong answer must
// not pass), then times each query of the mix per iteration. ns/op is the
// whole mix; p50-ms and p99-ms are per query.
func benchmarkSeedLatency(b *testing.B, n int, bound time.Duration) {
	e := newEnv(b)
	specs := itemSpecs(n, 7)
	start := time.Now()
	// 50 per transaction: larger ones are slower, as every insert's trace
	// entry iterates over the transaction's pending writes.
	e.bulkCreate(specs, 50)
	b.Logf("%d items built in %s", n, time.Since(start).Round(time.Millisecond))
	queries := seedQueries()
	for qi, q := range queries {
		var want []string
		for _, s := range specs {
			if matches(s, "agent_a", q) {
				want = append(want, s.id)
			}
		}
		res := e.query(agentA, "cortex.query", q)
		if res.Count != len(want) || res.Checksum != Checksum(want) {
			b.Fatalf("query %d over %d items: count %d checksum %s; want %d %s", qi, n, res.Count, res.Checksum, len(want), Checksum(want))
		}
	}
	var l latencies
	for b.Loop() {
		for _, q := range queries {
			l.time(func() {
				if _, err := e.Try(agentA, "cortex.query", q); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	l.report(b)
	if err := overBound(l, n, bound); *latencyGate && err != nil {
		b.Fatal(err)
	}
}

// overBound is the gate: an error when the median of l is over bound.
func overBound(l latencies, n int, bound time.Duration) error {
	if p50 := l.p50(); p50 > bound {
		return fmt.Errorf("seed 000 §6.4: p50 of the query mix over %d items is %s, over the bound of %s", n, p50, bound)
	}
	return nil
}

// BenchmarkSeedLatency10k: the mix over 10,000 items; bound 500 ms.
func BenchmarkSeedLatency10k(b *testing.B) {
	benchmarkSeedLatency(b, 10_000, 500*time.Millisecond)
}

// BenchmarkSeedLatency100k: the mix over 100,000 items; bound 2 s.
func BenchmarkSeedLatency100k(b *testing.B) {
	benchmarkSeedLatency(b, 100_000, 2*time.Second)
}

// Issue 14: the gate fails on a median over the bound, and only then (a
// few slow outliers, as on a busy machine, do not fail it).
func TestLatencyGateFailsOnlyWhenTheMedianIsOverTheBound(t *testing.T) {
	ms := time.Millisecond
	if err := overBound(latencies{ms, 2 * ms, 3 * ms, 900 * ms, 900 * ms}, 10_000, 500*ms); err != nil {
		t.Errorf("two slow outliers of five failed the gate: %v", err)
	}
	err := overBound(latencies{ms, 600 * ms, 700 * ms, 800 * ms, 900 * ms}, 10_000, 500*ms)
	if err == nil || !strings.Contains(err.Error(), "p50 of the query mix over 10000 items is 700ms, over the bound of 500ms") {
		t.Errorf("a median of 700ms against 500ms: %v", err)
	}
	if err := overBound(nil, 10_000, 500*ms); err != nil {
		t.Errorf("no samples: %v", err)
	}
}
