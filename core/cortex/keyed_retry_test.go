package cortex

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/kit"
)

// A keyed cortex.update (a joinable request: it runs inside the
// transaction that records its answer) that meets a conflict and
// re-applies (max_retries) writes its update once, while other turns
// keep updating the item, and a retry of its key gets its answer.
func TestAKeyedUpdateThatRetriesAConflictWritesOnce(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_x", obj{"title": "contested", "progress": 0})
	e.update(inTurn(agentA, "turn_B"), "goal_x", obj{"title": "theirs"}, -1)
	turnA := inTurn(agentA, "turn_A")
	// Turn A's update read version 1: the title changed since, so its
	// first attempt conflicts and it re-applies on the version current
	// then. The second time the update starts, turn C sets the title
	// first: a request that ran twice would write over it.
	runs, busy := 0, false
	e.c.beforeAttempt = func(item string, attempt int) {
		if busy || attempt != 0 {
			return
		}
		if runs++; runs == 2 {
			busy = true
			defer func() { busy = false }()
			e.update(inTurn(agentA, "turn_C"), "goal_x", obj{"title": "theirs again"}, -1)
		}
	}
	args := json.RawMessage(`{"id":"goal_x","updates":{"title":"mine"},"expected_version":1,"max_retries":2}`)
	o := kit.Once{Key: "k1", Principal: agentA.As, Action: "cortex.update", Args: args, Joinable: true}
	run := func(ctx context.Context) (json.RawMessage, error) {
		return e.Run(ctx, conn.Request{Action: "cortex.update", Args: args, Principal: turnA.As, Turn: turnA.Turn})
	}
	first, err := e.env.RunOnce(context.Background(), o, run)
	e.c.beforeAttempt = nil
	if again, aerr := e.env.RunOnce(context.Background(), o, run); err == nil && (aerr != nil || string(again) != string(first)) {
		t.Errorf("the retry of the key: %s, %v; want the first answer %s", again, aerr, first)
	}
	mine := 0
	for _, m := range e.history(agentA, "goal_x").Mutations {
		if m.MutatedBy == "turn_A" {
			mine++
		}
	}
	if mine != 1 {
		t.Errorf("turn A's one keyed update wrote %d versions (the request answered %v); want 1", mine, err)
	}
}
