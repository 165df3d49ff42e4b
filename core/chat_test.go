package core

import (
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// newChatEngine opens an in-memory engine with every default subsystem, on
// the fixed test clock.
func newChatEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "chat test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

// TestChatSendFailsBeforeThreading: a chat.send that cannot run its turn
// (a reused turn id, a bad conversation name) fails before routing its
// message into a thread, so nothing is recorded anywhere.
func TestChatSendFailsBeforeThreading(t *testing.T) {
	e := newChatEngine(t)
	do(t, e, "chat.send", "t-1", `{"text": "What's the weather in New York?", "channel": "sms"}`)
	doErr(t, e, Request{Action: "chat.send", Turn: "t-1", Args: json.RawMessage(`{"text": "And tomorrow?", "channel": "sms"}`)},
		errs.Conflict, `turn "t-1" already started`)
	doErr(t, e, Request{Action: "chat.send", Turn: "t-2", Args: json.RawMessage(`{"text": "And tomorrow?", "channel": "sms", "conversation": "a/b"}`)},
		errs.Validation, "conversation")
	var list struct {
		Threads []struct {
			TurnCount int `json:"turn_count"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(do(t, e, "thread.list", "", `{}`), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Threads) != 1 || list.Threads[0].TurnCount != 1 {
		t.Errorf("threads after the failed sends: %+v; want one thread with the first message only", list.Threads)
	}
}

// A chat.send into a conversation the sender may not write is refused
// before anything is recorded (issue 13, item 5: a refused request changes
// nothing): no thread message in the sender's channel, no turn, and an
// access_denied entry in the trace for the conversation's owner.
func TestChatSendIntoAnotherAgentsConversationRecordsNothing(t *testing.T) {
	e := newChatEngine(t)
	ctx := t.Context()
	if _, err := e.Do(ctx, Request{Action: "history.write", Principal: "alice",
		Args: json.RawMessage(`{"conversation": "alice-chat", "speaker": "user", "text": "mine"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"text": "Hello", "conversation": "alice-chat", "channel": "sms"}`,
		`{"text": "Hello", "conversation": "alice-chat"}`,
	} {
		_, err := e.Do(ctx, Request{Action: "chat.send", Principal: "bob", Turn: "bob-turn", Args: json.RawMessage(args)})
		if errs.KindOf(err) != errs.Permission {
			t.Fatalf("bob's chat.send %s: %v, want a PermissionError", args, err)
		}
	}
	threads, err := e.Do(ctx, Request{Action: "thread.list", Principal: "bob", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Threads []json.RawMessage `json:"threads"`
	}
	if err := json.Unmarshal(threads, &list); err != nil || len(list.Threads) != 0 {
		t.Errorf("bob's threads after the refused sends: %s (%v); want none", threads, err)
	}
	// The turn id was never used: bob can start it now.
	if _, err := e.Do(ctx, Request{Action: "turn.start", Principal: "bob", Turn: "bob-turn", Args: json.RawMessage(`{"input": "hi", "conversation": "bob-chat"}`)}); err != nil {
		t.Errorf("a refused send left its turn behind: %v", err)
	}
	denied, err := e.Do(ctx, Request{Action: "trace.list", Principal: "alice", Args: json.RawMessage(`{"kind": "access_denied"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		Entries []struct {
			Principal string `json:"principal"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(denied, &trace); err != nil || len(trace.Entries) != 1 || trace.Entries[0].Principal != "bob" {
		t.Errorf("alice's access_denied entries: %s (%v); want bob's refusal, counted once", denied, err)
	}
}

// A turn.end whose update another agent's conversation or store refuses
// leaves the access_denied entry every other refusal leaves (issue 13,
// item 5), although it ran inside the turn's rolled-back transaction.
func TestRefusedTurnEndUpdateIsInTheOwnersTrace(t *testing.T) {
	e := newChatEngine(t)
	ctx := t.Context()
	run := func(who, turn, name, args string) error {
		_, err := e.Do(ctx, Request{Action: name, Principal: who, Turn: turn, Args: json.RawMessage(args)})
		return err
	}
	if err := run("alice", "", "history.write", `{"conversation": "alice-chat", "speaker": "user", "text": "mine"}`); err != nil {
		t.Fatal(err)
	}
	if err := run("alice", "", "memory.configure", `{"store": "alice-notes", "type": "episodic"}`); err != nil {
		t.Fatal(err)
	}
	for i, update := range []string{
		`{"history": [{"conversation": "alice-chat", "speaker": "user", "text": "mine now"}]}`,
		`{"memory": [{"store": "alice-notes", "item": {"type": "fact", "text": "mine now", "agent_id": "bob"}}]}`,
	} {
		turn := "bob-" + string(rune('a'+i))
		if err := run("bob", turn, "turn.start", `{"input": "hi", "conversation": "bob-chat"}`); err != nil {
			t.Fatal(err)
		}
		if err := run("bob", turn, "turn.end", `{"updates": `+update+`}`); errs.KindOf(err) != errs.Permission {
			t.Fatalf("bob's turn.end %s: %v, want a PermissionError", update, err)
		}
	}
	out, err := e.Do(ctx, Request{Action: "trace.list", Principal: "alice", Args: json.RawMessage(`{"kind": "access_denied"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		Entries []struct {
			Principal string `json:"principal"`
			Data      struct {
				ResourceType string `json:"resource_type"`
			} `json:"data"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(out, &trace); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, en := range trace.Entries {
		if en.Principal == "bob" {
			seen[en.Data.ResourceType] = true
		}
	}
	if !seen["conversation"] || !seen["memory store"] {
		t.Errorf("alice's access_denied entries by bob: %s; want one about her conversation and one about her store", out)
	}
}
