package tui

import (
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/tour"
)

// newTourEngine is engram as it runs (the planner and the tour included),
// in memory, on the golden clock.
func newTourEngine(t *testing.T) conn.Conn {
	t.Helper()
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}), tour.Subsystem())
	engine, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	return engine
}

// offer is the console's offer of the tour on an empty store.
const offer = "New here? T loads a short tour"
