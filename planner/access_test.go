//go:build !noplanning

package planner_test

// Who may do what with a plan (issue 13, item 5) and plans whose records
// cannot be read (item 4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

var (
	alice = enginetest.Who{As: "alice"}
	bob   = enginetest.Who{As: "bob"}
	carol = enginetest.Who{As: "carol"}
)

// secret is what Alice's private goal says; no answer to Bob may hold it.
const secret = "the PIN is 4242"

// alicesPlan is the scene: Alice keeps a private goal, and her
// plan "mine" has a subtask that reads it, run by her; Carol may read
// the plan. It returns plan.get's answer as Alice sees it.
func alicesPlan(r *rig) string {
	r.T.Helper()
	r.Do(alice, "cortex.create", map[string]any{"type": "goal", "id": "private", "fields": map[string]any{"title": secret}}, nil)
	r.Do(alice, "plan.create", map[string]any{"id": "mine", "goal": "Look at my goal", "subtasks": []any{
		st("read", "cortex.get", map[string]any{"id": "private"}),
		st("after", "noop", nil, "read"),
	}}, nil)
	r.Do(alice, "plan.execute", map[string]any{"plan_id": "mine"}, nil)
	r.Do(alice, "plan.share", map[string]any{"plan_id": "mine", "principal": "carol", "permissions": []string{"read"}}, nil)
	return string(r.Do(alice, "plan.get", `{"plan_id": "mine"}`, nil))
}

// storedACL is plan id's access record as the store holds it.
func storedACL(r *rig, id string) string {
	r.T.Helper()
	var b []byte
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		var err error
		b, err = tx.Get(storage.Key(storage.PrefixPlan, id, "acl"))
		return err
	})
	if err != nil {
		r.T.Fatal(err)
	}
	return string(b)
}

// denied lists the operations the trace records principal was refused on
// plan id.
func denied(r *rig, principal, id string) []string {
	r.T.Helper()
	entries, _, err := r.e.Env().Trace.List(trace.Filter{Kind: "access_denied"})
	if err != nil {
		r.T.Fatal(err)
	}
	var ops []string
	for _, e := range entries {
		var d access.Denial
		if err := json.Unmarshal(e.Data, &d); err != nil {
			r.T.Fatalf("access_denied data %s: %v", e.Data, err)
		}
		if d.PrincipalID == principal && d.ResourceType == "plan" && d.ResourceID == id && !slices.Contains(ops, d.AttemptedOperation) {
			ops = append(ops, d.AttemptedOperation)
		}
	}
	slices.Sort(ops)
	return ops
}

// planActions are every plan.* action that names an existing plan, with
// the operation it needs.
var planActions = []struct {
	name, args, op string
}{
	{"plan.get", `{"plan_id": "mine"}`, access.Read},
	{"plan.status", `{"plan_id": "mine", "include_details": true}`, access.Read},
	{"plan.validate", `{"plan_id": "mine"}`, access.Read},
	{"plan.execute", `{"plan_id": "mine"}`, access.Write},
	{"plan.resume", `{"plan_id": "mine"}`, access.Write},
	{"plan.cancel", `{"plan_id": "mine"}`, access.Write},
	{"plan.replan", `{"plan_id": "mine"}`, access.Write},
	{"plan.delete", `{"plan_id": "mine"}`, access.Delete},
	{"plan.share", `{"plan_id": "mine", "principal": "bob", "permissions": ["read", "write"]}`, access.Share},
	{"plan.revoke", `{"plan_id": "mine", "principal": "carol"}`, access.Share},
}

