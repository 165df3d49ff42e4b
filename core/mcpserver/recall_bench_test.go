package mcpserver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/memory"
)

// recallWords are the vocabulary of the benchmark's memories and queries.
var recallWords = [...][]string{
	{"Maria", "Tom", "Aisha", "Jonas", "Li", "Sofia", "Pedro", "Grace", "Sam", "Helga", "Nora", "Marcus"},
	{"booked", "cancelled", "paid", "moved", "asked about", "renewed", "forgot", "planned", "sent", "fixed"},
	{"flight", "hotel", "invoice", "budget", "contract", "dentist", "passport", "insurance", "laptop", "server",
		"report", "birthday", "dinner", "visa", "ticket", "meeting", "deadline", "refund", "wedding", "conference"},
	{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo", "Lima", "Porto", "Dublin", "Prague", "Seoul"},
}

// BenchmarkRecall100k measures recall (with its why) over 100,000 items
// through the MCP server on the go-sdk's in-memory transport, beside
// memory.remember straight on the engine. The target, over stdio
// end to end, is p50 ≤ 30 ms; this leaves out the pipe, not the protocol.
func BenchmarkRecall100k(b *testing.B) {
	e := newEngine(b)
	ctx := b.Context()
	if _, err := conn.Call(ctx, e, memory.ActionConfigure, memory.ConfigureArgs{Store: "big", Type: memory.TypeEpisodic}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(i int) string { return recallWords[i][rng.IntN(len(recallWords[i]))] }
	start := time.Now()
	for i := range 100_000 {
		text := fmt.Sprintf("%s %s the %s for %s (note %d).", pick(0), pick(1), pick(2), pick(3), i)
		imp := float64(rng.IntN(101)) / 100
		if _, err := conn.Call(ctx, e, memory.ActionMemorize, memory.MemorizeArgs{Store: "big", Item: memory.ItemInput{Type: "fact", Text: text, Importance: &imp}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("memorized 100,000 items in %v", time.Since(start).Round(time.Millisecond))
	cs := connect(b, New(e, Options{}))
	queries := []string{"Lisbon flight", "Maria invoice", "dentist in Porto", "passport renewed", "Tom wedding Oslo"}
	direct := make([]time.Duration, 0, b.N)
	viaMCP := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		if _, err := conn.Call(ctx, e, memory.ActionRemember, memory.RememberArgs{Store: "big", Prompt: q}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
		t0 = time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"store": "big", "query": q}})
		if err != nil || res.IsError {
			b.Fatalf("recall %q: %v %v", q, err, res)
		}
		viaMCP = append(viaMCP, time.Since(t0))
	}
	d, m := p50(direct), p50(viaMCP)
	b.ReportMetric(float64(d.Microseconds()), "remember-p50-µs")
	b.ReportMetric(float64(m.Microseconds()), "recall-p50-µs")
	b.Logf("memory.remember p50 %v, recall tool p50 %v (target ≤ 30ms over stdio)", d, m)
}
