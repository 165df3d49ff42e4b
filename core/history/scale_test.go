package history_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// TestSearchOfALargeConversationRanksByPlainBM25: a conversation of more
// than HybridMaxUtterances (lowered here to 6) is searched by plain BM25
// over its postings — the same hits and scores as the postings' BM25 —
// with no hybrid index built, and each hit's why still names its
// matched terms, its lexical part and the plain ranker with the count
// that chose it. A smaller conversation keeps the hybrid ranker.
func TestSearchOfALargeConversationRanksByPlainBM25(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	history.SetHybridBounds(r.h, 6, 0, 0)
	lines := []string{
		"The budget review is on Thursday.",
		"Flights to Lisbon are booked.",
		"The budget stays at forty thousand.",
		"We cut the budget for the budget meeting.",
		"Lisbon in May, then Oslo.",
		"Nothing about money here.",
		"The review of the budget went well.",
		"Another line on the flight budget.",
	}
	for i, s := range lines {
		r.clock.Set(t0.Add(time.Duration(i) * time.Hour))
		r.write("big", speakerOf(i), s)
		if i < 6 {
			r.write("small", speakerOf(i), s)
		}
	}
	history.ForgetHybrid(r.h, "big")
	hits := r.search(map[string]any{"conversation": "big", "query": "budget review"})
	want, err := history.SearchPostings(r.h, context.Background(), r.call(), history.SearchRequest{Conversation: "big", Query: "budget review"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || len(hits) != len(want) {
		t.Fatalf("plain search: %v, want %d hits", indexes(hits), len(want))
	}
	for i, h := range hits {
		if h.UtteranceIndex != want[i].UtteranceIndex || h.RelevanceScore != want[i].RelevanceScore {
			t.Errorf("hit %d: %d (%v), want %d (%v)", i, h.UtteranceIndex, h.RelevanceScore, want[i].UtteranceIndex, want[i].RelevanceScore)
		}
		if p := h.part(history.PartPlainBM25); p.Name == "" || p.Value != 8 || p.Contribution != 0 {
			t.Errorf("hit %d: why %+v, want a %s part of 8 utterances", i, h.Why, history.PartPlainBM25)
		}
		if p := h.part(retrieval.PartLexical); p.Contribution != h.RelevanceScore || p.Value != h.Lexical {
			t.Errorf("hit %d: lexical part %+v, score %v", i, p, h.RelevanceScore)
		}
		var terms []string
		sum := 0.0
		for _, m := range h.Why.Terms {
			terms = append(terms, m.Term)
			sum += m.Score
		}
		if len(terms) == 0 || sum < h.Lexical-1e-5 || sum > h.Lexical+1e-5 {
			t.Errorf("hit %d (%q): terms %+v do not add up to %v", i, h.Text, h.Why.Terms, h.Lexical)
		}
	}
	if n := history.HybridLen(r.h, "big"); n != -1 {
		t.Errorf("a hybrid index of %d utterances was built for the large conversation", n)
	}
	// Quoted, and a when whose window a hit is inside.
	quoted := r.search(map[string]any{"conversation": "big", "query": `"the budget stays"`})
	if got := indexes(quoted); !slices.Equal(got, []int{2}) || quoted[0].part(history.PartQuote).Contribution != 1 || quoted[0].part(history.PartPlainBM25).Name == "" {
		t.Errorf("quoted: %v %+v, want [2] with a quote and a plain-bm25 part", got, quoted)
	}
	r.clock.Set(t0.Add(30 * 24 * time.Hour))
	when := r.search(map[string]any{"conversation": "big", "query": "Lisbon", "when": "a month ago"})
	if len(when) != 2 || !slices.Contains(when[0].Why.Windows, "a month ago") {
		t.Errorf("when: %v %+v, want 2 hits inside \"a month ago\"", indexes(when), when)
	}
	small := r.search(map[string]any{"conversation": "small", "query": "budget review"})
	if len(small) == 0 || small[0].part(history.PartPlainBM25).Name != "" || history.HybridLen(r.h, "small") != 6 {
		t.Errorf("small conversation: %+v, want the hybrid ranker", small)
	}
}

// TestHybridIndexesStayWithinTheirDocumentBound: past HybridMaxDocs
// (lowered here to 10) together, the index least recently searched or
// written is thrown away, and its conversation's next search builds it
// again.
func TestHybridIndexesStayWithinTheirDocumentBound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	history.SetHybridBounds(r.h, 0, 10, 0)
	for _, c := range []string{"a", "b", "c"} {
		for i := range 4 {
			r.write(c, speakerOf(i), "a line about the budget in "+c)
		}
		history.ForgetHybrid(r.h, c)
	}
	search := func(c string) {
		t.Helper()
		if hits := r.search(map[string]any{"conversation": c, "query": "budget"}); len(hits) != 4 {
			t.Fatalf("search %s: %d hits", c, len(hits))
		}
	}
	held := func() (out []string) {
		for _, c := range []string{"a", "b", "c"} {
			if history.HybridLen(r.h, c) >= 0 {
				out = append(out, c)
			}
		}
		return out
	}
	search("a")
	search("b")
	r.write("a", "user", "one more line about the budget") // a used after b
	if got := held(); !slices.Equal(got, []string{"a", "b"}) || history.HybridDocs(r.h) != 9 {
		t.Fatalf("held %v (%d utterances), want a and b (9)", got, history.HybridDocs(r.h))
	}
	search("c")
	if got := held(); !slices.Equal(got, []string{"a", "c"}) || history.HybridDocs(r.h) != 9 {
		t.Errorf("after searching c: held %v (%d utterances), want a and c: b least recently used", got, history.HybridDocs(r.h))
	}
	builds := history.HybridBuilds(r.h)
	if hits := r.search(map[string]any{"conversation": "b", "query": "budget"}); len(hits) != 4 {
		t.Fatalf("search b again: %d hits", len(hits))
	}
	if history.HybridBuilds(r.h) != builds+1 {
		t.Errorf("searching the evicted b did not build its index again")
	}
	if got := held(); !slices.Equal(got, []string{"b", "c"}) || history.HybridEvictions(r.h) != 2 {
		t.Errorf("after searching b: held %v (%d evictions), want b and c", got, history.HybridEvictions(r.h))
	}
}

// TestWriteToALargeIndexAppendsWithoutRebuilding: a write whose turn
// makes earlier turns read differently (a new name one opened a sentence
// with) builds a small index again, but is appended to one of more than
// HybridRebuildMax utterances (lowered here to 3) without building it,
// and a search finds it.
func TestWriteToALargeIndexAppendsWithoutRebuilding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		rebuildMax int
		rebuilds   int64
	}{{"small index", 100, 1}, {"large index", 3, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			history.SetHybridBounds(r.h, 0, 0, tc.rebuildMax)
			for i, s := range []string{"Pepper ran off again this morning.", "The gate was open.", "We looked by the river.", "Still no sign of her."} {
				r.write("", speakerOf(i), s)
			}
			builds := history.HybridBuilds(r.h)
			r.write("", "user", "I found Pepper under the porch.")
			if got := history.HybridRebuilds(r.h); got != tc.rebuilds {
				t.Errorf("the write built the index again %d times, want %d", got, tc.rebuilds)
			}
			hits := r.search(map[string]any{"query": "porch"})
			if len(hits) != 1 || hits[0].UtteranceIndex != 4 || history.HybridBuilds(r.h) != builds || history.HybridLen(r.h, "default") != 5 {
				t.Errorf("porch: %v, index of %d, %d builds from the store; want [4] from the index grown by the write", indexes(hits), history.HybridLen(r.h, "default"), history.HybridBuilds(r.h)-builds)
			}
		})
	}
}

