package mcpserver

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
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
