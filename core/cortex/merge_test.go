package cortex

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Seed 000, section 1: conflict resolution and versioning.

// Seed 000, scenario 1.1.
func TestConcurrentUpdatesToDifferentFieldsBothApply(t *testing.T) {
	e := newEnv(t)
	e.goal123("goal_1")
	turnA, turnB := inTurn(agentA, "turn_A"), inTurn(agentA, "turn_B")
	// Both turns read v5.
	if a, b := e.get(turnA, "goal_1"), e.get(turnB, "goal_1"); a.GlobalVersion != 5 || b.GlobalVersion != 5 {
		t.Fatalf("reads: v%d, v%d; want v5", a.GlobalVersion, b.GlobalVersion)
	}
	ra := e.update(turnA, "goal_1", obj{"progress": 75}, 5)
	rb := e.update(turnB, "goal_1", obj{"priority": "critical"}, 5) // no ConflictError
	if ra.Item.GlobalVersion != 6 || rb.Item.GlobalVersion != 7 {
		t.Fatalf("versions %d, %d; want 6, 7", ra.Item.GlobalVersion, rb.Item.GlobalVersion)
	}
	it := e.get(agentA, "goal_1")
	if it.Progress != 75 || it.Priority != "critical" || it.Status != "active" || it.GlobalVersion != 7 {
		t.Fatalf("final: %d%% %s %s v%d; want 75%% critical active v7", it.Progress, it.Priority, it.Status, it.GlobalVersion)
	}
	if it.FieldVersions["progress"] != 4 || it.FieldVersions["priority"] != 3 {
		t.Fatalf("final %s; want progress_version=4 priority_version=3", versions(it, "progress", "priority"))
	}
}

// Seed 000, scenario 1.1b.
func TestStaleUpdateOfAnotherFieldMerges(t *testing.T) {
	e := newEnv(t)
	e.goal123("goal_123")
	turnA := call{As: "agent_a", Turn: "turn_A_001"}
	turnB := call{As: "agent_a", Turn: "turn_B_001"}

	e.clock.Set(ms(0))
	if v := e.get(turnA, "goal_123").GlobalVersion; v != 5 {
		t.Fatalf("turn A reads v%d, want v5", v)
	}
	e.clock.Set(ms(5))
	if v := e.get(turnB, "goal_123").GlobalVersion; v != 5 {
		t.Fatalf("turn B reads v%d, want v5", v)
	}

	e.clock.Set(ms(10))
	ra := e.update(turnA, "goal_123", obj{"progress": 75}, 5)
	a := ra.Item
	if a.GlobalVersion != 6 || a.Progress != 75 || a.Priority != "high" || a.Status != "active" || ra.MergeApplied {
		t.Fatalf("after A: v%d %d%% %s %s merge=%v; want v6 75%% high active merge=false", a.GlobalVersion, a.Progress, a.Priority, a.Status, ra.MergeApplied)
	}
	if got, want := versions(a, "progress", "priority", "status"), "progress_version=4 priority_version=2 status_version=1"; got != want {
		t.Fatalf("after A: %s; want %s", got, want)
	}

	e.clock.Set(ms(12))
	rb := e.update(turnB, "goal_123", obj{"priority": "critical"}, 5)
	b := rb.Item
	if b.GlobalVersion != 7 || b.Progress != 75 || b.Priority != "critical" || b.Status != "active" || !rb.MergeApplied {
		t.Fatalf("after B: v%d %d%% %s %s merge=%v; want v7 75%% critical active merge=true", b.GlobalVersion, b.Progress, b.Priority, b.Status, rb.MergeApplied)
	}
	if got, want := versions(b, "progress", "priority", "status"), "progress_version=4 priority_version=3 status_version=1"; got != want {
		t.Fatalf("after B: %s; want %s", got, want)
	}

	// The final state, queried.
	final := e.get(agentA, "goal_123")
	if final.GlobalVersion != 7 || final.Progress != 75 || final.Priority != "critical" || final.Status != "active" {
		t.Fatalf("final: %+v", final)
	}
	if got, want := versions(final, "progress", "priority", "status"), "progress_version=4 priority_version=3 status_version=1"; got != want {
		t.Fatalf("final: %s; want %s", got, want)
	}

	// The audit trail: the two mutations, and the chain v5 → v6 → v7.
	h := e.history(agentA, "goal_123")
	if !h.Verified || len(h.Mutations) != 7 {
		t.Fatalf("history: %d entries, chain_verified=%v (%s); want 7, true", len(h.Mutations), h.Verified, h.Problem)
	}
	m1, m2 := h.Mutations[5], h.Mutations[6]
	check := func(m Mutation, prev, next int, field string, old, new any, version, by string, at time.Time, merge bool) {
		t.Helper()
		if !isUUID(m.MutationID) || m.ItemID != "goal_123" || m.MutationType != "update" {
			t.Errorf("v%d: mutation_id %q item_id %q type %q", next, m.MutationID, m.ItemID, m.MutationType)
		}
		if m.PreviousVersion == nil || *m.PreviousVersion != prev || m.NewVersion != next {
			t.Errorf("v%d: previous_version %v new_version %d; want %d, %d", next, m.PreviousVersion, m.NewVersion, prev, next)
		}
		if !slices.Equal(m.ChangedFields, []string{field}) {
			t.Errorf("v%d: changed_fields %v; want [%s]", next, m.ChangedFields, field)
		}
		if m.MutatedBy != by || m.TurnID != by || m.AgentID != "agent_a" {
			t.Errorf("v%d: mutated_by %q turn %q agent %q; want %s", next, m.MutatedBy, m.TurnID, m.AgentID, by)
		}
		if !m.MutationTimestamp.Equal(at) {
			t.Errorf("v%d: mutation_timestamp %s; want %s", next, m.MutationTimestamp, at)
		}
		want := map[string]FieldChange{field: {Old: old, New: new, Version: version}}
		if !jsonEq(m.FieldChanges, want) {
			t.Errorf("v%d: field_changes %+v; want %+v", next, m.FieldChanges, want)
		}
		if m.MergeApplied != merge || !m.AgentPermissionsVerified || !isUUID(m.TransactionID) {
			t.Errorf("v%d: merge_applied %v verified %v transaction %q", next, m.MergeApplied, m.AgentPermissionsVerified, m.TransactionID)
		}
	}
	check(m1, 5, 6, "progress", 50, 75, "3→4", "turn_A_001", ms(10), false)
	check(m2, 6, 7, "priority", "high", "critical", "2→3", "turn_B_001", ms(12), true)
	if m1.MutationID == m2.MutationID {
		t.Error("the two mutations share a mutation_id")
	}

	// The turn trace.
	e.mustTrace("turn_A_001", "FC update succeeded: goal_123, fields=[progress], version: 5→6")
	e.mustTrace("turn_B_001", "FC update succeeded: goal_123, fields=[priority], version: 6→7, merge_applied=true")
	// 0 ConflictErrors: no failure anywhere in the trace.
	for _, en := range e.traces("") {
		if en.Kind == "cortex.update.failed" || en.Kind == "access_denied" {
			t.Errorf("unexpected trace entry %s: %s", en.Kind, en.Message)
		}
	}
}

