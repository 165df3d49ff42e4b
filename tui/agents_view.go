package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/clients"
)

// agentColumn is one column of the clients table: a table column with what
// its cell says of a client, and how that looks when not selected.
type agentColumn struct {
	tableColumn
	cell  func(c *clients.Client) string
	style func(c *clients.Client, text string) string
}

// Of the optional columns, the ones that go first when the table is too
// wide, and the least the last (flexible) column must keep.
var agentDropOrder = []string{"last error", "transport", "since", "agent"}

const (
	minLastError = 20
	minLastCall  = 16
)

// clientLabel is how the table names a client: what it said of itself.
func clientLabel(c *clients.Client) string {
	name := oneLine(c.Name)
	if name == "" {
		name = "session " + oneLine(c.Session)
	}
	if c.Version != "" {
		name += " " + oneLine(c.Version)
	}
	return name
}

// lastCallText is the tool a client called last and how long ago.
func lastCallText(c *clients.Client, now time.Time) string {
	if c.LastCall == "" || c.LastAt == nil {
		return glyphNone
	}
	return oneLine(c.LastCall) + " " + ago(now, *c.LastAt)
}

// sinceTime is when a client connected, or when it went.
func sinceTime(c *clients.Client, now time.Time) string {
	if !c.Connected && c.GoneAt != nil {
		return clockTime(*c.GoneAt, now)
	}
	return clockTime(c.Since, now)
}

// agentColumns chooses the columns that fit the width; the last one takes
// what is left.
func (p *agentsPane) agentColumns(now time.Time) ([]agentColumn, int) {
	s := p.styles
	width := func(title string, most int, cell func(c *clients.Client) string) int {
		w := lineWidth(title)
		for i := range p.clients {
			w = max(w, min(lineWidth(cell(&p.clients[i])), most))
		}
		return w + 2
	}
	plain := func(_ *clients.Client, t string) string { return t }
	muted := func(_ *clients.Client, t string) string { return s.Muted.Render(t) }
	col := func(title string, most int, right bool, cell func(c *clients.Client) string, style func(c *clients.Client, t string) string) agentColumn {
		return agentColumn{tableColumn{title: title, width: width(title, most, cell), right: right}, cell, style}
	}
	state := func(c *clients.Client) string {
		if c.Connected {
			return "connected"
		}
		return "gone"
	}
	anyError := slices.ContainsFunc(p.clients, func(c clients.Client) bool { return c.LastError != "" })
	cols := []agentColumn{
		col("client", 26, false, clientLabel, plain),
		col("agent", 14, false, func(c *clients.Client) string { return oneLine(c.Agent) }, plain),
		col("transport", 8, false, func(c *clients.Client) string { return oneLine(c.Transport) }, muted),
		col("state", 9, false, state, func(c *clients.Client, t string) string {
			if c.Connected {
				return s.OK.Render(t)
			}
			return s.Muted.Render(t)
		}),
		col("since", 16, false, func(c *clients.Client) string { return sinceTime(c, now) }, muted),
		col("calls", 6, true, func(c *clients.Client) string { return fmt.Sprint(c.Calls) }, plain),
		col("errors", 6, true, func(c *clients.Client) string { return fmt.Sprint(c.Errors) }, func(c *clients.Client, t string) string {
			if c.Errors > 0 {
				return s.Failed.Render(t)
			}
			return t
		}),
		col("last call", 32, false, func(c *clients.Client) string { return lastCallText(c, now) }, plain),
	}
	if anyError {
		cols = append(cols, col("last error", 0, false, func(c *clients.Client) string { return oneLine(c.LastError) },
			func(_ *clients.Client, t string) string { return s.Failed.Render(t) }))
	}
	fixed := func() int {
		n := 3 // the cursor
		for _, c := range cols[:len(cols)-1] {
			n += c.width
		}
		return n
	}
	least := func() int {
		if cols[len(cols)-1].title == "last error" {
			return minLastError
		}
		return minLastCall
	}
	for _, drop := range agentDropOrder {
		if p.width-fixed() >= least() {
			break
		}
		cols = slices.DeleteFunc(cols, func(c agentColumn) bool { return c.title == drop })
	}
	// A long client name gives way to the last call, down to a name's
	// first 14 columns: the details under the list show it whole.
	last := &cols[len(cols)-1]
	if want := width(last.title, 32, last.cell) - 1; last.title == "last call" && p.width-fixed() < want && cols[0].title == "client" {
		cols[0].width = max(cols[0].width-(want-(p.width-fixed())), min(cols[0].width, 16))
	}
	return cols, max(p.width-fixed(), 8)
}

