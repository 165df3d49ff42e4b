// Package search is a BM25 inverted index kept in the store: postings are
// key-only (idx/<space>/t/<term>/<doc>.<attr><tf>.<length>), written in the
// transaction that writes the document, so that a query is answered from
// key scans alone. Memory stores use it; it knows nothing of what the
// documents are.
package search

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// Index is the index of one space of documents (e.g. a memory store).
type Index struct {
	// Space names the index under idx/, e.g. "memory/working".
	Space string
}

func (ix Index) termPrefix(term string) []byte {
	return storage.PrefixKey(storage.PrefixIndex, ix.Space, "t", term)
}

func (ix Index) postingKey(term, doc string, attr byte, tf, length int) []byte {
	return storage.Key(storage.PrefixIndex, ix.Space, "t", term, doc+"."+string(attr)+strconv.Itoa(tf)+"."+strconv.Itoa(length))
}

// Add indexes a document's text; attr is one byte the caller may filter on
// without reading the document (e.g. a speaker). It returns the document's
// length in terms, for the caller's statistics.
func (ix Index) Add(tx *storage.Tx, doc, body string, attr byte) (int, error) {
	counts, length := text.TermCounts(body)
	for term, tf := range counts {
		if err := tx.Set(ix.postingKey(term, doc, attrOrDefault(attr), tf, length), nil); err != nil {
			return 0, err
		}
	}
	return length, nil
}

// Remove unindexes a document added with the same text and attr, and
// returns its length.
func (ix Index) Remove(tx *storage.Tx, doc, body string, attr byte) (int, error) {
	counts, length := text.TermCounts(body)
	for term, tf := range counts {
		if err := tx.Delete(ix.postingKey(term, doc, attrOrDefault(attr), tf, length)); err != nil {
			return 0, err
		}
	}
	return length, nil
}

func attrOrDefault(a byte) byte {
	if a == 0 {
		return '-'
	}
	return a
}

// Stats are the collection's figures BM25 needs.
type Stats struct {
	Docs        int // documents indexed
	TotalLength int // their summed lengths in terms
}

// Posting is one document's entry in a term's list.
type Posting struct {
	Doc    string
	Attr   byte
	TF     int // how often the term occurs in the document
	Length int // the document's length in terms
}

// Postings reads a term's whole list from the store, in key order.
func (ix Index) Postings(tx *storage.Tx, term string) ([]Posting, error) {
	var list []Posting
	err := tx.Keys(storage.Prefix(ix.termPrefix(term)), func(k []byte) error {
		doc, attr, tf, length, err := parsePosting(storage.LastPart(k))
		if err != nil {
			return err
		}
		// The id alone is kept: doc is a slice of the whole key, which
		// the list (cached by remember) would otherwise hold on to.
		list = append(list, Posting{Doc: strings.Clone(doc), Attr: attr, TF: tf, Length: length})
		return nil
	})
	return list, err
}

// Scores returns the BM25 score of every document sharing a term with the
// query (stemmed; stop words ignored), for which keep (if not nil) is true.
// A query of stop words only scores nothing: callers that must match those
// fall back to reading documents.
func (ix Index) Scores(tx *storage.Tx, query string, st Stats, keep func(doc string, attr byte) bool) (map[string]float64, error) {
	return ix.ScoresFrom(func(term string) ([]Posting, error) { return ix.Postings(tx, term) }, query, st, keep)
}

// ScoresFrom is Scores with each term's postings from postings (a cache
// of Postings), which must return the whole list as the store holds it.
func (ix Index) ScoresFrom(postings func(term string) ([]Posting, error), query string, st Stats, keep func(doc string, attr byte) bool) (map[string]float64, error) {
	scores := map[string]float64{}
	avg := 1.0
	if st.Docs > 0 {
		avg = float64(st.TotalLength) / float64(st.Docs)
	}
	seen := map[string]bool{}
	for _, term := range text.Terms(query) {
		if seen[term] {
			continue
		}
		seen[term] = true
		// df counts every document with the term, kept or not.
		list, err := postings(term)
		if err != nil {
			return nil, err
		}
		df := len(list)
		for _, p := range list {
			if keep == nil || keep(p.Doc, p.Attr) {
				scores[p.Doc] += text.BM25{}.Score(p.TF, df, st.Docs, float64(p.Length), avg)
			}
		}
	}
	return scores, nil
}