// Seed 000, scenario 1.2.
func TestStaleUpdateOfTheSameFieldConflicts(t *testing.T) {
	e := newEnv(t)
	e.goal123("goal_1")
	turnA, turnB := inTurn(agentA, "turn_A"), inTurn(agentA, "turn_B")
	e.get(turnA, "goal_1")
	e.get(turnB, "goal_1")
	if r := e.update(turnA, "goal_1", obj{"progress": 75}, 5); r.Item.GlobalVersion != 6 {
		t.Fatalf("A: v%d, want v6", r.Item.GlobalVersion)
	}
	before := e.dump()
	err := e.Fail(turnB, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 80}, "expected_version": 5}, errs.Conflict, "progress")
	// Issue 14, bug 10: the message said "version 2 (v6)", the field's count
	// beside the item's version; it gives the item's version once.
	if want := `goal "goal_1" is at version 6, not 5: progress changed since; read it again and retry`; err.Message != want {
		t.Errorf("message %q, want %q", err.Message, want)
	}
	cur, ok := err.Details["current"].(*Item)
	if !ok || cur.GlobalVersion != 6 || cur.Progress != 75 {
		t.Fatalf("ConflictError details.current = %#v; want the goal at v6 with progress 75", err.Details["current"])
	}
	if err.Details["current_version"] != 6 || err.Details["expected_version"] != 5 {
		t.Errorf("details: %v", err.Details)
	}
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("the failed update changed the store:\n%s", d)
	}
	if it := e.get(agentA, "goal_1"); it.GlobalVersion != 6 || it.Progress != 75 {
		t.Fatalf("goal after the conflict: v%d %d%%", it.GlobalVersion, it.Progress)
	}
}

