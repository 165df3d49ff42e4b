package tui

import (
	"fmt"
	"slices"
	"strings"

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
// principal's access to it: the console's fieldForm with the item's access
// list under the fields when revoking.
type aclForm struct {
	*fieldForm
	revoke bool
	itemID string
	owner  string
	acl    []cortex.ACLEntry
}

func newACLForm(styles *Styles, it *cortex.Item, revoke bool, agent string) *aclForm {
	f := &aclForm{revoke: revoke, itemID: it.ID, owner: it.Owner, acl: it.ACL}
	title := "Share " + it.ID
	fields := []formField{newField("principal", "", "an agent id", "", 36, 200)}
	if revoke {
		title = "Revoke access to " + it.ID
		// The one agent that can be revoked, if there is just one.
		if others := f.others(); len(others) == 1 {
			fields[0].input.SetValue(others[0].PrincipalID)
		}
	} else {
		fields = append(fields, newField("permissions", "read", strings.Join(cortex.Permissions, ","), "any of "+strings.Join(cortex.Permissions, ", "), 22, 100).choice())
	}
	f.fieldForm = newFieldForm(styles, title, fields...)
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

func (f *aclForm) principal() string { return f.value("principal") }

// permissions parses "read, write" (or "all").
func (f *aclForm) permissions() ([]string, error) {
	if f.revoke {
		return nil, nil
	}
	var out []string
	for _, p := range splitList(f.value("permissions")) {
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

// check says what must be fixed before the form can be sent, naming the
// field (false then, the cursor on that field).
func (f *aclForm) check() (bool, tea.Cmd) {
	switch p := f.principal(); {
	case p == "" && f.revoke:
		return false, f.fail("principal", "give the agent whose access to revoke")
	case p == "":
		return false, f.fail("principal", "give the agent to share with")
	case strings.ContainsAny(p, " \t"):
		return false, f.fail("principal", "%q: an agent id has no spaces", p)
	}
	if _, err := f.permissions(); err != nil {
		return false, f.fail("permissions", "%s", err.Error())
	}
	return true, nil
}

// lines renders the form, one string per line: when revoking, who has
// access goes between the field and the error line.
func (f *aclForm) lines() []string {
	out := f.fieldForm.lines()
	if !f.revoke {
		return out
	}
	s := f.styles
	var who []string
	for _, e := range f.others() {
		who = append(who, fmt.Sprintf("%s (%s)", e.PrincipalID, strings.Join(e.Permissions, ", ")))
	}
	line := s.Muted.Render(" has access: " + strings.Join(who, "; "))
	if len(who) == 0 {
		line = s.Muted.Render(" Only the owner, " + f.owner + ", has access: there is nobody to revoke.")
	}
	last := len(out) - 1
	return append(append(out[:last:last], line), out[last])
}
