package attach_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core/wire"
)

// A subscription the owner refuses for good (a kind it does not know)
// does not move to the next owner over and over while the owner lives.
func TestARefusedSubscriptionDoesNotSpin(t *testing.T) {
	dir := t.TempDir()
	_ = open(t, dir, "local")
	client := open(t, dir, "local")
	if client.Where().Owner {
		t.Fatal("the second engram owns the directory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Each time the stream is asked for again, the same owner is found and
	// the subscriber is told of a gap: count those, not Lost(), which
	// stays closed for as long as a move takes.
	stream := client.Subscribe(ctx, "no.such.kind")
	again := 0
	deadline := time.After(time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-stream:
			if !ok {
				t.Fatal("the stream ended while the owner lives")
			}
			if ev.Name == wire.EventGap {
				again++
			}
		case <-deadline:
			done = true
		}
	}
	if again > 4 {
		t.Fatalf("the stream was asked for %d times in a second, with the owner alive", again)
	}
}
