package history_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/storage"
)

// Issue 13 item 5: conversations were shared by all agents (Bob read
// Alice's conversation). Each conversation now has an owner and an ACL.

var (
	alice = enginetest.Who{As: "alice"}
	bob   = enginetest.Who{As: "bob"}
)

// aliceConversation gives Alice a conversation "private" with evictions
// (so it has a summary and an archive) and returns what she sees of it.
func aliceConversation(r *rig) string {
	r.t.Helper()
	r.Do(alice, "history.configure", map[string]any{"conversation": "private", "buffer_size": 2}, nil)
	for _, text := range []string{"My PIN is 4242.", "Book Lisbon for March 3.", "Maria Lopez approves $40,000.", "Call the bank on Friday."} {
		r.Do(alice, "history.write", map[string]any{"conversation": "private", "speaker": "user", "text": text}, nil)
	}
	r.h.Settle()
	return aliceView(r)
}

// aliceView is everything Alice can read of "private", as one string.
func aliceView(r *rig) string {
	r.t.Helper()
	var b strings.Builder
	for _, step := range []struct {
		name string
		args any
	}{
		{"history.read", map[string]any{"conversation": "private"}},
		{"history.summary", map[string]any{"conversation": "private"}},
		{"history.stats", map[string]any{"conversation": "private"}},
		{"history.search", map[string]any{"conversation": "private", "query": "PIN Lisbon bank"}},
	} {
		b.Write(r.Do(alice, step.name, step.args, nil))
		b.WriteByte('\n')
	}
	return b.String()
}

// denials are the access_denied trace entries of principal.
func denials(r *rig, who enginetest.Who) []map[string]any {
	r.t.Helper()
	var tr struct {
		Entries []struct {
			Kind      string         `json:"kind"`
			Principal string         `json:"principal"`
			Data      map[string]any `json:"data"`
		} `json:"entries"`
	}
	r.Do(who, "trace.list", `{"kind": "access_denied", "limit": 1000}`, &tr)
	var out []map[string]any
	for _, e := range tr.Entries {
		if e.Principal != who.As {
			continue
		}
		// Repeats of one denial are counted on one entry: one per attempt.
		n, _ := e.Data["count"].(float64)
		for range max(int(n), 1) {
			out = append(out, e.Data)
		}
	}
	return out
}

// conversationSteps is every history.* action on Alice's conversation,
// with the permission it needs.
var conversationSteps = []struct {
	name string
	args string
	perm string
}{
	{"history.read", `{"conversation": "private"}`, "read"},
	{"history.last", `{"conversation": "private", "n": 5}`, "read"},
	{"history.search", `{"conversation": "private", "query": "PIN"}`, "read"},
	{"history.search", `{"conversation": "private", "query": "\"my PIN\""}`, "read"},
	{"history.search", `{"conversation": "private", "query": "PIN", "when": "last month"}`, "read"},
	{"history.summary", `{"conversation": "private"}`, "read"},
	{"history.stats", `{"conversation": "private"}`, "read"},
	{"history.query", `{"query": "Get all utterances", "data": {"conversation": "private"}}`, "read"},
	{"history.query", `{"query": "Get summary", "data": {"conversation": "private"}}`, "read"},
	{"history.query", `{"query": "last 3", "data": {"conversation": "private"}}`, "read"},
	{"history.query", `{"query": "search PIN", "data": {"conversation": "private"}}`, "read"},
	{"history.query", `{"query": "Get stats", "data": {"conversation": "private"}}`, "read"},
	{"history.write", `{"conversation": "private", "speaker": "user", "text": "Bob was here."}`, "write"},
	{"history.query", `{"query": "Add utterance", "data": {"conversation": "private", "speaker": "user", "text": "Bob was here."}}`, "write"},
	{"history.configure", `{"conversation": "private", "buffer_size": 1}`, "write"},
	{"history.configure", `{"conversation": "private", "backend": "durable"}`, "delete"},
	{"history.backend", `{"conversation": "private", "backend": "durable"}`, "delete"},
	{"history.delete", `{"conversation": "private", "utterance_index": 3}`, "delete"},
	{"history.delete", `{"conversation": "private", "utterance_index": 0}`, "delete"},
	{"history.query", `{"query": "Delete utterance 3", "data": {"conversation": "private"}}`, "delete"},
	{"history.share", `{"conversation": "private", "principal": "bob", "permissions": ["read"]}`, "share"},
	{"history.share", `{"conversation": "private", "principal": "carol", "permissions": ["read"]}`, "share"},
}