// Issue 13, item 5: Bob read the private goal Alice's subtask read
// (plan.status include_details), and could execute and cancel her plans.
// Every plan.* action by an agent without a grant is refused, changes
// nothing, and leaves an access_denied entry.
func TestStrangerCannotTouchAnotherAgentsPlan(t *testing.T) {
	r := newRig(t)
	before := alicesPlan(r)
	if !strings.Contains(before, "4242") {
		t.Fatalf("the scene is wrong: Alice's subtask did not read her goal: %s", before)
	}
	aclBefore := storedACL(r, "mine")
	for _, a := range planActions {
		e := r.Fail(bob, a.name, a.args, errs.Permission, "bob may not", `plan "mine"`, "plan.share")
		if strings.Contains(e.Message, "4242") {
			t.Errorf("%s: the refusal shows the secret: %s", a.name, e.Message)
		}
		if got := denied(r, "bob", "mine"); !slices.Contains(got, access.Read) {
			t.Errorf("%s: no access_denied entry for bob (has %v)", a.name, got)
		}
		if after := string(r.Do(alice, "plan.get", `{"plan_id": "mine"}`, nil)); after != before {
			t.Fatalf("%s by bob changed the plan:\nbefore %s\nafter  %s", a.name, before, after)
		}
		if acl := storedACL(r, "mine"); acl != aclBefore {
			t.Fatalf("%s by bob changed the access list: %s → %s", a.name, aclBefore, acl)
		}
	}
	// plan.list shows Bob nothing of Alice's, plan.create cannot replace it.
	if got := string(r.Do(bob, "plan.list", `{}`, nil)); got != `{"plans":[]}` {
		t.Errorf("plan.list as bob: %s", got)
	}
	r.Fail(bob, "plan.create", map[string]any{"id": "mine", "goal": "Mine now", "subtasks": []any{st("x", "noop", nil)}}, errs.Conflict)
	if after := string(r.Do(alice, "plan.get", `{"plan_id": "mine"}`, nil)); after != before {
		t.Errorf("the plan changed:\nbefore %s\nafter  %s", before, after)
	}
	// A plan that does not exist is NotFound for everyone.
	r.Fail(bob, "plan.get", `{"plan_id": "nobody's"}`, errs.NotFound)
}

// Issue 13, item 5: a read grant lets Bob read the plan — but not the
// results of subtasks Alice ran (they read her private goal) — and run,
// cancel, replan, delete or share nothing.
func TestReadGrantReadsThePlanButNotOthersResults(t *testing.T) {
	r := newRig(t)
	before := alicesPlan(r)
	r.Do(alice, "plan.share", `{"plan_id": "mine", "principal": "bob", "permissions": ["read"]}`, nil)
	for _, a := range planActions {
		if a.op == access.Read {
			out := string(r.Do(bob, a.name, a.args, nil))
			if strings.Contains(out, "4242") {
				t.Errorf("%s as a reader shows the secret Alice's subtask read: %s", a.name, out)
			}
			continue
		}
		r.Fail(bob, a.name, a.args, errs.Permission, "bob may not "+a.op)
	}
	if after := string(r.Do(alice, "plan.get", `{"plan_id": "mine"}`, nil)); after != before {
		t.Errorf("the plan changed:\nbefore %s\nafter  %s", before, after)
	}
	var status planner.StatusResult
	r.Do(bob, "plan.status", `{"plan_id": "mine", "include_details": true}`, &status)
	for _, s := range status.Subtasks {
		if s.Result != nil || !s.Redacted || s.Description == "" {
			t.Errorf("subtask %s as bob sees it: %+v; want its description, its result redacted", s.ID, s)
		}
	}
	got := decodePlan(t, r.Do(bob, "plan.get", `{"plan_id": "mine"}`, nil))
	if s := subtaskOf(t, got, "read"); !s.Redacted || s.Result != nil || s.Delta != nil || s.Status != planner.Completed {
		t.Errorf("plan.get as bob: %+v", s)
	}
	var list planner.ListResult
	r.Do(bob, "plan.list", `{}`, &list)
	if len(list.Plans) != 1 || list.Plans[0].ID != "mine" {
		t.Errorf("plan.list as a reader: %+v", list)
	}
	// The owner still sees everything.
	if s := subtaskOf(t, decodePlan(t, r.Do(alice, "plan.get", `{"plan_id": "mine"}`, nil)), "read"); s.Redacted || !strings.Contains(string(s.Result), "4242") {
		t.Errorf("plan.get as alice: %+v", s)
	}
}

