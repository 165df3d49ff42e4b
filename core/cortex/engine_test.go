package cortex_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
)

// These tests drive the cortex the way every face does: core.Open and
// engine.Do, with turns started and ended by core's turn.start and turn.end.

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// engine is an engine with the shared rig over it: en.Do, en.Try, en.Fail.
type engine struct {
	enginetest.Rig
	e     *core.Engine
	clock *clock.Fixed
}

func open(t *testing.T) *engine {
	t.Helper()
	c := clock.NewFixed(t0)
	e, err := core.Open(core.Options{InMemory: true, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return &engine{Rig: enginetest.ForConn(t, e), e: e, clock: c}
}

// as is who acts: a principal, in a turn ("" for none).
func as(principal, turn string) enginetest.Who { return enginetest.Who{As: principal, Turn: turn} }

func (en *engine) trace(turn string) []string {
	en.T.Helper()
	// The whole trace, as the engine keeps it: trace.list shows each agent
	// only what it may see (TestTraceListShowsOnlyWhatTheViewerMayRead).
	entries, _, err := en.e.Env().Trace.List(trace.Filter{TurnID: turn, Limit: 100})
	if err != nil {
		en.T.Fatal(err)
	}
	var msgs []string
	for _, e := range entries {
		msgs = append(msgs, e.Message)
	}
	return msgs
}

type obj = map[string]any

// Seed 000, scenario 5.1.
func TestTurnStartInjectsActiveItemsThroughEngine(t *testing.T) {
	en := open(t)
	for i := range 5 {
		en.Do(as("agent_a", ""), "cortex.create", obj{"type": "goal", "fields": obj{"title": fmt.Sprintf("goal %d", i)}}, nil)
	}
	for i := range 3 {
		en.Do(as("agent_a", ""), "cortex.create", obj{"type": "action", "fields": obj{"title": fmt.Sprintf("action %d", i)}}, nil)
	}
	en.Do(as("agent_a", ""), "cortex.create", obj{"type": "goal", "fields": obj{"title": "done", "status": "completed"}}, nil)
	en.Do(as("agent_b", ""), "cortex.create", obj{"type": "goal", "fields": obj{"title": "not mine"}}, nil)

	var out struct {
		Context struct {
			Sections map[string]struct {
				Items []cortex.Item `json:"items"`
				Count int           `json:"count"`
			} `json:"sections"`
		} `json:"context"`
	}
	en.Do(as("agent_a", "turn_1"), "turn.start", obj{"input": "what next?"}, &out)
	sec, ok := out.Context.Sections["cortex"]
	if !ok || sec.Count != 8 || len(sec.Items) != 8 {
		t.Fatalf("cortex section: %+v", out.Context.Sections)
	}
	if msgs := en.trace("turn_1"); !slices.Contains(msgs, "FC items retrieved: 5 goals, 3 actions") {
		t.Fatalf("trace of turn_1: %q", msgs)
	}
}

// Seed 000, scenario 5.2.
func TestTurnEndCommitAppliesUpdatesThroughEngine(t *testing.T) {
	en := open(t)
	en.Do(as("agent_a", ""), "cortex.create", obj{"type": "goal", "id": "goal_1", "fields": obj{"title": "g", "progress": 10}}, nil)
	for i, p := range []int{20, 30, 40, 50} {
		en.Do(as("agent_a", ""), "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": p}, "expected_version": i + 1}, nil)
	}
	en.Do(as("agent_a", "turn_1"), "turn.start", obj{}, nil)
	// Another turn moves the goal on to v6 before turn_1 ends.
	en.Do(as("agent_a", "turn_2"), "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 60}, "expected_version": 5}, nil)

	// A plain cortex.commit with the stale version conflicts...
	_, err := en.Try(as("agent_a", "turn_x"), "cortex.commit", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 75}, "expected_version": 5}}})
	if errs.KindOf(err) != errs.Conflict {
		t.Fatalf("cortex.commit: %v", err)
	}
	if msgs := en.trace("turn_x"); !slices.Contains(msgs, "FC commit failed: ConflictError, item_id=goal_1, current_version=6") {
		t.Fatalf("trace: %q", msgs)
	}
	// ...while turn.end re-applies it on the current version.
	var end struct {
		Committed map[string]json.RawMessage `json:"committed"`
	}
	en.Do(as("agent_a", "turn_1"), "turn.end", obj{"updates": obj{"cortex": []obj{{"id": "goal_1", "updates": obj{"progress": 75}, "expected_version": 5}}}}, &end)
	if _, ok := end.Committed["cortex"]; !ok {
		t.Fatalf("turn.end committed %v", end.Committed)
	}
	var got cortex.ItemResult
	en.Do(as("agent_a", ""), "cortex.get", obj{"id": "goal_1"}, &got)
	if got.Item.GlobalVersion != 7 || got.Item.Progress != 75 {
		t.Fatalf("goal v%d %d%%", got.Item.GlobalVersion, got.Item.Progress)
	}
	if msgs := en.trace("turn_1"); !slices.Contains(msgs, "FC commit succeeded") {
		t.Fatalf("trace of turn_1: %q", msgs)
	}
	var h struct{ Mutations []cortex.Mutation }
	en.Do(as("agent_a", ""), "cortex.history", obj{"id": "goal_1"}, &h)
	if m := h.Mutations[6]; m.TurnID != "turn_1" || m.MutatedBy != "turn_1" {
		t.Fatalf("last mutation %+v", m)
	}
}

