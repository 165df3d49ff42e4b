package cortex

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Seed 000, section 3: access control and sharing.

var ownerACL = []ACLEntry{{PrincipalType: "agent", PrincipalID: "agent_a", Permissions: []string{"read", "write", "delete", "share"}}}

// Seed 000, scenario 3.1.
func TestOwnerHasEveryPermission(t *testing.T) {
	e := newEnv(t)
	it := e.create(agentA, "goal", "goal_1", obj{"title": "mine"})
	if it.Owner != "agent_a" || !jsonEq(it.ACL, ownerACL) {
		t.Fatalf("owner %q ACL %+v; want %+v", it.Owner, it.ACL, ownerACL)
	}
	if got := e.get(agentA, "goal_1"); !jsonEq(got.ACL, ownerACL) {
		t.Fatalf("read ACL %+v", got.ACL)
	}
	e.update(agentA, "goal_1", obj{"progress": 10}, -1)
	e.Do(agentA, "cortex.share", obj{"id": "goal_1", "principal": "agent_b", "permissions": []string{"read"}}, nil)
	e.Do(agentA, "cortex.delete", obj{"id": "goal_1"}, nil)
	if got := e.traceKind("access_denied"); len(got) != 0 {
		t.Fatalf("access denied: %v", messages(got))
	}
	if h := e.history(agentA, "goal_1"); len(h.Mutations) != 4 {
		t.Fatalf("%d mutations, want 4", len(h.Mutations))
	}
}

// Seed 000, scenario 3.2.
func TestNonOwnerWithoutACLIsDenied(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "private"})
	before := e.dump()
	e.clock.Set(ms(100))
	e.Fail(inTurn(agentB, "turn_b"), "cortex.get", obj{"id": "goal_1"}, errs.Permission, "agent_b may not read goal")
	e.clock.Set(ms(200))
	e.Fail(inTurn(agentB, "turn_b"), "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 5}}, errs.Permission, "agent_b may not write goal")
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("denied calls changed the store:\n%s", d)
	}
	denied := e.traceKind("access_denied")
	if len(denied) != 2 {
		t.Fatalf("%d access_denied entries, want 2", len(denied))
	}
	for i, op := range []string{"read", "write"} {
		en := denied[i]
		if en.TurnID != "turn_b" || en.Principal != "agent_b" {
			t.Errorf("entry %d: turn %q principal %q", i, en.TurnID, en.Principal)
		}
		var data map[string]any
		if err := json.Unmarshal(en.Data, &data); err != nil {
			t.Fatal(err)
		}
		ts := ms(100 * (i + 1)).Format(time.RFC3339Nano)
		want := map[string]any{"event": "access_denied", "principal_id": "agent_b", "resource_type": "goal",
			"resource_id": "goal_1", "attempted_operation": op, "timestamp": ts, "acl_checked": true}
		if !jsonEq(data, want) {
			t.Errorf("entry %d data %v\nwant %v", i, data, want)
		}
		if _, err := time.Parse(time.RFC3339Nano, data["timestamp"].(string)); err != nil {
			t.Errorf("timestamp %v is not ISO 8601: %v", data["timestamp"], err)
		}
	}
	// Nor does B see it in queries, history or versions.
	if res := e.query(agentB, "cortex.query", obj{}); res.Count != 0 {
		t.Fatalf("B's query: %v", ids0(res.Items))
	}
	e.Fail(agentB, "cortex.history", obj{"id": "goal_1"}, errs.Permission)
	e.Fail(agentB, "cortex.version", obj{"id": "goal_1", "version": 1}, errs.Permission)
	e.Fail(agentB, "cortex.delete", obj{"id": "goal_1"}, errs.Permission)
	e.Fail(agentB, "cortex.revert", obj{"id": "goal_1", "version": 1}, errs.Permission)
}

func share(e *testEnv, id string, perms ...string) []ACLEntry {
	e.T.Helper()
	var out ACLResult
	e.Do(agentA, "cortex.share", obj{"id": id, "principal": "agent_b", "permissions": perms}, &out)
	return out.ACL
}

