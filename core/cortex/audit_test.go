package cortex

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Seed 000, section 2: audit trail and versioning.

// Seed 000, scenario 2.1.
func TestEveryMutationWritesAnAuditEntry(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "audited"})
	e.clock.Advance(time.Second)
	e.update(agentA, "goal_1", obj{"progress": 30}, -1)
	e.clock.Advance(time.Second)
	e.update(agentA, "goal_1", obj{"priority": "high"}, -1)
	e.clock.Advance(time.Second)
	e.Do(agentA, "cortex.delete", obj{"id": "goal_1"}, nil)

	h := e.history(agentA, "goal_1")
	if len(h.Mutations) != 4 || !h.Verified {
		t.Fatalf("%d entries, verified=%v; want 4, true", len(h.Mutations), h.Verified)
	}
	types := []string{"create", "update", "update", "delete"}
	fields := [][]string{nil, {"progress"}, {"priority"}, {"deleted_at", "status"}}
	for i, m := range h.Mutations {
		if m.MutationType != types[i] || !isUUID(m.MutationID) || m.ItemID != "goal_1" || m.NewVersion != i+1 {
			t.Errorf("entry %d: %s %q %q v%d", i, m.MutationType, m.MutationID, m.ItemID, m.NewVersion)
		}
		if i == 0 && m.PreviousVersion != nil || i > 0 && (m.PreviousVersion == nil || *m.PreviousVersion != i) {
			t.Errorf("entry %d: previous_version %v", i, m.PreviousVersion)
		}
		if len(m.ChangedFields) == 0 || fields[i] != nil && !slices.Equal(m.ChangedFields, fields[i]) {
			t.Errorf("entry %d: changed_fields %v, want %v", i, m.ChangedFields, fields[i])
		}
		if want := t0.Add(time.Duration(i) * time.Second); !m.MutationTimestamp.Equal(want) {
			t.Errorf("entry %d: timestamp %s, want %s", i, m.MutationTimestamp, want)
		}
	}
	// The create lists every field it set.
	if c := h.Mutations[0]; !slices.Contains(c.ChangedFields, "title") || c.FieldChanges["title"].Version != "0→1" {
		t.Errorf("create entry: %v %+v", c.ChangedFields, c.FieldChanges["title"])
	}

	// Immutable: later mutations leave the stored entries byte for byte, and
	// no action edits or removes one.
	var stored [][]byte
	for v := 1; v <= 4; v++ {
		stored = append(stored, e.auditRaw("goal_1", v))
	}
	e.Do(agentA, "cortex.revert", obj{"id": "goal_1", "version": 3}, nil)
	e.update(agentA, "goal_1", obj{"progress": 90}, -1)
	for v := 1; v <= 4; v++ {
		if !bytes.Equal(stored[v-1], e.auditRaw("goal_1", v)) {
			t.Errorf("audit entry v%d changed", v)
		}
	}
	for _, a := range e.env.Actions.List() {
		if strings.HasPrefix(a.Name, "cortex.") && (strings.Contains(a.Name, "audit") || strings.Contains(a.Name, "purge")) {
			t.Errorf("action %s could change the audit trail", a.Name)
		}
	}
	if h := e.history(agentA, "goal_1"); len(h.Mutations) != 6 || !h.Verified {
		t.Fatalf("after more mutations: %d entries, verified=%v", len(h.Mutations), h.Verified)
	}
}

// fiveMutations makes an item with 5 mutations (create and 4 updates), the
// clock a second later each time.
func fiveMutations(e *testEnv, id string) {
	e.create(agentA, "goal", id, obj{"title": "lineage", "progress": 0, "priority": "low"})
	for i, u := range []obj{{"progress": 30}, {"priority": "high"}, {"progress": 80}, {"priority": "critical"}} {
		e.clock.Advance(time.Second)
		e.update(agentA, id, u, i+1)
	}
}

// Seed 000, scenario 2.2.
func TestLineageIsCompleteAndOrdered(t *testing.T) {
	e := newEnv(t)
	fiveMutations(e, "goal_1")
	h := e.history(agentA, "goal_1")
	if len(h.Mutations) != 5 || !h.Verified || h.Problem != "" {
		t.Fatalf("%d mutations, chain_verified=%v %q; want 5, true", len(h.Mutations), h.Verified, h.Problem)
	}
	if h.Mutations[0].PreviousVersion != nil {
		t.Errorf("mutation[0].previous_version = %d, want null", *h.Mutations[0].PreviousVersion)
	}
	seen := map[string]bool{}
	for i, m := range h.Mutations {
		if m.NewVersion != i+1 {
			t.Errorf("mutation[%d].new_version = %d, want %d", i, m.NewVersion, i+1)
		}
		if i+1 < len(h.Mutations) {
			if next := h.Mutations[i+1]; next.PreviousVersion == nil || *next.PreviousVersion != m.NewVersion {
				t.Errorf("mutation[%d].new_version %d != mutation[%d].previous_version %v", i, m.NewVersion, i+1, next.PreviousVersion)
			}
			if !h.Mutations[i+1].MutationTimestamp.After(m.MutationTimestamp) {
				t.Errorf("mutation %d is not after %d", i+1, i)
			}
		}
		if !isUUID(m.MutationID) || seen[m.MutationID] || m.MutationTimestamp.IsZero() {
			t.Errorf("mutation[%d]: id %q timestamp %s", i, m.MutationID, m.MutationTimestamp)
		}
		seen[m.MutationID] = true
	}
}

