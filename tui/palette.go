package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
)

const palettePaneID paneID = "palette"

type paletteKeys struct {
	Run      key.Binding
	Complete key.Binding
	Next     key.Binding
	Prev     key.Binding
	Older    key.Binding // the history: the command before
	Newer    key.Binding // and the one after
	Scroll   key.Binding
	Close    key.Binding
}

// palette runs any registered action: "name {json args}". It completes
// action names (with their required args as a JSON skeleton), describes the
// chosen action's args, and shows the JSON result in a scrollable section.
// It is the one place the console handles raw JSON, by design: it runs
// actions by name and shows whatever they return.
type palette struct {
	requests
	styles *Styles
	keys   paletteKeys
	// actions is actions.list's answer, asked for every time the palette
	// opens (list tracks that request).
	actions []conn.ActionInfo
	list    loader

	input   textinput.Model
	result  scrollView
	running string // the action in flight, if any
	exec    loader // the action running, for telling its answer from a stale one
	cancel  context.CancelFunc
	spinner spinner.Model
	last    string // the header line of the result shown
	body    string // the result shown, before wrapping to the width
	history []string
	histPos int

	width, height int
}

func newPalette(engine conn.Conn, styles *Styles) *palette {
	in := textinput.New()
	in.Prompt = ": "
	in.PromptStyle = styles.Prompt
	in.Placeholder = `action.name {"arg": "value"}   (tab completes)`
	in.ShowSuggestions = true
	in.CharLimit = 8192
	none := func(int) string { return "" } // the status line says what is out of view
	p := &palette{
		requests: requests{conn: engine, pane: palettePaneID},
		styles:   styles,
		input:    in,
		result:   scrollView{Above: none, Below: none},
		spinner:  spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
		keys: paletteKeys{
			Run:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
			Complete: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
			Next:     key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n/p", "cycle")),
			Prev:     key.NewBinding(key.WithKeys("ctrl+p")),
			Older:    key.NewBinding(key.WithKeys("up"), key.WithHelp("↑/↓", "history")),
			Newer:    key.NewBinding(key.WithKeys("down")),
			Scroll:   key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "scroll")),
			Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
		},
	}
	p.input.KeyMap.AcceptSuggestion = p.keys.Complete
	p.input.KeyMap.NextSuggestion = p.keys.Next
	p.input.KeyMap.PrevSuggestion = p.keys.Prev
	return p
}

// open shows the palette and asks for the current list of actions (the
// one from the last opening serves until it comes).
func (p *palette) open() tea.Cmd {
	p.input.SetValue("")
	p.histPos = len(p.history)
	return tea.Batch(p.input.Focus(), request(&p.requests, &p.list, core.ActionListActions, conn.ListActionsArgs{}))
}

// setActions takes actions.list's answer: what describe names and tab
// completes.
func (p *palette) setActions(actions []conn.ActionInfo) {
	p.actions = actions
	suggestions := make([]string, 0, len(actions))
	for _, a := range actions {
		suggestions = append(suggestions, completion(a))
	}
	p.input.SetSuggestions(suggestions)
}

// completion is what tab inserts for an action: its name, and a JSON
// skeleton of its required args if it has any.
func completion(a conn.ActionInfo) string {
	if skeleton := action.SkeletonOf(a.Args, true); skeleton != "{}" {
		return a.Name + " " + skeleton
	}
	return a.Name
}

func (p *palette) setSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len(p.input.Prompt)-3, 1)
	p.result.setHeight(max(h-4, 1))
	p.setBody()
}

// keyHelp lists the palette's keys, the ones needed most first: a narrow
// footer drops the last ones (and the result's line says pgup/pgdn when
// there is something to scroll).
func (p *palette) keyHelp() []key.Binding {
	return []key.Binding{p.keys.Run, p.keys.Close, p.keys.Complete, p.keys.Next, p.keys.Older, p.keys.Scroll}
}

