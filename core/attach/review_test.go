package attach_test

import (
	"context"
	"testing"
	"time"
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
	_ = client.Subscribe(ctx, "no.such.kind")
	moves := 0
	deadline := time.After(time.Second)
	for done := false; !done; {
		select {
		case <-client.Lost():
			moves++
			time.Sleep(time.Millisecond)
		case <-deadline:
			done = true
		}
	}
	if moves > 4 {
		t.Fatalf("%d moves to the next owner in a second, with the owner alive", moves)
	}
}
