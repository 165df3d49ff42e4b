package history_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// recallContext is the part of turn.start's history section that recall
// fills.
type recallContext struct {
	Context struct {
		Sections struct {
			History struct {
				Utterances []utt `json:"utterances"`
				Recalled   []utt `json:"recalled"`
			} `json:"history"`
		} `json:"sections"`
	} `json:"context"`
}

// startTurn starts a turn of conversation c with the input and returns
// its history section.
func (r *rig) startTurn(turn, c, input string) recallContext {
	r.t.Helper()
	raw, err := r.tryIn(turn, "turn.start", map[string]any{"input": input, "conversation": c})
	if err != nil {
		r.t.Fatal(err)
	}
	var out recallContext
	if err := json.Unmarshal(raw, &out); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// A turn's context brings, beside the buffer, the evicted utterances that
// answer its input, each with the why of its search.
func TestTurnContextRecallsEvictedUtterancesThatAnswerTheInput(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"conversation": "c1", "buffer_size": 2})
	for i, s := range []string{
		"Our landlord raised the rent on the Fulton Street flat to $2,400.",
		"I booked the dentist for Thursday morning.",
		"The garden needs watering twice a week now.",
		"Let's order pizza tonight.",
		"Sounds good to me.",
	} {
		r.write("c1", speakerOf(i), s)
	}
	got := r.startTurn("turn-1", "c1", "How much is the rent on the flat now?")
	h := got.Context.Sections.History
	if !slices.Equal(indexes(h.Utterances), []int{3, 4}) {
		t.Fatalf("buffer %v, want 3, 4", indexes(h.Utterances))
	}
	if len(h.Recalled) == 0 || h.Recalled[0].UtteranceIndex != 0 || !h.Recalled[0].Evicted || h.Recalled[0].Why == nil {
		t.Fatalf("recalled %s, want the evicted utterance 0 first, with its why", jsonOf(t, h.Recalled))
	}
	for _, u := range h.Recalled {
		if !u.Evicted {
			t.Errorf("recalled utterance %d is in the buffer already", u.UtteranceIndex)
		}
	}
	var tr traceEntries
	r.do("trace.list", `{"turn": "turn-1", "kind": "history.retrieved"}`, &tr)
	if len(tr.Entries) != 1 || !strings.Contains(tr.Entries[0].Message, "recalled for the input") {
		t.Errorf("trace: %+v", tr.Entries)
	}
}

// Nothing is recalled when nothing was evicted, or when the input matches
// nothing evicted; an input far longer than a query may be is searched by
// its first words instead of failing the turn.
func TestTurnContextRecallsNothingUnlessSomethingEvictedAnswers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"conversation": "c1", "buffer_size": 2})
	r.write("c1", "user", "The rent is $2,400 now.")
	if got := r.startTurn("turn-1", "c1", "what is the rent?"); len(got.Context.Sections.History.Recalled) != 0 {
		t.Errorf("nothing evicted, yet recalled %s", jsonOf(t, got.Context.Sections.History.Recalled))
	}
	r.write("c1", "assistant", "Noted.")
	r.write("c1", "user", "Pizza tonight?")
	if got := r.startTurn("turn-2", "c1", "which dentist do we see?"); len(got.Context.Sections.History.Recalled) != 0 {
		t.Errorf("no evicted utterance answers, yet recalled %s", jsonOf(t, got.Context.Sections.History.Recalled))
	}
	if got := r.startTurn("turn-stop", "c1", "what is it?"); len(got.Context.Sections.History.Recalled) != 0 {
		t.Errorf("an input of stop words recalled %s", jsonOf(t, got.Context.Sections.History.Recalled))
	}
	r.write("c1", "user", "What is it?")
	r.write("c1", "assistant", "Nothing.")
	r.write("c1", "user", "Ok.")
	if got := r.startTurn("turn-stop2", "c1", "what is it?"); len(got.Context.Sections.History.Recalled) != 0 {
		t.Errorf("an input of stop words recalled %s", jsonOf(t, got.Context.Sections.History.Recalled))
	}
	long := "rent " + strings.Repeat("filler words everywhere ", 3000)
	got := r.startTurn("turn-3", "c1", long)
	if rec := got.Context.Sections.History.Recalled; len(rec) != 1 || rec[0].UtteranceIndex != 0 {
		t.Errorf("a long input recalled %s, want utterance 0 (found by its first words)", jsonOf(t, rec))
	}
}

// chat.send's prompt carries what the turn recalled, so that a model can
// answer about what left the buffer long ago.
func TestChatSendsPromptCarriesTheRecalledUtterances(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	for i, s := range []string{"The gate code for the Fulton Street flat is 4471.", "Thanks.", "Pizza tonight?", "Sure."} {
		r.write("", speakerOf(i), s)
	}
	var res chatResult
	r.do("chat.send", `{"text": "What was the gate code for the flat?"}`, &res)
	if !strings.Contains(res.Prompt.System, "Earlier in the conversation, what best answers this message:") ||
		!strings.Contains(res.Prompt.System, "user: The gate code for the Fulton Street flat is 4471.") {
		t.Errorf("system prompt:\n%s", res.Prompt.System)
	}
}

// Buffered utterances that match better do not crowd the evicted ones out
// of what a turn recalls.
func TestTurnContextRecallsEvictedUtterancesBehindManyBufferedMatches(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"conversation": "c1", "buffer_size": 15})
	r.write("c1", "user", "The rent went up in March.")
	for i := range 15 {
		r.write("c1", speakerOf(i), fmt.Sprintf("Rent, rent, rent: the rent talk number %d about the rent.", i))
	}
	got := r.startTurn("turn-1", "c1", "what about the rent?")
	if rec := got.Context.Sections.History.Recalled; len(rec) != 1 || rec[0].UtteranceIndex != 0 {
		t.Errorf("recalled %s, want the evicted utterance 0", jsonOf(t, rec))
	}
}
