package evalret

import (
	"context"
	"testing"
)

// TestHybridMeetsIssue18sTargetsOnEngramsSet holds the hybrid ranker to
// issue 18's offline targets on engram's own set: recall@10 of at least
// 0.80 on the held-out split, at least 0.60 in every category of it, and
// no category of either split below the bm25 baseline. A change to the
// ranker (or its DefaultParams) that loses them fails here.
func TestHybridMeetsIssue18sTargetsOnEngramsSet(t *testing.T) {
	set, err := ReadFile("../../testdata/eval/engram-longmem.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(context.Background(), set, Options{Retrievers: []string{RetrieverBM25, RetrieverHybrid}, Now: step()})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]Run{}
	for _, r := range res.Runs {
		runs[r.Split+"/"+r.Retriever] = r
	}
	held := runs[Heldout+"/"+RetrieverHybrid]
	if held.Overall.Recall10 < 0.80 {
		t.Errorf("held-out recall@10 %.3f, want ≥ 0.80", held.Overall.Recall10)
	}
	for _, c := range held.Categories {
		if c.Recall10 < 0.60 {
			t.Errorf("held-out %s recall@10 %.3f, want ≥ 0.60", c.Category, c.Recall10)
		}
	}
	for _, split := range []string{Dev, Heldout} {
		base := runs[split+"/"+RetrieverBM25]
		for i, c := range runs[split+"/"+RetrieverHybrid].Categories {
			if b := base.Categories[i]; c.Category != b.Category || c.Recall10 < b.Recall10 {
				t.Errorf("%s %s: hybrid recall@10 %.3f, bm25 %s %.3f", split, c.Category, c.Recall10, b.Category, b.Recall10)
			}
		}
		if f := runs[split+"/"+RetrieverHybrid].Failed; f != 0 {
			t.Errorf("%s: %d searches failed", split, f)
		}
	}
}
