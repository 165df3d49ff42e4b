package tui

import (
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
	store string
	input textinput.Model
	hard  bool
	stage forgetStage
	load  loader // the dry run or the forget in flight

	// The preview: the dry run's answer to instruction, its items' rows
	// scrolled, and the question y answers.
	instruction string
	preview     *memory.ForgetResult
	rows        scrollView
	confirm     confirm[string] // the instruction y forgets
	// changed: the store changed while the preview showed, and the
	// preview was made again.
	changed bool

	err   string
	forms []string // what the store understands, after an instruction it does not
}

func newForgetBox(styles *Styles, store string) *forgetBox {
	in := textinput.New()
	in.Prompt = "forget: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "e.g. oldest 3 · items tagged draft · about lisbon · older than 30 days"
	in.CharLimit = 500
	return &forgetBox{store: store, input: in, rows: scrollView{
		Above: func(n int) string { return fmt.Sprintf("   %s %d more (↑, pgup)", glyphUp, n) },
		Below: func(n int) string { return fmt.Sprintf("   %s %d more (↓, pgdn)", glyphDown, n) },
	}}
}

func (f *forgetBox) focus() tea.Cmd { return f.input.Focus() }

// setWidth fits the instruction line in w columns.
func (f *forgetBox) setWidth(w int) {
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
	cmd := request(&p.requests, &f.load, memory.ActionForget,
		memory.ForgetArgs{Store: f.store, Instruction: instruction, Mode: f.mode(), DryRun: !apply})
	f.instruction, f.err, f.forms = instruction, "", nil
	f.confirm.close() // y answers a preview on screen, none in flight
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
	f.changed = false
	f.rows.home()
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
		f.ask()
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
		if key.Matches(msg, nav.Yes) && f.changes() == 0 {
			return nil // soft on items already forgotten: nothing to do
		}
		switch answer, instruction := f.confirm.handleKey(msg); answer {
		case answerYes:
			return f.run(p, instruction, true)
		case answerNo, answerCancel:
			return f.edit(p)
		}
		f.rows.handleKey(msg)
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
	f.stage, f.preview, f.load, f.changed = forgetEditing, nil, loader{}, false
	f.confirm.close()
	p.layout()
	return f.focus()
}

// showPreview shows a dry run's answer and asks whether to forget what it
// names.
func (f *forgetBox) showPreview(p *memoryPane, res memory.ForgetResult) {
	f.preview, f.stage = &res, forgetConfirming
	f.confirm.open("", f.instruction)
	f.ask()
	p.layout()
}

// ask words the question for the preview and the mode: what y does, in
// the Failed style when it erases.
func (f *forgetBox) ask() {
	if !f.confirm.Active() {
		return
	}
	n := f.changes()
	what := "it"
	if n > 1 {
		what = "these " + plural(n, "item", "items")
	}
	if f.preview != nil && n < len(f.preview.Forgotten) && n > 0 {
		what = "the " + plural(n, "live item", "live items")
	}
	f.confirm.Danger = f.hard
	if f.hard {
		f.confirm.setQuestion(fmt.Sprintf("Erase %s for good (hard, no undo)? ", what))
		f.confirm.Hint = "y erases · n changes the instruction"
		return
	}
	f.confirm.setQuestion(fmt.Sprintf("Forget %s (soft)? ", what))
	f.confirm.Hint = "y forgets · n changes the instruction"
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
func (f *forgetBox) result(p *memoryPane, msg resultMsg[memory.ForgetResult]) tea.Cmd {
	if latest, _ := f.load.answer(msg.req); !latest {
		return nil // given up on (esc), or made again since
	}
	applying := f.stage == forgetApplying
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
	res := msg.value
	res.Forgotten = slices.DeleteFunc(res.Forgotten, func(it *memory.Item) bool { return it == nil })
	if !applying {
		f.showPreview(p, res)
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
