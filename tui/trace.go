package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
)

const (
	tracePaneID paneID = "trace"
	// traceKeep bounds how many entries the pane holds (the newest).
	traceKeep = 2000
)

type traceKeys struct {
	Filter key.Binding
	Clear  key.Binding
	Apply  key.Binding
	Up     key.Binding
	Down   key.Binding
	Page   key.Binding
	Ends   key.Binding
}

// tracePane lists trace entries live, optionally for one turn.
type tracePane struct {
	engine *core.Engine
	styles *Styles
	keys   traceKeys

	entries []trace.Entry
	turn    string // the filter: "" shows every turn
	loaded  bool
	loadErr string

	editing bool
	input   textinput.Model
	view    viewport.Model
	width   int
	height  int
}

func newTracePane(engine *core.Engine, styles *Styles) *tracePane {
	in := textinput.New()
	in.Prompt = "turn: "
	in.Placeholder = "a turn id (enter applies, esc cancels)"
	in.CharLimit = 200
	return &tracePane{
		engine: engine,
		styles: styles,
		input:  in,
		view:   viewport.New(0, 0),
		keys: traceKeys{
			Filter: key.NewBinding(key.WithKeys("f", "/"), key.WithHelp("f", "filter by turn")),
			Clear:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
			Apply:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
			Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
			Down:   key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
			Page:   key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
			Ends:   key.NewBinding(key.WithKeys("home", "end", "g", "G"), key.WithHelp("g/G", "first/last")),
		},
	}
}

func (p *tracePane) Title() string { return "Trace" }

func (p *tracePane) Init() tea.Cmd { return p.load() }

// load asks the engine for the entries of the current filter.
func (p *tracePane) load() tea.Cmd {
	args, _ := json.Marshal(map[string]any{"turn": p.turn, "limit": traceKeep})
	return runAction(p.engine, tracePaneID, "trace.list", args)
}

func (p *tracePane) Focus() tea.Cmd { return nil }

func (p *tracePane) Blur() {
	p.editing = false
	p.input.Blur()
}

func (p *tracePane) Capturing() bool { return p.editing }

func (p *tracePane) Keys() []key.Binding {
	if p.editing {
		return []key.Binding{p.keys.Apply, withHelp(p.keys.Clear, "esc", "cancel")}
	}
	keys := []key.Binding{p.keys.Filter}
	if p.turn != "" {
		keys = append(keys, p.keys.Clear)
	}
	return append(keys, p.keys.Up, p.keys.Down, p.keys.Page, p.keys.Ends)
}

func (p *tracePane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.view.Width = w
	p.view.Height = max(h-2, 1)
	p.input.Width = max(w-len(p.input.Prompt)-2, 1)
	p.refresh()
}

func (p *tracePane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != tracePaneID {
			return nil
		}
		p.loaded = true
		if msg.err != nil {
			p.loadErr = msg.err.Error()
			p.refresh()
			return nil
		}
		var res struct {
			Entries []trace.Entry `json:"entries"`
		}
		if err := json.Unmarshal(msg.result, &res); err != nil {
			p.loadErr = err.Error()
		}
		p.loadErr = ""
		p.merge(res.Entries...)
		return nil
	case events.Event:
		if msg.Name != kit.EventTraceRecorded {
			return nil
		}
		if e, ok := msg.Data.(trace.Entry); ok && (p.turn == "" || e.TurnID == p.turn) {
			p.merge(e)
		}
		return nil
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	return nil
}

