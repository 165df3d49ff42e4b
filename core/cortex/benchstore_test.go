package cortex

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

// Issue 17: the million-item benchmarks reuse a built store between runs.
// Building 1,000,000 items with bulkCreate takes minutes; with
// -cortex-bench-dir DIR the first run builds each store in a directory of
// DIR named after its data shape, size and seed, and writes a marker file
// there once the build is complete; later runs find the marker and open
// the store instead. Without the flag every run builds in b.TempDir().
//
// The marker names the data shape, not the engram version that wrote it:
// delete DIR when the item format or the generators change.

var benchDir = flag.String("cortex-bench-dir", "", "keep the stores the cortex benchmarks build in this directory, and reuse them in later runs")

// benchShape is a generated data set: a spec generator, a size and a seed.
type benchShape struct {
	name  string // names the generator, e.g. "itemspecs"
	n     int
	seed  uint64
	specs func(n int, seed uint64) []spec
}

// key names the shape's directory and is the marker's content.
func (s benchShape) key() string { return fmt.Sprintf("%s-%d-%d", s.name, s.n, s.seed) }

// itemSpecsShape is itemSpecs(n, 7), the data of the seed's benchmarks.
func itemSpecsShape(n int) benchShape {
	return benchShape{name: "itemspecs", n: n, seed: 7, specs: itemSpecs}
}

// fleetShape is fleetSpecs(n, 7): many agents, mostly finished work.
func fleetShape(n int) benchShape {
	return benchShape{name: "fleet", n: n, seed: 7, specs: fleetSpecs}
}

const benchMarker = "built"

// benchf prints a line about a benchmark's data on stderr: b.Logf's lines
// are dropped for a benchmark with sub-benchmarks, and the build times
// are worth seeing in every run.
func benchf(b testing.TB, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", b.Name(), fmt.Sprintf(format, args...))
}

// benchEnv is a cortex over a durable store holding shape's items, built
// or reused (see benchDir), with its query index ready; dir is the
// shape's directory (other engines' copies of the data may live there),
// and specs the items it holds.
func benchEnv(b *testing.B, shape benchShape) (e *testEnv, dir string, specs []spec) {
	b.Helper()
	e, dir, specs, _ = openBenchEnv(b, shape)
	return e, dir, specs
}

// openBenchEnv is benchEnv; built says whether it built the store.
func openBenchEnv(b testing.TB, shape benchShape) (e *testEnv, dir string, specs []spec, built bool) {
	b.Helper()
	root := *benchDir
	if root == "" {
		root = b.TempDir()
	}
	dir = filepath.Join(root, shape.key())
	specs = shape.specs(shape.n, shape.seed)
	marker, err := os.ReadFile(filepath.Join(dir, benchMarker))
	reuse := err == nil && string(marker) == shape.key()
	if !reuse {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			b.Fatal(err)
		}
		// A build that did not finish, or of other data: start over.
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	store, err := storage.Open(storage.Options{Dir: filepath.Join(dir, "badger")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := store.Close(); err != nil {
			b.Errorf("closing the store: %v", err)
		}
	})
	e = newEnvOn(b, store) // waits for the query index
	if reuse {
		benchf(b, "%s: reused the store in %s (open and index in %s)", shape.key(), dir, time.Since(start).Round(time.Millisecond))
		return e, dir, specs, false
	}
	// In chunks, so that the loader's prepared items for a million never
	// sit in memory at once; the chunks draw the same ids and times as one
	// call would.
	const chunk = 50_000
	for from := 0; from < len(specs); from += chunk {
		// 50 per transaction: larger ones are slower (latency_bench_test.go).
		e.bulkCreate(specs[from:min(from+chunk, len(specs))], 50)
	}
	benchf(b, "%s: built %d items in %s, in %s", shape.key(), len(specs), time.Since(start).Round(time.Millisecond), dir)
	if err := os.WriteFile(filepath.Join(dir, benchMarker), []byte(shape.key()), 0o644); err != nil {
		b.Fatal(err)
	}
	return e, dir, specs, true
}

