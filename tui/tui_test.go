package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/muesli/termenv"
)

// The golden frames live with the repository's other test data. They are
// the final model's View with each line's trailing spaces cut, so that they
// read as the screen does; the exact size of every frame is checked apart.
// `go test ./tui -update` rewrites them (teatest's golden package owns the
// -update flag; these tests read it rather than define a second one).
var goldenDir = "testdata"

const (
	goldenWidth  = 100
	goldenHeight = 30
	// waitLimit bounds every wait for something to be rendered; it is far
	// above what the tests take, so that a slow machine does not fail them.
	waitLimit = 30 * time.Second
)

var goldenTime = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	// Adaptive colours would otherwise ask the terminal for its background.
	lipgloss.SetHasDarkBackground(true)
	os.Exit(m.Run())
}

// newEngine opens an in-memory engine on a fixed clock and id seed, so that
// ids and times repeat from run to run.
func newEngine(t *testing.T) (conn.Conn, *clock.Fixed) {
	t.Helper()
	clk := clock.NewFixed(goldenTime)
	engine, err := core.Open(core.Options{InMemory: true, Clock: clk, IDSeed: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	return engine, clk
}

// closeEngine closes an engine at the end of a test; a failure to close
// (a flush that did not happen) fails the test.
func closeEngine(t *testing.T, engine *core.Engine) {
	if err := engine.Close(); err != nil {
		t.Errorf("closing the engine: %v", err)
	}
}

// do runs an action through the engine (not the console) and fails the test
// if it fails.
func do(t *testing.T, engine conn.Conn, name, turn, args string) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	res, err := engine.Do(context.Background(), core.Request{Action: name, Turn: turn, Args: raw})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// turn records a whole turn: start, then end a moment later.
func turn(t *testing.T, engine conn.Conn, clk *clock.Fixed, id, input string) {
	t.Helper()
	do(t, engine, "turn.start", id, fmt.Sprintf(`{"input": %q}`, input))
	clk.Advance(1250 * time.Millisecond)
	do(t, engine, "turn.end", id, "")
	clk.Advance(750 * time.Millisecond)
}

// start runs the console over engine in a teatest program of the given size.
// The status line's fade is an hour away, so that frames do not depend on
// how fast the test runs.
func start(t *testing.T, engine conn.Conn, width, height int) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, New(engine, Options{StatusFade: time.Hour}),
		teatest.WithInitialTermSize(width, height))
	t.Cleanup(func() { _ = tm.Quit() }) // a no-op once the program has ended
	return tm
}

// waitFor waits until everything in want has been rendered since the last
// wait (WaitFor consumes the output it reads).
func waitFor(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		for _, w := range want {
			if !bytes.Contains(out, []byte(w)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(waitLimit), teatest.WithCheckInterval(5*time.Millisecond))
}

// finish quits the program and returns its final model.
func finish(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return final(t, tm)
}

// final waits for the program to end by itself and returns its final model.
func final(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	m, ok := tm.FinalModel(t, teatest.WithFinalTimeout(waitLimit)).(*Model)
	if !ok {
		t.Fatal("the final model is not a *tui.Model")
	}
	return m
}

// keys sends special keys, in order.
func keys(tm *teatest.TestModel, types ...tea.KeyType) {
	for _, k := range types {
		tm.Send(tea.KeyMsg{Type: k})
	}
}

// press hands key presses straight to a model (one whose program has ended,
// so nothing else touches it), ignoring the commands they return: for
// checks of View at other sizes and states once the data has been loaded.
func press(m *Model, ks ...string) {
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "shift+tab":
			msg = tea.KeyMsg{Type: tea.KeyShiftTab}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		m.Update(msg)
	}
}

