package server_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// fakeMCP records whom it served and whether it was closed.
type fakeMCP struct {
	mu     sync.Mutex
	served []server.Principal
	closed bool
}

func (f *fakeMCP) Handler(p server.Principal) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.served = append(f.served, p)
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	})
}

func (f *fakeMCP) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}

func (f *fakeMCP) principals() []server.Principal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]server.Principal(nil), f.served...)
}

// Over TCP, /mcp needs a valid token as /v1 does, and reaches the MCP
// service as the token's agent; without one nothing reaches it.
func TestMCPOverTCPNeedsATokenAndServesItsAgent(t *testing.T) {
	e, _ := openEngine(t)
	m := &fakeMCP{}
	s, ts := newServer(t, e, true, server.Options{Tokens: testTokens, MCP: m})
	c := ts.Client()
	for _, r := range []struct {
		name     string
		header   []string
		fragment string
	}{
		{"no token", nil, "no bearer token"},
		{"wrong token", []string{"Authorization: Bearer tok-nope"}, "not valid"},
	} {
		a := send(t, c, http.MethodPost, ts.URL+wire.PathMCP, `{"jsonrpc": "2.0", "id": 1, "method": "initialize"}`, r.header...)
		failure(t, a, http.StatusUnauthorized, "PermissionError", r.fragment)
	}
	if got := m.principals(); len(got) != 0 {
		t.Fatalf("refused requests reached the MCP service: %+v", got)
	}
	for _, tok := range []string{"alice-rw", "bob-ro"} {
		if a := send(t, c, http.MethodPost, ts.URL+wire.PathMCP, "{}", "Authorization: Bearer "+tok); a.Status != http.StatusAccepted {
			t.Fatalf("%s: status %d: %s", tok, a.Status, a.Body)
		}
	}
	want := []server.Principal{{Agent: "alice"}, {Agent: "bob", ReadOnly: true}}
	if got := m.principals(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("the MCP service served %+v, want %+v", got, want)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		t.Error("Shutdown did not close the MCP service (its sessions' streams would hold it up)")
	}
}

// The Unix socket does not serve /mcp: it has no token to say which agent
// an MCP session acts as (a local agent runs engram mcp).
func TestMCPIsNotServedOnTheSocket(t *testing.T) {
	e, _ := openEngine(t)
	m := &fakeMCP{}
	_, ts := newServer(t, e, false, server.Options{MCP: m})
	a := send(t, ts.Client(), http.MethodPost, ts.URL+wire.PathMCP, "{}")
	failure(t, a, http.StatusNotFound, "NotFoundError", "engram mcp")
	if got := m.principals(); len(got) != 0 {
		t.Errorf("the socket reached the MCP service: %+v", got)
	}
}