func (p *tracePane) handleKey(msg tea.KeyMsg) tea.Cmd {
	if p.editing {
		switch {
		case key.Matches(msg, p.keys.Apply):
			p.editing = false
			p.input.Blur()
			return p.setFilter(strings.TrimSpace(p.input.Value()))
		case key.Matches(msg, p.keys.Clear):
			p.editing = false
			p.input.Blur()
			p.input.SetValue(p.turn)
			p.refresh()
			return nil
		}
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg)
		return cmd
	}
	switch {
	case key.Matches(msg, p.keys.Filter):
		p.editing = true
		p.input.SetValue(p.turn)
		p.input.CursorEnd()
		p.refresh()
		return p.input.Focus()
	case key.Matches(msg, p.keys.Clear) && p.turn != "":
		p.input.SetValue("")
		return p.setFilter("")
	case msg.String() == "g" || msg.String() == "home":
		p.view.GotoTop()
		return nil
	case msg.String() == "G" || msg.String() == "end":
		p.view.GotoBottom()
		return nil
	}
	var cmd tea.Cmd
	p.view, cmd = p.view.Update(msg)
	return cmd
}

func (p *tracePane) setFilter(turn string) tea.Cmd {
	if turn == p.turn {
		p.refresh()
		return nil
	}
	p.turn = turn
	p.entries = nil
	p.loaded = false
	p.refresh()
	return p.load()
}

// merge adds entries (from a load or live events), keeping seq order and no
// duplicates, and follows the tail if the view was at the bottom.
func (p *tracePane) merge(entries ...trace.Entry) {
	seen := make(map[uint64]bool, len(p.entries))
	for _, e := range p.entries {
		seen[e.Seq] = true
	}
	for _, e := range entries {
		if !seen[e.Seq] {
			p.entries = append(p.entries, e)
			seen[e.Seq] = true
		}
	}
	sort.Slice(p.entries, func(i, j int) bool { return p.entries[i].Seq < p.entries[j].Seq })
	if len(p.entries) > traceKeep {
		p.entries = p.entries[len(p.entries)-traceKeep:]
	}
	p.refresh()
}

// refresh re-renders the list into the viewport.
func (p *tracePane) refresh() {
	follow := p.view.AtBottom()
	var b strings.Builder
	for i, e := range p.entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.renderEntry(e))
	}
	p.view.SetContent(b.String())
	if follow {
		p.view.GotoBottom()
	}
}

func (p *tracePane) renderEntry(e trace.Entry) string {
	turn := e.TurnID
	if turn == "" {
		turn = "-"
	}
	return fmt.Sprintf("%s %s %s %s %s",
		p.styles.Muted.Render(fmt.Sprintf("%5d", e.Seq)),
		p.styles.Muted.Render(e.At.Format("15:04:05.000")),
		fitLine(shorten(turn, 14), 14),
		p.styles.Emphasis.Render(fitLine(shorten(e.Kind, 14), 14)),
		e.Message)
}

func (p *tracePane) View() string {
	var top string
	switch {
	case p.editing:
		top = " " + p.input.View()
	case p.turn != "":
		top = fmt.Sprintf(" %s %s %s", p.styles.Emphasis.Render("Trace"),
			p.styles.Muted.Render("· "+plural(len(p.entries), "entry", "entries")+" of turn"), p.turn)
	default:
		top = fmt.Sprintf(" %s %s", p.styles.Emphasis.Render("Trace"),
			p.styles.Muted.Render("· "+plural(len(p.entries), "entry", "entries")+", all turns"))
	}
	header := p.styles.Muted.Render(fmt.Sprintf("%5s %-12s %-14s %-14s %s", "#", "time", "turn", "kind", "message"))
	body := p.view.View()
	switch {
	case p.loadErr != "":
		body = p.styles.Failed.Render(" Could not read the trace: " + p.loadErr)
	case !p.loaded:
		body = p.styles.Muted.Render(" Loading…")
	case len(p.entries) == 0 && p.turn != "":
		body = p.styles.Muted.Render(" No entries for turn " + p.turn + ". Press esc to see every turn.")
	case len(p.entries) == 0:
		body = p.styles.Muted.Render(" No trace entries yet. Turns and the changes they make appear here as they happen;\n try :turn.start {\"input\": \"hello\"}")
	}
	return fit(joinLines([]string{top, header, body}), p.width, p.height)
}

// shorten cuts s to n columns with an ellipsis.
func shorten(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func withHelp(b key.Binding, k, desc string) key.Binding {
	b.SetHelp(k, desc)
	return b
}
