package core

import (
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// TestChatSendFailsBeforeThreading: a chat.send that cannot run its turn
// (a reused turn id, a bad conversation name) fails before routing its
// message into a thread, so nothing is recorded anywhere.
func TestChatSendFailsBeforeThreading(t *testing.T) {
	opts := Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "chat test"}
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
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
