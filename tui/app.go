// Package tui is engram's interactive console: a Bubble Tea app with one root
// model, one pane per tab, a command palette that runs any action, and a
// live view of the engine's events. It does no I/O in Update or View: work
// runs in commands whose results come back as messages naming the pane that
// asked.
package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// Options tune the console.
type Options struct {
	// StatusFade is how long a status message stays bright before it fades
	// (and as long again before it goes). Zero means 4 seconds.
	StatusFade time.Duration
	// EvictionFade is how long the Chat tab highlights the last eviction
	// when one happens. Zero means StatusFade.
	EvictionFade time.Duration
	// PaletteHistory is the file that keeps the palette's commands across
	// runs (↑ recalls them). Empty means none: the history lasts as long as
	// the console.
	PaletteHistory string
	// OfferTour offers the tour (T) on a store with nothing in it, and marks
	// every tab while its sample data is there. engram sets it; tests about
	// other things leave it off, so that their frames do not change.
	OfferTour bool
}

// tab indexes the panes, in the order of their number keys.
type tab int

const (
	tabChat tab = iota
	tabThreads
	tabGoals
	tabPlans
	tabMemory
	tabTrace
	tabAgents
	tabCount
)

// Model is the root model of the console.
type Model struct {
	conn   conn.Conn
	info   conn.Info   // engine.info when the console started: the header's facts
	where  *conn.Where // a conn.Locator's answer, for the header (nil: it cannot say)
	styles Styles
	keys   globalKeys
	help   help.Model

	panes       [tabCount]pane
	active      tab
	palette     *palette
	paletteOpen bool
	status      status
	tour        *tourGuide

	events <-chan events.Event
	ctx    context.Context // the console's: quitting cancels it
	cancel context.CancelFunc

	width, height int
	footerRows    int // the footer's height at the last layout
	guideRows     int // the tour's line over the body at the last layout: 0 or 1
	quitting      bool
	// quitAsk asks before quitting stops work under way (a plan's run).
	quitAsk confirm[struct{}]
}

// quitAsker is a pane whose work under way quitting would stop: its
// question ("" when nothing runs) is asked, y/n, before quitting.
type quitAsker interface{ quitQuestion() string }

// New builds the console over a connection to an engine. It asks the
// engine for its info once, here: the header shows it.
func New(engine conn.Conn, opts Options) *Model {
	if opts.StatusFade <= 0 {
		opts.StatusFade = 4 * time.Second
	}
	if opts.EvictionFade <= 0 {
		opts.EvictionFade = opts.StatusFade
	}
	m := &Model{conn: engine, styles: DefaultStyles(), keys: newGlobalKeys(), help: help.New(), quitAsk: confirm[struct{}]{Yes: "quit"}}
	info, err := firstInfo(context.Background(), engine)
	if err != nil {
		// The header then says less; the status line says why.
		info = conn.Info{Agent: engine.Agent(), Provider: "?", Store: "?"}
		m.status.text, m.status.isError = "engine.info: "+errs.As(err).Message, true
	}
	m.info = info
	if l, ok := engine.(conn.Locator); ok {
		w := l.Where()
		m.where = &w
	}
	if info.ReadOnly != "" {
		// Say it before the first refused write does.
		m.status.text, m.status.isError = "Read-only: "+info.ReadOnly, true
	}
	m.status.fade = opts.StatusFade
	st := &m.styles
	m.panes = [tabCount]pane{
		tabChat:    newChatPane(engine, st, opts.EvictionFade, info.Provider != "offline"),
		tabThreads: newThreadsPane(engine, st),
		tabGoals:   newGoalsPane(engine, st),
		tabPlans:   newPlansPane(engine, st, info.Provider == "offline"),
		tabMemory:  newMemoryPane(engine, st),
		tabTrace:   newTracePane(engine, st),
		tabAgents:  newAgentsPane(engine, st),
	}
	// A console in memory serves nothing: no agent client can reach it.
	m.panes[tabAgents].(*agentsPane).private = info.StoreLabel() == "in-memory"
	m.palette = newPalette(engine, st, opts.PaletteHistory)
	m.tour = newTourGuide(engine, info, opts.OfferTour)
	ctx, cancel := context.WithCancel(context.Background())
	m.ctx, m.cancel = ctx, cancel
	m.tour.bind(ctx)
	// Quitting cancels whatever the panes still have running, so that the
	// engine closes promptly rather than waiting for a slow model.
	for _, p := range m.panes {
		if b, ok := p.(interface{ bind(context.Context) }); ok {
			b.bind(ctx)
		}
	}
	m.events = engine.Subscribe(ctx)
	return m
}

