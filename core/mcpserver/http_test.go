package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
)

// Each agent's handler has its own sessions: ann's session id sent to
// bob's handler finds no session, so no token can use another agent's
// session. A session's client is listed for its agent over http while
// connected, and marked disconnected when the client ends the session.
func TestHTTPSessionsAreTheirAgentsAndEndDisconnected(t *testing.T) {
	e := newEngine(t)
	h := NewHTTP(e, HTTPOptions{Version: "test"})
	t.Cleanup(h.Close)
	ann := httptest.NewServer(h.Handler("ann", false))
	t.Cleanup(ann.Close)
	bob := httptest.NewServer(h.Handler("bob", false))
	t.Cleanup(bob.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "ann-agent", Version: "3"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ann.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "memory_stats", map[string]any{}, nil)

	req, err := http.NewRequest(http.MethodPost, bob.URL, strings.NewReader(`{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("ann's session sent to bob's handler: status %d, want 404 (no such session)", resp.StatusCode)
	}

	list := func() []clients.Client {
		res, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "ann"}, clients.ActionList, clients.ListArgs{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Clients
	}
	got := list()
	if len(got) != 1 || got[0].Session != cs.ID() || !got[0].Connected || got[0].Transport != "http" || got[0].PID != 0 || got[0].Name != "ann-agent" {
		t.Fatalf("clients.list of ann: %+v; want her http client, session %s, connected", got, cs.ID())
	}
	gone := e.Subscribe(t.Context(), clients.EventDisconnected.Name())
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// The handler ends the session after answering the DELETE; the
	// marking follows on the session's own goroutine.
	select {
	case ev := <-gone:
		if c, ok := ev.Data.(clients.Client); !ok || c.Session != cs.ID() {
			t.Errorf("client.disconnected for %+v, want session %s", ev.Data, cs.ID())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("10s after the client ended its session, no client.disconnected")
	}
	if got = list(); got[0].Connected {
		t.Errorf("after client.disconnected, clients.list shows %+v", got)
	}
}
