package attach

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/wire"
)

func openAs(t *testing.T, dir string) *Conn {
	t.Helper()
	c, err := Open(context.Background(), Options{DataDir: dir, Agent: "local", Open: func() (*core.Engine, error) {
		return core.Open(core.Options{DataDir: dir, Agent: "local"})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A move that finds the same owner again (a request's connection broke,
// the owner lives) tells a subscriber that it may have missed events,
// and never repeats an earlier change of owner as if it were new.
func TestAMoveToTheSameOwnerIsAGapNotAChange(t *testing.T) {
	dir := t.TempDir()
	first := openAs(t, dir)
	a, b := openAs(t, dir), openAs(t, dir)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One of them owns the directory now; the other is told so.
	for _, c := range []*Conn{a, b} {
		if _, err := c.Do(ctx, conn.Request{Action: "engine.info"}); err != nil {
			t.Fatal(err)
		}
	}
	client := a
	if a.Where().Owner {
		client = b
	}
	if client.Where().Owner {
		t.Fatal("both own the directory")
	}
	evs := client.Subscribe(ctx)
	client.mu.Lock()
	gen := client.gen
	client.mu.Unlock()
	if err := client.moveOn(gen); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-evs:
			switch ev.Name {
			case wire.EventGap:
				return
			case conn.EventOwnerChanged.Name():
				t.Fatalf("a move to the same owner said the owner changed: %+v", ev.Data)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a move to the same owner told the subscriber nothing")
		}
	}
}
