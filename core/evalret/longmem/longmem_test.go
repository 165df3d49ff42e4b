package longmem

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/engram-console/engram/core/evalret"
)

var update = flag.Bool("update", false, "rewrite testdata/eval/engram-longmem.json from the generator")

// path is the committed set, from this package's directory.
const path = "../../../testdata/eval/engram-longmem.json"

// TestCommittedSetIsTheGeneratorsOutput: the file in testdata/eval is
// exactly what Generate makes, so that a change to one is a change to the
// other (go test ./core/evalret/longmem -update rewrites the file).
func TestCommittedSetIsTheGeneratorsOutput(t *testing.T) {
	want, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the generator makes: run go test ./core/evalret/longmem -update and read the diff", path)
	}
	if _, err := evalret.Decode(got); err != nil {
		t.Fatalf("the committed set does not read: %v", err)
	}
}

// TestSetIsLongAndBalanced holds the set to issue 18's shape: at least 4
// conversations, each of 300 turns or more over 10 sessions or more
// spread across months, several speakers; at least 200 questions, 40 or
// more per category, a third held out, and every multi-hop question's
// evidence in two sessions or more.
func TestSetIsLongAndBalanced(t *testing.T) {
	set := Generate()
	if len(set.Conversations) < 4 {
		t.Errorf("%d conversations, want 4 or more", len(set.Conversations))
	}
	sessionOf := map[string]string{}
	speakers := map[string]bool{}
	for _, c := range set.Conversations {
		turns := 0
		for _, s := range c.Sessions {
			turns += len(s.Turns)
			for _, tn := range s.Turns {
				sessionOf[tn.ID] = s.ID
				speakers[tn.Speaker] = true
			}
		}
		if turns < 300 || len(c.Sessions) < 10 {
			t.Errorf("%s: %d turns over %d sessions, want 300 over 10", c.ID, turns, len(c.Sessions))
		}
		if span := c.Sessions[len(c.Sessions)-1].DateTime.Sub(c.Sessions[0].DateTime); span.Hours() < 24*180 {
			t.Errorf("%s spans %s, want months", c.ID, span)
		}
	}
	if len(speakers) < 8 {
		t.Errorf("%d speakers in all, want several per conversation", len(speakers))
	}
	perCat := map[string]int{}
	heldout := 0
	for _, q := range set.Questions {
		perCat[q.Category]++
		if q.Split == evalret.Heldout {
			heldout++
		}
		if q.Category == evalret.MultiHop {
			sessions := map[string]bool{}
			for _, e := range q.Evidence {
				sessions[sessionOf[e]] = true
			}
			if len(sessions) < 2 {
				t.Errorf("multi-hop %s has its evidence in one session", q.ID)
			}
		}
	}
	if len(set.Questions) < 200 {
		t.Errorf("%d questions, want 200 or more", len(set.Questions))
	}
	for _, c := range evalret.Categories {
		if perCat[c] < 40 {
			t.Errorf("%d %s questions, want 40 or more", perCat[c], c)
		}
	}
	if third := len(set.Questions) / 3; heldout < third || heldout > third+1 {
		t.Errorf("%d of %d questions held out, want a third", heldout, len(set.Questions))
	}
}

// TestSmallTalkLooksLikeTheNews holds the small talk to the shape of the
// turns that answer the questions, so that a ranker cannot tell them
// apart by shape alone: the mean word count of a turn, and the share of
// turns naming someone or somewhere (a capitalised word that is not a
// month, a weekday or "I", mid-sentence or known as a name from
// elsewhere), are within 25% of each other.
func TestSmallTalkLooksLikeTheNews(t *testing.T) {
	set := Generate()
	evidence := map[string]bool{}
	for _, q := range set.Questions {
		for _, e := range q.Evidence {
			evidence[e] = true
		}
	}
	var turns []evalret.Turn
	for _, c := range set.Conversations {
		for _, s := range c.Sessions {
			turns = append(turns, s.Turns...)
		}
	}
	names := learnNames(turns)
	var words, named, n [2]float64 // [small talk, evidence]
	for _, tn := range turns {
		k := 0
		if evidence[tn.ID] {
			k = 1
		}
		ws := wordsOf(tn.Text)
		n[k]++
		words[k] += float64(len(ws))
		if hasName(ws, names) {
			named[k]++
		}
	}
	within := func(what string, small, ev float64) {
		t.Logf("%s: small talk %.2f, evidence %.2f", what, small, ev)
		if small < 0.75*ev || small > 1.25*ev {
			t.Errorf("%s: small talk %.2f, evidence %.2f; want within 25%%", what, small, ev)
		}
	}
	within("mean words a turn", words[0]/n[0], words[1]/n[1])
	within("share of turns with a name", named[0]/n[0], named[1]/n[1])
}

// capWord is a word of a turn: its lower case, whether it is
// capitalised, and whether it opens a sentence.
type capWord struct {
	lower        string
	capital, opn bool
}

// wordsOf splits a text into words, an apostrophe kept inside one.
func wordsOf(s string) []capWord {
	var out []capWord
	open := true
	for _, f := range strings.Fields(s) {
		w := strings.Trim(f, ".,!?;:\"()")
		if w != "" {
			r := []rune(w)
			lower := strings.TrimSuffix(strings.ToLower(w), "'s")
			out = append(out, capWord{lower: lower, capital: unicode.IsUpper(r[0]), opn: open})
		}
		open = strings.ContainsAny(f[max(0, len(f)-1):], ".!?:;")
	}
	return out
}

// notNames are capitalised words that name nobody and nowhere.
var notNames = map[string]bool{"i": true, "i'm": true, "i've": true, "i'll": true, "i'd": true,
	"january": true, "february": true, "march": true, "april": true, "may": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true,
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true, "saturday": true, "sunday": true}

// learnNames are the words capitalised in the middle of a sentence
// somewhere in the turns.
func learnNames(turns []evalret.Turn) map[string]bool {
	names := map[string]bool{}
	for _, tn := range turns {
		for _, w := range wordsOf(tn.Text) {
			if w.capital && !w.opn && !notNames[w.lower] {
				names[w.lower] = true
			}
		}
	}
	return names
}

// hasName says whether the words name someone or somewhere.
func hasName(ws []capWord, names map[string]bool) bool {
	for _, w := range ws {
		if w.capital && names[w.lower] {
			return true
		}
	}
	return false
}
