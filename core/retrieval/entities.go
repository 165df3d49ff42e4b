package retrieval

// relations are the words by which people name someone close to them
// ("my brother"), and the animals they keep: an alias of a name.
var relations = map[string]bool{
	"brother": true, "sister": true, "mom": true, "mum": true, "mother": true, "dad": true,
	"father": true, "son": true, "daughter": true, "wife": true, "husband": true,
	"partner": true, "boyfriend": true, "girlfriend": true, "fiance": true, "fiancé": true,
	"fiancee": true, "fiancée": true, "cousin": true, "aunt": true, "uncle": true,
	"grandma": true, "grandmother": true, "grandpa": true, "grandfather": true,
	"niece": true, "nephew": true, "boss": true, "manager": true, "roommate": true,
	"flatmate": true, "friend": true, "dog": true, "cat": true, "puppy": true,
	"kitten": true, "rabbit": true, "bunny": true,
}

// pronouns refer back to someone named before.
var pronouns = map[string]bool{
	"he": true, "she": true, "him": true, "her": true, "his": true, "hers": true,
	"they": true, "them": true, "their": true,
}

// linkEntities works out each document's entity field, session by
// session, in order:
//   - a turn with a pronoun and no name of its own refers to the names
//     of the two turns before it in the session;
//   - a speaker's "my REL NAME" or "NAME, my REL" (or a turn with "my
//     REL" and one name) makes REL an alias of NAME for that speaker: a
//     later turn of theirs saying "my REL" without the name refers to
//     NAME, and every turn naming NAME carries REL too.
//
// The fields are the documents' analysed fields (text first).
func linkEntities(docs []docInfo, fields [][numFields][]Token) [][]Token {
	out := make([][]Token, len(docs))
	es := newEntityState()
	words := make([][]word, len(docs))
	for i, d := range docs {
		words[i] = splitWords(d.Text)
		es.learn(d.Speaker, words[i], namesOf(fields[i][FieldText]))
	}
	for i := range docs {
		out[i] = es.link(docs, i, words[i], func(j int) []string { return namesOf(fields[j][FieldText]) })
	}
	return out
}

// entityState is what linkEntities learns from every document before it
// links any: each speaker's aliases and each name's relations.
type entityState struct {
	// aliases[speaker][rel] = name, and relOf[name] = its relations.
	aliases map[string]map[string]string
	relOf   map[string]map[string]bool
	// onAlias and onRel, when set, hear each alias set and each
	// relation added (Add checks whether earlier documents care).
	onAlias func(speaker, rel, name string)
	onRel   func(name, rel string)
}

func newEntityState() *entityState {
	return &entityState{aliases: map[string]map[string]string{}, relOf: map[string]map[string]bool{}}
}

// learn reads a document's "my REL NAME" (its words ws, the names of its
// text names) into the aliases and relations.
func (es *entityState) learn(speaker string, ws []word, names []string) {
	for k := 0; k+1 < len(ws); k++ {
		if lowerWord(ws[k].text) != "my" || !relations[lowerWord(ws[k+1].text)] {
			continue
		}
		rel := lowerWord(ws[k+1].text)
		if es.aliases[speaker] == nil {
			es.aliases[speaker] = map[string]string{}
		}
		// "my brother Kenji", "Kenji, my brother": the name next to
		// it; else the one name of the turn, unless one is known.
		name := ""
		switch {
		case k+2 < len(ws) && ws[k+2].capital && contains(names, lowerWord(ws[k+2].text)):
			name = lowerWord(ws[k+2].text)
		case k > 0 && ws[k-1].capital && contains(names, lowerWord(ws[k-1].text)):
			name = lowerWord(ws[k-1].text)
		case len(names) == 1 && es.aliases[speaker][rel] == "":
			name = names[0]
		}
		if name == "" {
			continue
		}
		if es.onAlias != nil && es.aliases[speaker][rel] != name {
			es.onAlias(speaker, rel, name)
		}
		es.aliases[speaker][rel] = name
		if es.relOf[name] == nil {
			es.relOf[name] = map[string]bool{}
		}
		if es.onRel != nil && !es.relOf[name][rel] {
			es.onRel(name, rel)
		}
		es.relOf[name][rel] = true
	}
}

// link is document i's entity field: ws are its words, namesAt(j) the
// names of document j's text.
func (es *entityState) link(docs []docInfo, i int, ws []word, namesAt func(j int) []string) []Token {
	d := &docs[i]
	names := namesAt(i)
	var linked []string
	hasPronoun := false
	for k, w := range ws {
		l := lowerWord(w.text)
		if pronouns[l] {
			hasPronoun = true
		}
		if l == "my" && k+1 < len(ws) {
			if name, ok := es.aliases[d.Speaker][lowerWord(ws[k+1].text)]; ok && !contains(names, name) {
				linked = append(linked, name)
			}
		}
	}
	if hasPronoun && len(names) == 0 {
		for j := i - 1; j >= 0 && j >= i-2 && docs[j].session == d.session; j-- {
			linked = append(linked, namesAt(j)...)
		}
	}
	var toks []Token
	seen := map[string]bool{}
	for _, n := range linked {
		if !seen[n] {
			seen[n] = true
			toks = append(toks, Token{Term: n, Name: true})
		}
	}
	for _, n := range names {
		for rel := range es.relOf[n] {
			if st := stem(rel); !seen[st] {
				seen[st] = true
				toks = append(toks, Token{Term: st})
			}
		}
	}
	return toks
}

// namesOf are the distinct names among tokens (months and days of the
// week are no one's).
func namesOf(toks []Token) []string {
	var out []string
	for _, t := range toks {
		if t.Name && months[t.Term] == 0 && !weekdays[t.Term] && !contains(out, t.Term) {
			out = append(out, t.Term)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var weekdays = map[string]bool{"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true, "saturday": true, "sunday": true}