// Seed 000, scenario 1.3.
func TestUpdateRetriedAfterAConflictApplies(t *testing.T) {
	e := newEnv(t)
	e.goal123("goal_1")
	turnA, turnB := inTurn(agentA, "turn_A"), inTurn(agentA, "turn_B")
	e.update(turnA, "goal_1", obj{"progress": 75}, 5)
	e.Fail(turnB, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 80}, "expected_version": 5}, errs.Conflict)

	fresh := e.get(turnB, "goal_1")
	if fresh.GlobalVersion != 6 || fresh.Progress != 75 {
		t.Fatalf("fresh read: v%d %d%%; want v6 75%%", fresh.GlobalVersion, fresh.Progress)
	}
	r := e.update(turnB, "goal_1", obj{"progress": 80}, fresh.GlobalVersion)
	if r.Item.GlobalVersion != 7 || r.Item.Progress != 80 || r.MergeApplied {
		t.Fatalf("retry: v%d %d%% merge=%v; want v7 80%%", r.Item.GlobalVersion, r.Item.Progress, r.MergeApplied)
	}
	h := e.history(agentA, "goal_1")
	if !h.Verified || len(h.Mutations) != 7 {
		t.Fatalf("history: %d entries, verified=%v", len(h.Mutations), h.Verified)
	}
	for i, want := range []struct {
		prev, next int
		by         string
	}{{5, 6, "turn_A"}, {6, 7, "turn_B"}} {
		m := h.Mutations[5+i]
		if *m.PreviousVersion != want.prev || m.NewVersion != want.next || m.MutatedBy != want.by {
			t.Errorf("mutation %d: v%d→v%d by %s; want v%d→v%d by %s", i, *m.PreviousVersion, m.NewVersion, m.MutatedBy, want.prev, want.next, want.by)
		}
	}
}

// interfere makes another turn update field before every attempt of an
// update (up to times attempts; all of them when times < 0), the way "a goal
// continuously updated by other turns" looks to the updater.
func interfere(e *testEnv, id, field string, times int) *int {
	n := 0
	busy := false
	e.c.beforeAttempt = func(item string, attempt int) {
		if busy || item != id || (times >= 0 && n >= times) {
			return
		}
		busy = true // the interfering update runs through the same hook
		defer func() { busy = false }()
		n++
		e.update(inTurn(agentA, fmt.Sprintf("turn_other_%d", n)), id, obj{field: n}, -1)
	}
	return &n
}

// Seed 000, scenario 1.4.
func TestUpdateFailsWhenRetriesRunOut(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_x", obj{"title": "contested", "progress": 0})
	turnA := inTurn(agentA, "turn_A")
	read := e.get(turnA, "goal_x")
	n := interfere(e, "goal_x", "progress", -1)

	err := e.Fail(turnA, "cortex.update", obj{"id": "goal_x", "updates": obj{"progress": 99},
		"expected_version": read.GlobalVersion, "max_retries": 3}, errs.Conflict)
	if *n != 4 {
		t.Fatalf("%d attempts were interfered with; want 4 (the attempt and 3 retries)", *n)
	}
	if cur := err.Details["current"].(*Item); cur.GlobalVersion != 5 {
		t.Errorf("current version %d, want 5", cur.GlobalVersion)
	}
	en := e.mustTrace("turn_A", "FC update failed after 3 retries, item_id=goal_x, field=progress")
	if en.Kind != "cortex.update.failed" {
		t.Errorf("kind %q", en.Kind)
	}
	// Turn A never wrote: 5 versions, all by the create and the other turns.
	it := e.get(agentA, "goal_x")
	if it.GlobalVersion != 5 || it.Progress != 4 {
		t.Fatalf("goal: v%d progress %d; want v5 progress 4", it.GlobalVersion, it.Progress)
	}
	for _, m := range e.history(agentA, "goal_x").Mutations {
		if m.MutatedBy == "turn_A" {
			t.Errorf("turn A's update was written: %+v", m)
		}
	}

	// The raw action's default is no retry: one conflict fails at once,
	// without the "after N retries" entry.
	e.clock.Advance(time.Second)
	read = e.get(inTurn(agentA, "turn_C"), "goal_x")
	*n = 0
	e.Fail(inTurn(agentA, "turn_C"), "cortex.update", obj{"id": "goal_x", "updates": obj{"progress": 99}, "expected_version": read.GlobalVersion}, errs.Conflict)
	if *n != 1 {
		t.Fatalf("%d attempts without max_retries; want 1", *n)
	}
	for _, en := range e.traces("turn_C") {
		if en.Kind == "cortex.update.failed" {
			t.Errorf("unexpected %q", en.Message)
		}
	}
}

