package cortex

import (
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// Bad input is a clear error of the right kind, and writes nothing: every
// key and value in the store is unchanged (the trace aside: a denied call
// records access_denied by design, seed 3.2).
func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "target", "progress": 10})
	e.update(agentA, "goal_1", obj{"progress": 20}, -1)
	e.create(agentA, "goal", "child", obj{"title": "child", "parent": "goal_1"})
	share(e, "goal_1", "read", "write")

	upd := func(updates obj) obj { return obj{"id": "goal_1", "updates": updates} }
	cases := []struct {
		name     string
		who      call
		action   string
		args     any
		kind     errs.Kind
		fragment string
	}{
		{"unknown type", agentA, "cortex.create", obj{"type": "task", "fields": obj{"title": "x"}}, errs.Validation, "unknown item type \"task\""},
		{"create without title", agentA, "cortex.create", obj{"type": "goal", "fields": obj{"progress": 1}}, errs.Validation, "title"},
		{"empty title", agentA, "cortex.create", obj{"type": "goal", "fields": obj{"title": "  "}}, errs.Validation, "title"},
		{"create unknown field", agentA, "cortex.create", obj{"type": "goal", "fields": obj{"title": "x", "colour": "red"}}, errs.Validation, "unknown field \"colour\""},
		{"create sets owner", agentA, "cortex.create", obj{"type": "goal", "fields": obj{"title": "x", "owner": "agent_b"}}, errs.Validation, "owner"},
		{"create bad id", agentA, "cortex.create", obj{"type": "goal", "id": "a/b", "fields": obj{"title": "x"}}, errs.Validation, "id"},
		{"create duplicate id", agentA, "cortex.create", obj{"type": "goal", "id": "goal_1", "fields": obj{"title": "x"}}, errs.Conflict, "already exists"},
		{"create missing parent", agentA, "cortex.create", obj{"type": "question", "fields": obj{"title": "x", "parent": "nope"}}, errs.Validation, "parent"},
		{"unknown args field", agentA, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 1}, "expected": 2}, errs.Validation, "expected"},
		{"unknown field", agentA, "cortex.update", upd(obj{"colour": "red"}), errs.Validation, "unknown field \"colour\""},
		{"invalid priority", agentA, "cortex.update", upd(obj{"priority": "urgent"}), errs.Validation, "priority: must be one of critical, high, medium, low"},
		{"invalid status", agentA, "cortex.update", upd(obj{"status": "done"}), errs.Validation, "status: must be one of"},
		{"progress above 100", agentA, "cortex.update", upd(obj{"progress": 101}), errs.Validation, "0 to 100"},
		{"progress below 0", agentA, "cortex.update", upd(obj{"progress": -1}), errs.Validation, "0 to 100"},
		{"progress fraction", agentA, "cortex.update", upd(obj{"progress": 50.5}), errs.Validation, "whole number"},
		{"progress string", agentA, "cortex.update", upd(obj{"progress": "50"}), errs.Validation, "progress"},
		{"progress null", agentA, "cortex.update", upd(obj{"progress": nil}), errs.Validation, "progress"},
		{"bad due_at", agentA, "cortex.update", upd(obj{"due_at": "tomorrow"}), errs.Validation, "RFC 3339"},
		{"tags not a list", agentA, "cortex.update", upd(obj{"tags": "a,b"}), errs.Validation, "tags"},
		{"empty tag", agentA, "cortex.update", upd(obj{"tags": []string{"ok", " "}}), errs.Validation, "tag"},
		{"blocking not bool", agentA, "cortex.update", upd(obj{"blocking": "yes"}), errs.Validation, "blocking"},
		{"bad custom key", agentA, "cortex.update", upd(obj{"custom": obj{"a.b": 1}}), errs.Validation, "custom"},
		{"write id", agentA, "cortex.update", upd(obj{"id": "goal_2"}), errs.Validation, "id: cannot be changed"},
		{"write type", agentA, "cortex.update", upd(obj{"type": "action"}), errs.Validation, "type: cannot be changed"},
		{"write owner", agentA, "cortex.update", upd(obj{"owner": "agent_b"}), errs.Validation, "owner: cannot be changed"},
		{"write version", agentA, "cortex.update", upd(obj{"global_version": 9}), errs.Validation, "cannot be changed"},
		{"nothing to update", agentA, "cortex.update", upd(obj{}), errs.Validation, "nothing to update"},
		{"expected_version ahead", agentA, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 1}, "expected_version": 4}, errs.Validation, "expected_version: 4 is ahead of the item's version 3"},
		{"expected_version zero", agentA, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 1}, "expected_version": 0}, errs.Validation, "expected_version"},
		{"negative max_retries", agentA, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": 1}, "max_retries": -1}, errs.Validation, "max_retries"},
		{"parent cycle", agentA, "cortex.update", upd(obj{"parent": "child"}), errs.Validation, "own ancestor"},
		{"parent itself", agentA, "cortex.update", upd(obj{"parent": "goal_1"}), errs.Validation, "own ancestor"},
		{"update missing item", agentA, "cortex.update", obj{"id": "nope", "updates": obj{"progress": 1}}, errs.NotFound, "no item \"nope\""},
		{"get missing item", agentA, "cortex.get", obj{"id": "nope"}, errs.NotFound, "nope"},
		{"delete missing item", agentA, "cortex.delete", obj{"id": "nope"}, errs.NotFound, "nope"},
		{"history missing item", agentA, "cortex.history", obj{"id": "nope"}, errs.NotFound, "nope"},
		{"revert to missing version", agentA, "cortex.revert", obj{"id": "goal_1", "version": 7}, errs.NotFound, "has no version 7: its versions are 1 to 3"},
		{"revert to version 0", agentA, "cortex.revert", obj{"id": "goal_1", "version": 0}, errs.NotFound, "no version 0"},
		{"revert to current", agentA, "cortex.revert", obj{"id": "goal_1", "version": 3}, errs.Validation, "current version"},
		{"version missing", agentA, "cortex.version", obj{"id": "goal_1", "version": 4}, errs.NotFound, "no version 4: its versions are 1 to 3"},
		{"share unknown permission", agentA, "cortex.share", obj{"id": "goal_1", "principal": "agent_c", "permissions": []string{"read", "admin"}}, errs.Validation, "unknown permission \"admin\""},
		{"share no permissions", agentA, "cortex.share", obj{"id": "goal_1", "principal": "agent_c", "permissions": []string{}}, errs.Validation, "permissions"},
		{"share with owner", agentA, "cortex.share", obj{"id": "goal_1", "principal": "agent_a", "permissions": []string{"read"}}, errs.Validation, "owns"},
		{"share without share permission", agentB, "cortex.share", obj{"id": "goal_1", "principal": "agent_c", "permissions": []string{"read"}}, errs.Permission, "agent_b may not share goal"},
		{"revoke without share permission", agentB, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_b"}, errs.Permission, "may not share"},
		{"revoke owner", agentA, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_a"}, errs.Validation, "cannot be revoked"},
		{"revoke nobody", agentA, "cortex.revoke", obj{"id": "goal_1", "principal": "agent_z"}, errs.NotFound, "agent_z has no access"},
		{"delete without permission", agentB, "cortex.delete", obj{"id": "goal_1"}, errs.Permission, "may not delete"},
		{"parent unreadable", call{As: "agent_c"}, "cortex.create", obj{"type": "question", "fields": obj{"title": "x", "parent": "goal_1"}}, errs.Permission, "may not read"},
		{"batch empty", agentA, "cortex.batch_update", obj{"updates": []obj{}}, errs.Validation, "at least one"},
		{"batch bad value", agentA, "cortex.batch_update", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 1}}, {"id": "goal_1", "updates": obj{"status": "x"}}}}, errs.Validation, "updates[1]"},
		{"batch stale version", agentA, "cortex.batch_update", obj{"updates": []obj{{"id": "child", "updates": obj{"progress": 1}}, {"id": "goal_1", "updates": obj{"progress": 1}, "expected_version": 1}}}, errs.Conflict, "rolled back"},
		{"commit stale version", agentA, "cortex.commit", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 1}, "expected_version": 1}}}, errs.Conflict, "rolled back"},
		{"commit negative retries", agentA, "cortex.commit", obj{"updates": []obj{{"id": "goal_1", "updates": obj{"progress": 1}}}, "max_retries": -1}, errs.Validation, "max_retries"},
		{"query bad status", agentA, "cortex.query", obj{"status": []string{"open"}}, errs.Validation, "unknown status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.dump()
			e.T = t
			err := e.Fail(c.who, c.action, c.args, c.kind, c.fragment)
			if err.Message == "" {
				t.Fatal("no message")
			}
			if d := sameDump(before, e.dump()); d != "" {
				t.Fatalf("%s wrote:\n%s", c.action, d)
			}
		})
	}
}
