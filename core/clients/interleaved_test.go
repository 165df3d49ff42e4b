package clients

import (
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
)

// TestInterleavedRequestsOfOneCallCountOnce: a client's calls run at once
// (an agent's parallel tool calls, or run_plan's run ending after later
// calls), so their requests interleave; each call still counts once, and
// a failed one is one error.
func TestInterleavedRequestsOfOneCallCountOnce(t *testing.T) {
	r := New(1, func(int) bool { return true })
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	req := func(tool, id string) conn.ClientCall {
		return conn.ClientCall{Session: "s", Via: "mcp", Tool: tool, Call: id}
	}
	r.Record("alice", req("run_plan", "1"), at, false, "")         // plan.get
	r.Record("alice", req("plan_status", "2"), at, false, "")      // while the plan runs
	r.Record("alice", req("update_goal", "3"), at, true, "denied") // its cortex.get fails
	r.Record("alice", req("plan_status", "4"), at, false, "")
	r.Record("alice", req("update_goal", "3"), at, true, "denied again")
	c, _ := r.Record("alice", req("run_plan", "1"), at, false, "") // plan.execute, at the run's end
	if c.Calls != 4 || c.Errors != 1 {
		t.Errorf("calls %d, errors %d; want 4 calls, 1 error", c.Calls, c.Errors)
	}
}

// TestALateRequestOfAnEarlierCallDoesNotReconnectAGoneClient: run_plan's
// run ends after its client has disconnected (or when the server closes,
// cancelling it); that request belongs to a call the client made while
// connected, so the client stays gone, and nothing announces it anew.
func TestALateRequestOfAnEarlierCallDoesNotReconnectAGoneClient(t *testing.T) {
	r := New(1, func(int) bool { return true })
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	req := func(tool, id string) conn.ClientCall {
		return conn.ClientCall{Session: "s", Via: "mcp", Tool: tool, Call: id}
	}
	r.Record("alice", req("run_plan", "1"), at, false, "") // plan.get
	if _, ok := r.Disconnect("alice", "s", at.Add(time.Second)); !ok {
		t.Fatal("disconnect found no client")
	}
	c, fresh := r.Record("alice", req("run_plan", "1"), at.Add(time.Minute), true, "cancelled") // plan.execute ends
	if fresh || c.Connected || c.GoneAt == nil {
		t.Errorf("after a late request of call 1: fresh %v, connected %v, gone at %v; want still gone", fresh, c.Connected, c.GoneAt)
	}
	if c.Calls != 1 || c.Errors != 1 {
		t.Errorf("calls %d, errors %d; want 1 call, 1 error", c.Calls, c.Errors)
	}
	// A new call is the client back.
	if c, fresh := r.Record("alice", req("recall", "2"), at.Add(2*time.Minute), false, ""); !fresh || !c.Connected {
		t.Errorf("a new call after the disconnect: fresh %v, connected %v; want connected anew", fresh, c.Connected)
	}
}