// Issue 13, item 5: subtasks run as the principal executing the plan,
// never as its owner: Bob, allowed to run Alice's plan, cannot use it to
// read her goal. What his run produced is his alone to see.
func TestSubtasksRunAsWhoeverExecutesThePlan(t *testing.T) {
	r := newRig(t)
	r.Do(alice, "cortex.create", map[string]any{"type": "goal", "id": "private", "fields": map[string]any{"title": secret}}, nil)
	r.Do(alice, "plan.create", map[string]any{"id": "mine", "goal": "Look at my goal", "subtasks": []any{
		st("count", "state.set", map[string]any{"key": "n", "value": 1}),
		st("read", "cortex.get", map[string]any{"id": "private"}, "count"),
	}}, nil)
	r.Do(alice, "plan.share", `{"plan_id": "mine", "principal": "bob", "permissions": ["read", "write"]}`, nil)
	r.Do(alice, "plan.share", `{"plan_id": "mine", "principal": "carol", "permissions": ["read"]}`, nil)
	res := decodeResult(t, r.Do(bob, "plan.execute", `{"plan_id": "mine", "max_concurrent": 1}`, nil))
	read := subtaskOf(t, res.Plan, "read")
	if read.Status != planner.Failed || !strings.Contains(read.Error, "bob may not read") || read.RanBy != "bob" {
		t.Fatalf("the subtask did not run as bob: %+v", read)
	}
	if raw, _ := json.Marshal(res); strings.Contains(string(raw), "4242") {
		t.Fatalf("bob's run shows the secret: %s", raw)
	}
	// Bob's results: only Bob sees them; not the owner, not a reader.
	for who, visible := range map[enginetest.Who]bool{bob: true, alice: false, carol: false} {
		s := subtaskOf(t, decodePlan(t, r.Do(who, "plan.get", `{"plan_id": "mine"}`, nil)), "count")
		if shown := s.Result != nil && !s.Redacted; shown != visible {
			t.Errorf("%s sees bob's subtask result: %v, want %v (%+v)", who.As, shown, visible, s)
		}
	}
	// Bob cannot take the plan over by sharing it with himself.
	r.Fail(bob, "plan.share", `{"plan_id": "mine", "principal": "bob", "permissions": ["read", "write", "delete", "share"]}`, errs.Permission)
}

// Issue 13, item 4: plan.delete, by the owner or a principal holding
// delete; a running plan is refused until cancelled.
func TestPlanDeleteRemovesEveryRecordButNotARunningPlan(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "noop", nil), st("B", "test.gate", map[string]any{"name": "g"}, "A"))
	done := r.executeAsync("p", nil)
	waitFor(t, r.probes.Started("g"), "the gate")
	e := r.fail(errs.Conflict, "plan.delete", `{"plan_id": "p"}`)
	if !strings.Contains(e.Message, "plan.cancel") {
		t.Errorf("the refusal does not say how: %s", e.Message)
	}
	r.probes.Release("g")
	await(t, done)

	var res planner.DeleteResult
	r.Do(enginetest.Who{}, "plan.delete", `{"plan_id": "p"}`, &res)
	if res != (planner.DeleteResult{PlanID: "p", Goal: "Goal of p", Subtasks: 2, Records: 2}) {
		t.Errorf("plan.delete: %+v", res)
	}
	r.fail(errs.NotFound, "plan.get", `{"plan_id": "p"}`)
	r.fail(errs.NotFound, "plan.delete", `{"plan_id": "p"}`)
	if got := string(r.do("plan.list", `{}`)); got != `{"plans":[]}` {
		t.Errorf("plan.list after the delete: %s", got)
	}
	if n := planRecords(r); n != 0 {
		t.Errorf("%d records are left under plan/", n)
	}
	// Its owner may take the id again (another agent may not: see
	// TestDeletedPlansIDIsNotAnotherAgentsToReuse); someone granted delete
	// may delete.
	r.Do(enginetest.Who{}, "plan.create", map[string]any{"id": "p", "goal": "Again", "subtasks": []any{st("A", "noop", nil)}}, nil)
	r.Fail(bob, "plan.delete", `{"plan_id": "p"}`, errs.Permission)
	r.Do(enginetest.Who{}, "plan.share", `{"plan_id": "p", "principal": "bob", "permissions": ["read", "delete"]}`, nil)
	r.Do(bob, "plan.delete", `{"plan_id": "p"}`, &res)
	if res.Records != 2 || planRecords(r) != 0 {
		t.Errorf("plan.delete by a grantee: %+v, %d records left", res, planRecords(r))
	}
}

