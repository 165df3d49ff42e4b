package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/muesli/termenv"
)

// offsiteChat is the conversation of the chat frames: ten utterances,
// user and assistant in turn, with names, dates and amounts for the
// summary to keep.
var offsiteChat = []string{
	"Hi, I'm planning the team offsite in Lisbon for March 3.",
	"Great. How many people, and what budget do you have in mind?",
	"Twelve people, and the budget is $40,000 including flights.",
	"Noted: 12 people, $40,000. Shall I look for venues near the river?",
	"Yes, and ask Marta to book the venue by Friday.",
	"I'll remind Marta to book the venue by Friday, November 7.",
	"What was the budget again?",
	"$40,000 for twelve people, flights included.",
	"Can we add a dinner on the last night?",
	"Yes: a dinner on March 5 fits the budget if we keep it under $2,000.",
}

// write records an utterance through the engine, thirty seconds after the
// one before.
func write(t *testing.T, engine conn.Conn, clk *clock.Fixed, conv, speaker, text string) {
	t.Helper()
	req := history.WriteRequest{Conversation: conv, Speaker: speaker, Text: text}
	if _, err := conn.Call(context.Background(), engine, history.ActionWrite, req); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
}

// seedOffsite configures default with a buffer of 4 utterances and a
// budget of 120 tokens, then writes offsiteChat: #0-5 are evicted into the
// summary, #6-9 stay in the buffer.
func seedOffsite(t *testing.T, engine conn.Conn, clk *clock.Fixed) {
	t.Helper()
	do(t, engine, "history.configure", "", `{"buffer_size": 4, "max_tokens": 120}`)
	for i, text := range offsiteChat {
		speaker := "user"
		if i%2 == 1 {
			speaker = "assistant"
		}
		write(t, engine, clk, "", speaker, text)
	}
}

func chatOf(m *Model) *chatPane { return m.panes[tabChat].(*chatPane) }

// readBuffer is a conversation's buffer, as the engine reads it.
func readBuffer(t *testing.T, engine conn.Conn, conv string) []*history.Utterance {
	t.Helper()
	res, err := conn.Call(context.Background(), engine, history.ActionRead, history.ReadArgs{Conversation: conv})
	if err != nil {
		t.Fatal(err)
	}
	return res.Utterances
}

func speakersAndTexts(utts []*history.Utterance) string {
	var parts []string
	for _, u := range utts {
		parts = append(parts, u.Speaker+": "+u.Text)
	}
	return strings.Join(parts, " | ")
}

// startOffsite seeds the offsite conversation and shows it.
func startOffsite(t *testing.T) (conn.Conn, *clock.Fixed, *teatest.TestModel) {
	t.Helper()
	engine, clk := newEngine(t)
	seedOffsite(t, engine, clk)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[1 Chat]", "10 utterances, 6 evicted", "Summary", "covers #0-5", "#9 assistant")
	return engine, clk, tm
}

// --- golden frames (chat_empty is in TestGoldenTabs) ---

func TestGoldenChatEvicted(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	m := finish(t, tm)
	requireGolden(t, m)
	p := chatOf(m)
	if p.evict.on {
		t.Error("an eviction made before the console started is highlighted")
	}
	if got := len(p.buf.utts); got != 4 || p.buf.utts[0].UtteranceIndex != 6 {
		t.Errorf("%d utterances from #%d shown, want the buffer's 4 from #6", got, p.buf.utts[0].UtteranceIndex)
	}
	view := m.View()
	for _, want := range []string{"[██████████] 4/4 utterances", "/120 tokens", "6 evicted · 10 written", "#5 · buffer_size 4 reached"} {
		if !strings.Contains(view, want) {
			t.Errorf("the side panel lacks %q", want)
		}
	}
	for _, gone := range []string{"#0 user", "#5 assistant"} {
		if strings.Contains(view, gone) {
			t.Errorf("evicted %q still shows in the conversation", gone)
		}
	}
}

