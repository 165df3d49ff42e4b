package tui

import (
	"context"
	"encoding/json"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
)

// paneID names who asked for something, so that results reach the pane that
// asked and no other.
type paneID string

// pane is one tab of the console.
type pane interface {
	// ID names the pane, for routing the results of its requests to it.
	ID() paneID
	// Title is the tab's label.
	Title() string
	// Init returns the pane's first command (loading its data).
	Init() tea.Cmd
	// Update handles a message meant for this pane, or any engine event.
	Update(msg tea.Msg) tea.Cmd
	// View renders the pane in exactly its size.
	View() string
	// SetSize gives the pane its width and height; every pane gets every resize.
	SetSize(width, height int)
	// Focus and Blur tell the pane it became (or stopped being) the visible tab.
	Focus() tea.Cmd
	Blur()
	// Keys are the pane's key bindings that apply now, for the footer and
	// the ? help.
	Keys() []key.Binding
	// KeyMap is every key binding the pane has, in any state: the tests
	// hold the ? help and README.md's key table to it.
	KeyMap() []key.Binding
	// Capturing reports that a text input of the pane has the keyboard, so
	// global keys like q and 1-7 must go to it.
	Capturing() bool
}

// stopper is a pane with work of its own running (a plan run) that must
// stop when the console quits.
type stopper interface{ stop() }

// addressed is a message meant for one pane: the root model routes it there
// and nowhere else.
type addressed interface {
	addressee() paneID
	// failure is the request's error, shown in the status line; nil if none.
	failure() error
	// requestNumber is the asking pane's number for the request.
	requestNumber() int
}

// quietFailures is a pane that shows some failures itself, plainly (an
// item no longer shared with the viewer), so that the status line does not
// repeat them as errors.
type quietFailures interface {
	quietFailure(req int, err error) bool
}

// resultMsg is the outcome of a request: the action's result decoded into
// R inside the command (never in Update), or the error.
type resultMsg[R any] struct {
	pane paneID
	// req is the asking pane's number for the request, so that it can tell
	// the answer to its latest request from a stale one.
	req    int
	action string
	value  R
	err    error
}

func (m resultMsg[R]) addressee() paneID  { return m.pane }
func (m resultMsg[R]) failure() error     { return m.err }
func (m resultMsg[R]) requestNumber() int { return m.req }

// loader tracks one kind of request: the number of the latest (answers to
// earlier ones are stale), whether it is in flight, and whether something
// changed meanwhile, so that a burst of events costs one more load, not one
// per event.
type loader struct {
	req         int
	busy, dirty bool
}

// answer settles l with the answer to request req: latest says it answers
// l's latest request (any other is stale, to be dropped), again that
// something changed while it was in flight, so it must be loaded again.
func (l *loader) answer(req int) (latest, again bool) {
	if req != l.req {
		return false, false
	}
	l.busy = false
	again, l.dirty = l.dirty, false
	return true, again
}

// requests sends a pane's actions: every pane embeds one, for the
// connection and for numbering its requests, so that an answer reaches the
// pane that asked and a stale one can be told from the latest.
type requests struct {
	conn conn.Conn
	pane paneID
	seq  int // numbers every request
	// ctx is the console's: quitting cancels it, and with it every
	// request still running (nil until the root binds it: Background).
	ctx context.Context
}

// bind gives the pane's requests the console's context.
func (r *requests) bind(ctx context.Context) { r.ctx = ctx }

// context is what a request runs under.
func (r *requests) context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// ID names the pane that embeds r.
func (r *requests) ID() paneID { return r.pane }

// next numbers a new request for l (if any), making every earlier one stale.
func (r *requests) next(l *loader) int {
	r.seq++
	if l != nil {
		l.req, l.busy, l.dirty = r.seq, true, false
	}
	return r.seq
}

// request runs the action ref names off the UI goroutine, decodes its
// result into an R there, and answers with a resultMsg[R] numbered for l
// (nil: a request no loader tracks).
func request[A, R any](r *requests, l *loader, ref action.Ref[A, R], args A) tea.Cmd {
	return requestCtx(r.context(), r, l, ref, args)
}

// requestCtx is request under ctx, for actions the user may cancel.
func requestCtx[A, R any](ctx context.Context, r *requests, l *loader, ref action.Ref[A, R], args A) tea.Cmd {
	c, pane, req := r.conn, r.pane, r.next(l)
	return func() tea.Msg {
		v, err := conn.Call(ctx, c, ref, args)
		return resultMsg[R]{pane: pane, req: req, action: ref.Name(), value: v, err: err}
	}
}

// refresh reloads what l loads, unless a load is in flight: then it is
// redone once that one answers.
func (r *requests) refresh(l *loader, load func() tea.Cmd) tea.Cmd {
	if l.busy {
		l.dirty = true
		return nil
	}
	return load()
}

// rawResult is the undecoded result of an action run by name, for the
// palette alone: it shows whatever JSON an action returns, by design.
type rawResult = json.RawMessage
