package cortex

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
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

// A snapshot file that turns out unusable (another store's, or damaged)
// means the index is built from the items, which takes long: a query
// that came while the build still looked like loading a snapshot stops
// waiting then and reads the index keys, rather than waiting for the
// whole build (the items build is held here until the query answers).
func TestAQueryDoesNotWaitForABuildFromTheItems(t *testing.T) {
	for name, spoil := range map[string]func(data []byte) []byte{
		"another store's": func(data []byte) []byte { data[0] ^= 1; return data },
		"damaged": func(data []byte) []byte {
			token, _, _ := strings.Cut(string(data), "\n")
			return []byte(token + "\nnot a snapshot")
		},
	} {
		t.Run(name, func(t *testing.T) {
			withSnapshotsOfAnySize(t)
			dir := t.TempDir()
			e, closeEngine, _ := openDurable(t, dir)
			for i := range 20 {
				e.create(agentA, "goal", "", obj{"title": "alpha item", "priority": Priorities[i%4]})
			}
			q := Query{Limit: 50}
			want := e.query(agentA, "cortex.query", q)
			closeEngine()
			path := filepath.Join(dir, snapshotFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, spoil(data), 0o600); err != nil {
				t.Fatal(err)
			}

			// The build starts once the query waits, and its build from
			// the items is held until the test ends.
			start, release, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
			var startOnce, releaseOnce sync.Once
			go1 := func() { startOnce.Do(func() { close(start) }) }
			let := func() { go1(); releaseOnce.Do(func() { close(release) }) }
			t.Cleanup(let)
			buildStartHook = func(d string) {
				if d == dir {
					<-start
				}
			}
			waitForLoadHook = func(d string) {
				if d == dir {
					waiting <- struct{}{}
				}
			}
			itemsBuildHook = func(d string) {
				if d == dir {
					<-release
				}
			}
			t.Cleanup(func() { buildStartHook, waitForLoadHook, itemsBuildHook = nil, nil, nil })
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
			c := Register(env)
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
			answered := make(chan error, 1)
			var res QueryResult
			go func() {
				var err error
				res, err = c.Query(context.Background(), action.Call{Principal: agentA.As, Clock: clk}, q)
				answered <- err
			}()
			<-waiting // the build has not looked at the snapshot yet
			go1()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second): // a failsafe: the answer comes at once
				t.Fatal("the query waited for the index to be built from the items")
			}
			if res.Count != want.Count || res.Checksum != want.Checksum {
				t.Fatalf("read from the index keys: %d items (checksum %s), want %d (%s)", res.Count, res.Checksum, want.Count, want.Checksum)
			}
		})
	}
}

// A write that commits while the snapshot loads neither waits for the
// load nor is lost from the index: the query after the load counts it.
func TestAWriteDuringTheSnapshotLoadIsInTheIndexAfter(t *testing.T) {
	withSnapshotsOfAnySize(t)
	dir := t.TempDir()
	e, closeEngine, _ := openDurable(t, dir)
	for i := range 20 {
		e.create(agentA, "goal", "", obj{"title": "alpha item", "priority": Priorities[i%4]})
	}
	closeEngine()

	release, loading := make(chan struct{}), make(chan struct{}, 1)
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(let)
	snapshotLoadHook = func(d string) {
		if d == dir {
			loading <- struct{}{}
			<-release
		}
	}
	t.Cleanup(func() { snapshotLoadHook = nil })
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
	c := Register(env)
	t.Cleanup(func() {
		let()
		if err := env.Close(); err != nil {
			t.Error(err)
		}
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	<-loading
	rig := enginetest.ForRegistry(t, env.Actions, clk)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		enginetest.Call[ItemResult](rig, agentA, "cortex.create", obj{"type": "goal", "id": "late", "fields": obj{"title": "written during the load"}})
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second): // a failsafe: the write does not wait
		t.Fatal("a write waited for the snapshot to load")
	}
	let()
	<-c.Indexed()
	c.index.mu.RLock()
	source := c.index.source
	c.index.mu.RUnlock()
	if source != "snapshot" {
		t.Fatalf("the index came from %q, want the snapshot", source)
	}
	q := Query{Limit: 50}
	if err := q.validate(); err != nil {
		t.Fatal(err)
	}
	res, err := c.Query(context.Background(), action.Call{Principal: agentA.As, Clock: clk}, q)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 21 || !slices.Contains(ids0(res.Items), "late") {
		t.Fatalf("after the load: %d items %v, want 21 with late", res.Count, ids0(res.Items))
	}
}

// Closing the engine while a query waits for the snapshot's load ends
// both: the load finishes, the query answers and Close returns; a query
// whose context ends stops waiting.
func TestCloseDuringTheSnapshotLoadEndsTheWaitingQuery(t *testing.T) {
	withSnapshotsOfAnySize(t)
	dir := t.TempDir()
	e, closeEngine, _ := openDurable(t, dir)
	for i := range 20 {
		e.create(agentA, "goal", "", obj{"title": "alpha item", "priority": Priorities[i%4]})
	}
	closeEngine()

	release, waiting := make(chan struct{}), make(chan struct{}, 2)
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(let)
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
	t.Cleanup(func() { _ = store.Close() })
	clk := clock.NewFixed(t0)
	tr, err := trace.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	env := &kit.Env{Store: store, Clock: clk, IDs: ids.New(clk, "cortex test"), Events: events.NewBroker(clk), Trace: tr,
		Actions: action.NewRegistry(), LLM: llm.Offline{}, Log: slog.New(slog.DiscardHandler)}
	c := Register(env)
	q := Query{Limit: 50}
	if err := q.validate(); err != nil {
		t.Fatal(err)
	}
	call := action.Call{Principal: agentA.As, Clock: clk}

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := c.Query(ctx, call, q); gaveUp <- err }()
	<-waiting
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a query whose context ended while waiting: %v, want context.Canceled", err)
	}

	answered := make(chan error, 1)
	go func() { _, err := c.Query(context.Background(), call, q); answered <- err }()
	<-waiting
	closed := make(chan error, 1)
	go func() { closed <- env.Close() }()
	let()
	for what, ch := range map[string]chan error{"the query": answered, "Close": closed} {
		select {
		case err := <-ch:
			if err != nil { // the store itself stays open
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second): // a failsafe: both end at once
			t.Fatalf("closing the engine during the load hangs %s", what)
		}
	}
}
