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
	// Keep, when set, says which documents (by their place among those
	// built and added) may be results; the others still lend to their
	// neighbours and session, but place no event ("after the move").
	Keep func(doc int) bool
	// Matched keeps only documents holding a term of the query (or of
	// its thesaurus or feedback expansion) as results: the lifts of neighbours and
	// sessions still add to their scores, but a turn lifted alone, with
	// none of the query's words, is left out (a search box's results).
	Matched bool
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
	// its contribution: lexical (BM25F, times the share of the query
	// the document holds to the power Params.Coord), synonyms (the
	// thesaurus terms' BM25F, weighed alike), feedback (the expansion
	// terms' BM25F), prior (what the turn's length and names add),
	// time (a window's boost), neighbours (what nearby hits lend),
	// session (its session's best hit).
	Parts []Part `json:"parts"`
	// Terms are the query terms the document holds, field by field,
	// with what each added to the lexical (or feedback) score.
	Terms []TermMatch `json:"terms,omitempty"`
	// Expansion are the feedback terms the query was expanded with (the
	// same for every result of a search).
	Expansion []string `json:"expansion,omitempty"`
	// Synonyms are the thesaurus terms the query was expanded with (the
	// same for every result of a search).
	Synonyms []Synonym `json:"synonyms,omitempty"`
	// Windows are the time windows the document is inside.
	Windows []string `json:"windows,omitempty"`
	// Neighbours are the documents of its session whose matches lifted
	// it, by ID.
	Neighbours []string `json:"neighbours,omitempty"`
	// Temporal says the query asks about time ("when did ...") whether
	// or not it names a window (the same for every result).
	Temporal bool `json:"temporal,omitempty"`
	// Fusion, when the ranking was fused with an embedding ranking
	// (Fuse), says the vector similarity and the ranks fused.
	Fusion *FusionWhy `json:"fusion,omitempty"`
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
	// SynonymOf is, for a thesaurus term (not in the query), the query
	// term it stands for.
	SynonymOf string `json:"synonym_of,omitempty"`
}

// The names of the parts of Why.
const (
	PartLexical   = "lexical"
	PartFeedback  = "feedback"
	PartSynonyms  = "synonyms"
	PartPrior     = "prior"
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
	// syn marks a thesaurus term standing for the query's term of,
	// by the relation rel.
	syn     bool
	of, rel string
	// name says the query writes the term as a name.
	name bool
}

// scratch holds one search's scores: dense by document (or session),
// and the documents (sessions) written, so that it is cleared cheaply.
type scratch struct {
	lex, syn, prf, base, final []float64
	// matched is the query weight each document holds (for Coord).
	matched         []float64
	best            []float64
	touched, lifted []int32
}

// anchorDays is how far before or after an event its window reaches.
const anchorDays = 120

func (ix *Index) getScratch() *scratch {
	if sc, ok := ix.pool.Get().(*scratch); ok && len(sc.lex) >= len(ix.docs) && len(sc.best) >= len(ix.sessionDocs) {
		return sc
	}
	// Room to grow: an index that documents are added to would otherwise
	// throw its scratch away at the first search after each Add.
	n, ns := len(ix.docs)+len(ix.docs)/4+16, len(ix.sessionDocs)+len(ix.sessionDocs)/4+16
	return &scratch{lex: make([]float64, n), syn: make([]float64, n), matched: make([]float64, n), prf: make([]float64, n), base: make([]float64, n), final: make([]float64, n), best: make([]float64, ns)}
}

// putScratch clears what the search wrote and keeps the scratch for the
// next one.
func (ix *Index) putScratch(sc *scratch) {
	for _, d := range sc.touched {
		sc.lex[d], sc.syn[d], sc.prf[d], sc.base[d], sc.matched[d] = 0, 0, 0, 0, 0
		sc.best[ix.docs[d].session] = 0
	}
	for _, d := range sc.lifted {
		sc.final[d] = 0
	}
	sc.touched, sc.lifted = sc.touched[:0], sc.lifted[:0]
	ix.pool.Put(sc)
}

