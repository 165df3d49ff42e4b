package retrieval

import (
	"slices"
	"sync/atomic"
)

// An index grows by Add: a conversation appends a turn at a time, and
// building the whole index again for each would cost what a search of a
// long conversation must not. Add gives the index Build would give for
// all the documents: the same terms, fields, entity links, averages and
// priors, so the same ranking to the last bit (TestAddRanksAsBuild).
//
// Most of it is local to the added documents. What is not:
//   - the averages of the field lengths, and so every document's length
//     prior: Add updates the averages, and the first search after it
//     works the priors out again (refreshPriors);
//   - the names the analyzer knows: a name learnt from an added document
//     changes how an earlier one that opens a sentence with that word
//     reads, and an alias or relation learnt changes an earlier turn's
//     entity links. Add notices both (liveState) and then builds the
//     index again from all the documents. Both are rare once a
//     conversation has introduced its people.

// liveState is what Add keeps beyond what Build does.
type liveState struct {
	// total is each field's length summed over every document.
	total [numFields]float64
	// ambiguous are the words some document opens a sentence (or a
	// field) with, capitalised, that are no name yet: were one learnt as
	// a name, that document would read differently.
	ambiguous map[string]bool
	// entities are the aliases and relations learnt from every document.
	entities *entityState
	// says[speaker][rel]: a document of speaker says "my REL".
	says map[string]map[string]bool
	// named are the names some document's text writes.
	named    map[string]bool
	speakers map[string]bool
}

// Doc is the i-th document built or added.
func (ix *Index) Doc(i int) Doc { return ix.docs[i].Doc }

// nameTokens are the names of a text, as Tokens would find them, without
// stemming the other words.
func (a *Analyzer) nameTokens(text string) []Token {
	var out []Token
	for i, w := range splitWords(text) {
		lower := lowerWord(w.text)
		if lower == "" || isStopWord(lower) || hasDigit(lower) {
			continue
		}
		if w.capital && (!w.sentenceStart || a.names[lower]) {
			out = append(out, Token{Term: lower, Name: true, Pos: i})
		}
	}
	return out
}

// note records what document d (analysed with the current names) means
// for later additions.
func (ls *liveState) note(an *Analyzer, d *Doc, ws []word, names []string) {
	ls.speakers[d.Speaker] = true
	mark := func(s string) {
		for _, w := range splitWords(s) {
			lower := lowerWord(w.text)
			if w.capital && w.sentenceStart && lower != "" && !isStopWord(lower) && !hasDigit(lower) && !an.names[lower] {
				ls.ambiguous[lower] = true
			}
		}
	}
	mark(d.Speaker)
	mark(d.Text)
	mark(d.Caption)
	for _, t := range d.Tags {
		mark(t)
	}
	for k := 0; k+1 < len(ws); k++ {
		if rel := lowerWord(ws[k+1].text); lowerWord(ws[k].text) == "my" && relations[rel] {
			if ls.says[d.Speaker] == nil {
				ls.says[d.Speaker] = map[string]bool{}
			}
			ls.says[d.Speaker][rel] = true
		}
	}
	for _, n := range names {
		ls.named[n] = true
	}
}

// PrepareAdd works out what Add and Append keep beyond what Build does
// (liveState) from every document built, unless that is done. The first
// Add or Append does it otherwise, and it reads every document (about a
// second at 100,000): an index built to grow while writers wait calls
// it once after Build, before any writer adds to it. It must not run
// concurrently with anything else on ix.
func (ix *Index) PrepareAdd() {
	if ix.live != nil {
		return
	}
	ls := &liveState{ambiguous: map[string]bool{}, entities: newEntityState(), says: map[string]map[string]bool{},
		named: map[string]bool{}, speakers: map[string]bool{}}
	for i := range ix.docs {
		di := &ix.docs[i]
		for f := Field(0); f < numFields; f++ {
			ls.total[f] += float64(di.length[f])
		}
		ws := splitWords(di.Text)
		names := namesOf(ix.an.nameTokens(di.Text))
		ls.entities.learn(di.Speaker, ws, names)
		ls.note(ix.an, &di.Doc, ws, names)
	}
	ix.live = ls
}

// Add appends documents to the index, after those built or added before
// (a Session continuing the last document's continues its session). It
// returns the index holding them all: ix itself, or, when the documents
// change how earlier ones read (see liveState), a new index built from
// all of them; use the one returned, never ix again. Add must not run
// concurrently with anything else on ix (Live serialises them).
func (ix *Index) Add(docs ...Doc) *Index { return ix.add(docs, true) }

// Append appends documents to the index as Add does, but never builds it
// again: when an added document would change how earlier ones read (a
// new name one of them opens a sentence with, an alias or relation
// learnt), the earlier documents keep how they read when they were
// added, and only the documents appended read with what was learnt. The
// ranking is then not quite Build's of all of them (a build from the
// same documents reads them all alike), but an append costs what the
// documents appended cost, however large the index: for an index too
// large to build again while a writer waits. After an Append that left
// earlier documents reading the old way, Add no longer ranks exactly as
// Build would either. Append must not run concurrently with anything
// else on ix.
func (ix *Index) Append(docs ...Doc) { ix.add(docs, false) }

