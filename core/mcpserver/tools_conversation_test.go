package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// historySnapshot is every conversation the default agent may read, with
// its messages, and every thread with its turns, as JSON: what a failed
// call must not change.
func historySnapshot(t *testing.T, e *core.Engine) func() string {
	return func() string {
		t.Helper()
		list, err := conn.Call(t.Context(), e, history.ActionList, history.ListArgs{})
		if err != nil {
			t.Fatal(err)
		}
		all := []any{list}
		for _, c := range list.Conversations {
			u, err := conn.Call(t.Context(), e, history.ActionRead, history.ReadArgs{Conversation: c.Conversation})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, u)
		}
		threads, err := conn.Call(t.Context(), e, episodic.ActionThreadList, action.None{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, threads)
		raw, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
}

func TestLogMessageWritesTheConversation(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var out LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Plan Maria's birthday party.", "conversation": "party"}, &out)
	if out.Utterance.Conversation != "party" || out.Utterance.Index != 0 || out.Utterance.Speaker != "user" ||
		out.Utterance.Text != "Plan Maria's birthday party." || out.Thread != nil {
		t.Fatalf("log_message = %+v; want utterance 0 of party, no thread", out)
	}
	read, err := conn.Call(t.Context(), e, history.ActionRead, history.ReadArgs{Conversation: "party"})
	if err != nil || len(read.Utterances) != 1 || read.Utterances[0].Text != "Plan Maria's birthday party." {
		t.Fatalf("history.read party = %+v, %v; want the message", read, err)
	}
}

func TestLogMessageOnAChannelRoutesItToAThread(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var q, a, next LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "What's the weather in New York?", "channel": "sms"}, &q)
	callTool(t, cs, "log_message", map[string]any{"speaker": "assistant", "text": "Sunny, 72°F.", "channel": "sms"}, &a)
	if q.Thread == nil || !q.Thread.NewThread || q.Thread.ThreadID == "" || q.Utterance.ThreadID != q.Thread.ThreadID {
		t.Fatalf("first sms message = %+v; want a new thread, recorded with the utterance", q)
	}
	if a.Thread == nil || a.Thread.ThreadID != q.Thread.ThreadID || a.Thread.NewThread {
		t.Fatalf("the answer = %+v; want it in the question's thread", a)
	}
	got, err := conn.Call(t.Context(), e, episodic.ActionThreadGet, episodic.GetArgs{ThreadID: q.Thread.ThreadID})
	if err != nil || got.Thread.Thread == nil || len(got.Thread.Turns) != 2 || got.Thread.Turns[1].Speaker != "assistant" {
		t.Fatalf("thread.get = %+v, %v; want the thread with the question and its answer", got, err)
	}
	route, ok := core.ChatRouteOf(mustRead(t, e, "default")[0].Metadata)
	if !ok || route.ThreadID != q.Thread.ThreadID || route.Channel != "sms" {
		t.Errorf("the utterance's route = %+v, %v; want the thread on sms", route, ok)
	}
	// On web, messages of one conversation continue its thread.
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Book a table for Friday.", "channel": "web", "conversation": "dinner"}, &next)
	var again LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Make it four people.", "channel": "web", "conversation": "dinner"}, &again)
	if next.Thread == nil || again.Thread == nil || again.Thread.ThreadID != next.Thread.ThreadID || next.Thread.ThreadID == q.Thread.ThreadID {
		t.Errorf("web messages of dinner went to %+v then %+v; want one new thread of their own", next.Thread, again.Thread)
	}
}

// mustRead is a conversation's buffered messages.
func mustRead(t *testing.T, e *core.Engine, conversation string) []*history.Utterance {
	t.Helper()
	read, err := conn.Call(t.Context(), e, history.ActionRead, history.ReadArgs{Conversation: conversation})
	if err != nil {
		t.Fatal(err)
	}
	return read.Utterances
}