// tableLines is the table's header and the clients in view, the selected
// one marked, the last line saying how many more there are below.
func (p *agentsPane) tableLines(now time.Time) []string {
	s := p.styles
	cols, lastW := p.agentColumns(now)
	header := make([]tableColumn, len(cols))
	for i, c := range cols {
		header[i] = c.tableColumn
	}
	header[len(header)-1].width = lastW
	cell := func(i int, c agentColumn, text string) string {
		if i == len(cols)-1 { // the last column: one cell of margin, not two
			return fitLine(truncateTo(text, max(lastW-1, 1)), lastW)
		}
		return tableCell(c.tableColumn, text)
	}
	lines := []string{s.Muted.Render(tableHeader(header))}
	start, end := p.list.visible()
	for r := start; r < end; r++ {
		c := &p.clients[r]
		selected := r == p.list.Index()
		var b strings.Builder
		if selected {
			b.WriteString(" " + s.Selected.Render(glyphCursor+" "))
		} else {
			b.WriteString("   ")
		}
		for i, col := range cols {
			text := cell(i, col, col.cell(c))
			if selected {
				b.WriteString(s.Selected.Render(text))
			} else {
				b.WriteString(col.style(c, text))
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	if more := len(p.clients) - end; more > 0 {
		lines = append(lines, s.Muted.Render(fmt.Sprintf("   %s %d more (↓, pgdn)", glyphDown, more)))
	}
	return lines
}

// detailLines are the selected client's details: who it is, how it is
// served, its calls, and its last error in full.
func (p *agentsPane) detailLines(now time.Time) []string {
	if len(p.clients) == 0 {
		return nil
	}
	s := p.styles
	c := &p.clients[p.list.Index()]
	via := oneLine(c.Via)
	if c.Transport != "" {
		via += " over " + oneLine(c.Transport)
	}
	lines := []string{
		" " + s.Emphasis.Render(clientLabel(c)) + s.Muted.Render(glyphSep+"agent ") + oneLine(c.Agent) + s.Muted.Render(glyphSep+via),
	}
	served := "served by the owner itself"
	if c.PID != 0 {
		served = fmt.Sprintf("served by engram mcp, pid %d", c.PID)
	}
	lines = append(lines, "   "+s.Muted.Render("session ")+oneLine(c.Session)+s.Muted.Render(glyphSep+served))
	state := s.OK.Render("connected") + s.Muted.Render(" since "+formatTime(c.Since)+" ("+ago(now, c.Since)+")")
	if !c.Connected {
		state = s.Muted.Render("gone")
		if c.GoneAt != nil {
			state += s.Muted.Render(" at " + formatTime(*c.GoneAt) + " (" + ago(now, *c.GoneAt) + ")")
		}
		state += s.Muted.Render(", first seen " + formatTime(c.Since))
	}
	lines = append(lines, "   "+state)
	calls := plural(c.Calls, "call", "calls")
	if c.Errors > 0 {
		calls += ", " + s.Failed.Render(fmt.Sprintf("%d failed", c.Errors))
	}
	if c.LastCall != "" && c.LastAt != nil {
		calls += s.Muted.Render(glyphSep+"last ") + oneLine(c.LastCall) + s.Muted.Render(" at "+clockTime(*c.LastAt, now)+" ("+ago(now, *c.LastAt)+")")
	}
	lines = append(lines, "   "+calls)
	for i := range lines {
		lines[i] = truncateTo(lines[i], p.width)
	}
	if c.LastError != "" {
		wrapped := wrapText("last error: "+c.LastError, max(p.width-4, 10), "   ")
		if len(wrapped) > 2 {
			wrapped = wrapped[:2]
			wrapped[1] = truncateTo(wrapped[1]+" "+glyphEllipsis, p.width) // the rest does not fit
		}
		lines = append(lines, styleLines(s.Failed, wrapped)...)
	}
	return lines
}

// emptyLines say that no agent has called since the owner started (its
// list lives in memory: an owner that took the directory over starts it
// empty, whoever called before), and how to connect one.
func (p *agentsPane) emptyLines() []string {
	s := p.styles
	if p.private {
		text := "No agent client: this console keeps its data in memory (--in-memory) and serves nothing, so no agent can connect. To watch an agent, open the console on a data directory (engram --data DIR) and point its MCP client at engram mcp --data DIR."
		return styleLines(s.Muted, wrapText(text, max(p.width-2, 10), " "))
	}
	none := "No agent client has called since this data directory's owner started."
	how := "The list lives in the owner's memory, not on disk. An agent connects through MCP: point its MCP client at `engram mcp` (a stdio server; README's MCP section has client configs). Its calls then show here live: which client, what it called, how it went."
	lines := styleLines(s.Muted, wrapText(none, max(p.width-2, 10), " "))
	return append(lines, styleLines(s.Muted, wrapText(how, max(p.width-2, 10), " "))...)
}

func (p *agentsPane) View() string {
	s := p.styles
	now := p.conn.Now()
	connected := 0
	for _, c := range p.clients {
		if c.Connected {
			connected++
		}
	}
	facts := fmt.Sprintf("%d connected", connected)
	if gone := len(p.clients) - connected; gone > 0 {
		facts += fmt.Sprintf("%s%d gone", glyphSep, gone)
	}
	if p.own {
		facts += glyphSep + "agent " + oneLine(p.conn.Agent()) + "'s clients only (the owner's agent sees every agent's)"
	}
	top := " " + s.Emphasis.Render("Agents") + s.Muted.Render(glyphSep+facts)
	var body []string
	switch {
	case p.loadErr != "":
		body = []string{s.Failed.Render(" Could not list the agent clients: " + oneLine(p.loadErr))}
	case !p.loaded:
		body = []string{s.Muted.Render(" Loading…")}
	case len(p.clients) == 0:
		body = p.emptyLines()
	default:
		body = p.tableLines(now)
		if d := p.detailLines(now); len(d) > 0 {
			body = append(body, s.Rule.Render(" "+strings.Repeat(glyphRule, max(p.width-2, 1))))
			body = append(body, d...)
		}
	}
	return fit(joinLines(append([]string{truncateTo(top, p.width)}, body...)), p.width, p.height)
}
