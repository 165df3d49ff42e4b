package evalret

import (
	"context"
	"slices"

	"github.com/engram-console/engram/core/text"
)

// BM25 is the baseline retriever: Okapi BM25 (k1 1.2, b 0.75) over each
// conversation's turns, as history writes them (text, then any image
// caption), split into lower-case words by text.Words. Nothing else: no
// stemming, no stop words, no field weights, no neighbours, no time. A
// better retriever must beat it category by category.
type BM25 struct {
	convs map[string]*bm25Index
}

// bm25Index is one conversation's turns as bags of words.
type bm25Index struct {
	ids    []string
	tf     []map[string]int
	length []int
	df     map[string]int
	avgdl  float64
}

// NewBM25 indexes every conversation of the set.
func NewBM25(set *Set) *BM25 {
	b := &BM25{convs: map[string]*bm25Index{}}
	for _, c := range set.Conversations {
		ix := &bm25Index{df: map[string]int{}}
		total := 0
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				tf := map[string]int{}
				words := text.Words(turnText(t))
				for _, w := range words {
					if tf[w] == 0 {
						ix.df[w]++
					}
					tf[w]++
				}
				ix.ids = append(ix.ids, t.ID)
				ix.tf = append(ix.tf, tf)
				ix.length = append(ix.length, len(words))
				total += len(words)
			}
		}
		if len(ix.ids) > 0 {
			ix.avgdl = float64(total) / float64(len(ix.ids))
		}
		b.convs[c.ID] = ix
	}
	return b
}

// Search ranks the conversation's turns by their BM25 score for the
// query's words: the highest first, an earlier turn first among equals;
// a turn sharing no word with the query is left out.
func (b *BM25) Search(_ context.Context, conversation, query string, k int) ([]string, error) {
	ix := b.convs[conversation]
	if ix == nil {
		return nil, nil
	}
	type hit struct {
		i     int
		score float64
	}
	scores := make([]float64, len(ix.ids))
	seen := map[string]bool{}
	for _, w := range text.Words(query) {
		if seen[w] || ix.df[w] == 0 {
			continue
		}
		seen[w] = true
		ts := text.BM25{}.Term(ix.df[w], len(ix.ids), ix.avgdl)
		for i, tf := range ix.tf {
			if n := tf[w]; n > 0 {
				scores[i] += ts.Score(n, float64(ix.length[i]))
			}
		}
	}
	var hits []hit
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.i - b.i
	})
	ids := make([]string, 0, min(k, len(hits)))
	for _, h := range hits[:min(k, len(hits))] {
		ids = append(ids, ix.ids[h.i])
	}
	return ids, nil
}
