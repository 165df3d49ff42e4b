package attach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
)

// percentile is the p-th percentile (0–100) of ds, which it sorts.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p/100))]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkInfoRoundTripOverTheSocket: engine.info from a client, through
// the owner's Unix socket. Target: p50 ≤ 150 µs.
func BenchmarkInfoRoundTripOverTheSocket(b *testing.B) {
	dir := b.TempDir()
	open(b, dir, "local")
	client := open(b, dir, "local")
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := client.Info(ctx); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(us(percentile(ds, 50)), "p50-µs")
	b.ReportMetric(us(percentile(ds, 99)), "p99-µs")
}

// BenchmarkGetRemoteAgainstInProcess: cortex.get of one item, by the
// owner in process and by a client over the socket, in the same run.
// Target: the client's p50 at most 200 µs above the owner's.
func BenchmarkGetRemoteAgainstInProcess(b *testing.B) {
	dir := b.TempDir()
	owner := open(b, dir, "local")
	client := open(b, dir, "local")
	id := create(b, owner, "read me").Item.ID
	ctx := context.Background()
	measure := func(c conn.Conn) time.Duration {
		ds := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if _, err := conn.Call(ctx, c, cortex.ActionGet, cortex.GetArgs{ID: id}); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		return percentile(ds, 50)
	}
	b.ResetTimer()
	local := measure(owner)
	remote := measure(client)
	b.StopTimer()
	b.ReportMetric(us(local), "in-process-p50-µs")
	b.ReportMetric(us(remote), "remote-p50-µs")
	b.ReportMetric(us(remote-local), "overhead-p50-µs")
}

// BenchmarkEventReachesAClient: the time from a write's commit (the
// owner's Do returning) to its event at a client subscribed over the
// socket. Target: p99 ≤ 5 ms.
func BenchmarkEventReachesAClient(b *testing.B) {
	dir := b.TempDir()
	owner := open(b, dir, "local")
	client := open(b, dir, "local")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := client.Subscribe(ctx, cortex.EventItemMutated.Name())
	create(b, owner, "warm up")
	<-evs
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		res := create(b, owner, "event "+strconv.Itoa(i))
		committed := time.Now()
		for ev := range evs {
			if e, ok := cortex.EventItemMutated.Of(ev); ok && e.ItemID == res.Item.ID {
				ds = append(ds, max(0, time.Since(committed)))
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(us(percentile(ds, 50)), "p50-µs")
	b.ReportMetric(us(percentile(ds, 99)), "p99-µs")
}

// BenchmarkFourClientsWriting: 4 clients × 1,000 cortex.create through the
// owner, against one writer in the owner's process doing 1,000, in the
// same run. Target: the clients' throughput within 30% of the one
// writer's.
func BenchmarkFourClientsWriting(b *testing.B) {
	const clients, writes = 4, 1000
	dir := b.TempDir()
	owner := open(b, dir, "local")
	cs := make([]conn.Conn, clients)
	for i := range cs {
		cs[i] = open(b, dir, "local")
	}
	ctx := context.Background()
	write := func(c conn.Conn, who string, n int) {
		for i := range n {
			fields := map[string]json.RawMessage{"title": json.RawMessage(strconv.Quote(fmt.Sprintf("%s %d", who, i)))}
			if _, err := conn.Call(ctx, c, cortex.ActionCreate, cortex.CreateArgs{Type: "goal", Fields: fields}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var alone, together time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		write(owner, "alone", writes)
		alone += time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Add(1)
			go func() { defer wg.Done(); write(c, "client "+strconv.Itoa(i), writes) }()
		}
		wg.Wait()
		together += time.Since(start)
	}
	b.StopTimer()
	aloneRate := float64(writes*b.N) / alone.Seconds()
	togetherRate := float64(clients*writes*b.N) / together.Seconds()
	b.ReportMetric(aloneRate, "in-process-writes/s")
	b.ReportMetric(togetherRate, "4-clients-writes/s")
	b.ReportMetric(togetherRate/aloneRate, "ratio")
}
