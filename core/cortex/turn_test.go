package cortex

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// Seed 000, section 5: integration with turn execution. The cortex's part
// in turns is its context provider; core's turn.start and turn.end call it
// (engine_test.go drives the same scenarios through core.Open).

func cortexProvider(t *testing.T, e *testEnv) kit.ContextProvider {
	t.Helper()
	for _, p := range e.env.Providers() {
		if p.Name() == "cortex" {
			return p
		}
	}
	t.Fatal("no cortex context provider registered")
	return nil
}

// Seed 000, scenario 5.1.
func TestTurnStartInjectsActiveItems(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.create(agentA, "goal", "goal_"+string(rune('1'+i)), obj{"title": "goal", "status": []string{"active", "in_progress"}[i%2]})
	}
	for i := range 3 {
		e.create(agentA, "action", "action_"+string(rune('1'+i)), obj{"title": "pending action"})
	}
	// Not active, or not agent_a's: left out.
	e.create(agentA, "goal", "done", obj{"title": "done", "status": "completed"})
	e.create(agentA, "goal", "gone", obj{"title": "gone"})
	e.Do(agentA, "cortex.delete", obj{"id": "gone"}, nil)
	e.create(agentB, "goal", "theirs", obj{"title": "B's"})

	section, err := cortexProvider(t, e).Context(context.Background(), kit.TurnStart{TurnID: "turn_1", Principal: "agent_a", At: t0})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items []*Item
		Count int
	}
	b, _ := json.Marshal(section.Data)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != 8 || len(got.Items) != 8 {
		t.Fatalf("section: count %d, %d items; want 8", got.Count, len(got.Items))
	}
	for _, it := range got.Items {
		if it.Owner != "agent_a" || it.Status == "completed" || it.DeletedAt != nil {
			t.Errorf("injected %s (%s, %s)", it.ID, it.Owner, it.Status)
		}
	}
	// turn.start writes the provider's notes to the trace with the turn's
	// start (engine_test.go checks the entry itself).
	if len(section.Notes) != 1 {
		t.Fatalf("notes %+v", section.Notes)
	}
	note := section.Notes[0]
	if note.Kind != "cortex.retrieved" || note.Message != "FC items retrieved: 5 goals, 3 actions" || !jsonEq(note.Data, obj{"goals": 5, "actions": 3, "questions": 0}) {
		t.Errorf("note: %+v", note)
	}
}

// goalAt5 makes a goal at v5 with progress 50.
func goalAt5(e *testEnv, id string) {
	e.create(agentA, "goal", id, obj{"title": "commit me", "progress": 10})
	for i, p := range []int{20, 30, 40, 50} {
		e.update(agentA, id, obj{"progress": p}, i+1)
	}
}

// Seed 000, scenario 5.2.
func TestTurnEndCommitAppliesUpdates(t *testing.T) {
	e := newEnv(t)
	goalAt5(e, "goal_1")
	tap := e.env.Events.Tap(100)
	defer tap.Close()
	turn := inTurn(agentA, "turn_42")
	var res BatchResult
	e.Do(turn, "cortex.commit", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 75}}}}, &res)
	if !res.Committed || res.Succeeded != 1 || res.Failed != 0 || res.Items[0].GlobalVersion != 6 || res.Items[0].Progress != 75 {
		t.Fatalf("result %+v", res)
	}
	h := e.history(agentA, "goal_1")
	m := h.Mutations[5]
	if m.NewVersion != 6 || m.TurnID != "turn_42" || m.MutatedBy != "turn_42" || m.TransactionID != res.TransactionID {
		t.Fatalf("audit entry: %+v", m)
	}
	e.mustTrace("turn_42", "FC commit succeeded")
	if !hasCommitEvent(tap.Drain(), true) {
		t.Error("no successful cortex.commit event")
	}
}

// hasCommitEvent reports whether evs hold a cortex.commit event with ok.
func hasCommitEvent(evs []events.Event, ok bool) bool {
	for _, ev := range evs {
		if c, is := EventCommit.Of(ev); is && c.OK == ok {
			return true
		}
	}
	return false
}

// Seed 000, scenario 5.3.
func TestCommitConflictIsTracedAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	goalAt5(e, "goal_1")
	e.update(inTurn(agentA, "turn_other"), "goal_1", obj{"progress": 60}, 5) // another turn: v6
	tap := e.env.Events.Tap(100)
	defer tap.Close()
	before := e.dump()
	turn := inTurn(agentA, "turn_late")
	err := e.Fail(turn, "cortex.commit", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 75}, "expected_version": 5}}}, errs.Conflict)
	if err.Details["committed"] != false || err.Details["succeeded"] != 0 || err.Details["failed"] != 1 {
		t.Errorf("details %v", err.Details)
	}
	en := e.mustTrace("turn_late", "FC commit failed: ConflictError, item_id=goal_1, current_version=6")
	if en.Kind != "cortex.commit.failed" {
		t.Errorf("kind %s", en.Kind)
	}
	// The error handler learns of it through the cortex.commit event.
	if !hasCommitEvent(tap.Drain(), false) {
		t.Error("no failed cortex.commit event")
	}
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("the failed commit wrote:\n%s", d)
	}
}

// The turn commit path (turn.end's updates.cortex) re-applies a stale update
// on the current version, up to 3 times, inside turn.end's transaction.
//
// Seed 000, scenario 5.3.
func TestTurnEndCommitRetriesAStaleVersion(t *testing.T) {
	e := newEnv(t)
	goalAt5(e, "goal_1")
	e.update(inTurn(agentA, "turn_other"), "goal_1", obj{"progress": 60}, 5) // v6
	p := cortexProvider(t, e)
	updates := json.RawMessage(`[{"id": "goal_1", "updates": {"progress": 75}, "expected_version": 5}]`)
	var out any
	err := e.env.Update(context.Background(), func(tx *kit.Txn) error {
		var err error
		out, err = p.Commit(context.Background(), tx, kit.TurnEnd{TurnID: "turn_late", Principal: "agent_a", Updates: updates, At: t0})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	it := e.get(agentA, "goal_1")
	if it.GlobalVersion != 7 || it.Progress != 75 {
		t.Fatalf("goal v%d %d%%; want v7 75%%", it.GlobalVersion, it.Progress)
	}
	e.mustTrace("turn_late", "FC commit succeeded")
	b, _ := json.Marshal(out)
	var res struct {
		TransactionID string  `json:"transaction_id"`
		Items         []*Item `json:"items"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || !isUUID(res.TransactionID) {
		t.Fatalf("committed %s", b)
	}
	if m := e.history(agentA, "goal_1").Mutations[6]; m.TransactionID != res.TransactionID || m.TurnID != "turn_late" {
		t.Fatalf("entry %+v", m)
	}

	// Bad updates are a ValidationError, and the provider writes nothing.
	before := e.dump()
	for _, bad := range []string{`{"id": "goal_1"}`, `[{"id": "goal_1", "updates": {"progress": 101}}]`, `[{"id": "nope", "updates": {"progress": 1}}]`} {
		err := e.env.Update(context.Background(), func(tx *kit.Txn) error {
			_, err := p.Commit(context.Background(), tx, kit.TurnEnd{TurnID: "turn_bad", Principal: "agent_a", Updates: json.RawMessage(bad)})
			return err
		})
		if k := errs.KindOf(err); k != errs.Validation && k != errs.NotFound {
			t.Errorf("%s: %v (%s)", bad, err, k)
		}
	}
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("failed commits wrote:\n%s", d)
	}
}
