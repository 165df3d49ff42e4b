package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
)

// TestChatNewSearchStartsEmptyAndRecallsEarlierOnes: issue 14 bug 5. /
// after a search opens an empty line ("budget" then "zebra" searches
// "zebra", not "budgetzebra"); ↑ and ↓ go through the searches made
// before, and back to what was being typed.
func TestChatNewSearchStartsEmptyAndRecallsEarlierOnes(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	tm.Type("/budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "budget": 4 hits`)
	tm.Type("/zebra")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `Nothing in default matches "zebra"`)
	tm.Type("/")
	m := finish(t, tm)
	p := chatOf(m)
	if p.mode != chatSearching || p.find.input.Value() != "" {
		t.Fatalf("/ after a search: mode %d, line %q; want an empty search line", p.mode, p.find.input.Value())
	}
	if !strings.Contains(lastLine(m.View()), "↑/↓ earlier searches") {
		t.Errorf("the footer does not offer the earlier searches: %q", lastLine(m.View()))
	}
	line := func(want string) {
		t.Helper()
		if got := p.find.input.Value(); got != want {
			t.Errorf("the search line reads %q, want %q", got, want)
		}
	}
	up, down := tea.KeyMsg{Type: tea.KeyUp}, tea.KeyMsg{Type: tea.KeyDown}
	press(m, "ven")
	m.Update(up)
	line("zebra")
	m.Update(up)
	line("budget")
	m.Update(up) // the oldest: stays
	line("budget")
	m.Update(down)
	line("zebra")
	m.Update(down) // past the newest: what was being typed
	line("ven")
	m.Update(down)
	line("ven")
	// Asking an old query again makes it the newest, once.
	m.Update(up)
	m.Update(up)
	line("budget")
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if p.find.query != "budget" {
		t.Errorf("enter searched %q, want budget", p.find.query)
	}
	press(m, "/")
	m.Update(up)
	line("budget")
	m.Update(up)
	line("zebra")
	m.Update(up)
	line("zebra")
}

// zebraChat writes twenty utterances to default, the first mentioning a
// zebra: far above the newest, out of view at the golden size.
func zebraChat(t *testing.T) *teatest.TestModel {
	t.Helper()
	engine, clk := newEngine(t)
	do(t, engine, "history.configure", "", `{"buffer_size": 40}`)
	write(t, engine, clk, "", "user", "Is there a zebra crossing near the venue?")
	for i := 1; i < 20; i++ {
		speaker := "user"
		if i%2 == 1 {
			speaker = "assistant"
		}
		write(t, engine, clk, "", speaker, fmt.Sprintf("Message number %d about the offsite.", i))
	}
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "20 utterances", "#19 assistant")
	return tm
}

// TestChatEnterOnAHitShowsItInTheConversation: issue 14 bug 5. enter on a
// hit scrolls the conversation to it and marks it; esc goes back to the
// hits, the same one selected; the keys choose another hit first.
func TestChatEnterOnAHitShowsItInTheConversation(t *testing.T) {
	t.Parallel()
	tm := zebraChat(t)
	tm.Type("/number 1")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "number 1"`, "hits, best first")
	tm.Type("/zebra")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "zebra": 1 hit`, "▸ 1")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "▸#0 user", "· found", "Is there a zebra crossing", "Esc back to the results")
	m := finish(t, tm)
	p := chatOf(m)
	view := m.View()
	if p.mode != chatBrowse || strings.Contains(view, "#19 assistant") || p.buf.view.AtBottom() {
		t.Errorf("mode %d: want the conversation scrolled up to #0, the newest out of view:\n%s", p.mode, view)
	}
	// The marked utterance stays put as new ones arrive (no following).
	off := p.buf.view.Offset()
	p.render()
	if p.buf.view.Offset() != off {
		t.Errorf("re-rendering moved the conversation from line %d to %d", off, p.buf.view.Offset())
	}
	press(m, "esc")
	if p.mode != chatResults || !strings.Contains(m.View(), `search "zebra": 1 hit`) || !strings.Contains(m.View(), "▸ 1") {
		t.Fatalf("esc after a jump: mode %d; want the hits back, the same selected:\n%s", p.mode, m.View())
	}
	press(m, "esc")
	if p.mode != chatBrowse || p.find.query != "" {
		t.Errorf("esc from the hits: mode %d, query %q; want the conversation", p.mode, p.find.query)
	}
	// The searches made are still on ↑.
	press(m, "/")
	m.Update(tea.KeyMsg{Type: tea.KeyUp}) // "zebra"
	m.Update(tea.KeyMsg{Type: tea.KeyUp}) // "number 1"
	if p.find.input.Value() != "number 1" {
		t.Fatalf("the search line reads %q", p.find.input.Value())
	}
}

// TestChatHitsAreChosenWithTheArrowsAndAnEvictedOneSaysSo: issue 14 bug
// 5. ↓ moves the selection through the hits; enter on one that left the
// buffer says so in the status line, and the hits stay.
func TestChatHitsAreChosenWithTheArrowsAndAnEvictedOneSaysSo(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	tm.Type("/budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "budget": 4 hits`)
	m := finish(t, tm)
	p := chatOf(m)
	evicted, kept := -1, -1
	for i, h := range p.find.hits {
		if h.Evicted && evicted < 0 {
			evicted = i
		}
		if !h.Evicted && kept < 0 {
			kept = i
		}
	}
	if evicted < 0 || kept < 0 {
		t.Fatalf("want an evicted hit and a kept one: %+v", p.find.hits)
	}
	for range evicted {
		m.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	if !strings.Contains(m.View(), fmt.Sprintf("▸%2d ", evicted+1)) {
		t.Fatalf("after %d ↓, hit %d is not the one selected:\n%s", evicted, evicted+1, m.View())
	}
	cmd := p.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if cmd == nil {
		t.Fatal("enter on an evicted hit says nothing")
	}
	msg, ok := cmd().(statusMsg)
	if !ok || !strings.Contains(msg.text, "has left the buffer") || p.mode != chatResults {
		t.Errorf("enter on an evicted hit: status %+v, mode %d; want it said, the hits kept", msg, p.mode)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("g")}) // the first hit
	for range kept {
		m.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	want := p.find.hits[kept].UtteranceIndex
	if p.mode != chatBrowse || !strings.Contains(m.View(), fmt.Sprintf("▸#%d ", want)) {
		t.Errorf("enter on hit #%d: mode %d; want the conversation, the hit marked:\n%s", want, p.mode, m.View())
	}
}

// TestGoldenChatSearchJump: issue 14 bug 5. enter on a hit: the
// conversation, scrolled to the hit and marked.
func TestGoldenChatSearchJump(t *testing.T) {
	t.Parallel()
	tm := zebraChat(t)
	tm.Type("/zebra")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "zebra": 1 hit`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "▸#0 user", "Esc back to the results")
	requireGolden(t, finish(t, tm))
}