// top are the limit best documents of the final scores, best first, the
// earlier document first among equals.
func (ix *Index) top(sc *scratch, limit int, keepDoc func(int) bool) []Result {
	better := func(a, b int32) bool {
		return sc.final[a] > sc.final[b] || sc.final[a] == sc.final[b] && a < b
	}
	// A bounded selection: keep the best limit seen, worst last.
	var keep []int32
	for _, d := range sc.lifted {
		if len(keep) == limit && !better(d, keep[len(keep)-1]) {
			continue
		}
		if keepDoc != nil && !keepDoc(int(d)) {
			continue
		}
		i, _ := slices.BinarySearchFunc(keep, d, func(x, y int32) int {
			if better(x, y) {
				return -1
			}
			if better(y, x) {
				return 1
			}
			return 0
		})
		keep = slices.Insert(keep, i, d)
		if len(keep) > limit {
			keep = keep[:limit]
		}
	}
	out := make([]Result, len(keep))
	for i, d := range keep {
		out[i] = Result{ID: ix.docs[d].ID, Index: int(d), Score: round(sc.final[d])}
	}
	return out
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
		if q.Strict && (len(wq.Windows) == 0 && len(wq.Anchors) == 0 || len(wq.Unparsed) > 0) {
			return nil, fmt.Errorf("when: %q names no time engram can place; use a month (\"in May 2024\"), a season (\"last summer\"), a span (\"3 weeks ago\") or \"before/after\" an event", q.When)
		}
		// A time the text says too (thread linking gives the whole
		// message as When) is read once: a why names each window once.
		for _, w := range wq.Windows {
			if !slices.ContainsFunc(tq.Windows, func(v Window) bool { return v.Expr == w.Expr && v.From.Equal(w.From) && v.To.Equal(w.To) }) {
				tq.Windows = append(tq.Windows, w)
			}
		}
		for _, a := range wq.Anchors {
			if !slices.Contains(tq.Anchors, a) {
				tq.Anchors = append(tq.Anchors, a)
			}
		}
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
	ix.refreshPriors()
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	ix.score(terms, sc.lex, &sc.touched, sc.matched)
	syns := ix.synonyms(terms)
	ix.scoreSynonyms(syns, sc)
	ix.coord(terms, sc)
	// Events the query places its answer before or after: the time of
	// the document that best matches each.
	for _, a := range tq.Anchors {
		at, ok := ix.anchorTime(a.Text, q.Keep)
		if !ok {
			if q.Strict {
				return nil, fmt.Errorf("query: no document matches the event of %q, so it places nothing in time; name the event in other words", a.Expr)
			}
			continue
		}
		if a.After {
			tq.Windows = append(tq.Windows, Window{From: at.Add(time.Second), To: at.AddDate(0, 0, anchorDays), Expr: a.Expr})
		} else {
			tq.Windows = append(tq.Windows, Window{From: at.AddDate(0, 0, -anchorDays), To: at, Expr: a.Expr})
		}
	}
	expansion := ix.feedback(terms, sc)
	p := ix.params
	for _, d := range sc.touched {
		b := (sc.lex[d] + sc.syn[d] + sc.prf[d]) * ix.docs[d].prior
		if ix.inWindows(int(d), tq.Windows) {
			b *= 1 + p.Time
		}
		sc.base[d] = b
	}
	// The final score: each hit's own, what it lends its neighbours,
	// and its session's best.
	n := int32(len(ix.docs))
	lift := func(d int32, x float64) {
		if sc.final[d] == 0 {
			sc.lifted = append(sc.lifted, d)
		}
		sc.final[d] += x
	}
	for _, d := range sc.touched {
		b := sc.base[d]
		if b == 0 {
			continue
		}
		lift(d, b)
		s := ix.docs[d].session
		// What a hit lends its neighbours and session is its evidence
		// without its own prior: each turn lifted weighs it by its own.
		lend := b / ix.docs[d].prior
		sc.best[s] = max(sc.best[s], lend)
		for dist := int32(1); dist <= 2; dist++ {
			w := p.Neighbour[dist-1]
			if w == 0 {
				continue
			}
			for _, nb := range [2]int32{d - dist, d + dist} {
				if nb >= 0 && nb < n && ix.docs[nb].session == s {
					lift(nb, w*lend*ix.docs[nb].prior)
				}
			}
		}
	}
	if p.Session != 0 {
		for _, d := range sc.lifted {
			sc.final[d] += p.Session * sc.best[ix.docs[d].session] * ix.docs[d].prior
		}
	}
	keep := q.Keep
	if q.Matched {
		keep = func(d int) bool {
			return (sc.lex[d] != 0 || sc.syn[d] != 0 || sc.prf[d] != 0) && (q.Keep == nil || q.Keep(d))
		}
	}
	ranked := ix.top(sc, limit, keep)
	for i := range ranked {
		ranked[i].Why = ix.why(ranked[i].Index, terms, syns, expansion, tq.Windows, sc)
		ranked[i].Why.Temporal = tq.Temporal
	}
	return ranked, nil
}

