package history_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/retrieval"
)

// writeAt writes an utterance at a time of the engine clock, with
// metadata (nil for none).
func (r *rig) writeAt(at time.Time, speaker, text string, meta map[string]any) utt {
	r.t.Helper()
	r.clock.Set(at)
	args := map[string]any{"speaker": speaker, "text": text}
	if meta != nil {
		args["metadata"] = meta
	}
	var res struct {
		Utterance utt `json:"utterance"`
	}
	r.do("history.write", args, &res)
	return res.Utterance
}

// TestSearchWhenLiftsWhatWasSaidThen: "when" (and a time in the query)
// is read against the engine clock, and the utterances said inside it
// rank first, their why naming the window.
func TestSearchWhenLiftsWhatWasSaidThen(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.writeAt(time.Date(2025, 5, 12, 9, 0, 0, 0, time.UTC), "user", "We booked the flight to Lisbon for the conference trip.", nil)
	r.writeAt(time.Date(2025, 7, 20, 9, 0, 0, 0, time.UTC), "user", "The flight to Oslo was delayed twice, a long trip home.", nil)
	r.writeAt(time.Date(2025, 10, 2, 9, 0, 0, 0, time.UTC), "user", "Another flight next week, to Rome this time for the trip.", nil)
	r.clock.Set(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		args map[string]any
		want int
		expr string
	}{
		{map[string]any{"query": "flight trip", "when": "in May 2025"}, 0, "May 2025"},
		{map[string]any{"query": "flight trip", "when": "last summer"}, 1, "last summer"},
		{map[string]any{"query": "flight trip a month ago"}, 2, "a month ago"},
	} {
		hits := r.search(c.args)
		if len(hits) == 0 || hits[0].UtteranceIndex != c.want {
			t.Errorf("%v: %v, want %d first", c.args, indexes(hits), c.want)
			continue
		}
		if w := hits[0].Why; !slices.Contains(w.Windows, c.expr) || hits[0].part(retrieval.PartTime).Contribution <= 0 {
			t.Errorf("%v: why %+v, want the window %q", c.args, w, c.expr)
		}
	}
}

// TestSearchQuoteFindsTheTextAsWritten: a query wholly in double quotes
// finds the utterances holding that text, ignoring case, newest first,
// evicted ones too — and not those with the same words otherwise.
func TestSearchQuoteFindsTheTextAsWritten(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	lines := []string{
		/*0*/ "The gate code is 4471, don't share it.",
		/*1*/ "Is it 4471 or 4417? The code is the gate's.",
		/*2*/ "Reminder: THE GATE CODE IS 4471.",
		/*3*/ "what is it",
		/*4*/ "gate code, is it?",
	}
	for i, s := range lines {
		r.write("", speakerOf(i), s)
	}
	hits := r.search(map[string]any{"query": `"the gate code is 4471"`})
	if got := indexes(hits); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("quoted search: %v %q, want [2 0]", got, texts(hits))
	}
	if !hits[1].Evicted || hits[0].part(history.PartQuote).Value != 1 {
		t.Errorf("hits %+v", hits)
	}
	// Stop words only, curly quotes, a speaker.
	if got := indexes(r.search(map[string]any{"query": "“what is it”"})); !slices.Equal(got, []int{3}) {
		t.Errorf("“what is it”: %v", got)
	}
	if got := indexes(r.search(map[string]any{"query": `"gate code"`, "speaker": "user"})); !slices.Equal(got, []int{4, 2, 0}) {
		t.Errorf(`"gate code" of the user: %v`, got)
	}
	if got := r.search(map[string]any{"query": `"code is 4417"`}); len(got) != 0 {
		t.Errorf(`"code is 4417": %v`, indexes(got))
	}
}

// TestSearchIndexFollowsWritesAndForgetsDeletes: the first search builds
// the conversation's index; writes after it are appended (found at once,
// nothing rebuilt); a delete, a drop or a move throws it away, and no
// search shows what is gone.
func TestSearchIndexFollowsWritesAndForgetsDeletes(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendDurable})
	r.write("", "user", "The Kowalski invoice is overdue.")
	r.write("", "assistant", "I will pay the invoice today.")
	history.ForgetHybrid(r.h, "default") // as after a restart
	builds := history.HybridBuilds(r.h)
	if got := matching(t, r.search(map[string]any{"query": "invoice"})); len(got) != 2 {
		t.Fatalf("invoice: %v", indexes(got))
	}
	if history.HybridBuilds(r.h) != builds+1 {
		t.Fatalf("the first search built %d indexes", history.HybridBuilds(r.h)-builds)
	}
	r.write("", "user", "Another invoice came from Kowalski.")
	if got := matching(t, r.search(map[string]any{"query": "Kowalski invoice"})); len(got) != 3 || history.HybridBuilds(r.h) != builds+1 {
		t.Errorf("after a write: %v, %d builds", indexes(got), history.HybridBuilds(r.h)-builds)
	}
	r.do("history.delete", map[string]any{"utterance_index": 0}, nil)
	if n := history.HybridLen(r.h, "default"); n != -1 {
		t.Errorf("after a delete the index holds %d", n)
	}
	for _, q := range []string{"Kowalski invoice", `"the Kowalski invoice is overdue"`, "overdue"} {
		for _, h := range r.search(map[string]any{"query": q}) {
			if h.UtteranceIndex == 0 {
				t.Errorf("%s: the deleted utterance was found", q)
			}
		}
	}
	if got := matching(t, r.search(map[string]any{"query": "invoice"})); !slices.Equal(indexes(got), []int{2, 1}) && !slices.Equal(indexes(got), []int{1, 2}) {
		t.Errorf("after the delete: %v", indexes(got))
	}
	r.do("history.backend", map[string]any{"backend": history.BackendInMemory}, nil)
	if n := history.HybridLen(r.h, "default"); n != -1 {
		t.Errorf("after a move the index holds %d", n)
	}
	if got := matching(t, r.search(map[string]any{"query": "invoice"})); len(got) != 2 {
		t.Errorf("after the move: %v", indexes(got))
	}
	r.do("history.drop", map[string]any{"conversation": "default"}, nil)
	if got := r.search(map[string]any{"query": "invoice"}); len(got) != 0 {
		t.Errorf("after the drop: %v", indexes(got))
	}
	r.write("", "user", "A fresh start, no bills.")
	if got := r.search(map[string]any{"query": "invoice"}); len(got) != 0 {
		t.Errorf("a new conversation of the name finds the dropped one's: %v", indexes(got))
	}
}

