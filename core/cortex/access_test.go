package cortex_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
)

// kindOf is the error kind of an action's outcome ("" for success).
func (en *engine) kindOf(principal, action string, args any) errs.Kind {
	en.T.Helper()
	_, err := en.Try(as(principal, ""), action, args)
	return errs.KindOf(err)
}

// TestSharingNeverRaisesAccess: a non-owner with share may pass on
// only what it holds, may not change its own entry, and may not revoke an
// entry holding rights it lacks.
func TestSharingNeverRaisesAccess(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "secret plan"}}, nil)
	en.Do(as("alice", ""), "cortex.share", obj{"id": "g", "principal": "bob", "permissions": []string{"read", "share"}}, nil)
	en.Do(as("alice", ""), "cortex.share", obj{"id": "g", "principal": "carol", "permissions": []string{"read", "write"}}, nil)

	if k := en.kindOf("bob", "cortex.share", obj{"id": "g", "principal": "bob", "permissions": []string{"read", "write", "delete", "share"}}); k != errs.Permission {
		t.Errorf("bob raising his own access: %q, want PermissionError", k)
	}
	if k := en.kindOf("bob", "cortex.share", obj{"id": "g", "principal": "dave", "permissions": []string{"read", "write"}}); k != errs.Permission {
		t.Errorf("bob granting write he lacks: %q, want PermissionError", k)
	}
	if k := en.kindOf("bob", "cortex.revoke", obj{"id": "g", "principal": "carol"}); k != errs.Permission {
		t.Errorf("bob revoking carol, who holds write: %q, want PermissionError", k)
	}
	// What he holds, he may pass on.
	en.Do(as("bob", ""), "cortex.share", obj{"id": "g", "principal": "dave", "permissions": []string{"read"}}, nil)
	en.Do(as("bob", ""), "cortex.revoke", obj{"id": "g", "principal": "dave"}, nil)
	if k := en.kindOf("bob", "cortex.delete", obj{"id": "g"}); k != errs.Permission {
		t.Errorf("bob deleting: %q, want PermissionError", k)
	}
}

// TestRevertAcrossDeletionNeedsDelete: reverting to a version before
// or after a deletion deletes or restores the item, which takes delete.
func TestRevertAcrossDeletionNeedsDelete(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "plan"}}, nil)
	en.Do(as("alice", ""), "cortex.share", obj{"id": "g", "principal": "bob", "permissions": []string{"read", "write"}}, nil)
	en.Do(as("alice", ""), "cortex.delete", obj{"id": "g"}, nil) // v3
	if k := en.kindOf("bob", "cortex.revert", obj{"id": "g", "version": 2}); k != errs.Permission {
		t.Fatalf("bob undeleting by revert: %q, want PermissionError", k)
	}
	var res cortex.ItemResult
	en.Do(as("alice", ""), "cortex.revert", obj{"id": "g", "version": 2}, &res)
	if res.Item.DeletedAt != nil || res.Item.GlobalVersion != 4 {
		t.Fatalf("alice's revert: deleted_at %v, v%d", res.Item.DeletedAt, res.Item.GlobalVersion)
	}
}

// TestRevertToTheSameStateMakesNoVersion: nothing changes, nothing
// is written.
func TestRevertToTheSameStateMakesNoVersion(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "plan", "progress": 10}}, nil)
	en.Do(as("alice", ""), "cortex.update", obj{"id": "g", "updates": obj{"progress": 20}}, nil)
	en.Do(as("alice", ""), "cortex.update", obj{"id": "g", "updates": obj{"progress": 10}}, nil) // v3 = v1's fields
	var res cortex.ItemResult
	en.Do(as("alice", ""), "cortex.revert", obj{"id": "g", "version": 1}, &res)
	if res.Item.GlobalVersion != 3 {
		t.Errorf("reverting to identical fields made v%d, want it to stay v3", res.Item.GlobalVersion)
	}
}

// TestEveryOperationNeedsRead: a principal allowed to write but not
// to read gets nothing back, because every operation returns the item.
func TestEveryOperationNeedsRead(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "plan"}}, nil)
	en.Do(as("alice", ""), "cortex.share", obj{"id": "g", "principal": "bob", "permissions": []string{"write"}}, nil)
	if k := en.kindOf("bob", "cortex.update", obj{"id": "g", "updates": obj{"progress": 5}}); k != errs.Permission {
		t.Errorf("write-only update: %q, want PermissionError", k)
	}
}

