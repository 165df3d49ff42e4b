package tui

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
)

// Issue 14, "Footers and help": every key the console accepts is in ? and
// in README.md's key table, labelled as a person writes it. The tests here
// walk each pane through representative states (keyStates) and hold the
// keys to that:
//
//   - every key a pane reacts to in a state (its view changes, or it starts
//     a command) is among the keys the footer and ? show in that state;
//   - every binding of a pane's KeyMap shows in ? in some state;
//   - every binding of a KeyMap and of the global keys is in the README's
//     key table;
//   - the footer fits 80 and 120 columns, and keeps "1-7 tabs" whenever
//     the tab keys work.
//
// A key added to a pane's keys struct is in its KeyMap (bindingsOf): with
// a README row, and a state below that shows it, the tests pass. A state is
// one entry of keyStates: how to seed an engine, and what to type.

// keyState is a representative state of one pane.
type keyState struct {
	name string
	tab  tab
	// seed makes the engine the state is built on; it is made once per
	// state (keys pressed on a finished program run no command, so the
	// engine is never changed by the walk).
	seed func(t *testing.T) conn.Conn
	// enter types what leads to the state, on the pane's tab, and waits
	// for it to show.
	enter func(t *testing.T, tm *teatest.TestModel)
	// onScreen are keys the state's screen itself names (key → the hint
	// it shows), where the footer has no room for them.
	onScreen map[string]string
}

// keyStates: at least one per pane, more where a pane's keys change.
var keyStates = []keyState{
	{name: "chat browsing", tab: tabChat, seed: offsiteEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "10 utterances, 6 evicted", "#9 assistant")
		}},
	{name: "chat typing", tab: tabChat, seed: offsiteEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "#9 assistant")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "Enter send")
		},
		// The side panel's notes say it: "↓ more below (shift+↓)".
		onScreen: map[string]string{"shift+down": "(shift+↓)", "shift+up": "(shift+↑)"}},
	{name: "chat search results", tab: tabChat, seed: offsiteEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "#9 assistant")
			tm.Type("/budget")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, `search "budget"`)
		}},
	{name: "chat search results with why", tab: tabChat, seed: func(t *testing.T) conn.Conn { return scriptedWhy{offsiteEngine(t)} },
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "#9 assistant")
			tm.Type("/budget")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, `search "budget"`, "hits, best first", "why budget")
		}},
	{name: "threads list", tab: tabThreads, seed: threadsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "3 threads", "Two seats on the 8:05")
		}},
	{name: "threads decisions inside", tab: tabThreads, seed: threadsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "3 threads", "Two seats on the 8:05")
			keys(tm, tea.KeyRight)
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "Esc back to the threads")
		}},
	{name: "threads turns inside", tab: tabThreads, seed: threadsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "3 threads", "Two seats on the 8:05")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "Esc back to the threads")
		}},
	{name: "goals detail", tab: tabGoals, seed: goalsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "4 open items", "Make recall fast")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "✓ audit chain verified", "Enter lineage")
		}},
	{name: "goals list", tab: tabGoals, seed: goalsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "4 open items", "Make recall fast")
		}},
	{name: "goals lineage", tab: tabGoals, seed: goalsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "4 open items", "Make recall fast")
			openLineage(t, tm)
		}},
	{name: "goals filter", tab: tabGoals, seed: goalsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "4 open items", "Make recall fast")
			tm.Type("/")
			waitFor(t, tm, "Enter apply")
		}},
	{name: "goals share form", tab: tabGoals, seed: goalsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "4 open items", "Make recall fast")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "✓ audit chain verified")
			tm.Type("s")
			waitFor(t, tm, "Enter share")
		}},
	{name: "memory list", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
		}},
	{name: "memory remember prompt", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
			tm.Type("/")
			waitFor(t, tm, "Enter remember")
		}},
	{name: "memory remember results", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
			tm.Type("/offsite budget")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "3 hits", "why matched")
		}},
	{name: "memory forget", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
			tm.Type("f")
			waitFor(t, tm, "Enter preview")
		}},
	{name: "memory forget preview", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
			tm.Type("f")
			waitFor(t, tm, "forget: ")
			tm.Type("items tagged budget")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "Forget these 2 items (soft)?")
		}},
	{name: "memory detail", tab: tabMemory, seed: memoryEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "6/8", "Draft: maybe a boat trip")
			keys(tm, tea.KeyEnter)
			waitFor(t, tm, "Esc back to list")
		}},
	{name: "trace filter", tab: tabTrace, seed: traceEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "turn.start")
			tm.Type("f")
			waitFor(t, tm, "Enter apply")
		}},
	{name: "trace list", tab: tabTrace, seed: traceEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "turn.start")
		}},
	{name: "agents list", tab: tabAgents, seed: agentsEngine,
		enter: func(t *testing.T, tm *teatest.TestModel) {
			waitFor(t, tm, "2 connected", "cursor 0.9")
		}},
}

func offsiteEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	seedOffsite(t, engine, clk)
	return engine
}

func threadsEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	return engine
}

func goalsEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	return engine
}

func memoryEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	seedMemory(t, engine, clk)
	return engine
}

func traceEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	turn(t, engine, clk, "turn-1", "hello")
	turn(t, engine, clk, "turn-2", "and again")
	return engine
}

// build opens the console on engine in state s and returns it with its
// program ended, settled: a first message lets a pane catch up with its
// size (the Goals tab loads the item under the cursor on the next one).
func (s keyState) build(t *testing.T, engine conn.Conn) *Model {
	t.Helper()
	m := New(engine, Options{StatusFade: time.Hour})
	if p, ok := m.panes[tabPlans].(*plansPane); ok {
		p.still = true
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(goldenWidth, goldenHeight))
	t.Cleanup(func() { _ = tm.Quit() })
	if s.tab != tabChat {
		tm.Type(fmt.Sprint(int(s.tab) + 1))
	}
	s.enter(t, tm)
	m = finish(t, tm)
	m.Update(settleMsg{})
	return m
}

// settleMsg is a message no pane handles.
type settleMsg struct{}

// walkKeys are the keys sent to every state: every printable ASCII key,
// and the special keys a terminal sends.
func walkKeys() []tea.KeyMsg {
	var ks []tea.KeyMsg
	for r := '!'; r <= '~'; r++ {
		ks = append(ks, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	for _, k := range []tea.KeyType{tea.KeySpace, tea.KeyUp, tea.KeyDown, tea.KeyLeft, tea.KeyRight, tea.KeyPgUp, tea.KeyPgDown,
		tea.KeyHome, tea.KeyEnd, tea.KeyEnter, tea.KeyEsc, tea.KeyBackspace, tea.KeyDelete, tea.KeyTab, tea.KeyShiftTab,
		tea.KeyShiftUp, tea.KeyShiftDown, tea.KeyShiftLeft, tea.KeyShiftRight, tea.KeyCtrlUp, tea.KeyCtrlDown} {
		ks = append(ks, tea.KeyMsg{Type: k})
	}
	for k := tea.KeyCtrlA; k <= tea.KeyCtrlZ; k++ {
		if k != tea.KeyCtrlC && k != tea.KeyCtrlI && k != tea.KeyCtrlM { // quit; tab and enter
			ks = append(ks, tea.KeyMsg{Type: k})
		}
	}
	return ks
}

// lineEditing are the keys a text input edits its line with (README.md
// says so once: "the usual line-editing keys"); a pane's own keys in a
// text input are checked as any other.
var lineEditing = map[string]bool{
	"ctrl+a": true, "ctrl+b": true, "ctrl+d": true, "ctrl+e": true, "ctrl+f": true, "ctrl+h": true, "ctrl+k": true,
	"ctrl+u": true, "ctrl+v": true, "ctrl+w": true, "left": true, "right": true, "home": true, "end": true,
	"delete": true, "backspace": true,
}

// shownKeys are the bindings the footer and ? offer in m's state: the
// pane's, and the global ones that apply.
func shownKeys(m *Model) []key.Binding {
	p := m.panes[m.active]
	shown := append([]key.Binding{m.keys.ForceQuit}, p.Keys()...)
	if !p.Capturing() {
		shown = append(shown, bindingsOf(m.keys)...)
	}
	return shown
}

func matchesAny(msg tea.KeyMsg, bs []key.Binding) bool {
	return slices.ContainsFunc(bs, func(b key.Binding) bool { return key.Matches(msg, b) })
}

// TestEveryKeyAPaneReactsToIsShown: in every state of keyStates, a key
// that changes the screen or starts a command is one the footer and ?
// offer there. (Typed letters in a text input are not keys: a capturing
// state checks only the keys that are not text.)
func TestEveryKeyAPaneReactsToIsShown(t *testing.T) {
	// Each state has its own engine and models; most of the time goes in
	// waiting for frames, so the states walk side by side.
	t.Parallel()
	for _, s := range keyStates {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			engine := s.seed(t)
			m := s.build(t, engine)
			// The view before each key: a key that did nothing left the
			// model as it was, so the view after it is the next one's.
			before := m.View()
			for _, msg := range walkKeys() {
				p := m.panes[m.active]
				if p.Capturing() && (msg.Type == tea.KeyRunes || msg.Type == tea.KeySpace || lineEditing[msg.String()]) {
					continue // typed into the input, or editing it
				}
				shown := shownKeys(m)
				_, cmd := m.Update(msg)
				after := m.View()
				if cmd == nil && after == before {
					continue
				}
				if hint, ok := s.onScreen[msg.String()]; ok && strings.Contains(before, hint) {
					shown = append(shown, key.NewBinding(key.WithKeys(msg.String())))
				}
				if !matchesAny(msg, shown) {
					t.Errorf("%s: %q does something, but neither the footer nor ? offers it", s.name, msg.String())
				}
				m = s.build(t, engine) // the key changed the state: start again
				before = m.View()
			}
		})
	}
}

