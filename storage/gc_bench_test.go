package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkDiskAfterMillionUpdates: the disk a durable store takes after
// 1,000,000 updates to the same 10,000 keys, against its size after the
// first 10,000 writes (issue 17: at most 3x). Data shape: keys "item/NNNNN",
// values of 600 bytes (a cortex item's JSON is 500-700), 1,000 updates to a
// transaction, the store's own options (values inline in the LSM tree,
// 64 MB memtables and value log files); the background collector ticks
// every 100,000 updates, and both sizes are taken after Close (which runs
// a last pass), as du counts them. Storage level rather than cortex: a
// cortex update also appends an audit entry and a version snapshot, which
// are kept by design, so its store grows with the history it keeps.
// Reports size-first-10k-MB, size-after-MB and ratio; one iteration takes
// about a minute, so run it with -benchtime=1x.
func BenchmarkDiskAfterMillionUpdates(b *testing.B) {
	const keys, updates, perTx = 10_000, 1_000_000, 1_000
	words := strings.Fields("login migration security review deploy billing search cache latency report " +
		"onboarding backup audit alerting pricing mobile export import quota roadmap")
	value := func(k, round int) []byte {
		rng := rand.New(rand.NewPCG(uint64(k), uint64(round)))
		v := fmt.Appendf(nil, `{"id":"item_%05d","round":%d,"title":"`, k, round)
		for len(v) < 590 {
			v = append(v, words[rng.IntN(len(words))]...)
			v = append(v, ' ')
		}
		return append(v[:598], '"', '}')
	}
	write := func(s *Store, from, to int) {
		for start := from; start < to; start += perTx {
			err := s.Update(context.Background(), func(tx *Tx) error {
				for i := start; i < min(start+perTx, to); i++ {
					if err := tx.Set(fmt.Appendf(nil, "item/%05d", i%keys), value(i%keys, i/keys)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for b.Loop() {
		dir := b.TempDir()
		tick := make(chan time.Time)
		s, err := Open(Options{Dir: dir, GCTick: tick})
		if err != nil {
			b.Fatal(err)
		}
		write(s, 0, keys)
		firstOpen, err := DiskUsage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		first, err := DiskUsage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if s, err = Open(Options{Dir: dir, GCTick: tick}); err != nil {
			b.Fatal(err)
		}
		const every = 100_000
		for done := keys; done < keys+updates; done += every {
			write(s, done, min(done+every, keys+updates))
			tick <- time.Now()
		}
		during, err := DiskUsage(dir)
		if err != nil {
			b.Fatal(err)
		}
		closing := time.Now()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(closing).Seconds(), "close-s")
		after, err := DiskUsage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if testing.Verbose() {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				info, _ := e.Info()
				b.Logf("%s %d", e.Name(), info.Size())
			}
		}
		b.ReportMetric(float64(first)/(1<<20), "size-first-10k-MB")
		b.ReportMetric(float64(firstOpen)/(1<<20), "size-first-10k-open-MB")
		b.ReportMetric(float64(during)/(1<<20), "size-after-open-MB")
		b.ReportMetric(float64(during)/float64(firstOpen), "ratio-open")
		b.ReportMetric(float64(after)/(1<<20), "size-after-MB")
		b.ReportMetric(float64(after)/float64(first), "ratio")
	}
}
