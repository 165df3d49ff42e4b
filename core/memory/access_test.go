package memory_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/storage"
)

var (
	alice = enginetest.Who{As: "alice"}
	bob   = enginetest.Who{As: "bob"}
)

// aliceStore is a rig where alice owns a store "alice_notes" holding her
// PIN (issue 13, item 5's finding).
func aliceStore(t *testing.T) *rig {
	r := newRig(t)
	r.Do(alice, "memory.configure", map[string]any{"store": "alice_notes", "type": "working"}, nil)
	r.Do(alice, "memory.memorize", map[string]any{"store": "alice_notes", "item": it("pin", "Alice's PIN is 4242", "agent_id", "alice", "tags", []string{"secret"})}, nil)
	r.Do(alice, "memory.memorize", map[string]any{"store": "alice_notes", "item": it("bank", "Alice banks at the Porto branch", "agent_id", "alice")}, nil)
	return r
}

// denials are the access_denied trace entries of principal.
func (r *rig) denials(principal string) []trace.Entry {
	r.T.Helper()
	all, _, err := r.e.Env().Trace.List(trace.Filter{Kind: "access_denied"})
	if err != nil {
		r.T.Fatal(err)
	}
	return slices.DeleteFunc(all, func(e trace.Entry) bool { return e.Principal != principal })
}

