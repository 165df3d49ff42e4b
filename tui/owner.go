package tui

import (
	"fmt"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

// reloader is a pane that can load again everything it shows. The root
// asks every pane when the console missed events: the owner of the data
// directory changed (what was published while none ran is lost), or the
// event stream resumed too late to replay what it missed.
type reloader interface{ reloadAll() tea.Cmd }

// infoMsg is engine.info's answer, asked again once the owner changed:
// the new owner may run another model.
type infoMsg struct {
	info conn.Info
	err  error
}

// missedEvents handles the events that say others were missed: the owner
// changed (the status line says so, plainly, and the header follows) or
// the stream had a gap (quietly). Every pane then reloads; ok is false
// for any other event.
func (m *Model) missedEvents(ev events.Event) (cmd tea.Cmd, ok bool) {
	if c, ok := conn.EventOwnerChanged.Of(ev); ok {
		w := c.Where
		m.where = &w
		return tea.Batch(m.status.set(ownerChangeText(c), false), m.reloadAll(), m.reloadInfo()), true
	}
	if ev.Name == wire.EventGap {
		return m.reloadAll(), true
	}
	return nil, false
}

// ownerChangeText is what the status line says of an owner change: the
// connection's message, or one made from its facts when it has none.
func ownerChangeText(c conn.OwnerChange) string {
	if c.Message != "" {
		return c.Message
	}
	gone := "the owner"
	if c.PreviousPID != 0 {
		gone = fmt.Sprintf("the owner (pid %d)", c.PreviousPID)
	}
	if c.Owner {
		return gone + " went away; this console owns the data directory now"
	}
	return fmt.Sprintf("%s went away; attached to pid %d now", gone, c.PID)
}

// reloadAll has every pane, and the tour's line, load again what it shows.
func (m *Model) reloadAll() tea.Cmd {
	var cmds []tea.Cmd
	if m.tour.on {
		cmds = append(cmds, m.tour.refresh())
	}
	for _, p := range m.panes {
		if r, ok := p.(reloader); ok {
			cmds = append(cmds, r.reloadAll())
		}
	}
	return tea.Batch(cmds...)
}

// reloadInfo asks for engine.info again, for the header (without the
// counts, as at start: see firstInfo).
func (m *Model) reloadInfo() tea.Cmd {
	c, ctx := m.conn, m.ctx
	return func() tea.Msg {
		info, err := firstInfo(ctx, c)
		return infoMsg{info: info, err: err}
	}
}

// whereLabel is the header's part that says where the engine runs: "owner"
// or "attached to pid N" (short: "pid N"), or nothing when the connection
// cannot say.
func (m *Model) whereLabel(short bool) string {
	if m.where == nil {
		return ""
	}
	s := &m.styles
	if m.where.Owner {
		return s.HeaderInfo.Render("  owner")
	}
	label := "  attached to pid "
	if short {
		label = "  pid "
	}
	return s.HeaderLabel.Render(label) + s.HeaderInfo.Render(strconv.Itoa(m.where.PID))
}