// Issue 17: with -cortex-bench-dir a benchmark reuses a store only when a
// complete build of the same data is there: a build cut short (no marker)
// or of other data is built again, and a reused store answers as the
// built one did.
func TestBenchStoresAreReusedOnlyWhenCompleteAndTheSame(t *testing.T) {
	root := t.TempDir()
	defer func(old string) { *benchDir = old }(*benchDir)
	*benchDir = root
	shape := itemSpecsShape(300)
	q := Query{Type: "goal", Status: []string{"active", "in_progress"}}
	var want QueryResult
	open := func(name string, wantBuilt bool) {
		t.Run(name, func(t *testing.T) {
			e, dir, specs, built := openBenchEnv(t, shape)
			if built != wantBuilt {
				t.Fatalf("built %v, want %v", built, wantBuilt)
			}
			if dir != filepath.Join(root, "itemspecs-300-7") || len(specs) != 300 {
				t.Fatalf("dir %s, %d specs", dir, len(specs))
			}
			res := e.query(agentA, "cortex.query", q)
			if want.Checksum == "" {
				want = res
			}
			if res.Count == 0 || res.Count != want.Count || res.Checksum != want.Checksum || !slices.Equal(ids0(res.Items), ids0(want.Items)) {
				t.Fatalf("count %d checksum %s; the first build's %d %s", res.Count, res.Checksum, want.Count, want.Checksum)
			}
		})
	}
	open("first", true)
	open("again", false)
	marker := filepath.Join(root, "itemspecs-300-7", benchMarker)
	if err := os.Remove(marker); err != nil { // as if the build had been cut short
		t.Fatal(err)
	}
	open("unfinished", true)
	if err := os.WriteFile(marker, []byte("itemspecs-300-8"), 0o644); err != nil {
		t.Fatal(err)
	}
	open("other data", true)
	open("rebuilt", false)
}

// fleetSpecs is a realistic data shape for turn-start retrieval: 20
// agents (agent_a, agent_b, agent_c ... agent_t) own equal shares of the
// items, and most work is done: 55% completed, 38% archived, 3% active,
// 2.5% in_progress, 1.5% blocked, so 7% are open (3,500 of agent_a's
// 50,000 at 1M items). Priorities lean to medium (critical 5%, high 20%,
// medium 50%, low 25%); types are 20% goals, 60% actions, 20% questions;
// 60% have a due date; tags and text are itemSpecs'. No item is shared.
func fleetSpecs(n int, seed uint64) []spec {
	rng := rand.New(rand.NewPCG(seed, 2))
	words := []string{"login", "migration", "security", "review", "deploy", "billing", "search", "cache", "latency", "report",
		"onboarding", "backup", "audit", "alerting", "pricing", "mobile", "export", "import", "quota", "roadmap"}
	pick := func(names []string, weights []int) string { // weights in per mille
		r := rng.IntN(1000)
		for i, w := range weights {
			if r < w {
				return names[i]
			}
			r -= w
		}
		return names[len(names)-1]
	}
	specs := make([]spec, n)
	for i := range specs {
		fields := obj{
			"title":       fmt.Sprintf("%s %s item %d", words[rng.IntN(20)], words[rng.IntN(20)], i),
			"description": fmt.Sprintf("about %s and %s", words[rng.IntN(20)], words[rng.IntN(20)]),
			"priority":    pick(Priorities, []int{50, 200, 500, 250}),
			"status":      pick(Statuses, []int{30, 25, 15, 550, 380}),
			"progress":    rng.IntN(101),
			"blocking":    rng.IntN(10) == 0,
		}
		if rng.IntN(10) < 6 {
			fields["due_at"] = t0.Add(time.Duration(rng.IntN(24*60)) * time.Hour).Format(time.RFC3339)
		}
		var tags []string
		for range rng.IntN(4) {
			tags = append(tags, fmt.Sprintf("tag%02d", rng.IntN(20)))
		}
		if rng.IntN(6) == 0 {
			tags = append(tags, "security")
		}
		fields["tags"] = tags
		owner := fmt.Sprintf("agent_%c", 'a'+rng.IntN(20))
		specs[i] = spec{typ: pick(Types, []int{200, 600, 200}), id: fmt.Sprintf("item_%07d", i), owner: owner, fields: fields}
	}
	return specs
}

