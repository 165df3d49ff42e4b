package retrieval

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
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
	// The conversations share nothing (each builds its own indexes), so
	// they run side by side: this test is most of the package's time.
	for c, docs := range convs {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			t.Parallel()
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
		})
	}
}

// namedTurns are four turns of one session that name a dog, a brother
// and a friend: what Add must rebuild for when a later turn teaches a
// name, an alias or a relation they use.
func namedTurns(day time.Time) []Doc {
	return []Doc{
		{ID: "a", Session: "s1", Time: day, Speaker: "Ana", Text: "Pepper ran off again this morning."},
		{ID: "b", Session: "s1", Time: day, Speaker: "Ben", Text: "my brother called about the boat."},
		{ID: "c", Session: "s1", Time: day, Speaker: "Ana", Text: "We met Kenji at the harbour."},
		{ID: "d", Session: "s1", Time: day, Speaker: "Ben", Text: "He sails every weekend."},
	}
}

// TestAddKeepsTheIndexUnlessEarlierTurnsReadDifferently: appending turns
// that only add keeps the index; a name learnt that an earlier turn
// opened a sentence with, an alias an earlier turn used, or a relation of
// a name an earlier turn wrote makes a new one, which ranks as Build's.
func TestAddKeepsTheIndexUnlessEarlierTurnsReadDifferently(t *testing.T) {
	day := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	base := namedTurns(day)
	queries := []string{"Pepper", "pepper run", "Ben's brother", "Kenji boat", "who sails", "brother Kenji"}
	// Entity links count in the document frequencies whatever their
	// weight: an alias or a relation makes a new index either way.
	entities := DefaultParams
	entities.Weight[FieldEntity] = 1
	noEntities := DefaultParams
	noEntities.Weight[FieldEntity] = 0
	for _, tc := range []struct {
		name string
		p    Params
		add  Doc
		kept bool
	}{
		{"plain", entities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "The harbour was windy."}, true},
		{"new name", entities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "I found Pepper under the porch."}, false},
		{"alias", entities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ben", Text: "Tomorrow my brother Luis visits."}, false},
		{"relation", entities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "Tomorrow my cousin Kenji comes."}, false},
		{"same session", entities, Doc{ID: "e", Session: "s1", Time: day, Speaker: "Ana", Text: "She sails too, with Kenji."}, true},
		{"alias, no entity weight", noEntities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ben", Text: "Tomorrow my brother Luis visits."}, false},
		{"relation, no entity weight", noEntities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "Tomorrow my cousin Kenji comes."}, false},
		{"new name, no entity weight", noEntities, Doc{ID: "e", Session: "s2", Time: day.AddDate(0, 1, 0), Speaker: "Ana", Text: "I found Pepper under the porch."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := Build(base, tc.p)
			got := ix.Add(tc.add)
			if (got == ix) != tc.kept {
				t.Errorf("Add kept the index: %v, want %v", got == ix, tc.kept)
			}
			sameRanking(t, Build(append(append([]Doc{}, base...), tc.add), tc.p), got, queries, time.Time{})
		})
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

// TestAppendNeverRebuildsAndRanksTheNewTurns: the turns that make Add
// build the index again (a new name, an alias, a relation) are appended
// by Append without building anything, and a search finds them. (No
// test here runs in parallel: rebuilds counts for the package.)
func TestAppendNeverRebuildsAndRanksTheNewTurns(t *testing.T) {
	day := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	base := namedTurns(day)
	later := day.AddDate(0, 1, 0)
	for _, tc := range []struct {
		name, query string
		add         Doc
	}{
		{"new name", "porch", Doc{ID: "e", Session: "s2", Time: later, Speaker: "Ana", Text: "I found Pepper under the porch."}},
		{"alias", "Luis visits", Doc{ID: "e", Session: "s2", Time: later, Speaker: "Ben", Text: "Tomorrow my brother Luis visits."}},
		{"relation", "cousin", Doc{ID: "e", Session: "s2", Time: later, Speaker: "Ana", Text: "Tomorrow my cousin Kenji comes."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams
			p.Weight[FieldEntity] = 1 // aliases and relations count
			before := rebuilds.Load()
			if Build(base, p).Add(tc.add); rebuilds.Load() == before {
				t.Fatalf("Add does not build the index again for this turn")
			}
			ix := Build(base, p)
			before = rebuilds.Load()
			ix.Append(tc.add, Doc{ID: "f", Session: "s2", Time: later, Speaker: "Ben", Text: "The harbour was windy."})
			if n := rebuilds.Load() - before; n != 0 {
				t.Errorf("Append built the index again %d times", n)
			}
			if ix.Len() != 6 {
				t.Fatalf("Len = %d, want 6", ix.Len())
			}
			if got := ids(search(t, ix, Query{Text: tc.query})); len(got) == 0 || got[0] != "e" {
				t.Errorf("%q: %v, want e first", tc.query, got)
			}
			if got := ids(search(t, ix, Query{Text: "windy harbour"})); len(got) == 0 || got[0] != "f" {
				t.Errorf("windy harbour: %v, want f first", got)
			}
		})
	}
}

// TestPrepareAddReadiesTheIndexForAdd: PrepareAdd works out the state
// Add keeps (which the first Add would, reading every document), and an
// index grown after it ranks as one built from all the documents.
func TestPrepareAddReadiesTheIndexForAdd(t *testing.T) {
	convs, questions := longmem(t)
	docs := convs[0]
	half := len(docs) / 2
	ix := Build(docs[:half], DefaultParams)
	ix.PrepareAdd()
	if ix.live == nil {
		t.Fatal("PrepareAdd left no state for Add")
	}
	live := ix.live
	ix.PrepareAdd()
	if ix.live != live {
		t.Error("a second PrepareAdd worked it out again")
	}
	for _, d := range docs[half:] {
		ix = ix.Add(d)
	}
	sameRanking(t, Build(docs, DefaultParams), ix, questions[0], time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
}

// TestAddWorksOutTheAddedTurnsPriors: with a name prior and no length
// prior nothing marks the priors stale, so Add itself must give the added
// turns theirs; with a length prior every prior moves with the averages.
func TestAddWorksOutTheAddedTurnsPriors(t *testing.T) {
	day := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	docs := []Doc{
		{ID: "a", Session: "s1", Time: day, Speaker: "Ana", Text: "Pepper ran off again this morning, Kenji found her."},
		{ID: "b", Session: "s1", Time: day, Speaker: "Ben", Text: "the boat needs paint."},
		{ID: "c", Session: "s2", Time: day, Speaker: "Ana", Text: "We met Kenji and Luis at the harbour by the boat."},
		{ID: "d", Session: "s2", Time: day, Speaker: "Ben", Text: "boat boat."},
	}
	queries := []string{"boat", "Kenji", "harbour boat"}
	for _, p := range []Params{
		func() Params { p := DefaultParams; p.NamePrior = 1; return p }(),
		func() Params { p := DefaultParams; p.LengthPrior = 1; return p }(),
	} {
		sameRanking(t, Build(docs, p), Build(docs[:1], p).Add(docs[1:]...), queries, time.Time{})
	}
}
