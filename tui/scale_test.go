package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/episodic"
)

// manyThreads is n threads, most recently active first, a minute apart
// going back from the engine clock's time, with one newer than the clock
// and one long ago, so that every range of ago shows.
func manyThreads(now time.Time, n int) []*episodic.Thread {
	ts := make([]*episodic.Thread, n)
	for i := range ts {
		at := now.Add(-time.Duration(i) * 7 * time.Minute)
		switch i {
		case 0:
			at = now.Add(time.Hour) // another machine's clock ahead
		case n - 1:
			at = now.Add(-400 * 24 * time.Hour)
		}
		ts[i] = &episodic.Thread{ID: fmt.Sprintf("thr-%05d", i), Title: fmt.Sprintf("thread %d", i),
			Channels: []string{"web"}, Status: "active", TurnCount: i % 13, LastActivityAt: at}
	}
	return ts
}

// threadsPaneWith is a Threads pane 120x36 showing ts, as if thread.list had
// answered with them.
func threadsPaneWith(t *testing.T, ts []*episodic.Thread) *threadsPane {
	engine, _ := newEngine(t)
	st := DefaultStyles()
	p := newThreadsPane(engine, &st)
	p.SetSize(120, 36)
	p.loadList()
	p.Update(resultMsg[episodic.ListResult]{pane: threadsPaneID, req: p.list.load.req, value: episodic.ListResult{Threads: ts}})
	return p
}

// A frame of the Threads tab does the same work for 10,000 threads as for
// 100 (issue 17: 10,000 threads, p99 frame ≤ 16 ms): View must not go over
// every thread to size the columns.
func TestThreadsFrameDoesNotGrowWithTheList(t *testing.T) {
	engine, _ := newEngine(t)
	now := engine.Now()
	small := threadsPaneWith(t, manyThreads(now, 100))
	large := threadsPaneWith(t, manyThreads(now, 10_000))
	a := testing.AllocsPerRun(20, func() { _ = small.View() })
	b := testing.AllocsPerRun(20, func() { _ = large.View() })
	if b > a*1.2+20 {
		t.Errorf("View of 10,000 threads makes %.0f allocations, of 100 threads %.0f: the frame grows with the list", b, a)
	}
}

// The "last" column is as wide as the widest "… ago" of every thread, the
// ones out of view included, so that it does not change width as the list
// scrolls.
func TestThreadsLastColumnFitsEveryThread(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	now := engine.Now()
	for _, n := range []int{1, 2, 3, 9, 100, 1000} {
		ts := manyThreads(now, n)
		var l threadList
		l.setThreads(ts)
		for _, later := range []time.Duration{0, 30 * time.Second, 59 * time.Minute, 47 * time.Hour, 90 * 24 * time.Hour} {
			at := now.Add(later)
			want := 0
			for _, th := range ts {
				want = max(want, lineWidth(ago(at, th.LastActivityAt)))
			}
			if got := l.lastWidth(at); got != want {
				t.Errorf("%d threads, %s later: width %d, want %d", n, later, got, want)
			}
		}
	}
}

// countingConn is a connection that counts the engine.info calls that ask
// for the counts (which read every item of a large store).
type countingConn struct {
	conn.Conn
	counted atomic.Int32
}

func (c *countingConn) Info(ctx context.Context) (conn.Info, error) {
	c.counted.Add(1)
	return c.Conn.Info(ctx)
}

func (c *countingConn) InfoWith(ctx context.Context, args conn.InfoArgs) (conn.Info, error) {
	if args.Counts == nil || *args.Counts {
		c.counted.Add(1)
	}
	return c.Conn.(conn.InfoAsker).InfoWith(ctx, args)
}

func (c *countingConn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	if req.Action == core.ActionEngineInfo.Name() && !strings.Contains(string(req.Args), `"counts":false`) {
		c.counted.Add(1)
	}
	return c.Conn.Do(ctx, req)
}

// The console never asks engine.info for its counts, which read every key
// (seconds, and most of the store paged into memory, at a million items:
// issue 17's open to first frame ≤ 1 s and memory ≤ 600 MB); the tour
// still offers itself on an empty store, from engine.info's empty.
func TestConsoleNeverAsksForCounts(t *testing.T) {
	t.Parallel()
	engine := newTourEngine(t)
	c := &countingConn{Conn: engine}
	m := New(c, Options{StatusFade: time.Hour, OfferTour: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	if view := m.View(); !strings.Contains(view, "engram") {
		t.Fatalf("no header in the first frame:\n%s", view)
	}
	if n := c.counted.Load(); n != 0 {
		t.Fatalf("the first frame asked for the counts %d times", n)
	}
	m.cancel()
	tm := teatest.NewTestModel(t, New(c, Options{StatusFade: time.Hour, OfferTour: true}), teatest.WithInitialTermSize(120, 36))
	t.Cleanup(func() { _ = tm.Quit() })
	waitFor(t, tm, offer)
	if n := c.counted.Load(); n != 0 {
		t.Fatalf("the console asked for the counts %d times", n)
	}
}