// BenchmarkCortexActive1M is turn-start retrieval at 1,000,000 items:
// cortex.active for agent_a with the default limit (50), through the
// action path, as a turn asks for it; issue 17's target is p50 ≤ 5 ms.
// Two data shapes (build them once with -cortex-bench-dir):
//
//   - itemspecs: itemSpecs(1M, 7), the seed benchmarks' data: two agents,
//     90% of the items agent_a's and 60% of those open, so 540,000 match
//     and the count and checksum of all matches dominate the time.
//   - fleet: fleetSpecs(1M, 7), 20 agents and mostly finished work, so
//     agent_a has about 3,500 open items.
//
// It checks once that the count and checksum equal a brute-force filter
// of the specs. Each store takes about 20 minutes to build on a busy
// 2-core machine, so keep them:
//
//	go test ./core/cortex -run '^$' -bench Active1M -benchtime 200x -timeout 60m -cortex-bench-dir /tmp/cortex-bench
func BenchmarkCortexActive1M(b *testing.B) {
	onBothShapes(b, 1_000_000, benchmarkActive)
}

// BenchmarkCortexActiveAfterAChange1M is BenchmarkCortexActive1M with
// the priority of one of agent_a's items changed before each ask
// (untimed): an agent's turn start after its last turn wrote, where no
// cached match helps.
func BenchmarkCortexActiveAfterAChange1M(b *testing.B) {
	onBothShapes(b, 1_000_000, benchmarkActiveAfterAChange)
}

func benchmarkActiveAfterAChange(b *testing.B, shape benchShape) {
	e, _, specs := benchEnv(b, shape)
	var ids []string
	for _, s := range specs {
		if s.owner == "agent_a" && len(ids) < 100 {
			ids = append(ids, s.id)
		}
	}
	var l latencies
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		// A change the index sees: the item's priority, to one it has not.
		id := ids[i%len(ids)]
		var got ItemResult
		e.Do(agentA, "cortex.get", obj{"id": id}, &got)
		priority := "high"
		if got.Item.Priority == "high" {
			priority = "low"
		}
		if _, err := e.Try(agentA, "cortex.update", obj{"id": id, "updates": obj{"priority": priority}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		l.time(func() {
			if _, err := e.Try(agentA, "cortex.active", "{}"); err != nil {
				b.Fatal(err)
			}
		})
	}
	l.report(b)
}

// BenchmarkCortexActive100k is the same at 100,000 items (quicker to build).
func BenchmarkCortexActive100k(b *testing.B) {
	onBothShapes(b, 100_000, benchmarkActive)
}

// onBothShapes runs bench on the itemSpecs and the fleet shape of n items.
func onBothShapes(b *testing.B, n int, bench func(*testing.B, benchShape)) {
	for _, shape := range []benchShape{itemSpecsShape(n), fleetShape(n)} {
		b.Run(shape.name, func(b *testing.B) { bench(b, shape) })
	}
}

func benchmarkActive(b *testing.B, shape benchShape) {
	e, _, specs := benchEnv(b, shape)
	var want []string
	for _, s := range specs {
		if matches(s, "agent_a", Query{Status: activeStatuses}) {
			want = append(want, s.id)
		}
	}
	var res QueryResult
	e.Do(agentA, "cortex.active", obj{}, &res)
	if res.Count != len(want) || res.Checksum != Checksum(want) || len(res.Items) != min(len(want), defaultLimit) {
		b.Fatalf("cortex.active over %s: count %d checksum %s, %d items; want %d %s", shape.key(), res.Count, res.Checksum, len(res.Items), len(want), Checksum(want))
	}
	b.Logf("%s: %d open items of agent_a", shape.key(), len(want))
	var l latencies
	for b.Loop() {
		l.time(func() {
			if _, err := e.Try(agentA, "cortex.active", "{}"); err != nil {
				b.Fatal(err)
			}
		})
	}
	l.report(b)
}
