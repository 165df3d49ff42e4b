package retrieval

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestThesaurusLoadsWordNetsRelations(t *testing.T) {
	if n := len(thesaurus()); n < 20_000 {
		t.Fatalf("the thesaurus has %d words, want the embedded table's 30,000 or so", n)
	}
	for _, c := range []struct {
		word, rel, want string
	}{
		{"relocate", RelHypernym, "move"},
		{"relocating", RelHypernym, "move"},
		{"vacation", RelSynonym, "holiday"},
		{"marry", RelSynonym, "wed"},
		{"marry", RelDerived, "marriag"},
		{"apply", RelDerived, "applic"},
		{"injury", RelHyponym, "twist"},
		{"pastime", RelHyponym, "hobbi"},
	} {
		syn, hyper, hypo, der := Related(c.word)
		got := map[string][]string{RelSynonym: syn, RelHypernym: hyper, RelHyponym: hypo, RelDerived: der}[c.rel]
		if !slices.Contains(got, c.want) {
			t.Errorf("Related(%q) %ss %v, want %q among them", c.word, c.rel, got, c.want)
		}
	}
	if syn, hyper, hypo, der := Related("blorfing"); syn != nil || hyper != nil || hypo != nil || der != nil {
		t.Errorf("Related of a word WordNet lacks: %v %v %v %v, want nothing", syn, hyper, hypo, der)
	}
}

// thesaurusOnly are plain params with one relation of the thesaurus on.
func thesaurusOnly(rel string, w float64) Params {
	p := plain()
	p.Synonyms, p.Hypernyms, p.Hyponyms, p.Derived = 0, 0, 0, 0
	switch rel {
	case RelSynonym:
		p.Synonyms = w
	case RelHypernym:
		p.Hypernyms = w
	case RelHyponym:
		p.Hyponyms = w
	case RelDerived:
		p.Derived = w
	}
	return p
}

func TestThesaurusFindsATurnWrittenInOtherWords(t *testing.T) {
	docs := append([]Doc{
		{ID: "moved", Session: "s1", Speaker: "Ana", Text: "We finally move to Denver next week, the boxes are everywhere."},
		{ID: "applied", Session: "s1", Speaker: "Ana", Text: "I sent my application to the shipping firm this morning."},
		{ID: "holiday", Session: "s1", Speaker: "Ana", Text: "Two weeks of holiday in Lisbon, finally."},
	}, filler(12, "s1", day0)...)
	for _, c := range []struct {
		query, rel, want, of, term string
	}{
		{"When is she relocating?", RelHypernym, "moved", "reloc", "move"},
		{"What job did she apply for?", RelDerived, "applied", "appli", "applic"},
		{"Where did she spend her vacation?", RelSynonym, "holiday", "vacat", "holiday"},
	} {
		off := Build(docs, thesaurusOnly("", 0))
		if rs := search(t, off, Query{Text: c.query}); slices.Contains(ids(rs), c.want) {
			t.Fatalf("%q: %q found without the thesaurus; the test needs a turn no query word finds", c.query, c.want)
		}
		ix := Build(docs, thesaurusOnly(c.rel, 0.5))
		rs := search(t, ix, Query{Text: c.query})
		if len(rs) == 0 || rs[0].ID != c.want {
			t.Fatalf("%q with %ss: got %v, want %q first", c.query, c.rel, ids(rs), c.want)
		}
		w := rs[0].Why
		if !slices.Contains(w.Synonyms, Synonym{Term: c.term, Of: c.of, Relation: c.rel}) {
			t.Errorf("%q: Why.Synonyms %v, want %s (%s of %s) among them", c.query, w.Synonyms, c.term, c.rel, c.of)
		}
		i := slices.IndexFunc(w.Terms, func(m TermMatch) bool { return m.Term == c.term })
		if i < 0 || w.Terms[i].SynonymOf != c.of || w.Terms[i].Score <= 0 {
			t.Errorf("%q: Why.Terms %+v, want %q marked as standing for %q", c.query, w.Terms, c.term, c.of)
		}
		sum, syn := 0.0, 0.0
		for _, p := range w.Parts {
			sum += p.Contribution
			if p.Name == PartSynonyms {
				syn = p.Contribution
			}
		}
		if syn <= 0 || !near(sum, w.Score) {
			t.Errorf("%q: parts %+v: the synonyms part %v, want > 0 and the parts adding up to %v", c.query, w.Parts, syn, w.Score)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-4 && b-a < 1e-4 }

func TestThesaurusLeavesNamesAndNumbersAlone(t *testing.T) {
	// "Pepper" is a dog here, not the spice; "bill" has synonyms
	// ("account", "note") but Bill is a person.
	docs := append([]Doc{
		{ID: "dog", Session: "s1", Speaker: "Ana", Text: "Pepper chewed my shoe again."},
		{ID: "vet", Session: "s1", Speaker: "Ana", Text: "We took Pepper to the vet."},
		{ID: "spice", Session: "s1", Speaker: "Ana", Text: "Too much spice in the soup, it was a kind of attack."},
		{ID: "bill", Session: "s1", Speaker: "Ana", Text: "I owe Bill a coffee."},
		{ID: "note", Session: "s1", Speaker: "Ana", Text: "I left a note on the account."},
	}, filler(8, "s1", day0)...)
	p := plain()
	p.Synonyms, p.Hypernyms, p.Hyponyms, p.Derived = 1, 1, 1, 1
	ix := Build(docs, p)
	for _, q := range []string{"What did Pepper chew?", "What does Ana owe Bill?", "Who owes 20 dollars?"} {
		for _, r := range search(t, ix, Query{Text: q}) {
			for _, s := range r.Why.Synonyms {
				if s.Of == "pepper" || s.Of == "bill" || s.Of == "20" {
					t.Errorf("%q expanded the name or number %q into %q", q, s.Of, s.Term)
				}
			}
		}
	}
}

func TestThesaurusExpansionIsBounded(t *testing.T) {
	// Sixty words of the thesaurus, each in some document, and a
	// query of all of them: the expansion fills the query up to
	// MaxQueryTerms and no further.
	var words []string
	for _, st := range slices.Sorted(maps.Keys(thesaurus())) {
		if r, _ := lookup(st); len(r.synonyms) > 2 && len(st) > 4 && stem(st) == st {
			words = append(words, st)
		}
		if len(words) == 60 {
			break
		}
	}
	var docs []Doc
	for _, w := range words {
		r, _ := lookup(w)
		docs = append(docs, Doc{ID: w, Session: "s1", Speaker: "Ana", Text: w + " " + strings.Join(r.synonyms, " ")})
	}
	p := plain()
	p.Synonyms, p.Hypernyms, p.Hyponyms, p.Derived = 0.5, 0.5, 0.5, 0.5
	ix := Build(docs, p)
	terms := ix.queryTerms(strings.Join(words, " "))
	exp := ix.synonyms(terms)
	if len(terms)+len(exp) != MaxQueryTerms {
		t.Errorf("%d query terms and %d expansions, want %d in all", len(terms), len(exp), MaxQueryTerms)
	}
	rs := search(t, ix, Query{Text: strings.Join(words[:3], " "), Limit: 100})
	if len(rs) == 0 || len(rs[0].Why.Synonyms) == 0 {
		t.Fatalf("a three-word query was not expanded: %+v", rs)
	}
	ix = Build(docs, thesaurusOnly("", 0))
	if exp := ix.synonyms(ix.queryTerms(strings.Join(words[:3], " "))); exp != nil {
		t.Errorf("every relation off, expansion %+v, want none", exp)
	}
}
