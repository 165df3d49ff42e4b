package kit

import (
	"context"
	"errors"
	"testing"
)

// TestStopCancelsFollowUpWork: work queued with AfterCommit (an embedding
// from a slow model) gives up when the engine starts closing, even when the
// action's own context cannot be cancelled, so closing does not wait on it.
func TestStopCancelsFollowUpWork(t *testing.T) {
	env := newEnv(t)
	running, gaveUp := make(chan struct{}), make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- env.Update(context.WithoutCancel(context.Background()), func(tx *Txn) error {
			tx.AfterCommit(func(ctx context.Context) {
				close(running)
				<-ctx.Done()
				gaveUp <- ctx.Err()
			})
			return tx.Set(key, []byte("v"))
		})
	}()
	<-running
	env.Stop()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow-up work ended with %v, want it cancelled", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v, ok := stored(t, env, key); !ok || v != "v" {
		t.Fatalf("the change itself was not kept: %q %v", v, ok)
	}
	env.Stop() // twice is fine
}
