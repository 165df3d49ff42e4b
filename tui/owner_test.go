package tui

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/wire"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/tour"
)

// clientConn stands for a client's connection to an owner in another
// process: the in-process engine behind it, where the test says it is
// served from, events the test injects into its stream, and a failure the
// test plans for one action.
type clientConn struct {
	conn.Conn
	where conn.Where
	// dataDir, when set, is the data directory engine.info reports.
	dataDir string
	// quiet: the engine's own events never reach the console, as if the
	// owner that published them went away before they were sent.
	quiet  bool
	inject chan events.Event
	// asked gets every action the console runs.
	asked chan string
	// failAction's next request fails with what fail holds, if anything.
	failAction string
	fail       chan error
}

func newClientConn(engine conn.Conn, where conn.Where) *clientConn {
	return &clientConn{Conn: engine, where: where, inject: make(chan events.Event),
		asked: make(chan string, 1024), fail: make(chan error, 1)}
}

func (c *clientConn) Where() conn.Where { return c.where }

func (c *clientConn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	select {
	case c.asked <- req.Action:
	default: // the test has seen enough
	}
	if req.Action == c.failAction {
		select {
		case err := <-c.fail:
			return nil, err
		default:
		}
	}
	return c.Conn.Do(ctx, req)
}

func (c *clientConn) Info(ctx context.Context) (conn.Info, error) {
	info, err := c.Conn.Info(ctx)
	if c.dataDir != "" {
		info.Store, info.DataDir = "badger", c.dataDir
	}
	return info, err
}

func (c *clientConn) Subscribe(ctx context.Context, kinds ...string) <-chan events.Event {
	in := c.Conn.Subscribe(ctx, kinds...)
	out := make(chan events.Event)
	go func() {
		defer close(out)
		for {
			var ev events.Event
			select {
			case e, ok := <-in:
				if !ok {
					return
				}
				if c.quiet {
					continue
				}
				ev = e
			case ev = <-c.inject:
			case <-ctx.Done():
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// send injects ev into the console's event stream.
func (c *clientConn) send(t *testing.T, ev events.Event) {
	t.Helper()
	select {
	case c.inject <- ev:
	case <-time.After(waitLimit):
		t.Fatalf("the console did not read %s", ev.Name)
	}
}

// waitAsked waits until the console has run every one of actions since
// the last wait.
func (c *clientConn) waitAsked(t *testing.T, actions ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, a := range actions {
		want[a] = true
	}
	deadline := time.After(waitLimit)
	for len(want) > 0 {
		select {
		case a := <-c.asked:
			delete(want, a)
		case <-deadline:
			t.Fatalf("the console did not load again with %v", want)
		}
	}
}

// newWholeEngine is engram as it runs (the planner and the tour
// included), in memory, on the golden clock.
func newWholeEngine(t *testing.T) (conn.Conn, *clock.Fixed) {
	t.Helper()
	clk := clock.NewFixed(goldenTime)
	opts := core.Options{InMemory: true, Clock: clk, IDSeed: "golden"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}), tour.Subsystem())
	engine, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	return engine, clk
}

// startClient runs the console over c as engram does (offering the tour).
func startClient(t *testing.T, c conn.Conn) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, New(c, Options{StatusFade: time.Hour, OfferTour: true}),
		teatest.WithInitialTermSize(goldenWidth, goldenHeight))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm
}

// headerOf is the first line of the console's frame.
func headerOf(m *Model) string { return strings.SplitN(screenText(m.View()), "\n", 2)[0] }

