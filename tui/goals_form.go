package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/cortex"
)

// goalsFilter is the list's filter line, parsed: "status:blocked,active
// tag:launch #ops type:goal pri:high owner:bob" and any other words, which
// must all appear in the title or description. status:all lists completed
// and archived items too, status:deleted soft-deleted ones as well.
type goalsFilter struct {
	raw string
	q   cortex.Query
	all bool   // status:all: every status, completed and archived too
	err string // what is wrong with the line (nothing is asked then)
}

func parseGoalsFilter(raw string) goalsFilter {
	f := goalsFilter{raw: raw}
	var text []string
	for _, tok := range strings.Fields(raw) {
		if tag, ok := strings.CutPrefix(tok, "#"); ok && tag != "" {
			f.q.Tags = append(f.q.Tags, strings.ToLower(tag))
			continue
		}
		name, value, ok := strings.Cut(tok, ":")
		values := splitList(value)
		if !ok || len(values) == 0 {
			text = append(text, tok)
			continue
		}
		switch strings.ToLower(name) {
		case "status", "is":
			for _, v := range values {
				if v == "all" || v == "any" {
					f.all = true
				} else if v == "deleted" {
					// Soft-deleted items too (revert brings one back).
					f.q.IncludeDeleted, f.all = true, true
				} else if !slices.Contains(f.q.Status, v) {
					f.q.Status = append(f.q.Status, v)
				}
			}
		case "tag", "tags":
			f.q.Tags = append(f.q.Tags, values...)
		case "type":
			if len(values) > 1 || (f.q.Type != "" && f.q.Type != values[0]) {
				f.fail("one type at a time: type:goal, type:action or type:question")
			}
			f.q.Type = strings.TrimSuffix(values[0], "s") // "goals" is fine too
		case "priority", "pri":
			f.q.Priority = append(f.q.Priority, values...)
		case "owner":
			f.q.Owner = value
		default:
			text = append(text, tok)
		}
	}
	f.q.Text = strings.Join(text, " ")
	if f.all {
		f.q.Status = nil
	}
	f.check("status", f.q.Status, append(slices.Clone(cortex.Statuses), "all", "deleted"))
	if f.q.Type != "" {
		f.check("type", []string{f.q.Type}, cortex.Types)
	}
	f.check("priority", f.q.Priority, cortex.Priorities)
	return f
}

func (f *goalsFilter) fail(format string, args ...any) {
	if f.err == "" {
		f.err = fmt.Sprintf(format, args...)
	}
}

func (f *goalsFilter) check(what string, values, allowed []string) {
	for _, v := range values {
		if !slices.Contains(allowed, v) {
			f.fail("unknown %s %q: use any of %s", what, v, strings.Join(allowed, ", "))
		}
	}
}

// splitList splits "a,b, c" (lower-cased, no empty parts).
func splitList(s string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ',' || r == ' ' }) {
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out
}

// aclForm shares an item (principal and permissions) or revokes a
// principal's access to it.
type aclForm struct {
	styles  *Styles
	revoke  bool
	itemID  string
	owner   string
	acl     []cortex.ACLEntry
	inputs  []textinput.Model // principal, then (to share) permissions
	focused int
	err     string
	send    loader // the share or revoke in flight
	width   int
}

func newACLForm(styles *Styles, it *cortex.Item, revoke bool, agent string) *aclForm {
	f := &aclForm{styles: styles, revoke: revoke, itemID: it.ID, owner: it.Owner, acl: it.ACL}
	principal := textinput.New()
	principal.Prompt = "principal:   "
	principal.Placeholder = "an agent id"
	principal.CharLimit = 200
	f.inputs = append(f.inputs, principal)
	if revoke {
		f.inputs[0].Prompt = "principal: "
		// The one agent that can be revoked, if there is just one.
		if others := f.others(); len(others) == 1 {
			f.inputs[0].SetValue(others[0].PrincipalID)
		}
	} else {
		perms := textinput.New()
		perms.Prompt = "permissions: "
		perms.Placeholder = strings.Join(cortex.Permissions, ",")
		perms.CharLimit = 100
		perms.SetValue("read")
		f.inputs = append(f.inputs, perms)
	}
	for i := range f.inputs {
		f.inputs[i].PromptStyle = styles.Prompt
		f.inputs[i].CursorEnd()
	}
	return f
}

