package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

// forgetStage is where the forget box is.
type forgetStage int

const (
	// forgetEditing: the instruction line has the keyboard.
	forgetEditing forgetStage = iota
	// forgetPreviewing: the dry run is in flight.
	forgetPreviewing
	// forgetConfirming: the dry run's items show; y forgets them.
	forgetConfirming
	// forgetApplying: the forget itself is in flight.
	forgetApplying
)

// forgetBox takes an instruction and a mode, shows what a dry run says
// would go, and forgets only on y.
type forgetBox struct {
	styles *Styles
	store  string
	input  textinput.Model
	hard   bool
	stage  forgetStage
	req    int
	width  int

	// The preview: the dry run's answer to instruction.
	instruction string
	preview     *memory.ForgetResult
	// changed: the store changed while the preview showed, and the
	// preview was made again.
	changed bool
	offset  int // the first previewed item shown

	err   string
	forms []string // what the store understands, after an instruction it does not
}

func newForgetBox(styles *Styles, store string) *forgetBox {
	in := textinput.New()
	in.Prompt = "forget: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "e.g. oldest 3 · items tagged draft · about lisbon · older than 30 days"
	in.CharLimit = 500
	return &forgetBox{styles: styles, store: store, input: in}
}

func (f *forgetBox) focus() tea.Cmd { return f.input.Focus() }

func (f *forgetBox) setWidth(w int) {
	f.width = w
	f.input.Width = max(w-len(f.input.Prompt)-4, 1)
}

func (f *forgetBox) mode() string {
	if f.hard {
		return "hard"
	}
	return "soft"
}

func (f *forgetBox) keys(k memoryKeys) []key.Binding {
	mode := withHelp(k.Mode, "tab", "make it hard")
	if f.hard {
		mode = withHelp(k.Mode, "tab", "make it soft")
	}
	switch f.stage {
	case forgetConfirming:
		verb := "forget"
		if f.hard {
			verb = "erase"
		}
		yes := withHelp(k.Yes, "y", verb+" them")
		if f.changes() == 1 {
			yes = withHelp(k.Yes, "y", verb+" it")
		}
		if f.changes() == 0 {
			return []key.Binding{k.No, mode}
		}
		return []key.Binding{yes, k.No, mode, withHelp(k.Scroll, "↑/↓", "scroll")}
	case forgetPreviewing:
		return []key.Binding{k.Cancel}
	case forgetApplying:
		return nil // a moment: the forget is on its way
	}
	return []key.Binding{k.Preview, k.Cancel, mode}
}

// changes is how many previewed items y would change: soft leaves the
// items already forgotten as they are.
func (f *forgetBox) changes() int {
	if f.preview == nil {
		return 0
	}
	n := 0
	for _, it := range f.preview.Forgotten {
		if f.hard || !it.Deleted {
			n++
		}
	}
	return n
}

// run starts the dry run (or, with apply, the forget) of instruction.
func (f *forgetBox) run(p *memoryPane, instruction string, apply bool) tea.Cmd {
	cmd := p.run(nil, "memory.forget", map[string]any{"store": f.store, "instruction": instruction, "mode": f.mode(), "dry_run": !apply})
	f.req, f.instruction, f.err, f.forms = p.seq, instruction, "", nil
	if apply {
		f.stage = forgetApplying
	} else {
		f.stage = forgetPreviewing
	}
	p.layout()
	return cmd
}

// dryRun previews the typed instruction.
func (f *forgetBox) dryRun(p *memoryPane) tea.Cmd {
	text := strings.Join(strings.Fields(f.input.Value()), " ")
	if text == "" {
		f.err = "say what to forget, e.g. oldest 3, items tagged draft, about lisbon"
		p.layout()
		return nil
	}
	f.input.Blur()
	f.changed, f.offset = false, 0
	return f.run(p, text, false)
}

// storeChanged makes the preview again when the store changes under it:
// what y forgets must be what shows.
func (f *forgetBox) storeChanged(p *memoryPane) tea.Cmd {
	if f.stage != forgetConfirming && f.stage != forgetPreviewing {
		return nil
	}
	f.changed = f.stage == forgetConfirming || f.changed
	return f.run(p, f.instruction, false)
}

