package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// Every answer over the socket names the process that sent it, refusals
// too: a client whose request reached a new owner on the same socket path
// can then say which process it is attached to. Over TCP only a caller
// with a valid token is told: a stranger learns no pid.
func TestEveryAnswerNamesTheOwnerProcess(t *testing.T) {
	e, _ := openEngine(t)
	s, tcp := newServer(t, e, true, server.Options{Instance: "i-1", PID: 4242, Tokens: testTokens})
	sock := httptest.NewServer(s.Handler(false))
	t.Cleanup(sock.Close)
	named := func(a answer) bool {
		return a.Header.Get(wire.HeaderPID) == "4242" && a.Header.Get(wire.HeaderInstance) == "i-1"
	}
	token := "Authorization: Bearer alice-rw"
	for _, r := range []struct {
		name, base, method, path, body string
		header                         []string
		want                           bool
	}{
		{"socket info", sock.URL, http.MethodGet, wire.PathInfo, "", nil, true},
		{"socket do", sock.URL, http.MethodPost, wire.PathDo, `{"action": "engine.info"}`, nil, true},
		{"socket bad JSON", sock.URL, http.MethodPost, wire.PathDo, `{`, nil, true},
		{"socket 404", sock.URL, http.MethodGet, "/nowhere", "", nil, true},
		{"TCP with a token", tcp.URL, http.MethodGet, wire.PathInfo, "", []string{token}, true},
		{"TCP refused with a token", tcp.URL, http.MethodPost, wire.PathDo, `{"action": "token.list"}`, []string{token}, true},
		{"TCP without a token", tcp.URL, http.MethodGet, wire.PathInfo, "", nil, false},
		{"TCP with a wrong token", tcp.URL, http.MethodPost, wire.PathDo, `{"action": "engine.info"}`, []string{"Authorization: Bearer nope"}, false},
		{"TCP 404", tcp.URL, http.MethodGet, "/nowhere", "", nil, false},
	} {
		a := send(t, tcp.Client(), r.method, r.base+r.path, r.body, r.header...)
		if named(a) != r.want {
			t.Errorf("%s (%d): %s %q, %s %q; want named: %v", r.name, a.Status, wire.HeaderPID, a.Header.Get(wire.HeaderPID),
				wire.HeaderInstance, a.Header.Get(wire.HeaderInstance), r.want)
		}
	}
}