// TestHeaderShowsOwnerOrAttachedPid: the header says where the engine runs
// when the connection can say: "attached to pid N" for a client of
// another engram, "owner" in process (never the pid, so that frames
// repeat), nothing when the connection cannot say.
func TestHeaderShowsOwnerOrAttachedPid(t *testing.T) {
	t.Parallel()
	t.Run("attached", func(t *testing.T) {
		engine, clk := newEngine(t)
		seedGoals(t, engine, clk)
		c := newClientConn(engine, conn.Where{PID: 4242})
		c.dataDir = "/home/ada/.local/share/engram"
		tm := start(t, c, 80, 24)
		tm.Type("3")
		waitFor(t, tm, "attached to pid 4242", "4 open items")
		m := finish(t, tm)
		if h := headerOf(m); !strings.Contains(h, "attached to pid 4242") || !strings.Contains(h, "agent local  llm offline") || strings.Contains(h, "owner") {
			t.Errorf("header %q: want the data directory, attached to pid 4242, the agent and the llm", h)
		}
		requireGoldenAt(t, strings.ReplaceAll(t.Name(), "/", "_"), m, 80, 24)
	})
	t.Run("owner", func(t *testing.T) {
		engine, _ := newEngine(t)
		tm := start(t, engine, 80, 24)
		waitFor(t, tm, "owner")
		m := finish(t, tm)
		h := headerOf(m)
		if !strings.Contains(h, "data in-memory  owner") || strings.Contains(h, "pid") {
			t.Errorf("header %q: want \"owner\", and no pid", h)
		}
	})
	t.Run("cannot say", func(t *testing.T) {
		engine, _ := newEngine(t)
		tm := start(t, struct{ conn.Conn }{engine}, 80, 24) // hides Where
		waitFor(t, tm, "agent local")
		m := finish(t, tm)
		if h := headerOf(m); strings.Contains(h, "owner") || strings.Contains(h, "pid") {
			t.Errorf("header %q: want nothing of where the engine runs", h)
		}
	})
}

