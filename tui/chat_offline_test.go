package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/history"
)

// Offline chat and the Chat tab following changes made elsewhere (issue
// 14: offline chat, bug 8).

// sendLine types a message in the Chat tab and sends it.
func sendLine(tm interface {
	Type(string)
	Send(tea.Msg)
}, text string) {
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	tm.Type(text)
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
}

// TestChatSaysOnceThatNoModelReplies: without a model the conversation
// says once, not under every message, that no model replies and how to
// write the reply by hand; the context panel stays on what would be sent.
func TestChatSaysOnceThatNoModelReplies(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	sendLine(tm, "Can we book the boat?")
	waitFor(t, tm, "Context that would be sent")
	keys(tm, tea.KeyEsc)
	sendLine(tm, "And the catering?")
	waitFor(t, tm, "And the catering?")
	m := finish(t, tm)
	p := chatOf(m)
	lines := strings.Join(p.buf.view.lines, "\n")
	if n := strings.Count(lines, "No model replies"); n != 1 {
		t.Errorf("the conversation says %d times that no model replies, want once:\n%s", n, lines)
	}
	if p.side.page != pageContext {
		t.Error("the side panel left the context the message would be sent with")
	}
}

// TestChatReplyByHandIsTheAssistants: a writes the assistant's reply by
// hand: it is recorded in the conversation as the assistant's, in the
// turn of the message it answers, and copied into that message's thread
// as the assistant's.
func TestChatReplyByHandIsTheAssistants(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, 120, 36)
	waitFor(t, tm, "[1 Chat]")
	sendLine(tm, "What's the budget for the boat?")
	waitFor(t, tm, "→ web")
	keys(tm, tea.KeyEsc)
	tm.Type("a")
	waitFor(t, tm, "assistant›")
	tm.Type("About $2,000.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Reply recorded as the assistant's, here and in thread")
	finish(t, tm)

	utts := readBuffer(t, engine, "")
	if len(utts) != 2 || utts[1].Speaker != "assistant" || utts[1].Text != "About $2,000." || utts[1].TurnNumber != utts[0].TurnNumber {
		t.Fatalf("buffer: %s", speakersAndTexts(utts))
	}
	threads, err := conn.Call(context.Background(), engine, episodic.ActionThreadList, action.None{})
	if err != nil || len(threads.Threads) != 1 {
		t.Fatalf("threads: %+v, %v", threads, err)
	}
	th, err := conn.Call(context.Background(), engine, episodic.ActionThreadGet, episodic.GetArgs{ThreadID: threads.Threads[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	turns := th.Thread.Turns
	if len(turns) != 2 || turns[1].Speaker != "assistant" || turns[1].Text != "About $2,000." {
		t.Errorf("the thread's turns: %+v", turns)
	}
}

// TestChatReplyLineFits: the reply line and its footer fit at 120 and 80
// columns.
func TestChatReplyLineFits(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	tm.Type("a")
	waitFor(t, tm, "assistant›")
	m := finish(t, tm)
	for _, size := range []tea.WindowSizeMsg{{Width: 120, Height: 36}, {Width: 80, Height: 24}} {
		m.Update(size)
		view := m.View()
		checkScreen(t, "replying", view, size.Width, size.Height)
		for _, want := range []string{"assistant›", "Enter save the reply", "Esc cancel"} {
			if !strings.Contains(view, want) {
				t.Errorf("%dx%d: the reply screen lacks %q:\n%s", size.Width, size.Height, want, view)
			}
		}
	}
}

// TestChatRefreshesOnConfigureFromElsewhere: history.configure from
// outside the tab (here the engine; the palette or a script alike), even
// one that evicts nothing, refreshes the side panel's figures at once,
// and the context page says the last message went before it.
func TestChatRefreshesOnConfigureFromElsewhere(t *testing.T) {
	t.Parallel()
	engine, _, tm := startOffsite(t)
	sendLine(tm, "Can we book the boat?")
	waitFor(t, tm, "Context that would be sent")
	do(t, engine, "history.configure", "", `{"buffer_size": 8}`)
	waitFor(t, tm, "4/8 utterances", "The conversation was reconfigured", "buffer_size reached (now 8)")
	m := finish(t, tm)
	if c := chatOf(m).out.reconfigured; c == nil || c.BufferSize != 8 {
		t.Errorf("the settings since: %+v", c)
	}
}

// bobWrites writes as agent bob, who owns the conversations he writes.
func bobWrites(t *testing.T, engine conn.Conn, conv, text string) {
	t.Helper()
	req := history.WriteRequest{Conversation: conv, Speaker: "user", Text: text}
	if _, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: "bob"}, history.ActionWrite, req); err != nil {
		t.Fatal(err)
	}
}

