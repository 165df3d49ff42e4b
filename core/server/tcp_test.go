package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// tokens is a fake Authenticator: token → principal; any other fails.
type tokens map[string]server.Principal

func (tk tokens) Authenticate(_ context.Context, token string) (server.Principal, error) {
	p, ok := tk[token]
	if !ok {
		return server.Principal{}, errors.New("unknown or revoked token " + token)
	}
	return p, nil
}

var testTokens = tokens{
	"alice-rw": {Agent: "alice"},
	"bob-ro":   {Agent: "bob", ReadOnly: true},
}

// Over TCP every request needs a valid token, acts as its agent, and a
// read-only token only reads; no token runs an action naming a file (a
// path on the owner's machine comes only from the person there); every
// refusal changes nothing.
func TestTCPRequestsNeedATokenAndActAsItsAgent(t *testing.T) {
	e, _ := openEngine(t)
	var log enginetest.LockedBuffer
	_, ts := newServer(t, e, true, server.Options{Tokens: testTokens, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	c := ts.Client()
	before := cortexCounts(t, e)
	create := jsonOf(t, createGoal("g1"))

	refusals := []struct {
		name, path, body string
		header           []string
		status           int
		fragment         string
	}{
		{"no token", wire.PathDo, create, nil, 401, "no bearer token"},
		{"not a bearer token", wire.PathDo, create, []string{"Authorization: Basic YWxpY2U6eA=="}, 401, "no bearer token"},
		{"wrong token", wire.PathDo, create, []string{"Authorization: Bearer tok-nope"}, 401, "not valid"},
		{"revoked token", wire.PathDo, create, []string{"Authorization: Bearer tok-revoked"}, 401, "not valid"},
		{"info without a token", wire.PathInfo, "", nil, 401, "no bearer token"},
		{"events without a token", wire.PathEvents, "", nil, 401, "no bearer token"},
		{"read-only token writing", wire.PathDo, create, []string{"Authorization: Bearer bob-ro"}, 403, "read-only"},
		{"agent mismatch", wire.PathDo, `{"action": "cortex.create", "agent": "bob", "args": {"type": "goal", "fields": {"title": "X"}}}`,
			[]string{"Authorization: Bearer alice-rw"}, 403, `acts as "alice", not "bob"`},
		{"token action", wire.PathDo, `{"action": "token.create", "args": {"agent": "mallory"}}`,
			[]string{"Authorization: Bearer alice-rw"}, 403, "only on the owner's machine"},
		{"action naming a file", wire.PathDo, `{"action": "test.read"}`,
			[]string{"Authorization: Bearer alice-rw"}, 403, "its arguments name a file on the owner's machine"},
		{"action naming a file, read-only token", wire.PathDo, `{"action": "test.read"}`,
			[]string{"Authorization: Bearer bob-ro"}, 403, "never over TCP"},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			method := http.MethodPost
			if r.path != wire.PathDo {
				method = http.MethodGet
			}
			a := send(t, c, method, ts.URL+r.path, r.body, r.header...)
			failure(t, a, r.status, "PermissionError", r.fragment)
			if r.status == 401 && a.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	if after := cortexCounts(t, e); !maps.Equal(before, after) {
		t.Fatalf("a refused request changed the store: %v → %v", before, after)
	}
	// Every refusal is logged, and no token ever is.
	logged := log.String()
	if n := strings.Count(logged, "request refused"); n != len(refusals) {
		t.Errorf("%d refusals logged, want %d:\n%s", n, len(refusals), logged)
	}
	for _, token := range []string{"alice-rw", "bob-ro", "tok-nope", "tok-revoked", "YWxpY2U6eA=="} {
		if strings.Contains(logged, token) {
			t.Errorf("the log shows the token %q:\n%s", token, logged)
		}
	}

	// A good token writes, as its agent; a read-only one reads.
	got := do(t, c, ts.URL, createGoal("g1"), "Authorization: Bearer alice-rw")
	var created struct {
		Item struct {
			Owner string `json:"owner"`
		} `json:"item"`
	}
	if err := json.Unmarshal(got.Result, &created); err != nil || !got.OK || created.Item.Owner != "alice" {
		t.Fatalf("create with alice's token: %+v (%v)", got, err)
	}
	got = do(t, c, ts.URL, `{"action": "cortex.get", "agent": "alice", "args": {"id": "g1"}}`, "Authorization: Bearer alice-rw")
	if !got.OK {
		t.Errorf("alice reading her goal: %+v", got.Error)
	}
	got = do(t, c, ts.URL, `{"action": "cortex.get", "args": {"id": "g1"}}`, "Authorization: Bearer bob-ro")
	if got.OK || got.Error.Kind != "PermissionError" && got.Error.Kind != "NotFoundError" {
		t.Errorf("bob reading alice's unshared goal: %+v", got)
	}
	if a := send(t, c, http.MethodGet, ts.URL+wire.PathInfo, "", "Authorization: Bearer bob-ro"); a.Status != http.StatusOK {
		t.Errorf("info with a read-only token: %d %s", a.Status, a.Body)
	} else if strings.Contains(string(a.Body), `"counts"`) {
		// They count every agent's objects, alice's goal among them.
		t.Errorf("a token's info has the engine's counts: %s", a.Body)
	}
}

// Without an Authenticator every TCP request is refused.
func TestTCPWithoutAnAuthenticatorRefusesEverything(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, true, server.Options{})
	a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathInfo, "", "Authorization: Bearer alice-rw")
	failure(t, a, http.StatusUnauthorized, "PermissionError", "no tokens")
}

// A request refused before its body is read gets its answer at once, even
// if the body never comes: the owner does not wait to drain it.
func TestRefusalDoesNotWaitForTheBody(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, true, server.Options{Tokens: testTokens})
	slow, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = slow.Close() }()
	if _, err := fmt.Fprintf(slow, "POST %s HTTP/1.1\r\nHost: engram\r\nContent-Length: 100\r\n\r\n{\"act", wire.PathDo); err != nil {
		t.Fatal(err)
	}
	if err := slow.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	failure(t, answer{resp.StatusCode, resp.Header, b, resp.Close}, http.StatusUnauthorized, "PermissionError")
}