// update handles a key while the palette is open; closed reports esc.
func (p *palette) update(msg tea.Msg) (cmd tea.Cmd, closed bool) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, p.keys.Close):
			// Closing the palette gives up on what it runs (a slow model
			// call, say): its result would have nowhere to show.
			p.cancelRunning()
			p.input.Blur()
			return nil, true
		case key.Matches(msg, p.keys.Run):
			return p.run(), false
		case key.Matches(msg, p.keys.Scroll):
			if key.Matches(msg, nav.PageUp) {
				p.result.pageUp()
			} else {
				p.result.pageDown()
			}
			return nil, false
		case key.Matches(msg, p.keys.Older):
			p.recall(true)
			return nil, false
		case key.Matches(msg, p.keys.Newer):
			p.recall(false)
			return nil, false
		}
		p.input, cmd = p.input.Update(msg)
		return cmd, false
	case resultMsg[conn.ListActionsResult]:
		if latest, _ := p.list.answer(msg.req); latest && msg.err == nil {
			p.setActions(msg.value.Actions)
		}
		return nil, false
	case resultMsg[rawResult]:
		if latest, _ := p.exec.answer(msg.req); !latest {
			return nil, false
		}
		p.cancelRunning() // done: release its context
		p.showResult(msg)
		return nil, false
	case spinner.TickMsg:
		if p.running == "" {
			return nil, false // nothing in flight: let the spinner stop
		}
		p.spinner, cmd = p.spinner.Update(msg)
		return cmd, false
	}
	p.input, cmd = p.input.Update(msg)
	return cmd, false
}

// cancelRunning cancels the action in flight, if any.
func (p *palette) cancelRunning() {
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
	p.running = ""
}

func (p *palette) recall(older bool) {
	if len(p.history) == 0 {
		return
	}
	if older {
		p.histPos = max(p.histPos-1, 0)
	} else {
		p.histPos = min(p.histPos+1, len(p.history))
	}
	if p.histPos == len(p.history) {
		p.input.SetValue("")
	} else {
		p.input.SetValue(p.history[p.histPos])
	}
	p.input.CursorEnd()
}

// run parses "name {args}" and starts the action.
func (p *palette) run() tea.Cmd {
	line := strings.TrimSpace(p.input.Value())
	if line == "" || p.running != "" {
		return nil
	}
	name, args, _ := strings.Cut(line, " ")
	args = strings.TrimSpace(args)
	if len(p.history) == 0 || p.history[len(p.history)-1] != line {
		p.history = append(p.history, line)
	}
	p.histPos = len(p.history)
	p.running = name
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	// Actions can be slow (a model call): the spinner shows one is in flight.
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	return tea.Batch(p.runRaw(ctx, name, raw), p.spinner.Tick)
}

// runRaw runs the action with args as typed, answering with its result
// undecoded: the palette shows whatever JSON it is, and the engine (not an
// encoder here) judges args that are not JSON.
func (p *palette) runRaw(ctx context.Context, name string, args json.RawMessage) tea.Cmd {
	c, pane, req := p.conn, p.pane, p.next(&p.exec)
	return func() tea.Msg {
		res, err := c.Do(ctx, conn.Request{Action: name, Args: args})
		return resultMsg[rawResult]{pane: pane, req: req, action: name, value: res, err: err}
	}
}

// showResult puts an action's result (or error) in the viewport.
func (p *palette) showResult(msg resultMsg[rawResult]) {
	var body []byte
	if msg.err != nil {
		e := errs.As(msg.err)
		p.last = p.styles.Failed.Render("✗ "+msg.action) + p.styles.Muted.Render(" failed: ") + oneLine(string(e.Kind))
		body, _ = json.MarshalIndent(struct {
			Kind    errs.Kind      `json:"kind"`
			Message string         `json:"message"`
			Details map[string]any `json:"details,omitempty"`
		}{e.Kind, e.Message, e.Details}, "", "  ")
	} else {
		p.last = p.styles.OK.Render("✓ "+msg.action) + p.styles.Muted.Render(" ok")
		var buf bytes.Buffer
		if err := json.Indent(&buf, msg.value, "", "  "); err != nil {
			buf.Write(msg.value)
		}
		body = buf.Bytes()
	}
	p.body = string(body)
	p.setBody()
	p.result.home()
}

// setBody puts the result in the viewport, indented like the rest of the
// screen and wrapped to its width, so that a long string is read whole
// rather than cut.
func (p *palette) setBody() {
	if p.body == "" {
		p.result.setLines(nil)
		return
	}
	var out []string
	for _, l := range strings.Split(p.body, "\n") {
		out = append(out, strings.Split(wrapIndented(" "+l, p.width), "\n")...)
	}
	p.result.setLines(out)
}

// describe is the line under the input: the action being typed, its summary
// and its args; or the matching actions while the name is incomplete.
func (p *palette) describe() string {
	value := strings.TrimSpace(p.input.Value())
	name, _, hasArgs := strings.Cut(value, " ")
	for _, a := range p.actions {
		if a.Name != name {
			continue
		}
		// The args matter more than the summary: on a narrow screen the
		// summary gives way.
		args := " · " + argsSummary(a.Args)
		summary := oneLine(a.Description)
		if room := p.width - 2 - ansi.StringWidth(a.Name) - ansi.StringWidth(args); ansi.StringWidth(summary) > room {
			summary = ansi.Truncate(summary, max(room, 12), "…")
		}
		return p.styles.Emphasis.Render(a.Name) + " " + summary + p.styles.Muted.Render(args)
	}
	if hasArgs {
		return p.styles.Failed.Render(fmt.Sprintf("no action named %q", name))
	}
	var matches []string
	for _, a := range p.actions {
		if strings.HasPrefix(a.Name, name) {
			matches = append(matches, a.Name)
		}
	}
	if len(matches) == 0 {
		return p.styles.Muted.Render("no action starts with " + fmt.Sprintf("%q", name))
	}
	current := p.input.CurrentSuggestion()
	for i, m := range matches {
		if strings.HasPrefix(current, m) && (len(current) == len(m) || current[len(m)] == ' ') {
			matches[i] = p.styles.Selected.Render("[" + m + "]")
		}
	}
	return p.styles.Muted.Render(plural(len(matches), "match", "matches")+": ") + strings.Join(matches, " ")
}

// argsSummary lists an action's args compactly: "args: turn, kind, limit
// (integer)"; strings go without their type, required args are marked.
func argsSummary(fields []action.Field) string {
	if len(fields) == 0 {
		return "no args"
	}
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		var notes []string
		if f.Type != "string" {
			notes = append(notes, f.Type)
		}
		if f.Required {
			notes = append(notes, "required")
		}
		if len(notes) > 0 {
			parts = append(parts, f.Name+" ("+strings.Join(notes, ", ")+")")
		} else {
			parts = append(parts, f.Name)
		}
	}
	return "args: " + strings.Join(parts, ", ")
}

func (p *palette) view() string {
	var status string
	switch {
	case p.running != "":
		status = p.spinner.View() + p.styles.Muted.Render(" running "+p.running+"…")
	case p.last != "":
		status = p.last + p.styles.Muted.Render(scrollInfo(p.result))
	default:
		status = p.styles.Muted.Render("The result appears here.")
	}
	// The text input pads its value to its width but then adds the cursor
	// and the rest of a suggestion: cut the padding, or the line overflows
	// and fit would end it with a stray "…".
	input := strings.TrimRight(" "+p.input.View(), " ")
	lines := []string{input, " " + p.describe(), " " + status, p.styles.Rule.Render(strings.Repeat("─", p.width))}
	return fit(joinLines(lines)+"\n"+p.result.View(p.styles), p.width, p.height)
}

// scrollInfo says which lines of a long result show.
func scrollInfo(v scrollView) string {
	if v.TotalLineCount() <= v.Height() {
		return ""
	}
	return fmt.Sprintf("  (lines %d-%d of %d, pgup/pgdn)", v.Offset()+1, min(v.Offset()+v.Height(), v.TotalLineCount()), v.TotalLineCount())
}
