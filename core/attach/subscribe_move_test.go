package attach_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/conn"
)

// A subscription whose move to the next owner failed (none was found in
// time) goes on: once a later request finds an owner, the subscriber hears
// of it, rather than never hearing of anything again.
func TestSubscriptionOutlivesAFailedMove(t *testing.T) {
	dir := t.TempDir()
	owner := open(t, dir, "local")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var broken atomic.Bool
	broken.Store(true)
	tried := make(chan struct{}, 1) // a move tried to open the directory, and failed
	client, err := attach.Open(ctx, attach.Options{DataDir: dir, Agent: "local", Open: func() (*core.Engine, error) {
		if broken.Load() {
			select {
			case tried <- struct{}{}:
			default:
			}
			return nil, errors.New("not yet")
		}
		return core.Open(core.Options{DataDir: dir, Agent: "local"})
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	evs := client.Subscribe(ctx)
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	select { // the subscription notices, its move fails
	case <-tried:
	case <-ctx.Done():
		t.Fatal("the subscription never tried to move on")
	}
	broken.Store(false)
	for i := 0; i < 3; i++ {
		if _, err := client.Do(ctx, conn.Request{Action: "engine.info"}); err == nil {
			break
		}
	}
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("the subscription ended for good after one failed move")
			}
			if ev.Name == conn.EventOwnerChanged.Name() {
				return // the subscriber reloads what it shows
			}
		case <-ctx.Done():
			t.Fatal("no engram.owner_changed")
		}
	}
}
