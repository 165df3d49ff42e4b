package clients_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// TestListAllIsOnlyForTheEnginesOwnAgent: clients.list's all shows every
// agent's clients to the engine's own agent, and is a PermissionError
// naming all for any other; without it an agent sees its own clients.
func TestListAllIsOnlyForTheEnginesOwnAgent(t *testing.T) {
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	engine, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(at), IDSeed: "clients"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := engine.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	for _, agent := range []string{"local", "bob"} {
		req := conn.Request{Action: "memory.stores", Principal: agent, At: &at,
			Client: &conn.ClientCall{Session: agent + "-s", Via: "mcp", Tool: "memory_stats", Call: "1"}}
		if _, err := engine.Do(ctx, req); err != nil {
			t.Fatalf("%s's client call: %v", agent, err)
		}
	}
	list := func(agent string, all bool) (clients.ListResult, error) {
		return conn.CallAs(ctx, engine, conn.Request{Principal: agent}, clients.ActionList, clients.ListArgs{All: all})
	}
	if res, err := list("local", true); err != nil || len(res.Clients) != 2 {
		t.Errorf("the owner's agent with all: %+v, %v; want both agents' clients", res.Clients, err)
	}
	_, err = list("bob", true)
	e := errs.As(err)
	if err == nil || e.Kind != errs.Permission || e.Details["field"] != "all" {
		t.Fatalf("bob with all: %v; want a PermissionError naming all", err)
	}
	if res, err := list("bob", false); err != nil || len(res.Clients) != 1 || res.Clients[0].Agent != "bob" {
		t.Errorf("bob without all: %+v, %v; want his one client", res.Clients, err)
	}
	if res, err := list("local", false); err != nil || len(res.Clients) != 1 || res.Clients[0].Agent != "local" {
		t.Errorf("the owner's agent without all: %+v, %v; want its own client only", res.Clients, err)
	}
}
