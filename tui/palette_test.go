package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/planner"
)

// hold is an action the test holds: test.hold waits until the test lets
// it go (then passes, or fails if asked to) or its context ends (and says
// so on cancelled).
type hold struct {
	entered   chan struct{}
	release   chan struct{}
	cancelled chan struct{}
}

// newHoldEngine opens an in-memory engine with the planner and test.hold.
func newHoldEngine(t *testing.T) (conn.Conn, *hold) {
	t.Helper()
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	engine, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &hold{entered: make(chan struct{}, 16), release: make(chan struct{}), cancelled: make(chan struct{}, 16)}
	type holdArgs struct {
		Fail bool `json:"fail"`
	}
	action.Register(engine.Env().Actions, action.Spec{Name: "test.hold", Summary: "Wait until the test lets go"},
		func(ctx context.Context, _ action.Call, a holdArgs) (map[string]bool, error) {
			h.entered <- struct{}{}
			select {
			case <-h.release:
				if a.Fail {
					return nil, errors.New("held and dropped")
				}
				return map[string]bool{"held": true}, nil
			case <-ctx.Done():
				h.cancelled <- struct{}{}
				return nil, ctx.Err()
			}
		})
	// Cleanups run last first: the held actions go before the engine closes.
	t.Cleanup(func() { closeEngine(t, engine) })
	t.Cleanup(h.letGo)
	return engine, h
}

// letGo releases every held action, now and later.
func (h *hold) letGo() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// waitEntered waits until an action is held.
func (h *hold) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(waitLimit):
		t.Fatal("nothing reached test.hold")
	}
}

// startWith runs the console with opts (the status line's fade an hour
// away, as start does).
func startWith(t *testing.T, engine conn.Conn, opts Options, width, height int) *teatest.TestModel {
	t.Helper()
	opts.StatusFade = time.Hour
	tm := teatest.NewTestModel(t, New(engine, opts), teatest.WithInitialTermSize(width, height))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm
}