// After a plan is deleted, the trace's entries about it stay its owner's:
// another agent may not reuse its id, and so never reads those entries as
// its own plan's (issue 13, item 5). The owner may reuse it.
func TestDeletedPlansIDIsNotAnotherAgentsToReuse(t *testing.T) {
	r := newRig(t)
	r.Do(alice, "plan.create", map[string]any{"id": "p", "goal": "Rotate the PIN 4242", "subtasks": []any{st("A", "noop", nil)}}, nil)
	r.Do(alice, "plan.delete", `{"plan_id": "p"}`, nil)
	e := r.Fail(bob, "plan.create", map[string]any{"id": "p", "goal": "Mine now", "subtasks": []any{st("A", "noop", nil)}}, errs.Conflict)
	if e.Details["field"] != "id" {
		t.Errorf("the refusal does not name the field: %+v", e)
	}
	if got := string(r.Do(bob, "trace.list", `{}`, nil)); strings.Contains(got, "4242") {
		t.Errorf("bob's trace shows the deleted plan's goal: %s", got)
	}
	if got := string(r.Do(alice, "trace.list", `{}`, nil)); !strings.Contains(got, "4242") {
		t.Errorf("alice's trace lost her deleted plan's entries: %s", got)
	}
	r.Do(alice, "plan.create", map[string]any{"id": "p", "goal": "Again", "subtasks": []any{st("A", "noop", nil)}}, nil)
}

// planRecords counts the keys under plan/.
func planRecords(r *rig) int {
	r.T.Helper()
	var n int
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count([]byte(storage.PrefixPlan))
		return err
	})
	if err != nil {
		r.T.Fatal(err)
	}
	return n
}

// Issue 13, item 4: one unreadable plan record — damaged bytes, or a
// state nested deeper than JSON decoding allows — made plan.get,
// plan.list and engine.info fail for good without naming the plan. Now
// plan.list lists the others and names it, engine.info works, plan.get
// names it and the way out, and plan.delete removes it.
func TestUnreadablePlanIsSkippedByListAndEngineInfo(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for name, bytes := range map[string]func(good []byte) []byte{
		"damaged": func(good []byte) []byte { b := slices.Clone(good); b[len(b)/2] ^= 0x10; return b },
		"too deep": func([]byte) []byte {
			b, err := planner.EncodeCheckpoint(&planner.Plan{ID: "bad", Goal: "g", State: json.RawMessage(deep),
				Subtasks: []*planner.Subtask{{ID: "A", Status: planner.Pending}}})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.create("bad", st("A", "noop", nil))
			r.create("good", st("A", "noop", nil))
			err := r.e.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
				good, err := tx.Get(storage.Key(storage.PrefixPlan, "bad"))
				if err != nil {
					return err
				}
				return tx.Set(storage.Key(storage.PrefixPlan, "bad"), bytes(good))
			})
			if err != nil {
				t.Fatal(err)
			}
			var list planner.ListResult
			r.Do(enginetest.Who{}, "plan.list", `{}`, &list)
			if len(list.Plans) != 1 || list.Plans[0].ID != "good" || len(list.Unreadable) != 1 || list.Unreadable[0].PlanID != "bad" ||
				!strings.Contains(list.Unreadable[0].Error, "plan.delete") {
				t.Errorf("plan.list: %+v", list)
			}
			// Nobody else is told about it.
			if got := string(r.Do(bob, "plan.list", `{}`, nil)); got != `{"plans":[]}` {
				t.Errorf("plan.list as bob: %s", got)
			}
			info, err := r.e.Info(context.Background())
			if err != nil {
				t.Fatalf("engine.info: %v", err)
			}
			if c := info.Counts["planner"]; c["plans"] != 2 || c["unreadable"] != 1 {
				t.Errorf("engine.info planner counts: %v", c)
			}
			r.Do(enginetest.Who{}, "engine.info", `{}`, nil)
			for _, action := range []string{"plan.get", "plan.status", "plan.execute", "plan.resume", "plan.replan"} {
				r.Fail(enginetest.Who{}, action, `{"plan_id": "bad"}`, errs.Checkpoint, `plan "bad"`, "plan.delete removes it")
			}
			r.Fail(bob, "plan.delete", `{"plan_id": "bad"}`, errs.Permission)
			var res planner.DeleteResult
			r.Do(enginetest.Who{}, "plan.delete", `{"plan_id": "bad"}`, &res)
			if res != (planner.DeleteResult{PlanID: "bad", Records: 2, Unreadable: true}) {
				t.Errorf("plan.delete: %+v", res)
			}
			if got := string(r.Do(enginetest.Who{}, "plan.list", `{}`, nil)); strings.Contains(got, "unreadable") || !strings.Contains(got, `"good"`) {
				t.Errorf("plan.list after the delete: %s", got)
			}
		})
	}
}

