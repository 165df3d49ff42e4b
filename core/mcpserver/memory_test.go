package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/trace"
)

func TestMemoryStatsListsTheAgentsStores(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var out MemoryStatsOutput
	callTool(t, cs, "memory_stats", map[string]any{}, &out)
	names := map[string]string{}
	for _, st := range out.Stores {
		names[st.Store] = st.Type
	}
	if names["working"] != "working" || names["episodic"] != "episodic" {
		t.Fatalf("stores = %+v; want the default working and episodic stores", out.Stores)
	}
}

func TestEveryCallIsCountedForItsClientAndAgent(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	callTool(t, cs, "memory_stats", map[string]any{}, nil)
	callTool(t, cs, "memory_stats", map[string]any{}, nil)
	list, err := conn.Call(t.Context(), e, clients.ActionList, clients.ListArgs{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clients) != 1 {
		t.Fatalf("clients = %+v; want one", list.Clients)
	}
	c := list.Clients[0]
	if c.Agent != "alice" || c.Name != "test-agent" || c.Version != "1.0" || c.Via != "mcp" || c.Calls != 2 || c.LastCall != "memory_stats" || !c.Connected {
		t.Errorf("client = %+v; want alice's test-agent 1.0 via mcp, connected, with 2 calls, the last memory_stats", c)
	}
}

func TestAFailedCallIsAToolErrorWithEngramsKind(t *testing.T) {
	e := newEngine(t)
	// An agent with no stores of its own, and a principal name the engine
	// refuses: the action fails, the call must not.
	cs := connect(t, New(e, Options{Agent: "bad\x01agent"}))
	res := callTool(t, cs, "memory_stats", map[string]any{}, nil)
	te := toolErr(t, res)
	if te.Kind != "ValidationError" || te.Details["field"] != "as" {
		t.Errorf("tool error = %+v; want a ValidationError naming the field as", te)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok || !strings.HasPrefix(text.Text, "ValidationError: as: ") {
		t.Errorf("content = %#v; want the text \"ValidationError: as: …\"", res.Content)
	}
}

// A call whose arguments the go-sdk refuses before any handler runs (a
// required field missing) is still counted as a failed call of its client
// and traced: the person watching sees what the agent got wrong.
func TestACallWithRefusedArgumentsIsCountedAndTraced(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	res := callTool(t, cs, "create_goal", map[string]any{"priority": "high"}, nil)
	if te := toolErr(t, res); te.Kind != "ValidationError" || !strings.Contains(te.Message, "title") {
		t.Fatalf("tool error = %+v; want a ValidationError naming title", te)
	}
	list, err := conn.Call(t.Context(), e, clients.ActionList, clients.ListArgs{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clients) != 1 || list.Clients[0].Calls != 1 || list.Clients[0].Errors != 1 ||
		list.Clients[0].LastCall != "create_goal" || !strings.Contains(list.Clients[0].LastError, "title") {
		t.Fatalf("clients = %+v; want one client with 1 call, 1 error, the last create_goal naming title", list.Clients)
	}
	tr, err := conn.Call(t.Context(), e, core.ActionTraceList, trace.ListArgs{Kind: "mcp.call"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 1 || !strings.Contains(tr.Entries[0].Message, "create_goal via mcp") || !strings.Contains(tr.Entries[0].Message, "ValidationError") {
		t.Fatalf("trace = %+v; want one mcp.call entry for the refused create_goal", tr.Entries)
	}
}
