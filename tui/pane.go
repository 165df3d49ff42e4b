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

// placeholder is a tab whose subsystem has not landed yet: it says in one
// line what it will show.
type placeholder struct {
	title, promise string
	styles         *Styles
	width, height  int
}

func (p *placeholder) Title() string          { return p.title }
func (p *placeholder) Init() tea.Cmd          { return nil }
func (p *placeholder) Update(tea.Msg) tea.Cmd { return nil }
func (p *placeholder) SetSize(w, h int)       { p.width, p.height = w, h }
func (p *placeholder) Focus() tea.Cmd         { return nil }
func (p *placeholder) Blur()                  {}
func (p *placeholder) Keys() []key.Binding    { return nil }
func (p *placeholder) Capturing() bool        { return false }
func (p *placeholder) View() string {
	text := wrap(p.styles.Emphasis.Render(p.title)+p.styles.Muted.Render(" — ")+p.promise, p.width-2, " ") +
		"\n\n" + wrap(p.styles.Muted.Render("Not built yet. Meanwhile press : to run any action, e.g. :engine.info"), p.width-2, " ")
	return fit("\n"+text, p.width, p.height)
}
