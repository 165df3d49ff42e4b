package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/remote"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// nextOf waits for the next event on ch; it fails if the stream ends.
// The wait bounds a test that would otherwise hang, nothing more.
func nextOf(t *testing.T, ch <-chan events.Event) events.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return events.Event{}
}

// A client over TCP that names no agent acts as its token's agent, and
// its subscription is that agent's stream too: the owner's own agent,
// which /v1/info reports, is not the token's, and a stream asked for as
// it would be refused (the subscription would end at once, silently).
func TestRemoteOverTCPWithoutAnAgentSubscribesAsItsToken(t *testing.T) {
	e, _ := openEngine(t)
	_, tcp := newServer(t, e, true, server.Options{Tokens: testTokens})
	c, err := remote.Dial(context.Background(), remote.Options{Addr: strings.TrimPrefix(tcp.URL, "http://"), Token: "alice-rw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := c.Subscribe(ctx, cortex.EventItemMutated.Name())
	if _, err := c.Do(ctx, conn.Request{Action: "cortex.create", Args: json.RawMessage(`{"type": "goal", "id": "g1", "fields": {"title": "mine"}}`)}); err != nil {
		t.Fatal(err)
	}
	ev := nextOf(t, evs)
	if got, ok := cortex.EventItemMutated.Of(ev); !ok || got.ItemID != "g1" {
		t.Fatalf("got %s %+v, want g1's item.mutated", ev.Name, ev.Data)
	}
}

// A resumed stream replays only the remembered events its reader may
// see: Alice's goal, made while Bob's stream was away, is not among them.
func TestAResumedStreamReplaysOnlyWhatItsReaderMaySee(t *testing.T) {
	e, _ := openEngine(t)
	_, tcp := newServer(t, e, true, server.Options{Tokens: testTokens})
	bob, alice := "Authorization: Bearer bob-ro", "Authorization: Bearer alice-rw"
	first := openStream(t, tcp.Client(), tcp.URL, "?kind=item.mutated", bob).read()
	do(t, tcp.Client(), tcp.URL, createGoal("shared"), alice)
	do(t, tcp.Client(), tcp.URL, map[string]any{"action": "cortex.share",
		"args": map[string]any{"id": "shared", "principal": "bob", "permissions": []string{"read"}}}, alice)
	seen := first.next()
	if itemOf(t, seen) != "shared" {
		t.Fatalf("bob's first event: %s", seen.Data)
	}
	do(t, tcp.Client(), tcp.URL, createGoal("private"), alice)
	do(t, tcp.Client(), tcp.URL, map[string]any{"action": "cortex.update",
		"args": map[string]any{"id": "shared", "updates": map[string]any{"progress": 50}}}, alice)

	again := openStream(t, tcp.Client(), tcp.URL, "?kind=item.mutated", bob, "Last-Event-ID: "+seen.ID).read()
	if m := again.next(); itemOf(t, m) != "shared" || !strings.Contains(m.Data, `"update"`) {
		t.Fatalf("bob's replay: first %s %s, want the update of shared (not alice's private goal)", m.Event, m.Data)
	}
}

// revocable is an Authenticator whose tokens can be revoked while the
// server runs.
type revocable struct {
	mu     sync.Mutex
	tokens tokens
}

func (rv *revocable) Authenticate(ctx context.Context, token string) (server.Principal, error) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.tokens.Authenticate(ctx, token)
}

func (rv *revocable) revoke(token string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	delete(rv.tokens, token)
}

// A stream opened with a token ends once the token is revoked (by the
// next heartbeat): a revoked token gets nothing more, however long ago
// its stream was opened.
func TestAStreamEndsOnceItsTokenIsRevoked(t *testing.T) {
	e, _ := openEngine(t)
	auth := &revocable{tokens: tokens{"carol-rw": {Agent: "carol"}}}
	s, tcp := newServer(t, e, true, server.Options{Tokens: auth, Limits: server.Limits{Heartbeat: 10 * time.Millisecond}})
	sock := httptest.NewServer(s.Handler(false))
	t.Cleanup(sock.Close)
	st := openStream(t, tcp.Client(), tcp.URL, "?kind=item.mutated", "Authorization: Bearer carol-rw").read()
	do(t, sock.Client(), sock.URL, map[string]any{"action": "cortex.create", "agent": "carol",
		"args": map[string]any{"type": "goal", "id": "before", "fields": map[string]any{"title": "Goal"}}})
	if m := st.next(); itemOf(t, m) != "before" {
		t.Fatalf("carol's first event: %s", m.Data)
	}

	auth.revoke("carol-rw")
	select {
	case m, ok := <-st.msgs:
		if ok {
			t.Fatalf("the revoked token still gets %s", m.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of a revoked token is still open after 10s")
	}
}

// streamingMCP is an MCP service whose every request is a stream that
// lasts until the request's context ends (an MCP session's GET).
type streamingMCP struct{ ended chan struct{} }

func (m streamingMCP) Handler(server.Principal) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(m.ended)
	})
}

func (streamingMCP) Close() {}

// An MCP stream opened over TCP with a token ends once the token is
// revoked, as an event stream does.
func TestAnMCPStreamEndsOnceItsTokenIsRevoked(t *testing.T) {
	e, _ := openEngine(t)
	auth := &revocable{tokens: tokens{"carol-rw": {Agent: "carol"}}}
	m := streamingMCP{ended: make(chan struct{})}
	_, tcp := newServer(t, e, true, server.Options{Tokens: auth, MCP: m, Limits: server.Limits{Heartbeat: 10 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := tcp.Client().Do(request(t, ctx, http.MethodGet, tcp.URL+wire.PathMCP, "", "Authorization: Bearer carol-rw"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: %d", resp.StatusCode)
	}
	auth.revoke("carol-rw")
	select {
	case <-m.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the MCP stream of a revoked token is still open after 10s")
	}
}