func TestGoldenChatSearch(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	tm.Type("/budget")
	waitFor(t, tm, "search: budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "budget": 4 hits, best first`)
	m := finish(t, tm)
	requireGolden(t, m)
	p := chatOf(m)
	var order []int
	evicted := 0
	for i, h := range p.find.hits {
		order = append(order, h.UtteranceIndex)
		if h.Evicted {
			evicted++
		}
		if i > 0 && h.RelevanceScore > p.find.hits[i-1].RelevanceScore {
			t.Errorf("hit %d scores %v, more than the one before it", i+1, h.RelevanceScore)
		}
	}
	if evicted == 0 || !strings.Contains(m.View(), "assistant · evicted · turn 1") {
		t.Errorf("hits %v: want an evicted one, marked as such", order)
	}
}

// --- sending ---

func TestChatSendWithoutModel(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Enter send")
	// q, digits, ? and : are text here, not the app's keys.
	tm.Type("q1? : what is on my plate?")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Context that would be sent", "user (this message)", "#0 user · turn 1")
	m := finish(t, tm)
	if m.quitting || m.active != tabChat || m.paletteOpen || m.help.ShowAll {
		t.Fatalf("typing reached the app: quitting %v, tab %d, palette %v, help %v", m.quitting, m.active, m.paletteOpen, m.help.ShowAll)
	}
	utts := readBuffer(t, engine, "default")
	if got := speakersAndTexts(utts); got != "user: q1? : what is on my plate?" {
		t.Errorf("recorded %q, want the one user utterance", got)
	}
	p := chatOf(m)
	if p.out.last == nil || p.out.last.Answered || len(p.out.last.Prompt.Messages) != 1 || p.out.last.Prompt.Messages[0].Content != "q1? : what is on my plate?" {
		t.Fatalf("last exchange %+v, want the unanswered prompt with the message", p.out.last)
	}
	view := m.View()
	if !strings.Contains(view, "You are the assistant") {
		t.Errorf("the system prompt is not shown:\n%s", view)
	}
	if p.mode != chatTyping || p.input.Value() != "" {
		t.Errorf("mode %d, input %q: want the line empty and still typing", p.mode, p.input.Value())
	}
}

func TestChatSendWithModel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	model := &llmtest.Scripted{Model: "tiny", Func: func(req llm.Request) llmtest.Answer {
		<-release
		return llmtest.Text("Lisbon, March 3, twelve people.")
	}}
	engine, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden", LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "llm scripted · tiny", "No messages in default yet")
	tm.Type("i")
	tm.Type("Where is the offsite?")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "waiting for the model…", "Where is the offsite?", "· sending")
	if n := len(readBuffer(t, engine, "default")); n != 0 {
		t.Errorf("%d utterances recorded while the model answers, want none yet", n)
	}
	once.Do(func() { close(release) })
	waitFor(t, tm, "#1 assistant · turn 1", "Lisbon, March 3, twelve people.")
	m := finish(t, tm)
	if got, want := speakersAndTexts(readBuffer(t, engine, "default")), "user: Where is the offsite? | assistant: Lisbon, March 3, twelve people."; got != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
	p := chatOf(m)
	view := m.View()
	if p.out.text != "" || strings.Contains(view, "waiting for the model") {
		t.Error("the spinner still shows after the answer")
	}
	if p.side.page != pageSummary || strings.Contains(view, "that would be sent") {
		t.Error("with a model, the side panel left the summary for the prompt")
	}
	// The model got the message, with the working memory as context.
	reqs := model.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].System, "You are the assistant") ||
		reqs[0].Messages[len(reqs[0].Messages)-1].Content != "Where is the offsite?" {
		t.Errorf("the model was asked %+v", reqs)
	}
	// ctrl+p shows what it was sent.
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlP})
	if view := m.View(); !strings.Contains(view, "Context sent to the model") || !strings.Contains(view, "user (this message)") {
		t.Errorf("ctrl+p does not show the prompt sent:\n%s", view)
	}
}

// --- search ---

func TestChatSearchAndBack(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	tm.Type("/venue")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "venue": 3 hits`, "ask Marta to book the venue")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "10 utterances, 6 evicted", "press enter to type a message")
	// From the message line, / on an empty line searches too, and esc
	// goes back to typing.
	keys(tm, tea.KeyEnter)
	tm.Type("/dinner")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "dinner": 2 hits`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "Enter send")
	m := finish(t, tm)
	p := chatOf(m)
	if p.mode != chatTyping || p.find.query != "" || p.find.hits != nil {
		t.Errorf("mode %d, query %q, %d hits: want the conversation, typing", p.mode, p.find.query, len(p.find.hits))
	}
	if view := m.View(); !strings.Contains(view, "#9 assistant") || strings.Contains(view, "best first") {
		t.Errorf("esc did not return to the conversation:\n%s", view)
	}
}

