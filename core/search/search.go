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
	avg := 1.0
	if st.Docs > 0 {
		avg = float64(st.TotalLength) / float64(st.Docs)
	}
	var lists [][]Posting
	seen := map[string]bool{}
	total := 0
	for _, term := range text.Terms(query) {
		if seen[term] {
			continue
		}
		seen[term] = true
		list, err := postings(term)
		if err != nil {
			return nil, err
		}
		lists = append(lists, list)
		total += len(list)
	}
	// A term's scorer works out its idf once (TermScorer.Score is exactly
	// BM25.Score for the same figures).
	scorers := make([]text.TermScorer, len(lists))
	for i, l := range lists {
		if st.Docs > 0 {
			scorers[i] = text.BM25{}.Term(len(l), st.Docs, avg)
		}
	}
	out := make([]DocScore, 0, total)
	pos := make([]int, len(lists))
	for {
		doc, found := "", false
		for i, l := range lists {
			if pos[i] < len(l) && (!found || l[pos[i]].Doc < doc) {
				doc, found = l[pos[i]].Doc, true
			}
		}
		if !found {
			return out, nil
		}
		score, kept := 0.0, false
		for i, l := range lists {
			for ; pos[i] < len(l) && l[pos[i]].Doc == doc; pos[i]++ {
				if p := l[pos[i]]; keep == nil || keep(p.Doc, p.Attr) {
					score += scorers[i].Score(p.TF, float64(p.Length))
					kept = true
				}
			}
		}
		if kept {
			out = append(out, DocScore{Doc: doc, Score: score})
		}
	}
}
