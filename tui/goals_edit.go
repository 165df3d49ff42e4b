package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
)

// openStatuses are the statuses of cortex.active's list: what is not done.
var openStatuses = []string{"active", "in_progress", "blocked"}

// dueLayouts are the ways a due date may be typed; a date alone is due at
// the end of that day.
var dueLayouts = []string{"2006-01-02 15:04", "2006-01-02T15:04", time.RFC3339, "2006-01-02"}

// dueFormat is how the form shows a due date to edit.
const dueFormat = "2006-01-02 15:04"

// parseDue reads a typed due date ("" is none).
func parseDue(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range dueLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if layout == "2006-01-02" {
				t = t.Add(24*time.Hour - time.Minute) // the end of the day
			}
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, fmt.Errorf("%q is not a date: use YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC), or leave it empty", s)
}

// itemForm creates a goal, action or question, or edits one: the fields a
// person sets by hand (title, priority, status, due, tags, progress, and
// the parent that links it under another item).
type itemForm struct {
	*fieldForm
	item *cortex.Item // the item edited; nil for a new one
}

// newItemForm is the form for a new item (it nil; under parent, if set)
// or for editing it.
func newItemForm(styles *Styles, it *cortex.Item, parent string) *itemForm {
	one := func(vals []string) string { return strings.Join(vals, ", ") }
	var fields []formField
	title, priority, status, due, tags, progress := "", "medium", "active", "", "", "0"
	if it != nil {
		title, priority, status, parent = it.Title, it.Priority, it.Status, it.Parent
		tags, progress = strings.Join(it.Tags, ", "), strconv.Itoa(it.Progress)
		if it.DueAt != nil {
			due = it.DueAt.UTC().Format(dueFormat)
		}
	} else {
		fields = append(fields, newField("type", "goal", "", one(cortex.Types), 10, 10).choice())
	}
	fields = append(fields,
		newField("title", title, "what it is about", "", 60, 1024),
		newField("priority", priority, "", one(cortex.Priorities), 10, 10).choice(),
		newField("status", status, "", one(cortex.Statuses), 12, 12).choice(),
		newField("due", due, "YYYY-MM-DD [HH:MM]", "empty: none", 19, 25),
		newField("tags", tags, "e.g. launch, q4", "", 40, 300),
		newField("progress", progress, "", "0-100 %", 4, 4).choice(),
		newField("parent", parent, "id of the parent item", "", 36, 200),
	)
	title = "New item"
	if it != nil {
		title = "Edit " + it.ID
	}
	f := &itemForm{fieldForm: newFieldForm(styles, title, fields...), item: it}
	if it == nil {
		f.focused = 1 // the title: a goal is what n makes most
	}
	return f
}

// verb is what enter does.
func (f *itemForm) verb() string {
	if f.item == nil {
		return "create"
	}
	return "save"
}

// check validates the typed values into the fields to send, as JSON
// values: on a mistake it says which field, and how to fix it (nothing is
// sent then). Editing, only the fields that changed are sent.
func (f *itemForm) check() (map[string]json.RawMessage, tea.Cmd) {
	out := map[string]json.RawMessage{}
	set := func(name string, v any) {
		b, _ := json.Marshal(v)
		out[name] = b
	}
	choose := func(name string, allowed []string) (string, bool) {
		v := strings.ToLower(f.value(name))
		return v, slices.Contains(allowed, v)
	}
	if f.item == nil {
		if v, ok := choose("type", cortex.Types); !ok {
			return nil, f.fail("type", "%q is not a type: use %s", v, strings.Join(cortex.Types, ", "))
		}
	}
	title := f.value("title")
	if title == "" {
		return nil, f.fail("title", "give the item a title")
	}
	priority, ok := choose("priority", cortex.Priorities)
	if !ok {
		return nil, f.fail("priority", "%q is not a priority: use %s", priority, strings.Join(cortex.Priorities, ", "))
	}
	status, ok := choose("status", cortex.Statuses)
	if !ok {
		return nil, f.fail("status", "%q is not a status: use %s", status, strings.Join(cortex.Statuses, ", "))
	}
	due, err := parseDue(f.value("due"))
	if err != nil {
		return nil, f.fail("due", "%s", err.Error())
	}
	progress, err := strconv.Atoi(strings.TrimSuffix(f.value("progress"), "%"))
	if f.value("progress") == "" {
		progress, err = 0, nil
	}
	if err != nil || progress < 0 || progress > 100 {
		return nil, f.fail("progress", "%q is not a percentage: give a whole number from 0 to 100", f.value("progress"))
	}
	tags := splitList(strings.ReplaceAll(f.value("tags"), "#", ""))
	if tags == nil {
		tags = []string{}
	}
	parent := f.value("parent")
	it := f.item
	if it == nil {
		set("title", title)
		set("priority", priority)
		set("status", status)
		if due != nil {
			set("due_at", due)
		}
		if len(tags) > 0 {
			set("tags", tags)
		}
		if progress != 0 {
			set("progress", progress)
		}
		if parent != "" {
			set("parent", parent)
		}
		return out, nil
	}
	if title != it.Title {
		set("title", title)
	}
	if priority != it.Priority {
		set("priority", priority)
	}
	if status != it.Status {
		set("status", status)
	}
	if !sameTime(due, it.DueAt) {
		set("due_at", due)
	}
	if !slices.Equal(tags, it.Tags) && (len(tags) > 0 || len(it.Tags) > 0) {
		set("tags", tags)
	}
	if progress != it.Progress {
		set("progress", progress)
	}
	if parent != it.Parent {
		set("parent", parent)
	}
	if len(out) == 0 {
		f.err = "nothing changed: edit a field, or esc leaves the item as it is"
		return nil, nil
	}
	return out, nil
}