// TestPlainSearchWithAModelBlendsSimilarity: with an embedding model, the
// plain ranker blends BM25 with the similarity (as history.search did
// before the hybrid ranker): an utterance close in meaning is found with
// no word of the query, and each hit's why adds up to its score.
func TestPlainSearchWithAModelBlendsSimilarity(t *testing.T) {
	t.Parallel()
	emb := embedder{concepts: map[string]string{"automobile": "car", "vehicle": "car", "car": "car"}}
	model := &llmtest.Scripted{EmbedFunc: emb.fn, Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") }}
	r := newRigWith(t, rigOptions{llm: model})
	history.SetHybridBounds(r.h, 3, 0, 0)
	for i, s := range []string{"an automobile", "vehicle repair", "the car is blue", "lunch with Maria on Tuesday"} {
		r.write("", speakerOf(i), s)
	}
	hits := r.search(map[string]any{"query": "car"})
	if got := indexes(hits); len(got) < 2 || got[0] != 2 || !slices.Contains(got, 0) {
		t.Fatalf("car: %v, want 2 first and the automobile's 0", got)
	}
	for _, h := range hits {
		sum := 0.0
		for _, p := range h.Why.Parts {
			sum += p.Contribution
		}
		if h.part(history.PartPlainBM25).Value != 4 || h.part(history.PartSemantic).Value != *h.Semantic || math.Abs(sum-h.RelevanceScore) > 2e-6 {
			t.Errorf("%q: why %+v does not add up to %v", h.Text, h.Why, h.RelevanceScore)
		}
	}
}

// TestHybridIndexesEvictedWhileSearchedStayRight: conversations searched
// and written at once, their indexes evicted from under each other (the
// bound lowered to 6 utterances), always answer with what they hold (go
// test -race watches the locks).
func TestHybridIndexesEvictedWhileSearchedStayRight(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	history.SetHybridBounds(r.h, 0, 6, 2)
	convs := []string{"a", "b", "c"}
	for _, c := range convs {
		for i := range 4 {
			r.write(c, speakerOf(i), "a line about the budget in "+c)
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, c := range convs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 20 {
				hits, err := r.h.Search(ctx, r.call(), history.SearchRequest{Conversation: c, Query: "budget", Limit: 50})
				if err != nil || len(hits) < 4 {
					t.Errorf("search %s: %d hits, %v", c, len(hits), err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := r.h.Write(ctx, r.call(), history.WriteRequest{Conversation: c, Speaker: "user", Text: "more on the budget"}); err != nil {
					t.Errorf("write %s: %v", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range convs {
		if hits, err := r.h.Search(ctx, r.call(), history.SearchRequest{Conversation: c, Query: "budget", Limit: 50}); err != nil || len(hits) != 9 {
			t.Errorf("search %s after: %d hits, %v; want 9", c, len(hits), err)
		}
	}
	if history.HybridEvictions(r.h) == 0 || history.HybridDocs(r.h) > 9 {
		t.Errorf("%d evictions, %d utterances held; want evictions and at most 9 (6, or the one index searched)", history.HybridEvictions(r.h), history.HybridDocs(r.h))
	}
}
