package server_test

import (
	"net/http"
	"testing"

	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// Every answer names the process that sent it, refusals too: a client
// whose request reached a new owner on the same socket path can then say
// which process it is attached to.
func TestEveryAnswerNamesTheOwnerProcess(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, true, server.Options{Instance: "i-1", PID: 4242})
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, wire.PathInfo, ""},
		{http.MethodPost, wire.PathDo, `{"action": "engine.info"}`}, // 401: no token
		{http.MethodGet, "/nowhere", ""},
	} {
		a := send(t, ts.Client(), r.method, ts.URL+r.path, r.body)
		if got := a.Header.Get(wire.HeaderPID); got != "4242" {
			t.Errorf("%s %s (%d): %s %q, want 4242", r.method, r.path, a.Status, wire.HeaderPID, got)
		}
		if got := a.Header.Get(wire.HeaderInstance); got != "i-1" {
			t.Errorf("%s %s (%d): %s %q, want i-1", r.method, r.path, a.Status, wire.HeaderInstance, got)
		}
	}
}