// sameTime reports two due dates equal to the minute the form shows.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Minute).Equal(b.Truncate(time.Minute))
}

// submit validates the form and sends it: cortex.create for a new item,
// cortex.update (based on the version shown) for an edit.
func (p *goalsPane) submitItem() tea.Cmd {
	f := p.edit
	if f.send.busy {
		return nil
	}
	fields, cmd := f.check()
	if fields == nil {
		return cmd
	}
	if f.item == nil {
		typ := strings.ToLower(f.value("type"))
		return request(&p.requests, &f.send, cortex.ActionCreate, cortex.CreateArgs{Type: typ, Fields: fields})
	}
	version := f.item.GlobalVersion
	return request(&p.requests, &f.send, cortex.ActionUpdate, cortex.UpdateArgs{ID: f.item.ID, Updates: fields, ExpectedVersion: &version})
}

// openItemForm opens the form: to edit it, or (it nil) to create an item
// under parent.
func (p *goalsPane) openItemForm(it *cortex.Item, parent string) tea.Cmd {
	p.form = nil
	p.edit = newItemForm(p.styles, it, parent)
	p.edit.setWidth(p.overlayWidth())
	p.layoutItem()
	return p.edit.focus()
}

// itemSaved takes the answer to the form: the item made or changed, or
// what the engine refused (shown in the form, which stays open).
func (p *goalsPane) itemSaved(req int, it *cortex.Item, err error) tea.Cmd {
	f := p.edit
	if latest, _ := f.send.answer(req); !latest {
		return nil
	}
	if err != nil {
		f.err = errs.As(err).Message
		return nil // the root shows it in the status line too
	}
	p.edit = nil
	p.layoutItem()
	if it == nil {
		return showStatus("unexpected cortex answer", true)
	}
	text := fmt.Sprintf("Saved %s: it is now v%d.", it.ID, it.GlobalVersion)
	if f.item == nil {
		text = fmt.Sprintf("Created %s %s: %s.", it.Type, it.ID, oneLine(it.Title))
		p.list.jump = it.ID // the cursor goes to it once the list has it
	}
	return tea.Batch(showStatus(text, false), p.reloadOpen(), p.refresh(&p.list.load, p.loadList))
}

// goalsAct is a one-key action in flight on an item: complete or delete.
type goalsAct struct {
	load loader
	verb string // "Completed", "Deleted"
	id   string
}

// complete marks the item done (status completed).
func (p *goalsPane) complete(it *cortex.Item) tea.Cmd {
	if it == nil {
		return nil
	}
	if it.DeletedAt != nil {
		return showStatus(it.ID+" is deleted: the lineage's r reverts it to a version before the delete", false)
	}
	if it.Status == "completed" {
		return showStatus(it.ID+" is completed already", false)
	}
	p.act = goalsAct{verb: "Completed", id: it.ID}
	return request(&p.requests, &p.act.load, cortex.ActionUpdate, cortex.UpdateArgs{ID: it.ID, Updates: map[string]json.RawMessage{"status": json.RawMessage(`"completed"`)}})
}

// askDelete asks before deleting the item.
func (p *goalsPane) askDelete(it *cortex.Item) tea.Cmd {
	if it == nil {
		return nil
	}
	if it.DeletedAt != nil {
		return showStatus(it.ID+" is deleted already: the lineage's r reverts it to a version before the delete", false)
	}
	p.remove.open(fmt.Sprintf("Delete %s %q? It stays in its lineage.", it.ID, oneLine(it.Title)), it.ID)
	p.layoutItem()
	return nil
}

func (p *goalsPane) removeKey(msg tea.KeyMsg) tea.Cmd {
	ans, id := p.remove.handleKey(msg)
	p.remove.close() // n, esc or any other key: nothing happens
	p.layoutItem()
	if ans != answerYes {
		return nil
	}
	p.act = goalsAct{verb: "Deleted", id: id}
	return request(&p.requests, &p.act.load, cortex.ActionDelete, cortex.IDArgs{ID: id})
}

// actDone takes the answer to a complete or a delete.
func (p *goalsPane) actDone(req int, err error) tea.Cmd {
	if latest, _ := p.act.load.answer(req); !latest {
		return nil
	}
	if err != nil {
		return nil // the root shows it in the status line
	}
	text := fmt.Sprintf("%s %s.", p.act.verb, p.act.id)
	if p.act.verb == "Deleted" && !p.list.deleted {
		text += " d shows deleted items."
	}
	return tea.Batch(showStatus(text, false), p.reloadOpen(), p.refresh(&p.list.load, p.loadList))
}

// selectedItem is the item the keys act on: the open one, or the one
// under the cursor in the list.
func (p *goalsPane) selectedItem() *cortex.Item {
	if p.level != levelList {
		return p.open.item
	}
	if i := p.list.cursor.Index(); i < len(p.list.items) {
		return p.list.items[i]
	}
	return nil
}

// quietFailure: the loads that follow the open item say themselves that
// it is no longer shared; the status line need not shout it.
func (p *goalsPane) quietFailure(req int, err error) bool {
	if errs.KindOf(err) != errs.Permission {
		return false
	}
	return req == p.open.load.req || req == p.lineage.load.req || req == p.open.childrenLoad.req
}

// notShared says that an item or its lineage can no longer be read: the
// owner revoked the viewer's access, or the item went away.
func notShared(err error, what string) string {
	if errs.KindOf(err) == errs.Permission {
		return what + " is no longer shared with you."
	}
	return errs.As(err).Message
}
