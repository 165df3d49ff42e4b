package core

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// TestCloseWaitsForActionsInFlight runs an action that blocks until told,
// closes the engine meanwhile, and checks that Close waits for it (its write
// lands in an open store) and that an action asked for once Close has begun
// is refused rather than run against a closing store.
func TestCloseWaitsForActionsInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	hold := func(env *kit.Env) error {
		action.Register(env.Actions, action.Spec{Name: "test.hold", Summary: "blocks until released, then writes"},
			func(ctx context.Context, call action.Call, _ struct{}) (struct{}, error) {
				close(started)
				<-release
				return struct{}{}, env.Store.Update(ctx, func(tx *storage.Tx) error {
					return tx.Set(storage.Key(storage.PrefixMeta, "held"), []byte("done"))
				})
			})
		return nil
	}
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{hold}})
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), Request{Action: "test.hold"})
		held <- err
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()

	// Close has begun once a new action is refused; until then, wait for it.
	for {
		_, err := e.Do(context.Background(), Request{Action: "engine.info"})
		if err == nil {
			continue
		}
		if errs.KindOf(err) != errs.Internal || !strings.Contains(err.Error(), "the engine is closing") {
			t.Fatalf("engine.info during Close: %v", err)
		}
		break
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while an action was still running", err)
	default:
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the action in flight failed: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}
