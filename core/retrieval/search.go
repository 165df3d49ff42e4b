package retrieval

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// MaxQueryTerms bounds a query: a few words to look for, not a pasted
// document (whose every term would read a posting list).
const MaxQueryTerms = 64

// Query is a search.
type Query struct {
	// Text is what to look for.
	Text string
	// Now is when the query is asked: time expressions ("last summer")
	// are read against it. The zero time means the latest document's
	// time.
	Now time.Time
	// When is a time expression given apart from the text ("in May"),
	// read like one in the text.
	When string
	// Strict makes a time expression that says nothing placeable (When
	// that parses to no window, "3 blorfs ago", an event no document
	// matches) an error; otherwise it simply adds no boost.
	Strict bool
	// Limit is how many results (10 when zero).
	Limit int
}

// Result is one document found, and why.
type Result struct {
	// ID is the document's ID; Index its place in the documents built.
	ID    string  `json:"id"`
	Index int     `json:"index"`
	Score float64 `json:"score"`
	Why   Why     `json:"why"`
}

// Why explains a result's score: the parts it is the sum of, and what
// each part is made of.
type Why struct {
	// Score is the final score: the sum of the parts' contributions.
	Score float64 `json:"score"`
	// Parts are the signals, each with its raw value, its weight and
	// its contribution (value × weight): lexical, feedback, time,
	// neighbours, session.
	Parts []Part `json:"parts"`
	// Terms are the query terms the document holds, field by field,
	// with what each added to the lexical (or feedback) score.
	Terms []TermMatch `json:"terms,omitempty"`
	// Expansion are the feedback terms the query was expanded with (the
	// same for every result of a search).
	Expansion []string `json:"expansion,omitempty"`
	// Windows are the time windows the document is inside.
	Windows []string `json:"windows,omitempty"`
	// Neighbours are the documents of its session whose matches lifted
	// it, by ID.
	Neighbours []string `json:"neighbours,omitempty"`
}

// Part is one signal of a score.
type Part struct {
	Name         string  `json:"name"`
	Value        float64 `json:"value"`
	Weight       float64 `json:"weight"`
	Contribution float64 `json:"contribution"`
}

// TermMatch is a term found in a field of a document.
type TermMatch struct {
	Term  string `json:"term"`
	Field string `json:"field"`
	// Count is how often the field holds the term.
	Count int `json:"count"`
	// Score is what the term added through this field.
	Score float64 `json:"score"`
	// Expansion marks a feedback term (not in the query).
	Expansion bool `json:"expansion,omitempty"`
}

// The names of the parts of Why.
const (
	PartLexical   = "lexical"
	PartFeedback  = "feedback"
	PartTime      = "time"
	PartNeighbour = "neighbours"
	PartSession   = "session"
)

// ErrEmptyQuery is the error of a query with nothing to look for.
var ErrEmptyQuery = errors.New("query: give words to search for")

// qterm is a term of the query and its weight.
type qterm struct {
	term   string
	weight float64
	prf    bool
}

// scratch holds one search's scores.
type scratch struct {
	lex, prf, base []float64
	touched        []int32
}