// TestDeletedGrandparentDoesNotBlockAParent: only the direct parent
// must be live; the error names the right item when it is not.
func TestDeletedGrandparentDoesNotBlockAParent(t *testing.T) {
	en := open(t)
	en.Do(as("a", ""), "cortex.create", obj{"type": "goal", "id": "g0", "fields": obj{"title": "root"}}, nil)
	en.Do(as("a", ""), "cortex.create", obj{"type": "goal", "id": "g1", "fields": obj{"title": "mid", "parent": "g0"}}, nil)
	en.Do(as("a", ""), "cortex.delete", obj{"id": "g0"}, nil)
	en.Do(as("a", ""), "cortex.create", obj{"type": "question", "id": "q", "fields": obj{"title": "leaf", "parent": "g1"}}, nil)
	_, err := en.Try(as("a", ""), "cortex.create", obj{"type": "question", "id": "q2", "fields": obj{"title": "x", "parent": "g0"}})
	if errs.KindOf(err) != errs.Validation || !strings.Contains(err.Error(), `"g0"`) {
		t.Errorf("parent deleted: %v, want a ValidationError naming g0", err)
	}
}

func TestNullTitleIsRejected(t *testing.T) {
	en := open(t)
	if k := en.kindOf("a", "cortex.create", obj{"type": "goal", "fields": obj{"title": nil}}); k != errs.Validation {
		t.Errorf("null title on create: %q", k)
	}
	en.Do(as("a", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "t"}}, nil)
	if k := en.kindOf("a", "cortex.update", obj{"id": "g", "updates": obj{"title": nil}}); k != errs.Validation {
		t.Errorf("null title on update: %q", k)
	}
}

func TestEmptyUpdateInABatchIsRejected(t *testing.T) {
	en := open(t)
	en.Do(as("a", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "t"}}, nil)
	_, err := en.Try(as("a", ""), "cortex.batch_update", obj{"updates": []obj{{"id": "g", "updates": obj{}}}})
	if errs.KindOf(err) != errs.Validation {
		t.Errorf("empty updates in a batch: %v", err)
	}
}

// TestBatchConflictCarriesCurrent: a rolled-back batch's
// ConflictError carries the current item, as every ConflictError does.
func TestBatchConflictCarriesCurrent(t *testing.T) {
	en := open(t)
	en.Do(as("a", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "t"}}, nil)
	en.Do(as("a", ""), "cortex.update", obj{"id": "g", "updates": obj{"progress": 5}}, nil)
	_, err := en.Try(as("a", ""), "cortex.batch_update", obj{"updates": []obj{{"id": "g", "updates": obj{"progress": 6}, "expected_version": 1}}})
	e := errs.As(err)
	if e.Kind != errs.Conflict || e.Details["current"] == nil || e.Details["errors"] == nil {
		t.Errorf("batch conflict: %s %v", e.Kind, e.Details)
	}
}

// TestTurnEndCommitFailureIsTracedAndAnnounced: a turn.end whose
// cortex updates fail rolls back, and still leaves "FC commit failed" in
// the trace and a cortex.commit event, as cortex.commit does.
func TestTurnEndCommitFailureIsTracedAndAnnounced(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "g", "fields": obj{"title": "plan"}}, nil)
	events := en.e.Env().Events.Tap(100)
	defer events.Close()
	en.Do(as("bob", "t1"), "turn.start", obj{}, nil)
	_, err := en.Try(as("bob", "t1"), "turn.end", obj{"updates": obj{"cortex": []obj{{"id": "g", "updates": obj{"progress": 5}}}}})
	if errs.KindOf(err) != errs.Permission {
		t.Fatalf("turn.end: %v, want PermissionError", err)
	}
	if msgs := en.trace("t1"); !slices.Contains(msgs, "FC commit failed: PermissionError") {
		t.Errorf("trace of t1: %q", msgs)
	}
	found := false
	for _, ev := range events.Drain() {
		found = found || ev.Name == cortex.EventCommit.Name()
	}
	if !found {
		t.Error("no cortex.commit event after the failed commit")
	}
	// A strict payload: a misspelt field is an error, not a silent no-op.
	en.Do(as("alice", "t2"), "turn.start", obj{}, nil)
	_, err = en.Try(as("alice", "t2"), "turn.end", obj{"updates": obj{"cortex": []obj{{"id": "g", "update": obj{"progress": 9}}}}})
	if errs.KindOf(err) != errs.Validation || !strings.Contains(err.Error(), `"update"`) {
		t.Errorf("misspelt field: %v, want a ValidationError naming it", err)
	}
}