// parsePosting reads "<doc>.<attr><tf>.<length>" (the doc may hold dots).
func parsePosting(s string) (doc string, attr byte, tf, length int, err error) {
	j := strings.LastIndexByte(s, '.')
	i := strings.LastIndexByte(s[:max(j, 0)], '.')
	if i < 0 || j < 0 || j-i < 3 {
		return "", 0, 0, 0, errors.New("search: malformed posting " + s)
	}
	doc, attr = s[:i], s[i+1]
	if tf, err = strconv.Atoi(s[i+2 : j]); err != nil {
		return "", 0, 0, 0, err
	}
	length, err = strconv.Atoi(s[j+1:])
	return doc, attr, tf, length, err
}

// DocScore is a document's score.
type DocScore struct {
	Doc   string
	Score float64
}

// SortPostings orders a term's list by document, as ScoresSorted reads
// it (key order differs when a document id is a prefix of another).
func SortPostings(list []Posting) {
	slices.SortStableFunc(list, func(a, b Posting) int { return strings.Compare(a.Doc, b.Doc) })
}

// ScoresSorted is ScoresFrom's scores as a list ordered by document,
// merged from the terms' lists without a map: postings must return each
// list sorted by document (SortPostings). Each score is summed in the
// same order as ScoresFrom sums it, so the two agree to the bit.
func (ix Index) ScoresSorted(postings func(term string) ([]Posting, error), query string, st Stats, keep func(doc string, attr byte) bool) ([]DocScore, error) {
	var lists []TermList
	seen := map[string]bool{}
	for _, term := range text.Terms(query) {
		if seen[term] {
			continue
		}
		seen[term] = true
		list, err := postings(term)
		if err != nil {
			return nil, err
		}
		lists = append(lists, TermList{Postings: list, Weight: 1})
	}
	return ScoreLists(lists, st, keep), nil
}

// TermList is one query term's postings to score, and how: its BM25
// times Weight. Flat are the documents holding the term in a field with
// no length of its own (an item's tags, whose index keys carry none),
// sorted by document, each holding it once; such a field weighs
// FlatWeight of an occurrence in the text of average length, the two
// weighed together as BM25F does (the term saturates across fields,
// and its document frequency counts the documents holding it in either).
type TermList struct {
	Postings   []Posting
	Weight     float64
	Flat       []Posting
	FlatWeight float64
	// DF, when above 0, is the term's document frequency worked out
	// before (WithDF): with a flat field it is a merge of the two lists,
	// which ScoreOf would otherwise redo for every document it explains.
	DF int
}

// WithDF is l with its document frequency worked out once (DF), for a
// caller that scores or explains many documents with it.
func (l TermList) WithDF() TermList {
	l.DF = 0
	l.DF = l.df()
	return l
}

// df is how many documents hold the term, in the text or the flat field.
func (l TermList) df() int {
	if l.DF > 0 {
		return l.DF
	}
	if len(l.Flat) == 0 {
		return len(l.Postings)
	}
	n, i, j := 0, 0, 0
	for i < len(l.Postings) || j < len(l.Flat) {
		switch {
		case j == len(l.Flat) || i < len(l.Postings) && l.Postings[i].Doc < l.Flat[j].Doc:
			i++
		case i == len(l.Postings) || l.Flat[j].Doc < l.Postings[i].Doc:
			j++
		default:
			i++
			j++
		}
		n++
	}
	return n
}