// add is Add, building the index again only when mayRebuild.
func (ix *Index) add(docs []Doc, mayRebuild bool) *Index {
	if len(docs) == 0 {
		return ix
	}
	ix.PrepareAdd()
	ls, an := ix.live, ix.an
	rebuild := false
	// Names, learnt from all the documents before any is analysed, as
	// Build does; a new one that an earlier document opens a sentence
	// with changes that document.
	for _, d := range docs {
		var unknown []string
		for _, s := range []string{d.Speaker, d.Text, d.Caption} {
			for _, w := range splitWords(s) {
				if l := lowerWord(w.text); w.capital && !an.names[l] {
					unknown = append(unknown, l)
				}
			}
		}
		if !ls.speakers[d.Speaker] {
			ls.speakers[d.Speaker] = true
			an.learnName(d.Speaker)
		}
		an.Learn(d.Text)
		an.Learn(d.Caption)
		for _, l := range unknown {
			if an.names[l] && ls.ambiguous[l] {
				rebuild = true
			}
		}
	}
	if rebuild && mayRebuild {
		return ix.rebuilt(docs)
	}
	an.stems = map[string]string{}
	defer func() { an.stems = nil }()
	first := len(ix.docs)
	fields := make([][numFields][]Token, len(docs))
	words := make([][]word, len(docs))
	for k, d := range docs {
		i := first + k
		if i == 0 || d.Session != ix.docs[i-1].Session {
			ix.sessionDocs = append(ix.sessionDocs, [2]int32{int32(i), int32(i)})
		}
		s := int32(len(ix.sessionDocs) - 1)
		ix.sessionDocs[s][1] = int32(i)
		ix.docs = append(ix.docs, docInfo{Doc: d, session: s})
		fields[k][FieldSpeaker] = an.Tokens(d.Speaker)
		fields[k][FieldText] = an.Tokens(d.Text)
		fields[k][FieldCaption] = an.Tokens(d.Caption)
		for _, tag := range d.Tags {
			fields[k][FieldTags] = append(fields[k][FieldTags], an.Tokens(tag)...)
		}
		if !d.Time.IsZero() {
			if ix.span[0].IsZero() || d.Time.Before(ix.span[0]) {
				ix.span[0] = d.Time
			}
			if d.Time.After(ix.span[1]) {
				ix.span[1] = d.Time
			}
		}
		words[k] = splitWords(d.Text)
	}
	// Aliases and relations: one that an earlier document would carry
	// changes it (even at weight 0, through the document frequencies).
	es := ls.entities
	es.onAlias = func(speaker, rel, _ string) { rebuild = rebuild || ls.says[speaker][rel] }
	es.onRel = func(name, _ string) { rebuild = rebuild || ls.named[name] }
	for k, d := range docs {
		es.learn(d.Speaker, words[k], namesOf(fields[k][FieldText]))
	}
	es.onAlias, es.onRel = nil, nil
	if rebuild && mayRebuild {
		ix.docs = ix.docs[:first]
		return ix.rebuilt(docs)
	}
	namesAt := func(j int) []string {
		if j >= first {
			return namesOf(fields[j-first][FieldText])
		}
		return namesOf(an.nameTokens(ix.docs[j].Text))
	}
	for k := range docs {
		fields[k][FieldEntity] = es.link(ix.docs, first+k, words[k], namesAt)
	}
	for k := range docs {
		i := first + k
		di := &ix.docs[i]
		counts := map[string]*posting{}
		for f := Field(0); f < numFields; f++ {
			di.length[f] = float32(len(fields[k][f]))
			ls.total[f] += float64(len(fields[k][f]))
			for _, t := range fields[k][f] {
				p := counts[t.Term]
				if p == nil {
					p = &posting{doc: int32(i)}
					counts[t.Term] = p
				}
				if p.tf[f] < 65535 {
					p.tf[f]++
				}
			}
		}
		for term, p := range counts {
			ix.postings[term] = append(ix.postings[term], *p)
		}
		di.names = uint8(min(3, len(namesOf(fields[k][FieldText]))+len(namesOf(fields[k][FieldCaption]))))
		ls.note(an, &di.Doc, words[k], namesOf(fields[k][FieldText]))
	}
	n := float64(len(ix.docs))
	for f := range ls.total {
		ix.avg[f] = ls.total[f] / n
	}
	// Only the length prior weighs a document against the averages Add
	// has just moved: without it every prior stands, and the added
	// documents' are worked out here (not by the next search, which
	// would go through every document).
	avgWords := ix.avg[FieldText] + ix.avg[FieldCaption]
	for i := first; i < len(ix.docs); i++ {
		ix.docs[i].prior = docPrior(ix.params, &ix.docs[i], avgWords)
	}
	if ix.params.LengthPrior != 0 {
		ix.priorMu.Lock()
		ix.priorsStale = true
		ix.priorMu.Unlock()
	}
	return ix
}

// rebuilds counts the indexes Add built again (for tests: Append never
// does).
var rebuilds atomic.Int64

// rebuilt is a new index of ix's documents and docs.
func (ix *Index) rebuilt(docs []Doc) *Index {
	rebuilds.Add(1)
	all := make([]Doc, 0, len(ix.docs)+len(docs))
	for i := range ix.docs {
		all = append(all, ix.docs[i].Doc)
	}
	return Build(append(all, docs...), ix.params)
}

// refreshPriors works the priors out again once Add has changed the
// averages they weigh a document's length against.
func (ix *Index) refreshPriors() {
	ix.priorMu.Lock()
	defer ix.priorMu.Unlock()
	if !ix.priorsStale {
		return
	}
	avgWords := ix.avg[FieldText] + ix.avg[FieldCaption]
	for i := range ix.docs {
		ix.docs[i].prior = docPrior(ix.params, &ix.docs[i], avgWords)
	}
	ix.priorsStale = false
}

// Compact trims the posting lists that appending left with room to
// spare (up to twice what they hold): an index kept for long, as
// history's are, holds only what it needs. Add grows them again.
func (ix *Index) Compact() {
	for term, list := range ix.postings {
		if cap(list) > len(list)+len(list)/8 {
			ix.postings[term] = slices.Clip(slices.Clone(list))
		}
	}
	ix.sessionDocs = slices.Clip(ix.sessionDocs)
}