// Plans stored before plans had owners (no access record) belong to the
// default agent, and single-agent results are as they were: no owner, no
// ran_by, no redaction.
func TestPlansWithoutAnOwnerBelongToTheDefaultAgent(t *testing.T) {
	r := newRig(t)
	r.create("old", st("A", "state.set", map[string]any{"key": "k", "value": "v"}))
	err := r.e.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Delete(storage.Key(storage.PrefixPlan, "old", "acl"))
	})
	if err != nil {
		t.Fatal(err)
	}
	res := r.execute("old", nil)
	raw, _ := json.Marshal(res)
	if strings.Contains(string(raw), "ran_by") || strings.Contains(string(raw), "redacted") || res.State["k"] != "v" {
		t.Errorf("the default agent's run: %s", raw)
	}
	r.Fail(bob, "plan.get", `{"plan_id": "old"}`, errs.Permission, "the owner (local)")
	var acl access.ACL
	r.Do(enginetest.Who{}, "plan.share", `{"plan_id": "old", "principal": "bob", "permissions": ["read"]}`, &acl)
	if acl.Owner != access.LegacyOwner || len(acl.Grants) != 1 {
		t.Errorf("plan.share: %+v", acl)
	}
	r.Do(bob, "plan.get", `{"plan_id": "old"}`, nil)
	r.Do(enginetest.Who{}, "plan.revoke", `{"plan_id": "old", "principal": "bob"}`, &acl)
	r.Fail(bob, "plan.get", `{"plan_id": "old"}`, errs.Permission)
	// The trace's read check for plans answers the same.
	err = r.e.Env().Store.View(func(tx *storage.Tx) error {
		for who, want := range map[string]bool{"local": true, "bob": false} {
			if ok, err := r.e.Env().Access.CanRead(tx, "plan", who, "old"); err != nil || ok != want {
				t.Errorf("CanRead(plan, %s, old) = %v, %v", who, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPlanList1000 measures plan.list over 1,000 plans of 5 subtasks
// owned by two agents, as one of them: the access check adds a record read
// per plan to the plan's own decoding.
func BenchmarkPlanList1000(b *testing.B) {
	r := newRig(b)
	for i := range 1000 {
		who := alice
		if i%2 == 1 {
			who = bob
		}
		r.Do(who, "plan.create", map[string]any{"id": fmt.Sprintf("p%04d", i), "goal": "Bench", "subtasks": []any{
			st("a", "noop", nil), st("b", "noop", nil, "a"), st("c", "noop", nil, "a"), st("d", "noop", nil, "b", "c"), st("e", "noop", nil, "d"),
		}}, nil)
	}
	b.ResetTimer()
	for b.Loop() {
		var list planner.ListResult
		r.Do(alice, "plan.list", `{}`, &list)
		if len(list.Plans) != 500 {
			b.Fatalf("%d plans", len(list.Plans))
		}
	}
}

// A review found the reverse of the above: Bob writes a plan and lets
// Alice run it, so that its subtasks act with her authority and its results
// come back to him. A plan someone else wrote runs, for its executor, only
// read-only and task.* actions, and what they read is the executor's alone.
func TestAPlanCannotBorrowItsExecutorsAuthority(t *testing.T) {
	r := newRig(t)
	r.Do(alice, "cortex.create", map[string]any{"type": "goal", "id": "private", "fields": map[string]any{"title": secret}}, nil)
	r.Do(bob, "plan.create", map[string]any{"id": "bait", "goal": "Help me", "subtasks": []any{
		st("peek", "cortex.get", map[string]any{"id": "private"}),
		st("grab", "cortex.share", map[string]any{"id": "private", "principal": "bob", "permissions": []string{"read", "write", "delete", "share"}}),
	}}, nil)
	r.Do(bob, "plan.share", `{"plan_id": "bait", "principal": "alice", "permissions": ["read", "write"]}`, nil)
	res := decodeResult(t, r.Do(alice, "plan.execute", `{"plan_id": "bait", "max_concurrent": 1, "on_subtask_failure": "skip"}`, nil))
	if grab := subtaskOf(t, res.Plan, "grab"); grab.Status != planner.Skipped || !strings.Contains(grab.Error, "only read-only") {
		t.Errorf("bob's plan wrote with alice's authority: %+v", grab)
	}
	r.Fail(bob, "cortex.get", `{"id": "private"}`, errs.Permission)
	peek := subtaskOf(t, decodePlan(t, r.Do(bob, "plan.get", `{"plan_id": "bait"}`, nil)), "peek")
	if !peek.Redacted || strings.Contains(string(peek.Result), "4242") {
		t.Errorf("bob, the plan's owner, sees what alice's run read: %+v", peek)
	}
}

// A review found the run state carrying one agent's results into another's
// run: Alice runs Bob's plan, a subtask reads her goal, the run stops; Bob
// resumes, and a later subtask reads the state. What another principal's
// run produced is left out of the state a run builds on.
func TestResumingCannotHarvestAnotherAgentsResults(t *testing.T) {
	r := newRig(t)
	r.Do(alice, "cortex.create", map[string]any{"type": "goal", "id": "private", "fields": map[string]any{"title": secret}}, nil)
	r.Do(bob, "plan.create", map[string]any{"id": "bait", "goal": "Help me", "subtasks": []any{
		st("peek", "cortex.get", map[string]any{"id": "private"}),
		st("stop", "task.fail", nil, "peek"),
		st("harvest", "state.get", nil, "peek"),
		st("echo", "task.noop", nil, "harvest", "stop"),
	}}, nil)
	r.Do(bob, "plan.share", `{"plan_id": "bait", "principal": "alice", "permissions": ["read", "write"]}`, nil)
	r.Do(alice, "plan.execute", `{"plan_id": "bait", "max_concurrent": 1}`, nil)
	raw := r.Do(bob, "plan.resume", `{"plan_id": "bait"}`, nil)
	if strings.Contains(string(raw), "4242") {
		t.Fatalf("bob's resume harvested what alice's run read: %s", raw)
	}
	if harvest := subtaskOf(t, decodePlan(t, r.Do(bob, "plan.get", `{"plan_id": "bait"}`, nil)), "harvest"); strings.Contains(string(harvest.Result), "4242") {
		t.Errorf("harvest's result shows alice's goal: %s", harvest.Result)
	}
}

// A review found checkpoint files holding other agents' results, and a
// path one agent gave reused when another resumed the plan.
func TestCheckpointFilesHoldOnlyTheWritersResults(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	r.Do(alice, "cortex.create", map[string]any{"type": "goal", "id": "private", "fields": map[string]any{"title": secret}}, nil)
	r.Do(alice, "plan.create", map[string]any{"id": "mine", "goal": "Mine", "subtasks": []any{
		st("peek", "cortex.get", map[string]any{"id": "private"}),
		st("stop", "task.fail", nil, "peek"),
		st("after", "task.noop", nil, "stop"),
	}}, nil)
	r.Do(alice, "plan.share", `{"plan_id": "mine", "principal": "bob", "permissions": ["read", "write"]}`, nil)
	r.Do(alice, "plan.execute", `{"plan_id": "mine", "max_concurrent": 1}`, nil)
	bobs := filepath.Join(dir, "bob.json")
	r.Do(bob, "plan.execute", map[string]any{"plan_id": "mine", "max_concurrent": 1, "checkpoint": bobs}, nil)
	if b, err := os.ReadFile(bobs); err != nil || strings.Contains(string(b), "4242") {
		t.Fatalf("bob's checkpoint file (%v) holds alice's result: %s", err, b)
	}
	if err := os.Remove(bobs); err != nil {
		t.Fatal(err)
	}
	r.Do(alice, "plan.resume", `{"plan_id": "mine"}`, nil)
	if _, err := os.Stat(bobs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("alice's resume wrote to the path bob gave: %v", err)
	}
}
