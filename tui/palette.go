package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
	Cancel   key.Binding // the newest action still running
}

// palette runs any registered action: "name {json args}". It completes
// action names (with their required args as a JSON skeleton), describes the
// chosen action's args, and shows the JSON result in a scrollable section.
// It is the one place the console handles raw JSON, by design: it runs
// actions by name and shows whatever they return.
//
// Closing it does not stop what it runs (a plan's run, a model call): an
// answer that comes while it is closed goes to the status line. Several
// actions may run at once; ctrl+x cancels the newest.
type palette struct {
	requests
	styles *Styles
	keys   paletteKeys
	// actions is actions.list's answer, asked for every time the palette
	// opens (list tracks that request); suggestions are their completions.
	actions     []conn.ActionInfo
	suggestions []string
	list        loader

	input   textinput.Model
	result  scrollView
	runs    []*paletteRun // the actions in flight, oldest first
	shown   bool          // the palette is open: answers show in it, not in the status line
	spinner spinner.Model
	last    string // the header line of the result shown
	body    string // the result shown, before wrapping to the width

	history  []string // the commands run, oldest first, at most historyCap
	histPos  int      // the command ↑/↓ shows; len(history) is the line being typed
	draft    string   // the line being typed, kept while ↑ shows older ones
	histFile *historyFile

	width, height int
}

// paletteRun is one action the palette started that has not answered yet.
type paletteRun struct {
	req       int
	name      string
	cancel    context.CancelFunc
	cancelled bool // ctrl+x asked it to stop; its answer says how it ended
}

func newPalette(engine conn.Conn, styles *Styles, historyPath string) *palette {
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
			Cancel:   key.NewBinding(key.WithKeys("ctrl+x"), key.WithHelp("ctrl+x", "cancel")),
		},
	}
	p.input.KeyMap.AcceptSuggestion = p.keys.Complete
	p.input.KeyMap.NextSuggestion = p.keys.Next
	p.input.KeyMap.PrevSuggestion = p.keys.Prev
	if historyPath != "" {
		p.histFile = &historyFile{path: historyPath}
		p.history = p.histFile.load()
	}
	return p
}

// open shows the palette clean: an empty line, fresh completions, no
// earlier result (issue 14, item 11). Actions still running show, and it
// asks for the current list of actions (the one from the last opening
// serves until it comes).
func (p *palette) open() tea.Cmd {
	p.shown = true
	p.setInput("")
	p.histPos, p.draft = len(p.history), ""
	p.last, p.body = "", ""
	p.setBody()
	cmds := []tea.Cmd{p.input.Focus(), request(&p.requests, &p.list, core.ActionListActions, conn.ListActionsArgs{})}
	if len(p.runs) > 0 {
		cmds = append(cmds, p.spinner.Tick) // its ticks stopped while closed
	}
	return tea.Batch(cmds...)
}

// close hides the palette. What it runs keeps running (issue 14, item 2):
// the status line says so, and will say how it ended.
func (p *palette) close() tea.Cmd {
	p.shown = false
	p.input.Blur()
	if len(p.runs) == 0 {
		return nil
	}
	text := p.runs[len(p.runs)-1].name + " keeps running: its result will show here"
	if n := len(p.runs); n > 1 {
		text = fmt.Sprintf("%d actions keep running: their results will show here", n)
	}
	return paletteStatus(text, false)
}

// paletteStatus asks the console for a message in the status line: what
// the palette ran, reported while it is closed.
func paletteStatus(text string, isError bool) tea.Cmd {
	return func() tea.Msg { return statusMsg{text: text, isError: isError} }
}

// setInput puts value in the input, the cursor at its end, and matches the
// completions against it afresh: the text input alone keeps the matches
// (and the one ctrl+n chose) of the text it held before, so that tab would
// complete from a stale list.
func (p *palette) setInput(value string) {
	p.input.SetValue("")
	p.input.SetSuggestions(p.suggestions) // no text, no match: the choice starts over
	p.input.SetValue(value)
	p.input.SetSuggestions(p.suggestions)
	p.input.CursorEnd()
}

