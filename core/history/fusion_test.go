package history_test

import (
	"math"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// fusionRig is a rig whose model embeds by concept ("automobile" and
// "vehicle" mean "car"), holding the user's "an automobile" (near "car"
// in meaning only), 60 of the assistant's "vehicle" (the query "car"
// exactly: more than the fusion's 50) and the user's "car" among six
// unrelated words (a word match, far in meaning).
func fusionRig(t *testing.T) (*rig, embedder) {
	t.Helper()
	emb := embedder{concepts: map[string]string{"automobile": "car", "vehicle": "car", "car": "car"}}
	model := &llmtest.Scripted{EmbedFunc: emb.fn, Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") }}
	r := newRigWith(t, rigOptions{llm: model})
	r.write("", "user", "an automobile") // 0
	for range 60 {
		r.write("", "assistant", "vehicle")
	}
	r.write("", "user", "car lunch maria tuesday budget review dentist") // 61
	r.h.Settle()
	return r, emb
}

// TestFusionRanksTheSpeakersNearest: asked for one speaker's, the vector
// ranking is that speaker's nearest, however many of another's are
// nearer: the user's "an automobile" is found for "car" by meaning alone.
func TestFusionRanksTheSpeakersNearest(t *testing.T) {
	t.Parallel()
	r, _ := fusionRig(t)
	hits := r.search(map[string]any{"query": "car", "speaker": "user"})
	var found bool
	for _, h := range hits {
		if h.Speaker != "user" {
			t.Errorf("%d is the %s's", h.UtteranceIndex, h.Speaker)
		}
		if h.UtteranceIndex == 0 {
			found = true
			if f := h.Why.Fusion; f == nil || f.VectorRank != 1 || f.LexicalRank != 0 {
				t.Errorf("the automobile's fusion: %+v", f)
			}
		}
	}
	if !found {
		t.Errorf("the user's automobile is not found: %v", indexes(hits))
	}
}

// TestFusionGivesEveryWordMatchItsSimilarity: a hit found by its words
// says its similarity to the query even when 60 others are nearer in
// meaning (beyond the vectors the fusion ranks).
func TestFusionGivesEveryWordMatchItsSimilarity(t *testing.T) {
	t.Parallel()
	r, emb := fusionRig(t)
	hits := r.search(map[string]any{"query": "car"}) // limit 10: 50 vectors fused
	want := cos(emb.embed("car"), emb.embed("car lunch maria tuesday budget review dentist"))
	for _, h := range hits {
		if h.UtteranceIndex != 61 {
			continue
		}
		f := h.Why.Fusion
		if h.Semantic == nil || math.Abs(*h.Semantic-want) > 1e-4 || f == nil || f.Similarity == nil || f.LexicalRank != 1 {
			t.Fatalf("the word match: semantic %v, fusion %+v; want similarity %.4f", h.Semantic, f, want)
		}
		if f.VectorRank != 0 {
			t.Errorf("the word match (similarity %.2f) ranked by its vector past the 50 fused: %+v", want, f)
		}
		return
	}
	t.Fatalf("the word match is not found: %v", indexes(hits))
}
