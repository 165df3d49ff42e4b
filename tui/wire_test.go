package tui

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// wireConn is a connection that shares no memory with the engine behind
// it: every result, error, event and the info cross as JSON, as they will
// over a socket. The console must work through it exactly as in process.
type wireConn struct {
	t      *testing.T
	engine conn.Conn
}

func (w wireConn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	res, err := w.engine.Do(ctx, req)
	if err != nil {
		// Only what JSON carries: the kind, the message, the details as
		// JSON values.
		e := errs.As(err)
		details, merr := json.Marshal(e.Details)
		if merr != nil {
			w.t.Errorf("%s: error details do not encode: %v", req.Action, merr)
		}
		out := errs.New(e.Kind, "%s", e.Message)
		var plain map[string]any
		if jerr := json.Unmarshal(details, &plain); jerr != nil {
			w.t.Errorf("%s: error details do not decode: %v", req.Action, jerr)
		}
		for k, v := range plain {
			out = out.With(k, v)
		}
		return nil, out
	}
	return append(json.RawMessage(nil), res...), nil
}

func (w wireConn) Subscribe(ctx context.Context, kinds ...string) <-chan events.Event {
	return w.SubscribeAs(ctx, w.engine.Agent(), kinds...)
}

func (w wireConn) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	in := w.engine.SubscribeAs(ctx, principal, kinds...)
	out := make(chan events.Event, 64)
	go func() {
		defer close(out)
		for ev := range in {
			b, err := json.Marshal(ev)
			if err != nil {
				w.t.Errorf("event %s does not encode: %v", ev.Name, err)
				continue
			}
			var back events.Event
			if err := json.Unmarshal(b, &back); err != nil {
				w.t.Errorf("event %s does not decode: %v", ev.Name, err)
				continue
			}
			select {
			case out <- back:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (w wireConn) Info(ctx context.Context) (conn.Info, error) {
	info, err := w.engine.Info(ctx)
	if err != nil {
		return info, err
	}
	b, err := json.Marshal(info)
	if err != nil {
		return conn.Info{}, err
	}
	var back conn.Info
	return back, json.Unmarshal(b, &back)
}

// Where is the engine's, a value that crosses as it is: the console shows
// the same header through the wire as in process.
func (w wireConn) Where() conn.Where { return w.engine.(conn.Locator).Where() }

func (w wireConn) CheckAction(name string) error { return w.engine.CheckAction(name) }
func (w wireConn) Agent() string                 { return w.engine.Agent() }
func (w wireConn) Now() time.Time                { return w.engine.Now() }

// TestConsoleWorksOverAConnectionThatSharesNoMemory drives the Goals tab
// through a connection where everything crosses as JSON: the same frame as
// in process, and live updates from events that crossed as JSON too.
func TestConsoleWorksOverAConnectionThatSharesNoMemory(t *testing.T) {
	t.Parallel()
	t.Run("the same frames", func(t *testing.T) {
		engine, clk := newEngine(t)
		seedGoals(t, engine, clk)
		tm := start(t, wireConn{t: t, engine: engine}, goldenWidth, goldenHeight)
		tm.Type("3")
		waitFor(t, tm, "[3 Goals]", "4 open items", "Make recall fast")
		openLineage(t, tm)
		keys(tm, tea.KeyUp)
		waitFor(t, tm, "v3 update · 2025-11-05 10:06:00", "turn turn-8", "+ critical")
		requireGoldenNamed(t, "TestGoldenGoalsLineage", finish(t, tm))
	})
	t.Run("live updates", func(t *testing.T) {
		engine, clk := newEngine(t)
		seedGoals(t, engine, clk)
		tm := start(t, wireConn{t: t, engine: engine}, goldenWidth, goldenHeight)
		tm.Type("3")
		waitFor(t, tm, "[3 Goals]", "4 open items", "Make recall fast")
		do(t, engine, "cortex.update", "", `{"id": "goal_launch", "updates": {"title": "Ship v1 over the wire"}}`)
		waitFor(t, tm, "Ship v1 over the wire")
		finish(t, tm)
	})
}

// stallingConn holds one action until its request is cancelled, and says
// when that happened.
type stallingConn struct {
	conn.Conn
	action    string
	cancelled chan struct{}
}

func (s stallingConn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	if req.Action == s.action {
		<-ctx.Done()
		close(s.cancelled)
		return nil, ctx.Err()
	}
	return s.Conn.Do(ctx, req)
}

// TestQuittingCancelsRequestsInFlight: a pane's request still running when
// the console quits is cancelled, so the engine can close at once instead
// of waiting (for a slow model, say).
func TestQuittingCancelsRequestsInFlight(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	c := stallingConn{Conn: engine, action: cortex.ActionActive.Name(), cancelled: make(chan struct{})}
	tm := start(t, c, goldenWidth, goldenHeight)
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]")
	tm.Type("q")
	final(t, tm)
	select {
	case <-c.cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the Goals tab's load was not cancelled when the console quit")
	}
}
