package tui

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
)

// askingClient is a client connection that asks engine.info with its
// arguments, as attach's does; asks hears whether each ask wanted the
// counts.
type askingClient struct {
	*clientConn
	asks chan bool
}

func (c *askingClient) Info(ctx context.Context) (conn.Info, error) {
	c.asks <- true
	return c.clientConn.Info(ctx)
}

func (c *askingClient) InfoWith(ctx context.Context, args conn.InfoArgs) (conn.Info, error) {
	c.asks <- args.Counts == nil || *args.Counts
	return c.clientConn.Conn.(conn.InfoAsker).InfoWith(ctx, args)
}

// Once the owner changed, the console asks the new one for engine.info
// (for the header) without the counts, as it does at start: they read
// every key of the store, seconds at a million items.
func TestOwnerChangeAsksInfoWithoutCounts(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	c := &askingClient{clientConn: newClientConn(engine, conn.Where{PID: 4242}), asks: make(chan bool, 8)}
	c.quiet = true
	tm := startClient(t, c)
	if counts := <-c.asks; counts {
		t.Fatal("the first frame asked for the counts")
	}
	waitFor(t, tm, "attached to pid 4242")
	c.send(t, ownerGone())
	select {
	case counts := <-c.asks:
		if counts {
			t.Fatal("after the owner changed, the console asked engine.info for the counts")
		}
	case <-time.After(10 * time.Second): // a failsafe: the ask comes at once
		t.Fatal("the console did not ask engine.info again after the owner changed")
	}
}
