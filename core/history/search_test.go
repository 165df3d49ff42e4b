package history_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func TestSearchStemming(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i, s := range []string{
		"We deployed the new version yesterday.",
		"She deploys every Friday.",
		"Deployment scripts live in the ops repo.",
		"The cat sat on the mat.",
	} {
		r.write("", speakerOf(i), s)
	}
	hits := matching(t, r.search(map[string]any{"query": "deploying"}))
	got := indexes(hits)
	slices.Sort(got)
	// "deploying", "deployed", "deploys" share the stem "deploy";
	// "deployment" is stemmed to "deploy" too by Porter2.
	if !slices.Contains(got, 0) || !slices.Contains(got, 1) || slices.Contains(got, 3) {
		t.Errorf("deploying found %v (%q)", got, texts(hits))
	}
	for _, h := range hits {
		if !hasTerm(h.Text, "deploying") {
			t.Errorf("%q has no form of deploying", h.Text)
		}
	}
}

func TestSearchExactKeywordAlwaysMatches(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	lines := []string{
		"What is it that you want?",
		"It is what it is.",
		"Zoë's café in Zürich opens at 7:30.",
		"Ticket OPS-4021 is about the $40,000 invoice.",
		"Maria's flight lands at 10pm.",
		"don't forget the tickets",
		"e-mail me at maria@example.com",
		"The weather is nice.",
	}
	for i, s := range lines {
		r.write("", speakerOf(i), s)
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{"what is it", 1}, // stop words only: the literal fallback, best match first
		{"it", 1},         // one stop word
		{"Zürich", 2},     // unicode
		{"zoë's", 2},      // possessive
		{"café", 2},       // accents
		{"OPS-4021", 3},   // an id
		{"40,000", 3},     // a number
		{"Maria", 4},      // Maria's
		{"don't", 5},      // a contraction
		{"maria@example.com", 6},
		{"7:30", 2},
	} {
		hits := r.search(map[string]any{"query": c.query})
		// Stop words only: the literal fallback's best first; any other
		// word: found (the ranker's priors may put a longer turn first).
		literal := c.query == "what is it" || c.query == "it"
		if len(hits) == 0 || literal && hits[0].UtteranceIndex != c.want || !slices.Contains(indexes(matching(t, hits)), c.want) {
			t.Errorf("search %q: best hit %v %q, want utterance %d", c.query, indexes(hits), texts(hits), c.want)
			continue
		}
		for i, h := range hits {
			if i > 0 && h.RelevanceScore > hits[i-1].RelevanceScore {
				t.Errorf("search %q: scores not descending", c.query)
			}
		}
	}
	// The stop-word fallback finds only utterances with every word of the query.
	for _, h := range r.search(map[string]any{"query": "what is it"}) {
		for _, w := range []string{"what", "is", "it"} {
			if !slices.Contains(text.Words(h.Text), w) {
				t.Errorf("what is it: %q lacks %q", h.Text, w)
			}
		}
	}
}

func TestSearchEvictedSpeakerLimit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 5})
	for i := range 30 {
		sp := history.Speakers[i%3]
		s := "routine line"
		if i%2 == 0 {
			s = "the budget review " + strings.Repeat("budget ", i%4)
		}
		r.write("", sp, s)
	}
	all := matching(t, r.search(map[string]any{"query": "budget", "limit": 100}))
	if len(all) != 15 {
		t.Errorf("budget found %d, want the 15 saying it", len(all))
	}
	evicted := 0
	for i, h := range all {
		if h.Evicted != (h.UtteranceIndex < 25) {
			t.Errorf("utterance %d: evicted %v", h.UtteranceIndex, h.Evicted)
		}
		if h.Evicted {
			evicted++
		}
		if i > 0 && h.RelevanceScore > all[i-1].RelevanceScore {
			t.Errorf("scores not descending at %d", i)
		}
		if h.Semantic != nil || h.Lexical != h.RelevanceScore {
			t.Errorf("without a model the score is the hybrid ranker's: %+v", h)
		}
	}
	if evicted < 10 {
		t.Errorf("only %d evicted utterances found", evicted)
	}
	if got := r.search(map[string]any{"query": "budget"}); len(got) != 10 {
		t.Errorf("the default limit gives %d, want 10", len(got))
	}
	if got := r.search(map[string]any{"query": "budget", "limit": 3}); len(got) != 3 || got[0].UtteranceIndex != all[0].UtteranceIndex {
		t.Errorf("limit 3 gives %v", indexes(got))
	}
	users := r.search(map[string]any{"query": "budget", "speaker": "user", "limit": 100})
	if len(matching(t, users)) != 5 {
		t.Errorf("speaker user: %d results, want 5", len(users))
	}
	for _, h := range users {
		if h.Speaker != "user" {
			t.Errorf("speaker filter let through %s", h.Speaker)
		}
	}
	if got := r.search(map[string]any{"query": "budget", "speaker": "system", "limit": 2}); len(got) != 2 || got[0].Speaker != "system" {
		t.Errorf("speaker system, limit 2: %+v", got)
	}
}

