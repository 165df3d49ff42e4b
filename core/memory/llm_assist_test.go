package memory_test

import (
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// concepts give the scripted embedder its meaning: words of one concept
// point the same way, other words add a little noise of their own.
var concepts = map[string]int{
	"car": 0, "vehicle": 0, "automobile": 0, "tyres": 0, "tires": 0, "garage": 0,
	"pasta": 1, "pizza": 1, "lunch": 1, "dinner": 1,
	"flight": 2, "airport": 2, "plane": 2,
}

// embed is a deterministic embedding: one dimension per concept, eight for
// the hashed other words (weight 0.1). A text containing FAIL fails.
func embed(req llm.EmbedRequest) ([][]float32, error) {
	out := make([][]float32, len(req.Texts))
	for i, s := range req.Texts {
		if strings.Contains(s, "FAIL") {
			return nil, &llm.Error{Provider: "scripted", Op: "embed", Msg: "scripted failure"}
		}
		v := make([]float32, 3+8)
		for _, w := range text.Words(s) {
			if c, ok := concepts[w]; ok {
				v[c]++
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[3+h.Sum32()%8] += 0.1
		}
		out[i] = v
	}
	return out, nil
}

// TestRememberBlendsEmbeddings: with a model, an item sharing no word with
// the prompt but close in meaning (cosine >= 0.85) is found; lexical
// matches stay; forgotten and filtered-out items stay out.
func TestRememberBlendsEmbeddings(t *testing.T) {
	model := &llmtest.Scripted{EmbedFunc: embed}
	r := newRigWith(t, rigOptions{llm: model})
	r.memorize("episodic", it("sem", "My automobile needs new tyres"))
	r.memorize("episodic", it("lex", "Car wash on Sunday"))
	r.memorize("episodic", it("far", "Pasta for lunch on Friday"))
	r.memorize("episodic", it("other", "The vehicle inspection is due", "agent_id", "agent_b"))
	r.memorize("episodic", it("gone", "The garage called about the automobile"))
	r.forget("episodic", "item gone", "soft")
	r.memorize("episodic", it("noembed", "Car keys are in the FAIL drawer")) // its embedding fails

	got := r.remember("episodic", "car maintenance", "rank", "relevance")
	if g := sorted(ids(got)); !slices.Equal(g, []string{"lex", "noembed", "other", "sem"}) {
		t.Fatalf("remember = %v, want lex, noembed, other and sem (by meaning)", ids(got))
	}
	for _, g := range got {
		if *g.Score <= 0 || *g.Confidence <= 0 || *g.Confidence > 1 {
			t.Errorf("%s: score %v, confidence %v", g.ID, *g.Score, *g.Confidence)
		}
	}
	if g := ids(r.remember("episodic", "car maintenance", "filters", map[string]any{"agent_id": "agent_a"})); slices.Contains(g, "other") {
		t.Errorf("agent filter: %v", g)
	}
	if g := ids(r.remember("episodic", "car maintenance", "include_deleted", true)); !slices.Contains(g, "gone") {
		t.Errorf("include_deleted: %v", g)
	}
	// Without a model the same prompt finds only the lexical matches.
	plain := newRig(t)
	for _, id := range []string{"sem", "lex"} {
		plain.memorize("episodic", it(id, map[string]string{"sem": "My automobile needs new tyres", "lex": "Car wash on Sunday"}[id]))
	}
	if g := ids(plain.remember("episodic", "car maintenance")); !slices.Equal(g, []string{"lex"}) {
		t.Errorf("without a model: %v", g)
	}
	// A prompt whose embedding fails falls back to lexical ranking.
	if g := ids(r.remember("episodic", "car FAIL")); !slices.Contains(g, "lex") || slices.Contains(g, "sem") {
		t.Errorf("failed query embedding: %v", g)
	}
	r.checkCounters("episodic")
}

// TestSummarizeWithModel: the model's summary is used within the limit;
// a failing model leaves the extractive one.
func TestSummarizeWithModel(t *testing.T) {
	long := strings.Repeat("Maria booked the Lisbon flight and the hotel near the river for the team. ", 30)
	model := &llmtest.Scripted{EmbedFunc: embed, Answers: []llmtest.Answer{
		llmtest.Text("Maria booked a Lisbon flight ($420, Dec 3); Tom is allergic to peanuts."),
		llmtest.Text(long),
		llmtest.Fail(errors.New("model down")),
		llmtest.Text("   "),
	}}
	r := newRigWith(t, rigOptions{llm: model})
	r.memorize("episodic", it("a", "Maria booked the Lisbon flight for December 3rd at $420."))
	r.memorize("episodic", it("b", "Tom is allergic to peanuts.", "timestamp", at(1)))

	s := r.summarize("episodic", "all", 50)
	if s.Writer != "model" || s.Text != "Maria booked a Lisbon flight ($420, Dec 3); Tom is allergic to peanuts." || s.TokenCount != llm.CountTokens(s.Text) {
		t.Errorf("model summary: %+v", s)
	}
	if !slices.Equal(s.SourceItems, []string{"a", "b"}) {
		t.Errorf("source_items %v", s.SourceItems)
	}
	req := model.Requests()[0]
	if prompt := req.System + req.Messages[0].Content; !strings.Contains(prompt, "50 tokens") || !strings.Contains(prompt, "allergic to peanuts") {
		t.Errorf("prompt: %s", prompt)
	}
	s = r.summarize("episodic", "all", 20)
	if s.Writer != "model" || s.TokenCount > 20 || s.TokenCount != llm.CountTokens(s.Text) || !strings.HasPrefix(long, s.Text) {
		t.Errorf("a long model summary, cut: %+v", s)
	}
	for _, why := range []string{"a failing model", "an empty answer"} {
		s = r.summarize("episodic", "all", 40)
		if s.Writer != "extractive" || s.Text == "" || s.TokenCount > 40 {
			t.Errorf("%s: %+v", why, s)
		}
	}
}