// TestEveryKeyMapKeyShowsInHelp: each binding of a pane's KeyMap is shown
// by ? in at least one state of keyStates (so a state that shows a new key
// belongs there), and ? draws every key it shows at 120 columns.
func TestEveryKeyMapKeyShowsInHelp(t *testing.T) {
	t.Parallel() // its own engines and models
	shown := map[tab][]key.Binding{}
	for _, s := range keyStates {
		m := s.build(t, s.seed(t))
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		press(m, "?")
		m.Update(settleMsg{})
		view := m.View()
		// The full help aligns keys and their descriptions in columns.
		view = strings.Join(strings.Fields(view), " ")
		for _, b := range labelled(m.panes[m.active].Keys()) {
			if h := b.Help(); !strings.Contains(view, h.Key+" "+h.Desc) {
				t.Errorf("%s: ? does not show %q", s.name, h.Key+" "+h.Desc)
			}
		}
		shown[s.tab] = append(shown[s.tab], m.panes[m.active].Keys()...)
	}
	engine, _ := newEngine(t)
	m := New(engine, Options{})
	t.Cleanup(m.cancel)
	for tb, p := range m.panes {
		if tab(tb) == tabPlans && !plannerBuilt {
			continue // no plans to walk: keymap_plans_test.go's states are not built
		}
		for _, b := range p.KeyMap() {
			for _, k := range b.Keys() {
				if !slices.ContainsFunc(shown[tab(tb)], func(s key.Binding) bool { return slices.Contains(s.Keys(), k) }) {
					t.Errorf("%s: %s (%q) is in the KeyMap but no state of keyStates shows it in ?", p.Title(), k, b.Help().Desc)
				}
			}
		}
	}
}

// readmeKeys reads README.md's key table ("## The console"): the keys of
// the rows of each tab ("Chat: `a`" rows), and of the rows for every tab
// ("" key), as keyLabel writes them.
func readmeKeys(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## The console")
	if !ok {
		t.Fatal("README.md has no section The console")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	rows := map[string][]string{}
	for line := range strings.SplitSeq(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| key") {
			continue
		}
		cells := strings.Split(line, "|")
		tabName := ""
		if name, _, ok := strings.Cut(strings.TrimSpace(cells[1]), ":"); ok && !strings.Contains(name, "`") {
			tabName = name
		}
		text := cells[1] + cells[2]
		for _, m := range regexp.MustCompile("`([0-9])`–`([0-9])`").FindAllStringSubmatch(text, -1) {
			for d := m[1][0]; d <= m[2][0]; d++ {
				rows[tabName] = append(rows[tabName], string(d))
			}
		}
		for _, m := range code.FindAllStringSubmatch(text, -1) {
			if m[1] == "/" {
				rows[tabName] = append(rows[tabName], "/")
				continue
			}
			for k := range strings.SplitSeq(m[1], "/") {
				rows[tabName] = append(rows[tabName], keyLabel(k))
			}
		}
	}
	return rows
}

