package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/history"
)

// After a relaunch (issue 14, bug 6): the notes under the earlier messages
// come back from what the store recorded with them, and a message on web
// continues the conversation's web thread instead of starting a new one.

// openDurable opens an engine on dir (seed: its ids, distinct per launch,
// as a real launch's are).
func openDurable(t *testing.T, dir, seed string, clk *clock.Fixed) *core.Engine {
	t.Helper()
	engine, err := core.Open(core.Options{DataDir: dir, Clock: clk, IDSeed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return engine
}

// TestChatAfterARelaunchShowsTheNotesAndContinuesTheWebThread: two
// messages on web, quit, relaunch: the notes "→ web · thread …" show under
// both, the title says messages go on in that thread, and the next message
// is its turn 3; "+ a new thread" in the picker still starts a new one.
func TestChatAfterARelaunchShowsTheNotesAndContinuesTheWebThread(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFixed(goldenTime)
	first := openDurable(t, dir, "first launch", clk)
	tm := start(t, first, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	keys(tm, tea.KeyEnter)
	tm.Type("Book flights to Paris for March 3.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "→ web · thread “Book flights to Paris for March 3”", "(new)")
	clk.Advance(time.Minute)
	tm.Type("Two seats, please.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "(turn 2)")
	finish(t, tm)
	closeEngine(t, first)

	clk.Advance(time.Hour)
	engine := openDurable(t, dir, "second launch", clk)
	t.Cleanup(func() { closeEngine(t, engine) })
	tm = start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "Chat · default · on web › “Book flights to Paris for March 3”",
		"→ web · thread “Book flights to Paris for March 3”", "(new)", "(turn 2)")
	keys(tm, tea.KeyEnter)
	tm.Type("Window seats.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "(turn 3)")
	// A new thread, chosen: the next message starts it.
	keys(tm, tea.KeyCtrlT)
	waitFor(t, tm, "+ a new thread", "▸ Book flights to Paris")
	keys(tm, tea.KeyUp, tea.KeyEnter)
	waitFor(t, tm, "on web › a new thread")
	clk.Advance(time.Minute)
	tm.Type("Find a hotel in Lisbon.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "→ web · thread “Find a hotel in Lisbon”", "(new")
	m := finish(t, tm)
	threads := listThreads(t, engine)
	if len(threads) != 2 || threads[1].TurnCount != 3 || threads[0].TurnCount != 1 {
		t.Errorf("threads %s: want Lisbon (1 turn) and Paris (3 turns)", threadIDs(threads))
	}
	view := m.View()
	for _, want := range []string{"(new)", "(turn 2)", "(turn 3)"} {
		if !strings.Contains(view, want) {
			t.Errorf("no note %q under the messages:\n%s", want, view)
		}
	}
}

// TestChatContinuingAThreadNoLongerInTheBufferSaysSo: when the messages
// that went to the conversation's web thread have left the buffer, the
// next message on web still continues that thread after a relaunch, and
// the status line says it continues it (not that it is new).
func TestChatContinuingAThreadNoLongerInTheBufferSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFixed(goldenTime)
	first := openDurable(t, dir, "first launch", clk)
	ctx := context.Background()
	two := 2
	if _, err := conn.Call(ctx, first, history.ActionConfigure, history.ConfigureRequest{BufferSize: &two}); err != nil {
		t.Fatal(err)
	}
	for _, args := range []core.ChatSendArgs{
		{Text: "Book flights to Paris for March 3.", Channel: "web"},
		{Text: "A note to self."},
		{Text: "Another note."},
	} {
		if _, err := conn.Call(ctx, first, core.ActionChatSend, args); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	closeEngine(t, first)

	engine := openDurable(t, dir, "second launch", clk)
	t.Cleanup(func() { closeEngine(t, engine) })
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "Another note.")
	keys(tm, tea.KeyEnter)
	tm.Type("Two seats, please.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "→ web · thread “Book flights to Paris for March 3”", "(turn 2)",
		"Messages on web continue the conversation's thread “Book", "on web › “Book flights to Paris for March 3”")
	finish(t, tm)
	if threads := listThreads(t, engine); len(threads) != 1 {
		t.Errorf("threads %s: want the one the first launch started", threadIDs(threads))
	}
}

// After a relaunch as another agent, a shared conversation's web thread
// that agent may not write is shown as where the conversation went, but
// the message is not sent into it: the engine's continue_thread decides,
// and starts the agent's own thread (a review found the console sent the
// stored thread_id, and the message was refused).
func TestChatAfterARelaunchAsAnotherAgentStartsItsOwnThread(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFixed(goldenTime)
	first := openDurable(t, dir, "first launch", clk)
	ctx := context.Background()
	if _, err := conn.Call(ctx, first, core.ActionChatSend, core.ChatSendArgs{Text: "Book flights to Paris.", Channel: "web", ContinueThread: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Do(ctx, core.Request{Action: "history.share",
		Args: []byte(`{"conversation": "default", "principal": "bob", "permissions": ["read", "write"]}`)}); err != nil {
		t.Fatal(err)
	}
	closeEngine(t, first)

	clk.Advance(time.Hour)
	engine, err := core.Open(core.Options{DataDir: dir, Clock: clk, IDSeed: "bob's launch", Agent: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "Book flights to Paris.")
	keys(tm, tea.KeyEnter)
	tm.Type("And a hotel, please.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "New thread “A hotel, please”", "(new)")
	m := finish(t, tm)
	if strings.Contains(m.View(), "PermissionError") {
		t.Errorf("bob's message was refused:\n%s", m.View())
	}
}
