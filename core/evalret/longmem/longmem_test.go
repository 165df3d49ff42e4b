package longmem

import (
	"bytes"
	"flag"
	"os"
	"testing"

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