// TestEveryKeyIsInTheReadme: README.md's key table names every key of
// every pane's KeyMap (in that tab's rows or the rows for all), and every
// global key, written as the help writes it (Ctrl+C, Esc, ↑).
func TestEveryKeyIsInTheReadme(t *testing.T) {
	t.Parallel()
	rows := readmeKeys(t)
	engine, _ := newEngine(t)
	m := New(engine, Options{})
	t.Cleanup(m.cancel)
	inRows := func(k string, names ...string) bool {
		for _, n := range names {
			if slices.Contains(rows[n], keyLabel(k)) {
				return true
			}
		}
		return false
	}
	for _, b := range bindingsOf(m.keys) {
		for _, k := range b.Keys() {
			if !inRows(k, "") {
				t.Errorf("the global key %s is not in README.md's key table", keyLabel(k))
			}
		}
	}
	for _, p := range m.panes {
		for _, b := range p.KeyMap() {
			// A binding is documented when one of its keys is (k and j
			// are ↑ and ↓ again).
			if !slices.ContainsFunc(b.Keys(), func(k string) bool { return inRows(k, p.Title(), "") }) {
				t.Errorf("%s: %s (%q) is not in README.md's key table", p.Title(), keyLabel(strings.Join(b.Keys(), "/")), b.Help().Desc)
			}
		}
	}
}

// TestFootersFit: at 80 and 120 columns, in every state of keyStates and
// with ? open, no footer line is wider than the screen, the one-line
// footer keeps "1-7 tabs" while the tab keys work, and no key label reads
// as Bubble Tea names keys ("ctrl+c", "esc", "enter").
func TestFootersFit(t *testing.T) {
	t.Parallel() // its own engines and models
	lower := regexp.MustCompile(`\b(ctrl\+|shift\+|alt\+|esc\b|enter\b|pgup\b|pgdn\b|tab\b|backspace\b)`)
	for _, s := range keyStates {
		m := s.build(t, s.seed(t))
		for _, w := range []int{80, 120} {
			m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
			for _, full := range []bool{false, true} {
				if full {
					press(m, "?")
				}
				footer := m.footer()
				what := fmt.Sprintf("%s at %d (full help %v)", s.name, w, full)
				for _, l := range strings.Split(footer, "\n") {
					if lineWidth(l) > w {
						t.Errorf("%s: a footer line is %d wide: %q", what, lineWidth(l), l)
					}
				}
				if !full && !m.panes[m.active].Capturing() && !strings.Contains(footer, "1-7 tabs") {
					t.Errorf("%s: the footer lost 1-7 tabs: %q", what, footer)
				}
				if flat := strings.Join(strings.Fields(footer), " "); full && !m.panes[m.active].Capturing() &&
					(!strings.Contains(flat, "? fewer keys") || !strings.Contains(flat, "Ctrl+C quit from anywhere")) {
					t.Errorf("%s: ? lost the global keys:\n%s", what, footer)
				}
				for _, b := range labelled(m.panes[m.active].Keys()) {
					if lower.MatchString(b.Help().Key) {
						t.Errorf("%s: the key %q reads as Bubble Tea names it", what, b.Help().Key)
					}
				}
				if full {
					press(m, "?")
				}
			}
		}
	}
}

// TestKeyLabelsReadAsWritten: keyLabel writes keys as a person does.
func TestKeyLabelsReadAsWritten(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ctrl+c": "Ctrl+C", "shift+tab": "Shift+Tab", "esc": "Esc", "enter": "Enter", "pgup/pgdn": "PgUp/PgDn",
		"ctrl+n/p": "Ctrl+N/P", "c/ctrl+o": "c/Ctrl+O", "n/esc": "n/Esc", "↑/↓": "↑/↓", "g/home": "g/Home",
		"shift+↑/↓": "Shift+↑/↓", "ctrl+t/←/→": "Ctrl+T/←/→", "1-6": "1-6", "G": "G", "up": "↑", "pgdown": "PgDn",
	} {
		if got := keyLabel(in); got != want {
			t.Errorf("keyLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
