package core

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/kit"
)

// While a request with at runs alone, the engine's Now (what the console
// and a remote client's clock read) stays the base clock's: the pinned
// time is the request's only.
func TestPinnedTimeIsTheRequestsOnly(t *testing.T) {
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	pinned := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var e *Engine
	var inside, outside time.Time
	probe := func(env *kit.Env) error {
		ref := action.NewRef[action.None, action.None]("test.probe")
		ref.Register(env.Actions, action.Spec{Summary: "reads the clocks"}, func(_ context.Context, call action.Call, _ action.None) (action.None, error) {
			inside, outside = call.Clock.Now(), e.Now()
			return action.None{}, nil
		})
		return nil
	}
	opts := Options{InMemory: true, Clock: clock.NewFixed(base), IDSeed: "test"}
	opts.Subsystems = append(DefaultSubsystems(opts), probe)
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	if _, err := e.Do(context.Background(), Request{Action: "test.probe", At: &pinned}); err != nil {
		t.Fatal(err)
	}
	if !inside.Equal(pinned) || !outside.Equal(base) {
		t.Errorf("inside the request %v (want %v), engine.Now %v (want the base %v)", inside, pinned, outside, base)
	}
}

// A script's step without at (a session, the real clock) runs side by
// side with a long request; only a step with at waits for it.
func TestOnlyPinnedStepsWaitForALongRequest(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	block := func(env *kit.Env) error {
		ref := action.NewRef[action.None, action.None]("test.block")
		ref.Register(env.Actions, action.Spec{Summary: "waits to be released"}, func(context.Context, action.Call, action.None) (action.None, error) {
			close(entered)
			<-release
			return action.None{}, nil
		})
		return nil
	}
	opts := Options{InMemory: true, Clock: clock.NewFixed(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)), IDSeed: "test"}
	opts.Subsystems = append(DefaultSubsystems(opts), block)
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	blocked := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), Request{Action: "test.block"})
		blocked <- err
	}()
	<-entered
	// A session step without at finishes while the long request runs.
	if _, err := e.Do(context.Background(), Request{Action: "engine.info", Session: "ann/1"}); err != nil {
		t.Fatal(err)
	}
	// A pinned step waits for it.
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pinnedDone := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), Request{Action: "engine.info", Session: "ann/1", At: &at})
		pinnedDone <- err
	}()
	select {
	case err := <-pinnedDone:
		t.Fatalf("a pinned step ran beside a running request (%v)", err)
	case <-time.After(50 * time.Millisecond):
		// Not a sleep to hide a race: the step must still be waiting now.
	}
	close(release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := <-pinnedDone; err != nil {
		t.Fatal(err)
	}
}
