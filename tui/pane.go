package tui

import (
	"context"
	"encoding/json"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
)

// paneID names who asked for something, so that results reach the pane that
// asked and no other.
type paneID string

// pane is one tab of the console.
type pane interface {
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
	// Keys are the pane's key bindings, for the footer.
	Keys() []key.Binding
	// Capturing reports that a text input of the pane has the keyboard, so
	// global keys like q and 1-6 must go to it.
	Capturing() bool
}

// actionResultMsg is the outcome of an action a pane ran.
type actionResultMsg struct {
	pane paneID
	// req is the asking pane's number for the request, so that it can tell
	// the answer to its latest request from a stale one.
	req    int
	action string
	result json.RawMessage
	err    error
}

// runAction runs an action off the UI goroutine and reports to the pane.
func runAction(engine *core.Engine, from paneID, req int, name string, args json.RawMessage) tea.Cmd {
	return runActionCtx(context.Background(), engine, from, req, name, args)
}

// runActionCtx is runAction under ctx, for actions the user may cancel.
func runActionCtx(ctx context.Context, engine *core.Engine, from paneID, req int, name string, args json.RawMessage) tea.Cmd {
	return func() tea.Msg {
		res, err := engine.Do(ctx, core.Request{Action: name, Args: args})
		return actionResultMsg{pane: from, req: req, action: name, result: res, err: err}
	}
}

// loader tracks one kind of request: the number of the latest (answers to
// earlier ones are stale), whether it is in flight, and whether something
// changed meanwhile, so that a burst of events costs one more load, not one
// per event.
type loader struct {
	req         int
	busy, dirty bool
}

// requests sends a pane's actions: every pane embeds one, for the engine
// and for numbering its requests, so that an answer reaches the pane that
// asked and a stale one can be told from the latest.
type requests struct {
	engine *core.Engine
	pane   paneID
	seq    int // numbers every request
}

// run starts a request for l (if any), making every earlier one stale.
func (r *requests) run(l *loader, name string, args any) tea.Cmd {
	raw, _ := json.Marshal(args)
	r.seq++
	if l != nil {
		l.req, l.busy, l.dirty = r.seq, true, false
	}
	return runAction(r.engine, r.pane, r.seq, name, raw)
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
