package embed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// BenchmarkVectorSearchAt100k is a search's vector scan as history.search
// runs it with a model configured: 100,000 vector records of 256 float32s
// (llmtest.Hashed's vectors of generated 8-word sentences over 5,000
// words) under one conversation's prefix in an in-memory store, every one
// compared to the query. "cold" reads and decodes them from the store (the
// first search after a change); "similarities" is every cosine, as
// history's similarities returns them; "nearest" the top 50, which is what
// a fusion by rank needs; "stored+nearest" stores one more vector first,
// as a write does before the next search. Reports p50-ms and the mean,
// ms/search ("cold" the mean only).
func BenchmarkVectorSearchAt100k(b *testing.B) {
	const n = 100_000
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	word := func(i int) string { return fmt.Sprintf("w%d", (i*7919)%5000) }
	for start := 0; start < n; start += 5000 {
		err := st.Update(context.Background(), func(tx *storage.Tx) error {
			for i := start; i < start+5000; i++ {
				text := ""
				for j := range 8 {
					text += word(i*8+j) + " "
				}
				if err := tx.Set(storage.Key("b/", "vec", "c", storage.Uint64(uint64(i))), Encode(Vector{Model: "m", Values: llmtest.HashedVector(text)})); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	q := llmtest.HashedVector(word(1) + " " + word(2))
	prefix := storage.PrefixKey("b/", "vec", "c")
	similarities := func(b *testing.B) {
		seen := 0
		err := st.View(func(tx *storage.Tx) error {
			_, err := Similarities(tx, prefix, q, func([]byte, float64) { seen++ })
			return err
		})
		if err != nil || seen < n {
			b.Fatalf("%d seen, %v", seen, err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			forgetStore(st)
			similarities(b)
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/search")
	})
	b.Run("similarities", func(b *testing.B) {
		similarities(b) // warm
		b.ResetTimer()
		reportP50(b, func() { similarities(b) })
	})
	b.Run("stored+nearest", func(b *testing.B) {
		// A new utterance's vector, then a search: the copy in memory
		// takes the vector, rather than being read again.
		similarities(b) // warm
		next := n
		b.ResetTimer()
		reportP50(b, func() {
			err := st.Update(context.Background(), func(tx *storage.Tx) error {
				return Stored(tx, storage.Key("b/", "vec", "c", storage.Uint64(uint64(next))), Vector{Model: "m", Values: q})
			})
			next++
			if err == nil {
				err = st.View(func(tx *storage.Tx) error {
					_, _, err := Nearest(tx, prefix, q, 50)
					return err
				})
			}
			if err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("nearest", func(b *testing.B) {
		similarities(b) // warm
		b.ResetTimer()
		reportP50(b, func() {
			err := st.View(func(tx *storage.Tx) error {
				got, _, err := Nearest(tx, prefix, q, 50)
				if len(got) != 50 {
					b.Fatalf("%d nearest", len(got))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	})
}

// reportP50 runs search b.N times (b.Loop) and reports the median time
// of one (p50-ms) and the mean (ms/search).
func reportP50(b *testing.B, search func()) {
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		search()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/search")
}

// BenchmarkIndexNearest is Index.Nearest alone (the top 50) over the
// same shape of data (100,000 vectors of 256 float32s in memory), beside
// the exact brute force it replaces (every float cosine, as scan makes
// them). Reports ms/search.
func BenchmarkIndexNearest(b *testing.B) {
	const n = 100_000
	word := func(i int) string { return fmt.Sprintf("w%d", (i*7919)%5000) }
	s := &Index{}
	for i := range n {
		text := ""
		for j := range 8 {
			text += word(i*8+j) + " "
		}
		s.Add([]byte(fmt.Sprint(i)), Vector{Values: llmtest.HashedVector(text)})
	}
	s.Pack()
	q := llmtest.HashedVector(word(1) + " " + word(2))
	b.Run("int8+rescore", func(b *testing.B) { reportP50(b, func() { s.Nearest(q, 50) }) })
	b.Run("exact", func(b *testing.B) { reportP50(b, func() { exactNearest(s, q, 50) }) })
}

// BenchmarkIndexNearest768 is BenchmarkIndexNearest at 768 dimensions (as
// nomic-embed-text makes them): 100,000 random vectors (normal
// components) in memory, the top 50 of a random query, beside the exact
// brute force. Reports p50-ms and the mean, ms/search.
func BenchmarkIndexNearest768(b *testing.B) {
	const n, d = 100_000, 768
	r := rand.New(rand.NewPCG(7, 68))
	s := &Index{}
	v := make([]float32, d)
	for i := range n {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		s.Add([]byte(fmt.Sprint(i)), Vector{Values: v})
	}
	s.Pack()
	q := make([]float32, d)
	for j := range q {
		q[j] = float32(r.NormFloat64())
	}
	b.Run("int8+rescore", func(b *testing.B) { reportP50(b, func() { s.Nearest(q, 50) }) })
	b.Run("exact", func(b *testing.B) { reportP50(b, func() { exactNearest(s, q, 50) }) })
}
