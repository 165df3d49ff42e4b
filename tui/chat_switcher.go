package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// chatSwitcher lists the conversations to switch to; a name that is none
// of them starts a new one.
type chatSwitcher struct {
	input  textinput.Model
	convs  []history.ConversationInfo
	loaded bool
	load   loader
	err    string
	// list is the cursor over the rows; until it moves (moved), it stays
	// on the conversation shown.
	list  listCursor
	moved bool
}

// switchRow is one row of the switcher: a conversation, or the new one the
// typed name would start.
type switchRow struct {
	name, backend string
	isNew         bool
}

func (p *chatPane) openSwitcher() tea.Cmd {
	in := textinput.New()
	in.Prompt = "conversation: "
	in.PromptStyle = p.styles.Prompt
	in.Placeholder = "filter, or name a new one"
	in.CharLimit = 200
	p.switcher = &chatSwitcher{input: in} // on the shown one, once listed
	p.switcher.input.Width = max(p.mainWidth()-len(in.Prompt)-4, 1)
	p.input.Blur()
	p.find.input.Blur()
	p.render()
	return tea.Batch(p.loadSwitcher(), p.switcher.input.Focus())
}

func (p *chatPane) loadSwitcher() tea.Cmd {
	return request(&p.requests, &p.switcher.load, history.ActionList, history.ListArgs{})
}

// setList takes history.list's answer, and asks again if a conversation
// was written or moved meanwhile.
func (s *chatSwitcher) setList(p *chatPane, msg resultMsg[history.ListResult]) tea.Cmd {
	latest, again := s.load.answer(msg.req)
	if !latest {
		return nil
	}
	s.loaded = true
	if msg.err != nil {
		s.err = errs.As(msg.err).Message
	} else {
		s.err, s.convs = "", msg.value.Conversations
	}
	p.render()
	if again {
		return p.loadSwitcher()
	}
	return nil
}

// typed is the name typed, trimmed.
func (s *chatSwitcher) typed() string { return strings.TrimSpace(s.input.Value()) }

// rows are the conversations whose name contains what is typed (the one
// shown among them even before its first message), then the new one the
// typed name would start, unless it exists.
func (s *chatSwitcher) rows(current string) []switchRow {
	convs := s.convs
	known := false
	for _, c := range convs {
		known = known || c.Conversation == current
	}
	if !known {
		convs = append([]history.ConversationInfo{{Conversation: current, Backend: "new, nothing said yet"}}, convs...)
	}
	typed := s.typed()
	var out []switchRow
	exact := false
	for _, c := range convs {
		if strings.Contains(strings.ToLower(c.Conversation), strings.ToLower(typed)) {
			out = append(out, switchRow{name: c.Conversation, backend: c.Backend})
		}
		exact = exact || c.Conversation == typed
	}
	if typed != "" && !exact {
		out = append(out, switchRow{name: typed, isNew: true})
	}
	return out
}

// current is the row under the cursor.
func (s *chatSwitcher) current(conv string) *switchRow {
	rows := s.rows(conv)
	if len(rows) == 0 {
		return nil
	}
	return &rows[s.at(rows, conv)]
}

// at is the cursor's row; before the first move, the shown conversation's.
func (s *chatSwitcher) at(rows []switchRow, conv string) int {
	s.list.setLen(len(rows))
	if !s.moved {
		s.list.keep(func(i int) bool { return rows[i].name == conv && !rows[i].isNew })
	}
	return s.list.Index()
}

// validName says what is wrong with a new conversation's name.
func validName(name string) string {
	switch {
	case strings.ContainsAny(name, "/\n"):
		return "a conversation's name has no '/'"
	case len(name) > 200:
		return "a conversation's name is at most 200 characters"
	}
	return ""
}

func (p *chatPane) switcherKey(msg tea.KeyMsg) tea.Cmd {
	s := p.switcher
	k := p.keys
	switch {
	case key.Matches(msg, k.Cancel), key.Matches(msg, k.Switch):
		p.switcher = nil
		p.render()
		return p.refocus()
	case key.Matches(msg, k.Pick):
		row := s.current(p.conv)
		if row == nil {
			return nil
		}
		if row.isNew {
			if problem := validName(row.name); problem != "" {
				s.err = problem
				return nil
			}
		}
		return p.switchTo(row.name)
	case key.Matches(msg, navArrows.Up), key.Matches(msg, navArrows.Down):
		s.at(s.rows(p.conv), p.conv)
		s.moved = true
		if key.Matches(msg, navArrows.Up) {
			s.list.up()
		} else {
			s.list.down()
		}
		return nil
	}
	before := s.input.Value()
	var cmd tea.Cmd
	s.input, cmd = s.input.Update(msg)
	if s.input.Value() != before {
		s.err, s.moved = "", true
		// An exact match goes first; otherwise the first that contains it.
		rows := s.rows(p.conv)
		s.list.setLen(len(rows))
		if !s.list.keep(func(i int) bool { return rows[i].name == s.typed() && !rows[i].isNew }) {
			s.list.reset()
		}
	}
	return cmd
}

// switcherLines renders the switcher in the main area.
func (p *chatPane) switcherLines(w int) []string {
	st := p.styles
	s := p.switcher
	lines := []string{" " + st.Emphasis.Render("Conversations") + st.Muted.Render(" · enter switches, a new name starts one"), ""}
	switch {
	case s.err != "":
		lines = append(lines, st.Failed.Render(" ✗ "+oneLine(s.err)), "")
	case !s.loaded:
		lines = append(lines, st.Muted.Render(" Loading…"))
	}
	rows := s.rows(p.conv)
	nameW := 8
	for _, r := range rows {
		if !r.isNew {
			nameW = max(nameW, min(lineWidth(r.name)+2, w/2))
		}
	}
	cur := s.at(rows, p.conv)
	for i, r := range rows {
		var text string
		if r.isNew {
			text = fmt.Sprintf("+ start a new conversation %q", oneLine(r.name))
		} else {
			text = fitLine(truncateTo(oneLine(r.name), nameW-2), nameW) + oneLine(r.backend)
			if r.name == p.conv {
				text += " · shown"
			}
		}
		text = truncateTo(text, w-4)
		switch {
		case i == cur:
			lines = append(lines, " "+st.Selected.Render("▸ "+text))
		case r.isNew:
			lines = append(lines, "   "+st.Prompt.Render(text))
		default:
			lines = append(lines, "   "+text)
		}
	}
	if s.loaded && len(rows) == 0 {
		lines = append(lines, st.Muted.Render(" No conversation yet."))
	}
	return lines
}
