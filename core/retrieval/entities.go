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
	// aliases[speaker][rel] = name, and relOf[name] = its relations.
	aliases := map[string]map[string]string{}
	relOf := map[string]map[string]bool{}
	words := make([][]word, len(docs))
	for i, d := range docs {
		words[i] = splitWords(d.Text)
		names := namesOf(fields[i][FieldText])
		ws := words[i]
		for k := 0; k+1 < len(ws); k++ {
			if lowerWord(ws[k].text) != "my" || !relations[lowerWord(ws[k+1].text)] {
				continue
			}
			rel := lowerWord(ws[k+1].text)
			if aliases[d.Speaker] == nil {
				aliases[d.Speaker] = map[string]string{}
			}
			// "my brother Kenji", "Kenji, my brother": the name next to
			// it; else the one name of the turn, unless one is known.
			name := ""
			switch {
			case k+2 < len(ws) && ws[k+2].capital && contains(names, lowerWord(ws[k+2].text)):
				name = lowerWord(ws[k+2].text)
			case k > 0 && ws[k-1].capital && contains(names, lowerWord(ws[k-1].text)):
				name = lowerWord(ws[k-1].text)
			case len(names) == 1 && aliases[d.Speaker][rel] == "":
				name = names[0]
			}
			if name == "" {
				continue
			}
			aliases[d.Speaker][rel] = name
			if relOf[name] == nil {
				relOf[name] = map[string]bool{}
			}
			relOf[name][rel] = true
		}
	}
	for i, d := range docs {
		names := namesOf(fields[i][FieldText])
		var linked []string
		hasPronoun := false
		for k, w := range words[i] {
			l := lowerWord(w.text)
			if pronouns[l] {
				hasPronoun = true
			}
			if l == "my" && k+1 < len(words[i]) {
				if name, ok := aliases[d.Speaker][lowerWord(words[i][k+1].text)]; ok && !contains(names, name) {
					linked = append(linked, name)
				}
			}
		}
		if hasPronoun && len(names) == 0 {
			for j := i - 1; j >= 0 && j >= i-2 && docs[j].session == d.session; j-- {
				linked = append(linked, namesOf(fields[j][FieldText])...)
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
			for rel := range relOf[n] {
				if st := stem(rel); !seen[st] {
					seen[st] = true
					toks = append(toks, Token{Term: st})
				}
			}
		}
		out[i] = toks
	}
	return out
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