// --- conversations ---

func TestChatSwitchConversations(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	write(t, engine, clk, "default", "user", "Default's first words.")
	write(t, engine, clk, "project", "user", "Project kickoff is on Monday.")
	write(t, engine, clk, "project", "assistant", "Noted: kickoff Monday.")
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "Default's first words.")
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "Conversations", "default", "project")
	tm.Type("proj")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Chat · project", "Project kickoff is on Monday.", "Noted: kickoff Monday.")

	// A name that is no conversation starts one; its first message
	// creates it.
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "conversation: ")
	tm.Type("launch plan")
	waitFor(t, tm, `+ start a new conversation "launch plan"`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "No messages in launch plan yet")
	tm.Type("First message of the launch.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "#0 user · turn 1", "First message of the launch.")
	m := finish(t, tm)
	p := chatOf(m)
	if p.conv != "launch plan" {
		t.Errorf("showing %q, want launch plan", p.conv)
	}
	if view := m.View(); strings.Contains(view, "Project kickoff") || strings.Contains(view, "Default's first") {
		t.Errorf("another conversation's utterances show:\n%s", view)
	}
	if got := speakersAndTexts(readBuffer(t, engine, "launch plan")); got != "user: First message of the launch." {
		t.Errorf("launch plan holds %q", got)
	}
	if got := speakersAndTexts(readBuffer(t, engine, "project")); strings.Contains(got, "launch") {
		t.Errorf("the message went to project too: %q", got)
	}
}

// --- live updates ---

func TestChatShowsLiveWrites(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	write(t, engine, clk, "", "user", "Written elsewhere, shown here.")
	waitFor(t, tm, "#0 user · turn 1", "Written elsewhere, shown here.", "1/50 utterances")
	// Another conversation's writes stay out.
	write(t, engine, clk, "other", "user", "Not for this view.")
	write(t, engine, clk, "", "assistant", "And the answer.")
	waitFor(t, tm, "#1 assistant · turn 1", "2/50 utterances")
	m := finish(t, tm)
	if view := m.View(); strings.Contains(view, "Not for this view") {
		t.Errorf("another conversation's write shows:\n%s", view)
	}
}

func TestChatHighlightsLiveEviction(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	do(t, engine, "history.configure", "", `{"buffer_size": 2}`)
	write(t, engine, clk, "", "user", "Book the flights to Lisbon.")
	write(t, engine, clk, "", "assistant", "Flights booked for March 2.")
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "2/2 utterances", "Last eviction · none yet")

	write(t, engine, clk, "", "user", "And the hotel?")
	waitFor(t, tm, "» Last eviction · just now", "covers #0", "1 utterance left the buffer")
	write(t, engine, clk, "", "assistant", "Hotel Avenida, three nights.")
	waitFor(t, tm, "covers #0-1", "2 utterances left the buffer")
	m := finish(t, tm)
	p := chatOf(m)
	if !p.evict.on || p.buf.stats.LastEviction == nil || fmt.Sprint(p.buf.stats.LastEviction.Indexes) != "[1]" {
		t.Fatalf("highlight %v, last eviction %+v: want #1 highlighted", p.evict.on, p.buf.stats.LastEviction)
	}
	if view := m.View(); !strings.Contains(view, "Flights booked") || strings.Contains(view, "#1 assistant") {
		// The summary keeps what #1 said; the conversation no longer shows it.
		t.Errorf("the summary or the conversation is off:\n%s", view)
	}
	// The fade's tick ends the highlight; an earlier eviction's tick does not.
	p.Update(chatFadeMsg{id: p.evict.id - 1})
	if !p.evict.on {
		t.Error("a stale fade ended the highlight")
	}
	m.Update(chatFadeMsg{id: p.evict.id}) // through the root, as on another tab
	if p.evict.on || !strings.Contains(m.View(), "Last eviction · 10:01:30") {
		t.Errorf("the highlight did not fade:\n%s", m.View())
	}
}

