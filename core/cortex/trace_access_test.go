package cortex_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
)

// TestTraceListShowsOnlyWhatTheViewerMayRead (issue 13, item 5): Bob's
// trace.list showed Alice's item ids and the field names she changed.
// Now an entry is shown to its writer and to whoever may read its subject;
// a denial to the refused agent and the item's owner.
func TestTraceListShowsOnlyWhatTheViewerMayRead(t *testing.T) {
	en := open(t)
	en.Do(as("alice", ""), "cortex.create", obj{"type": "goal", "id": "secret-launch", "fields": obj{"title": "t"}}, nil)
	en.Do(as("alice", ""), "cortex.update", obj{"id": "secret-launch", "updates": obj{"description": "budget is 40k"}}, nil)
	en.Fail(as("bob", ""), "cortex.get", obj{"id": "secret-launch"}, errs.Permission)
	list := func(who string) string {
		var out trace.ListResult
		en.Do(as(who, ""), "trace.list", obj{"limit": 100}, &out)
		b, _ := json.Marshal(out.Entries)
		return string(b)
	}
	if got := list("carol"); strings.Contains(got, "secret-launch") || strings.Contains(got, "description") {
		t.Errorf("carol's trace.list shows alice's item: %s", got)
	}
	bob := list("bob")
	if strings.Contains(bob, "description") || strings.Count(bob, "access_denied") != 2 { // kind and data.event
		t.Errorf("bob's trace.list, before a grant: %s", bob)
	}
	if got := list("alice"); !strings.Contains(got, "description") || !strings.Contains(got, `"principal":"bob"`) {
		t.Errorf("alice's trace.list lacks her update or bob's denial: %s", got)
	}
	en.Do(as("alice", ""), "cortex.share", obj{"id": "secret-launch", "principal": "bob", "permissions": []string{"read"}}, nil)
	if got := list("bob"); !strings.Contains(got, "description") {
		t.Errorf("bob may read the item now, and his trace.list does not show its update: %s", got)
	}
}