// Seed 000, scenario 1.4.
func TestRetrySucceedsAfterOneConflict(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_x", obj{"title": "contested", "progress": 0})
	turnA := inTurn(agentA, "turn_A")
	read := e.get(turnA, "goal_x")
	n := interfere(e, "goal_x", "progress", 1)
	var r UpdateResult
	e.Do(turnA, "cortex.update", obj{"id": "goal_x", "updates": obj{"progress": 99}, "expected_version": read.GlobalVersion, "max_retries": 1}, &r)
	if *n != 1 || r.Retries != 1 {
		t.Fatalf("interfered %d times, retries %d; want 1, 1", *n, r.Retries)
	}
	if r.Item.GlobalVersion != 3 || r.Item.Progress != 99 {
		t.Fatalf("v%d progress %d; want v3 progress 99", r.Item.GlobalVersion, r.Item.Progress)
	}
	e.mustTrace("turn_A", "FC update succeeded: goal_x, fields=[progress], version: 2→3")
}

// Seed 000, scenario 1.5.
func TestVersionsIncrementByOne(t *testing.T) {
	e := newEnv(t)
	it := e.create(agentA, "goal", "goal_1", obj{"title": "versions"})
	if it.GlobalVersion != 1 {
		t.Fatalf("created at v%d", it.GlobalVersion)
	}
	steps := []struct {
		field string
		value any
	}{{"progress", 10}, {"priority", "high"}, {"status", "in_progress"}}
	prev := it
	for i, s := range steps {
		e.clock.Advance(time.Millisecond)
		next := e.update(agentA, "goal_1", obj{s.field: s.value}, prev.GlobalVersion).Item
		if next.GlobalVersion != i+2 {
			t.Fatalf("mutation %d: v%d, want v%d", i+1, next.GlobalVersion, i+2)
		}
		for f, v := range next.FieldVersions {
			want := prev.FieldVersions[f]
			if f == s.field {
				want++
			}
			if v != want {
				t.Errorf("mutation %d (%s): %s_version %d, want %d", i+1, s.field, f, v, want)
			}
		}
		prev = next
	}
	var got []int
	for _, m := range e.history(agentA, "goal_1").Mutations {
		got = append(got, m.NewVersion)
	}
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("versions %v, want [1 2 3 4]", got)
	}
	if got, want := versions(prev, "progress", "priority", "status", "title"), "progress_version=2 priority_version=2 status_version=2 title_version=1"; got != want {
		t.Fatalf("%s; want %s", got, want)
	}
}

// Seed 000, scenario 1.6.
func TestFieldVersionsMoveIndependently(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "fields"})
	e.update(agentA, "goal_1", obj{"progress": 20}, 1)
	it := e.get(agentA, "goal_1")
	if got, want := versions(it, "progress", "priority", "status"), "progress_version=2 priority_version=1 status_version=1"; got != want {
		t.Fatalf("setup: %s; want %s", got, want)
	}
	// Both updates are based on the same read (v2): independent fields, no conflict.
	r1 := e.update(inTurn(agentA, "t1"), "goal_1", obj{"progress": 40}, it.GlobalVersion)
	if got, want := versions(r1.Item, "progress", "priority", "status"), "progress_version=3 priority_version=1 status_version=1"; got != want {
		t.Fatalf("after progress: %s; want %s", got, want)
	}
	r2 := e.update(inTurn(agentA, "t2"), "goal_1", obj{"priority": "low"}, it.GlobalVersion)
	if got, want := versions(r2.Item, "progress", "priority", "status"), "progress_version=3 priority_version=2 status_version=1"; got != want {
		t.Fatalf("after priority: %s; want %s", got, want)
	}
	if !r2.MergeApplied || r2.Item.GlobalVersion != 4 || r2.Item.Progress != 40 {
		t.Fatalf("second update: merge=%v v%d progress %d", r2.MergeApplied, r2.Item.GlobalVersion, r2.Item.Progress)
	}
}

// Not a seed scenario: an update that changes no value makes no version.
func TestUpdateWithoutChangeMakesNoVersion(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "g", obj{"title": "same", "progress": 5})
	before := e.dump()
	r := e.update(agentA, "g", obj{"progress": 5}, 1)
	if r.Item.GlobalVersion != 1 {
		t.Fatalf("v%d", r.Item.GlobalVersion)
	}
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("a no-op update wrote:\n%s", d)
	}
}
