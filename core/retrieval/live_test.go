package retrieval

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// longmem is engram's evaluation set (testdata/eval), read without
// evalret (which imports this package): each conversation's turns as
// Docs, and its questions.
func longmem(t *testing.T) (convs [][]Doc, questions [][]string) {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/eval/engram-longmem.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Conversations []struct {
			ID       string
			Sessions []struct {
				ID       string
				DateTime time.Time `json:"date_time"`
				Turns    []struct {
					ID, Speaker, Text string
					ImageCaption      string `json:"image_caption"`
				}
			}
		}
		Questions []struct{ Conversation, Text string }
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Conversations {
		var docs []Doc
		for _, s := range c.Sessions {
			for _, tu := range s.Turns {
				docs = append(docs, Doc{ID: tu.ID, Session: s.ID, Time: s.DateTime, Speaker: tu.Speaker, Text: tu.Text, Caption: tu.ImageCaption})
			}
		}
		var qs []string
		for _, q := range set.Questions {
			if q.Conversation == c.ID {
				qs = append(qs, q.Text)
			}
		}
		convs, questions = append(convs, docs), append(questions, qs)
	}
	return convs, questions
}

// sameRanking fails unless both indexes rank every query alike: the same
// results, scores and whys.
func sameRanking(t *testing.T, want, got *Index, queries []string, now time.Time) {
	t.Helper()
	if want.Len() != got.Len() {
		t.Fatalf("Len = %d, want %d", got.Len(), want.Len())
	}
	for _, q := range queries {
		for _, limit := range []int{10, 50} {
			query := Query{Text: q, Now: now, Limit: limit}
			w, werr := want.Search(query)
			g, gerr := got.Search(query)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%q: err %v, want %v", q, gerr, werr)
			}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("%q (limit %d): added ranks\n%+v\nbuilt ranks\n%+v", q, limit, g, w)
			}
		}
	}
}

// TestAddRanksAsBuild: an index built from the first half of a
// conversation and grown by the rest, a turn at a time or in chunks,
// ranks every question of the evaluation set as the index built from all
// of it does, to the last bit and with the same whys.
func TestAddRanksAsBuild(t *testing.T) {
	convs, questions := longmem(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	withPRF := DefaultParams
	withPRF.PRFWeight = 0.5
	for c, docs := range convs {
		// Feedback on: the terms of the top hits read after an Add too.
		sameRanking(t, Build(docs, withPRF), Build(docs[:len(docs)/3], withPRF).Add(docs[len(docs)/3:]...), questions[c], now)
		want := Build(docs, DefaultParams)
		half := len(docs) / 2
		one := Build(docs[:half], DefaultParams)
		for _, d := range docs[half:] {
			one = one.Add(d)
		}
		sameRanking(t, want, one, questions[c], now)
		chunked := Build(docs[:half], DefaultParams)
		for i := half; i < len(docs); i += 37 {
			chunked = chunked.Add(docs[i:min(i+37, len(docs))]...)
		}
		sameRanking(t, want, chunked, questions[c], now)
		// Grown from nothing.
		var empty *Index = Build(nil, DefaultParams)
		empty = empty.Add(docs...)
		sameRanking(t, want, empty, questions[c], now)
	}
}

// TestAddKeepsTheIndexUnlessEarlierTurnsReadDifferently: appending turns
// that only add keeps the index; a name learnt that an earlier turn
// opened a sentence with, an alias an earlier turn used, or a relation of
// a name an earlier turn wrote makes a new one, which ranks as Build's.
func TestAddKeepsTheIndexUnlessEarlierTurnsReadDifferently(t *testing.T) {
	day := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	base := []Doc{
		{ID: "a", Session: "s1", Time: day, Speaker: "Ana", Text: "Pepper ran off again this morning."},
		{ID: "b", Session: "s1", Time: day, Speaker: "Ben", Text: "my brother called about the boat."},
		{ID: "c", Session: "s1", Time: day, Speaker: "Ana", Text: "We met Kenji at the harbour."},
		{ID: "d", Session: "s1", Time: day, Speaker: "Ben", Text: "He sails every weekend."},
	}
	queries := []string{"Pepper", "pepper run", "Ben's brother", "Kenji boat", "who sails", "brother Kenji"}
	for _, tc := range []struct {
		name string
		add  Doc
		kept bool
	}{
		{"plain", Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "The harbour was windy."}, true},
		{"new name", Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "I found Pepper under the porch."}, false},
		{"alias", Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ben", Text: "Tomorrow my brother Luis visits."}, false},
		{"relation", Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "Tomorrow my cousin Kenji comes."}, false},
		{"same session", Doc{ID: "e", Session: "s1", Time: day, Speaker: "Ana", Text: "She sails too, with Kenji."}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(base, DefaultParams)
			got := ix.Add(tc.add)
			if (got == ix) != tc.kept {
				t.Errorf("Add kept the index: %v, want %v", got == ix, tc.kept)
			}
			sameRanking(t, Build(append(append([]Doc{}, base...), tc.add), DefaultParams), got, queries, time.Time{})
		})
	}
}

// TestLiveSearchesWhileItGrows: searches run while turns are added (go
// test -race watches them), and then find what was added.
func TestLiveSearchesWhileItGrows(t *testing.T) {
	docs := benchDocs(600)
	live := NewLive(Build(docs[:100], DefaultParams))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, d := range docs[100:] {
			live.Add(d)
		}
	}()
	go func() {
		defer wg.Done()
		for range 50 {
			if _, err := live.Search(Query{Text: benchWords[3] + " " + benchWords[40]}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	got, _ := live.Search(Query{Text: docs[599].Text, Limit: 3})
	want, _ := Build(docs, DefaultParams).Search(Query{Text: docs[599].Text, Limit: 3})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after growing: %+v, want %+v", got, want)
	}
}

// TestMatchedLeavesOutTurnsLiftedAlone: with Matched, a turn holding none
// of the query's words is no result, however its neighbour lifts it; the
// others keep their scores and order.
func TestMatchedLeavesOutTurnsLiftedAlone(t *testing.T) {
	docs := append([]Doc{
		{ID: "q", Session: "s1", Time: day0, Speaker: "Ana", Text: "Where did you leave the kayak?"},
		{ID: "a", Session: "s1", Time: day0, Speaker: "Ben", Text: "Behind the shed, under the tarp."},
		{ID: "k", Session: "s2", Time: day0, Speaker: "Ana", Text: "The kayak needs a new paddle."},
	}, filler(4, "s3", day0)...)
	p := DefaultParams
	p.Neighbour = [2]float64{0.1, 0.05}
	ix := Build(docs, p)
	all := search(t, ix, Query{Text: "kayak"})
	if !slices.Contains(ids(all), "a") {
		t.Fatalf("without Matched the answer is lifted in: %v", ids(all))
	}
	got := search(t, ix, Query{Text: "kayak", Matched: true})
	var want []Result
	for _, r := range all {
		if r.ID != "a" {
			want = append(want, r)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Matched: %v, want %v", ids(got), ids(want))
	}
}