// setActions takes actions.list's answer: what describe names and tab
// completes.
func (p *palette) setActions(actions []conn.ActionInfo) {
	p.actions = actions
	p.suggestions = make([]string, 0, len(actions))
	for _, a := range actions {
		p.suggestions = append(p.suggestions, completion(a))
	}
	p.input.SetSuggestions(p.suggestions)
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
// there is something to scroll). ctrl+x shows only while it has something
// to cancel.
func (p *palette) keyHelp() []key.Binding {
	cancel := p.keys.Cancel
	cancel.SetEnabled(p.cancellable() != nil)
	return []key.Binding{p.keys.Run, p.keys.Close, cancel, p.keys.Complete, p.keys.Next, p.keys.Older, p.keys.Scroll}
}

// cancellable is the newest run not cancelled yet, or nil.
func (p *palette) cancellable() *paletteRun {
	for i := len(p.runs) - 1; i >= 0; i-- {
		if !p.runs[i].cancelled {
			return p.runs[i]
		}
	}
	return nil
}

// update handles a key while the palette is open (closed reports esc) and
// the answers to what it runs, open or not.
func (p *palette) update(msg tea.Msg) (cmd tea.Cmd, closed bool) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, p.keys.Close):
			return p.close(), true
		case key.Matches(msg, p.keys.Cancel):
			// Enabled or not, ctrl+x is the palette's: the input has no use
			// for it.
			if run := p.cancellable(); run != nil {
				run.cancelled = true
				run.cancel() // its answer, an error most likely, still comes
			}
			return nil, false
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
		run := p.finish(msg.req)
		if run == nil {
			return nil, false // dropped when the console quit
		}
		if !p.shown {
			return paletteStatus(p.summary(msg, run.cancelled), msg.err != nil), false
		}
		p.showResult(msg, run.cancelled)
		return nil, false
	case spinner.TickMsg:
		if len(p.runs) == 0 || !p.shown {
			return nil, false // nothing in flight, or not shown: let the spinner stop
		}
		p.spinner, cmd = p.spinner.Update(msg)
		return cmd, false
	}
	p.input, cmd = p.input.Update(msg)
	return cmd, false
}

// finish takes the run req answers off the runs in flight and releases its
// context; nil if no run has that number.
func (p *palette) finish(req int) *paletteRun {
	for i, run := range p.runs {
		if run.req == req {
			run.cancel()
			p.runs = append(p.runs[:i], p.runs[i+1:]...)
			return run
		}
	}
	return nil
}

// cancelRunning cancels every action in flight: the console is quitting.
func (p *palette) cancelRunning() {
	for _, run := range p.runs {
		run.cancel()
	}
	p.runs = nil
}

// summary is an answer on one line, for the status line: the palette was
// closed when it came. An error says all it says; a result, its start.
func (p *palette) summary(msg resultMsg[rawResult], cancelled bool) string {
	if msg.err != nil {
		e := errs.As(msg.err)
		how := "failed"
		if cancelled {
			how = "cancelled"
		}
		return fmt.Sprintf("✗ %s %s: %s: %s", msg.action, how, e.Kind, e.Message)
	}
	// One element a line, then one line: spaces between the elements, where
	// the status line may cut a long result.
	var buf bytes.Buffer
	if err := json.Indent(&buf, msg.value, "", ""); err != nil {
		buf.Reset()
		buf.Write(msg.value)
	}
	// Cut here to the console's width: a result is no sentence to shorten
	// at its clauses, as the status line does a message too long.
	return ansi.Truncate("✓ "+msg.action+" ok: "+oneLine(buf.String()), max(p.width-2, 1), "…")
}

// recall shows the command before (older) or after the one shown; past the
// newest is the line that was being typed.
func (p *palette) recall(older bool) {
	if len(p.history) == 0 {
		return
	}
	if p.histPos == len(p.history) {
		p.draft = p.input.Value()
	}
	if older {
		p.histPos = max(p.histPos-1, 0)
	} else {
		p.histPos = min(p.histPos+1, len(p.history))
	}
	if p.histPos == len(p.history) {
		p.setInput(p.draft)
	} else {
		p.setInput(p.history[p.histPos])
	}
}

// run parses "name {args}" and starts the action, beside any still
// running: each answers on its own.
func (p *palette) run() tea.Cmd {
	line := strings.TrimSpace(p.input.Value())
	if line == "" {
		return nil
	}
	name, args, _ := strings.Cut(line, " ")
	args = strings.TrimSpace(args)
	p.remember(line)
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	// The result shown was another command's.
	p.last, p.body = "", ""
	p.setBody()
	// Actions can be slow (a model call): the spinner shows one is in flight.
	ctx, cancel := context.WithCancel(context.Background())
	run := &paletteRun{req: p.next(nil), name: name, cancel: cancel}
	p.runs = append(p.runs, run)
	return tea.Batch(p.runRaw(ctx, run, raw, p.saveHistory()), p.spinner.Tick)
}

