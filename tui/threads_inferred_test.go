package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/events"
)

// seedInferred plays a flow whose decisions get inferred outcomes: a
// follow-up on sms links to the weather thread, and the user's next message
// says that was not what they meant (the LINK inferred incorrect); later a
// new web thread, which links to neither, goes on (its strongest DON'T_LINK
// inferred correct). The clock ends at 11:35.
func seedInferred(t *testing.T, engine conn.Conn, clk *clock.Fixed) (ny, thursday, paris string) {
	t.Helper()
	ny = threadMessage(t, engine, "sms", "", "user", "What's the weather in New York?").ThreadID
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "Sunny, 72°F in Central Park this morning.")
	clk.Set(goldenTime.Add(45 * time.Minute))
	thursday = threadMessage(t, engine, "sms", "", "user", "Oh, and what is it on Thursday?").ThreadID
	clk.Set(goldenTime.Add(47 * time.Minute))
	threadMessage(t, engine, "sms", "", "user", "No, that's not what I meant: the Boston game on Thursday.")
	clk.Advance(time.Minute)
	threadMessage(t, engine, "sms", "", "assistant", "The Boston game starts at 7:10 pm.")
	clk.Set(goldenTime.Add(90 * time.Minute))
	paris = threadMessage(t, engine, "web", "", "user", "Book flights to Paris for March 3.").ThreadID
	clk.Advance(time.Minute)
	threadMessage(t, engine, "web", paris, "user", "A window seat, please.")
	clk.Set(goldenTime.Add(95 * time.Minute))
	return ny, thursday, paris
}

// openInferred opens the Threads tab at w×h on the Thursday thread's
// decisions, the first one chosen if choose.
func openInferred(t *testing.T, w, h int, choose bool) (conn.Conn, *Model) {
	t.Helper()
	engine, clk := newEngine(t)
	seedInferred(t, engine, clk)
	tm := start(t, engine, w, h)
	tm.Type("2")
	waitFor(t, tm, "Book flights to Paris")
	tm.Type("j")
	waitFor(t, tm, "The Boston game starts")
	tm.Type("l")
	waitFor(t, tm, "[decisions]", "(✗ incorrect)")
	if choose {
		tm.Send(keyMsg(t, "enter"))
		waitFor(t, tm, "↑/↓ decision")
	}
	return engine, finish(t, tm)
}

// TestGoldenThreadsInferred: the decisions view shows an inferred outcome
// in parentheses, apart from a mark, says so in its footer, and the chosen
// decision's details say what it was read from (120x36).
func TestGoldenThreadsInferredAt120x36(t *testing.T) {
	t.Parallel()
	engine, m := openInferred(t, 120, 36, true)
	requireGoldenSized(t, m, 120, 36)
	checkInferredView(t, engine, m, "(✓)/(✗) inferred, not marked", "(✓)/(✗) inferred from the user's next message", "inferred  incorrect from a correction in turn #2")
}

// TestGoldenThreadsInferredAt80x24: the same at 80x24, where the summary
// above the table explains the parentheses (the footer has no room).
func TestGoldenThreadsInferredAt80x24(t *testing.T) {
	t.Parallel()
	engine, m := openInferred(t, 80, 24, false)
	requireGoldenSized(t, m, 80, 24)
	checkInferredView(t, engine, m, "(✓)/(✗) inferred, not marked", "inferred  incorrect from a correction in turn #2")
}

// checkInferredView checks the frame against the engine, and that it has
// the inferred outcome in parentheses and every line of want.
func checkInferredView(t *testing.T, engine conn.Conn, m *Model, want ...string) {
	t.Helper()
	p := threadsOf(m)
	var inferred *episodic.Decision
	for _, d := range decisionsOf(t, engine, p.list.sel) {
		if d.ThreadID == p.list.sel && d.Decision == episodic.Link {
			inferred = d
		}
	}
	if inferred == nil || inferred.Outcome != "" || len(inferred.Inferred) != 1 || inferred.Inferred[0].Outcome != episodic.OutcomeIncorrect {
		t.Fatalf("the engine's decision: %+v", inferred)
	}
	view := m.View()
	for _, want := range append([]string{"(✗ incorrect)"}, want...) {
		if !strings.Contains(view, want) {
			t.Errorf("the frame lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "✗ incorrect ") && !strings.Contains(view, "(✗ incorrect)") {
		t.Errorf("an inferred outcome shows as a mark:\n%s", view)
	}
}

// TestThreadsMarkShowsOverInference: once a person marks a decision with an
// inferred outcome, the mark shows (without parentheses), and tuning asks
// from both counts.
func TestThreadsMarkShowsOverInference(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	_, thursday, _ := seedInferred(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(120, 36)
	drain(p, p.Init())
	if p.tune.marked != 0 || p.tune.inferred != 2 {
		t.Fatalf("counted %d marked and %d inferred, want 0 and 2", p.tune.marked, p.tune.inferred)
	}
	p.Update(keyMsg(t, "t"))
	if q := p.confirm.Question(); q != "Tune the link threshold from 0 marked and 2 inferred decisions?" {
		t.Errorf("t asks %q", q)
	}
	p.Update(keyMsg(t, "esc"))
	var link *episodic.Decision
	for _, d := range decisionsOf(t, engine, thursday) {
		if d.ThreadID == thursday && d.Decision == episodic.Link {
			link = d
		}
	}
	// The question says what was inferred.
	p.list.sel = thursday
	drain(p, p.loadDetail())
	p.showSection(secDecisions)
	p.Update(keyMsg(t, "o"))
	if q := p.ask.Question(); !strings.HasSuffix(q, "right? (inferred correct)") {
		t.Errorf("o asks %q", q)
	}
	p.Update(keyMsg(t, "esc"))
	marked := call(t, engine, episodic.ActionEpisodeOutcome, episodic.OutcomeArgs{DecisionID: link.ID, Outcome: episodic.OutcomeCorrect}).Decision
	drain(p, p.Update(events.Event{Name: episodic.EventOutcome.Name(), Data: *marked}))
	if p.tune.marked != 1 || p.tune.inferred != 1 {
		t.Errorf("after the mark: %d marked and %d inferred, want 1 and 1", p.tune.marked, p.tune.inferred)
	}
	p.list.sel = thursday
	drain(p, p.loadDetail())
	p.showSection(secDecisions)
	view := p.View()
	if !strings.Contains(view, "✓ correct") || strings.Contains(view, "(✗ incorrect)") {
		t.Errorf("the mark does not show over the inference:\n%s", view)
	}
}

// TestThreadsFollowAccessChangesFromAnotherAgent: a thread another agent
// shares appears in the tab, and goes when revoked, with no key pressed
// (issue 14, bug 8).
func TestThreadsFollowAccessChangesFromAnotherAgent(t *testing.T) {
	t.Parallel()
	engine, _, tm := startThreads(t)
	as := conn.Request{Principal: "bob"}
	ctx := context.Background()
	res, err := conn.CallAs(ctx, engine, as, episodic.ActionThreadMessage, episodic.MessageRequest{Channel: "web", Text: "Bob's notes on the Lisbon offsite."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CallAs(ctx, engine, as, episodic.ActionThreadShare, episodic.ShareArgs{ThreadID: res.ThreadID, Principal: engine.Agent(), Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "4 threads", "Bob's notes on the Lisbon offsite")
	if _, err := conn.CallAs(ctx, engine, as, episodic.ActionThreadRevoke, episodic.RevokeArgs{ThreadID: res.ThreadID, Principal: engine.Agent()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "3 threads")
	m := finish(t, tm)
	for _, th := range threadsOf(m).list.threads {
		if th.ID == res.ThreadID {
			t.Errorf("bob's thread is still listed after he revoked it")
		}
	}
}

// TestThreadsDoNotFollowAnotherAgentsNewThread: the cursor follows a new
// thread only if the console may read it; one another agent started, and
// shares later, does not take the cursor then.
func TestThreadsDoNotFollowAnotherAgentsNewThread(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	_, _, paris := seedThreads(t, engine, clk)
	styles := DefaultStyles()
	p := newThreadsPane(engine, &styles)
	p.SetSize(120, 36)
	drain(p, p.Init())
	if p.list.sel != paris {
		t.Fatalf("the cursor starts on %s, want Paris %s", p.list.sel, paris)
	}
	as := conn.Request{Principal: "bob"}
	ctx := context.Background()
	res, err := conn.CallAs(ctx, engine, as, episodic.ActionThreadMessage, episodic.MessageRequest{Channel: "web", Text: "Bob's notes on the Lisbon offsite."})
	if err != nil {
		t.Fatal(err)
	}
	th := getThreadAs(t, engine, as, res.ThreadID)
	drain(p, p.Update(events.Event{Name: episodic.EventThreadCreated.Name(), Data: th}))
	if p.list.want != "" {
		t.Errorf("the list still waits to follow bob's thread %s", p.list.want)
	}
	acl := episodic.ThreadAccessEvent{ThreadID: res.ThreadID, Principal: engine.Agent(), Change: "shared", Permissions: []string{"read"}}
	if _, err := conn.CallAs(ctx, engine, as, episodic.ActionThreadShare, episodic.ShareArgs{ThreadID: res.ThreadID, Principal: engine.Agent(), Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	drain(p, p.Update(events.Event{Name: episodic.EventAccess.Name(), Data: acl}))
	if len(p.list.threads) != 4 || p.list.sel != paris {
		t.Errorf("after the share: %d threads, cursor on %s; want 4, still on Paris %s", len(p.list.threads), p.list.sel, paris)
	}
}

// getThreadAs is thread.get as another agent.
func getThreadAs(t *testing.T, engine conn.Conn, as conn.Request, id string) episodic.Thread {
	t.Helper()
	res, err := conn.CallAs(context.Background(), engine, as, episodic.ActionThreadGet, episodic.GetArgs{ThreadID: id})
	if err != nil {
		t.Fatal(err)
	}
	return *res.Thread.Thread
}
