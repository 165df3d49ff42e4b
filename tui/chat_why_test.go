package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/retrieval"
)

// scriptedWhy is a connection whose history.search hits carry a Why
// written here, the same whatever ranker answers: the frames then hold
// what the view makes of a Why, not the ranker's figures of the day.
type scriptedWhy struct{ conn.Conn }

func (c scriptedWhy) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	out, err := c.Conn.Do(ctx, req)
	if err != nil || req.Action != history.ActionSearch.Name() {
		return out, err
	}
	var res history.SearchResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	for i := range res.Results {
		res.Results[i].Why = whyOfRank(i)
	}
	return json.Marshal(res)
}

// whyOfRank is the Why scriptedWhy gives the hit of rank i: the first
// matched in its text and its speaker, inside a time window and lifted by
// its neighbours; the others by their text alone.
func whyOfRank(i int) *retrieval.Why {
	if i > 0 {
		return &retrieval.Why{Score: 0.9, Expansion: []string{"venue"},
			Terms: []retrieval.TermMatch{{Term: "budget", Field: "text", Count: 1, Score: 0.8}, {Term: "venue", Field: "text", Count: 1, Score: 0.1, Expansion: true}},
			Parts: []retrieval.Part{{Name: retrieval.PartLexical, Value: 0.8, Weight: 1, Contribution: 0.8},
				{Name: retrieval.PartFeedback, Value: 0.1, Weight: 1, Contribution: 0.1},
				{Name: retrieval.PartTime, Value: 0.9, Weight: 0, Contribution: 0}}}
	}
	return &retrieval.Why{Score: 1.75, Expansion: []string{"venue"}, Windows: []string{"in March"}, Neighbours: []string{"5", "7"},
		Terms: []retrieval.TermMatch{{Term: "user", Field: "speaker", Count: 1, Score: 0.15}, {Term: "budget", Field: "text", Count: 2, Score: 1.05}},
		Parts: []retrieval.Part{{Name: retrieval.PartLexical, Value: 1.2, Weight: 1, Contribution: 1.2},
			{Name: retrieval.PartTime, Value: 1.2, Weight: 0.25, Contribution: 0.3},
			{Name: retrieval.PartNeighbour, Value: 0.4, Weight: 1, Contribution: 0.4},
			{Name: retrieval.PartSession, Value: 1.2, Weight: 0.125, Contribution: 0.15},
			{Name: retrieval.PartPrior, Value: 1, Weight: 1, Contribution: 0}}}
}