// checkScreen fails unless view is exactly width columns by height lines.
func checkScreen(t *testing.T, what, view string, width, height int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != height {
		t.Errorf("%s: %d lines, want %d", what, len(lines), height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != width {
			t.Errorf("%s: line %d is %d columns wide, want %d: %q", what, i+1, w, width, l)
		}
	}
}

// updating reports teatest's -update flag.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// screenText is a frame as a golden file holds it.
func screenText(view string) string {
	lines := strings.Split(view, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// requireGolden checks a full frame: its size, then its text against
// testdata/<the test's name>.golden (a subtest's "/" becomes "_").
func requireGolden(t *testing.T, m *Model) {
	t.Helper()
	requireGoldenNamed(t, strings.ReplaceAll(t.Name(), "/", "_"), m)
}

// requireGoldenNamed checks a frame against another test's golden file:
// for a test that must draw the same screen another way.
func requireGoldenNamed(t *testing.T, name string, m *Model) {
	t.Helper()
	view := m.View()
	checkScreen(t, name, view, goldenWidth, goldenHeight)
	got := screenText(view)
	path := filepath.Join(goldenDir, name+".golden")
	if updating() {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("frame differs from %s (go test ./tui -update rewrites it)\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// --- golden frames ---

func TestGoldenTabs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, name, tab, shows string
	}{
		{"1", "chat_empty", "[1 Chat]", "No messages in default yet"}, // chat_test.go has the rest
		{"2", "threads_empty", "[2 Threads]", "No threads yet"},       // threads_test.go has the rest
		{"3", "goals", "[3 Goals]", "No open goals"},                  // empty: goals_test.go has the rest
		// 4 Plans: plans_test.go (its engine has the planner, which newEngine's has not)
		{"5", "memory_empty", "[5 Memory]", "No memories in working yet"}, // memory_test.go has the rest
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine, _ := newEngine(t)
			tm := start(t, engine, goldenWidth, goldenHeight)
			tm.Type(tc.key)
			waitFor(t, tm, tc.tab, tc.shows)
			requireGolden(t, finish(t, tm))
		})
	}
}

func TestGoldenTrace(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	turn(t, engine, clk, "turn-1", "hello")
	turn(t, engine, clk, "turn-2", "what did I say?")
	do(t, engine, "turn.start", "turn-3", `{"input": "still thinking", "channel": "web"}`)

	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, "[6 Trace]", allTurnsLine(t, engine), "turn-3")
	m := finish(t, tm)
	requireGolden(t, m)
	if got, want := len(m.panes[tabTrace].(*tracePane).entries), traceCount(t, engine, ""); got != want {
		t.Errorf("the trace pane holds %d entries, want %d", got, want)
	}
}

func TestGoldenPaletteEngineInfo(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":")
	tm.Type("engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok", `"version"`)
	m := finish(t, tm)
	requireGolden(t, m)
	if !m.paletteOpen {
		t.Error("the palette closed")
	}
}

func TestGoldenPaletteError(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":")
	tm.Type("no.such.action")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✗ no.such.action failed", "UnknownAction:")
	m := finish(t, tm)
	requireGolden(t, m)
	if !m.status.isError || m.status.faded {
		t.Errorf("status = %+v, want a bright error", m.status)
	}
}

// --- keys ---

func TestTabKeys(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[1 Chat]")
	steps := []struct {
		send func()
		want string
	}{
		{func() { tm.Type("2") }, "[2 Threads]"},
		{func() { keys(tm, tea.KeyTab) }, "[3 Goals]"},
		{func() { keys(tm, tea.KeyShiftTab) }, "[2 Threads]"},
		{func() { tm.Type("6") }, "[6 Trace]"},
		{func() { keys(tm, tea.KeyTab) }, "[7 Agents]"},
		{func() { keys(tm, tea.KeyTab) }, "[1 Chat]"},        // wraps around
		{func() { keys(tm, tea.KeyShiftTab) }, "[7 Agents]"}, // and back
		{func() { tm.Type("6") }, "[6 Trace]"},
		{func() { tm.Type("5") }, "[5 Memory]"},
		{func() { tm.Type("4") }, "[4 Plans]"},
		{func() { tm.Type("3") }, "[3 Goals]"},
		{func() { tm.Type("1") }, "[1 Chat]"},
	}
	for _, s := range steps {
		s.send()
		waitFor(t, tm, s.want)
	}
	if m := finish(t, tm); m.active != tabChat {
		t.Errorf("active tab %d, want Chat", m.active)
	}
}

func TestQuitKey(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("2")
	tm.Type("q")
	if m := final(t, tm); !m.quitting || m.active != tabThreads {
		t.Errorf("quitting=%v active=%d, want a quit from Threads", m.quitting, m.active)
	}
}

func TestQTypesInPalette(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":q")
	waitFor(t, tm, `no action starts with "q"`)
	keys(tm, tea.KeyCtrlC)
	m := final(t, tm)
	if got := m.palette.input.Value(); got != "q" || !m.paletteOpen {
		t.Errorf("palette open=%v input %q, want the palette open with %q typed", m.paletteOpen, got, "q")
	}
}