// TestStrangerCannotTouchAnotherAgentsConversation is the bypass matrix:
// every history action as Bob, who holds no grant on Alice's conversation,
// is refused with a PermissionError, changes nothing Alice can see, and
// leaves an access_denied entry; history.list and Bob's turn.start do not
// show it. It failed before conversations had owners: Bob read all of it.
func TestStrangerCannotTouchAnotherAgentsConversation(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	before := aliceConversation(r)
	for i, s := range conversationSteps {
		r.Fail(bob, s.name, s.args, errs.Permission, "bob may not", `conversation "private"`, "history.share")
		if got := aliceView(r); got != before {
			t.Fatalf("%s %s by bob changed the conversation:\n%s\nwant\n%s", s.name, s.args, got, before)
		}
		if d := denials(r, bob); len(d) != i+1 {
			t.Fatalf("%s %s: %d access_denied entries, want %d", s.name, s.args, len(d), i+1)
		} else if last := d[i]; last["resource_type"] != "conversation" || last["resource_id"] != "private" || last["principal_id"] != "bob" {
			t.Errorf("%s: access_denied entry %v", s.name, last)
		}
	}
	r.Fail(bob, "history.revoke", `{"conversation": "private", "principal": "carol"}`, errs.Permission, "bob may not share")

	var list history.ListResult
	r.Do(bob, "history.list", nil, &list)
	if slices.ContainsFunc(list.Conversations, func(c history.ConversationInfo) bool { return c.Conversation == "private" }) {
		t.Errorf("history.list shows bob Alice's conversation: %+v", list)
	}
	r.Do(alice, "history.list", nil, &list)
	if !slices.ContainsFunc(list.Conversations, func(c history.ConversationInfo) bool { return c.Conversation == "private" }) {
		t.Errorf("history.list does not show alice her conversation: %+v", list)
	}

	var turn json.RawMessage
	r.Do(bob, "turn.start", `{"input": "what is my PIN?", "conversation": "private"}`, &turn)
	if strings.Contains(string(turn), "4242") || strings.Contains(string(turn), "Lisbon") {
		t.Errorf("bob's turn.start shows Alice's conversation: %s", turn)
	}
	r.Do(alice, "turn.start", `{"input": "what is my PIN?", "conversation": "private"}`, &turn)
	if !strings.Contains(string(turn), "Call the bank") {
		t.Errorf("alice's turn.start lacks her conversation: %s", turn)
	}
}

// TestReadGrantLetsReadButNotWrite: with read shared, Bob reads Alice's
// conversation but every write, configure, move and delete is refused;
// revoking takes reading back.
func TestReadGrantLetsReadButNotWrite(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	before := aliceConversation(r)
	var acl struct {
		Owner  string `json:"owner"`
		Grants []struct {
			PrincipalID string   `json:"principal_id"`
			Permissions []string `json:"permissions"`
		} `json:"grants"`
	}
	r.Do(alice, "history.share", `{"conversation": "private", "principal": "bob", "permissions": ["read"]}`, &acl)
	if acl.Owner != "alice" || len(acl.Grants) != 1 || acl.Grants[0].PrincipalID != "bob" || !slices.Equal(acl.Grants[0].Permissions, []string{"read"}) {
		t.Fatalf("acl after share: %+v", acl)
	}
	for _, s := range conversationSteps {
		if s.perm == "read" {
			r.Do(bob, s.name, s.args, nil)
			continue
		}
		r.Fail(bob, s.name, s.args, errs.Permission, "bob may not "+s.perm)
		if got := aliceView(r); got != before {
			t.Fatalf("%s by bob (read grant) changed the conversation:\n%s", s.name, got)
		}
	}
	var list history.ListResult
	r.Do(bob, "history.list", nil, &list)
	if !slices.ContainsFunc(list.Conversations, func(c history.ConversationInfo) bool { return c.Conversation == "private" }) {
		t.Errorf("history.list hides a conversation bob may read: %+v", list)
	}
	acl.Grants = nil
	r.Do(alice, "history.revoke", `{"conversation": "private", "principal": "bob"}`, &acl)
	if len(acl.Grants) != 0 {
		t.Errorf("acl after revoke: %+v", acl)
	}
	r.Fail(bob, "history.read", `{"conversation": "private"}`, errs.Permission, "bob may not read")
}

// TestWriteGrantLetsWriteAndFoldsKeepWorking: a writer other than the
// owner writes into a full buffer, and the background fold of what it
// evicted runs (the summary covers it) without any grant of its own.
func TestWriteGrantLetsWriteAndFoldsKeepWorking(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	aliceConversation(r)
	r.Do(alice, "history.share", `{"conversation": "private", "principal": "bob", "permissions": ["read", "write"]}`, nil)
	r.Do(bob, "history.write", `{"conversation": "private", "speaker": "assistant", "text": "Noted, Maria Lopez approved."}`, nil)
	r.h.Settle()
	var s history.SummaryResult
	r.Do(alice, "history.summary", `{"conversation": "private"}`, &s)
	if !slices.Equal(s.Summary.Covers, []int{0, 1, 2}) {
		t.Errorf("summary covers %v after bob's write, want [0 1 2]", s.Summary.Covers)
	}
	r.Fail(bob, "history.delete", `{"conversation": "private", "utterance_index": 4}`, errs.Permission, "bob may not delete")
}