// firstInfo is engine.info for the header, without the counts: they read
// every item, mutation and trace entry, seconds on a store of a million,
// and the first frame waits for this (issue 17: ≤ 1 s). The tour needs
// only Info.Empty. A connection that cannot leave them out
// (conn.InfoAsker) is asked for everything.
func firstInfo(ctx context.Context, c conn.Conn) (conn.Info, error) {
	if a, ok := c.(conn.InfoAsker); ok {
		no := false
		return a.InfoWith(ctx, conn.InfoArgs{Counts: &no})
	}
	return c.Info(ctx)
}

// eventMsg carries one engine event into Update.
type eventMsg events.Event

// statusMsg asks for a message in the status line (a pane reporting what
// its action did; failures come through the resultMsg of the request).
type statusMsg struct {
	text    string
	isError bool
}

// waitForEvent is the subscription command, re-issued after each event.
func waitForEvent(ch <-chan events.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return nil
		}
		return eventMsg(ev)
	}
}

// Init loads every pane and starts listening to the engine.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{waitForEvent(m.events), m.tour.init()}
	for _, p := range m.panes {
		cmds = append(cmds, p.Init())
	}
	return tea.Batch(cmds...)
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if size, ok := msg.(tea.WindowSizeMsg); ok {
		m.width, m.height = size.Width, size.Height
		m.layout()
		return m, nil
	}
	cmd := m.update(msg)
	// The footer grows and shrinks with the keys that apply (full help, a
	// pane's input taking the keyboard, the palette): the body gets what is
	// left, so every change of the footer's height re-lays the panes out.
	if lineCount(m.footer()) != m.footerRows || m.guideLines() != m.guideRows {
		m.layout()
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case eventMsg:
		if cmd, ok := m.missedEvents(events.Event(msg)); ok {
			return tea.Batch(cmd, waitForEvent(m.events))
		}
		cmd, _ := m.tour.update(events.Event(msg))
		cmds := []tea.Cmd{cmd}
		for _, p := range m.panes {
			cmds = append(cmds, p.Update(events.Event(msg)))
		}
		return tea.Batch(append(cmds, waitForEvent(m.events))...)
	case statusMsg:
		return m.status.set(msg.text, msg.isError)
	case infoMsg:
		if msg.err == nil {
			m.info = msg.info
		}
		return nil
	case statusFadeMsg:
		m.status.advance(msg)
		return m.status.next(msg)
	case chatFadeMsg:
		return m.panes[tabChat].Update(msg) // whichever tab shows
	case addressed:
		return m.routeResult(msg)
	case tea.KeyMsg:
		return m.handleKey(msg)
	}
	// Anything else (cursor blinks and the like) goes to whatever has focus.
	if m.paletteOpen {
		cmd, _ := m.palette.update(msg)
		return cmd
	}
	return m.panes[m.active].Update(msg)
}

// routeResult hands an action's outcome to the pane that asked, and shows
// failures in the status line.
func (m *Model) routeResult(msg addressed) tea.Cmd {
	var cmds []tea.Cmd
	if err := msg.failure(); err != nil && !m.quietFailure(msg) {
		e := errs.As(err)
		text := fmt.Sprintf("%s: %s", e.Kind, e.Message)
		if e.Kind == errs.Unavailable {
			// The connection's message says what happened (the owner went
			// away while the action ran: it may or may not have
			// committed); it needs the whole line, not a kind before it.
			text = e.Message
		}
		cmds = append(cmds, m.status.set(text, true))
	}
	if msg.addressee() == palettePaneID {
		cmd, _ := m.palette.update(msg)
		return tea.Batch(append(cmds, cmd)...)
	}
	if msg.addressee() == tourPaneID {
		cmd, show := m.tour.update(msg)
		cmds = append(cmds, cmd)
		if show != "" {
			cmds = append(cmds, m.panes[tabChat].Update(chatShowMsg{conv: show}))
		}
		return tea.Batch(cmds...)
	}
	for _, p := range m.panes {
		if p.ID() == msg.addressee() {
			cmds = append(cmds, p.Update(msg))
		}
	}
	return tea.Batch(cmds...)
}

