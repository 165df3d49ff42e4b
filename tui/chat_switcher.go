package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/errs"
)

// chatSwitcher lists the conversations to switch to; a name that is none
// of them starts a new one.
type chatSwitcher struct {
	input  textinput.Model
	convs  []chatConversation
	loaded bool
	busy   bool
	err    string
	cursor int
	req    int
}

// chatConversation is one entry of history.list.
type chatConversation struct {
	Conversation string `json:"conversation"`
	Backend      string `json:"backend"`
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
	p.switcher = &chatSwitcher{input: in, cursor: -1} // on the shown one, once listed
	p.switcher.input.Width = max(p.mainWidth()-len(in.Prompt)-4, 1)
	p.input.Blur()
	p.search.Blur()
	p.render()
	return tea.Batch(p.loadSwitcher(), p.switcher.input.Focus())
}

func (p *chatPane) loadSwitcher() tea.Cmd {
	cmd := p.run(nil, "history.list", struct{}{})
	p.switcher.req, p.switcher.busy = p.seq, true
	return cmd
}

func (s *chatSwitcher) setList(msg actionResultMsg) {
	s.busy, s.loaded = false, true
	var res struct {
		Conversations []chatConversation `json:"conversations"`
	}
	switch {
	case msg.err != nil:
		s.err = errs.As(msg.err).Message
	case json.Unmarshal(msg.result, &res) != nil:
		s.err = "unexpected history.list result"
	default:
		s.err, s.convs = "", res.Conversations
	}
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
		convs = append([]chatConversation{{Conversation: current, Backend: "new, nothing said yet"}}, convs...)
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
	if s.cursor < 0 {
		for i, r := range rows {
			if r.name == conv && !r.isNew {
				return i
			}
		}
	}
	return min(max(s.cursor, 0), max(len(rows)-1, 0))
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
	case msg.String() == "up", msg.String() == "down":
		rows := s.rows(p.conv)
		s.cursor = s.at(rows, p.conv)
		if msg.String() == "up" {
			s.cursor = max(s.cursor-1, 0)
		} else {
			s.cursor = min(s.cursor+1, max(len(rows)-1, 0))
		}
		return nil
	}
	before := s.input.Value()
	var cmd tea.Cmd
	s.input, cmd = s.input.Update(msg)
	if s.input.Value() != before {
		s.cursor, s.err = 0, ""
		// An exact match goes first; otherwise the first that contains it.
		for i, r := range s.rows(p.conv) {
			if r.name == s.typed() && !r.isNew {
				s.cursor = i
				break
			}
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
