package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
)

const (
	tracePaneID paneID = "trace"
	// traceKeep bounds how many entries the pane holds (the newest).
	traceKeep = 2000
	// maxTurnColumn and maxKindColumn are the most the turn and kind
	// columns take ("cortex.update.failed" is the longest kind).
	maxTurnColumn = 14
	maxKindColumn = 20
)

type traceKeys struct {
	Filter key.Binding
	Clear  key.Binding
	Apply  key.Binding
	// Scroll, Page and Ends are the navigation keys the list scrolls with
	// (nav), named for the footer.
	Scroll key.Binding
	Page   key.Binding
	Ends   key.Binding
	// Follow is End, named for the footer while the list is scrolled up.
	Follow key.Binding
}

// tracePane lists trace entries live, optionally for one turn.
type tracePane struct {
	requests
	styles *Styles
	keys   traceKeys

	entries []trace.Entry
	turn    string          // the filter: "" shows every turn
	turns   map[string]bool // every turn id seen, to complete a partial one
	lists   loader          // trace.list, for the current filter
	loaded  bool
	loadErr string
	// ambiguous is how many known turns the typed filter is part of, when
	// more than one.
	ambiguous int

	editing bool
	input   textinput.Model
	view    scrollView
	// following keeps the newest entry in view, as less +F does: it stops
	// when the person scrolls up and starts again when they come back to
	// the bottom. Only their keys change it (a resize or a load does not),
	// so that nothing but the person decides what the list shows.
	following bool
	// unseen is how many entries arrived while not following: the list
	// says "N new below" until the person comes back to the bottom.
	unseen int
	width  int
	height int
	// the widths of the turn and kind columns: as wide as what they show,
	// up to their maximum, leaving the message the rest
	turnW, kindW int
}

func newTracePane(engine conn.Conn, styles *Styles) *tracePane {
	in := textinput.New()
	in.Prompt = "turn: "
	in.Placeholder = "a turn id, or its end as shown (enter applies, esc cancels)"
	in.CharLimit = 200
	none := func(int) string { return "" } // a log: no note over its first line
	p := &tracePane{
		requests:  requests{conn: engine, pane: tracePaneID},
		styles:    styles,
		input:     in,
		following: true,
		turns:     map[string]bool{},
		keys: traceKeys{
			Filter: key.NewBinding(key.WithKeys("f", "/"), key.WithHelp("f", "filter by turn")),
			Clear:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
			Apply:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
			Scroll: withHelp(nav.Move, "↑/↓", "scroll"),
			Page:   nav.Pages,
			Ends:   nav.Ends,
			Follow: withHelp(nav.End, "G", "follow new entries"),
		},
	}
	// The pane follows the tail itself (following), not the view: the view
	// would stop following whenever a change found it off the bottom.
	p.view = scrollView{Above: none, Below: p.belowNote}
	return p
}

// belowNote is the line in place of the last one shown while entries are
// below the view: how many arrived unseen, or how many more there are.
func (p *tracePane) belowNote(hidden int) string {
	if n := min(p.unseen, hidden); n > 0 {
		return fmt.Sprintf(" %s %d new below · G follows", glyphDown, n)
	}
	return fmt.Sprintf(" %s %s below · G follows", glyphDown, plural(hidden, "more entry", "more entries"))
}

func (p *tracePane) Title() string { return "Trace" }

func (p *tracePane) Init() tea.Cmd { return p.load() }

// load asks the engine for the entries of the current filter.
func (p *tracePane) load() tea.Cmd {
	return request(&p.requests, &p.lists, core.ActionTraceList, trace.ListArgs{Turn: p.turn, Limit: traceKeep})
}

// reloadAll loads the entries again (events were missed: entries recorded
// meanwhile came with none).
func (p *tracePane) reloadAll() tea.Cmd { return p.requests.refresh(&p.lists, p.load) }

func (p *tracePane) Focus() tea.Cmd { return nil }

func (p *tracePane) Blur() {
	p.editing = false
	p.input.Blur()
}

func (p *tracePane) Capturing() bool { return p.editing }

// KeyMap is every binding of the pane's keys struct.
func (p *tracePane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *tracePane) Keys() []key.Binding {
	if p.editing {
		return []key.Binding{p.keys.Apply, withHelp(p.keys.Clear, "esc", "cancel")}
	}
	keys := []key.Binding{p.keys.Filter}
	if !p.following {
		keys = append(keys, p.keys.Follow)
	}
	if p.turn != "" {
		keys = append(keys, p.keys.Clear)
	}
	return append(keys, p.keys.Scroll, p.keys.Page, p.keys.Ends)
}

func (p *tracePane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.view.setHeight(max(h-2, 1))
	p.input.Width = max(w-len(p.input.Prompt)-2, 1)
	p.refresh()
	p.follow()
}

// follow keeps the newest entry in view while following.
func (p *tracePane) follow() {
	if p.following {
		p.view.end()
	}
}

