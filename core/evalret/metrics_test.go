package evalret

import (
	"context"
	"math"
	"testing"
	"time"
)

// fixed is a retriever with a ranking per question text.
type fixed map[string][]string

func (f fixed) Search(_ context.Context, _, query string, k int) ([]string, error) {
	r := f[query]
	return r[:min(k, len(r))], nil
}

// TestScoresAreWhatTheirDefinitionsGiveByHand: five questions with known
// rankings, every figure worked out by hand below.
//
//	q1 single-hop, evidence a, ranked [a x y]: first hit at 1.
//	q2 single-hop (heldout), evidence b, ranked [x y b]: at 3;
//	   nDCG = (1/log2 4) / 1 = 0.5.
//	q3 multi-hop, evidence c and d, ranked [x c y y2 y3 y4 d]: at 2,
//	   both in the top 10; nDCG = (1/log2 3 + 1/log2 8) / (1 + 1/log2 3)
//	   = (0.63093 + 0.33333) / 1.63093 = 0.59124.
//	q4 temporal, evidence e, ten others ranked: no hit.
//	q5 open-domain (heldout), evidence f at 11: beyond k, no hit.
//
// Overall: R@1 1/5, R@5 3/5, R@10 3/5, all@10 3/5, MRR (1 + 1/3 + 1/2)/5
// = 0.36667, nDCG (1 + 0.5 + 0.59124)/5 = 0.41825 (0.418248).
func TestScoresAreWhatTheirDefinitionsGiveByHand(t *testing.T) {
	ten := []string{"o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10"}
	r := fixed{
		"q1": {"a", "x", "y"},
		"q2": {"x", "y", "b"},
		"q3": {"x", "c", "y", "y2", "y3", "y4", "d"},
		"q4": ten,
		"q5": append(append([]string{}, ten...), "f"),
	}
	qs := []Question{
		{ID: "1", Text: "q1", Category: SingleHop, Evidence: []string{"a"}},
		{ID: "2", Text: "q2", Category: SingleHop, Evidence: []string{"b"}, Split: Heldout},
		{ID: "3", Text: "q3", Category: MultiHop, Evidence: []string{"c", "d"}},
		{ID: "4", Text: "q4", Category: Temporal, Evidence: []string{"e"}},
		{ID: "5", Text: "q5", Category: OpenDomain, Evidence: []string{"f"}, Split: Heldout},
	}
	// A clock that moves 1 ms a reading: every search takes 1 ms.
	at := time.Unix(0, 0)
	now := func() time.Time { at = at.Add(time.Millisecond); return at }
	answers, err := ask(context.Background(), r, qs, now)
	if err != nil {
		t.Fatal(err)
	}
	all := score("fixed", All, answers)
	want := Scores{Questions: 5, Recall1: 0.2, Recall5: 0.6, Recall10: 0.6, AllRecall10: 0.6, MRR: 0.3667, NDCG10: 0.4182}
	if all.Overall != want {
		t.Errorf("overall:\n got %+v\nwant %+v", all.Overall, want)
	}
	if all.SearchP50Ms != 1 {
		t.Errorf("p50 %v ms, want 1", all.SearchP50Ms)
	}
	single := Scores{Category: SingleHop, Questions: 2, Recall1: 0.5, Recall5: 1, Recall10: 1, AllRecall10: 1, MRR: 0.6667, NDCG10: 0.75}
	multi := Scores{Category: MultiHop, Questions: 1, Recall1: 0, Recall5: 1, Recall10: 1, AllRecall10: 1, MRR: 0.5, NDCG10: 0.5912}
	if len(all.Categories) != 4 || all.Categories[0] != single || all.Categories[1] != multi {
		t.Errorf("categories: %+v", all.Categories)
	}
	if c := all.Categories[3]; c.Category != OpenDomain || c.Recall10 != 0 || c.NDCG10 != 0 {
		t.Errorf("open-domain, its evidence at 11: %+v", c)
	}
	held := score("fixed", Heldout, answers)
	if held.Overall.Questions != 2 || held.Overall.Recall10 != 0.5 || math.Abs(held.Overall.MRR-0.1667) > 1e-9 {
		t.Errorf("heldout: %+v", held.Overall)
	}
	dev := score("fixed", Dev, answers)
	if dev.Overall.Questions != 3 || dev.Overall.Recall1 != 0.3333 || len(dev.Categories) != 3 {
		t.Errorf("dev: %+v", dev)
	}
}

// TestEvidenceNamedTwiceInARankingCountsOnce: a retriever that returns
// the same turn twice gains nothing by it.
func TestEvidenceNamedTwiceInARankingCountsOnce(t *testing.T) {
	j := judge([]string{"a", "a", "b"}, []string{"a", "c"})
	ideal := 1 + 1/math.Log2(3)
	if j.rank != 1 || j.all || math.Abs(j.ndcg-1/ideal) > 1e-12 {
		t.Errorf("%+v, want rank 1, not all, nDCG %v", j, 1/ideal)
	}
}

// TestMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo.
func TestMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo(t *testing.T) {
	ms := time.Millisecond
	if m := median([]time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}); m != 2.5 {
		t.Errorf("median %v, want 2.5", m)
	}
	if m := median(nil); m != 0 {
		t.Errorf("median of none %v", m)
	}
}