// queryTerms are the distinct terms of a query, each weighted by how
// often it is asked.
func (ix *Index) queryTerms(text string) []qterm {
	var out []qterm
	at := map[string]int{}
	for _, t := range ix.an.Tokens(text) {
		if i, ok := at[t.Term]; ok {
			out[i].weight++
			out[i].name = out[i].name || t.Name
			continue
		}
		at[t.Term] = len(out)
		out = append(out, qterm{term: t.Term, weight: 1, name: t.Name})
	}
	return out
}

// score adds each term's BM25F score to scores, noting the documents
// touched and (when matched is not nil) the query weight each holds.
func (ix *Index) score(terms []qterm, scores []float64, touched *[]int32, matched []float64) {
	k1 := ix.params.K1
	for _, t := range terms {
		list := ix.postings[t.term]
		if len(list) == 0 {
			continue
		}
		idf := ix.idf(len(list)) * t.weight
		speaker := ix.isSpeaker(list)
		for _, p := range list {
			tf := ix.termTF(p, speaker, nil)
			if tf == 0 {
				continue
			}
			if scores[p.doc] == 0 && touched != nil {
				*touched = append(*touched, p.doc)
			}
			scores[p.doc] += idf * tf * (k1 + 1) / (k1 + tf)
			if matched != nil {
				matched[p.doc] += t.weight
			}
		}
	}
}

// isSpeaker says whether a term (its postings) is a speaker's name: some
// document has it in its speaker field.
func (ix *Index) isSpeaker(list []posting) bool {
	if ix.params.Address == 1 {
		return false
	}
	for _, p := range list {
		if p.tf[FieldSpeaker] > 0 {
			return true
		}
	}
	return false
}

// termTF is fieldTF with a speaker's name written in a turn weighed by
// Address (speaker says the term is a speaker's name).
func (ix *Index) termTF(p posting, speaker bool, per *[numFields]float64) float64 {
	if !speaker {
		return ix.fieldTF(p, per)
	}
	var parts [numFields]float64
	ix.fieldTF(p, &parts)
	tf := 0.0
	for f := range parts {
		if Field(f) != FieldSpeaker {
			parts[f] *= ix.params.Address
		}
		tf += parts[f]
	}
	if per != nil {
		*per = parts
	}
	return tf
}

// coord weighs each document's lexical and synonym scores by the share
// of the query it holds (Params.Coord): a thesaurus term counts for its
// own (lower) weight, and the share is at most 1.
func (ix *Index) coord(terms []qterm, sc *scratch) {
	if ix.params.Coord == 0 {
		return
	}
	for _, d := range sc.touched {
		f := ix.coordFactor(int(d), terms, sc)
		sc.lex[d] *= f
		sc.syn[d] *= f
	}
}

// coordFactor is what coord multiplied a document's scores by.
func (ix *Index) coordFactor(d int, terms []qterm, sc *scratch) float64 {
	c := ix.params.Coord
	total := 0.0
	for _, t := range terms {
		total += t.weight
	}
	if c == 0 || total == 0 {
		return 1
	}
	return math.Pow(min(1, sc.matched[d]/total), c)
}

// scoreSynonyms adds the thesaurus terms' BM25F to sc.syn (and their
// weight to sc.matched), noting the documents no query term touched.
func (ix *Index) scoreSynonyms(syns []qterm, sc *scratch) {
	if len(syns) == 0 {
		return
	}
	before := len(sc.touched)
	ix.score(syns, sc.syn, &sc.touched, sc.matched)
	// score notes a document when its synonym score was zero; keep only
	// those not already touched by the query's own terms.
	kept := sc.touched[:before]
	for _, d := range sc.touched[before:] {
		if sc.lex[d] == 0 {
			kept = append(kept, d)
		}
	}
	sc.touched = kept
}

