package mcpserver

import (
	"fmt"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

func TestAnAgentCannotUseAnotherAgentsMemoryOrConversation(t *testing.T) {
	e := newEngine(t)
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, history.ActionWrite,
		history.WriteRequest{Conversation: "bobs", Speaker: "user", Text: "Bob's secret plans."}); err != nil {
		t.Fatal(err)
	}
	local := connect(t, New(e, Options{}))
	callTool(t, local, "remember", map[string]any{"text": "The default agent's note."}, nil)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	checkBad(t, cs, "recall", []badCall{
		{name: "the default agent's store", args: map[string]any{"store": "working"}, kind: errs.Permission, field: "working"},
	}, memorySnapshot(t, e))
	checkBad(t, cs, "forget", []badCall{
		{name: "the default agent's store", args: map[string]any{"store": "working", "instruction": "oldest", "dry_run": false}, kind: errs.Permission, field: "working"},
	}, memorySnapshot(t, e))
	snapshot := func() string {
		u, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, history.ActionRead, history.ReadArgs{Conversation: "bobs"})
		if err != nil {
			t.Fatal(err)
		}
		threads, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, episodic.ActionThreadList, action.None{})
		if err != nil {
			t.Fatal(err)
		}
		return historySnapshot(t, e)() + u.Utterances[len(u.Utterances)-1].Text + fmt.Sprint(len(threads.Threads))
	}
	checkBad(t, cs, "search_history", []badCall{
		{name: "bob's conversation", args: map[string]any{"query": "plans", "conversation": "bobs"}, kind: errs.NotFound, field: "bobs"},
	}, snapshot)
	checkBad(t, cs, "log_message", []badCall{
		{name: "into bob's conversation", args: map[string]any{"speaker": "user", "text": "hi", "conversation": "bobs"}, kind: errs.Permission, field: "bobs"},
		{name: "into bob's conversation on a channel", args: map[string]any{"speaker": "user", "text": "hi", "conversation": "bobs", "channel": "sms"}, kind: errs.Permission, field: "bobs"},
	}, snapshot)
}
