package cortex

import (
	"runtime/debug"
	"testing"

	"github.com/engram-console/engram/storage"
)

// Two cortexes of one process loading snapshots at once (tests, a
// program embedding engines) change the one GC percent: once both are
// done it is back to what it was before, whichever ends first. (Each
// restored what it found as it began: the second found the first's
// loading percent, and left it for good when it ended last.)
func TestOverlappingSnapshotLoadsRestoreTheGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	dirA, _ := snapshotStore(t)
	dirB, _ := snapshotStore(t)
	old := snapshotMinItems
	snapshotMinItems = 1 << 30 // indexes too small to hold the heap for
	t.Cleanup(func() { snapshotMinItems = old })
	const user = 137
	prev := debug.SetGCPercent(user)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	gates := map[string]chan struct{}{dirA: make(chan struct{}), dirB: make(chan struct{})}
	arrived := make(chan string, 2)
	snapshotLoadHook = func(dir string) {
		arrived <- dir
		<-gates[dir]
	}
	t.Cleanup(func() { snapshotLoadHook = nil })
	open := func(dir string) func() {
		store, err := storage.Open(storage.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		env, _ := newKitEnv(t, store)
		Register(env)
		if got := <-arrived; got != dir {
			t.Fatalf("%s loads, want %s", got, dir)
		}
		return func() {
			close(gates[dir])
			if err := env.Close(); err != nil { // waits for the load
				t.Error(err)
			}
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	closeA := open(dirA) // A loads at loadGCPercent…
	closeB := open(dirB) // …and B begins while it does
	closeA()
	closeB()
	if got := debug.SetGCPercent(user); got != user {
		t.Fatalf("the GC percent is %d once both loads ended, want %d as before them", got, user)
	}
}