// remember puts line at the end of the history (once: an earlier copy
// goes), which keeps its newest historyCap commands.
func (p *palette) remember(line string) {
	if i := slices.Index(p.history, line); i >= 0 {
		p.history = slices.Delete(p.history, i, i+1)
	}
	p.history = append(p.history, line)
	if over := len(p.history) - historyCap; over > 0 {
		p.history = slices.Delete(p.history, 0, over)
	}
	p.histPos, p.draft = len(p.history), ""
}

// saveHistory is what writes the history as it is now, to run off the UI
// goroutine; nil without a history file.
func (p *palette) saveHistory() func() error {
	if p.histFile == nil {
		return nil
	}
	h, gen, lines := p.histFile, p.histFile.bump(), slices.Clone(p.history)
	return func() error { return h.save(gen, lines) }
}

// runRaw runs the action with args as typed, answering with its result
// undecoded: the palette shows whatever JSON it is, and the engine (not an
// encoder here) judges args that are not JSON. It saves the history first,
// as a shell does, so that a command is on file once its answer shows; a
// history that cannot be saved says so once, in the status line.
func (p *palette) runRaw(ctx context.Context, run *paletteRun, args json.RawMessage, save func() error) tea.Cmd {
	c, pane, req, name := p.conn, p.pane, run.req, run.name
	return func() tea.Msg {
		var saveErr error
		if save != nil {
			saveErr = save()
		}
		res, err := c.Do(ctx, conn.Request{Action: name, Args: args})
		var answer tea.Msg = resultMsg[rawResult]{pane: pane, req: req, action: name, value: res, err: err}
		if saveErr == nil {
			return answer
		}
		return tea.BatchMsg{
			func() tea.Msg { return answer },
			paletteStatus("palette history not saved: "+saveErr.Error(), true),
		}
	}
}

// showResult puts an action's result (or error) in the viewport.
// An action that ctrl+x cancelled and that then failed says cancelled: its
// error (a context's) says how, below.
func (p *palette) showResult(msg resultMsg[rawResult], cancelled bool) {
	var body []byte
	if msg.err != nil {
		e := errs.As(msg.err)
		p.last = p.styles.Failed.Render("✗ "+msg.action) + p.styles.Muted.Render(" failed: ") + oneLine(string(e.Kind))
		if cancelled {
			p.last = p.styles.Failed.Render("✗ "+msg.action) + p.styles.Muted.Render(" cancelled")
		}
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
	var parts []string
	if n := len(p.runs); n > 0 {
		run, doing := p.runs[n-1], " running "
		if run.cancelled {
			doing = " cancelling "
		}
		s := p.spinner.View() + p.styles.Muted.Render(doing+run.name+"…")
		if n > 1 {
			s += p.styles.Muted.Render(fmt.Sprintf(" (%d more)", n-1))
		}
		parts = append(parts, s)
	}
	if p.last != "" {
		parts = append(parts, p.last+p.styles.Muted.Render(scrollInfo(p.result)))
	}
	status := strings.Join(parts, p.styles.Muted.Render(" · "))
	if status == "" {
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

// historyCap is how many commands the palette's history keeps.
const historyCap = 200

// historyFile keeps the palette's history across runs of the console: one
// command a line (the input has no line breaks), oldest first.
type historyFile struct {
	path string

	mu     sync.Mutex
	gen    int  // numbers every snapshot asked to be saved
	saved  int  // the snapshot on file: an older one never overwrites it
	failed bool // a save failed already (and said so)
}

// load reads the history; a missing or unreadable file is an empty one
// (the first save says if it cannot be written).
func (h *historyFile) load() []string {
	data, err := os.ReadFile(h.path)
	if err != nil {
		return nil
	}
	var lines []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(len(lines)-historyCap, 0):]
}

// bump numbers the next snapshot to save.
func (h *historyFile) bump() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	return h.gen
}

// save writes snapshot gen atomically (a temporary file renamed over the
// old one), readable by its owner only, unless a newer one is on file
// already (saves run concurrently). It reports only its first failure.
func (h *historyFile) save(gen int, lines []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen <= h.saved {
		return nil
	}
	err := h.write(lines)
	if err == nil {
		h.saved = gen
		return nil
	}
	if h.failed {
		return nil
	}
	h.failed = true
	return err
}

func (h *historyFile) write(lines []string) error {
	dir := filepath.Dir(h.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(h.path)+"-*") // mode 0600
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }() // gone once renamed
	var buf strings.Builder
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	if _, err := f.WriteString(buf.String()); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), h.path)
}
