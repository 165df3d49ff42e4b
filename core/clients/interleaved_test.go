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
