package main

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/memory"
)

// recallBenchWords are the parts the benchmark's memories are made of:
// enough people, things, places and times that a two-word query matches a
// few hundred of 100,000 items, as an agent's memory would.
var recallBenchWords = [][]string{
	{"Maria", "Tom", "Aisha", "Jonas", "Li", "Sofia", "Pedro", "Grace", "Sam", "Helga", "Nora", "Marcus", "Ines", "Ravi", "Yuki", "Omar"},
	{"booked", "cancelled", "paid", "moved", "renewed", "shared", "forgot", "confirmed", "reviewed", "sent"},
	{"flight", "hotel", "invoice", "budget", "contract", "dentist", "passport", "insurance", "laptop", "server", "database",
		"report", "wedding", "dinner", "visa", "ticket", "meeting", "interview", "refund", "lease", "parcel", "concert"},
	{"Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Madrid", "Oslo", "Lima", "Porto", "Dublin", "Prague", "Seoul",
		"Monday", "Friday", "March", "June", "December", "next week"},
}

// BenchmarkRecallOverStdioMCP100k: the recall tool over 100,000 memory
// items, end to end through a real `engram mcp` process on stdio (the
// go-sdk client's CommandTransport), beside memory.remember in process on
// the same data. Target: recall p50 ≤ 30 ms. Building the store takes
// about half a minute.
func BenchmarkRecallOverStdioMCP100k(b *testing.B) {
	env, home := hermeticEnv(b)
	dir := filepath.Join(home, "data")
	e, err := core.Open(core.Options{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if _, err := conn.Call(ctx, e, memory.ActionConfigure, memory.ConfigureArgs{Store: "big", Type: memory.TypeEpisodic}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(i int) string { return recallBenchWords[i][rng.IntN(len(recallBenchWords[i]))] }
	start := time.Now()
	for i := range 100_000 {
		text := fmt.Sprintf("%s %s the %s for %s (note %d).", pick(0), pick(1), pick(2), pick(3), i)
		if _, err := conn.Call(ctx, e, memory.ActionMemorize, memory.MemorizeArgs{Store: "big", Item: memory.ItemInput{Type: "fact", Text: text}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("memorized 100,000 items in %v", time.Since(start).Round(time.Millisecond))
	queries := []string{"Lisbon flight", "Maria invoice", "dentist in Porto", "passport renewed", "Tom wedding Oslo"}
	direct := make([]time.Duration, 0, 200)
	for i := range 200 {
		t0 := time.Now()
		if _, err := conn.Call(ctx, e, memory.ActionRemember, memory.RememberArgs{Store: "big", Prompt: queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, engramBin, "mcp", "--data", dir, "--log", filepath.Join(home, "engram.log"))
	cmd.Env = env
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("starting engram mcp: %v", err)
	}
	defer func() { _ = cs.Close() }()
	viaStdio := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "recall", Arguments: map[string]any{"store": "big", "query": q}})
		if err != nil || res.IsError {
			b.Fatalf("recall %q: %v %v", q, err, res)
		}
		viaStdio = append(viaStdio, time.Since(t0))
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	d, s := median(direct), median(viaStdio)
	b.ReportMetric(float64(d.Microseconds()), "remember-in-process-p50-µs")
	b.ReportMetric(float64(s.Microseconds()), "recall-stdio-p50-µs")
	b.Logf("memory.remember in process p50 %v; recall through engram mcp over stdio p50 %v (target ≤ 30ms)", d, s)
}