func (p *tracePane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case resultMsg[trace.ListResult]:
		// A load for an earlier filter may answer after the filter changed:
		// its entries belong to another turn.
		latest, again := p.lists.answer(msg.req)
		if !latest {
			return nil
		}
		p.loaded = true
		p.loadErr = ""
		if msg.err != nil {
			p.loadErr = msg.err.Error()
		}
		p.merge(msg.value.Entries...)
		if again {
			return p.load() // a reload was asked for meanwhile
		}
		return nil
	case events.Event:
		if e, ok := kit.EventTraceRecorded.Of(msg); ok && (p.turn == "" || e.TurnID == p.turn) {
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
			turn := p.resolve(strings.TrimSpace(p.input.Value()))
			p.input.SetValue(turn)
			return p.setFilter(turn)
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
		p.ambiguous = 0
		return p.setFilter("")
	}
	if p.view.handleKey(msg) {
		// Back at the bottom, the list follows again (and has shown
		// what was new); anywhere else it stays where the person put it.
		p.following = p.view.AtBottom()
		if p.following {
			p.unseen = 0
		}
	}
	return nil
}

// resolve completes part of a turn id (the column shows only the end of a
// long one) to the one known turn id containing it. Anything else is taken
// as typed.
func (p *tracePane) resolve(typed string) string {
	p.ambiguous = 0
	if typed == "" || p.turns[typed] {
		return typed
	}
	var found []string
	for t := range p.turns {
		if strings.Contains(t, typed) {
			found = append(found, t)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	if len(found) > 1 {
		p.ambiguous = len(found)
	}
	return typed
}

func (p *tracePane) setFilter(turn string) tea.Cmd {
	if turn == p.turn {
		p.refresh()
		return nil
	}
	p.turn = turn
	p.entries = nil
	p.loaded = false
	// Another list: it starts at its newest entry.
	p.following, p.unseen = true, 0
	p.refresh()
	return p.load()
}

// merge adds entries (from a load or live events), keeping seq order and no
// duplicates. While following, the newest shows; otherwise the entries
// shown stay in place and the new ones are counted as unseen.
func (p *tracePane) merge(entries ...trace.Entry) {
	anchor, newest := p.shown()
	if !p.following {
		for _, e := range entries {
			if e.Seq > newest {
				p.unseen++
			}
		}
	}
	defer p.keepInPlace(anchor)
	// The common case is a live entry newer than every one shown: append
	// it and render it alone. Re-rendering all (up to traceKeep) entries for
	// every event would make a burst of events quadratic.
	if len(entries) == 1 && (len(p.entries) == 0 || entries[0].Seq > p.entries[len(p.entries)-1].Seq) {
		e := entries[0]
		if e.TurnID != "" {
			p.turns[e.TurnID] = true
		}
		p.entries = append(p.entries, e)
		if p.widensColumns(e) {
			p.trim()
			p.refresh()
			return
		}
		lines := append(p.view.Lines(), p.renderEntry(e))
		if drop := len(p.entries) - traceKeep; drop > 0 {
			// At the cap the oldest goes as the newest comes: still one
			// line's work, however long the session. Columns never narrow
			// here; the next full render narrows them.
			p.entries, lines = p.entries[drop:], lines[drop:]
		}
		p.view.setLines(lines)
		return
	}
	seen := make(map[uint64]bool, len(p.entries))
	for _, e := range p.entries {
		seen[e.Seq] = true
	}
	for _, e := range entries {
		if e.TurnID != "" {
			p.turns[e.TurnID] = true
		}
		if !seen[e.Seq] {
			p.entries = append(p.entries, e)
			seen[e.Seq] = true
		}
	}
	sort.Slice(p.entries, func(i, j int) bool { return p.entries[i].Seq < p.entries[j].Seq })
	p.trim()
	p.refresh()
}

// shown is the seq of the first entry in view and of the newest entry (0
// when there is none).
func (p *tracePane) shown() (first, newest uint64) {
	if len(p.entries) == 0 {
		return 0, 0
	}
	first = p.entries[min(p.view.Offset(), len(p.entries)-1)].Seq
	return first, p.entries[len(p.entries)-1].Seq
}

// keepInPlace follows the tail, or else scrolls back to the entry that was
// first in view (older entries may have come in above it, or gone at the
// cap), so that what the person reads does not move under them.
func (p *tracePane) keepInPlace(anchor uint64) {
	if p.following {
		p.view.end()
		return
	}
	i := sort.Search(len(p.entries), func(i int) bool { return p.entries[i].Seq >= anchor })
	p.view.setOffset(i)
}

// trim keeps the newest traceKeep entries.
func (p *tracePane) trim() {
	if len(p.entries) > traceKeep {
		p.entries = p.entries[len(p.entries)-traceKeep:]
	}
}

// widensColumns reports whether e needs a wider turn or kind column than
// the entries rendered so far: then every line is rendered again.
func (p *tracePane) widensColumns(e trace.Entry) bool {
	return ansi.StringWidth(shortenLeft(e.TurnID, maxTurnColumn)) > p.turnW ||
		ansi.StringWidth(truncateTo(e.Kind, maxKindColumn)) > p.kindW
}

// refresh re-renders the list into its scrollable section.
func (p *tracePane) refresh() {
	p.turnW, p.kindW = len("turn"), len("kind")
	for _, e := range p.entries {
		p.turnW = max(p.turnW, ansi.StringWidth(shortenLeft(e.TurnID, maxTurnColumn)))
		p.kindW = max(p.kindW, ansi.StringWidth(truncateTo(e.Kind, maxKindColumn)))
	}
	// The lines are rendered when they come into view (renderShown): a
	// resize or a reload renders a screenful, not every entry kept.
	p.view.setLines(make([]string, len(p.entries)))
}

// renderShown renders the lines in view that refresh left to render (an
// empty line: a rendered one always has the entry's number).
func (p *tracePane) renderShown() {
	lines := p.view.Lines()
	for i := p.view.Offset(); i < min(p.view.Offset()+p.view.Height(), len(lines), len(p.entries)); i++ {
		if lines[i] == "" {
			lines[i] = p.renderEntry(p.entries[i])
		}
	}
}

// clientCallData is the data of the trace entry a request made for an
// agent client leaves (kind VIA.call: "mcp.call"; core/clients writes it).
type clientCallData struct {
	Via       string `json:"via"`
	Tool      string `json:"tool"`
	Action    string `json:"action"`
	Session   string `json:"session"`
	Client    string `json:"client"`
	OK        bool   `json:"ok"`
	ErrorKind string `json:"error_kind"`
}

// clientCall decodes e's data when e is an agent client's call; ok is
// false for any other entry.
func clientCall(e trace.Entry) (d clientCallData, ok bool) {
	if !strings.HasSuffix(e.Kind, ".call") || len(e.Data) == 0 {
		return d, false
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Via == "" || d.Tool == "" || e.Kind != d.Via+".call" {
		return d, false
	}
	return d, true
}

// message is what the entry's last column says. An agent client's call is
// marked ("↔ mcp"), so that what agents did stands out among the console's
// own work: the tool, the action it ran, how it went, which client as
// which agent.
func (p *tracePane) message(e trace.Entry) string {
	d, ok := clientCall(e)
	if !ok {
		return oneLine(e.Message)
	}
	s := p.styles
	text := s.Prompt.Render(glyphAgentCall+" "+oneLine(d.Via)) + " " + oneLine(d.Tool) + s.Muted.Render(" "+glyphTo+" ") + oneLine(d.Action)
	if !d.OK {
		text += " " + s.Failed.Render(glyphFailed+" "+oneLine(d.ErrorKind))
	}
	who := oneLine(d.Client)
	switch {
	case who != "" && e.Principal != "":
		who += " (" + oneLine(e.Principal) + ")"
	case who == "":
		who = oneLine(e.Principal)
	}
	if who != "" {
		text += s.Muted.Render(glyphSep + who)
	}
	return text
}

func (p *tracePane) renderEntry(e trace.Entry) string {
	turn := e.TurnID
	if turn == "" {
		turn = "-"
	}
	line := fmt.Sprintf("%s %s %s %s %s",
		p.styles.Muted.Render(fmt.Sprintf("%5d", e.Seq)),
		p.styles.Muted.Render(e.At.Format("15:04:05.000")),
		fitLine(shortenLeft(turn, maxTurnColumn), p.turnW),
		p.styles.Emphasis.Render(fitLine(truncateTo(e.Kind, maxKindColumn), p.kindW)),
		p.message(e))
	if p.width > 0 && ansi.StringWidth(line) > p.width {
		line = ansi.Truncate(line, p.width, "…")
	}
	return line
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
	header := p.styles.Muted.Render(fmt.Sprintf("%5s %-12s %-*s %-*s %s", "#", "time", p.turnW, "turn", p.kindW, "kind", "message"))
	p.renderShown()
	body := p.view.View(p.styles)
	switch {
	case p.loadErr != "":
		body = p.styles.Failed.Render(" Could not read the trace: " + p.loadErr)
	case !p.loaded:
		body = p.styles.Muted.Render(" Loading…")
	case len(p.entries) == 0 && p.ambiguous > 0:
		body = p.styles.Muted.Render(fmt.Sprintf(" %q is part of %d turn ids: press f and type more of the one you mean, or esc to see every turn.", p.turn, p.ambiguous))
	case len(p.entries) == 0 && p.turn != "":
		body = p.styles.Muted.Render(" No entries for turn " + p.turn + ". Press esc to see every turn.")
	case len(p.entries) == 0:
		body = p.styles.Muted.Render(" No trace entries yet. Turns and the changes they make appear here as they happen;\n try :turn.start {\"input\": \"hello\"}")
	}
	return fit(joinLines([]string{top, header, body}), p.width, p.height)
}