// TestConversationStoredWithoutOwnerIsTheDefaultAgents: a conversation
// stored before conversations had owners is the default agent's
// (access.LegacyOwner): it keeps working for it and is refused to others.
func TestConversationStoredWithoutOwnerIsTheDefaultAgents(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("old", "user", "hello from before owners")
	st := r.e.Env().Store
	key := storage.Key(storage.PrefixHistory, "conv", "old")
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		var conv map[string]any
		if err := tx.GetJSON(key, &conv); err != nil {
			return err
		}
		if conv["owner"] != "local" {
			t.Errorf("a new conversation's owner is %v, want local", conv["owner"])
		}
		delete(conv, "owner")
		return tx.SetJSON(key, conv)
	})
	if err != nil {
		t.Fatal(err)
	}
	r.write("old", "assistant", "still mine")
	if got := texts(r.read("old", "")); len(got) != 2 {
		t.Errorf("the default agent reads %q", got)
	}
	r.Fail(bob, "history.read", `{"conversation": "old"}`, errs.Permission, "bob may not read", "the owner (local)")
	var acl struct {
		Owner string `json:"owner"`
	}
	r.do("history.share", `{"conversation": "old", "principal": "bob", "permissions": ["read"]}`, &acl)
	if acl.Owner != "local" {
		t.Errorf("share's result names owner %q, want local", acl.Owner)
	}
	r.Do(bob, "history.read", `{"conversation": "old"}`, nil)
}

// TestNewConversationBelongsToItsFirstWriter: whoever writes a
// conversation first owns it; others are refused until it is shared.
func TestNewConversationBelongsToItsFirstWriter(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("mine", "user", "hello")
	r.Fail(bob, "history.read", `{"conversation": "mine"}`, errs.Permission, "bob may not read", "the owner (local)")
	r.Do(bob, "history.write", `{"conversation": "bobs", "speaker": "user", "text": "hi"}`, nil)
	r.fail("history.read", `{"conversation": "bobs"}`, errs.Permission, "local may not read", "the owner (bob)")
	r.Fail(bob, "history.share", `{"conversation": "nothing", "principal": "carol", "permissions": ["read"]}`, errs.NotFound, "no conversation")
}

// TestTurnCannotWriteIntoAnotherAgentsConversation: a turn of Bob's whose
// updates.history names Alice's conversation is refused at turn.end, and
// the conversation is unchanged.
func TestTurnCannotWriteIntoAnotherAgentsConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	before := aliceConversation(r)
	who := enginetest.Who{As: "bob", Turn: "turn-b"}
	r.Do(who, "turn.start", `{"input": "hi", "conversation": "private"}`, nil)
	r.Fail(who, "turn.end", `{"updates": {"history": [{"speaker": "user", "text": "Bob was here.", "conversation": "private"}]}}`,
		errs.Permission, "bob may not write", `conversation "private"`)
	if got := aliceView(r); got != before {
		t.Errorf("bob's turn.end changed the conversation:\n%s", got)
	}
}

// TestAccessRegistryAnswersForConversations: the engine's access registry
// (which the trace and the planner ask) says who may read a conversation,
// in either backend.
func TestAccessRegistryAnswersForConversations(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	aliceConversation(r)
	r.Do(alice, "history.write", `{"conversation": "kept", "speaker": "user", "text": "on disk"}`, nil)
	r.Do(alice, "history.backend", `{"conversation": "kept", "backend": "durable"}`, nil)
	env := r.e.Env()
	err := env.Store.View(func(tx *storage.Tx) error {
		for _, c := range []struct {
			who, conv string
			want      bool
		}{{"alice", "private", true}, {"bob", "private", false}, {"alice", "kept", true}, {"bob", "kept", false}, {"alice", "nothing", false}} {
			got, err := env.Access.CanRead(tx, history.ObjectType, c.who, c.conv)
			if err != nil || got != c.want {
				t.Errorf("CanRead(%s, %s) = %v, %v; want %v", c.who, c.conv, got, err, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The write check other actions ask ahead (chat.send, before it records a
// thread message) finds a conversation as the history does, in its default
// backend when its where record is missing: a review found the check took
// such a conversation for a new one, anyone's to write.
func TestWriteCheckFindsAConversationWithoutItsWhereRecord(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.Do(alice, "history.write", `{"conversation": "private", "speaker": "user", "text": "mine"}`, nil)
	env := r.e.Env()
	if err := env.Store.Update(t.Context(), func(tx *storage.Tx) error { return tx.Delete(history.WhereKey("private")) }); err != nil {
		t.Fatal(err)
	}
	err := env.Store.View(func(tx *storage.Tx) error {
		return env.Access.CheckWrite(tx, history.ObjectType, "bob", "private", r.clock.Now())
	})
	if errs.KindOf(err) != errs.Permission {
		t.Errorf("bob's write check: %v, want a PermissionError", err)
	}
	err = env.Store.View(func(tx *storage.Tx) error {
		return env.Access.CheckWrite(tx, history.ObjectType, "alice", "private", r.clock.Now())
	})
	if err != nil {
		t.Errorf("alice's write check: %v", err)
	}
}