// labelled is a small conversation with queries whose best hit is known.
var labelled = []string{
	/*0*/ "Let's book the flights to Lisbon for March 3rd.",
	/*1*/ "The hotel in Alfama costs 140 euros a night.",
	/*2*/ "Can you check the weather forecast for next week?",
	/*3*/ "Our quarterly budget review is on Thursday at 2pm.",
	/*4*/ "I moved the budget spreadsheet to the shared drive.",
	/*5*/ "The dentist appointment was rescheduled to Monday.",
	/*6*/ "Sam fixed the data race in the rate limiter.",
	/*7*/ "Please renew my passport before the trip.",
	/*8*/ "The invoice from Kowalski Builders is overdue.",
	/*9*/ "We need to hire two backend engineers this quarter.",
	/*10*/ "The marketing launch slipped to October.",
	/*11*/ "Grace will cache the Redis lookups.",
	/*12*/ "My daughter's school play is on Friday evening.",
	/*13*/ "The car needs new tires before winter.",
	/*14*/ "Remind me to call my mother on her birthday.",
	/*15*/ "The flight back from Lisbon leaves at 11am.",
	/*16*/ "Interviews for the engineering roles start next Monday.",
	/*17*/ "The Redis cluster ran out of memory last night.",
	/*18*/ "Add milk, eggs and bread to the shopping list.",
	/*19*/ "The budget for the offsite is 12,000 euros.",
	/*20*/ "Pay the Kowalski invoice by the end of the month.",
	/*21*/ "The new rate limits are 500 requests per minute.",
	/*22*/ "I prefer a window seat on long flights.",
	/*23*/ "The dentist said to floss more.",
	/*24*/ "The launch event needs a venue for 200 guests.",
	/*25*/ "Winter tires are cheaper in October.",
	/*26*/ "Mother's birthday is on May 5th.",
	/*27*/ "Hiring managers meet every Tuesday.",
	/*28*/ "The weather in Lisbon will be sunny.",
	/*29*/ "Shopping for the offsite snacks is done.",
}

var labelledQueries = []struct {
	query string
	best  int
}{
	{"flight back from Lisbon", 15},
	{"pay invoice Kowalski", 20},
	{"hiring engineers", 9},
	{"Redis memory", 17},
	{"mother birthday date", 26},
	{"dentist rescheduled", 5},
	{"budget offsite", 19},
	{"car tires before winter", 13},
}

// TestSearchPrecisionAt1 ranks a labelled set and reports precision@1.
func TestSearchPrecisionAt1(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 10}) // two thirds in the archive
	for i, s := range labelled {
		r.write("", speakerOf(i), s)
	}
	right := 0
	for _, q := range labelledQueries {
		hits := r.search(map[string]any{"query": q.query, "limit": 3})
		if len(hits) > 0 && hits[0].UtteranceIndex == q.best {
			right++
		} else {
			t.Logf("%q: best hits %v, want %d", q.query, indexes(hits), q.best)
		}
	}
	p := float64(right) / float64(len(labelledQueries))
	t.Logf("precision@1 = %.2f (%d/%d) over %d utterances", p, right, len(labelledQueries), len(labelled))
	if p < 0.8 {
		t.Errorf("precision@1 %.2f < 0.8", p)
	}
}