// Seed 000, scenario 1.1b through engine.Do, with the engine clock pinned
// per step as the batch runner does.
func TestStaleUpdateOfAnotherFieldMergesThroughEngine(t *testing.T) {
	en := open(t)
	at := func(ms int) { en.e.Clock().Pin(t0.Add(time.Duration(ms) * time.Millisecond)) }
	at(-100)
	en.Do(as("agent_a", ""), "cortex.create", obj{"type": "goal", "id": "goal_123", "fields": obj{"title": "g", "progress": 10, "priority": "medium"}}, nil)
	en.Do(as("agent_a", ""), "cortex.update", obj{"id": "goal_123", "updates": obj{"progress": 25}}, nil)
	en.Do(as("agent_a", ""), "cortex.update", obj{"id": "goal_123", "updates": obj{"progress": 50}}, nil)
	en.Do(as("agent_a", ""), "cortex.update", obj{"id": "goal_123", "updates": obj{"priority": "high"}}, nil)
	en.Do(as("agent_a", ""), "cortex.update", obj{"id": "goal_123", "updates": obj{"description": "v5"}}, nil)
	at(10)
	en.Do(as("agent_a", "turn_A_001"), "cortex.update", obj{"id": "goal_123", "updates": obj{"progress": 75}, "expected_version": 5}, nil)
	at(12)
	var b struct {
		Item         cortex.Item
		MergeApplied bool `json:"merge_applied"`
	}
	en.Do(as("agent_a", "turn_B_001"), "cortex.update", obj{"id": "goal_123", "updates": obj{"priority": "critical"}, "expected_version": 5}, &b)
	if b.Item.GlobalVersion != 7 || !b.MergeApplied || b.Item.FieldVersions["progress"] != 4 || b.Item.FieldVersions["priority"] != 3 || b.Item.FieldVersions["status"] != 1 {
		t.Fatalf("%+v", b)
	}
	if msgs := en.trace("turn_A_001"); !slices.Equal(msgs, []string{"FC update succeeded: goal_123, fields=[progress], version: 5→6"}) {
		t.Fatalf("turn A: %q", msgs)
	}
	if msgs := en.trace("turn_B_001"); !slices.Equal(msgs, []string{"FC update succeeded: goal_123, fields=[priority], version: 6→7, merge_applied=true"}) {
		t.Fatalf("turn B: %q", msgs)
	}
	var h struct {
		Mutations     []cortex.Mutation
		ChainVerified bool `json:"chain_verified"`
	}
	en.Do(as("agent_a", ""), "cortex.history", obj{"id": "goal_123"}, &h)
	if !h.ChainVerified || len(h.Mutations) != 7 || !h.Mutations[5].MutationTimestamp.Equal(t0.Add(10*time.Millisecond)) ||
		!h.Mutations[6].MutationTimestamp.Equal(t0.Add(12*time.Millisecond)) {
		t.Fatalf("history: %+v", h)
	}
	// A ConflictError through the engine carries the current item.
	_, err := en.e.Do(context.Background(), core.Request{Action: "cortex.update", Principal: "agent_a",
		Args: json.RawMessage(`{"id": "goal_123", "updates": {"progress": 80}, "expected_version": 5}`)})
	e := errs.As(err)
	if e == nil || e.Kind != errs.Conflict || e.Details["current"].(*cortex.Item).GlobalVersion != 7 {
		t.Fatalf("conflict: %v", err)
	}
}