func TestQTypesInTraceFilter(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6f")
	waitFor(t, tm, "turn: ")
	tm.Type("q1?")
	waitFor(t, tm, "turn: q1?")
	keys(tm, tea.KeyCtrlC)
	m := final(t, tm)
	p := m.panes[tabTrace].(*tracePane)
	if got := p.input.Value(); got != "q1?" || !p.editing || m.active != tabTrace || m.help.ShowAll {
		t.Errorf("filter input %q (editing %v), tab %d, full help %v: want q1? typed into the filter on Trace",
			got, p.editing, m.active, m.help.ShowAll)
	}
}

func TestCtrlCQuitsFromAnywhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(tm *teatest.TestModel)
	}{
		{"chat", func(*teatest.TestModel) {}},
		{"trace", func(tm *teatest.TestModel) { tm.Type("6") }},
		{"full help", func(tm *teatest.TestModel) { tm.Type("?") }},
		{"palette", func(tm *teatest.TestModel) { tm.Type(":engine") }},
		{"trace filter", func(tm *teatest.TestModel) { tm.Type("6f") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine, _ := newEngine(t)
			tm := start(t, engine, goldenWidth, goldenHeight)
			tc.setup(tm)
			keys(tm, tea.KeyCtrlC)
			if m := final(t, tm); !m.quitting {
				t.Error("the console did not quit")
			}
		})
	}
}

func TestHelpToggle(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "? more keys")
	tm.Type("?")
	waitFor(t, tm, "previous tab", "quit from anywhere", "fewer keys")
	tm.Type("?")
	waitFor(t, tm, "? more keys")
	m := finish(t, tm)
	if m.help.ShowAll {
		t.Error("full help is still shown")
	}
	view := m.View()
	checkScreen(t, "after ?", view, goldenWidth, goldenHeight)
	if strings.Contains(view, "previous tab") {
		t.Error("the short footer lists every key")
	}
	// Full help takes rows from the body, and gives them back.
	press(m, "?")
	checkScreen(t, "full help", m.View(), goldenWidth, goldenHeight)
	if !strings.Contains(m.View(), "previous tab") {
		t.Error("no full help after ?")
	}
}

// --- trace ---

// traceCount is how many trace entries the engine holds (of one turn, or all).
func traceCount(t *testing.T, engine conn.Conn, turn string) int {
	t.Helper()
	res, err := conn.Call(context.Background(), engine, core.ActionTraceList, trace.ListArgs{Turn: turn, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return res.Count
}

// allTurnsLine is the trace pane's title for the engine's whole trace.
func allTurnsLine(t *testing.T, engine conn.Conn) string {
	return plural(traceCount(t, engine, ""), "entry", "entries") + ", all turns"
}

// turnLine is the trace pane's title for one turn's entries.
func turnLine(t *testing.T, engine conn.Conn, turn string) string {
	return plural(traceCount(t, engine, turn), "entry", "entries") + " of turn " + turn
}

func TestTraceShowsLiveEntries(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, "No trace entries yet")

	// Published after the program started: it reaches the pane as an event.
	clk.Advance(time.Minute)
	do(t, engine, "turn.start", "live-1", `{"input": "are you there?"}`)
	waitFor(t, tm, allTurnsLine(t, engine), "live-1", "10:01:00.000")

	m := finish(t, tm)
	p := m.panes[tabTrace].(*tracePane)
	last := p.entries[len(p.entries)-1]
	if len(p.entries) != traceCount(t, engine, "live-1") || last.TurnID != "live-1" || last.Kind != "turn.start" {
		t.Errorf("entries = %+v, want live-1's, ending with its turn.start", p.entries)
	}
}

// TestTraceKeepsUp floods the console with events: the subscription is a
// command re-issued after each event, so every one arrives, in order.
func TestTraceKeepsUp(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, "No trace entries yet")
	const turns = 150
	for i := range turns {
		do(t, engine, "turn.start", fmt.Sprintf("flood-%03d", i), "")
	}
	total := traceCount(t, engine, "")
	waitFor(t, tm, allTurnsLine(t, engine), fmt.Sprintf("flood-%03d", turns-1))
	m := finish(t, tm)
	p := m.panes[tabTrace].(*tracePane)
	if len(p.entries) != total {
		t.Fatalf("%d entries, want %d", len(p.entries), total)
	}
	// Every turn's entries arrived, in the order they were published.
	for i := 1; i < len(p.entries); i++ {
		if p.entries[i].Seq <= p.entries[i-1].Seq || p.entries[i].TurnID < p.entries[i-1].TurnID {
			t.Fatalf("entry %d (%s #%d) after %s #%d: out of order", i, p.entries[i].TurnID, p.entries[i].Seq, p.entries[i-1].TurnID, p.entries[i-1].Seq)
		}
	}
	// Following the tail: the newest entry is on screen.
	if !strings.Contains(m.View(), fmt.Sprintf("flood-%03d", turns-1)) {
		t.Error("the newest entry is not shown")
	}
}

