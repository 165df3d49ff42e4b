package search

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/engram-console/engram/storage"
)

// TestScoresSortedEqualsScores: the merge of sorted lists gives every
// document exactly (to the bit) the score Scores gives it, with the same
// filter, for random documents whose ids are prefixes of one another (so
// that key order is not id order) and random queries.
func TestScoresSortedEqualsScores(t *testing.T) {
	s := openStore(t)
	ix := Index{Space: "test"}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"flight", "lisbon", "invoice", "maria", "server", "migration", "budget", "hotel", "osaka", "tax"}
	var docs []doc
	for i := range 300 {
		body := ""
		for range 1 + rng.IntN(8) {
			body += words[rng.IntN(len(words))] + " "
		}
		id := fmt.Sprintf("d%d", i%60)
		switch i / 60 {
		case 1:
			id += "-x"
		case 2:
			id += ".y"
		case 3:
			id += "0"
		case 4:
			id += "-"
		}
		docs = append(docs, doc{id: id, body: body, attr: "LD"[rng.IntN(2)]})
	}
	st := index(t, s, ix, docs)
	keep := func(doc string, attr byte) bool { return attr == 'L' && doc[len(doc)-1] != '3' }
	for q := range 40 {
		query := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
		if q%3 == 0 {
			query += " " + words[rng.IntN(len(words))]
		}
		err := s.View(func(tx *storage.Tx) error {
			for _, k := range []func(string, byte) bool{nil, keep} {
				want, err := ix.Scores(tx, query, st, k)
				if err != nil {
					return err
				}
				got, err := ix.ScoresSorted(func(term string) ([]Posting, error) {
					list, err := ix.Postings(tx, term)
					SortPostings(list)
					return list, err
				}, query, st, k)
				if err != nil {
					return err
				}
				if len(got) != len(want) {
					t.Fatalf("%q: %d scores, want %d", query, len(got), len(want))
				}
				for i, d := range got {
					if i > 0 && got[i-1].Doc >= d.Doc {
						t.Fatalf("%q: %s after %s", query, d.Doc, got[i-1].Doc)
					}
					if w, ok := want[d.Doc]; !ok || w != d.Score {
						t.Fatalf("%q: %s scores %v, want %v", query, d.Doc, d.Score, w)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
