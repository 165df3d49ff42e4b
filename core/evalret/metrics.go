package evalret

import (
	"math"
	"slices"
	"time"
)

// K is how deep a ranking is scored: recall@10, nDCG@10, and the MRR of
// the first evidence within the top 10.
const K = 10

// Scores are a retriever's figures over some questions: each is the mean
// over the questions of a per-question figure between 0 and 1.
type Scores struct {
	// Category is the questions' category ("" for all of them).
	Category string `json:"category,omitempty"`
	// Questions is how many questions the figures are over.
	Questions int `json:"questions"`
	// Recall1, Recall5 and Recall10: the share of questions with an
	// evidence turn in the top 1, 5 and 10.
	Recall1  float64 `json:"recall_at_1"`
	Recall5  float64 `json:"recall_at_5"`
	Recall10 float64 `json:"recall_at_10"`
	// AllRecall10 is the share of questions with every evidence turn in
	// the top 10 (what a multi-hop answer needs).
	AllRecall10 float64 `json:"all_evidence_at_10"`
	// MRR is the mean of 1/rank of the first evidence turn (0 when none is
	// in the top 10).
	MRR float64 `json:"mrr"`
	// NDCG10 is the normalised discounted cumulative gain at 10, each
	// evidence turn of gain 1.
	NDCG10 float64 `json:"ndcg_at_10"`
}

// judged is one question's ranking scored against its evidence.
type judged struct {
	// rank is the 1-based place of the first evidence turn in the top K
	// (0: none there).
	rank int
	// all: every evidence turn is in the top K.
	all  bool
	ndcg float64
}

// judge scores a ranking (turn ids, best first) against the evidence.
func judge(ranked, evidence []string) judged {
	if len(ranked) > K {
		ranked = ranked[:K]
	}
	want := map[string]bool{}
	for _, e := range evidence {
		want[e] = true
	}
	var j judged
	found := map[string]bool{}
	dcg := 0.0
	for i, id := range ranked {
		if !want[id] || found[id] {
			continue
		}
		found[id] = true
		if j.rank == 0 {
			j.rank = i + 1
		}
		dcg += 1 / math.Log2(float64(i+2))
	}
	ideal := 0.0
	for i := range min(len(want), K) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal > 0 {
		j.ndcg = dcg / ideal
	}
	j.all = len(found) == len(want)
	return j
}

// tally adds up judged questions into Scores.
type tally struct {
	n                             int
	at1, at5, at10, all, rr, ndcg float64
}

func (t *tally) add(j judged) {
	t.n++
	if j.rank > 0 {
		t.rr += 1 / float64(j.rank)
		if j.rank <= 1 {
			t.at1++
		}
		if j.rank <= 5 {
			t.at5++
		}
		t.at10++
	}
	if j.all {
		t.all++
	}
	t.ndcg += j.ndcg
}

func (t tally) scores(category string) Scores {
	s := Scores{Category: category, Questions: t.n}
	if t.n == 0 {
		return s
	}
	n := float64(t.n)
	s.Recall1, s.Recall5, s.Recall10 = round(t.at1/n), round(t.at5/n), round(t.at10/n)
	s.AllRecall10, s.MRR, s.NDCG10 = round(t.all/n), round(t.rr/n), round(t.ndcg/n)
	return s
}

// round keeps figures to four places: enough to compare, stable in JSON.
func round(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// median is the median of durations, in milliseconds (0 for none).
func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return math.Round(float64(m)/float64(time.Millisecond)*1000) / 1000
}