// TestChatHighlightFades runs the fade for real, short: no sleep, the
// tick's message ends it.
func TestChatHighlightFades(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	do(t, engine, "history.configure", "", `{"buffer_size": 1}`)
	write(t, engine, clk, "", "user", "One.")
	tm := teatest.NewTestModel(t, New(engine, Options{StatusFade: time.Hour, EvictionFade: 20 * time.Millisecond}),
		teatest.WithInitialTermSize(goldenWidth, goldenHeight))
	t.Cleanup(func() { _ = tm.Quit() })
	waitFor(t, tm, "1/1 utterances")
	write(t, engine, clk, "", "user", "Two.")
	waitFor(t, tm, "Last eviction · 10:00:30") // after "just now", gone
	if p := chatOf(finish(t, tm)); p.evict.on {
		t.Error("still highlighted")
	}
}

// TestChatReloadsOncePerBurst: events arriving while a load is in flight
// cost one more load, not one each; answers to earlier loads are ignored;
// events of other conversations cost nothing.
func TestChatReloadsOncePerBurst(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newChatPane(engine, &styles, time.Hour, false)
	p.SetSize(goldenWidth, 20)
	if p.Init() == nil {
		t.Fatal("no first load")
	}
	first := p.buf.read.req
	ev := events.Event{Name: history.EventWritten.Name(), Data: history.Utterance{Conversation: "default"}}
	for range 5 {
		if cmd := p.Update(ev); cmd != nil {
			if msg := cmd(); msg != nil {
				t.Fatalf("an event during a load started another: %#v", msg)
			}
		}
	}
	if p.buf.read.req != first || !p.buf.read.dirty || !p.buf.stat.dirty {
		t.Fatalf("req %d dirty %v/%v, want the first load current and a reload owed", p.buf.read.req, p.buf.read.dirty, p.buf.stat.dirty)
	}
	cmd := p.Update(resultMsg[history.Utterances]{pane: chatPaneID, req: first, action: "history.read", value: history.Utterances{Utterances: []*history.Utterance{}}})
	if cmd == nil || p.buf.read.req == first || p.buf.read.dirty {
		t.Fatalf("no single reload after the burst (req %d, dirty %v)", p.buf.read.req, p.buf.read.dirty)
	}
	stale := history.Utterances{Utterances: []*history.Utterance{{Conversation: "default", UtteranceIndex: 0, Speaker: "user", Text: "stale"}}}
	p.Update(resultMsg[history.Utterances]{pane: chatPaneID, req: first, action: "history.read", value: stale})
	if len(p.buf.utts) != 0 {
		t.Errorf("a stale answer was applied: %+v", p.buf.utts)
	}
	// Another conversation's events, and other panes' answers, are no
	// business of this one.
	p.buf.read.busy, p.buf.stat.busy = false, false
	other := events.Event{Name: history.EventEvicted.Name(), Data: history.EvictedEvent{Conversation: "other", Indexes: []int{0}}}
	if cmd := p.Update(other); cmd != nil {
		t.Error("another conversation's eviction reloads the view")
	}
	p.Update(resultMsg[history.Utterances]{pane: goalsPaneID, req: p.buf.read.req, action: "history.read", value: stale})
	if len(p.buf.utts) != 0 {
		t.Error("another pane's answer was applied")
	}
}

// TestChatReloadsOnDeleteAndMove: a deletion or a move to the other
// backend of the conversation shown reloads it (they used to be signalled
// only by trace entries); another conversation's cost nothing.
func TestChatReloadsOnDeleteAndMove(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newChatPane(engine, &styles, 0, false)
	p.SetSize(goldenWidth, 20)
	drain(p, p.Init())
	for _, ev := range []events.Event{
		{Name: history.EventDeleted.Name(), Data: history.DeletedEvent{Conversation: "default", UtteranceIndex: 3}},
		{Name: history.EventMoved.Name(), Data: history.MovedEvent{Conversation: "default", From: "in-memory", To: "durable"}},
	} {
		before := p.buf.read.req
		cmd := p.Update(ev)
		if cmd == nil || p.buf.read.req == before || !p.buf.stat.busy {
			t.Errorf("%s of the conversation shown: no reload", ev.Name)
		}
		drain(p, cmd) // the loads answer
		other := ev
		switch d := ev.Data.(type) {
		case history.DeletedEvent:
			d.Conversation = "other"
			other.Data = d
		case history.MovedEvent:
			d.Conversation = "other"
			other.Data = d
		}
		if cmd := p.Update(other); cmd != nil {
			t.Errorf("%s of another conversation reloads the view", ev.Name)
		}
	}
}

