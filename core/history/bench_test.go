package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/history"
)

// corpus makes realistic utterances of about 30 words: two lines of the
// testdata conversations, with their names, amounts and dates varied.
type corpus struct {
	lines []string
	rng   *rand.Rand
}

func newCorpus(t testing.TB) *corpus {
	c := &corpus{rng: rand.New(rand.NewPCG(1, 2))}
	for _, fx := range loadFixtures(t) {
		for _, u := range fx.Utterances {
			c.lines = append(c.lines, u.Text)
		}
	}
	c.lines = append(c.lines, labelled...)
	return c
}

var (
	benchTemplates = []string{
		" %s will confirm the %s order of $%d by day %d.",
		" %s booked the %s trip for $%d on the %dth.",
		" Ask %s about the %s invoice: $%d, due in %d days.",
		" %s moved the %s meeting; the budget stays at $%d for %d people.",
		" Remind %s that the %s office pays $%d every %d weeks.",
	}
	benchNames  = []string{"Maria", "Tom", "Aisha", "Jonas", "Li", "Sofia", "Pedro", "Grace", "Sam", "Helga", "Nora", "Marcus"}
	benchPlaces = []string{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo", "Lima"}
)

func (c *corpus) next() string {
	var b strings.Builder
	for b.Len() < 140 { // about 30 words
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.lines[c.rng.IntN(len(c.lines))])
	}
	// Half of them also name someone, somewhere, an amount and a day.
	if c.rng.IntN(2) == 0 {
		fmt.Fprintf(&b, benchTemplates[c.rng.IntN(len(benchTemplates))],
			benchNames[c.rng.IntN(len(benchNames))], benchPlaces[c.rng.IntN(len(benchPlaces))], 100+c.rng.IntN(9900), 1+c.rng.IntN(28))
	}
	return b.String()
}

// percentiles reports the p50, p90 and p99 of per-operation timings.
func percentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.90), "p90-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

var benchBuffer = 50

// BenchmarkHistoryWriteNoEviction is BenchmarkHistoryWrite while the buffer
// still has room (a conversation's first 50 utterances, or any with a large
// buffer): the write alone, without the fold into the summary that every
// write into a full buffer does.
func BenchmarkHistoryWriteNoEviction(b *testing.B) {
	benchmarkWriteNoEviction(b, false)
}

// BenchmarkHistoryWriteNoEvictionSearched is BenchmarkHistoryWriteNoEviction
// into a conversation that was searched first: every write is also
// appended to the conversation's hybrid index in memory.
func BenchmarkHistoryWriteNoEvictionSearched(b *testing.B) {
	benchmarkWriteNoEviction(b, true)
}

func benchmarkWriteNoEviction(b *testing.B, searched bool) {
	r := newRigWith(b, rigOptions{historyBackend: history.BackendInMemory})
	c := newCorpus(b)
	r.configure(map[string]any{"buffer_size": b.N + 1})
	if searched {
		r.write("", "user", c.next())
		r.search(map[string]any{"query": "budget"})
	}
	args := make([]json.RawMessage, b.N)
	for i := range args {
		args[i], _ = json.Marshal(map[string]any{"speaker": speakerOf(i), "text": c.next()})
	}
	times := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := r.e.Do(ctx, core.Request{Action: "history.write", Args: args[i]})
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	percentiles(b, times)
	if st := r.stats(""); st.EvictedCount != 0 {
		b.Fatalf("evicted %d; want none", st.EvictedCount)
	}
}

