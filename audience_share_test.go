package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/events"
)

// An agent given access it cannot read with (write alone), or losing
// it, hears of the change to a store or a plan, as it does for a
// conversation or a thread: docs/events.md's "and the agent whose access
// changed".
func TestAnAgentHearsOfEveryChangeToItsOwnAccess(t *testing.T) {
	e, err := core.Open(engineOptions(core.Options{InMemory: true, IDSeed: "share"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	must := func(name, args string) {
		t.Helper()
		if _, err := e.Do(ctx, core.Request{Action: name, Args: json.RawMessage(args), Principal: "alice"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	must("memory.configure", `{"store":"notes","type":"working"}`)
	must("plan.create", `{"id":"p1","goal":"g","subtasks":[{"id":"s1","description":"d","action":{"name":"task.noop"}}]}`)
	must("history.write", `{"conversation":"chat","speaker":"user","text":"hello"}`)
	must("thread.message", `{"channel":"web","text":"plan the trip"}`)
	threads, err := e.Do(ctx, core.Request{Action: "thread.list", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		Threads []struct {
			ID string `json:"id"`
		} `json:"threads"`
	}
	if err := json.Unmarshal(threads, &tl); err != nil || len(tl.Threads) != 1 {
		t.Fatalf("thread.list: %s %v", threads, err)
	}
	thread := tl.Threads[0].ID

	bob := e.SubscribeAs(ctx, "bob")
	for _, change := range []string{"share", "revoke"} {
		grant := `,"permissions":["write"]`
		if change == "revoke" {
			grant = ""
		}
		must("memory."+change, `{"store":"notes","principal":"bob"`+grant+`}`)
		must("plan."+change, `{"plan_id":"p1","principal":"bob"`+grant+`}`)
		must("history."+change, `{"conversation":"chat","principal":"bob"`+grant+`}`)
		must("thread."+change, `{"thread_id":"`+thread+`","principal":"bob"`+grant+`}`)
	}
	e.Env().Events.Publish("test.end", events.Everyone(), nil)
	var got []string
	for ev := range bob {
		if ev.Name == "test.end" {
			break
		}
		got = append(got, ev.Name)
	}
	want := map[string]int{"memory.store.changed": 2, "plan.changed": 2, "conversation.access": 2, "thread.access": 2}
	counts := map[string]int{}
	for _, n := range got {
		counts[n]++
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("bob heard %d %s events, want %d (all he got: %v)", counts[k], k, n, got)
		}
	}
}

// An agent given read on Alice's store, conversation, thread and plan
// hears of what happens to each of them, as its reads would show it.
func TestAGranteeHearsOfWhatHappensToWhatItWasGiven(t *testing.T) {
	e, err := core.Open(engineOptions(core.Options{InMemory: true, IDSeed: "grantee"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	do := func(name, args string) json.RawMessage {
		t.Helper()
		out, err := e.Do(ctx, core.Request{Action: name, Args: json.RawMessage(args), Principal: "alice"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	do("memory.configure", `{"store":"notes","type":"working"}`)
	do("plan.create", `{"id":"p1","goal":"g","subtasks":[{"id":"s1","description":"d","action":{"name":"task.noop"}}]}`)
	do("history.write", `{"conversation":"chat","speaker":"user","text":"hello"}`)
	var msg struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(do("thread.message", `{"channel":"web","text":"plan the trip"}`), &msg); err != nil {
		t.Fatal(err)
	}
	do("memory.share", `{"store":"notes","principal":"carol","permissions":["read"]}`)
	do("plan.share", `{"plan_id":"p1","principal":"carol","permissions":["read"]}`)
	do("history.share", `{"conversation":"chat","principal":"carol","permissions":["read"]}`)
	do("thread.share", `{"thread_id":"`+msg.ThreadID+`","principal":"carol","permissions":["read"]}`)

	carol := e.SubscribeAs(ctx, "carol")
	do("memory.memorize", `{"store":"notes","item":{"id":"n1","type":"fact","text":"the door code","agent_id":"alice"}}`)
	do("memory.forget", `{"store":"notes","instruction":"item n1"}`)
	do("memory.unforget", `{"store":"notes","id":"n1"}`)
	do("history.write", `{"conversation":"chat","speaker":"assistant","text":"hi"}`)
	do("history.configure", `{"conversation":"chat","buffer_size":5}`)
	do("thread.message", `{"channel":"web","thread_id":"`+msg.ThreadID+`","text":"in May"}`)
	do("thread.configure", `{"thread_id":"`+msg.ThreadID+`","inactivity_timeout_minutes":45}`)
	do("plan.execute", `{"plan_id":"p1"}`)
	e.Env().Events.Publish("test.end", events.Everyone(), nil)
	heard := map[string]bool{}
	for ev := range carol {
		if ev.Name == "test.end" {
			break
		}
		heard[ev.Name] = true
	}
	for _, k := range []string{"memory.memorized", "memory.forgotten", "memory.unforgotten", "utterance.written",
		"conversation.configured", "thread.turn", "thread.configured", "plan.subtask.started", "plan.subtask.finished", "plan.finished"} {
		if !heard[k] {
			t.Errorf("carol did not hear %s (she heard %v)", k, heard)
		}
	}
}