func TestTraceFilterByTurn(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	do(t, engine, "turn.start", "turn-a", `{"input": "first"}`)
	clk.Advance(time.Second)
	turn(t, engine, clk, "turn-b", "second")
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, allTurnsLine(t, engine))

	tm.Type("f")
	tm.Type("turn-a")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, turnLine(t, engine, "turn-a"))

	// Live entries of other turns stay out (turn-a2 only starts like
	// turn-a); the filter's own come in, after them.
	do(t, engine, "turn.start", "turn-c", "")
	do(t, engine, "turn.start", "turn-a2", "")
	do(t, engine, "turn.end", "turn-a", "")
	want := traceCount(t, engine, "turn-a")
	waitFor(t, tm, turnLine(t, engine, "turn-a"))

	m := finish(t, tm)
	p := m.panes[tabTrace].(*tracePane)
	if p.turn != "turn-a" || len(p.entries) != want {
		t.Fatalf("filter %q with %d entries, want turn-a's %d", p.turn, len(p.entries), want)
	}
	for _, e := range p.entries {
		if e.TurnID != "turn-a" {
			t.Errorf("entry %d of turn %s shown under the turn-a filter", e.Seq, e.TurnID)
		}
	}
	view := m.View()
	if strings.Contains(view, "turn-b") || strings.Contains(view, "turn-c") || strings.Contains(view, "turn-a2") || !strings.Contains(view, "turn-a") {
		t.Errorf("the filtered frame shows other turns:\n%s", view)
	}
}

func TestTraceFilterClearAndPartialID(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	turn(t, engine, clk, "turn-a", "first")
	turn(t, engine, clk, "turn-b", "second")
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, allTurnsLine(t, engine))

	// Part of an id completes to the one turn it belongs to.
	tm.Type("f-b")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, turnLine(t, engine, "turn-b"))
	// esc clears the filter.
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, allTurnsLine(t, engine))
	// Part of more than one id says so.
	tm.Type("fturn")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `"turn" is part of 2 turn ids`)
	// An id nobody used shows nothing, and says how to get back. (The
	// input starts with the current filter, to edit it.)
	tm.Type("f")
	keys(tm, tea.KeyCtrlU)
	tm.Type("nope")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "No entries for turn nope")

	m := finish(t, tm)
	if p := m.panes[tabTrace].(*tracePane); p.turn != "nope" || len(p.entries) != 0 {
		t.Errorf("filter %q with %d entries, want nope's none", p.turn, len(p.entries))
	}
}

// TestTraceIgnoresStaleLoad: the answer to a load made for an earlier filter
// must not land in the list of the current one.
func TestTraceIgnoresStaleLoad(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newTracePane(engine, &styles)
	p.SetSize(goldenWidth, 20)
	p.Init()              // load 1: every turn
	p.setFilter("turn-a") // load 2: turn-a only
	all := trace.ListResult{Entries: []trace.Entry{
		{Seq: 1, TurnID: "turn-b", Kind: "turn.start", At: goldenTime},
	}}
	p.Update(resultMsg[trace.ListResult]{pane: tracePaneID, req: 1, action: "trace.list", value: all})
	if len(p.entries) != 0 || p.loaded {
		t.Errorf("a stale load was applied: %+v", p.entries)
	}
	p.Update(resultMsg[trace.ListResult]{pane: tracePaneID, req: 2, action: "trace.list", value: trace.ListResult{Entries: []trace.Entry{}}})
	if !p.loaded {
		t.Error("the current load was not applied")
	}
	// A live entry of another turn stays out too.
	p.Update(events.Event{Name: kit.EventTraceRecorded.Name(), Data: trace.Entry{Seq: 2, TurnID: "turn-b", Kind: "turn.end"}})
	if len(p.entries) != 0 {
		t.Errorf("another turn's live entry was shown: %+v", p.entries)
	}
}

