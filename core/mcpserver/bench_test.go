package mcpserver

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
)

// p50 is the median of durations.
func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkToolCallOverhead measures one MCP tool call (memory_stats over
// the go-sdk's in-memory transport) and the action it runs (memory.stores,
// straight on the engine) in the same run, and reports both medians and
// the difference: what the MCP face adds (the protocol, the client
// registry, the trace entry). Target: at most 1 ms at p50.
func BenchmarkToolCallOverhead(b *testing.B) {
	e := newEngine(b)
	cs := connect(b, New(e, Options{}))
	direct := make([]time.Duration, 0, b.N)
	viaMCP := make([]time.Duration, 0, b.N)
	ctx := b.Context()
	for b.Loop() {
		start := time.Now()
		if _, err := e.Do(ctx, conn.Request{Action: "memory.stores", Args: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
		start = time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_stats", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatalf("memory_stats: %v %v", err, res)
		}
		viaMCP = append(viaMCP, time.Since(start))
	}
	d, m := p50(direct), p50(viaMCP)
	b.ReportMetric(float64(d.Microseconds()), "action-p50-µs")
	b.ReportMetric(float64(m.Microseconds()), "tool-p50-µs")
	b.ReportMetric(float64((m - d).Microseconds()), "overhead-p50-µs")
	b.Logf("action p50 %v, tool call p50 %v, overhead %v (target ≤ 1ms)", d, m, m-d)
}