// Search ranks the documents for the query, best first, each with its
// Why. An empty query, or one of more than MaxQueryTerms different
// terms, is an error; so is a time expression that says nothing when
// Strict.
func (ix *Index) Search(q Query) ([]Result, error) {
	if strings.TrimSpace(q.Text) == "" && strings.TrimSpace(q.When) == "" {
		return nil, ErrEmptyQuery
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	now := q.Now
	if now.IsZero() {
		now = ix.span[1].Add(24 * time.Hour)
	}
	tq := ParseTime(q.Text, now)
	if q.When != "" {
		wq := ParseTime(q.When, now)
		if q.Strict && len(wq.Windows) == 0 && len(wq.Anchors) == 0 {
			return nil, fmt.Errorf("when: %q names no time engram can place; use a month (\"in May 2024\"), a season (\"last summer\"), a span (\"3 weeks ago\") or \"before/after\" an event", q.When)
		}
		tq.Windows = append(tq.Windows, wq.Windows...)
		tq.Anchors = append(tq.Anchors, wq.Anchors...)
		tq.Unparsed = append(tq.Unparsed, wq.Unparsed...)
		tq.Temporal = tq.Temporal || wq.Temporal
	}
	if q.Strict && len(tq.Unparsed) > 0 {
		return nil, fmt.Errorf("query: %q looks like a time but names none engram can place; say it as a month, a season, \"N days/weeks/months ago\" or \"before/after\" an event", tq.Unparsed[0])
	}
	terms := ix.queryTerms(tq.lexical(q.Text))
	if len(terms) > MaxQueryTerms {
		return nil, fmt.Errorf("query: at most %d different words to look for, not %d; search for a few distinctive words", MaxQueryTerms, len(terms))
	}
	n := len(ix.docs)
	sc := &scratch{lex: make([]float64, n), prf: make([]float64, n), base: make([]float64, n)}
	ix.score(terms, sc.lex, &sc.touched)
	// Events the query places its answer before or after: the time of
	// the document that best matches each.
	for _, a := range tq.Anchors {
		at, ok := ix.anchorTime(a.Text)
		if !ok {
			if q.Strict {
				return nil, fmt.Errorf("query: no document matches the event of %q, so it places nothing in time; name the event in other words", a.Expr)
			}
			continue
		}
		if a.After {
			tq.Windows = append(tq.Windows, Window{From: at.Add(time.Second), To: at.AddDate(0, 0, 120), Expr: a.Expr})
		} else {
			tq.Windows = append(tq.Windows, Window{From: at.AddDate(0, 0, -120), To: at, Expr: a.Expr})
		}
	}
	expansion := ix.feedback(terms, sc)
	p := ix.params
	for _, d := range sc.touched {
		b := (sc.lex[d] + sc.prf[d]) * ix.docs[d].prior
		if ix.inWindows(int(d), tq.Windows) {
			b *= 1 + p.Time
		}
		sc.base[d] = b
	}
	final := map[int32]float64{}
	best := map[int32]float64{} // best base per session
	for _, d := range sc.touched {
		b := sc.base[d]
		if b == 0 {
			continue
		}
		final[d] += b
		s := ix.docs[d].session
		// What a hit lends its neighbours and session is its evidence
		// without its own prior: each turn lifted weighs it by its own.
		lend := b / ix.docs[d].prior
		best[s] = max(best[s], lend)
		for dist := 1; dist <= 2; dist++ {
			if p.Neighbour[dist-1] == 0 {
				continue
			}
			for _, nb := range []int32{d - int32(dist), d + int32(dist)} {
				if nb >= 0 && int(nb) < n && ix.docs[nb].session == s {
					final[nb] += p.Neighbour[dist-1] * lend * ix.docs[nb].prior
				}
			}
		}
	}
	if p.Session != 0 {
		for d := range final {
			final[d] += p.Session * best[ix.docs[d].session] * ix.docs[d].prior
		}
	}
	ranked := make([]Result, 0, len(final))
	for d, s := range final {
		ranked = append(ranked, Result{ID: ix.docs[d].ID, Index: int(d), Score: s})
	}
	slices.SortFunc(ranked, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	ranked = ranked[:min(limit, len(ranked))]
	for i := range ranked {
		ranked[i].Why = ix.why(ranked[i].Index, terms, expansion, tq.Windows, sc, best)
	}
	return ranked, nil
}

// queryTerms are the distinct terms of a query, each weighted by how
// often it is asked.
func (ix *Index) queryTerms(text string) []qterm {
	var out []qterm
	at := map[string]int{}
	for _, t := range ix.an.Terms(text) {
		if i, ok := at[t]; ok {
			out[i].weight++
			continue
		}
		at[t] = len(out)
		out = append(out, qterm{term: t, weight: 1})
	}
	return out
}

// score adds each term's BM25F score to scores, noting the documents
// touched.
func (ix *Index) score(terms []qterm, scores []float64, touched *[]int32) {
	k1 := ix.params.K1
	for _, t := range terms {
		list := ix.postings[t.term]
		if len(list) == 0 {
			continue
		}
		idf := ix.idf(len(list)) * t.weight
		for _, p := range list {
			tf := ix.fieldTF(p, nil)
			if scores[p.doc] == 0 && touched != nil {
				*touched = append(*touched, p.doc)
			}
			scores[p.doc] += idf * tf * (k1 + 1) / (k1 + tf)
		}
	}
}

// anchorTime is the time of the document that best matches an event's
// words (the earliest among equals).
func (ix *Index) anchorTime(text string) (time.Time, bool) {
	terms := ix.queryTerms(text)
	scores := make([]float64, len(ix.docs))
	var touched []int32
	ix.score(terms, scores, &touched)
	bestDoc, bestScore := -1, 0.0
	for _, d := range touched {
		if s := scores[d]; s > bestScore || s == bestScore && int(d) < bestDoc {
			bestDoc, bestScore = int(d), s
		}
	}
	if bestDoc < 0 || ix.docs[bestDoc].Time.IsZero() {
		return time.Time{}, false
	}
	return ix.docs[bestDoc].Time, true
}

// feedback expands the query RM3's way: the terms of the first PRFDocs
// documents, each weighted by its share of the document and the
// document's score, the best PRFTerms not already asked; their scores go
// to sc.prf.
func (ix *Index) feedback(terms []qterm, sc *scratch) []qterm {
	p := ix.params
	if p.PRFWeight == 0 || p.PRFDocs == 0 || p.PRFTerms == 0 || len(sc.touched) == 0 {
		return nil
	}
	top := slices.Clone(sc.touched)
	slices.SortFunc(top, func(a, b int32) int {
		if c := cmp.Compare(sc.lex[b], sc.lex[a]); c != 0 {
			return c
		}
		return int(a - b)
	})
	top = top[:min(p.PRFDocs, len(top))]
	asked := map[string]bool{}
	for _, t := range terms {
		asked[t.term] = true
	}
	weight := map[string]float64{}
	maxScore := sc.lex[top[0]]
	for _, d := range top {
		di := &ix.docs[d]
		total := 0
		for _, c := range di.terms {
			total += int(c)
		}
		if total == 0 {
			continue
		}
		for t, c := range di.terms {
			if asked[t] {
				continue
			}
			// Rare terms only: a word in most documents says nothing.
			df := len(ix.postings[t])
			if df < 2 || df*10 > len(ix.docs) {
				continue
			}
			weight[t] += float64(c) / float64(total) * sc.lex[d] / maxScore * ix.idf(df)
		}
	}
	var exp []qterm
	for t, w := range weight {
		exp = append(exp, qterm{term: t, weight: w, prf: true})
	}
	slices.SortFunc(exp, func(a, b qterm) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return strings.Compare(a.term, b.term)
	})
	exp = exp[:min(p.PRFTerms, len(exp))]
	if len(exp) == 0 {
		return nil
	}
	top1 := exp[0].weight
	for i := range exp {
		exp[i].weight = p.PRFWeight * exp[i].weight / top1
	}
	before := len(sc.touched)
	ix.score(exp, sc.prf, &sc.touched)
	// score notes a document when its prf score was zero; keep only
	// those not already touched lexically.
	kept := sc.touched[:before]
	for _, d := range sc.touched[before:] {
		if sc.lex[d] == 0 {
			kept = append(kept, d)
		}
	}
	sc.touched = kept
	return exp
}

// inWindows says whether a document is inside one of the windows.
func (ix *Index) inWindows(d int, ws []Window) bool {
	for _, w := range ws {
		if w.Contains(ix.docs[d].Time) {
			return true
		}
	}
	return false
}

// why explains a document's score.
func (ix *Index) why(d int, terms, expansion []qterm, ws []Window, sc *scratch, best map[int32]float64) Why {
	p := ix.params
	di := &ix.docs[d]
	var w Why
	k1 := p.K1
	matches := func(ts []qterm) {
		for _, t := range ts {
			for _, post := range ix.postings[t.term] {
				if int(post.doc) != d {
					continue
				}
				var per [numFields]float64
				tf := ix.fieldTF(post, &per)
				total := ix.idf(len(ix.postings[t.term])) * t.weight * tf * (k1 + 1) / (k1 + tf)
				for f := Field(0); f < numFields; f++ {
					if post.tf[f] > 0 {
						w.Terms = append(w.Terms, TermMatch{Term: t.term, Field: f.String(), Count: int(post.tf[f]), Score: round(total * per[f] / tf), Expansion: t.prf})
					}
				}
				break
			}
		}
	}
	matches(terms)
	matches(expansion)
	for _, t := range expansion {
		w.Expansion = append(w.Expansion, t.term)
	}
	lex, prf := sc.lex[d], sc.prf[d]
	w.Parts = append(w.Parts, Part{Name: PartLexical, Value: round(lex), Weight: 1, Contribution: round(lex)})
	w.Parts = append(w.Parts, Part{Name: PartFeedback, Value: round(prf), Weight: 1, Contribution: round(prf)})
	timePart := 0.0
	for _, win := range ws {
		if win.Contains(di.Time) {
			w.Windows = append(w.Windows, win.Expr)
		}
	}
	if len(w.Windows) > 0 {
		timePart = p.Time * (lex + prf)
	}
	w.Parts = append(w.Parts, Part{Name: PartTime, Value: round(lex + prf), Weight: p.Time * b2f(len(w.Windows) > 0), Contribution: round(timePart)})
	nb := 0.0
	for dist := 1; dist <= 2; dist++ {
		for _, o := range []int{d - dist, d + dist} {
			if o >= 0 && o < len(ix.docs) && ix.docs[o].session == di.session && sc.base[o] > 0 {
				nb += p.Neighbour[dist-1] * sc.base[o]
				w.Neighbours = append(w.Neighbours, ix.docs[o].ID)
			}
		}
	}
	w.Parts = append(w.Parts, Part{Name: PartNeighbour, Value: round(nb), Weight: 1, Contribution: round(nb)})
	s := best[di.session]
	w.Parts = append(w.Parts, Part{Name: PartSession, Value: round(s), Weight: p.Session, Contribution: round(p.Session * s)})
	w.Score = round(lex + prf + timePart + nb + p.Session*s)
	return w
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// round keeps six decimals: enough to compare, short to print.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }
