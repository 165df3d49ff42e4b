package tui

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// threadMessage routes a message through thread.message at the engine's
// clock and returns where it went.
func threadMessage(t *testing.T, engine conn.Conn, channel, threadID, speaker, text string) episodic.MessageResult {
	t.Helper()
	return call(t, engine, episodic.ActionThreadMessage, episodic.MessageRequest{Channel: channel, ThreadID: threadID, Speaker: speaker, Text: text})
}

// call runs an action that must succeed, its result decoded as an R.
func call[A, R any](t *testing.T, engine conn.Conn, ref action.Ref[A, R], args A) R {
	t.Helper()
	res, err := conn.Call(t.Context(), engine, ref, args)
	if err != nil {
		t.Fatalf("%s: %v", ref.Name(), err)
	}
	return res
}

// seedThreads plays the seed's flow: a question about the weather in New
// York by sms at 10:00; a follow-up 45 minutes later, past the inactivity
// timeout, which starts a thread linked to the first (whose episode is
// compacted); a request on the web at 11:00 about something else. The
// clock ends at 11:05.
func seedThreads(t *testing.T, engine conn.Conn, clk *clock.Fixed) (ny, thursday, paris string) {
	t.Helper()
	ny = threadMessage(t, engine, "sms", "", "user", "What's the weather in New York?").ThreadID
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "Sunny, 72°F in Central Park this morning.")
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "user", "I prefer Celsius, by the way.")
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "Noted: that is 22°C.")
	clk.Set(goldenTime.Add(45 * time.Minute))
	thursday = threadMessage(t, engine, "sms", "", "user", "Oh, and what is it on Thursday?").ThreadID
	// thread.list waits for the background compaction of New York's
	// episode: its macro summary is then what it is at this point.
	do(t, engine, "thread.list", "", "")
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "Rain on Thursday, 12°C. Take an umbrella.")
	clk.Set(goldenTime.Add(time.Hour))
	paris = threadMessage(t, engine, "web", "", "user", "Book flights to Paris for March 3.").ThreadID
	clk.Advance(2 * time.Minute)
	threadMessage(t, engine, "web", paris, "assistant", "Two seats on the 8:05 from JFK, $640 each. Shall I book them?")
	clk.Set(goldenTime.Add(65 * time.Minute))
	return ny, thursday, paris
}

func threadsOf(m *Model) *threadsPane { return m.panes[tabThreads].(*threadsPane) }

// startThreads seeds the threads and opens the Threads tab.
func startThreads(t *testing.T) (conn.Conn, *clock.Fixed, *teatest.TestModel) {
	t.Helper()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("2")
	waitFor(t, tm, "[2 Threads]", "3 threads", "Book flights to Paris", "Two seats on the 8:05")
	return engine, clk, tm
}

// listThreads is thread.list, as the engine answers it.
func listThreads(t *testing.T, engine conn.Conn) []*episodic.Thread {
	t.Helper()
	return call(t, engine, episodic.ActionThreadList, action.None{}).Threads
}

// getThread is thread.get with the archived turns.
func getThread(t *testing.T, engine conn.Conn, id string) episodic.ThreadView {
	t.Helper()
	return call(t, engine, episodic.ActionThreadGet, episodic.GetArgs{ThreadID: id, IncludeArchived: true}).Thread
}

// decisionsOf is episode.decisions about a thread ("": every thread).
func decisionsOf(t *testing.T, engine conn.Conn, id string) []*episodic.Decision {
	t.Helper()
	return call(t, engine, episodic.ActionEpisodeDecisions, episodic.DecisionsArgs{ThreadID: id}).Decisions
}

func threadIDs(ts []*episodic.Thread) string {
	ids := make([]string, len(ts))
	for i, th := range ts {
		ids[i] = th.ID
	}
	return strings.Join(ids, " ")
}

// --- golden frames (threads_empty is in TestGoldenTabs) ---

func TestGoldenThreadsList(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	m := finish(t, tm)
	requireGolden(t, m)
	p := threadsOf(m)
	if got, want := threadIDs(p.list.threads), threadIDs(listThreads(t, engine)); got != want {
		t.Errorf("the list is %s, thread.list says %s", got, want)
	}
	view := m.View()
	for _, want := range []string{"▸ Book flights to Paris for March 3", "compacted  ⇄ 1", "active     ⇄ 1", "3m ago", "1h ago",
		"[turns]", "#2 assistant · web · 11:02", "not linked to another thread"} {
		if !strings.Contains(view, want) {
			t.Errorf("the frame lacks %q", want)
		}
	}
}

func TestGoldenThreadsDecisions(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	tm.Type("j")
	waitFor(t, tm, "── Weather in New York (cont.)", "Rain on Thursday")
	tm.Type("l")
	waitFor(t, tm, "[decisions]", "→ Weather in New York", "← Book flights to Paris")
	tm.Type("o")
	waitFor(t, tm, "Was LINK of “Weather in New York (cont.)” and “Weather in New York” right?")
	tm.Type("y")
	waitFor(t, tm, "✓ correct", "Marked LINK with “Weather in New York” correct")
	m := finish(t, tm)
	requireGolden(t, m)
	p := threadsOf(m)
	ds := decisionsOf(t, engine, p.list.sel)
	if len(ds) != 2 || len(p.decisions()) != 2 {
		t.Fatalf("%d decisions shown, episode.decisions says %d", len(p.decisions()), len(ds))
	}
	for _, d := range ds {
		want := ""
		if d.Decision == episodic.Link {
			want = episodic.OutcomeCorrect
		}
		if d.Outcome != want {
			t.Errorf("%s with %s: outcome %q, want %q", d.Decision, d.Candidate, d.Outcome, want)
		}
	}
	view := m.View()
	for _, want := range []string{"0.91", "no model", "ALGORITHMIC_ONLY", "DON'T_LINK", "continuation: oh, and", "link threshold 0.70"} {
		if !strings.Contains(view, want) {
			t.Errorf("the frame lacks %q", want)
		}
	}
}

func TestGoldenThreadsCompaction(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	tm.Type("G")
	waitFor(t, tm, "── Weather in New York", "archived")
	tm.Type("ll")
	waitFor(t, tm, "[compaction]", "macro", "meso", "micro", "skills")
	m := finish(t, tm)
	requireGolden(t, m)
	view := m.View()
	for _, want := range []string{"Episode 1 · compacted 10:45 · turns #1-4", "cross-thread episode with “Weather in New York (cont.)”",
		"preference · I prefer Celsius, by the way", "├─ macro", "└─ meso", "└─ micro · turns #1-4"} {
		if !strings.Contains(view, want) {
			t.Errorf("the frame lacks %q:\n%s", want, view)
		}
	}
	// enter shows every line of the summaries, to scroll.
	p := threadsOf(m)
	press(m, "enter")
	if !p.lower.inside || !strings.Contains(m.View(), "[4] Weather in New York · assistant: Noted: that is 22°C.") {
		t.Errorf("enter does not expand the summaries:\n%s", m.View())
	}
	press(m, "G")
	if !strings.Contains(m.View(), "preference · I prefer Celsius") || !strings.Contains(m.View(), "↑ ") {
		t.Errorf("G does not scroll to the end:\n%s", m.View())
	}
	_ = engine
}

// --- keys ---

// TestThreadsTuneAsksFirstAndReports: t says to mark decisions first when
// none is; once some are, it asks, and y tunes and shows the report.
func TestThreadsTuneAsksFirstAndReports(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	// Nothing marked: tuning says what to do first, and asks nothing.
	tm.Type("t")
	waitFor(t, tm, "[tuning]", "Mark a decision first: o in the decisions view")
	tm.Type("j")
	waitFor(t, tm, "── Weather in New York (cont.)")
	tm.Type("o") // the LINK with New York: it was wrong
	waitFor(t, tm, "Was LINK of")
	tm.Type("n")
	waitFor(t, tm, "✗ incorrect")
	keys(tm, tea.KeyEnter, tea.KeyDown)
	tm.Type("o") // the DON'T_LINK with Paris: right
	waitFor(t, tm, "Was DON'T_LINK of “Book flights to Paris for March 3” and “Weather in New York (cont.)” right?")
	tm.Type("y")
	waitFor(t, tm, "✓ correct")
	// t asks first; n keeps the threshold untuned.
	tm.Type("t")
	waitFor(t, tm, "Tune the link threshold from 2 marked decisions?", "y tune")
	tm.Type("n")
	waitFor(t, tm, "t tune threshold")
	tm.Type("t")
	waitFor(t, tm, "Tune the link threshold from 2 marked decisions?")
	tm.Type("y")
	// Two marks are too few to move it (episodic.MinOutcomes): the report
	// says what they suggest.
	waitFor(t, tm, "Last tuning", "Link threshold stays 0.70, from 2 marked decisions")
	m := finish(t, tm)
	tuning := call(t, engine, episodic.ActionEpisodeTuning, action.None{})
	if len(tuning.History) != 1 || tuning.Threshold != 0.70 {
		t.Fatalf("tuning %+v, want one run, staying at 0.70", tuning)
	}
	view := m.View()
	for _, want := range []string{"threshold                 0.70      0.70", "accuracy                   50%       50%",
		"false positive rate        50%       50%", "false negative rate         0%        0%", "from 2 marked decisions",
		"Only 2 marked decision(s)", "link threshold 0.70"} {
		if !strings.Contains(view, want) {
			t.Errorf("the tuning report lacks %q:\n%s", want, view)
		}
	}
}

// TestThreadsCompactAsksFirstAndArchivesTurns: c asks how many turns it
// compacts, esc leaves them, y compacts and archives them; with nothing new
// it asks nothing.
func TestThreadsCompactAsksFirstAndArchivesTurns(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	paris := listThreads(t, engine)[0]
	tm.Type("ll") // the compaction view, which knows what is left to compact
	waitFor(t, tm, "[compaction]", "Episode 1 · open · turns #1-2")
	tm.Type("c")
	waitFor(t, tm, "Compact 2 turns of “Book flights to Paris for March 3”?", "y compact")
	keys(tm, tea.KeyEsc) // esc (or n) asks again later
	waitFor(t, tm, "c compact thread")
	if n := len(getThread(t, engine, paris.ID).Turns); n != 2 || getThread(t, engine, paris.ID).Turns[0].Archived {
		t.Fatal("esc compacted the thread")
	}
	tm.Type("c")
	waitFor(t, tm, "Compact 2 turns of")
	tm.Type("y")
	waitFor(t, tm, "Compacted 1 episode of “Book flights to Paris for March 3”", "Episode 1 · compacted 11:05", "Episode 2 · open")
	tm.Type("hh") // the turns, archived now
	waitFor(t, tm, "2 turns archived by compaction", "#1 user · web · 11:00 · archived")
	m := finish(t, tm)
	// The compaction view lists the newest episode first: the one just
	// compacted shows at once, under the new open one.
	threadsOf(m).lower.section = secCompaction
	if view := m.View(); strings.Index(view, "Episode 2 · open") > strings.Index(view, "Episode 1 · compacted") {
		t.Errorf("the episodes are not newest first:\n%s", view)
	}
	for _, u := range getThread(t, engine, paris.ID).Turns {
		if !u.Archived {
			t.Errorf("turn %d is not archived", u.Number)
		}
	}
	// A second c finds nothing new to compact.
	_ = m
	tm = start(t, engine, goldenWidth, goldenHeight)
	tm.Type("2")
	waitFor(t, tm, "Book flights to Paris")
	tm.Type("ll")
	waitFor(t, tm, "Episode 2 · open")
	tm.Type("c")
	waitFor(t, tm, "Nothing to compact in “Book flights to Paris for March 3”")
	m = finish(t, tm)
	if p := threadsOf(m); p.confirm.Active() {
		t.Errorf("asked %q with nothing to compact", p.confirm.Question())
	}
}

// TestThreadsOutcomeQuestionTakesTheKeys: q and digits do not leave the
// question; esc closes it unanswered.
func TestThreadsOutcomeQuestionTakesTheKeys(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	tm.Type("j")
	waitFor(t, tm, "Rain on Thursday")
	tm.Type("o")
	waitFor(t, tm, "Was LINK of")
	tm.Type("q3")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "o mark outcome")
	m := finish(t, tm)
	if m.quitting && m.active != tabThreads || threadsOf(m).ask.Active() {
		t.Errorf("tab %d, asking %v: want the question closed on Threads", m.active, threadsOf(m).ask.Question())
	}
	for _, d := range decisionsOf(t, engine, threadsOf(m).list.sel) {
		if d.Outcome != "" {
			t.Errorf("%s was marked %s", d.ID, d.Outcome)
		}
	}
}

// --- live ---

// TestThreadsShowLiveMessages: threads, turns and decisions appear as the
// messages come, whoever sends them.
func TestThreadsShowLiveMessages(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("2")
	waitFor(t, tm, "No threads yet")
	threadMessage(t, engine, "sms", "", "user", "What's the weather in New York?")
	waitFor(t, tm, "1 thread", "Weather in New York", "#1 user · sms · 10:00")
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "Sunny, 72°F.")
	waitFor(t, tm, "#2 assistant · sms · 10:01", "Sunny, 72°F.")
	tm.Type("l")
	waitFor(t, tm, "No linking decision about this thread")
	clk.Advance(time.Hour)
	threadMessage(t, engine, "sms", "", "user", "Oh, and what is it on Thursday?")
	// The new thread is listed first, and the cursor follows it there:
	// it was on the newest thread.
	waitFor(t, tm, "2 threads", "▸ Weather in New York (cont.)", "→ Weather in New York", "LINK")
	// Off the top, the cursor stays where it is.
	tm.Type("j")
	waitFor(t, tm, "▸ Weather in New York", "← Weather in New York (cont.)")
	clk.Advance(time.Hour)
	threadMessage(t, engine, "web", "", "user", "Book flights to Paris for March 3.")
	waitFor(t, tm, "3 threads", "← Book flights to Paris")
	m := finish(t, tm)
	p := threadsOf(m)
	if got := p.titleOf(p.list.sel); got != "Weather in New York" {
		t.Errorf("the cursor moved to %q", got)
	}
}

// TestThreadsJudgingSpinner: while the model judges a new thread's links,
// the tab says so; the decision then has both halves.
func TestThreadsJudgingSpinner(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	model := &llmtest.Scripted{Model: "judge", Func: func(llm.Request) llmtest.Answer {
		<-release
		return llmtest.Text(`{"related": true, "confidence": 0.8, "reasoning": "A follow-up about the same forecast.", "key_signals": ["oh, and"]}`)
	}}
	clk := clock.NewFixed(goldenTime)
	engine, err := core.Open(core.Options{InMemory: true, Clock: clk, IDSeed: "golden", LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	threadMessage(t, engine, "sms", "", "user", "What's the weather in New York?") // nothing to judge against
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("2")
	waitFor(t, tm, "Weather in New York")
	clk.Advance(time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := conn.Call(t.Context(), engine, episodic.ActionThreadMessage, episodic.MessageRequest{Channel: "sms", Text: "Oh, and what is it on Thursday?"})
		done <- err
	}()
	waitFor(t, tm, "judging links with 1 thread…")
	once.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tm.Type("l")
	waitFor(t, tm, "[decisions]", "HIGH", "0.80", "related, 80% sure")
	m := finish(t, tm)
	if p := threadsOf(m); p.judge.count != 0 || strings.Contains(m.View(), "judging links") {
		t.Error("the spinner still shows after the decision")
	}
}

// TestThreadsReloadOncePerBurst: events while a load is in flight cost one
// more load, not one each.
func TestThreadsReloadOncePerBurst(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(goldenWidth, 25)
	drain(p, p.Init())
	if len(p.list.threads) != 3 || p.shownDetail() == nil {
		t.Fatalf("%d threads, detail %v after the first loads", len(p.list.threads), p.shownDetail())
	}
	p.loadList()
	first := p.list.load.req
	for range 5 {
		p.Update(events.Event{Name: episodic.EventTurnAdded.Name()})
	}
	if p.list.load.req != first || !p.list.load.dirty {
		t.Fatalf("req %d (first %d), dirty %v: want the first load current and a reload owed", p.list.load.req, first, p.list.load.dirty)
	}
	none := episodic.ListResult{Threads: []*episodic.Thread{}}
	if cmd := p.Update(resultMsg[episodic.ListResult]{pane: threadsPaneID, req: first, action: "thread.list", value: none}); cmd == nil || p.list.load.dirty {
		t.Fatal("no single reload after the burst")
	}
	// Other panes' answers are no business of this one.
	p.Update(resultMsg[episodic.ListResult]{pane: chatPaneID, req: p.list.load.req, action: "thread.list", value: none})
	if p.list.load.busy == false {
		t.Error("another pane's answer was applied")
	}
}

// --- sizes ---

// TestThreadsFitEveryState: every view of the tab, inside and out, the
// question, the tuning report and the empty tab are exactly the terminal's
// size, and the footer keeps the keys that matter.
func TestThreadsFitEveryState(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	tm.Type("j")
	waitFor(t, tm, "Rain on Thursday")
	tm.Type("o")
	waitFor(t, tm, "Was LINK of")
	tm.Type("y")
	waitFor(t, tm, "✓ correct")
	tm.Type("t")
	waitFor(t, tm, "Tune the link threshold")
	tm.Type("y")
	waitFor(t, tm, "Last tuning")
	m := finish(t, tm)
	p := threadsOf(m)
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}, {Width: 100, Height: 30}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		name := func(state string) string { return fmt.Sprintf("%dx%d %s", size.Width, size.Height, state) }
		check := func(state, footer string) {
			t.Helper()
			checkScreen(t, name(state), m.View(), size.Width, size.Height)
			if size.Width >= 80 && !strings.Contains(lastLine(m.View()), footer) {
				t.Errorf("%s: the footer lacks %q: %q", name(state), footer, lastLine(m.View()))
			}
		}
		for sec := range secCount {
			p.lower.section, p.lower.inside = sec, false
			check(threadsSectionNames[sec], "q quit")
			press(m, "enter")
			check(threadsSectionNames[sec]+" inside", "Esc back")
			press(m, "G", "esc")
			press(m, "?")
			check(threadsSectionNames[sec]+" full help", "")
			press(m, "?")
		}
		p.lower.section = secDecisions
		press(m, "o")
		check("question", "y it was correct")
		press(m, "esc")
		press(m, "c")
		check("compact question", "y compact")
		press(m, "n")
		press(m, "t")
		check("tune question", "y tune")
		press(m, "esc")
		if p.confirm.Active() {
			t.Fatalf("%s: esc left the question open", name("tune question"))
		}
		p.judge.count = 1
		check("judging", "q quit")
		p.judge.count = 0
	}
	_ = engine
	// The empty tab.
	empty, _ := newEngine(t)
	tm = start(t, empty, 80, 24)
	tm.Type("2")
	waitFor(t, tm, "No threads yet")
	checkScreen(t, "empty", finish(t, tm).View(), 80, 24)
}

// TestThreadsDecisionsAt80x24: on a small screen the decisions table keeps
// several rows (the chosen decision's details do not fit beside them:
// enter shows them, with the chosen row).
func TestThreadsDecisionsAt80x24(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	clk.Set(goldenTime.Add(90 * time.Minute))
	threadMessage(t, engine, "web", "", "user", "Order a birthday cake for Sam.") // judged against the three
	tm := start(t, engine, 80, 24)
	tm.Type("2")
	waitFor(t, tm, "Order a birthday cake")
	tm.Type("l")
	waitFor(t, tm, "[decisions]", "3 decisions")
	m := finish(t, tm)
	rows := func(view string) int { return strings.Count(view, "ALGORITHMIC_ONLY") }
	view := m.View()
	checkScreen(t, "80x24 decisions", view, 80, 24)
	if n := rows(view); n != 3 {
		t.Errorf("%d rows of 3 decisions show at 80x24:\n%s", n, view)
	}
	if !strings.Contains(view, "enter chooses a decision and shows its signals") {
		t.Errorf("the view does not say where the details went:\n%s", view)
	}
	press(m, "enter", "j")
	view = m.View()
	checkScreen(t, "80x24 decision chosen", view, 80, 24)
	for _, want := range []string{"decision 2 of 3", "signals", "decided   DON'T_LINK"} {
		if !strings.Contains(view, want) {
			t.Errorf("inside, the view lacks %q:\n%s", want, view)
		}
	}
	// Where they fit (100x30, two decisions), the details show beside the
	// whole table: the golden frame threads_decisions.
}

// TestThreadsTuneErrorClearsOnOutcome: "mark a decision first" goes once
// a decision is marked.
func TestThreadsTuneErrorClearsOnOutcome(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(80, 20)
	drain(p, p.Init())
	if !p.tune.markedKnown || p.tune.marked != 0 {
		t.Fatalf("marked %d (known %v), want 0", p.tune.marked, p.tune.markedKnown)
	}
	p.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t")})
	if p.confirm.Active() || p.tune.err != noMarkedDecision || !strings.Contains(p.View(), "Mark a decision first: o in the decisions view") {
		t.Fatalf("confirm %v, error %q: want the error, no question", p.confirm, p.tune.err)
	}
	d := decisionsOf(t, engine, "")[0]
	call(t, engine, episodic.ActionEpisodeOutcome, episodic.OutcomeArgs{DecisionID: d.ID, Outcome: episodic.OutcomeCorrect})
	drain(p, p.Update(events.Event{Name: episodic.EventOutcome.Name(), Data: *d}))
	if p.tune.err != "" || strings.Contains(p.View(), "Mark a decision first") {
		t.Errorf("the error stays after a decision was marked: %q", p.tune.err)
	}
	p.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("t")})
	if !p.confirm.Active() || p.confirm.Question() != "Tune the link threshold from 1 marked decision?" {
		t.Errorf("t asks %+v", p.confirm)
	}
}

// TestThreadsTurnsFirstUpScrolls: the turns view starts at the newest
// turns, and the first ↑ after enter shows an older line.
func TestThreadsTurnsFirstUpScrolls(t *testing.T) {
	t.Parallel()
	_, _, tm := startThreads(t)
	tm.Type("G")
	waitFor(t, tm, "── Weather in New York", "archived")
	m := finish(t, tm)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	p := threadsOf(m)
	press(m, "enter")
	if p.lower.scroll.Offset() != p.maxSectionScroll() || p.lower.scroll.Offset() == 0 {
		t.Fatalf("scroll %d after enter, want the last (%d)", p.lower.scroll.Offset(), p.maxSectionScroll())
	}
	before := m.View()
	press(m, "k")
	if p.lower.scroll.Offset() != p.maxSectionScroll()-1 || m.View() == before {
		t.Errorf("the first ↑ did not scroll (scroll %d of %d)", p.lower.scroll.Offset(), p.maxSectionScroll())
	}
}

// TestThreadsQuietThread: an implicit thread silent past its timeout says
// that the next message starts a new thread; while it is not, the timeout
// shows; ended threads have neither.
func TestThreadsQuietThread(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk) // Thursday's thread (sms) was last active at 10:46
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(100, 25)
	drain(p, p.Init())
	drain(p, p.selectThread(1))
	if got := p.titleOf(p.list.sel); got != "Weather in New York (cont.)" {
		t.Fatalf("selected %q", got)
	}
	if view := p.View(); !strings.Contains(view, "active · started 10:45 · last 10:46 · silence ends it after 30 min") {
		t.Errorf("19 minutes after: %s", p.factsLine(p.current(), clk.Now(), 200))
	}
	clk.Set(goldenTime.Add(46*time.Minute + 30*time.Minute))
	view := p.View()
	if !strings.Contains(view, "quiet — the next sms message starts a new thread") || strings.Contains(view, "silence ends it") {
		t.Errorf("30 minutes after: %s", p.factsLine(p.current(), clk.Now(), 200))
	}
	// The facts fit the width: the least important go first.
	for _, w := range []int{40, 60, 80} {
		line := p.factsLine(p.current(), clk.Now(), w)
		if lineWidth(line) > w || !strings.Contains(line, "quiet") {
			t.Errorf("at %d columns: %q", w, line)
		}
	}
	drain(p, p.selectThread(2)) // New York: compacted
	if strings.Contains(p.View(), "silence ends it") || strings.Contains(p.View(), "quiet") {
		t.Errorf("an ended thread: %s", p.factsLine(p.current(), clk.Now(), 200))
	}
}

// TestThreadsManualMoveStopsFollowing: a new thread to follow does not
// pull the cursor back once the user has moved it.
func TestThreadsManualMoveStopsFollowing(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(100, 25)
	p.shown = true
	drain(p, p.Init())
	clk.Advance(time.Hour)
	res := threadMessage(t, engine, "web", "", "user", "Order a birthday cake for Sam.")
	// The event comes before the list has the thread: it is to follow...
	p.Update(events.Event{Name: episodic.EventThreadCreated.Name(), Data: episodic.Thread{ID: res.ThreadID}})
	if p.list.want != res.ThreadID {
		t.Fatalf("want %q, not the new thread", p.list.want)
	}
	// ...but the user moves first.
	p.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j")})
	moved := p.list.sel
	drain(p, p.reload())
	if p.list.want != "" || p.list.sel != moved || p.list.sel == res.ThreadID {
		t.Errorf("the cursor went back to the new thread (want %q, selected %q)", p.list.want, p.titleOf(p.list.sel))
	}
}

// TestThreadsKeepFewThreads: the turns and episodes of the threads selected
// long ago are dropped; the selected thread's stay.
func TestThreadsKeepFewThreads(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	for i := range threadsKept + 4 {
		threadMessage(t, engine, "web", "", "user", fmt.Sprintf("Topic number %d, about something else.", i))
		clk.Advance(time.Minute)
	}
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(100, 25)
	drain(p, p.Init())
	for i := range len(p.list.threads) {
		drain(p, p.selectThread(i))
		if p.shownDetail() == nil || p.shownEpisodes() == nil {
			t.Fatalf("thread %d: not loaded", i)
		}
	}
	if p.detail.cache.len() > threadsKept+1 || p.eps.cache.len() > threadsKept+1 {
		t.Errorf("%d details, %d episode lists kept, want at most %d", p.detail.cache.len(), p.eps.cache.len(), threadsKept+1)
	}
	// The thread selected last before this one is kept; the first is not.
	if p.detail.cache.get(p.list.threads[len(p.list.threads)-2].ID) == nil || p.detail.cache.get(p.list.threads[0].ID) != nil {
		t.Error("the cache keeps the wrong threads")
	}
}

// TestThreadsJudgingCounts: the spinner stays while any judging is under
// way, whatever else happens meanwhile.
func TestThreadsJudgingCounts(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(100, 25)
	p.shown = true
	judging := events.Event{Name: episodic.EventJudging.Name(), Data: episodic.JudgingEvent{Candidates: []string{"a", "b"}}}
	judged := events.Event{Name: episodic.EventJudged.Name(), Data: episodic.JudgedEvent{Candidates: 2}}
	if p.Update(judging) == nil {
		t.Error("the spinner did not start")
	}
	p.Update(judging)
	p.Update(events.Event{Name: episodic.EventThreadCreated.Name(), Data: episodic.Thread{ID: "x"}})
	p.Update(events.Event{Name: episodic.EventLinkDecided.Name()})
	p.Update(judged)
	if p.judge.count != 1 || p.judge.threads != 2 {
		t.Errorf("judging %d with %d threads, want one judging of 2", p.judge.count, p.judge.threads)
	}
	p.Update(judged)
	p.Update(judged) // never below 0
	if p.judge.count != 0 || p.judge.threads != 0 {
		t.Errorf("judging %d with %d threads after the last judged", p.judge.count, p.judge.threads)
	}
	if p.Update(judging) == nil || p.judge.count != 1 {
		t.Error("a judging after the count went back to 0 does not start the spinner")
	}
}

// TestStatusMessagesFit: the confirmations with a title fit an 80-column
// status line, however long the title.
func TestStatusMessagesFit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A very long thread title ", 6)
	for _, format := range []string{"Marked DON'T_LINK with “%s” incorrect (t tunes).", nothingToCompact, "Compacted 12 episodes of “%s”; turns archived.",
		"New thread “%s”: messages on web continue it.", "Messages go on web, in thread “%s”."} {
		if got := withTitle(format, long); lineWidth(got) > statusWidth || !strings.Contains(got, "…”") {
			t.Errorf("%q: %d columns", got, lineWidth(got))
		}
		if got := withTitle(format, "Paris"); !strings.Contains(got, "“Paris”") {
			t.Errorf("%q", got)
		}
	}
}

// TestThreadsOPressedWhileLoadingAsksOnceLoaded: o pressed while the
// thread's decisions are still loading says so, and the question opens
// once they come; the key is not lost.
func TestThreadsOPressedWhileLoadingAsksOnceLoaded(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedThreads(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(goldenWidth, goldenHeight)
	drain(p, p.Init())
	load := p.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j")}) // the next thread: its decisions are asked for
	if p.shownDetail() != nil {
		t.Fatal("the next thread's decisions are there before they were loaded")
	}
	said := p.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("o")})
	if msg, ok := said().(statusMsg); !ok || !strings.Contains(msg.text, "still loading") || p.ask.Active() {
		t.Fatalf("o while loading: status %#v, question open %v", msg, p.ask.Active())
	}
	drain(p, load)
	if !p.ask.Active() || !strings.HasPrefix(p.ask.Question(), "Was ") {
		t.Fatalf("the decisions came and no question opened: %+v", p.ask)
	}
}