// --- sizes ---

// TestChatFitsEveryState: every state of the tab (browsing, typing, the
// spinner, search input and results, the switcher, the context page, the
// narrow side panel) is exactly the terminal's size, and the footer keeps
// the keys that matter.
func TestChatFitsEveryState(t *testing.T) {
	t.Parallel()
	_, _, tm := startOffsite(t)
	keys(tm, tea.KeyEnter)
	tm.Type(strings.Repeat("a long message ", 12))
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Context that would be sent")
	m := finish(t, tm)
	p := chatOf(m)
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}, {Width: 100, Height: 30}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		name := func(state string) string { return fmt.Sprintf("%dx%d %s", size.Width, size.Height, state) }
		check := func(state string) {
			t.Helper()
			checkScreen(t, name(state), m.View(), size.Width, size.Height)
		}
		footer := func(state, want string) {
			t.Helper()
			if size.Width >= 80 && !strings.Contains(lastLine(m.View()), want) {
				t.Errorf("%s: the footer lacks %q: %q", name(state), want, lastLine(m.View()))
			}
		}
		if p.mode != chatTyping {
			press(m, "enter")
		}
		check("typing")
		footer("typing", "Esc stop typing")
		press(m, "some text")
		p.out.text, p.out.conv = "in flight", p.conv // the spinner's line
		p.render()
		check("sending")
		p.out.text = ""
		press(m, "esc")
		check("browsing")
		footer("browsing", "q quit")
		press(m, "?")
		check("full help")
		press(m, "?", "/", "budget")
		check("search input")
		footer("search input", "Enter search")
		m.Update(tea.KeyMsg{Type: tea.KeyCtrlO})
		check("switcher over the search")
		press(m, "esc")
		p.find.query, p.find.searched, p.mode = "budget", true, chatResults
		p.find.hits = []history.Hit{{Utterance: p.buf.utts[0], RelevanceScore: 1.5}, {Utterance: p.buf.utts[1], RelevanceScore: 0.25}}
		p.render()
		check("search results")
		footer("search results", "Esc back to the chat")
		press(m, "esc")
		m.Update(tea.KeyMsg{Type: tea.KeyCtrlP})
		check("ctrl+p")
		m.Update(tea.KeyMsg{Type: tea.KeyCtrlP})
		check("ctrl+p twice")
		m.Update(tea.KeyMsg{Type: tea.KeyCtrlO})
		press(m, "new one")
		check("switcher")
		press(m, "esc", "esc")
		if p.main == mainSide {
			press(m, "esc")
		}
		check("back")
	}
}

// TestChatNeutralisesControlCharacters: an utterance cannot drive the
// terminal (set its title, clear it) from the conversation, the search
// results or the context page.
func TestChatNeutralisesControlCharacters(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	write(t, engine, clk, "", "user", "hostile\x1b]0;PWNED\x07\x1b[2J text\r\nsecond line")
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "#0 user · turn 1", "second line")
	tm.Type("/hostile")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `search "hostile": 1 hit`)
	keys(tm, tea.KeyEsc, tea.KeyEnter)
	tm.Type("and now?")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Context that would be sent")
	m := finish(t, tm)
	p := chatOf(m)
	press(m, "esc")
	views := []string{m.View()}
	p.find.query, p.find.searched, p.mode = "hostile", true, chatResults
	p.find.hits = []history.Hit{{Utterance: p.buf.utts[0], RelevanceScore: 1}}
	p.render()
	views = append(views, m.View())
	for _, v := range views {
		if strings.ContainsAny(v, "\x1b\x07\r") {
			t.Errorf("a control character reached the screen: %q", v)
		}
		if !strings.Contains(v, "hostile") {
			t.Errorf("the text itself is gone:\n%s", v)
		}
	}
}