// attempts counts the refusals entries stand for: repeats of one denial
// are counted on one entry.
func attempts(t *testing.T, entries []trace.Entry) int {
	t.Helper()
	n := 0
	for _, e := range entries {
		var d struct{ Count int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		n += max(d.Count, 1)
	}
	return n
}

// storeActions is one call of every memory.* action on store, each
// needing the permission named.
func storeActions(store string) []struct {
	name, perm string
	args       map[string]any
} {
	return []struct {
		name, perm string
		args       map[string]any
	}{
		{"memory.get", access.Read, map[string]any{"store": store, "id": "pin"}},
		{"memory.remember", access.Read, map[string]any{"store": store, "prompt": "PIN"}},
		{"memory.remember", access.Read, map[string]any{"store": store, "filters": map[string]any{"agent_id": "alice"}}},
		{"memory.summarize", access.Read, map[string]any{"store": store, "token_limit": 100}},
		{"memory.capacity", access.Read, map[string]any{"store": store}},
		{"memory.forget", access.Read, map[string]any{"store": store, "instruction": "from agent alice", "mode": "hard", "dry_run": true}},
		{"memory.memorize", access.Write, map[string]any{"store": store, "item": it("evil", "Bob was here", "agent_id", "bob")}},
		{"memory.configure", access.Write, map[string]any{"store": store, "max_items": 1}},
		{"memory.forget", access.Write, map[string]any{"store": store, "instruction": "from agent alice"}},
		{"memory.forget", access.Delete, map[string]any{"store": store, "instruction": "from agent alice", "mode": "hard"}},
		{"memory.share", access.Share, map[string]any{"store": store, "principal": "bob", "permissions": []string{"read", "write", "delete", "share"}}},
		{"memory.share", access.Share, map[string]any{"store": store, "principal": "carol", "permissions": []string{"read"}}},
	}
}

// TestStrangerCannotUseAnotherAgentsStore is the bypass matrix of issue 13,
// item 5: every memory.* action by an agent without a grant on alice's
// store is refused with a PermissionError naming who may grant access,
// changes nothing stored, and leaves an access_denied trace entry.
func TestStrangerCannotUseAnotherAgentsStore(t *testing.T) {
	r := aliceStore(t)
	for _, a := range storeActions("alice_notes") {
		before := r.dump()
		live, _, deleted := r.recount("alice_notes")
		denied := attempts(t, r.denials("bob"))
		r.Fail(bob, a.name, a.args, errs.Permission, "bob may not", `memory store "alice_notes"`, "alice", "memory.share")
		sameDump(t, a.name+" by bob", before, r.dump())
		if l, _, d := r.recount("alice_notes"); l != live || d != deleted {
			t.Errorf("%s by bob: %d live, %d deleted; before %d, %d", a.name, l, d, live, deleted)
		}
		if got := r.denials("bob"); attempts(t, got) != denied+1 || !strings.Contains(got[len(got)-1].Message, "alice_notes") {
			t.Errorf("%s by bob: access_denied entries %v", a.name, got)
		}
	}
	// memory.revoke of a grant bob does not hold: refused too.
	r.Fail(bob, "memory.revoke", map[string]any{"store": "alice_notes", "principal": "carol"}, errs.Permission, "bob may not")

	// memory.stores does not list it; bob's turn.start gets nothing from it.
	var stores storeList
	r.Do(bob, "memory.stores", nil, &stores)
	if slices.Contains(stores.names(), "alice_notes") {
		t.Errorf("bob lists %v", stores.names())
	}
	raw := r.Do(enginetest.Who{As: "bob", Turn: "b1"}, "turn.start", map[string]any{"input": "what is the PIN"}, nil)
	if strings.Contains(string(raw), "4242") {
		t.Errorf("bob's turn.start holds alice's PIN: %s", raw)
	}
	// Alice still has all of it.
	if got := r.Do(alice, "memory.remember", map[string]any{"store": "alice_notes", "prompt": "PIN"}, nil); !strings.Contains(string(got), "4242") {
		t.Errorf("alice's remember: %s", got)
	}
	raw = r.Do(enginetest.Who{As: "alice", Turn: "a1"}, "turn.start", map[string]any{"input": "what is the PIN"}, nil)
	if !strings.Contains(string(raw), "4242") {
		t.Errorf("alice's turn.start lacks her PIN: %s", raw)
	}
	r.Do(alice, "memory.stores", nil, &stores)
	if !slices.Contains(stores.names(), "alice_notes") {
		t.Errorf("alice lists %v", stores.names())
	}
}

type storeList struct {
	Stores []struct {
		Store string `json:"store"`
	} `json:"stores"`
}

func (s storeList) names() []string {
	var out []string
	for _, c := range s.Stores {
		out = append(out, c.Store)
	}
	return out
}

// TestReadGrantAllowsReadsOnly: with read shared, bob's reads work and his
// writes are refused, changing nothing; once revoked, reads are refused
// again (issue 13, item 5).
func TestReadGrantAllowsReadsOnly(t *testing.T) {
	r := aliceStore(t)
	var acl access.ACL
	r.Do(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "bob", "permissions": []string{"read"}}, &acl)
	if acl.Owner != "alice" || len(acl.Grants) != 1 || acl.Grants[0].PrincipalID != "bob" || !slices.Equal(acl.Grants[0].Permissions, []string{"read"}) {
		t.Fatalf("acl %+v", acl)
	}
	for _, a := range storeActions("alice_notes") {
		if a.perm == access.Read {
			r.Do(bob, a.name, a.args, nil)
			continue
		}
		before := r.dump()
		r.Fail(bob, a.name, a.args, errs.Permission, "bob may not")
		sameDump(t, a.name+" by bob with read", before, r.dump())
	}
	raw := r.Do(enginetest.Who{As: "bob", Turn: "b1"}, "turn.start", map[string]any{"input": "what is the PIN"}, nil)
	if !strings.Contains(string(raw), "4242") {
		t.Errorf("bob's turn.start with read lacks the shared store: %s", raw)
	}
	acl = access.ACL{}
	r.Do(alice, "memory.revoke", map[string]any{"store": "alice_notes", "principal": "bob"}, &acl)
	if acl.Owner != "alice" || len(acl.Grants) != 0 {
		t.Errorf("acl after revoke %+v", acl)
	}
	r.Fail(bob, "memory.get", map[string]any{"store": "alice_notes", "id": "pin"}, errs.Permission, "bob may not read")
}

// TestWriteAndDeleteGrants: write allows memorize and soft forget, not an
// erase; delete allows the erase (issue 13, item 5).
func TestWriteAndDeleteGrants(t *testing.T) {
	r := aliceStore(t)
	r.Do(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "bob", "permissions": []string{"read", "write"}}, nil)
	r.Do(bob, "memory.memorize", map[string]any{"store": "alice_notes", "item": it("b1", "Bob's note", "agent_id", "bob")}, nil)
	r.Do(bob, "memory.forget", map[string]any{"store": "alice_notes", "instruction": "item b1"}, nil)
	r.Fail(bob, "memory.forget", map[string]any{"store": "alice_notes", "instruction": "item pin", "mode": "hard"}, errs.Permission, "bob may not delete")
	r.Do(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "bob", "permissions": []string{"read", "delete"}}, nil)
	r.Do(bob, "memory.forget", map[string]any{"store": "alice_notes", "instruction": "item b1", "mode": "hard"}, nil)
	if err := r.m.Check("alice_notes"); err != nil {
		t.Error(err)
	}
}