// BenchmarkHistoryWrite writes ~30-word utterances to a conversation whose
// buffer (50) is full, so that every write also evicts one utterance into
// the summary.
func BenchmarkHistoryWrite(b *testing.B) {
	for _, backend := range []string{history.BackendInMemory, history.BackendDurable} {
		b.Run(backend, func(b *testing.B) {
			o := rigOptions{historyBackend: backend}
			if backend == history.BackendDurable {
				o.dir = b.TempDir()
			}
			r := newRigWith(b, o)
			c := newCorpus(b)
			r.configure(map[string]any{"buffer_size": benchBuffer})
			for i := range 60 {
				r.write("", speakerOf(i), c.next())
			}
			// The steps as a batch script has them: JSON arguments, run by
			// engine.Do (decoding, the write, encoding its result).
			texts := make([]string, b.N)
			args := make([]json.RawMessage, b.N)
			for i := range texts {
				texts[i] = c.next()
				args[i], _ = json.Marshal(map[string]any{"speaker": speakerOf(i), "text": texts[i]})
			}
			times := make([]time.Duration, 0, b.N)
			words := 0
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				_, err := r.e.Do(ctx, core.Request{Action: "history.write", Args: args[i]})
				times = append(times, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// The folds into the summary run in the background: how far
			// behind the writes they ended (0 when they kept up).
			start := time.Now()
			r.h.Settle()
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "fold-lag-ms")
			for _, s := range texts {
				words += len(strings.Fields(s))
			}
			percentiles(b, times)
			b.ReportMetric(float64(words)/float64(len(texts)), "words/utt")
			if st := r.stats(""); benchBuffer == 50 && (st.Size != 50 || st.EvictedCount < b.N) {
				b.Fatalf("stats %+v", st)
			}
		})
	}
}

// BenchmarkHistorySearch10k searches a conversation of 10,000 utterances
// (50 in the buffer, the rest in the archive) for 2-3 word queries.
func BenchmarkHistorySearch10k(b *testing.B) {
	r := newRig(b)
	c := newCorpus(b)
	for i := range 10_000 {
		if _, err := r.h.Write(context.Background(), r.call(), history.WriteRequest{Speaker: speakerOf(i), Text: c.next()}); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"Lisbon flight", "budget review Thursday", "refund duplicate charge", "Redis memory", "Maria order",
		"rollback approved", "dentist appointment", "Kowalski invoice", "launch price", "race test"}
	times := make([]time.Duration, 0, b.N)
	found := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		hits, err := r.h.Search(context.Background(), r.call(), history.SearchRequest{Query: queries[i%len(queries)]})
		times = append(times, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		found += len(hits)
	}
	b.StopTimer()
	percentiles(b, times)
	if found == 0 {
		b.Fatal("nothing found")
	}
}

// BenchmarkHistoryWriteAfterEvictions (issue 13 item 7): a write into a
// full buffer — evicting one utterance and folding it into the summary —
// costs what it costs after 100 evictions after a million (it grew with
// every eviction: a fold scanned past the fold keys of all earlier ones).
// The state after n evictions is built directly (history.SeedEvictions).
func BenchmarkHistoryWriteAfterEvictions(b *testing.B) {
	for _, n := range []int{100, 100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := newRig(b)
			if err := history.SeedEvictions(r.h, "default", n); err != nil {
				b.Fatal(err)
			}
			c := newCorpus(b)
			args := make([]json.RawMessage, b.N)
			for i := range args {
				args[i], _ = json.Marshal(map[string]any{"speaker": speakerOf(i), "text": c.next()})
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.e.Do(ctx, core.Request{Action: "history.write", Args: args[i]}); err != nil {
					b.Fatal(err)
				}
				r.h.Settle() // the fold is part of the cost, as a batch step waits for it
			}
			b.StopTimer()
			if st := r.stats(""); st.EvictedCount != n+b.N-1 {
				b.Fatalf("evicted %d; want %d", st.EvictedCount, n+b.N-1)
			}
		})
	}
}

// BenchmarkHistoryConfigureShrink (issue 13 item 7): history.configure
// {"buffer_size": 1} over 5,000 buffered utterances, the fold of all of
// them included (the result's summary waits for it). It blocked 73 s.
func BenchmarkHistoryConfigureShrink(b *testing.B) {
	c := newCorpus(b)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := newRig(b)
		r.configure(map[string]any{"buffer_size": 5001})
		for j := range 5000 {
			if _, err := r.h.Write(context.Background(), r.call(), history.WriteRequest{Speaker: speakerOf(j), Text: c.next()}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if st := r.configure(map[string]any{"buffer_size": 1}); st.EvictedCount != 4999 {
			b.Fatalf("evicted %d", st.EvictedCount)
		}
	}
}