// TestChatKeepsStylesInColour: in a colour profile the frames carry their
// escape codes whole (none neutralised as if it came from outside).
func TestChatKeepsStylesInColour(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedOffsite(t, engine, clk)
	styles := DefaultStyles()
	// No fade: drain runs every command, and the highlight's tick would
	// wait for it.
	p := newChatPane(engine, &styles, 0, false)
	p.SetSize(goldenWidth, 25)
	drain(p, p.Init())
	p.mode = chatTyping
	p.input.SetValue("hello")
	drain(p, p.send())
	if p.out.last == nil {
		t.Fatal("no exchange")
	}
	lipgloss.SetColorProfile(termenv.ANSI256)
	t.Cleanup(func() { lipgloss.SetColorProfile(termenv.Ascii) })
	for _, page := range []sidePage{pageContext, pageSummary} {
		p.side.page = page
		p.render()
		view := p.View()
		if strings.Contains(view, "\uFFFD") || !strings.Contains(view, "\x1b[") {
			t.Errorf("page %d: styles broken or missing:\n%q", page, view)
		}
	}
}

// TestChatCatchesUpWithoutHistoryEvents: history.configure publishes no
// event when it evicts nothing: the tab catches up once the palette
// closes; a deletion publishes utterance.deleted, which it follows.
func TestChatCatchesUpWithoutHistoryEvents(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	write(t, engine, clk, "", "user", "Keep this one.")
	write(t, engine, clk, "", "assistant", "Delete this one.")
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "2/50 utterances", "Delete this one.")
	tm.Type(`:history.configure {"buffer_size": 4}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ history.configure ok")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "2/4 utterances")
	do(t, engine, "history.delete", "", `{"utterance_index": 1}`)
	waitFor(t, tm, "1/4 utterances")
	m := finish(t, tm)
	if view := m.View(); strings.Contains(view, "Delete this one.") || !strings.Contains(view, "Keep this one.") {
		t.Errorf("the deleted utterance still shows:\n%s", view)
	}
}

// --- channels ---

func TestGoldenChatChannelPicker(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	// Messages go on the web by default: the picker opens there.
	keys(tm, tea.KeyCtrlT)
	waitFor(t, tm, "Channel · ctrl+t or ←/→ changes it", "[web]", "web is explicit", "+ a new thread", "Weather in New York")
	keys(tm, tea.KeyDown, tea.KeyDown)
	waitFor(t, tm, "▸ Weather in New York (cont.)")
	m := finish(t, tm)
	requireGolden(t, m)
	p := chatOf(m)
	if p.picker == nil || p.picker.channel != "web" || !m.panes[tabChat].Capturing() {
		t.Fatalf("picker %+v, want it open on web, with the keyboard", p.picker)
	}
	if got, want := threadIDs(p.picker.threads), threadIDs(listThreads(t, engine)); got != want {
		t.Errorf("the picker lists %s, thread.list says %s", got, want)
	}
	// The channels go round: web, app, sms, whatsapp, voice, none.
	var seen []string
	for range len(chatChannels) {
		press(m, "right")
		seen = append(seen, channelName(p.picker.channel))
	}
	if got := strings.Join(seen, " "); got != "app sms whatsapp voice none web" {
		t.Errorf("→ goes through %s", got)
	}
	// enter uses the thread chosen; esc would have kept web with a new thread.
	press(m, "enter")
	if p.picker != nil || p.route.channel != "web" || p.route.threadID != listThreads(t, engine)[1].ID {
		t.Errorf("after enter: channel %q, thread %q", p.route.channel, p.route.threadID)
	}
	if !strings.Contains(m.View(), "Chat · default · on web › “Weather in New York (cont.)”") {
		t.Errorf("the title does not say where messages go:\n%s", m.View())
	}
}

// TestChatSendsOnChannels: on sms, chatting starts, continues and links
// threads, which the Threads tab shows; on web, the first message starts
// a thread the next ones continue. Under each message: where it went.
func TestChatSendsOnChannels(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	send := func(text string, want ...string) {
		t.Helper()
		tm.Type(text)
		keys(tm, tea.KeyEnter)
		waitFor(t, tm, want...)
	}
	keys(tm, tea.KeyCtrlT, tea.KeyRight, tea.KeyRight)
	waitFor(t, tm, "[sms]", "sms is implicit")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Chat · default · on sms", "On sms: the latest sms/whatsapp/voice thread")
	keys(tm, tea.KeyEnter) // type
	send("What's the weather in New York?", "→ sms · thread “Weather in New York” (new)")
	clk.Advance(time.Minute)
	send("And tomorrow?", "→ sms · thread “Weather in New York” (turn 2)")
	clk.Advance(time.Hour)
	send("Oh, and what is it on Thursday?", "→ sms · thread “Weather in New York (cont.)” (new,", "linked to “Weather in New York”)")
	// Explicit: a new thread, then the same one.
	keys(tm, tea.KeyCtrlT, tea.KeyLeft, tea.KeyLeft)
	waitFor(t, tm, "[web]", "+ a new thread")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "on web › a new thread")
	clk.Advance(time.Minute)
	send("Book flights to Paris for March 3.", "→ web · thread “Book flights to Paris for March 3”", "(new, not linked to 2 earlier",
		"on web › “Book flights to Paris for March 3”")
	clk.Advance(time.Minute)
	// The buffer's count as well: "(turn 2)" is also New York's, on a line
	// the conversation redraws as it scrolls before the answer comes.
	send("Two seats, please.", "→ web · thread “Book flights to Paris for March 3”", "(turn 2)", "5/50 utterances")
	keys(tm, tea.KeyEsc)
	tm.Type("2")
	waitFor(t, tm, "3 threads", "▸ Book flights to Paris for March 3", "Two seats, please.")
	m := finish(t, tm)
	threads := listThreads(t, engine)
	if len(threads) != 3 || threads[0].TurnCount != 2 || threads[2].TurnCount != 2 || len(threads[1].LinkedThreads) != 1 {
		t.Errorf("threads %s: want Paris (2 turns), Thursday (linked), New York (2 turns)", threadIDs(threads))
	}
	if p := chatOf(m); p.route.threadID != threads[0].ID {
		t.Errorf("web continues %q, want the thread its first message started", p.route.threadID)
	}
	// The messages are in the conversation too.
	if n := len(readBuffer(t, engine, "default")); n != 5 {
		t.Errorf("%d utterances in default, want 5", n)
	}
}

// TestChatFinishingWhileSendIsInFlight: once the message is in the buffer
// but chat.send has not answered, the spinner stays under it where its
// route will show.
func TestChatFinishingWhileSendIsInFlight(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newChatPane(engine, &styles, 0, false)
	p.SetSize(goldenWidth, 20)
	drain(p, p.Init())
	p.out.load.busy, p.out.text, p.out.conv, p.out.from, p.out.channel = true, "Book flights to Paris.", p.conv, 0, "web"
	p.render()
	if view := p.View(); !strings.Contains(view, "· sending on web") || strings.Contains(view, "finishing") {
		t.Errorf("before the buffer has it:\n%s", view)
	}
	p.buf.utts = []*history.Utterance{{Conversation: p.conv, UtteranceIndex: 0, TurnNumber: 1, Speaker: "user", Text: "Book flights to Paris.", Timestamp: goldenTime}}
	p.render()
	view := p.View()
	if !strings.Contains(view, "→ web · finishing…") || strings.Contains(view, "· sending") {
		t.Errorf("recorded, the send still in flight:\n%s", view)
	}
	p.out.load.busy, p.out.text = false, ""
	p.render()
	if strings.Contains(p.View(), "finishing") {
		t.Error("the marker stays after the send")
	}
}

// TestChatThreadPerConversation: on web, each conversation keeps its own
// thread: a new conversation's first message starts a thread of its own,
// and coming back continues the first one.
func TestChatThreadPerConversation(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No messages in default yet")
	keys(tm, tea.KeyEnter)
	tm.Type("Book flights to Paris for March 3.")
	keys(tm, tea.KeyEnter)
	// The note that the next message starts a thread gives way to the one
	// it started.
	waitFor(t, tm, "→ web · thread “Book flights to Paris for March 3”", "(new)",
		"New thread “Book flights to Paris for March 3”: messages on web continue it.")
	clk.Advance(time.Minute)
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "conversation: ")
	tm.Type("launch plan")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Chat · launch plan · on web › a new thread")
	tm.Type("Draft the launch announcement.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "→ web · thread “Draft the launch announcement”", "(new")
	keys(tm, tea.KeyCtrlO)
	waitFor(t, tm, "conversation: ")
	tm.Type("default")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Chat · default · on web › “Book flights to Paris for March 3”")
	clk.Advance(time.Minute)
	tm.Type("Window seats, please.")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "→ web · thread “Book flights to Paris for March 3”", "(turn 2)")
	finish(t, tm)
	threads := listThreads(t, engine)
	if len(threads) != 2 {
		t.Fatalf("%d threads, want one per conversation", len(threads))
	}
	for _, th := range threads {
		want := map[string]int{"Book flights to Paris for March 3": 2, "Draft the launch announcement": 1}[th.Title]
		if th.TurnCount != want {
			t.Errorf("thread %q has %d turns, want %d", th.Title, th.TurnCount, want)
		}
	}
}

// TestChatPickerListsThreadsCreatedMeanwhile: a thread created while the
// picker's list is being read is listed once it has answered.
func TestChatPickerListsThreadsCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	threadMessage(t, engine, "web", "", "user", "Book flights to Paris for March 3.")
	styles := DefaultStyles()
	p := newChatPane(engine, &styles, 0, false)
	p.SetSize(goldenWidth, 20)
	drain(p, p.Init())
	first := p.openPicker()()
	clk.Advance(time.Minute)
	res := threadMessage(t, engine, "web", "", "user", "Order a birthday cake for Sam.")
	if cmd := p.Update(events.Event{Name: "thread.created", Data: episodic.Thread{ID: res.ThreadID, Title: "Order a birthday cake for Sam"}}); cmd != nil {
		t.Error("a second list was asked while the first is in flight")
	}
	next := p.Update(first)
	if next == nil {
		t.Fatal("the list is not asked again after the thread created meanwhile")
	}
	drain(p, next)
	if len(p.picker.threads) != 2 || p.picker.threads[0].ID != res.ThreadID {
		t.Errorf("the picker lists %s", threadIDs(p.picker.threads))
	}
}

// TestWrapKeepsFlagsWhole: a flag is not split at its hyphens.
func TestWrapKeepsFlagsWhole(t *testing.T) {
	t.Parallel()
	text := "no language model configured (start engram with --llm ollama or --llm openai): the algorithmic decision stands"
	for w := 10; w <= 60; w++ {
		for _, l := range wrapText(text, w, "") {
			if strings.HasSuffix(l, "-") || strings.HasPrefix(l, "-llm") || strings.Contains(l, "\u2011") {
				t.Errorf("at %d columns: %q", w, l)
			}
		}
	}
	if got := strings.Join(wrapText("a follow-up and -0.5", 80, ""), "|"); got != "a follow-up and -0.5" {
		t.Errorf("%q", got)
	}
}

// Before its stats come (a slow store), the Chat tab's side panel says
// nothing of the buffer's size rather than a wrong one ("holds 1
// utterances" was the placeholder's).
func TestChatSaysNoBufferSizeBeforeItsStatsCome(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	m := New(engine, Options{StatusFade: time.Hour})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	view := m.View() // the panes' loads have not run: no stats yet
	if !strings.Contains(view, "Loading…") {
		t.Fatalf("the buffer is not shown loading:\n%s", view)
	}
	if strings.Contains(view, "Once the buffer holds") {
		t.Fatalf("a buffer size is claimed before the stats came:\n%s", view)
	}
}

// When the buffer's stats cannot be read, the Chat tab's side panel
// says so rather than "Loading…" for ever (the error went into the
// conversation's own load error, shown only while the conversation had
// not come, and cleared once it came).
func TestChatSaysWhenTheBufferStatsFailToLoad(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	m := New(engine, Options{StatusFade: time.Hour})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	p := chatOf(m)
	p.loadBuffer()
	p.bufferResult(resultMsg[history.Utterances]{req: p.buf.read.req})
	p.loadStats()
	p.statsResult(resultMsg[history.Stats]{req: p.buf.stat.req, err: fmt.Errorf("disk gone")})
	view := m.View()
	if strings.Contains(view, "Loading…") {
		t.Fatalf("the buffer's stats failed, yet the panel says it is loading them:\n%s", view)
	}
	if !strings.Contains(view, "Could not read its figures: disk gone") {
		t.Fatalf("the stats' error is not shown:\n%s", view)
	}
}
