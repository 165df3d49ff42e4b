package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
)

const palettePaneID paneID = "palette"

type paletteKeys struct {
	Run      key.Binding
	Complete key.Binding
	Next     key.Binding
	Prev     key.Binding
	History  key.Binding
	Scroll   key.Binding
	Close    key.Binding
}

// palette runs any registered action: "name {json args}". It completes
// action names (with their required args as a JSON skeleton), describes the
// chosen action's args, and shows the JSON result in a scrollable viewport.
type palette struct {
	engine  *core.Engine
	styles  *Styles
	keys    paletteKeys
	actions []*action.Action

	input   textinput.Model
	result  viewport.Model
	running string // the action in flight, if any
	cancel  context.CancelFunc
	spinner spinner.Model
	req     int    // the number of the latest request
	last    string // the header line of the result shown
	body    string // the result shown, before wrapping to the width
	history []string
	histPos int

	width, height int
}

func newPalette(engine *core.Engine, styles *Styles) *palette {
	in := textinput.New()
	in.Prompt = ": "
	in.PromptStyle = styles.Prompt
	in.Placeholder = `action.name {"arg": "value"}   (tab completes)`
	in.ShowSuggestions = true
	in.CharLimit = 8192
	p := &palette{
		engine:  engine,
		styles:  styles,
		input:   in,
		result:  viewport.New(0, 0),
		spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
		keys: paletteKeys{
			Run:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
			Complete: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
			Next:     key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n/p", "cycle")),
			Prev:     key.NewBinding(key.WithKeys("ctrl+p")),
			History:  key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "history")),
			Scroll:   key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "scroll")),
			Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
		},
	}
	p.input.KeyMap.AcceptSuggestion = p.keys.Complete
	p.input.KeyMap.NextSuggestion = p.keys.Next
	p.input.KeyMap.PrevSuggestion = p.keys.Prev
	return p
}

// open shows the palette with the current list of actions.
func (p *palette) open() tea.Cmd {
	p.actions = p.engine.Actions()
	suggestions := make([]string, 0, len(p.actions))
	for _, a := range p.actions {
		suggestions = append(suggestions, completion(a))
	}
	p.input.SetSuggestions(suggestions)
	p.input.SetValue("")
	p.histPos = len(p.history)
	return p.input.Focus()
}

// completion is what tab inserts for an action: its name, and a JSON
// skeleton of its required args if it has any.
func completion(a *action.Action) string {
	if skeleton := a.Skeleton(true); skeleton != "{}" {
		return a.Name + " " + skeleton
	}
	return a.Name
}

func (p *palette) setSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len(p.input.Prompt)-3, 1)
	p.result.Width = w
	p.result.Height = max(h-4, 1)
	p.setBody()
}

// keyHelp lists the palette's keys, the ones needed most first: a narrow
// footer drops the last ones (and the result's line says pgup/pgdn when
// there is something to scroll).
func (p *palette) keyHelp() []key.Binding {
	return []key.Binding{p.keys.Run, p.keys.Close, p.keys.Complete, p.keys.Next, p.keys.History, p.keys.Scroll}
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
			p.result, cmd = p.result.Update(msg)
			return cmd, false
		case key.Matches(msg, p.keys.History):
			p.recall(msg.String() == "up")
			return nil, false
		}
		p.input, cmd = p.input.Update(msg)
		return cmd, false
	case actionResultMsg:
		if msg.req != p.req {
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
	p.req++
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	// Actions can be slow (a model call): the spinner shows one is in flight.
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	return tea.Batch(runActionCtx(ctx, p.engine, palettePaneID, p.req, name, raw), p.spinner.Tick)
}

// showResult puts an action's result (or error) in the viewport.
func (p *palette) showResult(msg actionResultMsg) {
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
		if err := json.Indent(&buf, msg.result, "", "  "); err != nil {
			buf.Write(msg.result)
		}
		body = buf.Bytes()
	}
	p.body = string(body)
	p.setBody()
	p.result.GotoTop()
}

// setBody puts the result in the viewport, indented like the rest of the
// screen and wrapped to its width, so that a long string is read whole
// rather than cut.
func (p *palette) setBody() {
	if p.body == "" {
		p.result.SetContent("")
		return
	}
	var out []string
	for _, l := range strings.Split(p.body, "\n") {
		out = append(out, wrapIndented(" "+l, p.width))
	}
	p.result.SetContent(joinLines(out))
}

// wrapIndented wraps a line to width columns, at spaces where it can,
// continuing it two columns deeper than it starts.
func wrapIndented(l string, width int) string {
	if width < 8 || ansi.StringWidth(l) <= width {
		return l
	}
	first := strings.SplitN(ansi.Wrap(l, width, ""), "\n", 2)[0]
	if !strings.HasPrefix(l, first) {
		first = ansi.Truncate(l, width, "")
	}
	rest := strings.TrimLeft(l[len(first):], " ")
	indent := strings.Repeat(" ", min(len(l)-len(strings.TrimLeft(l, " "))+2, width/2))
	rest = ansi.Wrap(rest, width-len(indent), "")
	return strings.TrimRight(first, " ") + "\n" + indent + strings.ReplaceAll(rest, "\n", "\n"+indent)
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
		args := " · " + argsSummary(a)
		summary := oneLine(a.Summary)
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
func argsSummary(a *action.Action) string {
	if len(a.Fields) == 0 {
		return "no args"
	}
	parts := make([]string, 0, len(a.Fields))
	for _, f := range a.Fields {
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
	return fit(joinLines(lines)+"\n"+p.result.View(), p.width, p.height)
}

func scrollInfo(v viewport.Model) string {
	if v.TotalLineCount() <= v.Height {
		return ""
	}
	return fmt.Sprintf("  (lines %d-%d of %d, pgup/pgdn)", v.YOffset+1, min(v.YOffset+v.Height, v.TotalLineCount()), v.TotalLineCount())
}