// searchWhy shows the offsite conversation through scriptedWhy at a size
// and searches "budget".
func searchWhy(t *testing.T, width, height int) *teatest.TestModel {
	t.Helper()
	engine, clk := newEngine(t)
	seedOffsite(t, engine, clk)
	tm := start(t, scriptedWhy{engine}, width, height)
	waitFor(t, tm, "10 utterances, 6 evicted", "#9 assistant")
	tm.Type("/budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "budget": `, "hits, best first", "why budget")
	return tm
}

// TestChatSearchSaysWhyTheSelectedHitWasFound: issue 18. Under the
// selected hit, what its Why says: the matched terms (the field when not
// the text), the parts of the score with their weights, the largest
// first, the time window and the neighbours; ↓ moves it to the next hit;
// w hides it and shows it again, and the footer says which.
func TestChatSearchSaysWhyTheSelectedHitWasFound(t *testing.T) {
	t.Parallel()
	m := finish(t, searchWhy(t, 120, 36))
	view := m.View()
	for _, want := range []string{
		"why budget×2 · user (speaker)",
		"lexical +1.20 · neighbours #5, #7 +0.40",
		`time "in March" +0.30 (weight 0.25)`,
		"session +0.15 (weight 0.125)",
		"query expanded with venue",
		"w hides why",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the first hit's why lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "prior") || strings.Contains(view, "+venue") {
		t.Errorf("a part that adds nothing, or the second hit's why, shows:\n%s", view)
	}
	press(m, "down")
	view = m.View()
	if !strings.Contains(view, "why budget · +venue") || !strings.Contains(view, "lexical +0.80 · feedback +0.10") ||
		strings.Contains(view, "budget×2") || strings.Contains(view, "time +") {
		t.Errorf("after ↓, want only the second hit's why:\n%s", view)
	}
	press(m, "w")
	view = m.View()
	if strings.Contains(view, "why budget") || !strings.Contains(view, "w shows why") {
		t.Errorf("w does not hide the why:\n%s", view)
	}
	press(m, "?")
	if !strings.Contains(m.View(), "show why") {
		t.Errorf("? does not list w:\n%s", m.View())
	}
	press(m, "?", "w")
	if !strings.Contains(m.View(), "why budget · +venue") {
		t.Errorf("w again does not show it:\n%s", m.View())
	}
}

// TestChatSearchWithoutWhySaysNothingOfIt: hits without a Why (an engine
// that gives none) show no why line and w is not offered: nothing is
// made up.
func TestChatSearchWithoutWhySaysNothingOfIt(t *testing.T) {
	t.Parallel()
	m := finish(t, searchWhy(t, 120, 36))
	p := chatOf(m)
	for i := range p.find.hits {
		p.find.hits[i].Why, p.find.hits[i].Semantic = nil, nil
	}
	p.renderHits()
	view := m.View()
	if strings.Contains(view, " why ") || strings.Contains(view, "hides why") {
		t.Errorf("hits without a Why show one, or offer w:\n%s", view)
	}
	before := view
	press(m, "w")
	if m.View() != before || p.find.hideWhy {
		t.Errorf("w changed the view with nothing to show or hide")
	}
}

// TestChatWhyKeepsTheSelectedHitInView: at 80x24, as ↑ goes back
// through the hits from the last, the selected one and the whole of its
// why are in view (the why moves with the selection before the view
// scrolls to it).
func TestChatWhyKeepsTheSelectedHitInView(t *testing.T) {
	t.Parallel()
	m := finish(t, searchWhy(t, 80, 24))
	p := chatOf(m)
	press(m, "G")
	for i := len(p.find.hits) - 1; i >= 1; i-- {
		view := m.View()
		if p.find.sel != i || !strings.Contains(view, fmt.Sprintf("▸%2d ", i+1)) || !strings.Contains(view, "why budget · +venue") ||
			!strings.Contains(view, "query expanded with venue") {
			t.Fatalf("hit %d selected: it or its why is out of view:\n%s", i+1, view)
		}
		press(m, "up")
	}
}

// TestGoldenChatSearchWhy: issue 18. The hits of a search, the first
// selected with why it was found, at 120x36 and 80x24.
func TestGoldenChatSearchWhy(t *testing.T) {
	t.Parallel()
	m := finish(t, searchWhy(t, 120, 36))
	requireGoldenAt(t, "TestGoldenChatSearchWhy_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoldenChatSearchWhy_80x24", m, 80, 24)
}

// TestChatWhyTellsFusedRanksAndThesaurusWords: a hit fused with the
// vector ranking says where it stood in each, and a word found for a
// query word through the thesaurus says which.
func TestChatWhyTellsFusedRanksAndThesaurusWords(t *testing.T) {
	t.Parallel()
	sim := 0.91
	h := &history.Hit{Semantic: &sim, Why: &retrieval.Why{
		Terms:  []retrieval.TermMatch{{Term: "applic", Field: "text", Count: 1, Score: 0.4, SynonymOf: "appli"}},
		Parts:  []retrieval.Part{{Name: retrieval.PartLexical, Value: 0.4, Weight: 1, Contribution: 0.4}},
		Fusion: &retrieval.FusionWhy{Similarity: &sim, LexicalRank: 3, VectorRank: 1, K: 60, Score: 0.032},
	}}
	var all []string
	for _, g := range hitWhyGroups(h) {
		all = append(all, strings.Join(g, " · "))
	}
	got := strings.Join(all, "\n")
	for _, want := range []string{"applic for appli", "vector similarity 0.91", "fused: words #3, vectors #1 (k 60)"} {
		if !strings.Contains(got, want) {
			t.Errorf("why %q lacks %q", got, want)
		}
	}
}
