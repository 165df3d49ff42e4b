package attach_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// A client whose move to the next owner failed once must not panic (close
// of a closed channel) when it notices the dead owner again.
func TestAFailedMoveCanBeTriedAgain(t *testing.T) {
	dir := t.TempDir()
	owner := open(t, dir, "local")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	broken := errors.New("the store cannot be opened")
	client, err := attach.Open(ctx, attach.Options{DataDir: dir, Agent: "local", Open: func() (*core.Engine, error) {
		return nil, broken
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	// Each request tries a move at once (nothing ran), and each move fails.
	for i := range 3 {
		if _, err := client.Do(ctx, conn.Request{Action: "engine.info"}); errs.KindOf(err) != errs.Unavailable {
			t.Fatalf("try %d with no owner to be found: %v, want Unavailable", i, err)
		}
	}
}
