package cortex

import (
	"context"
	"errors"
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
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// A query asked while the index loads its snapshot waits for it and
// answers from it, rather than reading the index keys (at a million
// items: seconds, and hundreds of MB of garbage, where the load takes a
// second), and its answer is the one from before the restart.
func TestAQueryWaitsForTheSnapshotToLoad(t *testing.T) {
	dir, want := snapshotStore(t)
	release, let := newGate(t)
	waiting := make(chan struct{}, 1)
	setHooks(t, dir, nil, func() { <-release }, nil, func() { waiting <- struct{}{} })
	c, _, call := reopen(t, dir, let) // its index starts loading, and the hook holds it
	type answer struct {
		res QueryResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := c.Query(context.Background(), call, limit50(t))
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
	if source := indexSource(c); source != "snapshot" {
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
			dir, want := snapshotStore(t)
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
			start, go1 := newGate(t)
			release, let := newGate(t)
			waiting := make(chan struct{}, 1)
			setHooks(t, dir, func() { <-start }, nil, func() { <-release }, func() { waiting <- struct{}{} })
			c, _, call := reopen(t, dir, go1, let)
			answered := make(chan error, 1)
			var res QueryResult
			go func() {
				var err error
				res, err = c.Query(context.Background(), call, limit50(t))
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
	dir, _ := snapshotStore(t)
	release, let := newGate(t)
	loading := make(chan struct{}, 1)
	setHooks(t, dir, nil, func() { loading <- struct{}{}; <-release }, nil, nil)
	c, env, call := reopen(t, dir, let)
	<-loading
	rig := enginetest.ForRegistry(t, env.Actions, call.Clock.(*clock.Fixed))
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
	if source := indexSource(c); source != "snapshot" {
		t.Fatalf("the index came from %q, want the snapshot", source)
	}
	res, err := c.Query(context.Background(), call, limit50(t))
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
	dir, _ := snapshotStore(t)
	release, let := newGate(t)
	waiting := make(chan struct{}, 2)
	setHooks(t, dir, nil, func() { <-release }, nil, func() { waiting <- struct{}{} })
	c, env, call := reopen(t, dir, let)
	q := limit50(t)

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

// snapshotStore is a durable store of 20 goals, its index saved on close;
// want is what Query{Limit: 50} answered agent_a before the close.
func snapshotStore(t *testing.T) (dir string, want QueryResult) {
	t.Helper()
	withSnapshotsOfAnySize(t)
	dir = t.TempDir()
	e, closeEngine, _ := openDurable(t, dir)
	for i := range 20 {
		e.create(agentA, "goal", "", obj{"title": "alpha item", "priority": Priorities[i%4]})
	}
	want = e.query(agentA, "cortex.query", Query{Limit: 50})
	closeEngine()
	return dir, want
}

// newGate is a channel a hook waits on, and its opening (once, and at the
// latest as the test ends: the engine's Close waits for the load).
func newGate(t *testing.T) (gate chan struct{}, open func()) {
	gate = make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	return gate, open
}

// setHooks sets the load hooks for the test's store in dir (a nil one stays
// unset) and unsets them all as the test ends.
func setHooks(t *testing.T, dir string, start, snapshot, items, wait func()) {
	only := func(f func()) func(string) {
		if f == nil {
			return nil
		}
		return func(d string) {
			if d == dir {
				f()
			}
		}
	}
	buildStartHook, snapshotLoadHook, itemsBuildHook, waitForLoadHook = only(start), only(snapshot), only(items), only(wait)
	t.Cleanup(func() { buildStartHook, snapshotLoadHook, itemsBuildHook, waitForLoadHook = nil, nil, nil, nil })
}

// reopen opens the store in dir again and registers a cortex on it,
// without waiting for its index (the hooks hold its load). The engine and
// the store close as the test ends, after its gates have opened.
func reopen(t *testing.T, dir string, gates ...func()) (*Cortex, *kit.Env, action.Call) {
	t.Helper()
	store, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	env, clk := newKitEnv(t, store)
	c := Register(env)
	t.Cleanup(func() {
		for _, open := range gates {
			open()
		}
		if err := env.Close(); err != nil {
			t.Error(err)
		}
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return c, env, action.Call{Principal: agentA.As, Clock: clk}
}

// limit50 is Query{Limit: 50}, validated.
func limit50(t *testing.T) Query {
	q := Query{Limit: 50}
	if err := q.validate(); err != nil {
		t.Fatal(err)
	}
	return q
}

// indexSource is where c's index came from ("snapshot" or "items").
func indexSource(c *Cortex) string {
	c.index.mu.RLock()
	defer c.index.mu.RUnlock()
	return c.index.source
}
