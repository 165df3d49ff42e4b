package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/memory"
)

// rememberWhy seeds both stores, opens Memory at a size and remembers
// "offsite budget" in working.
func rememberWhy(t *testing.T, width, height int) *teatest.TestModel {
	t.Helper()
	engine, clk := newEngine(t)
	seedMemory(t, engine, clk)
	tm := start(t, engine, width, height)
	tm.Type("5")
	waitFor(t, tm, "[5 Memory]", "6/8", "Draft: maybe a boat trip")
	tm.Type("/")
	waitFor(t, tm, "remember: ")
	tm.Type("offsite budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "3 hits", "why matched")
	return tm
}

// TestMemoryRecallSaysWhyTheSelectedItemWasRecalled: issue 18. The
// remember asks memory.remember to explain, and under the ranked list the
// selected item's why shows: the prompt's words it holds, the tags among
// them (each counted as the word in a tags field), its lexical score, its
// importance, its age and the order; ↓ shows the next one's; w hides it
// and shows it again; the item's detail says it too.
func TestMemoryRecallSaysWhyTheSelectedItemWasRecalled(t *testing.T) {
	t.Parallel()
	m := finish(t, rememberWhy(t, 120, 36))
	p := memoryOf(m)
	for _, r := range p.list.items {
		if r.Why == nil {
			t.Fatalf("%s came without a why: the remember did not ask to explain", r.ID)
		}
	}
	first := p.list.items[0]
	if first.ID != "w-lisbon" {
		t.Fatalf("the first hit is %s, want w-lisbon (the most important)", first.ID)
	}
	want := "why matched offsite · tagged offsite · lexical 0.58 · importance 0.90 · stored 50m ago · ranked by importance"
	if view := m.View(); !strings.Contains(view, want) || !strings.Contains(view, "w hides why") {
		t.Errorf("the first hit's why is not %q (its Why: %+v):\n%s", want, *first.Why, view)
	}
	press(m, "down")
	if view := m.View(); !strings.Contains(view, "why matched offsite, budget · tagged offsite, budget · lexical 1.88 · importance 0.80 · stored 45m ago") ||
		strings.Contains(view, "why matched offsite ·") {
		t.Errorf("after ↓, want the second hit's why alone:\n%s", view)
	}
	rows := p.listRows()
	press(m, "w")
	if view := m.View(); strings.Contains(view, "why matched") || !strings.Contains(view, "w shows why") || p.listRows() != rows+memWhyRows {
		t.Errorf("w: the why still shows, or the list did not take its rows (%d, was %d):\n%s", p.listRows(), rows, view)
	}
	press(m, "w", "enter")
	view := m.View()
	if !strings.Contains(view, "why              matched offsite, budget · tagged offsite, budget · lexical 1.88 · importance 0.80") {
		t.Errorf("the item's detail does not say why it was recalled:\n%s", view)
	}
}

// TestMemoryRecallWithoutWhySaysNothingOfIt: items memory.remember gave
// no why for show none: nothing is made up.
func TestMemoryRecallWithoutWhySaysNothingOfIt(t *testing.T) {
	t.Parallel()
	m := finish(t, rememberWhy(t, 120, 36))
	p := memoryOf(m)
	for i := range p.list.items {
		p.list.items[i].Why = nil
	}
	if view := m.View(); strings.Contains(view, "   why ") {
		t.Errorf("items without a why show one:\n%s", view)
	}
}

// TestGoldenMemoryRememberWhy: issue 18. A remember, the first hit
// selected with why it was recalled, at 120x36 and 80x24.
func TestGoldenMemoryRememberWhy(t *testing.T) {
	t.Parallel()
	m := finish(t, rememberWhy(t, 120, 36))
	requireGoldenAt(t, "TestGoldenMemoryRememberWhy_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoldenMemoryRememberWhy_80x24", m, 80, 24)
}

// TestMemoryWhyNamesTheTimeAskedAbout: an item recalled for being stored
// in a time the prompt names says which.
func TestMemoryWhyNamesTheTimeAskedAbout(t *testing.T) {
	t.Parallel()
	groups := memoryWhyGroups(&memory.Why{Terms: []string{"budget"}, Lexical: 1.5, Importance: 0.5, Windows: []string{"last week"}, Rank: "relevance"})
	if got := strings.Join(groups[len(groups)-1], " · "); !strings.Contains(got, `lexical 1.50 · in "last week" · importance 0.50`) {
		t.Errorf("why figures %q, want the window named", got)
	}
}

// TestMemoryWhyNamesTheThesaurusWordAndWhatItStoodFor: an item recalled
// through the thesaurus alone says which word of its text stood for which
// word of the prompt, not "no word of the prompt".
func TestMemoryWhyNamesTheThesaurusWordAndWhatItStoodFor(t *testing.T) {
	t.Parallel()
	groups := memoryWhyGroups(&memory.Why{Lexical: 0.8, Importance: 0.5, Rank: "relevance",
		Matched: []memory.MatchedTerm{{Term: "application", Field: "text", Count: 1, SynonymOf: "apply", Relation: "derived"}}})
	if got := strings.Join(groups[0], " · "); got != "thesaurus application for apply" {
		t.Errorf("why words %q, want the thesaurus word for the prompt's", got)
	}
}
