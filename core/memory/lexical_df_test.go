package memory

import (
	"fmt"
	"testing"

	"github.com/engram-console/engram/core/search"
)

// TestLexicalQueryWorksOutACommonTagsFrequencyOnce: a word that is a
// common tag merges its items with the text's postings for the document
// frequency; the query does it once, not share for each item a recall
// explains (1000 items explained against a tag of 100,000 took a second,
// the search itself 10ms).
func TestLexicalQueryWorksOutACommonTagsFrequencyOnce(t *testing.T) {
	var text, tagged []search.Posting
	for i := range 1000 {
		id := fmt.Sprintf("i%05d", i)
		if i%2 == 0 {
			text = append(text, search.Posting{Doc: id, TF: 1, Length: 5})
		}
		tagged = append(tagged, search.Posting{Doc: id, TF: 1})
	}
	postings := func(term string) ([]search.Posting, error) {
		if term == "travel" {
			return text, nil
		}
		return nil, nil
	}
	tags := func(tag string) ([]search.Posting, error) {
		if tag == "travel" {
			return tagged, nil
		}
		return nil, nil
	}
	q, err := lexicalQuery("travel", search.Stats{Docs: 2000, TotalLength: 10000}, postings, tags, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.lists) == 0 || q.lists[0].DF != 1000 {
		t.Fatalf("lists %d, the first's DF %d; want it worked out (1000 items hold travel)", len(q.lists), q.lists[0].DF)
	}
	want, _ := search.TermList{Postings: text, Weight: 1, Flat: tagged, FlatWeight: tagWeight}.ScoreOf("i00002", q.stats)
	if got, _ := q.lists[0].ScoreOf("i00002", q.stats); got != want {
		t.Errorf("score with the frequency known %v; want %v as merged", got, want)
	}
}