func (f *forgetBox) key(p *memoryPane, msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if key.Matches(msg, k.Mode) && f.stage != forgetApplying {
		f.hard = !f.hard
		p.layout()
		return nil
	}
	switch f.stage {
	case forgetEditing:
		switch {
		case key.Matches(msg, k.Preview):
			return f.dryRun(p)
		case key.Matches(msg, k.Cancel):
			return p.closeForget()
		}
		before := f.input.Value()
		var cmd tea.Cmd
		f.input, cmd = f.input.Update(msg)
		if f.input.Value() != before {
			f.err, f.forms = "", nil // an edit answers the error
			p.layout()
		}
		return cmd
	case forgetConfirming:
		switch {
		case key.Matches(msg, k.Yes) && f.changes() > 0:
			return f.run(p, f.instruction, true)
		case key.Matches(msg, k.No):
			return f.edit(p)
		}
		switch msg.String() {
		case "up", "k":
			f.offset--
		case "down", "j":
			f.offset++
		case "pgup":
			f.offset -= p.forgetRows()
		case "pgdown":
			f.offset += p.forgetRows()
		}
		f.offset = max(min(f.offset, len(f.preview.Forgotten)-p.forgetRows()), 0)
		p.layout()
		return nil
	}
	// The dry run in flight: esc gives up on it. The forget in flight
	// takes no key: its answer closes the box and says what went.
	if key.Matches(msg, k.Cancel) && f.stage == forgetPreviewing {
		return f.edit(p)
	}
	return nil
}

// edit goes back to the instruction line, nothing forgotten.
func (f *forgetBox) edit(p *memoryPane) tea.Cmd {
	f.stage, f.preview, f.req, f.changed = forgetEditing, nil, 0, false
	p.layout()
	return f.focus()
}

func (p *memoryPane) closeForget() tea.Cmd {
	p.forget = nil
	p.layout()
	return nil
}

// understood is what an UnsupportedInstruction error lists.
func understood(e *errs.Error) []string {
	switch v := e.Details["understood"].(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// result takes the answer to the dry run or the forget.
func (f *forgetBox) result(p *memoryPane, msg actionResultMsg) tea.Cmd {
	applying := f.stage == forgetApplying
	f.req = 0
	if msg.err != nil {
		e := errs.As(msg.err)
		f.stage, f.preview = forgetEditing, nil
		f.err = e.Message
		if e.Kind == errs.UnsupportedInstruction {
			f.err = fmt.Sprintf("%s does not understand %q.", f.store, f.instruction)
			f.forms = understood(e)
		}
		p.layout()
		return f.focus() // the root shows the error in the status line too
	}
	var res memory.ForgetResult
	if err := json.Unmarshal(msg.result, &res); err != nil {
		f.stage, f.err = forgetEditing, "unexpected memory.forget result"
		p.layout()
		return f.focus()
	}
	res.Forgotten = slices.DeleteFunc(res.Forgotten, func(it *memory.Item) bool { return it == nil })
	if !applying {
		f.preview, f.stage = &res, forgetConfirming
		f.offset = max(min(f.offset, len(res.Forgotten)-p.forgetRows()), 0)
		p.layout()
		return nil
	}
	text := f.appliedText(res)
	p.closeForget()
	return tea.Batch(showStatus(text, false), p.reload())
}

// appliedText says what a forget did, and whether it was what the preview
// showed.
func (f *forgetBox) appliedText(res memory.ForgetResult) string {
	n := len(res.Forgotten)
	how := "soft: kept, marked deleted; d shows them"
	if res.Mode == "hard" {
		how = "hard: erased"
	}
	text := fmt.Sprintf("Forgot %s from %s (%s).", plural(n, "item", "items"), f.store, how)
	if n == 0 {
		return fmt.Sprintf("Nothing forgotten: %q names no item of %s any more.", f.instruction, f.store)
	}
	var was, now []string
	if f.preview != nil {
		for _, it := range f.preview.Forgotten {
			was = append(was, it.ID)
		}
	}
	for _, it := range res.Forgotten {
		now = append(now, it.ID)
	}
	slices.Sort(was)
	slices.Sort(now)
	if !slices.Equal(was, now) {
		text += " The store changed since the preview: not exactly the items it showed."
	}
	return text
}
