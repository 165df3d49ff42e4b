package text

import (
	"math"
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"don't stop", []string{"don't", "stop"}},
		{"Maria’s café", []string{"maria’s", "café"}},
		{"'quoted' words'", []string{"quoted", "words"}},
		{"$40,000 on 2025-11-05", []string{"40", "000", "on", "2025", "11", "05"}},
		{"OPS-4021 e-mail", []string{"ops", "4021", "e", "mail"}},
		{"東京 Zürich Привет", []string{"東京", "zürich", "привет"}},
		{"", nil},
		{"  ...  ", nil},
	} {
		if got := Words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTerms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		// One stem for the forms of a word.
		{"deploying deployed deploys deployment", []string{"deploy", "deploy", "deploy", "deploy"}},
		// Stop words go; numbers and codes stay as written.
		{"What is the budget for Q3 2025?", []string{"budget", "q3", "2025"}},
		// The possessive and the curly apostrophe.
		{"Maria's Maria’s Maria", []string{"maria", "maria", "maria"}},
		{"the of and a", nil},
	} {
		got := Terms(c.in)
		if len(got) == 0 {
			got = nil
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	counts, n := TermCounts("budget budgets the budgeted review")
	if n != 4 || counts["budget"] != 3 || counts["review"] != 1 {
		t.Errorf("TermCounts = %v, %d", counts, n)
	}
	// The cache answers as computing would.
	for _, w := range []string{"Running", "running", "RUNNING", "ran", "the"} {
		first, again := Term(w), Term(w) // the second from the cache
		if first != term(w) || again != first {
			t.Errorf("Term(%q) = %q then %q, term = %q", w, first, again, term(w))
		}
	}
}

func TestBM25(t *testing.T) {
	var b BM25
	base := b.Score(1, 10, 100, 20, 20)
	if base <= 0 {
		t.Fatalf("score %v", base)
	}
	if s := b.Score(3, 10, 100, 20, 20); s <= base {
		t.Errorf("more occurrences should score higher: %v <= %v", s, base)
	}
	if s := b.Score(1, 50, 100, 20, 20); s >= base {
		t.Errorf("a commoner term should score lower: %v >= %v", s, base)
	}
	if s := b.Score(1, 10, 100, 60, 20); s >= base {
		t.Errorf("a longer document should score lower: %v >= %v", s, base)
	}
	// Saturation: tf grows the score ever more slowly, towards idf*(k1+1).
	idf := math.Log(1 + (100-10+0.5)/(10+0.5))
	if s := b.Score(1000, 10, 100, 20, 20); s > idf*2.2 || s < idf*2.1 {
		t.Errorf("saturated score %v, bound %v", s, idf*2.2)
	}
	for _, s := range []float64{b.Score(0, 10, 100, 20, 20), b.Score(1, 0, 100, 20, 20), b.Score(1, 1, 0, 20, 20)} {
		if s != 0 {
			t.Errorf("a term not there scores %v", s)
		}
	}
	if s := b.Score(1, 1, 1, 5, 0); s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		t.Errorf("avgdl 0: %v", s)
	}
	// The parameters are used when given.
	if (BM25{K1: 2, B: 0.5}).Score(3, 10, 100, 20, 20) == b.Score(3, 10, 100, 20, 20) {
		t.Errorf("K1 and B are ignored")
	}
}
