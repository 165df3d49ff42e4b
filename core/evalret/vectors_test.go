package evalret

import (
	"context"
	"slices"
	"testing"
)

// TestScriptedRetrieversRunOnlyWhenNamed: hashed and hybrid+hashed are
// not part of all, and run when named, reporting each split.
func TestScriptedRetrieversRunOnlyWhenNamed(t *testing.T) {
	set, err := ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(context.Background(), set, Options{Now: step(), Retrievers: []string{RetrieverHybridHashed}, Split: All})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 || res.Runs[2].Retriever != RetrieverHybridHashed || res.Runs[2].Overall.Questions != 4 || res.Runs[2].Failed != 0 {
		t.Fatalf("runs: %+v", res.Runs)
	}
	if slices.Contains(Retrievers, RetrieverHybridHashed) || slices.Contains(Retrievers, RetrieverHashed) {
		t.Error("a scripted retriever is part of all")
	}
}

// TestFuseRankingsKeepsWhatBothRankFirst: a turn both rankings hold
// comes before turns only one holds, at the same ranks.
func TestFuseRankingsKeepsWhatBothRankFirst(t *testing.T) {
	got := FuseRankings([]string{"a", "b", "c"}, []string{"d", "b", "e"}, 3)
	if !slices.Equal(got, []string{"b", "a", "d"}) {
		t.Errorf("fused %v", got)
	}
}

// TestVectorsRankSkipsOtherDimensions: the most similar first; a vector
// of another dimension is never ranked.
func TestVectorsRankSkipsOtherDimensions(t *testing.T) {
	vs := &Vectors{}
	for i, v := range [][]float32{{1, 0}, {0, 1}, {1, 1}, {1, 0, 0}} {
		vs.Add([]string{"x", "y", "z", "w"}[i], v)
	}
	vs.Pack()
	if got := vs.Rank([]float32{1, 0.1}, 10); !slices.Equal(got, []string{"x", "z", "y"}) {
		t.Errorf("ranked %v", got)
	}
}