// Over TCP a script session is the token's agent's, whatever name the
// request gives it: an agent cannot draw from (and so disturb) another
// agent's script ids by naming that agent's session.
func TestTCPSessionsBelongToTheTokensAgent(t *testing.T) {
	firstID := func(tcp bool, session string, header ...string) string {
		t.Helper()
		e, _ := openEngine(t)
		_, ts := newServer(t, e, tcp, server.Options{Tokens: testTokens})
		req := map[string]any{"action": "cortex.create", "at": "2025-11-05T10:00:00Z", "session": session,
			"args": map[string]any{"type": "goal", "fields": map[string]any{"title": "x"}}}
		if !tcp {
			req["agent"] = "alice"
		}
		resp := do(t, ts.Client(), ts.URL, req, header...)
		var res struct {
			Item struct{ ID string } `json:"item"`
		}
		if !resp.OK || json.Unmarshal(resp.Result, &res) != nil {
			t.Fatalf("%+v", resp)
		}
		return res.Item.ID
	}
	bearer := "Authorization: Bearer alice-rw"
	asBob := firstID(true, "bob/run-1", bearer)
	asAlice := firstID(true, "alice/run-9", bearer)
	bobsOwn := firstID(false, "bob/run-1")
	if asBob != asAlice {
		t.Errorf("alice's token naming bob's session drew %s, naming her own %s: want the same (her session)", asBob, asAlice)
	}
	if asBob == bobsOwn {
		t.Errorf("alice's token naming bob's session drew bob's id %s", bobsOwn)
	}
}
