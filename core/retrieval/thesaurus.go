package retrieval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
)

//go:generate go run ./internal/mkthesaurus -wordnet /tmp/wn/usr/share/wordnet -o thesaurus.txt.gz

// thesaurusGz is a general English thesaurus derived from WordNet 3.0
// (internal/mkthesaurus says how; WORDNET-LICENSE is its licence): for a
// word's Snowball stem, the stems of its synonyms and of its direct
// hypernyms, in its most frequent senses, common words only.
//
//go:embed thesaurus.txt.gz
var thesaurusGz []byte

// related are a stem's thesaurus entries.
type related struct {
	synonyms, hypernyms, hyponyms, derived []string
}

var (
	thesaurusOnce sync.Once
	thesaurusMap  map[string]string
)

// thesaurus is the table, each stem's line without the stem, read once,
// on first use (some 40 ms and 4 MB of heap): an index that never
// expands a query never pays for it. A line is split into its lists
// only when a query asks for it (lookup).
func thesaurus() map[string]string {
	thesaurusOnce.Do(func() {
		thesaurusMap = parseThesaurus(thesaurusGz)
	})
	return thesaurusMap
}

// parseThesaurus reads the table's lines (stem, synonyms, hypernyms,
// hyponyms, derived words, tab-separated, each list space-separated).
// The table is built into the binary and tested, so a bad table is an
// empty one, not a crash.
func parseThesaurus(gz []byte) map[string]string {
	out := map[string]string{}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if stem, rest, ok := strings.Cut(sc.Text(), "\t"); ok {
			out[stem] = rest
		}
	}
	return out
}

// lookup is a stem's entry in the thesaurus.
func lookup(stem string) (related, bool) {
	line, ok := thesaurus()[stem]
	if !ok {
		return related{}, false
	}
	lists := strings.SplitN(line, "\t", 4)
	for len(lists) < 4 {
		lists = append(lists, "")
	}
	return related{synonyms: strings.Fields(lists[0]), hypernyms: strings.Fields(lists[1]), hyponyms: strings.Fields(lists[2]), derived: strings.Fields(lists[3])}, true
}

// Related are the thesaurus's synonyms, broader words (hypernyms),
// narrower words (hyponyms) and derived words of a word, as the stems the
// Analyzer indexes (all nil when the thesaurus has no entry).
func Related(word string) (synonyms, hypernyms, hyponyms, derived []string) {
	r, _ := lookup(stem(strings.ToLower(word)))
	return r.synonyms, r.hypernyms, r.hyponyms, r.derived
}

// The relations of a thesaurus term to the query's term it stands for.
const (
	RelSynonym  = "synonym"
	RelHypernym = "hypernym"
	RelHyponym  = "hyponym"
	RelDerived  = "derived"
)

// Synonym is a term a query was expanded with from the thesaurus.
type Synonym struct {
	// Term is the stem searched for.
	Term string `json:"term"`
	// Of is the query's term it stands for.
	Of string `json:"of"`
	// Relation is how: RelSynonym ("move" for "relocate"), RelHypernym
	// (a broader word: "journey" for "trip"), RelHyponym (a narrower
	// one: "sprain" for "injury") or RelDerived ("employ" for
	// "employer").
	Relation string `json:"relation"`
}

// QueryTerm is a term of a query as Expand reads it.
type QueryTerm struct {
	// Term is the term as the Analyzer indexes it (a Snowball stem).
	Term string
	// Weight is how much the query asks for it (1 for a word asked
	// once).
	Weight float64
	// Name says the query writes the word as a name: a name lends no
	// related words ("Rose" is not a flower).
	Name bool
}

// Expansion is a thesaurus term a query is expanded with.
type Expansion struct {
	Synonym
	// Weight is its relation's weight (Params.Synonyms, Hypernyms,
	// Hyponyms, Derived) times the weight of the query term it stands
	// for.
	Weight float64
}

// Expand expands a query's terms from the thesaurus at p's weights, as
// Index.Search does: each term that is not a name or a number lends its
// related words, each at its relation's weight times its own. The
// expansion takes each term's first related word in turn, then the
// second, and so on, and stops when the query and its expansion reach
// MaxQueryTerms terms: a long query reads a bounded number of posting
// lists. Terms already asked, names (isName, when set) and words no
// document holds (has says which do) are left out. A caller with its own
// postings (memory's, persisted) shares the thesaurus and its weights
// this way.
func (p Params) Expand(terms []QueryTerm, isName, has func(term string) bool) []Expansion {
	if p.Synonyms == 0 && p.Hypernyms == 0 && p.Hyponyms == 0 && p.Derived == 0 || len(terms) == 0 {
		return nil
	}
	if isName == nil {
		isName = func(string) bool { return false }
	}
	seen := map[string]bool{}
	for _, t := range terms {
		seen[t.Term] = true
	}
	type word struct {
		term, rel string
		weight    float64
	}
	var srcs [][]word
	var of []QueryTerm
	for _, t := range terms {
		if t.Name || isName(t.Term) || hasDigit(t.Term) {
			continue
		}
		r, ok := lookup(t.Term)
		if !ok {
			continue
		}
		var words []word
		for _, l := range []struct {
			terms  []string
			rel    string
			weight float64
		}{{r.synonyms, RelSynonym, p.Synonyms}, {r.derived, RelDerived, p.Derived}, {r.hypernyms, RelHypernym, p.Hypernyms}, {r.hyponyms, RelHyponym, p.Hyponyms}} {
			if l.weight == 0 {
				continue
			}
			for _, w := range l.terms {
				words = append(words, word{w, l.rel, l.weight})
			}
		}
		if len(words) > 0 {
			srcs = append(srcs, words)
			of = append(of, t)
		}
	}
	var out []Expansion
	room := MaxQueryTerms - len(terms)
	for i := 0; room > 0; i++ {
		more := false
		for j, words := range srcs {
			if i >= len(words) || room == 0 {
				continue
			}
			more = true
			w := words[i]
			if seen[w.term] || isName(w.term) || !has(w.term) {
				continue
			}
			seen[w.term] = true
			out = append(out, Expansion{Synonym: Synonym{Term: w.term, Of: of[j].Term, Relation: w.rel}, Weight: w.weight * of[j].Weight})
			room--
		}
		if !more {
			break
		}
	}
	return out
}

// synonyms expands the query's terms from the thesaurus (Expand, at the
// index's Params, over the names and postings the index holds).
func (ix *Index) synonyms(terms []qterm) []qterm {
	qs := make([]QueryTerm, len(terms))
	for i, t := range terms {
		qs[i] = QueryTerm{Term: t.term, Weight: t.weight, Name: t.name}
	}
	var out []qterm
	for _, e := range ix.params.Expand(qs, ix.an.IsName, func(term string) bool { return len(ix.postings[term]) > 0 }) {
		out = append(out, qterm{term: e.Term, weight: e.Weight, syn: true, of: e.Of, rel: e.Relation})
	}
	return out
}
