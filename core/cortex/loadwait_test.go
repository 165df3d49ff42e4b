package cortex

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/ids"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// A query asked while the index loads its snapshot waits for it and
// answers from it, rather than reading the index keys (at a million
// items: seconds, and hundreds of MB of garbage, where the load takes a
// second), and its answer is the one from before the restart.
func TestAQueryWaitsForTheSnapshotToLoad(t *testing.T) {
	withSnapshotsOfAnySize(t)
	dir := t.TempDir()
	e, closeEngine, _ := openDurable(t, dir)
	for i := range 20 {
		e.create(agentA, "goal", "", obj{"title": "alpha item", "priority": Priorities[i%4]})
	}
	q := Query{Limit: 50}
	want := e.query(agentA, "cortex.query", q)
	closeEngine()

	release, waiting := make(chan struct{}), make(chan struct{}, 1)
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(let) // before the engine closes: it waits for the load
	snapshotLoadHook = func(d string) {
		if d == dir {
			<-release
		}
	}
	waitForLoadHook = func(d string) {
		if d == dir {
			waiting <- struct{}{}
		}
	}
	t.Cleanup(func() { snapshotLoadHook, waitForLoadHook = nil, nil })
	store, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFixed(t0)
	tr, err := trace.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	env := &kit.Env{Store: store, Clock: clk, IDs: ids.New(clk, "cortex test"), Events: events.NewBroker(clk), Trace: tr,
		Actions: action.NewRegistry(), LLM: llm.Offline{}, Log: slog.New(slog.DiscardHandler)}
	c := Register(env) // its index starts loading, and the hook holds it
	t.Cleanup(func() {
		let()
		if err := env.Close(); err != nil {
			t.Error(err)
		}
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := q.validate(); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res QueryResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := c.Query(context.Background(), action.Call{Principal: agentA.As, Clock: clk}, q)
		answered <- answer{res, err}
	}()
	select {
	case <-waiting:
	case a := <-answered:
		t.Fatalf("a query answered while the snapshot loaded (err %v): it read the index keys instead of waiting", a.err)
	}
	let()
	a := <-answered
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.Count != want.Count || a.res.Checksum != want.Checksum || !slices.Equal(ids0(a.res.Items), ids0(want.Items)) {
		t.Fatalf("after waiting: %d items %v (checksum %s), want %d %v (%s)", a.res.Count, ids0(a.res.Items), a.res.Checksum,
			want.Count, ids0(want.Items), want.Checksum)
	}
	c.index.mu.RLock()
	source := c.index.source
	c.index.mu.RUnlock()
	if source != "snapshot" {
		t.Fatalf("the index came from %q, want the snapshot", source)
	}
}