// others are the ACL entries besides the owner's.
func (f *aclForm) others() []cortex.ACLEntry {
	var out []cortex.ACLEntry
	for _, e := range f.acl {
		if e.PrincipalID != f.owner {
			out = append(out, e)
		}
	}
	return out
}

func (f *aclForm) focus() tea.Cmd {
	for i := range f.inputs {
		f.inputs[i].Blur()
	}
	return f.inputs[f.focused].Focus()
}

func (f *aclForm) setWidth(w int) {
	f.width = w
	for i, limit := range []int{36, 22}[:len(f.inputs)] {
		f.inputs[i].Width = max(min(limit, w-len(f.inputs[i].Prompt)-4), 1)
	}
}

func (f *aclForm) update(msg tea.Msg) tea.Cmd {
	// The arrows only: letters are typed into the fields.
	if k, ok := msg.(tea.KeyMsg); ok && len(f.inputs) > 1 {
		switch {
		case key.Matches(k, navArrows.Next, navArrows.Down):
			f.focused = (f.focused + 1) % len(f.inputs)
			return f.focus()
		case key.Matches(k, navArrows.Prev, navArrows.Up):
			f.focused = (f.focused + len(f.inputs) - 1) % len(f.inputs)
			return f.focus()
		}
	}
	var cmd tea.Cmd
	f.inputs[f.focused], cmd = f.inputs[f.focused].Update(msg)
	if _, ok := msg.(tea.KeyMsg); ok {
		f.err = "" // an edit answers the error
	}
	return cmd
}

func (f *aclForm) principal() string { return strings.TrimSpace(f.inputs[0].Value()) }

// permissions parses "read, write" (or "all").
func (f *aclForm) permissions() ([]string, error) {
	if len(f.inputs) < 2 {
		return nil, nil
	}
	var out []string
	for _, p := range splitList(f.inputs[1].Value()) {
		switch {
		case p == "all":
			out = slices.Clone(cortex.Permissions)
		case !slices.Contains(cortex.Permissions, p):
			return nil, fmt.Errorf("unknown permission %q: use any of %s (or all)", p, strings.Join(cortex.Permissions, ", "))
		case !slices.Contains(out, p):
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("give at least one permission: any of %s", strings.Join(cortex.Permissions, ", "))
	}
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(cortex.Permissions, a) - slices.Index(cortex.Permissions, b)
	})
	return out, nil
}

// validate says what must be fixed before the form can be sent.
func (f *aclForm) validate() string {
	switch p := f.principal(); {
	case p == "" && f.revoke:
		return "give the agent whose access to revoke"
	case p == "":
		return "give the agent to share with"
	case strings.ContainsAny(p, " \t"):
		return fmt.Sprintf("%q: an agent id has no spaces", p)
	}
	if _, err := f.permissions(); err != nil {
		return err.Error()
	}
	return ""
}

// lines renders the form, one string per line.
func (f *aclForm) lines() []string {
	s := f.styles
	title := "Share " + f.itemID
	if f.revoke {
		title = "Revoke access to " + f.itemID
	}
	head := s.Rule.Render("── ") + s.Emphasis.Render(title) + " "
	head += s.Rule.Render(strings.Repeat("─", max(f.width-lineWidth(head)-1, 0)))
	out := []string{" " + head}
	for i, in := range f.inputs {
		line := " " + strings.TrimRight(in.View(), " ")
		if i == 1 {
			line = fitLine(line, 15+in.Width) + s.Muted.Render("  any of "+strings.Join(cortex.Permissions, ", "))
		}
		out = append(out, line)
	}
	if f.revoke {
		var who []string
		for _, e := range f.others() {
			who = append(who, fmt.Sprintf("%s (%s)", e.PrincipalID, strings.Join(e.Permissions, ", ")))
		}
		if len(who) == 0 {
			out = append(out, s.Muted.Render(" Only the owner, "+f.owner+", has access: there is nobody to revoke."))
		} else {
			out = append(out, s.Muted.Render(" has access: "+strings.Join(who, "; ")))
		}
	}
	switch {
	case f.send.busy:
		out = append(out, s.Muted.Render(" sending"+glyphEllipsis))
	case f.err != "":
		out = append(out, s.Failed.Render(" "+glyphFailed+" "+oneLine(f.err)))
	default:
		out = append(out, "")
	}
	return out
}
