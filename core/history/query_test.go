package history_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
)

// TestQueryForms runs every instruction history.query understands, checking
// what it understood and what it did.
func TestQueryForms(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 4})
	lines := []string{
		"Book the Lisbon flights for March 3rd.",
		"The budget for the trip is $2,400.",
		"Maria Lopez joins on Tuesday.",
		"Remember the hotel near Alfama.",
		"What about the rental car?",
		"Tom will pick it up at 9am.",
	}
	for i, s := range lines {
		var res struct {
			Utterance utt `json:"utterance"`
		}
		u := r.query("Add utterance", map[string]any{"speaker": speakerOf(i), "text": s, "metadata": map[string]any{"n": i}}, &res)
		if u != "history.write" || res.Utterance.Text != s || res.Utterance.UtteranceIndex != i || string(res.Utterance.Metadata) != `{"n":`+string(rune('0'+i))+`}` {
			t.Fatalf("Add utterance %d: understood %q, got %+v", i, u, res.Utterance)
		}
	}

	var all struct {
		Utterances []utt `json:"utterances"`
	}
	for _, q := range []string{"Get all utterances", "get all utterances.", "  GET   ALL UTTERANCES  "} {
		if u := r.query(q, nil, &all); u != "history.read" || !slices.Equal(texts(all.Utterances), lines[2:]) {
			t.Errorf("%q: %s %q", q, u, texts(all.Utterances))
		}
	}

	var sum struct {
		Summary summaryOut `json:"summary"`
	}
	if u := r.query("Get summary", map[string]any{"token_limit": 12}, &sum); u != "history.summary" ||
		sum.Summary.TokenCount > 12 || llm.CountTokens(sum.Summary.Text) != sum.Summary.TokenCount || !slices.Equal(sum.Summary.Covers, []int{0, 1}) {
		t.Errorf("Get summary (12): %s %+v", u, sum.Summary)
	}
	if r.query("Get summary", nil, &sum); !strings.Contains(sum.Summary.Text, "$2,400") {
		t.Errorf("Get summary: %+v", sum.Summary)
	}

	for q, want := range map[string][]string{
		"Get last 5 utterances":    lines[2:], // only 4 in the buffer
		"last 3":                   lines[3:],
		"Get the last 1 utterance": lines[5:],
		"get last 2":               lines[4:],
	} {
		var last struct {
			Utterances []utt `json:"utterances"`
		}
		if u := r.query(q, nil, &last); u != "history.last" || !slices.Equal(texts(last.Utterances), want) {
			t.Errorf("%q: %s %q, want %q", q, u, texts(last.Utterances), want)
		}
	}
	var lastN struct {
		Utterances []utt `json:"utterances"`
	}
	if u := r.query("get_last_n", map[string]any{"n": 2}, &lastN); u != "history.last" || !slices.Equal(texts(lastN.Utterances), lines[4:]) {
		t.Errorf("get_last_n {n: 2}: %s %q", u, texts(lastN.Utterances))
	}

	for _, q := range []string{"Search for Lisbon", "search lisbon", "Search for Lisbon?", "Find  LISBON flights!", "search for Lisbon."} {
		var hits struct {
			Results []utt `json:"results"`
		}
		if u := r.query(q, nil, &hits); u != "history.search" || len(hits.Results) == 0 || hits.Results[0].UtteranceIndex != 0 || !hits.Results[0].Evicted {
			t.Errorf("%q: %s %+v", q, u, hits.Results)
		}
	}
	var limited struct {
		Results []utt `json:"results"`
	}
	r.query("Search for the", map[string]any{"limit": 1}, &limited)
	if len(limited.Results) != 1 || !strings.Contains(strings.ToLower(limited.Results[0].Text), "the") {
		t.Errorf("Search for the (limit 1): %+v", limited.Results)
	}

	var st statsOut
	if u := r.query("Get stats", nil, &st); u != "history.stats" || st.Size != 4 || st.EvictedCount != 2 || st.NextIndex != 6 {
		t.Errorf("Get stats: %s %+v", u, st)
	}

	var del struct {
		Deleted utt `json:"deleted"`
	}
	if u := r.query("Delete utterance 2", nil, &del); u != "history.delete" || del.Deleted.UtteranceIndex != 2 || del.Deleted.Text != lines[2] {
		t.Errorf("Delete utterance 2: %s %+v", u, del.Deleted)
	}
	if got := r.read("", ""); !slices.Equal(indexes(got), []int{3, 4, 5}) {
		t.Errorf("after Delete utterance 2 the buffer is %v", indexes(got))
	}

	// Another conversation, named in data.
	r.query("Add utterance", map[string]any{"conversation": "other", "speaker": "system", "text": "elsewhere"}, nil)
	if r.query("Get all utterances", map[string]any{"conversation": "other"}, &all); !slices.Equal(texts(all.Utterances), []string{"elsewhere"}) {
		t.Errorf("conversation other: %q", texts(all.Utterances))
	}
}

// TestQueryUnsupported: anything else is an UnsupportedInstruction that
// lists what is understood, and changes nothing.
func TestQueryUnsupported(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("", "user", "something to keep")
	r.h.Settle()
	before := dump(t, r.e.Env().Store)
	for _, q := range []string{
		"Summarize everything and email it to Bob",
		"Delete all utterances",
		"Get last five utterances",
		"last -1",
		"add",
		"Forget the budget",
		"",
	} {
		res, err := r.try("history.query", map[string]any{"query": q, "data": map[string]any{"speaker": "user"}})
		if q == "" || q == "add" {
			// "" is refused as a missing argument; "add" with data lacking
			// text is a ValidationError: neither changes anything either.
			if err == nil {
				t.Errorf("%q succeeded: %s", q, res)
			}
			continue
		}
		e := checkErr(t, "history.query", q, res, err, errs.UnsupportedInstruction, "does not understand", "Get all utterances")
		if e.Details["understood"] == nil {
			t.Errorf("%q: the error does not list the understood forms: %+v", q, e.Details)
		}
	}
	sameDump(t, "unsupported instructions", before, dump(t, r.e.Env().Store))
}