// TestTraceEntryIsOneLine: a message with newlines or longer than the screen
// stays on its line, cut with an ellipsis; a long turn id shows its end,
// which is what tells UUIDv7 ids apart.
func TestTraceEntryIsOneLine(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newTracePane(engine, &styles)
	p.SetSize(80, 10)
	p.loaded = true
	p.merge(trace.Entry{
		Seq: 7, TurnID: "01a214dd-0e0d-72b8-b0ba-c160125f4e36", Kind: "turn.start", At: goldenTime,
		Message: "first line\nsecond line " + strings.Repeat("long ", 30),
	})
	view := p.View()
	checkScreen(t, "trace pane", view, 80, 10)
	line := strings.Split(view, "\n")[2]
	if !strings.Contains(line, "…c160125f4e36") || !strings.Contains(line, "first line second line") || !strings.HasSuffix(line, "…") {
		t.Errorf("entry line %q", line)
	}
}

// --- palette ---

func TestPaletteCompletion(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":engine.i")
	waitFor(t, tm, "1 match: [engine.info]")
	m := finish(t, tm)
	// The suggestion shows after the cursor without overflowing the line.
	inputLine := strings.Split(m.View(), "\n")[3]
	if !strings.HasPrefix(inputLine, " : engine.info") || strings.Contains(inputLine, "…") {
		t.Errorf("input line %q, want the suggestion and no ellipsis", inputLine)
	}
	press(m, "tab")
	if got := m.palette.input.Value(); got != "engine.info" {
		t.Errorf("tab completed to %q, want engine.info", got)
	}
	if view := m.View(); !strings.Contains(view, "engine.info Version, store, language model") || !strings.Contains(view, "args: counts (boolean)") {
		t.Errorf("the chosen action is not described:\n%s", view)
	}
}

