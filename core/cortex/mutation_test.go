package cortex

import (
	"slices"
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// Behaviour the seed implies but does not spell out.

func TestEveryMutationIsPublished(t *testing.T) {
	e := newEnv(t)
	tap := e.env.Events.Tap(100)
	defer tap.Close()
	e.create(agentA, "goal", "g", obj{"title": "evented"})
	e.update(inTurn(agentA, "turn_1"), "g", obj{"progress": 5}, 1)
	e.Fail(agentA, "cortex.update", obj{"id": "g", "updates": obj{"progress": 6}, "expected_version": 1}, errs.Conflict)
	e.Do(agentA, "cortex.delete", obj{"id": "g"}, nil)
	var got []ItemEvent
	for _, ev := range tap.Drain() {
		if ev.Name == EventItemMutated.Name() {
			got = append(got, ev.Data.(ItemEvent))
		}
	}
	want := []ItemEvent{
		{ItemID: "g", Type: "goal", MutationType: "create", Version: 1, MutatedBy: "agent_a"},
		{ItemID: "g", Type: "goal", MutationType: "update", Version: 2, MutatedBy: "turn_1"},
		{ItemID: "g", Type: "goal", MutationType: "delete", Version: 3, MutatedBy: "agent_a"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %+v\nwant %+v", got, want)
	}
}

func TestRevertKeepsParentsSound(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "a", obj{"title": "A"})
	e.create(agentA, "goal", "b", obj{"title": "B"})
	e.update(agentA, "a", obj{"parent": "b"}, -1) // a v2: under b
	e.update(agentA, "a", obj{"parent": ""}, -1)  // a v3
	e.update(agentA, "b", obj{"parent": "a"}, -1) // b under a
	before := e.dump()
	e.Fail(agentA, "cortex.revert", obj{"id": "a", "version": 2}, errs.Validation, "own ancestor")
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("the refused revert wrote:\n%s", d)
	}
	// A deleted parent cannot come back through a revert either.
	e.create(agentA, "goal", "c", obj{"title": "C"})
	e.create(agentA, "question", "q", obj{"title": "Q", "parent": "c"})
	e.update(agentA, "q", obj{"parent": ""}, -1)
	e.Do(agentA, "cortex.delete", obj{"id": "c"}, nil)
	e.Fail(agentA, "cortex.revert", obj{"id": "q", "version": 1}, errs.Validation, "parent")
}

func TestCustomFieldsAreVersioned(t *testing.T) {
	e := newEnv(t)
	it := e.create(agentA, "goal", "g", obj{"title": "custom", "custom": obj{"sprint": 12}})
	if it.Custom["sprint"] != float64(12) || it.FieldVersions["custom.sprint"] != 1 {
		t.Fatalf("%+v %v", it.Custom, it.FieldVersions)
	}
	r := e.update(agentA, "g", obj{"custom": obj{"sprint": 13, "team": obj{"name": "core"}}}, 1)
	if r.Item.FieldVersions["custom.sprint"] != 2 || r.Item.FieldVersions["custom.team"] != 1 {
		t.Fatalf("versions %v", r.Item.FieldVersions)
	}
	// Different custom fields merge; the same one conflicts.
	e.update(inTurn(agentA, "t1"), "g", obj{"custom": obj{"owner_note": "x"}}, 1)
	e.Fail(agentA, "cortex.update", obj{"id": "g", "updates": obj{"custom": obj{"sprint": 14}}, "expected_version": 1}, errs.Conflict, "custom.sprint")
	// null removes one.
	r = e.update(agentA, "g", obj{"custom": obj{"sprint": nil}}, -1)
	if _, ok := r.Item.Custom["sprint"]; ok {
		t.Fatalf("sprint still there: %v", r.Item.Custom)
	}
	h := e.history(agentA, "g")
	if m := h.Mutations[len(h.Mutations)-1]; !slices.Equal(m.ChangedFields, []string{"custom.sprint"}) || m.FieldChanges["custom.sprint"].New != nil {
		t.Fatalf("removal entry %+v", m)
	}
	// A revert brings it back.
	var out ItemResult
	e.Do(agentA, "cortex.revert", obj{"id": "g", "version": 2}, &out)
	if out.Item.Custom["sprint"] != float64(13) || out.Item.Custom["owner_note"] != nil {
		t.Fatalf("reverted custom %v", out.Item.Custom)
	}
}

func TestCountsReportItemsAndAuditEntries(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "g", obj{"title": "counted"})
	e.update(agentA, "g", obj{"progress": 1}, -1)
	e.create(agentB, "action", "a", obj{"title": "counted too"})
	counts, err := e.env.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["cortex"]; c["items"] != 2 || c["mutations"] != 3 {
		t.Fatalf("counts %v", c)
	}
}