// Issue 14, item 2: esc after `:plan.execute` left the plan cancelled,
// without a word. Closing the palette leaves the run going; its result
// comes to the status line when it ends.
func TestClosingThePaletteLeavesItsActionRunning(t *testing.T) {
	t.Parallel()
	if !plannerBuilt {
		t.Skip("its long action is a plan run; this build leaves the planner out")
	}
	engine, h := newHoldEngine(t)
	do(t, engine, "plan.create", "", `{"id": "held", "goal": "Wait for the test", "subtasks": [
		{"id": "wait", "action": {"name": "test.hold"}}]}`)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(`:plan.execute {"plan_id": "held"}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "running plan.execute…")
	h.waitEntered(t)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "[1 Chat]", "plan.execute keeps running: its result will show here")
	h.letGo()
	waitFor(t, tm, `✓ plan.execute ok: { "plan": { "id": "held",`)
	m := finish(t, tm)
	if m.paletteOpen {
		t.Error("the palette opened again")
	}
	select {
	case <-h.cancelled:
		t.Error("closing the palette cancelled the action")
	default:
	}
	res, err := conn.Call(context.Background(), engine, planner.ActionPlanGet, planner.PlanArgs{PlanID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Status != planner.PlanCompleted {
		t.Errorf("the plan ended %s, want completed", res.Plan.Status)
	}
}

// Issue 14, item 2: an action that fails while the palette is closed says
// so in the status line, naming the action.
func TestPaletteActionFailingWhileClosedShowsInTheStatusLine(t *testing.T) {
	t.Parallel()
	engine, h := newHoldEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(`:test.hold {"fail": true}`)
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "test.hold keeps running")
	h.letGo()
	waitFor(t, tm, "✗ test.hold failed: Internal")
	m := finish(t, tm)
	if !m.status.isError {
		t.Errorf("status %+v, want an error", m.status)
	}
}

// Issue 14, item 2: while an action runs, a second command entered runs
// too (it was silently ignored); each answer comes on its own, and ctrl+x
// shows in the footer only while there is something to cancel.
func TestPaletteRunsASecondCommandWhileOneRuns(t *testing.T) {
	t.Parallel()
	engine, h := newHoldEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":")
	waitFor(t, tm, "[: palette]")
	tm.Type("test.hold")
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	waitFor(t, tm, "running test.hold…", "Ctrl+X cancel")
	keys(tm, tea.KeyCtrlU)
	tm.Type("engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "running test.hold… · ✓ engine.info ok", `"version"`)
	h.letGo()
	waitFor(t, tm, "✓ test.hold ok", `"held": true`)
	m := finish(t, tm)
	if len(m.palette.runs) != 0 {
		t.Errorf("%d runs left", len(m.palette.runs))
	}
	if strings.Contains(lastLine(m.View()), "Ctrl+X") {
		t.Errorf("the footer offers ctrl+x with nothing to cancel: %q", lastLine(m.View()))
	}
}

// Issue 14, item 2: cancelling stays an explicit key: ctrl+x cancels the
// newest action running, and the palette says it was cancelled.
func TestPaletteCtrlXCancelsTheNewestAction(t *testing.T) {
	t.Parallel()
	engine, h := newHoldEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":test.hold")
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	keys(tm, tea.KeyCtrlU)
	tm.Type(`test.hold {"fail": false}`)
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	waitFor(t, tm, "running test.hold… (1 more)")
	keys(tm, tea.KeyCtrlX)
	select {
	case <-h.cancelled:
	case <-time.After(waitLimit):
		t.Fatal("ctrl+x cancelled nothing")
	}
	waitFor(t, tm, "running test.hold… · ✗ test.hold cancelled")
	m := finish(t, tm)
	if len(m.palette.runs) != 1 || m.palette.runs[0].cancelled {
		t.Errorf("runs left %+v, want the first, not cancelled", m.palette.runs)
	}
}

// TestGoldenPaletteTwoRunning: two actions held, the newest named, the
// footer offering ctrl+x (issue 14, item 2).
func TestGoldenPaletteTwoRunning(t *testing.T) {
	t.Parallel()
	engine, h := newHoldEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":test.hold")
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	keys(tm, tea.KeyCtrlU)
	tm.Type(`test.hold {"fail": false}`)
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	waitFor(t, tm, "(1 more)")
	m := finish(t, tm)
	m.palette.spinner = spinner.New(spinner.WithSpinner(spinner.MiniDot)) // its first frame, every run
	requireGolden(t, m)
}

// Issue 14, item 11: the palette reopens clean: no earlier result, an empty
// line, and no ctrl+x with nothing running.
func TestPaletteOpensClean(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok", `"version"`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "[1 Chat]")
	tm.Type(":")
	waitFor(t, tm, "[: palette]", "The result appears here.")
	m := finish(t, tm)
	if view := m.View(); strings.Contains(view, "engine.info ok") || strings.Contains(view, `"version"`) {
		t.Errorf("the palette shows the earlier result:\n%s", view)
	}
	if got := m.palette.input.Value(); got != "" {
		t.Errorf("input %q, want empty", got)
	}
}

// Issue 14, item 11: tab completes from the text typed since the palette
// opened, not from the cycle (ctrl+n) of the text it held before.
func TestPaletteTabCompletesFromTheFreshText(t *testing.T) {
	t.Parallel()
	engine, _ := newHoldEngine(t)
	m := New(engine, Options{StatusFade: time.Hour})
	t.Cleanup(m.cancel)
	m.Update(tea.WindowSizeMsg{Width: goldenWidth, Height: goldenHeight})
	list, err := conn.Call(context.Background(), engine, core.ActionListActions, conn.ListActionsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	var first string // what tab makes of "m" first: the first action starting with m (memory.*, in every build)
	for _, a := range list.Actions {
		if strings.HasPrefix(a.Name, "m") {
			first = completion(a)
			break
		}
	}
	press(m, ":")
	m.palette.setActions(list.Actions) // actions.list's answer
	press(m, "m")
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlN})
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlN})
	press(m, "esc", ":") // the list's answer to this opening has not come yet
	press(m, "m", "tab")
	if got := m.palette.input.Value(); got != first {
		t.Errorf("m then tab gave %q, want %q", got, first)
	}
}

// Issue 14, item 11: ↑ recalls the commands of earlier runs of the console:
// the history is on file (owner only), and the line being typed comes back
// below the newest.
func TestPaletteHistorySurvivesRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "palette_history")
	engine, _ := newEngine(t)
	tm := startWith(t, engine, Options{PaletteHistory: path}, goldenWidth, goldenHeight)
	tm.Type(":engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok")
	keys(tm, tea.KeyCtrlU)
	tm.Type(`trace.list {"limit": 5}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ trace.list ok")
	finish(t, tm)

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the history file's mode is %v, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if want := "engine.info\ntrace.list {\"limit\": 5}\n"; string(data) != want {
		t.Errorf("history file %q, want %q", data, want)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("the state directory holds %d files, want the history alone", len(entries))
	}

	// The next run of the console.
	tm = startWith(t, engine, Options{PaletteHistory: path}, goldenWidth, goldenHeight)
	tm.Type(":draft")
	waitFor(t, tm, `no action starts with "draft"`)
	keys(tm, tea.KeyUp)
	waitFor(t, tm, `: trace.list {"limit": 5}`)
	keys(tm, tea.KeyUp)
	waitFor(t, tm, ": engine.info")
	keys(tm, tea.KeyDown, tea.KeyDown)
	waitFor(t, tm, `no action starts with "draft"`)
	m := finish(t, tm)
	if got := m.palette.input.Value(); got != "draft" {
		t.Errorf("below the newest: %q, want the line being typed", got)
	}
}

// Issue 14, item 11: the history keeps its newest 200 commands, each once.
func TestPaletteHistoryIsCapped(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "palette_history")
	var old strings.Builder
	for i := range 250 {
		fmt.Fprintf(&old, "trace.list {\"limit\": %d}\n", i)
	}
	if err := os.WriteFile(path, []byte(old.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	engine, _ := newEngine(t)
	tm := startWith(t, engine, Options{PaletteHistory: path}, goldenWidth, goldenHeight)
	tm.Type(`:trace.list {"limit": 100}`) // on file already: it moves to the end
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ trace.list ok")
	keys(tm, tea.KeyCtrlU)
	tm.Type("engine.info") // new: the oldest goes
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok")
	finish(t, tm)
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != historyCap {
		t.Fatalf("%d commands on file, want %d", len(lines), historyCap)
	}
	want := []string{`trace.list {"limit": 51}`, `trace.list {"limit": 100}`, "engine.info"}
	if got := []string{lines[0], lines[len(lines)-2], lines[len(lines)-1]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("first, last but one and last on file: %q, want %q", got, want)
	}
	if strings.Count(string(data), `{"limit": 100}`) != 1 {
		t.Error("a command is on file twice")
	}
}

// Without a history file (Options.PaletteHistory empty) the history lasts
// as long as the console, and nothing is written.
func TestPaletteWithoutHistoryFileKeepsHistoryInMemory(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok")
	m := finish(t, tm)
	if m.palette.histFile != nil || len(m.palette.history) != 1 {
		t.Errorf("history file %v, history %q", m.palette.histFile, m.palette.history)
	}
}

// A history that cannot be written says so once, and the action still runs.
func TestPaletteHistoryThatCannotBeSavedSaysSo(t *testing.T) {
	t.Parallel()
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	engine, _ := newEngine(t)
	tm := startWith(t, engine, Options{PaletteHistory: filepath.Join(blocker, "palette_history")}, goldenWidth, goldenHeight)
	tm.Type(":engine.info")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ engine.info ok", "palette history not saved")
	finish(t, tm)
}

// A long result, with actions running, fits every size (TestViewFitsEveryState
// reopens the palette, which now opens clean: this keeps the long result).
func TestPaletteWithALongResultFitsEverySize(t *testing.T) {
	t.Parallel()
	engine, h := newHoldEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type(":test.hold")
	keys(tm, tea.KeyEnter)
	h.waitEntered(t)
	keys(tm, tea.KeyCtrlU)
	tm.Type("actions.list")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ actions.list ok")
	m := finish(t, tm)
	for _, size := range []tea.WindowSizeMsg{{Width: 120, Height: 36}, {Width: 80, Height: 24}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		checkScreen(t, fmt.Sprintf("%dx%d", size.Width, size.Height), m.View(), size.Width, size.Height)
		if size.Width >= 80 && !strings.Contains(lastLine(m.View()), "Ctrl+X cancel") {
			t.Errorf("%dx%d: the footer lost ctrl+x: %q", size.Width, size.Height, lastLine(m.View()))
		}
	}
}