// TestLegacyStoresBelongToTheDefaultAgent: the built-in stores (and any
// stored before stores had owners) belong to the engine's default agent,
// who uses them as before; another agent may not, and its agent_id on an
// item grants nothing (issue 13, item 5: Bob erased Alice's memories in a
// shared store with "from agent alice", mode hard).
func TestLegacyStoresBelongToTheDefaultAgent(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("pin", "Alice's PIN is 4242", "agent_id", "alice"))
	r.Fail(bob, "memory.forget", map[string]any{"store": "working", "instruction": "from agent alice", "mode": "hard"}, errs.Permission,
		"bob may not delete", `memory store "working"`, "the owner ("+core.DefaultAgent+")")
	r.Fail(alice, "memory.remember", map[string]any{"store": "working", "prompt": "PIN"}, errs.Permission, "alice may not read")
	if got := r.remember("working", "PIN", "filters", map[string]any{"agent_id": "alice"}); len(got) != 1 {
		t.Errorf("the default agent's filtered remember: %v", got)
	}
	var acl access.ACL
	r.Do(agent, "memory.share", map[string]any{"store": "working", "principal": "alice", "permissions": []string{"read"}}, &acl)
	if acl.Owner != core.DefaultAgent {
		t.Errorf("acl %+v", acl)
	}
	r.Do(alice, "memory.remember", map[string]any{"store": "working", "prompt": "PIN"}, nil)
}

// TestShareValidation: bad share and revoke arguments are errors naming
// the field, and change nothing.
func TestShareValidation(t *testing.T) {
	r := aliceStore(t)
	before := r.dump()
	r.Fail(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "bob", "permissions": []string{"fly"}}, errs.Validation, "permissions", "fly")
	r.Fail(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "alice", "permissions": []string{"read"}}, errs.Validation, "principal")
	r.Fail(alice, "memory.share", map[string]any{"store": "nowhere", "principal": "bob", "permissions": []string{"read"}}, errs.NotFound, "nowhere")
	r.Fail(alice, "memory.revoke", map[string]any{"store": "alice_notes", "principal": "bob"}, errs.NotFound, "bob")
	sameDump(t, "failed shares", before, r.dump())
	var d map[string]any
	if err := json.Unmarshal(r.Do(alice, "memory.share", map[string]any{"store": "alice_notes", "principal": "bob", "permissions": []string{"read", "read"}}, nil), &d); err != nil {
		t.Fatal(err)
	}
}

// TestTurnEndCannotWriteAnotherAgentsStore: a turn's updates.memory into a
// store its principal may not write fail the turn.end and change nothing
// (issue 13, item 5).
func TestTurnEndCannotWriteAnotherAgentsStore(t *testing.T) {
	r := aliceStore(t)
	bobTurn := enginetest.Who{As: "bob", Turn: "b1"}
	r.Do(bobTurn, "turn.start", map[string]any{"input": "hello"}, nil)
	before := r.dump()
	res, err := r.Try(bobTurn, "turn.end", map[string]any{"updates": map[string]any{"memory": []any{
		map[string]any{"store": "alice_notes", "item": it("evil", "Bob was here", "agent_id", "bob")},
	}}})
	enginetest.CheckErr(t, "turn.end", "bob into alice_notes", res, err, errs.Permission, "updates.memory[0]", "bob may not write")
	sameDump(t, "bob's turn.end", before, r.dump())
}

// TestAccessRegistryAnswersForStores: the engine's access registry knows
// who may read a memory store (for the trace and plans).
func TestAccessRegistryAnswersForStores(t *testing.T) {
	r := aliceStore(t)
	env := r.e.Env()
	if env.Access == nil {
		t.Skip("the engine has no access registry")
	}
	err := env.Store.View(func(tx *storage.Tx) error {
		for _, c := range []struct {
			who, store string
			want       bool
		}{{"alice", "alice_notes", true}, {"bob", "alice_notes", false}, {core.DefaultAgent, "working", true}, {"bob", "working", false}, {"alice", "nowhere", false}} {
			got, err := env.Access.CanRead(tx, "memory store", c.who, c.store)
			if err != nil || got != c.want {
				t.Errorf("CanRead(%s, %s) = %v, %v; want %v", c.who, c.store, got, err, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