func TestPaletteHistory(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok")
	keys(tm, tea.KeyCtrlU)
	tm.Type(`trace.list {"limit": 5}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ trace.list ok")
	// (Each wait follows a change of the screen: a key undone within one
	// frame renders nothing to wait for.)
	keys(tm, tea.KeyCtrlU)
	all, err := conn.Call(context.Background(), engine, core.ActionListActions, conn.ListActionsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, fmt.Sprintf("%d matches", len(all.Actions)))
	keys(tm, tea.KeyUp)
	waitFor(t, tm, `: trace.list {"limit": 5}`)
	keys(tm, tea.KeyUp, tea.KeyUp) // the oldest stays
	waitFor(t, tm, ": engine.info")
	keys(tm, tea.KeyDown)
	waitFor(t, tm, `: trace.list {"limit": 5}`)
	keys(tm, tea.KeyUp)
	m := finish(t, tm)
	if got := m.palette.input.Value(); got != "engine.info" {
		t.Errorf("input %q after up, up, up, down, up; want engine.info", got)
	}
	if want := []string{"engine.info", `trace.list {"limit": 5}`}; fmt.Sprint(m.palette.history) != fmt.Sprint(want) {
		t.Errorf("history %q, want %q", m.palette.history, want)
	}
	// Down past the newest gives an empty line to type on.
	m.palette.recall(false)
	m.palette.recall(false)
	if got := m.palette.input.Value(); got != "" {
		t.Errorf("input %q after going past the newest, want empty", got)
	}
}

func TestPaletteScrollsLongResult(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":actions.list")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ actions.list ok", "(lines 1-21 of")
	keys(tm, tea.KeyPgDown)
	waitFor(t, tm, "(lines 22-42 of")
	keys(tm, tea.KeyPgUp)
	waitFor(t, tm, "(lines 1-21 of")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "[1 Chat]")
	m := finish(t, tm)
	if m.paletteOpen {
		t.Error("esc did not close the palette")
	}
}

// --- sizes ---

func TestResize(t *testing.T) {
	t.Parallel()
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.Width, size.Height), func(t *testing.T) {
			engine, clk := newEngine(t)
			turn(t, engine, clk, "turn-1", "hello")
			tm := start(t, engine, goldenWidth, goldenHeight)
			tm.Type("6")
			waitFor(t, tm, allTurnsLine(t, engine))
			tm.Send(size)
			m := finish(t, tm)
			checkScreen(t, "after the resize", m.View(), size.Width, size.Height)
			if rule := strings.Split(m.View(), "\n")[2]; rule != strings.Repeat("─", size.Width) {
				t.Errorf("the rule under the tabs is %q", rule)
			}
		})
	}
}

// TestViewFitsEveryState checks, at several sizes, every tab with and
// without full help, the trace filter input and the palette with a long
// result: each frame is exactly the terminal's size, and the keys that
// matter most stay in the footer.
func TestViewFitsEveryState(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	turn(t, engine, clk, "01a214dd-0e0d-72b8-b0ba-c160125f4e36", strings.Repeat("a long input ", 20))
	// An agent client with a long, wide name and a failed call: the Agents
	// tab's table and details fit every size too.
	wide := agentClient{agent: "local", session: strings.Repeat("s", 80), name: strings.Repeat("クライアント", 8), version: "1.0", transport: "stdio"}
	agentCall(t, engine, clk, wide, "goal_history", "1", "cortex.get", `{"id": "`+strings.Repeat("nope", 30)+`"}`, true)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("6")
	waitFor(t, tm, allTurnsLine(t, engine))
	// An error in the status line, and a long result in the palette.
	tm.Type(":no.such.action")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✗ no.such.action failed")
	keys(tm, tea.KeyCtrlU)
	tm.Type("actions.list")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ actions.list ok")
	keys(tm, tea.KeyEsc)
	m := finish(t, tm)

	for _, size := range []tea.WindowSizeMsg{{Width: 100, Height: 30}, {Width: 80, Height: 24}, {Width: 200, Height: 60}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		name := func(state string) string { return fmt.Sprintf("%dx%d %s", size.Width, size.Height, state) }
		for tb := range tabCount {
			title := m.panes[tb].Title()
			press(m, fmt.Sprint(int(tb)+1))
			checkScreen(t, name(title), m.View(), size.Width, size.Height)
			if size.Width >= 80 && !strings.Contains(lastLine(m.View()), "q quit") {
				t.Errorf("%s: the footer lost q quit: %q", name(title), lastLine(m.View()))
			}
			press(m, "?")
			checkScreen(t, name(title+" full help"), m.View(), size.Width, size.Height)
			press(m, "?")
		}
		press(m, fmt.Sprint(int(tabTrace)+1), "f", "some-turn")
		checkScreen(t, name("trace filter"), m.View(), size.Width, size.Height)
		if size.Width >= 80 && strings.Contains(lastLine(m.View()), "1-7 tabs") {
			t.Errorf("%s: the footer offers keys the filter input takes: %q", name("trace filter"), lastLine(m.View()))
		}
		press(m, "esc", ":")
		checkScreen(t, name("palette"), m.View(), size.Width, size.Height)
		if size.Width >= 80 && !strings.Contains(lastLine(m.View()), "Esc close") {
			t.Errorf("%s: the footer lost esc close: %q", name("palette"), lastLine(m.View()))
		}
		press(m, "esc")
	}
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

// --- the event subscription ---

// TestUpdateNeverBlocks: Update hands the subscription back as a command
// instead of reading the channel itself, so it returns at once even when no
// event is waiting; the command delivers the next event when one comes.
func TestUpdateNeverBlocks(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	m := New(engine, Options{})
	t.Cleanup(func() { m.cancel() })
	m.Update(tea.WindowSizeMsg{Width: goldenWidth, Height: goldenHeight})

	done := make(chan tea.Cmd, 1)
	go func() {
		_, cmd := m.Update(eventMsg(events.Event{Seq: 1, Name: "item.mutated"}))
		done <- cmd
	}()
	var cmd tea.Cmd
	select {
	case cmd = <-done:
	case <-time.After(waitLimit):
		t.Fatal("Update blocked on an event")
	}
	if cmd == nil {
		t.Fatal("Update did not re-issue the subscription")
	}

	next := make(chan tea.Msg, 1)
	go func() { next <- waitForEvent(m.events)() }()
	do(t, engine, "turn.start", "turn-1", "")
	select {
	case msg := <-next:
		ev, ok := msg.(eventMsg)
		if !ok || ev.Name != kit.EventTraceRecorded.Name() {
			t.Errorf("the subscription delivered %#v, want a trace.recorded event", msg)
		}
	case <-time.After(waitLimit):
		t.Fatal("no event delivered")
	}

	// Once the console quits, the subscription ends instead of waiting.
	m.quit()
	select {
	case <-runAsync(waitForEvent(m.events)):
	case <-time.After(waitLimit):
		t.Fatal("the subscription outlived the console")
	}
}

func runAsync(cmd tea.Cmd) <-chan tea.Msg {
	out := make(chan tea.Msg, 1)
	go func() { out <- cmd() }()
	return out
}

// --- the status line ---

func TestStatusFades(t *testing.T) {
	t.Parallel()
	s := status{fade: time.Hour}
	if s.set("first\nmessage", true) == nil {
		t.Fatal("no fade timer")
	}
	if s.text != "first message" {
		t.Errorf("text %q, want it on one line", s.text)
	}
	s.set("second", false)
	s.advance(statusFadeMsg{id: 1, stage: 1}) // the first message's timer
	if s.faded || s.next(statusFadeMsg{id: 1, stage: 1}) != nil {
		t.Error("a stale timer faded the current message")
	}
	s.advance(statusFadeMsg{id: 2, stage: 1})
	if !s.faded || s.next(statusFadeMsg{id: 2, stage: 1}) == nil {
		t.Error("the message did not fade, or will not go")
	}
	s.advance(statusFadeMsg{id: 2, stage: 2})
	styles := DefaultStyles()
	if s.text != "" || s.view(&styles, 40) != "" {
		t.Errorf("the message did not go: %q", s.text)
	}
}

// TestPaletteShowsSpinnerWhileAModelAnswers: an LLM call in flight shows a
// spinner in the palette, which asked, until the answer comes.
func TestPaletteShowsSpinnerWhileAModelAnswers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	model := &llmtest.Scripted{Model: "tiny", Func: func(llm.Request) llmtest.Answer {
		<-release
		return llmtest.Text("hello from the model")
	}}
	engine, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden", LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "llm scripted · tiny") // the header names provider and model
	tm.Type(`:llm.complete {"prompt": "hi"}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "running llm.complete…")
	close(release)
	waitFor(t, tm, "✓ llm.complete ok", "hello from the model")
	m := finish(t, tm)
	if len(m.palette.runs) > 0 || strings.Contains(m.View(), "running llm.complete") {
		t.Error("the spinner is still shown after the answer")
	}
}

