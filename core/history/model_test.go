package history_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// TestModelSummary: with a model, every eviction asks it to fold the new
// utterances into the summary so far; its answer becomes the summary when
// within the limit, is cut to the limit when longer, and a failing model
// leaves the extractive summary in service with a trace note.
func TestModelSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("The model goes on and on about Lisbon, budgets and flights. ", 40)
	model := &llmtest.Scripted{Answers: []llmtest.Answer{
		llmtest.Text("Maria plans a Lisbon trip on March 3rd."),
		llmtest.Text(long),
		llmtest.Fail(errors.New("model server down")),
	}}
	r := newRigWith(t, rigOptions{llm: model})
	r.configure(map[string]any{"buffer_size": 2, "summary_token_limit": 50})
	lines := []string{
		"Maria wants to fly to Lisbon on March 3rd.",
		"The budget is $1,850 for two.",
		"Book the TAP flight.",
		"Reserve the Alfama guesthouse.",
		"Plan a day trip to Sintra on Thursday.",
	}
	r.write("", "user", lines[0])
	r.write("", "assistant", lines[1])
	if model.Calls() != 0 {
		t.Fatalf("the model was asked %d times before any eviction", model.Calls())
	}

	// First eviction: no summary so far; the new utterance in the prompt.
	r.write("", "user", lines[2])
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls after the first eviction, want 1", len(reqs))
	}
	prompt := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if !strings.Contains(prompt, "[0] user: "+lines[0]) || strings.Contains(prompt, "Summary so far") {
		t.Errorf("first prompt:\n%s", prompt)
	}
	if !strings.Contains(reqs[0].System, "At most 50 tokens") || !strings.Contains(reqs[0].System, "Keep every name") {
		t.Errorf("system prompt: %s", reqs[0].System)
	}
	s := r.summary("", 0)
	if s.Writer != "model" || s.Text != "Maria plans a Lisbon trip on March 3rd." || !slices.Equal(s.Covers, []int{0}) {
		t.Errorf("after the first fold the summary is %+v", s)
	}
	// A tighter limit at read time cuts the model's summary.
	if s := r.summary("", 5); s.Writer != "model" || s.TokenCount > 5 || !strings.HasPrefix("Maria plans a Lisbon trip on March 3rd.", s.Text) {
		t.Errorf("token_limit 5: %+v", s)
	}

	// Second: the previous summary (the model's) and the new utterance; a
	// long answer is cut to summary_token_limit.
	r.write("", "assistant", lines[3])
	reqs = model.Requests()
	prompt = reqs[1].Messages[len(reqs[1].Messages)-1].Content
	if !strings.Contains(prompt, "Summary so far:\nMaria plans a Lisbon trip on March 3rd.") || !strings.Contains(prompt, "[1] assistant: "+lines[1]) ||
		strings.Contains(prompt, lines[0]) {
		t.Errorf("second prompt:\n%s", prompt)
	}
	s = r.summary("", 0)
	if s.Writer != "model" || s.TokenCount > 50 || s.TokenCount < 40 || !strings.HasPrefix(long, s.Text) || !slices.Equal(s.Covers, []int{0, 1}) {
		t.Errorf("a long answer: %d tokens, writer %s, covers %v, prefix %v", s.TokenCount, s.Writer, s.Covers, strings.HasPrefix(long, s.Text))
	}
	if n := llm.CountTokens(s.Text); n != s.TokenCount {
		t.Errorf("token_count %d, text %d", s.TokenCount, n)
	}

	// Third: the model fails; the extractive summary serves, and says so in the trace.
	r.write("", "user", lines[4])
	s = r.summary("", 0)
	if s.Writer != "extractive" || !slices.Equal(s.Covers, []int{0, 1, 2}) || s.TokenCount > 50 {
		t.Errorf("after a failure: %+v", s)
	}
	for _, want := range []string{"Maria", "Lisbon", "$1,850", "TAP"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("the extractive summary lacks %q: %q", want, s.Text)
		}
	}
	var tr struct {
		Entries []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"entries"`
	}
	r.do("trace.list", `{"kind": "history.summary"}`, &tr)
	if len(tr.Entries) != 1 || !strings.Contains(tr.Entries[0].Message, "model server down") || !strings.Contains(tr.Entries[0].Message, "extractive summary stays") {
		t.Errorf("trace: %+v", tr.Entries)
	}
	// The third prompt carried the model's (cut) summary as the summary so far.
	if p := model.Requests()[2].Messages[0].Content; !strings.Contains(p, "Summary so far:\nThe model goes on") || !strings.Contains(p, "[2] user: "+lines[2]) {
		t.Errorf("third prompt:\n%s", p)
	}
}

// TestModelSummaryExtractiveMeanwhile: the extractive summary is kept up to
// date underneath the model's, and is what the prompt shows when the model's
// is behind.
func TestModelSummaryExtractiveMeanwhile(t *testing.T) {
	t.Parallel()
	model := &llmtest.Scripted{Answers: []llmtest.Answer{llmtest.Fail(errors.New("busy")), llmtest.Text("Short model summary.")}}
	r := newRigWith(t, rigOptions{llm: model})
	r.configure(map[string]any{"buffer_size": 1})
	r.write("", "user", "Aisha Khan will book Hotel Adlon.")
	r.write("", "user", "Jonas confirmed €12,000.")
	r.write("", "user", "third")
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls", len(reqs))
	}
	// The first call failed, so the second prompt shows the extractive summary of [0].
	if p := reqs[1].Messages[0].Content; !strings.Contains(p, "Summary so far:\n[0] user: Aisha Khan will book Hotel Adlon.") || !strings.Contains(p, "[1] user: Jonas confirmed €12,000.") {
		t.Errorf("second prompt:\n%s", p)
	}
	if s := r.summary("", 0); s.Writer != "model" || s.Text != "Short model summary." || !slices.Equal(s.Covers, []int{0, 1}) {
		t.Errorf("summary %+v", s)
	}
}