// embedder is a scripted embedding model: each text's vector is the sum of
// its words' vectors (fixed pseudo-random ones), plus the vector of a
// concept for the words listed under it, so that synonyms land close.
type embedder struct {
	concepts map[string]string // word → concept
}

const dims = 64

func wordVector(w string) []float32 {
	v := make([]float32, dims)
	h := fnv.New64a()
	h.Write([]byte(w))
	seed := h.Sum64()
	for i := range v {
		seed = seed*6364136223846793005 + 1442695040888963407
		v[i] = float32(int64(seed>>11)%2001-1000) / 1000
	}
	return v
}

func (e embedder) embed(s string) []float32 {
	out := make([]float32, dims)
	for _, w := range text.Words(s) {
		weight := float32(1)
		if text.Term(w) == "" {
			weight = 0.25 // stop words weigh little
		}
		if c, ok := e.concepts[w]; ok {
			w = c
		}
		for i, x := range wordVector(w) {
			out[i] += weight * x
		}
	}
	return out
}

func (e embedder) fn(req llm.EmbedRequest) ([][]float32, error) {
	var out [][]float32
	for _, s := range req.Texts {
		out = append(out, e.embed(s))
	}
	return out, nil
}

func cos(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// TestSearchSemantic: with embeddings, the hybrid ranking is fused with
// the ranking by similarity to the query (reciprocal rank fusion): an
// utterance sharing no word with the query but close in meaning is found,
// above those further away, and every hit's why says its similarity and
// both ranks.
func TestSearchSemantic(t *testing.T) {
	t.Parallel()
	emb := embedder{concepts: map[string]string{
		"automobile": "car", "vehicle": "car", "car": "car",
		"physician": "doctor", "doctor": "doctor",
	}}
	model := &llmtest.Scripted{EmbedFunc: emb.fn, Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") }}
	r := newRigWith(t, rigOptions{llm: model})
	lines := []string{
		/*0*/ "an automobile", // the concept of "car" and a stop word: cosine ~0.97
		/*1*/ "vehicle repair", // car + repair: ~0.7
		/*2*/ "physician", // another concept
		/*3*/ "the car is blue", // shares the word
		/*4*/ "lunch with Maria on Tuesday", // unrelated
		/*5*/ "vehicle repair shop downtown", // further: car + 3 words
	}
	for i, s := range lines {
		// Each in a session of its own: no match lifts its neighbours.
		r.do("history.write", map[string]any{"speaker": speakerOf(i), "text": s, "metadata": map[string]any{"session": i}}, nil)
	}
	// The vectors follow the writes in the background (core/embed).
	r.h.Settle()
	q := "car"
	hits := r.search(map[string]any{"query": q})
	got := indexes(hits)
	if len(got) < 2 || got[0] != 3 || got[1] != 0 {
		t.Errorf("semantic search for car: %v, want the word's 3 then the automobile's 0 first", got)
	}
	if at := slices.Index(got, 4); at >= 0 && at < slices.Index(got, 0) {
		t.Errorf("the unrelated lunch ranks above the automobile: %v", got)
	}
	for i, h := range hits {
		sim := cos(emb.embed(q), emb.embed(h.Text))
		if h.Semantic == nil || math.Abs(*h.Semantic-sim) > 1e-4 {
			t.Errorf("%q: semantic score %v, cosine %.4f", h.Text, h.Semantic, sim)
		}
		if i > 0 && h.RelevanceScore > hits[i-1].RelevanceScore {
			t.Errorf("scores not descending")
		}
		f := h.Why.Fusion
		if f == nil || f.Similarity == nil || math.Abs(*f.Similarity-sim) > 1e-4 || f.VectorRank == 0 || f.K != retrieval.RRFK {
			t.Fatalf("%q: why.fusion %+v", h.Text, f)
		}
		want := 1 / float64(f.K+f.VectorRank)
		if f.LexicalRank > 0 {
			want += 1 / float64(f.K+f.LexicalRank)
		}
		if math.Abs(h.RelevanceScore-want) > 1e-6 || math.Abs(f.Score-want) > 1e-6 {
			t.Errorf("%q: score %v, fusion %v, want 1/(k+ranks) = %v", h.Text, h.RelevanceScore, f.Score, want)
		}
		if (f.LexicalRank > 0) != (h.Lexical > 0) {
			t.Errorf("%q: lexical rank %d, lexical score %v", h.Text, f.LexicalRank, h.Lexical)
		}
	}
	// The embeddings were asked for: one per utterance (in batches),
	// one per query.
	n := 0
	for _, req := range model.EmbedRequests() {
		n += len(req.Texts)
	}
	if n != len(lines)+1 {
		t.Errorf("%d texts embedded, want %d: %v", n, len(lines)+1, model.EmbedRequests())
	}
	// Close in meaning only is a hit only when close indeed
	// (search.SemanticThreshold): "vehicle repair" (~0.7) is not one for
	// "car", nor is anything for a query about nothing said.
	for _, h := range hits {
		if h.Lexical == 0 && *h.Semantic < search.SemanticThreshold {
			t.Errorf("%q: found on a similarity of %v alone", h.Text, *h.Semantic)
		}
		sum := 0.0
		for _, p := range h.Why.Parts {
			sum += p.Contribution
		}
		if math.Abs(sum-h.Why.Score) > 1e-4 {
			t.Errorf("%q: why's parts add up to %v, its score is %v", h.Text, sum, h.Why.Score)
		}
	}
	if hits := r.search(map[string]any{"query": "which planet has the most moons"}); len(hits) != 0 {
		t.Errorf("a query about nothing said found %v", texts(hits))
	}

	// A failing embedder leaves search lexical.
	broken := &llmtest.Scripted{Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") }}
	b := newRigWith(t, rigOptions{llm: broken})
	for i, s := range lines {
		b.write("", speakerOf(i), s)
	}
	if hits := matching(t, b.search(map[string]any{"query": q})); !slices.Equal(indexes(hits), []int{3}) || hits[0].Semantic != nil || hits[0].Why.Fusion != nil {
		t.Errorf("without embeddings: %+v", hits)
	}
}

// TestSearchMissingEmbedding: an utterance whose embedding failed is still
// found by its words, fused on its lexical rank alone: it has no
// similarity, and the utterance found both ways ranks above it.
func TestSearchMissingEmbedding(t *testing.T) {
	t.Parallel()
	emb := embedder{}
	model := &llmtest.Scripted{Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			for _, text := range req.Texts {
				if strings.Contains(text, "unembeddable") {
					return nil, errors.New("embedding failed") // the whole batch, as a model's refusal does
				}
			}
			return emb.fn(req)
		}}
	r := newRigWith(t, rigOptions{llm: model})
	r.write("", "user", "budget")                                         // the query exactly: cosine 1
	r.write("", "user", "budget budget budget unembeddable filler words") // no embedding
	for i := range 20 {
		r.write("", "user", fmt.Sprintf("something else entirely, number %d", i))
	}
	hits := r.search(map[string]any{"query": "budget"})
	got := indexes(hits)
	if len(got) < 2 || got[0] != 0 || !slices.Contains(got, 1) {
		t.Fatalf("hits %v %q", got, texts(hits))
	}
	for _, h := range hits {
		if h.RelevanceScore > 2.0/(retrieval.RRFK+1) {
			t.Errorf("%q scores %v, off the fused scale", h.Text, h.RelevanceScore)
		}
		if (h.Semantic == nil) != (h.UtteranceIndex == 1) {
			t.Errorf("%q: semantic score %v", h.Text, h.Semantic)
		}
		if h.UtteranceIndex == 1 && (h.Why.Fusion.VectorRank != 0 || h.Why.Fusion.LexicalRank == 0) {
			t.Errorf("the unembedded one's fusion: %+v", h.Why.Fusion)
		}
	}
}

// hasTerm reports whether s contains word as written or a word with the same
// search term (its stem): what search guarantees of each result.
func hasTerm(s, word string) bool {
	if strings.Contains(strings.ToLower(s), strings.ToLower(word)) {
		return true
	}
	for _, w := range text.Words(s) {
		if text.Term(w) == text.Term(word) {
			return true
		}
	}
	return false
}

// TestSearchFindsByContent: search finds utterances by their words, evicted
// ones included (seed 001, scenario 7.11).
func TestSearchFindsByContent(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 4}) // most of it evicted: search covers the archive
	lines := []string{
		"We deployed the billing service to production on Monday.",
		"The weather in Lisbon is lovely this week.",
		"Deploying the search index takes about 20 minutes.",
		"Can you order pizza for the team?",
		"The deploy failed because of a missing deploy key; deploy again after fixing it.",
		"Maria reviewed the pull request.",
		"Let's schedule the next deployment for Friday.",
		"Nothing to do with it at all.",
	}
	for i, s := range lines {
		r.add("", speakerOf(i), s)
	}
	var got struct {
		Results []utt `json:"results"`
	}
	if u := r.query("Search for deploy", nil, &got); u != "history.search" {
		t.Fatalf("understood %q", u)
	}
	got.Results = matching(t, got.Results)
	if len(got.Results) != 4 {
		t.Errorf("search deploy found %d results %q, want the 4 about deploying", len(got.Results), texts(got.Results))
	}
	for i, h := range got.Results {
		if !hasTerm(h.Text, "deploy") {
			t.Errorf("result %q does not contain deploy", h.Text)
		}
		if i > 0 && h.RelevanceScore > got.Results[i-1].RelevanceScore {
			t.Errorf("scores not descending: %v after %v", h.RelevanceScore, got.Results[i-1].RelevanceScore)
		}
	}
	if len(got.Results) > 0 && got.Results[0].UtteranceIndex != 4 {
		t.Errorf("best hit %q, want the one saying deploy three times", got.Results[0].Text)
	}
	// Evicted utterances are found and say so.
	for _, h := range got.Results {
		if wantEvicted := h.UtteranceIndex < 4; h.Evicted != wantEvicted {
			t.Errorf("result %d: evicted %v, want %v", h.UtteranceIndex, h.Evicted, wantEvicted)
		}
	}
}