// anchorTime is the time of the document that best matches an event's
// words (the earliest among equals), among those keep keeps (all when
// nil): a document the searcher may not see places no event for it.
func (ix *Index) anchorTime(text string, keep func(doc int) bool) (time.Time, bool) {
	terms := ix.queryTerms(text)
	scores := make([]float64, len(ix.docs))
	var touched []int32
	ix.score(terms, scores, &touched, nil)
	bestDoc, bestScore := -1, 0.0
	for _, d := range touched {
		if keep != nil && !keep(int(d)) {
			continue
		}
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
	var top []int32 // the PRFDocs best, best first
	for _, d := range sc.touched {
		i := len(top)
		for i > 0 && (sc.lex[d] > sc.lex[top[i-1]] || sc.lex[d] == sc.lex[top[i-1]] && d < top[i-1]) {
			i--
		}
		if i < p.PRFDocs {
			top = slices.Insert(top, i, d)
			top = top[:min(len(top), p.PRFDocs)]
		}
	}
	asked := map[string]bool{}
	for _, t := range terms {
		asked[t.term] = true
	}
	weight := map[string]float64{}
	maxScore := sc.lex[top[0]]
	for _, d := range top {
		terms := ix.docTerms(d)
		total := 0
		for _, c := range terms {
			total += int(c)
		}
		if total == 0 {
			continue
		}
		for t, c := range terms {
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
	ix.score(exp, sc.prf, &sc.touched, nil)
	// score notes a document when its prf score was zero; keep only
	// those not already touched by the query's terms or its synonyms.
	kept := sc.touched[:before]
	for _, d := range sc.touched[before:] {
		if sc.lex[d] == 0 && sc.syn[d] == 0 {
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

// why explains a document's score: its parts add up to it.
func (ix *Index) why(d int, terms, syns, expansion []qterm, ws []Window, sc *scratch) Why {
	p := ix.params
	di := &ix.docs[d]
	var w Why
	k1 := p.K1
	// The query's own terms and their synonyms are weighed by the
	// coordination factor, as the lexical score is; feedback terms are
	// not.
	factor := ix.coordFactor(d, terms, sc)
	matches := func(ts []qterm) {
		for _, t := range ts {
			list := ix.postings[t.term]
			i, ok := slices.BinarySearchFunc(list, int32(d), func(x posting, d int32) int { return cmp.Compare(x.doc, d) })
			if !ok {
				continue
			}
			post := list[i]
			var per [numFields]float64
			tf := ix.termTF(post, ix.isSpeaker(list), &per)
			if tf == 0 {
				continue
			}
			total := ix.idf(len(list)) * t.weight * tf * (k1 + 1) / (k1 + tf)
			if !t.prf {
				total *= factor
			}
			for f := Field(0); f < numFields; f++ {
				if post.tf[f] > 0 {
					w.Terms = append(w.Terms, TermMatch{Term: t.term, Field: f.String(), Count: int(post.tf[f]), Score: round(total * per[f] / tf), Expansion: t.prf, SynonymOf: t.of})
				}
			}
		}
	}
	matches(terms)
	matches(syns)
	matches(expansion)
	for _, t := range syns {
		w.Synonyms = append(w.Synonyms, Synonym{Term: t.term, Of: t.of, Relation: t.rel})
	}
	for _, t := range expansion {
		w.Expansion = append(w.Expansion, t.term)
	}
	lex, syn, prf := sc.lex[d], sc.syn[d], sc.prf[d]
	part := func(name string, value, weight, contribution float64) {
		w.Parts = append(w.Parts, Part{Name: name, Value: round(value), Weight: round(weight), Contribution: round(contribution)})
	}
	part(PartLexical, lex, 1, lex)
	part(PartSynonyms, syn, 1, syn)
	part(PartFeedback, prf, 1, prf)
	part(PartPrior, di.prior, 1, (lex+syn+prf)*(di.prior-1))
	for _, win := range ws {
		if win.Contains(di.Time) {
			w.Windows = append(w.Windows, win.Expr)
		}
	}
	inWin := 0.0
	if len(w.Windows) > 0 {
		inWin = p.Time
	}
	part(PartTime, (lex+syn+prf)*di.prior, inWin, (lex+syn+prf)*di.prior*inWin)
	nb := 0.0
	for dist := 1; dist <= 2; dist++ {
		for _, o := range []int{d - dist, d + dist} {
			if o >= 0 && o < len(ix.docs) && ix.docs[o].session == di.session && sc.base[o] > 0 && p.Neighbour[dist-1] != 0 {
				nb += p.Neighbour[dist-1] * sc.base[o] / ix.docs[o].prior
				w.Neighbours = append(w.Neighbours, ix.docs[o].ID)
			}
		}
	}
	part(PartNeighbour, nb, di.prior, nb*di.prior)
	best := sc.best[di.session]
	part(PartSession, best, p.Session*di.prior, p.Session*best*di.prior)
	w.Score = round(sc.final[d])
	return w
}

// round keeps six decimals: enough to compare, short to print (and no
// negative zero, which JSON would print as -0).
func round(x float64) float64 {
	r := math.Round(x*1e6) / 1e6
	if r == 0 {
		return 0
	}
	return r
}
