package remote

import (
	"context"
	"net/http"
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/wire"
)

// A new owner that serves the same socket path answers the requests sent
// after the dialed one died: the connection says which process answered
// (for the console's header) and that the dialed owner was replaced,
// while OwnerPID stays the dialed one's (the owner that went away).
func TestAnAnswerFromANewOwnerSaysWhichProcessSentIt(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	if _, err := c.Do(context.Background(), conn.Request{Action: "cortex.get"}); err != nil {
		t.Fatal(err)
	}
	if c.AnsweredBy() != ownerPID || c.Replaced() {
		t.Fatalf("the dialed owner answered: AnsweredBy %d, Replaced %v; want %d, false", c.AnsweredBy(), c.Replaced(), ownerPID)
	}
	f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
		w.Header().Set(wire.HeaderInstance, "inst2")
		w.Header().Set(wire.HeaderPID, "5151")
		writeJSON(w, http.StatusOK, wire.DoResponse{Action: req.Action, OK: true, Result: []byte(`{}`)})
	})
	if _, err := c.Do(context.Background(), conn.Request{Action: "cortex.get"}); err != nil {
		t.Fatal(err)
	}
	if c.AnsweredBy() != 5151 || !c.Replaced() || c.OwnerPID() != ownerPID {
		t.Errorf("after a new owner answered: AnsweredBy %d, Replaced %v, OwnerPID %d; want 5151, true, %d",
			c.AnsweredBy(), c.Replaced(), c.OwnerPID(), ownerPID)
	}
}
