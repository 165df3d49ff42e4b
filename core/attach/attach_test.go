package attach_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/storage"
)

// open opens dir as the test's engram would: attach, or own it.
func open(t testing.TB, dir, agent string) *attach.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := attach.Open(ctx, attach.Options{DataDir: dir, Agent: agent, Open: func() (*core.Engine, error) {
		return core.Open(core.Options{DataDir: dir, Agent: agent})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func create(t testing.TB, c conn.Conn, title string) cortex.ItemResult {
	t.Helper()
	fields := map[string]json.RawMessage{"title": json.RawMessage(strconv.Quote(title))}
	res, err := conn.Call(context.Background(), c, cortex.ActionCreate, cortex.CreateArgs{Type: "goal", Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheSecondEngramAttachesToTheFirst(t *testing.T) {
	dir := t.TempDir()
	owner := open(t, dir, "local")
	client := open(t, dir, "local")
	if w := owner.Where(); !w.Owner || w.PID != os.Getpid() {
		t.Errorf("the first is %+v, want the owner", w)
	}
	if w := client.Where(); w.Owner || w.PID != os.Getpid() {
		t.Errorf("the second is %+v, want attached to pid %d", w, os.Getpid())
	}
	made := create(t, client, "made by the client")
	got, err := conn.Call(context.Background(), owner, cortex.ActionGet, cortex.GetArgs{ID: made.Item.ID})
	if err != nil || got.Item.Title != "made by the client" {
		t.Fatalf("the owner reads %+v, %v", got.Item, err)
	}
	info, err := os.Stat(attach.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("the socket's mode is %v, want 0600: it trusts whoever connects", perm)
	}
}

// A socket file left by a dead owner (here: a plain file, and a socket
// nobody listens on) is replaced, never trusted.
func TestAStaleSocketIsReplaced(t *testing.T) {
	for _, leave := range []string{"file", "socket"} {
		t.Run(leave, func(t *testing.T) {
			dir := t.TempDir()
			path := attach.SocketPath(dir)
			switch leave {
			case "file":
				if err := os.WriteFile(path, []byte("not a socket"), 0o600); err != nil {
					t.Fatal(err)
				}
			case "socket":
				l, err := net.Listen("unix", path)
				if err != nil {
					t.Fatal(err)
				}
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				_ = l.Close() // the file stays; nobody listens
			}
			owner := open(t, dir, "local")
			if !owner.Where().Owner {
				t.Fatalf("%+v, want the owner", owner.Where())
			}
			client := open(t, dir, "local")
			if client.Where().Owner {
				t.Fatalf("the second engram owns the directory too")
			}
			create(t, client, "through the new socket")
		})
	}
}

// When the owner goes away, a client takes over: its subscribers hear
// so, its requests go on, and nothing acknowledged is lost.
func TestAClientTakesOverWhenTheOwnerGoes(t *testing.T) {
	dir := t.TempDir()
	owner := open(t, dir, "local")
	client := open(t, dir, "local")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := client.Subscribe(ctx, conn.EventOwnerChanged.Name(), cortex.EventItemMutated.Name())
	before := create(t, client, "before the owner went")
	for ev := range evs { // the create's event, through the owner
		if ev.Name == cortex.EventItemMutated.Name() {
			break
		}
	}
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	var change conn.OwnerChange
wait:
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("the event stream closed instead of moving to the next owner")
			}
			if c, ok := conn.EventOwnerChanged.Of(ev); ok {
				change = c
				break wait
			}
		case <-deadline:
			t.Fatal("no owner change within 10s of the owner closing")
		}
	}
	if !change.Owner || change.PreviousPID != os.Getpid() || change.Message == "" {
		t.Errorf("change %+v, want this client the owner now", change)
	}
	if !client.Where().Owner {
		t.Errorf("the client is %+v after the owner left, want the owner", client.Where())
	}
	got, err := conn.Call(context.Background(), client, cortex.ActionGet, cortex.GetArgs{ID: before.Item.ID})
	if err != nil || got.Item.Title != "before the owner went" {
		t.Fatalf("after the takeover: %+v, %v", got.Item, err)
	}
	create(t, client, "after")
}

// OwnerOnly (engram serve) refuses a directory another engram owns.
func TestServeRefusesAnOwnedDirectory(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, "local")
	_, err := attach.Open(context.Background(), attach.Options{DataDir: dir, Mode: attach.OwnerOnly, Open: func() (*core.Engine, error) {
		return core.Open(core.Options{DataDir: dir})
	}})
	if !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("serving an owned directory: %v, want it refused as locked", err)
	}
}
