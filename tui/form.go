package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// formField is one labelled line of a fieldForm.
type formField struct {
	// name is the label, and what an error about the field calls it
	// ("due", "priority").
	name  string
	input textinput.Model
	// hint is shown muted after the input: the values it takes.
	hint string
	// width is how wide the input gets at most.
	width int
	// overwrite: the first letter typed after the field gets the cursor
	// replaces its value (a choice such as "medium", or a number), rather
	// than being added to it ("mediumhigh").
	overwrite bool
}

// choice makes fd a field whose value is typed over.
func (fd formField) choice() formField {
	fd.overwrite = true
	return fd
}

// newField is a field named name holding value, with a placeholder shown
// while it is empty and a hint after it.
func newField(name, value, placeholder, hint string, width, limit int) formField {
	in := textinput.New()
	in.Placeholder = placeholder
	in.CharLimit = limit
	in.SetValue(value)
	return formField{name: name, input: in, hint: hint, width: width}
}

// fieldForm is the console's small form: a titled rule, one text input per
// field (tab and the arrows move between them), and a line that says what
// is wrong, naming the field and the fix, or that the form is being sent.
// The Goals tab creates and edits items with it, the Memory tab memorizes
// with it. The pane that opens it validates it, sends it with send, and
// routes keys to update while it is open.
type fieldForm struct {
	styles  *Styles
	title   string
	fields  []formField
	focused int
	labelW  int
	// armed: the focused field has had no key since it got the cursor
	// (its value is typed over, if it is a choice).
	armed bool
	err   string
	send  loader // the request in flight
	width int
}

// newFieldForm makes a form titled title with fields, the first focused.
func newFieldForm(styles *Styles, title string, fields ...formField) *fieldForm {
	f := &fieldForm{styles: styles, title: title, fields: fields}
	for _, fd := range fields {
		f.labelW = max(f.labelW, len(fd.name)+1)
	}
	for i := range f.fields {
		in := &f.fields[i].input
		in.Prompt = fitLine(f.fields[i].name+":", f.labelW) + " "
		in.PromptStyle = styles.Prompt
		in.CursorEnd()
	}
	return f
}

// index is the position of the field named name (-1 if none).
func (f *fieldForm) index(name string) int {
	for i, fd := range f.fields {
		if fd.name == name {
			return i
		}
	}
	return -1
}

// value is the named field's text, trimmed ("" for no such field).
func (f *fieldForm) value(name string) string {
	if i := f.index(name); i >= 0 {
		return strings.TrimSpace(f.fields[i].input.Value())
	}
	return ""
}

// fail says what is wrong with the named field ("due: ...") and puts the
// cursor there, so that the fix is typed where it is needed.
func (f *fieldForm) fail(name, format string, args ...any) tea.Cmd {
	f.err = name + ": " + fmt.Sprintf(format, args...)
	if i := f.index(name); i >= 0 {
		f.focused = i
	}
	return f.focus()
}

func (f *fieldForm) focus() tea.Cmd {
	f.armed = true
	for i := range f.fields {
		f.fields[i].input.Blur()
	}
	return f.fields[f.focused].input.Focus()
}

// setWidth fits the inputs in w columns.
func (f *fieldForm) setWidth(w int) {
	f.width = w
	for i := range f.fields {
		fd := &f.fields[i]
		fd.input.Width = max(min(fd.width, w-f.labelW-4), 1)
	}
}

// formKeys are the keys of an open form, for the footer.
func formKeys(verb string) []key.Binding {
	return []key.Binding{
		withHelp(nav.Enter, "enter", verb),
		withHelp(nav.Esc, "esc", "cancel"),
		key.NewBinding(key.WithKeys("tab", "shift+tab", "up", "down"), key.WithHelp("tab/↑↓", "next field")),
	}
}

// update moves between the fields (tab, shift+tab and the arrows: letters
// are typed) or hands msg to the focused input.
func (f *fieldForm) update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok && len(f.fields) > 1 {
		switch {
		case key.Matches(k, navArrows.Next, navArrows.Down):
			f.focused = (f.focused + 1) % len(f.fields)
			return f.focus()
		case key.Matches(k, navArrows.Prev, navArrows.Up):
			f.focused = (f.focused + len(f.fields) - 1) % len(f.fields)
			return f.focus()
		}
	}
	var cmd tea.Cmd
	fd := &f.fields[f.focused]
	in := &fd.input
	if k, ok := msg.(tea.KeyMsg); ok {
		if f.armed && fd.overwrite && k.Type == tea.KeyRunes {
			in.SetValue("")
		}
		f.armed = false
	}
	before := in.Value()
	*in, cmd = in.Update(msg)
	if in.Value() != before {
		f.err = "" // an edit answers the error
	}
	return cmd
}

// lines renders the form, one string per line: the title's rule, the
// fields, and the error or sending line.
func (f *fieldForm) lines() []string {
	s := f.styles
	head := s.Rule.Render("── ") + s.Emphasis.Render(f.title) + " "
	head += s.Rule.Render(strings.Repeat("─", max(f.width-lineWidth(head)-1, 0)))
	out := []string{" " + head}
	// The hints line up after the widest input that has one.
	hintCol := 0
	for _, fd := range f.fields {
		if fd.hint != "" {
			hintCol = max(hintCol, 1+len(fd.input.Prompt)+fd.input.Width+2)
		}
	}
	for _, fd := range f.fields {
		line := " " + strings.TrimRight(fd.input.View(), " ")
		if fd.hint != "" {
			line = fitLine(line, hintCol) + s.Muted.Render(" "+fd.hint)
		}
		out = append(out, truncateTo(line, f.width))
	}
	switch {
	case f.send.busy:
		out = append(out, s.Muted.Render(" sending"+glyphEllipsis))
	case f.err != "":
		out = append(out, truncateTo(s.Failed.Render(" "+glyphFailed+" "+oneLine(f.err)), f.width))
	default:
		out = append(out, "")
	}
	return out
}
