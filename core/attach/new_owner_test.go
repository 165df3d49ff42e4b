package attach_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/storage"
)

// When another engram has taken the directory and serves the same socket
// path, a client's next request reaches it: the client says at once which
// process answered, and moves to it, so that its subscribers hear of the
// change without waiting for their stream to notice.
func TestAClientFollowsANewOwnerThatAnswersOnTheSameSocket(t *testing.T) {
	dir := t.TempDir()
	first := open(t, dir, "local")
	client := open(t, dir, "local")
	if client.Where().Owner {
		t.Fatal("the second engram owns the directory")
	}
	lost := client.Lost()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// Another engram (pid 777, as its lock file says) takes the directory
	// and serves it where the first did.
	engine, err := core.Open(core.Options{DataDir: dir, Agent: "local"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close() })
	if err := os.WriteFile(filepath.Join(dir, storage.LockFileName), []byte("777\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := server.New(engine, server.Options{PID: 777})
	l, err := net.Listen("unix", attach.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeUnix(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})

	create(t, client, "to the new owner")
	if w := client.Where(); w.Owner || w.PID != 777 {
		t.Errorf("right after the new owner answered: %+v, want attached to pid 777", w)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not move to the new owner within 10s of its answer")
	}
	if w := client.Where(); w.Owner || w.PID != 777 {
		t.Errorf("after the move: %+v, want attached to pid 777", w)
	}
}
