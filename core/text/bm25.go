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
	if tf == 0 || df == 0 || n == 0 {
		return 0
	}
	return b.Term(df, n, avgdl).Score(tf, dl)
}

// Term is the scorer of one query term, the term being in df of n
// documents of average length avgdl: its inverse document frequency is
// worked out once, not for every document that holds the term. Its Score
// is exactly BM25.Score for the same figures.
func (b BM25) Term(df, n int, avgdl float64) TermScorer {
	k1, bb := b.K1, b.B
	if k1 == 0 {
		k1 = 1.2
	}
	if bb == 0 {
		bb = 0.75
	}
	if avgdl <= 0 {
		avgdl = 1
	}
	t := TermScorer{k1: k1, b: bb, avgdl: avgdl}
	if df == 0 || n == 0 {
		return t
	}
	t.idf = math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
	return t
}

// TermScorer scores the documents holding one query term (see BM25.Term).
type TermScorer struct {
	idf, k1, b, avgdl float64
}

// Score is the term's contribution to a document of length dl holding it
// tf times.
func (t TermScorer) Score(tf int, dl float64) float64 {
	if tf == 0 || t.idf == 0 {
		return 0
	}
	f := float64(tf)
	return t.idf * f * (t.k1 + 1) / (f + t.k1*(1-t.b+t.b*dl/t.avgdl))
}

// Norm is the length normalisation of a text of length dl: BM25F divides
// a field's term frequency by it before weighing the fields together.
func (t TermScorer) Norm(dl float64) float64 {
	return 1 - t.b + t.b*dl/t.avgdl
}

// Fielded is the term's contribution for a frequency already weighed and
// normalised field by field (BM25F: tf = Σ weight × tf / Norm): with one
// field of weight 1 it is Score, rounding aside.
func (t TermScorer) Fielded(tf float64) float64 {
	if tf == 0 || t.idf == 0 {
		return 0
	}
	return t.idf * tf * (t.k1 + 1) / (t.k1 + tf)
}
