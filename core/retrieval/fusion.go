package retrieval

import (
	"cmp"
	"slices"
)

// RRFK is reciprocal rank fusion's constant: a document at rank r of a
// ranking earns 1/(RRFK + r).
const RRFK = 60

// Fused is a document of a fused ranking: its fused score, and its rank
// in each ranking fused (0 where it is absent).
type Fused struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	Ranks []int   `json:"ranks"`
}

// Fuse merges rankings (each a list of IDs, best first) by reciprocal
// rank fusion: a document's score is the sum over the rankings holding
// it of 1/(60 + rank), ranks counted from 1. Among equal scores, the
// document ranked best anywhere comes first, then the one first seen.
// A document listed twice in one ranking counts at its best rank.
func Fuse(rankings ...[]string) []Fused {
	byID := map[string]*Fused{}
	var order []string
	for r, list := range rankings {
		for i, id := range list {
			f := byID[id]
			if f == nil {
				f = &Fused{ID: id, Ranks: make([]int, len(rankings))}
				byID[id] = f
				order = append(order, id)
			}
			if f.Ranks[r] != 0 {
				continue
			}
			f.Ranks[r] = i + 1
			f.Score += 1 / float64(RRFK+i+1)
		}
	}
	out := make([]Fused, 0, len(order))
	first := map[string]int{}
	for i, id := range order {
		out = append(out, *byID[id])
		first[id] = i
	}
	bestRank := func(f Fused) int {
		b := 0
		for _, r := range f.Ranks {
			if r != 0 && (b == 0 || r < b) {
				b = r
			}
		}
		return b
	}
	slices.SortStableFunc(out, func(a, b Fused) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(bestRank(a), bestRank(b)); c != 0 {
			return c
		}
		return first[a.ID] - first[b.ID]
	})
	return out
}

// FusionWhy explains a place in a ranking fused by reciprocal rank fusion
// of a lexical ranking and an embedding (vector) ranking.
type FusionWhy struct {
	// Similarity is the cosine similarity of the document's embedding to
	// the query's (absent when it has none).
	Similarity *float64 `json:"similarity,omitempty"`
	// LexicalRank and VectorRank are its ranks (from 1) in each ranking
	// fused, 0 where it is absent.
	LexicalRank int `json:"lexical_rank"`
	VectorRank  int `json:"vector_rank"`
	// K is the fusion's constant (RRFK); Score the fused score, the sum
	// of 1/(K + rank) over the rankings holding it.
	K     int     `json:"k"`
	Score float64 `json:"score"`
}
