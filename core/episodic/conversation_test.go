package episodic_test

import (
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// A conversation's web thread survives restarts (issue 14, bug 6).

// chatSend is chat.send with its arguments as given; it fails the test if
// the message was not routed into a thread.
func (r *rig) chatSend(args map[string]any) core.ChatSendResult {
	r.T.Helper()
	res := enginetest.Call[core.ChatSendResult](r.Rig, agent, "chat.send", args)
	if res.Thread == nil {
		r.T.Fatalf("chat.send %v routed nowhere: %+v", args, res)
	}
	return res
}

// reopen closes the engine and opens the same data directory again (with
// new ids: the same seed would draw the turn ids already used).
func (r *rig) reopen(o *rigOptions) *rig {
	r.T.Helper()
	if err := r.e.Close(); err != nil {
		r.T.Fatal(err)
	}
	o.idSeed += " again"
	again := newRigWith(r.T.(*testing.T), *o)
	again.clock.Set(r.clock.Now())
	return again
}

// TestChatSendOnWebContinuesTheConversationsThreadAfterARestart: the
// second message on web, after the store was closed and opened again,
// continues the thread the first one started, as it would within one run;
// new_thread starts another, which is then the one continued (after
// another restart too); another conversation has a thread of its own.
func TestChatSendOnWebContinuesTheConversationsThreadAfterARestart(t *testing.T) {
	o := rigOptions{dir: t.TempDir(), history: true, idSeed: "episodic restart test"}
	r := newRigWith(t, o)
	first := r.chatSend(map[string]any{"channel": "web", "text": "Book flights to Paris for March 3.", "continue_thread": true})
	if !first.Thread.NewThread {
		t.Fatalf("the first message on web did not start a thread: %+v", first.Thread)
	}
	r.clock.Advance(time.Minute)
	r = r.reopen(&o)
	second := r.chatSend(map[string]any{"channel": "web", "text": "Two seats, please.", "continue_thread": true})
	if second.Thread.ThreadID != first.Thread.ThreadID || second.Thread.NewThread || second.Thread.TurnCount != 2 {
		t.Fatalf("after a restart the second message went to %+v, want turn 2 of thread %s", second.Thread, first.Thread.ThreadID)
	}

	fresh := r.chatSend(map[string]any{"channel": "web", "text": "Find a hotel in Lisbon."})
	if !fresh.Thread.NewThread || fresh.Thread.ThreadID == first.Thread.ThreadID {
		t.Fatalf("without continue_thread, a message on web did not start a thread (as scripts expect): %+v", fresh.Thread)
	}
	r.clock.Advance(time.Minute)
	r = r.reopen(&o)
	next := r.chatSend(map[string]any{"channel": "web", "text": "Near the river, please.", "continue_thread": true})
	if next.Thread.ThreadID != fresh.Thread.ThreadID || next.Thread.TurnCount != 2 {
		t.Errorf("after a new thread and a restart: %+v, want turn 2 of the new thread %s", next.Thread, fresh.Thread.ThreadID)
	}
	other := r.chatSend(map[string]any{"channel": "web", "conversation": "launch", "text": "Draft the launch announcement.", "continue_thread": true})
	if !other.Thread.NewThread {
		t.Errorf("another conversation's first message on web continued %s", other.Thread.ThreadID)
	}
	// Selecting a thread makes it the conversation's: the next message
	// without thread_id continues it.
	r.chatSend(map[string]any{"channel": "web", "thread_id": first.Thread.ThreadID, "text": "Aisle seats after all."})
	r = r.reopen(&o)
	back := r.chatSend(map[string]any{"channel": "web", "text": "And a taxi to the airport.", "continue_thread": true})
	if back.Thread.ThreadID != first.Thread.ThreadID {
		t.Errorf("after selecting a thread: %s, want the selected %s", back.Thread.ThreadID, first.Thread.ThreadID)
	}
	// continue_thread is for web and app only.
	r.Fail(agent, "chat.send", map[string]any{"channel": "sms", "text": "hi", "continue_thread": true}, errs.Validation, "continue_thread", "engram infers the thread")
	r.Fail(agent, "chat.send", map[string]any{"text": "hi", "continue_thread": true}, errs.Validation, "continue_thread", "needs a channel")
}

// TestChatSendRecordsWhereEachMessageWent: the user's utterance keeps its
// route in its metadata ("thread"), which is what the console shows under
// it after a restart.
func TestChatSendRecordsWhereEachMessageWent(t *testing.T) {
	o := rigOptions{dir: t.TempDir(), history: true, idSeed: "episodic restart test"}
	r := newRigWith(t, o)
	first := r.chatSend(map[string]any{"channel": "web", "text": "Book flights to Paris for March 3."})
	r.chatSend(map[string]any{"channel": "web", "text": "Two seats, please.", "continue_thread": true})
	r = r.reopen(&o)
	utts := enginetest.Call[history.Utterances](r.Rig, agent, "history.read", history.ReadArgs{}).Utterances
	if len(utts) != 2 {
		t.Fatalf("%d utterances, want 2", len(utts))
	}
	want := []core.ChatRoute{
		{Channel: "web", ThreadID: first.Thread.ThreadID, NewThread: true, TurnCount: 1},
		{Channel: "web", ThreadID: first.Thread.ThreadID, TurnCount: 2},
	}
	for i, u := range utts {
		got, ok := core.ChatRouteOf(u.Metadata)
		if !ok || got.Channel != want[i].Channel || got.ThreadID != want[i].ThreadID || got.NewThread != want[i].NewThread || got.TurnCount != want[i].TurnCount {
			t.Errorf("utterance %d's route: %+v (%v) from %s, want %+v", i, got, ok, u.Metadata, want[i])
		}
	}
}

// TestConversationThreadIsOnlyContinuedByWhoMayWriteIt: thread.message with
// a conversation continues its web thread only for an agent that may
// write it; another agent's message starts a thread of its own. new_thread
// goes only with a user's message on web or app without thread_id.
func TestConversationThreadIsOnlyContinuedByWhoMayWriteIt(t *testing.T) {
	r := newRig(t)
	msg := func(who enginetest.Who, args map[string]any) string {
		t.Helper()
		var res struct {
			ThreadID string `json:"thread_id"`
		}
		r.Do(who, "thread.message", args, &res)
		return res.ThreadID
	}
	mine := msg(agent, map[string]any{"channel": "web", "conversation": "shared", "text": "Book flights to Paris."})
	if again := msg(agent, map[string]any{"channel": "web", "conversation": "shared", "text": "Two seats."}); again != mine {
		t.Errorf("the conversation's second message went to %s, want %s", again, mine)
	}
	// Without a conversation, web starts a new thread as it always has.
	if alone := msg(agent, map[string]any{"channel": "web", "text": "Two seats."}); alone == mine {
		t.Error("a message without conversation continued the conversation's thread")
	}
	bob := enginetest.Who{As: "bob"}
	if theirs := msg(bob, map[string]any{"channel": "web", "conversation": "shared", "text": "Hotels in Paris?"}); theirs == mine {
		t.Error("bob continued a thread he may not write")
	}
	for _, args := range []map[string]any{
		{"channel": "sms", "text": "hi", "new_thread": true},
		{"channel": "web", "thread_id": mine, "text": "hi", "new_thread": true},
	} {
		r.Fail(agent, "thread.message", args, errs.Validation, "new_thread")
	}
	r.Fail(agent, "thread.message", map[string]any{"channel": "web", "conversation": "a/b", "text": "hi"}, errs.Validation, "conversation")
}

// Each agent of a shared conversation continues its own thread: one
// alternating with another does not start a thread at every message (a
// review found the conversation's thread was one for all its agents).
func TestAgentsOfASharedConversationEachContinueTheirOwnThread(t *testing.T) {
	r := newRigWith(t, rigOptions{dir: t.TempDir(), history: true, idSeed: "shared conversation test"})
	send := func(who enginetest.Who, text string) core.ChatSendResult {
		t.Helper()
		return enginetest.Call[core.ChatSendResult](r.Rig, who, "chat.send",
			map[string]any{"channel": "web", "conversation": "shared", "text": text, "continue_thread": true})
	}
	a1 := send(alice, "Plan the offsite agenda.")
	r.Do(alice, "history.share", `{"conversation": "shared", "principal": "bob", "permissions": ["read", "write"]}`, nil)
	b1 := send(bob, "Book the venue by the river.")
	a2 := send(alice, "Add a lunch break.")
	b2 := send(bob, "Two rooms, please.")
	if a1.Thread.ThreadID == b1.Thread.ThreadID {
		t.Fatalf("bob's first message went into alice's thread %s, which he may not write", a1.Thread.ThreadID)
	}
	if a2.Thread.ThreadID != a1.Thread.ThreadID || b2.Thread.ThreadID != b1.Thread.ThreadID {
		t.Errorf("alternating messages: alice %s then %s, bob %s then %s; want each to continue their own",
			a1.Thread.ThreadID, a2.Thread.ThreadID, b1.Thread.ThreadID, b2.Thread.ThreadID)
	}
}