// TestOneLineNeutralisesControlCharacters: text from an agent cannot drive
// the terminal (set its title, clear it, colour it).
func TestOneLineNeutralisesControlCharacters(t *testing.T) {
	t.Parallel()
	hostile := "plan\x1b]0;PWNED\x07\x1b[2J\x1b[41mred\u009b31m\r\nnext\tcol"
	got := oneLine(hostile)
	for _, r := range got {
		if unicode.IsControl(r) {
			t.Fatalf("oneLine(%q) = %q still holds control character %U", hostile, got, r)
		}
	}
	if !strings.Contains(got, "plan") || !strings.Contains(got, "next col") {
		t.Errorf("oneLine lost the text: %q", got)
	}
}

// blockingModel answers only when its context ends, and says so.
type blockingModel struct{ cancelled chan struct{} }

func (b *blockingModel) Info() llm.Info { return llm.Info{Provider: "blocking", Model: "slow"} }
func (b *blockingModel) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	<-ctx.Done()
	close(b.cancelled)
	return llm.Response{}, &llm.Error{Provider: "blocking", Msg: "cancelled", Err: ctx.Err()}
}
func (b *blockingModel) Embed(context.Context, llm.EmbedRequest) (llm.EmbedResponse, error) {
	return llm.EmbedResponse{}, errors.New("no embeddings")
}

// TestCtrlXCancelsThePalettesAction: ctrl+x gives up on a slow model call
// (esc leaves it running: issue 14, item 2).
func TestCtrlXCancelsThePalettesAction(t *testing.T) {
	t.Parallel()
	model := &blockingModel{cancelled: make(chan struct{})}
	engine, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden", LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(`:llm.complete {"prompt": "take your time"}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "running llm.complete…", "Ctrl+X cancel")
	keys(tm, tea.KeyCtrlX)
	select {
	case <-model.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("ctrl+x did not cancel the model call")
	}
	finish(t, tm)
}

// requireGoldenSized is requireGolden for a frame of another size than
// the golden one.
func requireGoldenSized(t *testing.T, m *Model, width, height int) {
	t.Helper()
	view := m.View()
	checkScreen(t, t.Name(), view, width, height)
	got := screenText(view)
	path := filepath.Join(goldenDir, t.Name()+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("frame differs from %s\n%s", path, lineDiff(string(want), got))
	}
}
