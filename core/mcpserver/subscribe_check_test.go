package mcpserver

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/history"
)

// An agent cannot subscribe to another agent's conversation summary: the
// updates would tell it when that conversation changes, which it may not
// read. (The refusal reaches the server's answer, which the current
// protocol's Subscribe does not wait for: what counts is that no update
// of bob's conversation ever reaches alice.) Her own she may.
func TestASubscriptionToAnotherAgentsConversationIsRefused(t *testing.T) {
	e := newEngine(t)
	size := 1
	for _, who := range []string{"bob", "alice"} {
		if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: who}, history.ActionConfigure,
			history.ConfigureRequest{Conversation: who + "-notes", BufferSize: &size}); err != nil {
			t.Fatal(err)
		}
	}
	cs := watchedServerWith(t, e, Options{Agent: "alice"})
	// Its error, if it comes back at all, is not the point (see above).
	_ = cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: SummaryURI("bob-notes")})
	cs.subscribe(t, SummaryURI("alice-notes"))
	// Two messages each: the first leaves the buffer, and the summary
	// changes; bob's first, so that an update of his would come first.
	for _, who := range []string{"bob", "alice"} {
		for _, text := range []string{"The boiler is serviced in March.", "The roof needs new tiles."} {
			if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: who}, history.ActionWrite,
				history.WriteRequest{Conversation: who + "-notes", Speaker: "user", Text: text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case got := <-cs.updated:
		if got != SummaryURI("alice-notes") {
			t.Errorf("alice heard first of %s; want only her own summary's updates", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("alice heard of no update of her own summary")
	}
}

// The active goals list is announced to alice's subscribers only when her
// list changes: another agent's goal changing tells her nothing.
func TestAnotherAgentsGoalChangeIsNotAnnounced(t *testing.T) {
	e := newEngine(t)
	s := New(e, Options{Agent: "alice"})
	if s.goalsChanged(t.Context()) {
		t.Fatal("without a subscriber the list was read and found changed")
	}
	if err := s.checkSubscription(t.Context(), &mcp.SubscribeRequest{Params: &mcp.SubscribeParams{URI: ActiveGoalsURI}}); err != nil {
		t.Fatal(err)
	}
	create := func(who, title string) {
		t.Helper()
		if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: who}, cortex.ActionCreate,
			cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(strconv.Quote(title))}}); err != nil {
			t.Fatal(err)
		}
	}
	create("bob", "Bob's secret project")
	if s.goalsChanged(t.Context()) {
		t.Error("bob's new goal changed alice's list")
	}
	create("alice", "Alice's plan")
	if !s.goalsChanged(t.Context()) {
		t.Error("alice's new goal did not change her list")
	}
	if s.goalsChanged(t.Context()) {
		t.Error("her list changed again with nothing done")
	}
	if err := s.endSubscription(t.Context(), &mcp.UnsubscribeRequest{Params: &mcp.UnsubscribeParams{URI: ActiveGoalsURI}}); err != nil {
		t.Fatal(err)
	}
	create("alice", "Another plan")
	if s.goalsChanged(t.Context()) {
		t.Error("with no subscriber left, the list was still read")
	}
}

// End to end: bob's new goal sends alice's subscriber nothing, her own
// conversation's change (after it) does, and comes first.
func TestAliceHearsNothingOfBobsGoals(t *testing.T) {
	e := newEngine(t)
	size := 1
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, history.ActionConfigure,
		history.ConfigureRequest{Conversation: "alice-notes", BufferSize: &size}); err != nil {
		t.Fatal(err)
	}
	cs := watchedServerWith(t, e, Options{Agent: "alice"})
	cs.subscribe(t, ActiveGoalsURI)
	cs.subscribe(t, SummaryURI("alice-notes"))
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"Bob's secret project"`)}}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"The boiler is serviced in March.", "The roof needs new tiles."} {
		if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, history.ActionWrite,
			history.WriteRequest{Conversation: "alice-notes", Speaker: "user", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-cs.updated:
		if got != SummaryURI("alice-notes") {
			t.Errorf("alice heard first of %s; want her summary, nothing of bob's goal", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("alice heard of no update of her own summary")
	}
}
