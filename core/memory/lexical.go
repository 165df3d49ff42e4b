package memory

import (
	"slices"
	"strings"

	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/core/text"
)

// The lexical stage of remember: BM25 over the store's persisted postings
// (its first stage at any size: no index of all items is held in
// memory), sharing retrieval's thesaurus and field weights
// (retrieval.DefaultParams, as history.search ranks): a prompt's word also
// looks for its related words in the same postings, each at its
// relation's weight ("apply" finds "application" at Derived, 0.8), and a
// prompt word that is one of an item's tags counts as the word in the
// tags field, weighed Weight[FieldTags] (0.7) against the text, the two
// fields together as BM25F (search.TermList).

// The kinds of a lexical query's lists.
const (
	lexExact = iota
	lexThesaurus
)

// lexQuery is the lexical stage's query: the prompt's terms (with the
// items tagged with their words), then their thesaurus expansion, each a
// scored list.
type lexQuery struct {
	lists []search.TermList
	terms []lexTerm // one per list
	stats search.Stats
}

// lexTerm says what a list of a lexQuery stands for.
type lexTerm struct {
	kind int
	// term is the stem looked up.
	term string
	// word is the prompt's word as written: the first with the term,
	// or (lexThesaurus) the one the thesaurus word stands for.
	word string
	// rel is a thesaurus word's relation (retrieval.RelDerived, ...).
	rel string
	// tags are the prompt's words with the term that are tags, and the
	// items holding each (sorted by item).
	tags  []string
	items [][]search.Posting
}

// tagWeight is the weight of the tags field against the text:
// retrieval's.
var tagWeight = retrieval.DefaultParams.Weight[retrieval.FieldTags]

// lexicalQuery reads the lists of the prompt's distinct terms (in
// text.Terms order, so that an item matching none of the rest scores to
// the bit what plain BM25 gave it) with the items tagged with their
// words, then the lists of their thesaurus expansion: words held by an
// item keep (if not nil) holds, so that a soft-forgotten item's word
// neither expands a recall nor shows in its why.
func lexicalQuery(prompt string, stats search.Stats, postings, tags func(string) ([]search.Posting, error), keep func(doc string, attr byte) bool) (*lexQuery, error) {
	q := &lexQuery{stats: stats}
	var qterms []retrieval.QueryTerm
	at := map[string]int{}
	seen := map[string]bool{}
	for _, w := range text.Words(prompt) {
		t := text.Term(w)
		if t == "" || seen[w] {
			continue
		}
		seen[w] = true
		i, ok := at[t]
		if !ok {
			list, err := postings(t)
			if err != nil {
				return nil, err
			}
			i = len(q.lists)
			at[t] = i
			q.lists = append(q.lists, search.TermList{Postings: list, Weight: 1})
			q.terms = append(q.terms, lexTerm{kind: lexExact, term: t, word: w})
			qterms = append(qterms, retrieval.QueryTerm{Term: t, Weight: 1})
		}
		tagged, err := tags(w)
		if err != nil {
			return nil, err
		}
		if len(tagged) > 0 {
			l, lt := &q.lists[i], &q.terms[i]
			l.FlatWeight = tagWeight
			if len(l.Flat) == 0 {
				l.Flat = tagged // cached and sorted: not to be changed
			} else {
				// Another word of the term ("launch", "launches") is a
				// tag too: the two lists in one, sorted by item.
				l.Flat = append(slices.Clone(l.Flat), tagged...)
				search.SortPostings(l.Flat)
			}
			lt.tags, lt.items = append(lt.tags, w), append(lt.items, tagged)
		}
	}
	// A word the prompt writes as a name (capitalised inside a sentence)
	// lends no related words, as in history's search.
	for _, tok := range retrieval.NewAnalyzer().Tokens(prompt) {
		if !tok.Name {
			continue
		}
		if i, ok := at[text.Term(tok.Term)]; ok {
			qterms[i].Name = true
		}
	}
	read := map[string][]search.Posting{}
	var readErr error
	has := func(term string) bool {
		if readErr != nil {
			return false
		}
		list, err := postings(term)
		if err != nil {
			readErr = err
			return false
		}
		read[term] = list
		return slices.ContainsFunc(list, func(p search.Posting) bool { return keep == nil || keep(p.Doc, p.Attr) })
	}
	for _, e := range retrieval.DefaultParams.Expand(qterms, nil, has) {
		q.lists = append(q.lists, search.TermList{Postings: read[e.Term], Weight: e.Weight})
		q.terms = append(q.terms, lexTerm{kind: lexThesaurus, term: e.Term, word: q.terms[at[e.Of]].word, rel: e.Relation})
	}
	if readErr != nil {
		return nil, readErr
	}
	// A common tag's items merge with the text's postings for the
	// document frequency: once here, not for each item explained.
	for i := range q.lists {
		q.lists[i] = q.lists[i].WithDF()
	}
	return q, nil
}