// quietFailure reports a failure the asking pane shows itself.
func (m *Model) quietFailure(msg addressed) bool {
	for _, p := range m.panes {
		if q, ok := p.(quietFailures); ok && p.ID() == msg.addressee() {
			return q.quietFailure(msg.requestNumber(), msg.failure())
		}
	}
	return false
}

func (m *Model) handleKey(msg tea.KeyMsg) tea.Cmd {
	if m.quitAsk.Active() {
		if key.Matches(msg, m.keys.ForceQuit) {
			return m.quit() // ctrl+c twice: quit at once
		}
		switch ans, _ := m.quitAsk.handleKey(msg); ans {
		case answerYes:
			return m.quit()
		case answerNo, answerCancel:
			return m.status.set("Still here: nothing was stopped.", false)
		}
		return nil
	}
	if key.Matches(msg, m.keys.ForceQuit) {
		return m.askOrQuit()
	}
	if m.paletteOpen {
		cmd, closed := m.palette.update(msg)
		if closed {
			m.paletteOpen = false
			// The pane shows again: it may want to catch up with what the
			// palette did (a change no event reports).
			return tea.Batch(cmd, m.panes[m.active].Focus())
		}
		return cmd
	}
	if m.tour.confirm.Active() {
		return m.tour.confirmKey(msg)
	}
	current := m.panes[m.active]
	if current.Capturing() {
		return current.Update(msg)
	}
	if key.Matches(msg, m.tour.key) {
		return m.tour.press()
	}
	for t, b := range m.keys.Tab {
		if key.Matches(msg, b) {
			return m.switchTo(tab(t))
		}
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return m.askOrQuit()
	case key.Matches(msg, m.keys.Palette):
		m.paletteOpen = true
		return m.palette.open()
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
		return nil
	case key.Matches(msg, m.keys.NextTab):
		return m.switchTo((m.active + 1) % tabCount)
	case key.Matches(msg, m.keys.PrevTab):
		return m.switchTo((m.active + tabCount - 1) % tabCount)
	}
	return current.Update(msg)
}

func (m *Model) switchTo(t tab) tea.Cmd {
	if t == m.active {
		return nil
	}
	m.panes[m.active].Blur()
	m.active = t
	return m.panes[t].Focus()
}

// askOrQuit quits, unless a pane has work under way that quitting would
// stop: then it asks first (issue 14: q mid-run cancelled the plan unasked).
func (m *Model) askOrQuit() tea.Cmd {
	for _, p := range m.panes {
		if a, ok := p.(quitAsker); ok {
			if q := a.quitQuestion(); q != "" {
				m.quitAsk.open(q, struct{}{})
				return nil
			}
		}
	}
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	m.palette.cancelRunning()
	for _, p := range m.panes {
		if s, ok := p.(stopper); ok {
			s.stop() // plan runs it started stop with it
		}
	}
	m.cancel()
	return tea.Quit
}

// Fixed rows: header, tabs, rule, status line; the footer's height varies.
const chromeRows = 4

// layout gives every pane (and the palette) the body's size.
func (m *Model) layout() {
	m.help.Width = max(m.width-1, 1) // the footer is indented by one column, like the rest
	m.footerRows = lineCount(m.footer())
	m.guideRows = m.guideLines()
	bodyHeight := max(m.height-chromeRows-m.footerRows-m.guideRows, 1)
	for _, p := range m.panes {
		p.SetSize(m.width, bodyHeight)
	}
	m.palette.setSize(m.width, bodyHeight)
}

