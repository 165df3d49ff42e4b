package history_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

type workingContext struct {
	Conversation string `json:"conversation"`
	Sections     struct {
		History *struct {
			Conversation string     `json:"conversation"`
			Utterances   []utt      `json:"utterances"`
			Summary      summaryOut `json:"summary"`
		} `json:"history"`
	} `json:"sections"`
}

type traceEntries struct {
	Entries []struct {
		TurnID  string `json:"turn_id"`
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"entries"`
}

// TestTurnStartAndEnd: turn.start brings the buffer and summary of the
// turn's conversation with a trace note; turn.end records what the turn said.
func TestTurnStartAndEnd(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"conversation": "c1", "buffer_size": 2})
	for i, s := range []string{"Maria Lopez books Lisbon for March 3rd.", "Noted, $1,850 budget.", "Add the Alfama hotel."} {
		r.write("c1", speakerOf(i), s)
	}
	var started struct {
		Context workingContext `json:"context"`
	}
	raw, err := r.tryIn("turn-1", "turn.start", `{"input": "what did we decide?", "conversation": "c1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &started); err != nil {
		t.Fatal(err)
	}
	h := started.Context.Sections.History
	if h == nil {
		t.Fatalf("turn.start has no history section: %s", raw)
	}
	if h.Conversation != "c1" || !slices.Equal(indexes(h.Utterances), []int{1, 2}) || !slices.Equal(h.Summary.Covers, []int{0}) ||
		!strings.Contains(h.Summary.Text, "Maria Lopez") {
		t.Errorf("history section: %+v", h)
	}
	var tr traceEntries
	r.do("trace.list", `{"turn": "turn-1", "kind": "history.retrieved"}`, &tr)
	if len(tr.Entries) != 1 || !strings.Contains(tr.Entries[0].Message, "history c1: 2 utterance(s)") || !strings.Contains(tr.Entries[0].Message, "summary of 1 earlier") {
		t.Errorf("trace: %+v", tr.Entries)
	}

	// turn.end records the turn's utterances, in the turn's transaction.
	raw, err = r.tryIn("turn-1", "turn.end", `{"updates": {"history": [
		{"speaker": "user", "text": "what did we decide?", "conversation": "c1"},
		{"speaker": "assistant", "text": "Lisbon on March 3rd.", "conversation": "c1", "metadata": {"model": "none"}}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	var ended struct {
		Committed struct {
			History struct {
				Utterances []utt `json:"utterances"`
			} `json:"history"`
		} `json:"committed"`
	}
	if err := json.Unmarshal(raw, &ended); err != nil {
		t.Fatal(err)
	}
	if got := ended.Committed.History.Utterances; len(got) != 2 || got[0].UtteranceIndex != 3 || got[1].Text != "Lisbon on March 3rd." {
		t.Errorf("committed: %s", raw)
	}
	read := r.read("c1", "")
	if !slices.Equal(texts(read), []string{"what did we decide?", "Lisbon on March 3rd."}) || string(read[1].Metadata) != `{"model":"none"}` {
		t.Errorf("after turn.end the buffer is %q", texts(read))
	}
	if read[0].TurnNumber != read[1].TurnNumber || read[0].TurnNumber != 3 {
		t.Errorf("turn numbers %d, %d", read[0].TurnNumber, read[1].TurnNumber)
	}
	if s := r.summary("c1", 0); !slices.Equal(s.Covers, []int{0, 1, 2}) {
		t.Errorf("evictions at turn.end: summary covers %v", s.Covers)
	}

	// A bad utterance in the updates fails the whole turn.end: nothing recorded.
	if _, err := r.tryIn("turn-2", "turn.start", `{"conversation": "c1"}`); err != nil {
		t.Fatal(err)
	}
	before := r.stats("c1")
	_, err = r.tryIn("turn-2", "turn.end", `{"updates": {"history": [{"speaker": "user", "text": "fine", "conversation": "c1"}, {"speaker": "nobody", "text": "x"}]}}`)
	if err == nil || !strings.Contains(err.Error(), "updates.history[1]") {
		t.Errorf("turn.end with a bad utterance: %v", err)
	}
	if after := r.stats("c1"); after.NextIndex != before.NextIndex {
		t.Errorf("a failed turn.end recorded utterances: %d → %d", before.NextIndex, after.NextIndex)
	}
}

// TestTurnStartUnknownConversation: a conversation with nothing yet gives an
// empty section, not an error.
func TestTurnStartUnknownConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var started struct {
		Context workingContext `json:"context"`
	}
	r.do("turn.start", `{"conversation": "fresh"}`, &started)
	if h := started.Context.Sections.History; h == nil || len(h.Utterances) != 0 || h.Summary.Text != "" {
		t.Errorf("fresh conversation: %+v", h)
	}
}

type chatResult struct {
	TurnID    string      `json:"turn_id"`
	Prompt    llm.Request `json:"prompt"`
	Answered  bool        `json:"answered"`
	Answer    string      `json:"answer"`
	LLMError  string      `json:"llm_error"`
	Committed map[string]json.RawMessage
}

// TestChatSend: chat.send records the user's utterance (and a model's
// answer), and the prompt it sends carries the summary in the system prompt
// and the buffer as the messages before the input.
func TestChatSend(t *testing.T) {
	t.Parallel()
	t.Run("offline", func(t *testing.T) {
		r := newRig(t)
		r.configure(map[string]any{"buffer_size": 3})
		for i, s := range []string{"Maria Lopez booked Lisbon for March 3rd.", "Budget $1,850.", "Hotel in Alfama.", "Sintra on Thursday."} {
			r.write("", speakerOf(i), s)
		}
		r.write("", "system", "The user prefers short answers.")
		var res chatResult
		r.do("chat.send", `{"text": "When do we leave?"}`, &res)
		if res.Answered {
			t.Errorf("answered offline: %+v", res)
		}
		if !strings.Contains(res.Prompt.System, "Summary of the earlier conversation:") || !strings.Contains(res.Prompt.System, "Maria Lopez") ||
			!strings.Contains(res.Prompt.System, "$1,850") || !strings.Contains(res.Prompt.System, "Note: The user prefers short answers.") {
			t.Errorf("system prompt:\n%s", res.Prompt.System)
		}
		var roles, contents []string
		for _, m := range res.Prompt.Messages {
			roles = append(roles, m.Role)
			contents = append(contents, m.Content)
		}
		if !slices.Equal(contents, []string{"Hotel in Alfama.", "Sintra on Thursday.", "When do we leave?"}) ||
			!slices.Equal(roles, []string{"user", "assistant", "user"}) {
			t.Errorf("messages %q %q", roles, contents)
		}
		read := r.read("", "")
		if len(read) != 3 || read[2].Text != "When do we leave?" || read[2].Speaker != "user" {
			t.Errorf("after chat.send the buffer is %q", texts(read))
		}
	})
	t.Run("with a model", func(t *testing.T) {
		model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
			if strings.HasPrefix(req.System, "You maintain the running summary") {
				return llmtest.Text("Earlier: Maria booked Lisbon.")
			}
			return llmtest.Text("  On March 3rd.  ")
		}}
		r := newRigWith(t, rigOptions{llm: model})
		r.configure(map[string]any{"buffer_size": 2})
		r.write("", "user", "Maria booked Lisbon for March 3rd.")
		r.write("", "assistant", "Great.")
		var res chatResult
		r.do("chat.send", `{"text": "When do we leave?"}`, &res)
		if !res.Answered || res.Answer != "On March 3rd." {
			t.Errorf("answer: %+v", res)
		}
		read := r.read("", "")
		if !slices.Equal(texts(read), []string{"When do we leave?", "On March 3rd."}) || read[1].Speaker != "assistant" {
			t.Errorf("buffer after chat.send: %q", texts(read))
		}
		if s := r.summary("", 0); s.Writer != "model" || s.Text != "Earlier: Maria booked Lisbon." {
			t.Errorf("summary: %+v", s)
		}
		// The chat request the model got is the prompt returned.
		var chatReqs []llm.Request
		for _, q := range model.Requests() {
			if !strings.HasPrefix(q.System, "You maintain") {
				chatReqs = append(chatReqs, q)
			}
		}
		if len(chatReqs) != 1 || chatReqs[0].System != res.Prompt.System || len(chatReqs[0].Messages) != 3 {
			t.Errorf("chat requests: %+v", chatReqs)
		}
		// The next exchange's system prompt carries the model's summary.
		r.do("chat.send", `{"text": "And back?"}`, &res)
		if !strings.Contains(res.Prompt.System, "Earlier: Maria booked Lisbon.") {
			t.Errorf("second system prompt:\n%s", res.Prompt.System)
		}
	})
}