// tagged says some word of the prompt is a tag of some item.
func (q *lexQuery) tagged() bool {
	for _, l := range q.lists {
		if len(l.Flat) > 0 {
			return true
		}
	}
	return false
}

// scores are the items' lexical scores, by item (see search.ScoreLists).
func (q *lexQuery) scores(keep func(doc string, attr byte) bool) []search.DocScore {
	return search.ScoreLists(q.lists, q.stats, keep)
}

// lexShare is what an item's lexical score is made of.
type lexShare struct {
	// thesaurus is what the thesaurus words add (at their weights);
	// tags is the tags field's share of the prompt's words' score.
	thesaurus, tags float64
	// synonyms are the thesaurus words the item holds; tagged the tags
	// it has that are words of the prompt.
	synonyms []lexTerm
	tagged   []string
}

// share is what an item's score is made of (the lists are sorted by
// item: each is searched for it).
func (q *lexQuery) share(id string) lexShare {
	var out lexShare
	if q == nil {
		return out
	}
	for i, l := range q.lists {
		t := q.terms[i]
		if t.kind == lexExact && len(t.tags) == 0 {
			continue
		}
		sc, flat := l.ScoreOf(id, q.stats)
		if t.kind == lexThesaurus {
			if sc > 0 {
				out.thesaurus += sc
				out.synonyms = append(out.synonyms, t)
			}
			continue
		}
		out.tags += flat
		for j, items := range t.items {
			if _, ok := slices.BinarySearchFunc(items, id, func(p search.Posting, id string) int { return strings.Compare(p.Doc, id) }); ok {
				out.tagged = append(out.tagged, t.tags[j])
			}
		}
	}
	return out
}

// expansion is the thesaurus words the prompt was expanded with.
func (q *lexQuery) expansion() []retrieval.Synonym {
	if q == nil {
		return nil
	}
	var out []retrieval.Synonym
	for _, t := range q.terms {
		if t.kind == lexThesaurus {
			out = append(out, retrieval.Synonym{Term: t.term, Of: t.word, Relation: t.rel})
		}
	}
	return out
}

// thesaurusMatches are the item's words that a thesaurus word of share
// stands for: the first word of its text with that term as written, how
// often the text holds the term, and the prompt's word it stood for.
func thesaurusMatches(it *Item, sh lexShare) []MatchedTerm {
	if len(sh.synonyms) == 0 {
		return nil
	}
	words := text.Words(it.Text)
	var out []MatchedTerm
	for _, t := range sh.synonyms {
		m := MatchedTerm{Field: "text", SynonymOf: t.word, Relation: t.rel}
		for _, w := range words {
			if text.Term(w) == t.term {
				if m.Count == 0 {
					m.Term = w
				}
				m.Count++
			}
		}
		if m.Count > 0 {
			out = append(out, m)
		}
	}
	return out
}
