package evalret

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	rank "github.com/engram-console/engram/core/retrieval"
)

// TestHistoryRanksAsHybrid: the product's history.search is the hybrid
// ranker over the stored utterances, asked at the same time (the day
// after the last session): on a set whose sessions are one turn each (so
// the load's second-a-turn times are the sessions'), both rank every
// question alike, time expressions included.
func TestHistoryRanksAsHybrid(t *testing.T) {
	texts := []string{
		"Ana adopted a kitten named Miso.", "We went hiking in the Alps with my brother Luis.",
		"The new job at the bakery starts Monday.", "Miso knocked the plant off the shelf again.",
		"Luis is moving to Porto for work.", "We booked a week in Lisbon.",
		"The bakery opened a second shop.", "I repainted the kitchen a pale green.",
		"He says Porto is rainy but lovely.", "Miso turned one; we baked a tiny cake.",
		"The Lisbon trip was wonderful, lots of trams.", "My brother visited us for the holidays.",
	}
	conv := Conversation{ID: "ana-ben", Speakers: []string{"Ana", "Ben"}}
	start := time.Date(2024, 1, 15, 18, 0, 0, 0, time.UTC)
	for i, s := range texts {
		conv.Sessions = append(conv.Sessions, Session{ID: fmt.Sprintf("s%d", i), DateTime: start.AddDate(0, i*2, 0),
			Turns: []Turn{{ID: fmt.Sprintf("t%d", i), Speaker: conv.Speakers[i%2], Text: s}}})
	}
	questions := []string{"What did Ana do last summer?", "What did Miso do last summer?", "Lisbon a year ago", "Where did Luis move in May 2024?", "When did the kitten turn one?",
		"What happened after the move to Porto?", "Lisbon trams", "bakery job", "Who visited for the holidays?"}
	set := &Set{Conversations: []Conversation{conv}}
	for i, q := range questions {
		set.Questions = append(set.Questions, Question{ID: fmt.Sprint(i), Conversation: conv.ID, Text: q, Category: "temporal", Evidence: []string{"t0"}})
	}
	s, err := Load(context.Background(), set, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	hybrid := NewHybrid(set, rank.DefaultParams)
	for _, q := range questions {
		want, err := hybrid.Search(context.Background(), conv.ID, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.History().Search(context.Background(), conv.ID, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: history ranks %v, hybrid %v", q, got, want)
		}
	}
}