// bobShares gives the console's agent access to bob's conversation (no
// permissions: takes it back).
func bobShares(t *testing.T, engine conn.Conn, conv string, perms ...string) {
	t.Helper()
	as := conn.Request{Principal: "bob"}
	var err error
	if len(perms) == 0 {
		_, err = conn.CallAs(context.Background(), engine, as, history.ActionRevoke, history.RevokeArgs{Conversation: conv, Principal: engine.Agent()})
	} else {
		_, err = conn.CallAs(context.Background(), engine, as, history.ActionShare, history.ShareArgs{Conversation: conv, Principal: engine.Agent(), Permissions: perms})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestChatPickerFollowsAConversationSharedByAnotherAgent: the conversation
// switcher lists a conversation another agent shares while it is open.
func TestChatPickerFollowsAConversationSharedByAnotherAgent(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	bobWrites(t, engine, "bob-trip", "Bob's trip to Porto.")
	tm := start(t, engine, 120, 36)
	waitFor(t, tm, "[1 Chat]")
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "conversation:")
	bobShares(t, engine, "bob-trip", "read")
	waitFor(t, tm, "bob-trip")
	m := finish(t, tm)
	if s := chatOf(m).switcher; s == nil || !strings.Contains(m.View(), "bob-trip") {
		t.Errorf("the switcher does not list bob-trip:\n%s", m.View())
	}
}

// TestChatSaysWhenAccessToTheConversationShownIsTakenBack: a revoke of the
// conversation shown says access was taken back, and what its owner writes
// afterwards is not read again into a PermissionError.
func TestChatSaysWhenAccessToTheConversationShownIsTakenBack(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	bobWrites(t, engine, "bob-trip", "Bob's trip to Porto.")
	bobShares(t, engine, "bob-trip", "read", "write")
	tm := start(t, engine, 120, 36)
	waitFor(t, tm, "[1 Chat]")
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "bob-trip")
	tm.Type("bob-trip")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Bob's trip to Porto.")
	bobShares(t, engine, "bob-trip")
	waitFor(t, tm, "taken back by its owner")
	bobWrites(t, engine, "bob-trip", "Now the boat.")
	// An event after the write: the write's came first.
	keys(tm, tea.KeyEsc, tea.KeyCtrlO)
	bobWrites(t, engine, "bob-later", "Later.")
	bobShares(t, engine, "bob-later", "read")
	waitFor(t, tm, "bob-later")
	m := finish(t, tm)
	p := chatOf(m)
	if !p.buf.revoked || strings.Contains(m.View(), "PermissionError") || strings.Contains(m.status.text, "PermissionError") {
		t.Errorf("revoked %v, status %q:\n%s", p.buf.revoked, m.status.text, m.View())
	}
	if strings.Contains(strings.Join(p.buf.view.lines, "\n"), "Now the boat.") {
		t.Error("the conversation taken back still shows what was written after")
	}
}

// TestChatTypingFooterFitsAt120Columns: while typing, the footer shows
// every key it names on one line at 120 columns, ctrl+c included, without
// cutting any.
func TestChatTypingFooterFitsAt120Columns(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Enter send")
	m := finish(t, tm)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	footer := lastLine(m.View())
	if strings.Contains(footer, "…") || lineCount(m.footer()) != 1 {
		t.Errorf("the typing footer is cut or wraps at 120 columns: %q", m.footer())
	}
	for _, want := range []string{"Enter send", "Esc stop typing", "Ctrl+C quit", "Ctrl+O conversations", "Ctrl+P context", "Ctrl+T channel", "↑/↓ scroll"} {
		if !strings.Contains(footer, want) {
			t.Errorf("the typing footer lacks %q: %q", want, footer)
		}
	}
	if !strings.Contains(m.View(), "/ on an empty line searches") {
		t.Error("the message line no longer says what / does")
	}
}
