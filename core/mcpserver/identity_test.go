package mcpserver

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
)

// No tool takes an agent: every call acts as the server's (engram mcp's
// --agent, the HTTP token's). A call that names one anyway is refused,
// and what it would have written is not.
func TestNoToolLetsTheClientNameAnAgent(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "ann"}))
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"as", "agent", "principal"} {
			if _, ok := schema.Properties[name]; ok {
				t.Errorf("tool %s takes %q: a client could act as another agent", tool.Name, name)
			}
		}
	}

	res := callTool(t, cs, "create_goal", map[string]any{"title": "Bob's, says the client", "as": "bob"}, nil)
	if !res.IsError {
		t.Errorf("create_goal with \"as\": succeeded; want it refused")
	}
	var out struct {
		Goal struct{ ID, Owner string } `json:"goal"`
	}
	callTool(t, cs, "create_goal", map[string]any{"title": "Ann's"}, &out)
	if out.Goal.Owner != "ann" {
		t.Errorf("a goal made through ann's server is owned by %q", out.Goal.Owner)
	}
	q, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionQuery, cortex.Query{Type: "goal"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Count != 0 {
		t.Errorf("bob has %d goals after a client tried to act as him: %+v", q.Count, q.Items)
	}
}

// What a client says of itself when it connects (clientInfo) is its own
// to say: a name too long or with a line break in it is shown shortened
// and cleaned in the Agents view, never a reason to refuse its calls.
func TestAClientsOddNameDoesNotFailItsCalls(t *testing.T) {
	e := newEngine(t)
	s := New(e, Options{})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	long := strings.Repeat("agent ", 60)
	client := mcp.NewClient(&mcp.Implementation{Name: long, Version: "1.0\n"}, nil)
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if res := callTool(t, cs, "memory_stats", map[string]any{}, nil); res.IsError {
		t.Fatalf("memory_stats: %s", text(res))
	}
	list, err := conn.Call(t.Context(), e, clients.ActionList, clients.ListArgs{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clients) != 1 || !strings.HasPrefix(list.Clients[0].Name, "agent agent") || len(list.Clients[0].Name) > 256 || list.Clients[0].Version != "1.0" {
		t.Errorf("clients.list = %+v; want the client, its name cut and its version cleaned", list.Clients)
	}
}

// A process id is used again once its process is gone: an engram mcp
// that gets the id of one that served a client before is a new client,
// listed connected with its own calls, not the old one's session.
func TestASecondServerWithTheSameProcessIdIsANewClient(t *testing.T) {
	e := newEngine(t)
	pid := os.Getpid() // alive, as a serving engram mcp is
	first := New(e, Options{PID: pid})
	callTool(t, connect(t, first), "memory_stats", map[string]any{}, nil)
	if err := first.DisconnectAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	callTool(t, connect(t, New(e, Options{PID: pid})), "memory_stats", map[string]any{}, nil)
	list, err := conn.Call(t.Context(), e, clients.ActionList, clients.ListArgs{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clients) != 2 || !list.Clients[0].Connected || list.Clients[0].Calls != 1 || list.Clients[1].Connected {
		t.Errorf("clients.list = %+v; want the second server's client connected with its call, the first's gone", list.Clients)
	}
}