// TestHeaderGivesWayLeastImportantFirst: at 80 columns a long data
// directory and model name give way before where the engine runs.
func TestHeaderGivesWayLeastImportantFirst(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	m := New(newClientConn(engine, conn.Where{PID: 4242}), Options{StatusFade: time.Hour})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.info.Store, m.info.DataDir = "badger", "/home/ada/projects/a-very-long-project-name/engram-data"
	m.info.Provider, m.info.Model = "anthropic", "claude-a-very-long-model-name-20990101"
	for _, tc := range []struct {
		width     int
		want, not []string
	}{
		{80, []string{"data …am-data  attached to pid 4242  agent local  llm anthropic · cla…"}, nil},
		{60, []string{"data …am-data  pid 4242  agent local  llm anthrop…"}, []string{"attached"}},
		{50, []string{"data …engram-data  pid 4242  agent local"}, []string{"llm"}},
	} {
		m.Update(tea.WindowSizeMsg{Width: tc.width, Height: 24})
		h := headerOf(m)
		if w := lineWidth(m.header()); w > tc.width {
			t.Errorf("at %d columns the header is %d wide: %q", tc.width, w, h)
		}
		for _, w := range tc.want {
			if !strings.Contains(h, w) {
				t.Errorf("at %d columns the header %q lacks %q", tc.width, h, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(h, w) {
				t.Errorf("at %d columns the header %q still has %q", tc.width, h, w)
			}
		}
	}
}

// ownerGone is the event a client connection sends once this process took
// over from the owner that went away.
func ownerGone() events.Event {
	return events.Event{Name: conn.EventOwnerChanged.Name(), Data: conn.OwnerChange{
		Where: conn.Where{Owner: true, PID: os.Getpid()}, PreviousPID: 4242,
		Message: "the owner (pid 4242) went away; this console owns the data directory now"}}
}

// changeBehindTheBack writes through the engine while no event reaches
// the console: a goal, a memory, a message.
func changeBehindTheBack(t *testing.T, engine conn.Conn) {
	t.Helper()
	do(t, engine, "cortex.create", "", `{"type": "goal", "id": "goal_lost", "fields": {"title": "Written while no owner ran", "priority": "high"}}`)
}

// everyPaneLoads is an action each pane runs to load what it shows.
var everyPaneLoads = paneLoads()

func paneLoads() []string {
	loads := []string{
		history.ActionRead.Name(), history.ActionStats.Name(), // Chat
		episodic.ActionThreadList.Name(), // Threads
		cortex.ActionActive.Name(),       // Goals
		memory.ActionStores.Name(),       // Memory
		core.ActionTraceList.Name(),      // Trace
		tour.ActionStatus.Name(),         // the tour's line
	}
	if plannerBuilt { // else the Plans tab loads nothing
		loads = append(loads, planner.ActionPlanList.Name())
	}
	return loads
}

// TestOwnerChangeReloadsEveryPaneAndSaysSo: once the owner went away and
// this console took over, the status line says so (not as an error), the
// header says "owner", and every pane loads again: a goal written while
// no event reached the console shows.
func TestOwnerChangeReloadsEveryPaneAndSaysSo(t *testing.T) {
	t.Parallel()
	engine, clk := newWholeEngine(t)
	seedGoals(t, engine, clk)
	c := newClientConn(engine, conn.Where{PID: 4242})
	c.quiet = true
	tm := startClient(t, c)
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]", "4 open items", "attached to pid 4242")
	c.waitAsked(t, everyPaneLoads...) // the first loads
	changeBehindTheBack(t, engine)
	c.send(t, ownerGone())
	waitFor(t, tm, "Written while no owner ran", "5 open items", "this console owns the data directory now")
	c.waitAsked(t, everyPaneLoads...)
	m := finish(t, tm)
	if h := headerOf(m); !strings.Contains(h, "owner") || strings.Contains(h, "attached") {
		t.Errorf("header %q: want owner", h)
	}
	if m.status.isError || m.status.text != "the owner (pid 4242) went away; this console owns the data directory now" {
		t.Errorf("status %q (error %v): want the connection's message, not as an error", m.status.text, m.status.isError)
	}
}

// TestGapEventReloads: a stream that resumed too late (engram.gap) has
// every pane load again, quietly: nothing in the status line.
func TestGapEventReloads(t *testing.T) {
	t.Parallel()
	engine, clk := newWholeEngine(t)
	seedGoals(t, engine, clk)
	c := newClientConn(engine, conn.Where{PID: 4242})
	c.quiet = true
	tm := startClient(t, c)
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]", "4 open items")
	c.waitAsked(t, everyPaneLoads...) // the first loads
	changeBehindTheBack(t, engine)
	c.send(t, events.Event{Name: wire.EventGap})
	waitFor(t, tm, "Written while no owner ran", "5 open items")
	c.waitAsked(t, everyPaneLoads...)
	m := finish(t, tm)
	if m.status.text != "" {
		t.Errorf("status %q: a gap reloads quietly", m.status.text)
	}
	if h := headerOf(m); !strings.Contains(h, "attached to pid 4242") {
		t.Errorf("header %q: a gap changes no owner", h)
	}
}

// TestUnavailableErrorKeepsTheConsoleRunning: a write in flight when the
// owner went away fails with Unavailable; the status line shows the
// connection's message whole (it says the write may or may not have
// committed: no kind before it to cut it short), and the console goes on:
// the next try works.
func TestUnavailableErrorKeepsTheConsoleRunning(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	c := newClientConn(engine, conn.Where{PID: 4242})
	c.failAction = cortex.ActionUpdate.Name()
	const msg = "the owner (pid 4242) went away while cortex.update ran: it may or may not have committed"
	c.fail <- errs.New(errs.Unavailable, "%s", msg)
	tm := start(t, c, goldenWidth, goldenHeight)
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]", "4 open items", "Ship v1")
	tm.Type("c") // complete Ship v1: only the status line says how that went
	waitFor(t, tm, msg)
	tm.Type("c") // again, once the connection found the next owner
	waitFor(t, tm, "Completed", "3 open items")
	m := finish(t, tm)
	if m.status.isError || !strings.HasPrefix(m.status.text, "Completed") {
		t.Errorf("status %q (error %v): want Ship v1 completed", m.status.text, m.status.isError)
	}
}