// TestSearchReadsSpeakerSessionCaptionAndTagsFromMetadata: a speaker's
// name, an image caption and tags in the metadata are searched; a
// session in the metadata, or else a pause of 4 hours, bounds the turns
// a match lifts.
func TestSearchReadsSpeakerSessionCaptionAndTagsFromMetadata(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	day := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC)
	r.writeAt(day, "user", "Look at this tram!", map[string]any{"speaker": "Maria", "image_caption": "a tram in Lisbon"})         // 0
	r.writeAt(day.Add(time.Minute), "assistant", "Lovely colours.", map[string]any{"speaker": "Tom"})                             // 1
	r.writeAt(day.Add(5*time.Hour), "assistant", "Good night.", map[string]any{"speaker": "Tom"})                                 // 2: a new session
	r.writeAt(day.Add(6*time.Hour), "user", "The plan is settled.", map[string]any{"speaker": "Maria", "tags": []string{"trip"}}) // 3
	r.writeAt(day.Add(6*time.Hour+time.Minute), "assistant", "Great.", map[string]any{"session": "other"})                        // 4
	tram := r.search(map[string]any{"query": "tram"})
	if len(tram) == 0 || tram[0].UtteranceIndex != 0 || !slices.ContainsFunc(tram[0].Why.Terms, func(m retrieval.TermMatch) bool { return m.Field == "caption" }) {
		t.Fatalf("tram: %+v", tram)
	}
	// 1 is in 0's session, which 0's match lifts; 2, said five hours
	// after 1, is in a session of its own.
	byIndex := map[int]utt{}
	for _, h := range matching(t, r.search(map[string]any{"query": "tram Lisbon colours night"})) {
		byIndex[h.UtteranceIndex] = h
	}
	lex := func(i int) float64 { return byIndex[i].part(retrieval.PartLexical).Value }
	if len(byIndex) != 3 || lex(0) <= lex(1) || byIndex[1].part(retrieval.PartSession).Value != lex(0) || byIndex[2].part(retrieval.PartSession).Value != lex(2) {
		t.Errorf("tram Lisbon colours night: session parts %+v %+v %+v", byIndex[0].Why, byIndex[1].Why, byIndex[2].Why)
	}
	if got := matching(t, r.search(map[string]any{"query": "Maria"})); !slices.Equal(indexes(got), []int{3, 0}) && !slices.Equal(indexes(got), []int{0, 3}) {
		t.Errorf("Maria: %v", indexes(got))
	}
	trip := r.search(map[string]any{"query": "trip"})
	if got := indexes(trip); len(got) == 0 || got[0] != 3 || slices.Contains(got, 4) {
		t.Errorf("trip: %v, want 3 by its tag and not 4 of another session", got)
	}
}

// TestSearchQueriesOfTenThousandWordsChangeNothing: a pasted document as
// a query is refused before anything is read or built.
func TestSearchQueriesOfTenThousandWordsChangeNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("", "user", "budget flight")
	history.ForgetHybrid(r.h, "default")
	builds := history.HybridBuilds(r.h)
	_, err := r.h.Search(context.Background(), r.call(), history.SearchRequest{Query: strings.Repeat("budget flight ", 5000)})
	if err == nil || !strings.Contains(err.Error(), "query") {
		t.Fatalf("err = %v", err)
	}
	if history.HybridBuilds(r.h) != builds {
		t.Errorf("a refused query built the index")
	}
}

// TestSearchWhenAfterAnEventNoUtteranceMatchesNamesWhen: "after the
// move" when nothing was said of a move places nothing: a validation
// error naming when.
func TestSearchWhenAfterAnEventNoUtteranceMatchesNamesWhen(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("", "user", "We booked the flight to Lisbon.")
	_, err := r.h.Search(context.Background(), r.call(), history.SearchRequest{Query: "flight", When: "after the move"})
	if err == nil || !strings.HasPrefix(err.Error(), "when: ") || !strings.Contains(err.Error(), "move") {
		t.Fatalf("err = %v", err)
	}
}

// TestWritesKeepOnlyTheHybridIndexInMemory: a conversation created and
// grown by writes keeps its hybrid index in memory, not the BM25
// postings as well, which no search reads any more.
func TestWritesKeepOnlyTheHybridIndexInMemory(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 5 {
		r.write("fresh", speakerOf(i), "a line about the budget")
	}
	if _, ok := history.CachedIndexVersion(r.h, "fresh"); ok {
		t.Errorf("the BM25 postings of a written conversation are kept in memory")
	}
	if n := history.HybridLen(r.h, "fresh"); n != 5 {
		t.Errorf("the hybrid index holds %d utterances, want 5", n)
	}
}