// Seed 000, scenario 3.3.
func TestSharedItemIsReadableAndWritable(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "shared"})
	share(e, "goal_1", "read", "write")
	if it := e.get(agentB, "goal_1"); it.ID != "goal_1" {
		t.Fatal(it)
	}
	r := e.update(agentB, "goal_1", obj{"progress": 40}, -1)
	if r.Item.Progress != 40 || r.Item.Owner != "agent_a" {
		t.Fatalf("%+v", r.Item)
	}
	h := e.history(agentA, "goal_1")
	if m := h.Mutations[len(h.Mutations)-1]; m.MutatedBy != "agent_b" || m.AgentID != "agent_b" {
		t.Fatalf("mutated_by %q agent_id %q", m.MutatedBy, m.AgentID)
	}
	// read and write only: B may not delete or share on.
	e.Fail(agentB, "cortex.delete", obj{"id": "goal_1"}, errs.Permission)
	e.Fail(agentB, "cortex.share", obj{"id": "goal_1", "principal": "agent_c", "permissions": []string{"read"}}, errs.Permission)
}

// Seed 000, scenario 3.4.
func TestShareUpdatesTheACL(t *testing.T) {
	e := newEnv(t)
	it := e.create(agentA, "goal", "goal_1", obj{"title": "to share"})
	if !jsonEq(it.ACL, ownerACL) {
		t.Fatalf("ACL %+v", it.ACL)
	}
	acl := share(e, "goal_1", "write", "read") // given in any order
	want := append(slices.Clone(ownerACL), ACLEntry{PrincipalType: "agent", PrincipalID: "agent_b", Permissions: []string{"read", "write"}})
	if !jsonEq(acl, want) || !jsonEq(e.get(agentA, "goal_1").ACL, want) {
		t.Fatalf("ACL %+v; want %+v", acl, want)
	}
	e.get(agentB, "goal_1")
	e.update(agentB, "goal_1", obj{"title": "renamed by B"}, -1)
	h := e.history(agentA, "goal_1")
	m := h.Mutations[1]
	if m.MutationType != "share" || m.Summary != "shared with agent_b, permissions: [read, write]" || !slices.Equal(m.ChangedFields, []string{"acl"}) {
		t.Fatalf("share entry: %s %q %v", m.MutationType, m.Summary, m.ChangedFields)
	}
}

// Seed 000, scenario 3.5.
func TestRevokeRemovesAccess(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "revocable"})
	share(e, "goal_1", "read", "write")
	e.get(agentB, "goal_1")
	var out ACLResult
	e.Do(agentA, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_b"}, &out)
	if !jsonEq(out.ACL, ownerACL) {
		t.Fatalf("ACL after revoke: %+v", out.ACL)
	}
	e.Fail(agentB, "cortex.get", obj{"id": "goal_1"}, errs.Permission)
	e.Fail(agentB, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 1}}, errs.Permission)
	if res := e.query(agentB, "cortex.query", obj{}); res.Count != 0 {
		t.Fatalf("B still sees %v", ids0(res.Items))
	}
	h := e.history(agentA, "goal_1")
	if m := h.Mutations[2]; m.MutationType != "revoke" || m.Summary != "revoked access for agent_b" {
		t.Fatalf("revoke entry: %s %q", m.MutationType, m.Summary)
	}
	// The owner's access cannot be revoked, and revoking twice is NotFound.
	e.Fail(agentA, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_a"}, errs.Validation, "cannot be revoked")
	e.Fail(agentA, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_b"}, errs.NotFound)
}

// Seed 000, scenario 3.6.
func TestSharedAgentsMutationsAreAudited(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "tracked", "progress": 20})
	share(e, "goal_1", "read", "write")
	e.clock.Set(ms(42))
	e.update(agentB, "goal_1", obj{"progress": 60}, -1)

	h := e.history(agentA, "goal_1") // the owner sees every mutation
	if len(h.Mutations) != 3 || !h.Verified {
		t.Fatalf("owner's history: %d entries verified=%v", len(h.Mutations), h.Verified)
	}
	m := h.Mutations[2]
	if m.MutatedBy != "agent_b" || m.MutationType != "update" || !m.AgentPermissionsVerified || !m.MutationTimestamp.Equal(ms(42)) {
		t.Fatalf("entry: %+v", m)
	}
	if !jsonEq(m.FieldChanges["progress"], FieldChange{Old: 20, New: 60, Version: "1→2"}) {
		t.Fatalf("field_changes: %+v", m.FieldChanges)
	}
	// The stored form names the timestamp in ISO 8601.
	var raw map[string]any
	if err := json.Unmarshal(e.auditRaw("goal_1", 3), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["mutation_timestamp"] != "2025-11-05T10:00:00.042Z" || raw["mutated_by"] != "agent_b" || raw["agent_permissions_verified"] != true {
		t.Fatalf("stored entry: %v", raw)
	}
}

