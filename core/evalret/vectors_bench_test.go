package evalret

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/llm/llmtest"
)

// BenchmarkFusionAt100kTurns is what fusing a vector ranking adds to a
// search beyond the model's call for the query vector: ranking 100,000
// turn vectors (llmtest.HashedDim = 256 float32s each, held in memory
// with an int8 copy: embed.Index.Nearest) for the FusionDepth most
// similar, and fusing them with a
// lexical ranking of FusionDepth turns by reciprocal rank fusion. The
// turns are generated sentences of 8 words over a vocabulary of 5,000;
// the query is 4 of those words. Reports the median (p50-ms, the issue's
// target: at most 5 ms) and mean (ms/search) time of one.
func BenchmarkFusionAt100kTurns(b *testing.B) {
	const turns = 100_000
	vs := &Vectors{}
	word := func(i int) string { return fmt.Sprintf("w%d", (i*7919)%5000) }
	for i := range turns {
		text := ""
		for j := range 8 {
			text += word(i*8+j) + " "
		}
		vs.Add(fmt.Sprintf("t%d", i), llmtest.HashedVector(text))
	}
	vs.Pack()
	q := llmtest.HashedVector(word(1) + " " + word(2) + " " + word(3) + " " + word(4))
	lexical := make([]string, FusionDepth)
	for i := range lexical {
		lexical[i] = fmt.Sprintf("t%d", i*997)
	}
	b.ResetTimer()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if got := FuseRankings(lexical, vs.Rank(q, FusionDepth), K); len(got) != K {
			b.Fatalf("%d fused", len(got))
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/search")
}
