package history_test

import (
	"context"
	"iter"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/history"
)

// searchBenchQueries are the query mix of the large search benchmarks:
// the words of BenchmarkHistorySearch10k's queries, common and rare.
var searchBenchQueries = []string{"Lisbon flight", "budget review Thursday", "refund duplicate charge", "Redis memory", "Maria order",
	"rollback approved", "dentist appointment", "Kowalski invoice", "launch price", "race test"}

// searchBenchSize is how many utterances the large search benchmarks load:
// a million, or ENGRAM_BENCH_UTTERANCES (for a quicker look).
func searchBenchSize(b *testing.B) int {
	if s := os.Getenv("ENGRAM_BENCH_UTTERANCES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("ENGRAM_BENCH_UTTERANCES=%q: want a count", s)
		}
		return n
	}
	return 1_000_000
}

// searchBenchTexts are the n utterances of the large search benchmarks,
// the same on every call: newCorpus's ~30-word lines, user and assistant
// taking turns.
func searchBenchTexts(b *testing.B, n int) iter.Seq2[int, string] {
	c := newCorpus(b)
	return func(yield func(int, string) bool) {
		for i := range n {
			if !yield(i, c.next()) {
				return
			}
		}
	}
}

// benchData is what the large benchmarks load once and share (Go runs a
// benchmark once with b.N = 1 before its real run: loading a million
// utterances for each would take minutes): closed by TestMain.
var benchData struct {
	sync.Mutex
	n       int
	r       *rig
	loadS   float64
	closers []func()
}

func closeBenchData() {
	benchData.Lock()
	defer benchData.Unlock()
	for _, c := range slices.Backward(benchData.closers) {
		c()
	}
	benchData.closers = nil
}

// loadSearchBench is a durable engine (in a temporary directory) whose
// default conversation holds n utterances, loaded with BulkLoad (its buffer
// holds them all: a fold of a million evictions into the summary has
// nothing to do with search), and how long the load took in seconds.
func loadSearchBench(b *testing.B, n int) (*rig, float64) {
	benchData.Lock()
	defer benchData.Unlock()
	if benchData.r != nil && benchData.n == n {
		benchData.r.t = b
		return benchData.r, benchData.loadS
	}
	dir, err := os.MkdirTemp("", "engram-search-bench-")
	if err != nil {
		b.Fatal(err)
	}
	r := newRigWith(b, rigOptions{dir: dir, keep: true})
	benchData.closers = append(benchData.closers, func() {
		_ = r.e.Close()
		_ = os.RemoveAll(dir)
	})
	r.configure(map[string]any{"buffer_size": n + 1})
	start := time.Now()
	reqs := func(yield func(history.WriteRequest) bool) {
		for i, s := range searchBenchTexts(b, n) {
			if !yield(history.WriteRequest{Speaker: speakerOf(i), Text: s}) {
				return
			}
		}
	}
	if written, err := r.h.BulkLoad(context.Background(), r.call(), reqs); err != nil || written != n {
		b.Fatalf("BulkLoad = %d, %v", written, err)
	}
	benchData.n, benchData.r, benchData.loadS = n, r, time.Since(start).Seconds()
	return r, benchData.loadS
}

// searchTimes runs the query mix through search b.N times and returns each
// search's time.
func searchTimes(b *testing.B, search func(q string) int) []time.Duration {
	times := make([]time.Duration, 0, b.N)
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		found += search(searchBenchQueries[i%len(searchBenchQueries)])
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	if found == 0 {
		b.Fatal("nothing found")
	}
	return times
}

// BenchmarkHistorySearch1M: history.search (the Go API, default limit 10,
// the hybrid ranker) over one conversation of 1,000,000 ~30-word
// utterances (newCorpus; user and assistant alternating, all at one time:
// one session) in a durable store on disk, for the 2-3 word queries of
// searchBenchQueries in turn. It reports the load's time, the first
// search's (which builds the hybrid index from the utterances stored, as
// the first after a start does), and p50/p90/p99 of the searches after
// it. (Its postings-MB is the BM25 postings' memory, which no search
// reads any more: 0.)
//
//	go test ./core/history -run '^$' -bench 'BenchmarkHistorySearch1M$' -benchtime 200x -timeout 30m
func BenchmarkHistorySearch1M(b *testing.B) {
	r, loadS := loadSearchBench(b, searchBenchSize(b))
	ctx := context.Background()
	history.ForgetHybrid(r.h, "default")
	start := time.Now()
	if _, err := r.h.Search(ctx, r.call(), history.SearchRequest{Query: searchBenchQueries[0]}); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	percentiles(b, searchTimes(b, func(q string) int {
		hits, err := r.h.Search(ctx, r.call(), history.SearchRequest{Query: q})
		if err != nil {
			b.Fatal(err)
		}
		return len(hits)
	}))
	b.ReportMetric(loadS, "load-s")
	b.ReportMetric(float64(first.Milliseconds()), "first-search-ms")
	b.ReportMetric(float64(history.PostingsBytes(r.h, "default"))/(1<<20), "postings-MB")
}

// BenchmarkHistorySearch1MScanning is BenchmarkHistorySearch1M scoring
// from the posting keys in the store, as every search did before the
// postings were kept in memory: the figure before.
//
//	go test ./core/history -run '^$' -bench 'BenchmarkHistorySearch1MScanning$' -benchtime 20x -timeout 30m
func BenchmarkHistorySearch1MScanning(b *testing.B) {
	r, _ := loadSearchBench(b, searchBenchSize(b))
	ctx := context.Background()
	percentiles(b, searchTimes(b, func(q string) int {
		hits, err := history.SearchScanning(r.h, ctx, r.call(), history.SearchRequest{Query: q})
		if err != nil {
			b.Fatal(err)
		}
		return len(hits)
	}))
}