func TestLogMessageRefusesBadInputAndStoresNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Hello there, planning a trip.", "channel": "sms"}, nil)
	checkBad(t, cs, "log_message", []badCall{
		{name: "no speaker", args: map[string]any{"text": "hi"}, field: "speaker"},
		{name: "no text", args: map[string]any{"speaker": "user"}, field: "text"},
		{name: "text of the wrong type", args: map[string]any{"speaker": "user", "text": []string{"hi"}}, field: "text"},
		{name: "unknown speaker", args: map[string]any{"speaker": "bot", "text": "hi"}, kind: errs.Validation, field: "speaker"},
		{name: "blank text", args: map[string]any{"speaker": "user", "text": " "}, kind: errs.Validation, field: "text"},
		{name: "blank text on a channel", args: map[string]any{"speaker": "user", "text": " ", "channel": "sms"}, kind: errs.Validation, field: "text"},
		{name: "a system message on a channel", args: map[string]any{"speaker": "system", "text": "hi", "channel": "sms"}, kind: errs.Validation, field: "speaker"},
		{name: "unknown channel", args: map[string]any{"speaker": "user", "text": "hi", "channel": "fax"}, kind: errs.Validation, field: "channel"},
		{name: "unknown thread", args: map[string]any{"speaker": "user", "text": "hi", "channel": "web", "thread_id": "nope"}, kind: errs.NotFound, field: "nope"},
		{name: "bad conversation", args: map[string]any{"speaker": "user", "text": "hi", "channel": "sms", "conversation": "a/b"}, kind: errs.Validation, field: "conversation"},
		{name: "new thread on an implicit channel", args: map[string]any{"speaker": "user", "text": "hi", "channel": "sms", "new_thread": true}, kind: errs.Validation, field: "new_thread"},
	}, historySnapshot(t, e))
}

func TestSearchHistoryFindsMessagesByWords(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	for _, m := range []struct{ speaker, text string }{
		{"user", "I'm planning Maria's birthday party."},
		{"assistant", "Happy to help with the party."},
		{"user", "What's the weather tomorrow?"},
	} {
		callTool(t, cs, "log_message", map[string]any{"speaker": m.speaker, "text": m.text, "conversation": "c"}, nil)
	}
	var out SearchHistoryOutput
	callTool(t, cs, "search_history", map[string]any{"query": "party", "conversation": "c"}, &out)
	if len(out.Results) != 2 || !strings.Contains(out.Results[0].Text, "party") || out.Results[0].Score <= 0 || out.Results[0].Lexical <= 0 {
		t.Fatalf("search party = %+v; want the two party messages, scored", out.Results)
	}
	callTool(t, cs, "search_history", map[string]any{"query": "party", "conversation": "c", "speaker": "assistant"}, &out)
	if len(out.Results) != 1 || out.Results[0].Speaker != "assistant" || out.Results[0].Index != 1 {
		t.Errorf("search party by the assistant = %+v; want message 1", out.Results)
	}
}

func TestSearchHistoryRefusesBadInput(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "hello", "conversation": "c"}, nil)
	checkBad(t, cs, "search_history", []badCall{
		{name: "no query", args: map[string]any{"conversation": "c"}, field: "query"},
		{name: "limit of the wrong type", args: map[string]any{"query": "hello", "limit": "all"}, field: "limit"},
		{name: "blank query", args: map[string]any{"query": " ", "conversation": "c"}, kind: errs.Validation, field: "query"},
		{name: "unknown speaker", args: map[string]any{"query": "hello", "speaker": "bot", "conversation": "c"}, kind: errs.Validation, field: "speaker"},
		{name: "unknown conversation", args: map[string]any{"query": "hello", "conversation": "nope"}, kind: errs.NotFound, field: "nope"},
	}, historySnapshot(t, e))
}

func TestConversationSummaryIsWhatLeftTheBuffer(t *testing.T) {
	e := newEngine(t)
	size := 2
	if _, err := conn.Call(t.Context(), e, history.ActionConfigure, history.ConfigureRequest{Conversation: "c", BufferSize: &size}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, New(e, Options{}))
	var out ConversationSummaryOutput
	callTool(t, cs, "conversation_summary", map[string]any{"conversation": "c"}, &out)
	if out.Text != "" || out.Covered != 0 {
		t.Fatalf("summary before any eviction = %+v; want it empty", out)
	}
	for _, text := range []string{"Maria's party is on Saturday at the lake house.", "Bring the blue tablecloth.", "Order the cake from Rosa's bakery.", "Invite the neighbours too."} {
		callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": text, "conversation": "c"}, nil)
	}
	callTool(t, cs, "conversation_summary", map[string]any{"conversation": "c"}, &out)
	if out.Conversation != "c" || out.Covered != 2 || !strings.Contains(out.Text, "Maria") || out.Tokens == 0 || out.Writer != "extractive" || out.UpdatedAt == "" {
		t.Errorf("summary after two evictions = %+v; want the first two messages summed up, offline", out)
	}
}