// TestSearchAndReadFilterBySpeaker: a speaker filter keeps only that
// speaker's utterances (seed 001, scenario 7.12).
func TestSearchAndReadFilterBySpeaker(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := range 9 {
		r.add("", history.Speakers[i%3], fmt.Sprintf("budget note %d from %s", i, history.Speakers[i%3]))
	}
	check := func(how string, us []utt, n int) {
		t.Helper()
		if len(us) != n {
			t.Errorf("%s: %d results, want %d", how, len(us), n)
		}
		for _, u := range us {
			if u.Speaker != "user" {
				t.Errorf("%s: %q by %s", how, u.Text, u.Speaker)
			}
		}
	}
	check("read", r.read("", "user"), 3)
	check("search", r.search(map[string]any{"query": "budget note", "speaker": "user"}), 3)
	var q struct {
		Utterances []utt `json:"utterances"`
	}
	r.query("Get all utterances", map[string]any{"speaker": "user"}, &q)
	check("query", q.Utterances, 3)
	var qs struct {
		Results []utt `json:"results"`
	}
	r.query("Search for budget", map[string]any{"speaker": "user"}, &qs)
	check("query search", qs.Results, 3)
}

// A search for a speaker's name finds what they said first, and then the
// turns that mention them (a search box is asked for both).
func TestSearchForASpeakersNameFindsTheirTurnsThenMentions(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, w := range []struct{ speaker, text string }{
		{"Maria", "I finally booked the flights."},
		{"Tom", "My cousin says Maria is moving to Lisbon next year."},
		{"Tom", "The weather is grey again."},
	} {
		r.do("history.write", map[string]any{"speaker": "user", "text": w.text, "metadata": map[string]any{"speaker": w.speaker}}, nil)
	}
	if got := indexes(matching(t, r.search(map[string]any{"query": "Maria"}))); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("search for Maria: %v, want her turn 0, then 1 that mentions her", got)
	}
}
