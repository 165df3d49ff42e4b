package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
)

// turnKinds are the kinds of a turn's trace entries, in order.
func turnKinds(t *testing.T, e *core.Engine, turn string) []string {
	t.Helper()
	res, err := conn.Call(t.Context(), e, core.ActionTraceList, trace.ListArgs{Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, en := range res.Entries {
		kinds = append(kinds, en.Kind)
	}
	return kinds
}

func TestWorkingMemoryIsWhatToPutInThePrompt(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "The user's sister Ana lives in Porto.", "importance": 0.9}, nil)
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "I'm flying to Portugal in December."}, nil)
	callTool(t, cs, "log_message", map[string]any{"speaker": "assistant", "text": "Noted: December, Portugal."}, nil)
	var out WorkingMemoryOutput
	callTool(t, cs, "working_memory", map[string]any{"input": "Should I visit Porto?"}, &out)
	if !strings.Contains(out.System, "Ana lives in Porto") {
		t.Errorf("system prompt %q does not carry the memory about Porto", out.System)
	}
	want := []ChatMessage{{"user", "I'm flying to Portugal in December."}, {"assistant", "Noted: December, Portugal."}, {"user", "Should I visit Porto?"}}
	if !slices.Equal(out.Messages, want) {
		t.Errorf("messages = %+v; want the conversation, then the input", out.Messages)
	}
	if out.Sections["memory"] == nil || out.Sections["history"] == nil || !slices.Contains(out.Providers, "memory") {
		t.Errorf("sections = %v, providers %v; want the memory and history parts", out.Sections, out.Providers)
	}
	// The turn was recorded, and ended: none is left open.
	if kinds := turnKinds(t, e, out.TurnID); !slices.Contains(kinds, "turn.start") || !slices.Contains(kinds, "turn.end") {
		t.Errorf("turn %s trace = %v; want it started and ended", out.TurnID, kinds)
	}
	// It committed nothing: the conversation is as it was.
	if msgs := mustRead(t, e, "default"); len(msgs) != 2 {
		t.Errorf("the conversation holds %d messages after working_memory; want the 2 logged", len(msgs))
	}
}

func TestWorkingMemoryRefusesBadInputAndRecordsNoTurn(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "hello", "conversation": "c"}, nil)
	turns := func() string {
		res, err := conn.Call(t.Context(), e, core.ActionTraceList, trace.ListArgs{Kind: "turn.start"})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Repeat("x", len(res.Entries)) + historySnapshot(t, e)()
	}
	checkBad(t, cs, "working_memory", []badCall{
		{name: "no input", args: map[string]any{"conversation": "c"}, field: "input"},
		{name: "input of the wrong type", args: map[string]any{"input": 3}, field: "input"},
		{name: "blank input", args: map[string]any{"input": " "}, kind: errs.Validation, field: "input"},
		{name: "unknown channel", args: map[string]any{"input": "hi", "channel": "fax"}, kind: errs.Validation, field: "channel"},
		{name: "unknown conversation", args: map[string]any{"input": "hi", "conversation": "nope"}, kind: errs.NotFound, field: "nope"},
		{name: "unknown thread", args: map[string]any{"input": "hi", "channel": "web", "thread_id": "nope"}, kind: errs.NotFound, field: "nope"},
	}, turns)
}