func TestConversationSummaryRefusesBadInput(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "hello", "conversation": "c"}, nil)
	checkBad(t, cs, "conversation_summary", []badCall{
		{name: "token_limit of the wrong type", args: map[string]any{"conversation": "c", "token_limit": "lots"}, field: "token_limit"},
		{name: "token_limit zero", args: map[string]any{"conversation": "c", "token_limit": 0}, kind: errs.Validation, field: "token_limit"},
		{name: "unknown conversation", args: map[string]any{"conversation": "nope"}, kind: errs.NotFound, field: "nope"},
		{name: "bad conversation", args: map[string]any{"conversation": "a/b"}, kind: errs.Validation, field: "conversation"},
	}, historySnapshot(t, e))
}

func TestThreadContextAssemblesTheNextTurn(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var q LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "What's the weather in New York?", "channel": "sms"}, &q)
	callTool(t, cs, "log_message", map[string]any{"speaker": "assistant", "text": "Sunny, 72°F.", "channel": "sms"}, nil)
	var out ThreadContextOutput
	callTool(t, cs, "thread_context", map[string]any{"thread_id": q.Thread.ThreadID, "input": "And on Thursday?"}, &out)
	if out.ThreadID != q.Thread.ThreadID || out.Channel != "sms" || !strings.Contains(out.CurrentQuestion, "Thursday") ||
		len(out.PreviousQuestions) != 1 || !strings.HasPrefix(out.PreviousQuestions[0].Answer, "Sunny, 72°F") || !strings.Contains(out.Text, "New York") ||
		len(out.Threads) != 1 || !out.Threads[0].Current {
		t.Fatalf("thread_context = %+v; want the New York question and its answer, for Thursday's", out)
	}
	direct, err := conn.Call(t.Context(), e, episodic.ActionEpisodeContext, episodic.ContextArgs{ThreadID: q.Thread.ThreadID, Input: "And on Thursday?"})
	if err != nil || direct.Context.Text != out.Text {
		t.Errorf("episode.context text = %q, %v; want the tool's %q", direct.Context.Text, err, out.Text)
	}
}

func TestThreadContextRefusesBadInput(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var q LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "What's the weather in New York?", "channel": "sms"}, &q)
	checkBad(t, cs, "thread_context", []badCall{
		{name: "no thread", args: map[string]any{}, field: "thread_id"},
		{name: "thread of the wrong type", args: map[string]any{"thread_id": 7}, field: "thread_id"},
		{name: "unknown thread", args: map[string]any{"thread_id": "nope"}, kind: errs.NotFound, field: "nope"},
		{name: "unknown channel", args: map[string]any{"thread_id": q.Thread.ThreadID, "channel": "fax"}, kind: errs.Validation, field: "channel"},
	}, historySnapshot(t, e))
}

// thread_id and new_thread only mean something with a channel: without
// one they are refused, not dropped, so that an agent that forgot the
// channel does not believe its message went to the thread.
func TestLogMessageRefusesThreadFieldsWithoutAChannel(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var first LogMessageOutput
	callTool(t, cs, "log_message", map[string]any{"speaker": "user", "text": "Hello there, planning a trip.", "channel": "web"}, &first)
	if first.Thread == nil {
		t.Fatal("a message on web went to no thread")
	}
	checkBad(t, cs, "log_message", []badCall{
		{name: "thread_id without a channel", args: map[string]any{"speaker": "user", "text": "hi", "thread_id": first.Thread.ThreadID}, kind: errs.Validation, field: "channel"},
		{name: "new_thread without a channel", args: map[string]any{"speaker": "user", "text": "hi", "new_thread": true}, kind: errs.Validation, field: "channel"},
	}, historySnapshot(t, e))
}
