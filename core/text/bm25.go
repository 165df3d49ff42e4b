package text

import "math"

// BM25 scores documents for a query the Okapi BM25 way: each query term
// adds its inverse document frequency, weighted by how often it occurs in
// the document relative to the document's length. K1 (term frequency
// saturation) and B (length normalisation) take the usual 1.2 and 0.75
// when zero.
type BM25 struct {
	K1, B float64
}

// Score is one term's contribution: tf occurrences in a document of length
// dl, the term being in df of n documents of average length avgdl.
func (b BM25) Score(tf, df, n int, dl, avgdl float64) float64 {
	k1, bb := b.K1, b.B
	if k1 == 0 {
		k1 = 1.2
	}
	if bb == 0 {
		bb = 0.75
	}
	if tf == 0 || df == 0 || n == 0 {
		return 0
	}
	if avgdl <= 0 {
		avgdl = 1
	}
	idf := math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
	f := float64(tf)
	return idf * f * (k1 + 1) / (f + k1*(1-bb+bb*dl/avgdl))
}