// Queries never return what the caller cannot read, whatever the filters.
func TestQueriesReturnOnlyReadableItems(t *testing.T) {
	e := newEnv(t)
	agentC := call{As: "agent_c"}
	e.create(agentA, "goal", "a_private", obj{"title": "alpha plan", "tags": []string{"x"}})
	e.create(agentA, "goal", "a_shared", obj{"title": "alpha shared", "tags": []string{"x"}})
	e.create(agentA, "goal", "a_write_only", obj{"title": "alpha write", "tags": []string{"x"}})
	e.create(agentB, "goal", "b_own", obj{"title": "beta", "tags": []string{"x"}})
	e.create(agentC, "goal", "c_own", obj{"title": "gamma", "tags": []string{"x"}})
	share(e, "a_shared", "read")
	share(e, "a_write_only", "write") // write without read: not listed

	for _, q := range []obj{{}, {"tags": []string{"x"}}, {"owner": "agent_a"}, {"text": "alpha"}, {"type": "goal", "include_deleted": true}} {
		res := e.query(agentB, "cortex.query", q)
		for _, it := range res.Items {
			if !it.can("agent_b", "read") {
				t.Errorf("query %v returned %s, which agent_b cannot read", q, it.ID)
			}
		}
	}
	got := ids0(e.query(agentB, "cortex.query", obj{"tags": []string{"x"}}).Items)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a_shared", "b_own"}) {
		t.Fatalf("B sees %v; want [a_shared b_own]", got)
	}
	if got := ids0(e.query(agentB, "cortex.query", obj{"owner": "agent_a"}).Items); !slices.Equal(got, []string{"a_shared"}) {
		t.Fatalf("B's owner=agent_a: %v", got)
	}
	// Share by someone who may read but not share: denied, nothing written.
	before := e.dump()
	e.Fail(agentB, "cortex.share", obj{"id": "a_shared", "principal": "agent_c", "permissions": []string{"read"}}, errs.Permission)
	e.Fail(agentB, "cortex.revoke", obj{"id": "a_shared", "principal": "agent_b"}, errs.Permission)
	if d := sameDump(before, e.dump()); d != "" {
		t.Fatalf("denied share wrote:\n%s", d)
	}
	// A share permission passes on: B may then share with C.
	share(e, "a_shared", "read", "share")
	e.Do(agentB, "cortex.share", obj{"id": "a_shared", "principal": "agent_c", "permissions": []string{"read"}}, nil)
	if got := ids0(e.query(agentC, "cortex.query", obj{"owner": "agent_a"}).Items); !slices.Equal(got, []string{"a_shared"}) {
		t.Fatalf("C's owner=agent_a: %v", got)
	}
	// Nobody revokes the owner, not even a sharer.
	e.Fail(agentB, "cortex.revoke", obj{"id": "a_shared", "principal": "agent_a"}, errs.Validation)
	e.Fail(agentA, "cortex.share", obj{"id": "a_shared", "principal": "agent_a", "permissions": []string{"read"}}, errs.Validation)
}