// Seed 000, scenario 2.3.
func TestRevertRestoresAnEarlierVersion(t *testing.T) {
	e := newEnv(t)
	fiveMutations(e, "goal_1")
	v5 := e.get(agentA, "goal_1")
	if v5.GlobalVersion != 5 || v5.Progress != 80 || v5.Priority != "critical" {
		t.Fatalf("setup: v%d %d%% %s", v5.GlobalVersion, v5.Progress, v5.Priority)
	}
	var v3 ItemResult
	e.Do(agentA, "cortex.version", obj{"id": "goal_1", "version": 3}, &v3)

	e.clock.Advance(time.Second)
	var out ItemResult
	e.Do(inTurn(agentA, "turn_revert"), "cortex.revert", obj{"id": "goal_1", "version": 3}, &out)
	it := out.Item
	if it.GlobalVersion != 6 || it.Progress != 30 || it.Priority != "high" {
		t.Fatalf("reverted: v%d %d%% %s; want v6 30%% high", it.GlobalVersion, it.Progress, it.Priority)
	}
	for _, f := range editableFields {
		if !equalValues(it.fieldValue(f), v3.Item.fieldValue(f)) {
			t.Errorf("%s = %v, v3 had %v", f, it.fieldValue(f), v3.Item.fieldValue(f))
		}
	}
	// Field versions move on: the revert is a new version of each field it changed.
	if got, want := versions(it, "progress", "priority", "title"), "progress_version=4 priority_version=4 title_version=1"; got != want {
		t.Errorf("%s; want %s", got, want)
	}
	h := e.history(agentA, "goal_1")
	if len(h.Mutations) != 6 || !h.Verified {
		t.Fatalf("lineage: %d entries, verified %v", len(h.Mutations), h.Verified)
	}
	for i, m := range h.Mutations {
		if m.NewVersion != i+1 {
			t.Errorf("lineage[%d] = v%d", i, m.NewVersion)
		}
	}
	last := h.Mutations[5]
	if last.MutationType != "revert" || last.Summary != "reverted from v5 to v3" || *last.PreviousVersion != 5 ||
		!slices.Equal(last.ChangedFields, []string{"priority", "progress"}) {
		t.Fatalf("revert entry: %s %q prev %d fields %v", last.MutationType, last.Summary, *last.PreviousVersion, last.ChangedFields)
	}
	e.mustTrace("turn_revert", "FC goal goal_1: reverted from v5 to v3")
}

// Seed 000, scenario 2.4.
func TestSoftDeletedItemsLeaveQueries(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_a", obj{"title": "A"})
	e.create(agentA, "goal", "goal_b", obj{"title": "B"})
	e.Do(agentA, "cortex.delete", obj{"id": "goal_b"}, nil)
	for _, name := range []string{"cortex.query", "cortex.active"} {
		res := e.query(agentA, name, obj{"type": "goal"})
		if got := ids0(res.Items); !slices.Equal(got, []string{"goal_a"}) || res.Count != 1 {
			t.Errorf("%s: %v (count %d); want [goal_a]", name, got, res.Count)
		}
	}
	// Nor can it be read without asking for deleted items.
	e.Fail(agentA, "cortex.get", obj{"id": "goal_b"}, errs.NotFound, "deleted")
	e.Fail(agentA, "cortex.update", obj{"id": "goal_b", "updates": obj{"progress": 1}}, errs.NotFound)
}

// Seed 000, scenario 2.5.
func TestSoftDeletedItemsShownWithIncludeDeleted(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_a", obj{"title": "A"})
	e.create(agentA, "goal", "goal_b", obj{"title": "B", "status": "in_progress"})
	e.clock.Advance(time.Minute)
	deletedAt := e.clock.Now()
	e.Do(agentA, "cortex.delete", obj{"id": "goal_b"}, nil)
	e.clock.Advance(time.Minute)

	res := e.query(agentA, "cortex.query", obj{"include_deleted": true})
	if got := ids0(res.Items); len(got) != 2 || !slices.Contains(got, "goal_b") {
		t.Fatalf("include_deleted: %v", got)
	}
	var b *Item
	for _, it := range res.Items {
		if it.ID == "goal_b" {
			b = it
		}
	}
	if b.DeletedAt == nil || !b.DeletedAt.Equal(deletedAt) || b.Status != "archived" {
		t.Fatalf("goal B: deleted_at %v status %s; want %s archived", b.DeletedAt, b.Status, deletedAt)
	}
	// The raw JSON carries deleted_at as a timestamp.
	raw := e.Do(agentA, "cortex.get", obj{"id": "goal_b", "include_deleted": true}, nil)
	var m struct {
		Item map[string]json.RawMessage `json:"item"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if string(m.Item["deleted_at"]) != `"2025-11-05T10:01:00Z"` || string(m.Item["status"]) != `"archived"` {
		t.Errorf("get: deleted_at %s status %s", m.Item["deleted_at"], m.Item["status"])
	}
	if h := e.history(agentA, "goal_b"); len(h.Mutations) != 2 || !h.Verified || h.Mutations[1].MutationType != "delete" {
		t.Fatalf("audit trail of the deleted goal: %+v", h)
	}
	// Only deleted items with their status when filtering on archived.
	res = e.query(agentA, "cortex.query", obj{"include_deleted": true, "status": []string{"archived"}})
	if got := ids0(res.Items); !slices.Equal(got, []string{"goal_b"}) {
		t.Fatalf("archived: %v", got)
	}
	// A revert to a version before the delete brings it back.
	e.Do(agentA, "cortex.revert", obj{"id": "goal_b", "version": 1}, nil)
	if it := e.get(agentA, "goal_b"); it.DeletedAt != nil || it.Status != "in_progress" || it.GlobalVersion != 3 {
		t.Fatalf("restored: deleted_at %v status %s v%d", it.DeletedAt, it.Status, it.GlobalVersion)
	}
	if got := ids0(e.query(agentA, "cortex.query", obj{}).Items); len(got) != 2 {
		t.Fatalf("after restore: %v", got)
	}
}