func (m *Model) footer() string {
	keys := helpKeys{global: m.keys, tour: m.tour.key, width: m.help.Width}
	if m.help.ShowAll {
		keys.global.Help = withHelp(keys.global.Help, "?", "fewer keys")
	}
	switch {
	case m.quitAsk.Active():
		keys.pane, keys.only = m.quitAsk.Keys(), true
	case m.tour.confirm.Active():
		keys.pane, keys.only = m.tour.confirm.Keys(), true
	case m.paletteOpen:
		keys.pane, keys.only = m.palette.keyHelp(), true
	default:
		current := m.panes[m.active]
		keys.pane, keys.only = current.Keys(), current.Capturing()
	}
	lines := strings.Split(m.help.View(keys), "\n")
	for i, l := range lines {
		lines[i] = " " + l
	}
	return joinLines(lines)
}

// View renders the whole screen.
func (m *Model) View() string {
	if m.width == 0 {
		return "starting engram…"
	}
	footer := m.footer()
	guide := m.tour.line(&m.styles, m.width)
	bodyHeight := max(m.height-chromeRows-lineCount(footer)-m.guideLines(), 1)
	var body string
	if m.paletteOpen {
		body = m.palette.view()
	} else {
		body = m.panes[m.active].View()
	}
	rows := []string{
		m.header(),
		m.tabs(),
		m.styles.Rule.Render(strings.Repeat("─", m.width)),
	}
	if guide != "" {
		rows = append(rows, guide)
	}
	return fit(strings.Join(append(rows,
		fit(body, m.width, bodyHeight),
		m.statusLine(),
		footer,
	), "\n"), m.width, m.height)
}

// guideLines is the height of the tour's line over the body: 0 or 1.
func (m *Model) guideLines() int {
	if m.tour.line(&m.styles, max(m.width, 1)) == "" {
		return 0
	}
	return 1
}

// statusLine is the status, or the question asked before quitting.
func (m *Model) statusLine() string {
	if m.quitAsk.Active() {
		return fitLine(m.quitAsk.View(&m.styles, m.width), m.width)
	}
	return m.status.view(&m.styles, m.width)
}

func (m *Model) header() string {
	s := &m.styles
	model := m.info.Provider
	if m.info.Model != "" {
		model += " · " + m.info.Model
	}
	left := " " + s.Title.Render("engram") + s.HeaderLabel.Render("  data ")
	mark := ""
	if m.info.ReadOnly != "" {
		// For as long as it lasts, not just while the status line says so.
		mark = s.Failed.Render(" read-only: disk full")
	}
	agent := s.HeaderLabel.Render("agent ") + s.HeaderInfo.Render(m.conn.Agent())
	llm := func(w int) string {
		return s.HeaderLabel.Render("  llm ") + s.HeaderInfo.Render(truncateTo(model, w))
	}
	store, where, right := m.info.StoreLabel(), m.whereLabel(false), agent+llm(lineWidth(model))
	// What does not fit gives way, the least important part first: the
	// data directory (down to its last 8 columns), the model's name (down
	// to 8), "attached to pid N" (to "pid N"), then the llm altogether.
	over := func() int {
		return lineWidth(left) + min(lineWidth(store), 8) + lineWidth(mark) + lineWidth(where) + lineWidth(right) + 3 - m.width
	}
	if n := over(); n > 0 {
		right = agent + llm(max(lineWidth(model)-n, 8))
	}
	if over() > 0 {
		where = m.whereLabel(true)
	}
	if over() > 0 {
		right = agent
	}
	room := m.width - lineWidth(left) - lineWidth(mark) - lineWidth(where) - lineWidth(right) - 3
	store = truncateLeft(store, max(room, 8))
	gap := max(m.width-lineWidth(left)-lineWidth(store)-lineWidth(mark)-lineWidth(where)-lineWidth(right)-1, 2)
	return left + s.HeaderInfo.Render(store) + mark + where + strings.Repeat(" ", gap) + right + " "
}

func (m *Model) tabs() string {
	parts := make([]string, 0, tabCount)
	for i, p := range m.panes {
		label := fmt.Sprintf("%d %s", i+1, p.Title())
		if tab(i) == m.active && !m.paletteOpen {
			parts = append(parts, m.styles.ActiveTab.Render("["+label+"]"))
		} else {
			parts = append(parts, m.styles.Tab.Render(" "+label+" "))
		}
	}
	line := " " + strings.Join(parts, " ")
	if m.paletteOpen {
		line += "   " + m.styles.ActiveTab.Render("[: palette]")
	}
	return line
}
