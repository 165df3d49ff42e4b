package llmtest_test

import (
	"context"
	"math"
	"testing"

	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// TestHashedIsDeterministicAndSpellingBased: the same text gives the same
// unit vector; texts sharing word stems are closer than texts sharing
// none, whatever they mean (it is not a semantic model).
func TestHashedIsDeterministicAndSpellingBased(t *testing.T) {
	resp, err := llmtest.Hashed{}.Embed(context.Background(), llm.EmbedRequest{Texts: []string{
		"We planned the trip to Lisbon", "We planned the trip to Lisbon", "planning a Lisbon trip", "a car", "an automobile"}})
	if err != nil {
		t.Fatal(err)
	}
	v := resp.Vectors
	if len(v) != 5 || len(v[0]) != llmtest.HashedDim || search.Cosine(v[0], v[1]) < 0.9999 {
		t.Fatalf("not deterministic: %d vectors", len(v))
	}
	var n float64
	for _, x := range v[0] {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("length² %v, want 1", n)
	}
	if same, other := search.Cosine(v[0], v[2]), search.Cosine(v[0], v[3]); same < 0.5 || other > 0.3 {
		t.Errorf("shared stems %.2f, none %.2f", same, other)
	}
	if syn := search.Cosine(v[3], v[4]); syn > 0.5 {
		t.Errorf("car and automobile %.2f: the hashed model knows no synonyms", syn)
	}
	if _, err := (llmtest.Hashed{}).Complete(context.Background(), llm.Request{}); err == nil {
		t.Error("the hashed model answered a chat")
	}
}