// scorer is the list's BM25 term scorer over a collection of st's
// figures, and the collection's average length.
func (l TermList) scorer(st Stats) (text.TermScorer, float64) {
	avg := 1.0
	if st.Docs > 0 {
		avg = float64(st.TotalLength) / float64(st.Docs)
	}
	var ts text.TermScorer
	if st.Docs > 0 {
		// A term's scorer works out its idf once (TermScorer.Score is
		// exactly BM25.Score for the same figures).
		ts = text.BM25{}.Term(l.df(), st.Docs, avg)
	}
	return ts, avg
}

// score is what the list adds for a document holding the term in its
// text (p, nil if not) and flat times in the flat field; flatShare is
// the flat field's part of it. Without the flat field it is plain BM25
// to the bit.
func (l TermList) score(ts text.TermScorer, p *Posting, flat int) (score, flatShare float64) {
	if flat == 0 {
		if p == nil {
			return 0, 0
		}
		return ts.Score(p.TF, float64(p.Length)) * l.Weight, 0
	}
	tf, ft := 0.0, l.FlatWeight*float64(flat)
	if p != nil && p.TF > 0 {
		tf = float64(p.TF) / ts.Norm(float64(p.Length))
	}
	score = ts.Fielded(tf+ft) * l.Weight
	return score, score * ft / (tf + ft)
}

// ScoreOf is what the list adds to a document's score (as ScoreLists
// sums it), and the flat field's part of that: for explaining one
// document's score without merging the lists again.
func (l TermList) ScoreOf(doc string, st Stats) (score, flatShare float64) {
	ts, _ := l.scorer(st)
	find := func(list []Posting) (*Posting, int) {
		i, ok := slices.BinarySearchFunc(list, doc, func(p Posting, d string) int { return strings.Compare(p.Doc, d) })
		if !ok {
			return nil, 0
		}
		n := 1
		for i+n < len(list) && list[i+n].Doc == doc {
			n++
		}
		return &list[i], n
	}
	p, _ := find(l.Postings)
	_, flat := find(l.Flat)
	return l.score(ts, p, flat)
}

// ScoreLists sums the lists' scores by document (for which keep, if not
// nil, holds), ordered by document, merged without a map: each list
// must be sorted by document (SortPostings). A list's document
// frequency counts every document, kept or not.
func ScoreLists(lists []TermList, st Stats, keep func(doc string, attr byte) bool) []DocScore {
	scorers := make([]text.TermScorer, len(lists))
	total := 0
	for i, l := range lists {
		scorers[i], _ = l.scorer(st)
		total += len(l.Postings) + len(l.Flat)
	}
	out := make([]DocScore, 0, total)
	pos := make([]int, len(lists))
	fpos := make([]int, len(lists))
	for {
		doc, found := "", false
		for i, l := range lists {
			if pos[i] < len(l.Postings) && (!found || l.Postings[pos[i]].Doc < doc) {
				doc, found = l.Postings[pos[i]].Doc, true
			}
			if fpos[i] < len(l.Flat) && (!found || l.Flat[fpos[i]].Doc < doc) {
				doc, found = l.Flat[fpos[i]].Doc, true
			}
		}
		if !found {
			return out
		}
		score, kept := 0.0, false
		for i, l := range lists {
			var text *Posting
			for ; pos[i] < len(l.Postings) && l.Postings[pos[i]].Doc == doc; pos[i]++ {
				if p := &l.Postings[pos[i]]; keep == nil || keep(p.Doc, p.Attr) {
					if len(l.Flat) == 0 {
						sc, _ := l.score(scorers[i], p, 0)
						score += sc
					} else {
						text = p
					}
					kept = true
				}
			}
			flat := 0
			for ; fpos[i] < len(l.Flat) && l.Flat[fpos[i]].Doc == doc; fpos[i]++ {
				if p := l.Flat[fpos[i]]; keep == nil || keep(p.Doc, p.Attr) {
					flat++
					kept = true
				}
			}
			if len(l.Flat) > 0 && (text != nil || flat > 0) {
				sc, _ := l.score(scorers[i], text, flat)
				score += sc
			}
		}
		if kept {
			out = append(out, DocScore{Doc: doc, Score: score})
		}
	}
}
