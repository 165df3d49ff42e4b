package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

const (
	goalsPaneID paneID = "goals"
	// goalsListLimit is the most items the list asks for.
	goalsListLimit = 500
	// goalsSplitWidth is the width from which the list stays on the left
	// and the item under the cursor shows on the right.
	goalsSplitWidth = 150
)

// goalsLevel is how deep the pane is: the list, an item's fields, or an
// item's lineage.
type goalsLevel int

const (
	levelList goalsLevel = iota
	levelDetail
	levelLineage
)

type goalsKeys struct {
	Move    key.Binding
	Open    key.Binding
	Filter  key.Binding
	Clear   key.Binding
	Ends    key.Binding
	Page    key.Binding
	Lineage key.Binding
	Back    key.Binding
	Scroll  key.Binding
	Version key.Binding
	Revert  key.Binding
	Share   key.Binding
	Revoke  key.Binding
	Diff    key.Binding
	Apply   key.Binding
	Cancel  key.Binding
	Field   key.Binding
	// New creates an item (under the open one, from its detail); Edit,
	// Complete and Delete act on the open item or the one under the
	// cursor; Deleted shows soft-deleted items too, or hides them.
	New      key.Binding
	Edit     key.Binding
	Complete key.Binding
	Delete   key.Binding
	Deleted  key.Binding
}

func newGoalsKeys() goalsKeys {
	return goalsKeys{
		Move:    nav.Move,
		Open:    withHelp(nav.Enter, "enter", "open"),
		Filter:  key.NewBinding(key.WithKeys("/", "f"), key.WithHelp("/", "filter")),
		Clear:   withHelp(nav.Esc, "esc", "clear filter"),
		Ends:    nav.Ends,
		Page:    nav.Pages,
		Lineage: key.NewBinding(key.WithKeys("enter", "l"), key.WithHelp("enter", "lineage")),
		Back:    key.NewBinding(key.WithKeys("esc", "backspace", "h"), key.WithHelp("esc", "back")),
		Scroll:  key.NewBinding(key.WithKeys("up", "down", "k", "j", "pgup", "pgdown"), key.WithHelp("↑/↓", "scroll")),
		Version: key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓", "version")),
		Revert:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "revert")),
		Share:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "share")),
		Revoke:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "revoke")),
		Diff:    withHelp(nav.Pages, "pgup/pgdn", "scroll diff"),
		Apply:   withHelp(nav.Enter, "enter", "apply"),
		Cancel:  nav.Esc,
		Field:   key.NewBinding(key.WithKeys("tab", "shift+tab", "up", "down"), key.WithHelp("tab", "next field")),

		New:      key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "new")),
		Edit:     key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit")),
		Complete: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "complete")),
		Delete:   key.NewBinding(key.WithKeys("D", "delete"), key.WithHelp("D", "delete")),
		Deleted:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "show deleted")),
	}
}

// goalsPane is the Goals tab: the cortex's items in active order with a
// filter line; an item's fields with their versions; its lineage (the audit
// trail) as a timeline whose versions show their diff and can be reverted
// to; and a small form to share an item or revoke access.
type goalsPane struct {
	requests // the engine, and the numbering of this pane's requests
	styles   *Styles
	keys     goalsKeys

	width, height int
	level         goalsLevel

	list    goalsList    // the items, with the filter line
	open    goalsOpen    // the open item (or, split, the one under the cursor)
	lineage goalsLineage // the open item's audit trail

	confirm confirm[revertConfirm] // the question asked before a revert
	revert  goalsRevert            // the revert in flight
	form    *aclForm               // the share or revoke form, while open
	edit    *itemForm              // the create or edit form, while open
	remove  confirm[string]        // the question asked before a delete (the id)
	act     goalsAct               // the complete or delete in flight
}

// goalsList is the list of items and its filter line.
type goalsList struct {
	load    loader
	items   []*cortex.Item
	count   int // how many match, when more than the list holds
	loaded  bool
	err     string
	cursor  listCursor
	filter  goalsFilter
	editing bool // the filter line has the keyboard
	input   textinput.Model
	// deleted: soft-deleted items show too (d).
	deleted bool
	// depth is how deep under its parent each listed item is (0: its
	// parent is not listed); the list keeps children under their parent.
	depth map[string]int
	// jump is an item to put the cursor on once the list holds it (one
	// just created).
	jump string
}

// goalsOpen is the open item and the scrolled view of its fields.
type goalsOpen struct {
	id     string
	item   *cortex.Item
	err    string
	load   loader
	detail scrollView
	// children are the items under it, and their load.
	children     []*cortex.Item
	childrenLoad loader
}

// goalsLineage is the open item's audit trail: its entries, whether their
// chain verifies, the selected entry and the scrolled view of its diff.
type goalsLineage struct {
	load    loader
	history []cortex.Mutation
	chain   cortex.ChainCheck
	loaded  bool
	err     string
	sel     listCursor // the selected entry of history
	want    int        // the version to select when the history comes (0: keep)
	diff    scrollView
}

// goalsRevert is the revert in flight: its request and what it reverts.
type goalsRevert struct {
	load loader
	what revertConfirm
}

// revertConfirm is what the revert question is about.
type revertConfirm struct {
	id      string
	version int
}

// revertQuestion asks about reverting c when the next version is next.
func revertQuestion(c revertConfirm, next int) string {
	return fmt.Sprintf("Revert %s to v%d? This creates v%d.", c.id, c.version, next)
}

func newGoalsPane(engine conn.Conn, styles *Styles) *goalsPane {
	in := textinput.New()
	in.Prompt = "filter: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "e.g. status:blocked #launch (enter applies, esc cancels)"
	in.CharLimit = 300
	return &goalsPane{
		requests: requests{conn: engine, pane: goalsPaneID},
		styles:   styles,
		keys:     newGoalsKeys(),
		list:     goalsList{input: in},
		// The fields scroll without indicators: the header shows how far.
		open:    goalsOpen{detail: scrollView{Above: fixedNote(""), Below: fixedNote("")}},
		lineage: goalsLineage{diff: scrollView{Above: fixedNote(glyphUp + " more above (pgup)"), Below: fixedNote(glyphDown + " more below (pgdn)")}},
		confirm: confirm[revertConfirm]{Yes: "revert", Hint: " (y/n)", CancelKey: "n"},
		remove:  confirm[string]{Yes: "delete", Danger: true},
	}
}

func (p *goalsPane) Title() string { return "Goals" }

func (p *goalsPane) Init() tea.Cmd { return p.loadList() }

func (p *goalsPane) Focus() tea.Cmd { return nil }

func (p *goalsPane) Blur() {
	p.stopEditing(false)
	p.confirm.close()
	p.remove.close()
	p.form = nil
	p.edit = nil
}

// Capturing: the filter line, the forms and the questions take every key
// (q and 1-7 included).
func (p *goalsPane) Capturing() bool {
	return p.list.editing || p.confirm.Active() || p.remove.Active() || p.form != nil || p.edit != nil
}

// KeyMap is every binding of the pane's keys struct.
func (p *goalsPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *goalsPane) Keys() []key.Binding {
	k := p.keys
	switch {
	case p.list.editing:
		return []key.Binding{k.Apply, k.Cancel}
	case p.confirm.Active():
		return p.confirm.Keys()
	case p.remove.Active():
		return p.remove.Keys()
	case p.edit != nil:
		return formKeys(p.edit.verb())
	case p.form != nil:
		verb := "share"
		if p.form.revoke {
			verb = "revoke"
		}
		keys := []key.Binding{withHelp(k.Apply, "enter", verb), k.Cancel}
		if !p.form.revoke {
			keys = append(keys, k.Field)
		}
		return keys
	}
	deleted := k.Deleted
	if p.list.deleted {
		deleted = withHelp(k.Deleted, "d", "hide deleted")
	}
	switch p.level {
	case levelDetail:
		return []key.Binding{k.Lineage, k.Back, k.Edit, k.Complete, k.Delete, withHelp(k.New, "n", "new under it"), k.Share, k.Revoke, k.Scroll}
	case levelLineage:
		return []key.Binding{k.Version, k.Revert, k.Back, k.Share, k.Revoke, k.Diff}
	}
	keys := []key.Binding{k.Open, k.Filter}
	if p.list.filter.raw != "" {
		keys = append(keys, k.Clear)
	}
	return append(keys, k.New, k.Edit, k.Complete, k.Delete, deleted, k.Move, k.Ends, k.Page)
}

// split reports whether the list and the open item show side by side.
func (p *goalsPane) split() bool { return p.width >= goalsSplitWidth }

// leftWidth is the list's width when split.
func (p *goalsPane) leftWidth() int { return p.width * 9 / 20 }

// itemWidth is the width the open item is rendered in.
func (p *goalsPane) itemWidth() int {
	if p.split() {
		return p.width - p.leftWidth() - 1
	}
	return p.width
}

func (p *goalsPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.list.input.Width = max(w-len(p.list.input.Prompt)-3, 1)
	if p.form != nil {
		p.form.setWidth(p.itemWidth())
	}
	if p.edit != nil {
		p.edit.setWidth(p.overlayWidth())
	}
	p.layoutItem()
}

// --- loading ---

func (p *goalsPane) loadList() tea.Cmd {
	f := p.list.filter
	if f.err != "" {
		return nil
	}
	ref := cortex.ActionActive
	if len(f.q.Status) > 0 || f.all {
		ref = cortex.ActionQuery
	}
	q := f.q
	q.Limit = goalsListLimit
	if p.list.deleted && !q.IncludeDeleted {
		// The open items and the deleted ones (a delete archives).
		q.IncludeDeleted = true
		if len(q.Status) == 0 && !f.all {
			q.Status = append(slices.Clone(openStatuses), "archived")
		}
		ref = cortex.ActionQuery
	}
	return request(&p.requests, &p.list.load, ref, q)
}

func (p *goalsPane) loadItem() tea.Cmd {
	if p.open.id == "" {
		return nil
	}
	return request(&p.requests, &p.open.load, cortex.ActionGet, cortex.GetArgs{ID: p.open.id, IncludeDeleted: true})
}

func (p *goalsPane) loadHistory() tea.Cmd {
	if p.open.id == "" {
		return nil
	}
	return request(&p.requests, &p.lineage.load, cortex.ActionHistory, cortex.IDArgs{ID: p.open.id})
}

// loadChildren asks for the items under the open one.
func (p *goalsPane) loadChildren() tea.Cmd {
	if p.open.id == "" {
		return nil
	}
	return request(&p.requests, &p.open.childrenLoad, cortex.ActionQuery, cortex.Query{Parent: p.open.id, Limit: goalsListLimit})
}

// show opens an item (loading it and its lineage) unless it is open.
func (p *goalsPane) show(id string) tea.Cmd {
	if id == "" || id == p.open.id {
		return nil
	}
	p.open.id, p.open.item, p.open.err, p.open.children = id, nil, "", nil
	l := &p.lineage
	l.history, l.loaded, l.err, l.chain, l.want = nil, false, "", cortex.ChainCheck{}, 0
	l.sel.setLen(0)
	p.confirm.close()
	p.remove.close()
	p.form = nil
	if p.edit != nil && p.edit.item != nil {
		p.edit = nil // the edit was of the item shown before
	}
	p.layoutItem()
	p.open.detail.home()
	return tea.Batch(p.loadItem(), p.loadHistory(), p.loadChildren())
}

// reloadOpen refreshes the open item and its lineage.
func (p *goalsPane) reloadOpen() tea.Cmd {
	if p.open.id == "" {
		return nil
	}
	return tea.Batch(p.refresh(&p.open.load, p.loadItem), p.refresh(&p.lineage.load, p.loadHistory), p.refresh(&p.open.childrenLoad, p.loadChildren))
}

// reloadAll loads again what the tab shows (events were missed): the list
// and the open item with its lineage and children.
func (p *goalsPane) reloadAll() tea.Cmd {
	return tea.Batch(p.refresh(&p.list.load, p.loadList), p.reloadOpen())
}

func (p *goalsPane) Update(msg tea.Msg) tea.Cmd {
	// A resize to a split screen shows the item under the cursor; SetSize
	// cannot load it, the next message does.
	if id := p.current(); p.split() && p.level == levelList && id != "" && id != p.open.id {
		return tea.Batch(p.show(id), p.Update(msg))
	}
	switch msg := msg.(type) {
	case resultMsg[cortex.QueryResult]:
		if msg.req == p.open.childrenLoad.req {
			return p.childrenResult(msg)
		}
		return p.listResult(msg)
	case resultMsg[cortex.ItemResult]:
		if latest, again := p.open.load.answer(msg.req); latest {
			return p.itemResult(msg, again)
		}
		if latest, _ := p.revert.load.answer(msg.req); latest {
			return p.revertResult(msg)
		}
		if p.edit != nil && msg.req == p.edit.send.req {
			return p.itemSaved(msg.req, msg.value.Item, msg.err)
		}
		if msg.req == p.act.load.req {
			return p.actDone(msg.req, msg.err)
		}
		return nil // stale
	case resultMsg[cortex.UpdateResult]:
		if p.edit != nil && msg.req == p.edit.send.req {
			return p.itemSaved(msg.req, msg.value.Item, msg.err)
		}
		if msg.req == p.act.load.req {
			return p.actDone(msg.req, msg.err)
		}
		return nil
	case resultMsg[cortex.HistoryResult]:
		return p.historyResult(msg)
	case resultMsg[cortex.ACLResult]:
		return p.formResult(msg)
	case events.Event:
		ev, ok := cortex.EventItemMutated.Of(msg)
		if !ok {
			return nil
		}
		cmds := []tea.Cmd{p.refresh(&p.list.load, p.loadList)}
		if ev.ItemID == p.open.id {
			cmds = append(cmds, p.reloadOpen())
		} else if p.open.id != "" {
			// It may be (or have been) one of the open item's children.
			cmds = append(cmds, p.refresh(&p.open.childrenLoad, p.loadChildren))
		}
		return tea.Batch(cmds...)
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	// Cursor blinks and the like go to the input that has the keyboard.
	var cmd tea.Cmd
	switch {
	case p.list.editing:
		p.list.input, cmd = p.list.input.Update(msg)
	case p.edit != nil:
		cmd = p.edit.update(msg)
	case p.form != nil:
		cmd = p.form.update(msg)
	}
	return cmd
}

func (p *goalsPane) childrenResult(msg resultMsg[cortex.QueryResult]) tea.Cmd {
	latest, again := p.open.childrenLoad.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err == nil {
		p.open.children = msg.value.Items
	} else {
		p.open.children = nil // the item itself says why (no longer shared)
	}
	p.layoutItem()
	if again {
		return p.loadChildren()
	}
	return nil
}

func (p *goalsPane) itemResult(msg resultMsg[cortex.ItemResult], again bool) tea.Cmd {
	o := &p.open
	switch {
	case msg.err != nil:
		// Gone, or no longer readable (access revoked elsewhere).
		o.item, o.err = nil, notShared(msg.err, o.id)
	case msg.value.Item == nil:
		o.err = "unexpected cortex.get result"
	default:
		o.item, o.err = msg.value.Item, ""
		// The question says which version a revert makes: the item may
		// have moved on since it was asked.
		if c := p.confirm.Payload(); p.confirm.Active() && c.id == o.item.ID {
			p.confirm.setQuestion(revertQuestion(c, o.item.GlobalVersion+1))
		}
	}
	p.layoutItem()
	if again {
		return p.loadItem()
	}
	return nil
}

func (p *goalsPane) historyResult(msg resultMsg[cortex.HistoryResult]) tea.Cmd {
	latest, again := p.lineage.load.answer(msg.req)
	if !latest {
		return nil
	}
	p.lineage.loaded = true
	if msg.err != nil {
		p.lineage.err = notShared(msg.err, p.open.id)
	} else {
		p.setHistory(msg.value.Mutations, msg.value.ChainCheck)
	}
	p.layoutItem()
	if again {
		return p.loadHistory()
	}
	return nil
}

func (p *goalsPane) listResult(msg resultMsg[cortex.QueryResult]) tea.Cmd {
	latest, again := p.list.load.answer(msg.req)
	if !latest {
		return nil
	}
	l := &p.list
	l.loaded = true
	if msg.err != nil {
		l.err = errs.As(msg.err).Message
		l.items, l.count = nil, 0
		l.cursor.setLen(0)
	} else {
		l.err = ""
		// The cursor stays on its item when the list changes around it
		// (or goes to the one just created).
		at := p.current()
		if l.jump != "" && slices.ContainsFunc(msg.value.Items, func(it *cortex.Item) bool { return it.ID == l.jump }) {
			at, l.jump = l.jump, ""
		}
		l.items, l.depth = treeOrder(msg.value.Items)
		l.count = msg.value.Count
		l.cursor.setLen(len(l.items))
		l.cursor.keep(func(i int) bool { return l.items[i].ID == at })
	}
	var cmds []tea.Cmd
	if again {
		cmds = append(cmds, p.loadList())
	}
	// The item under the cursor is loaded even when only the list shows: a
	// split screen (which may come with the first resize, after this
	// answer) shows it at once, and enter opens it without waiting.
	if (p.split() && p.level == levelList) || p.open.id == "" {
		cmds = append(cmds, p.show(p.current()))
	}
	return tea.Batch(cmds...)
}

// setHistory takes a new lineage, keeping the selected version (or moving
// to the one asked for).
func (p *goalsPane) setHistory(ms []cortex.Mutation, check cortex.ChainCheck) {
	l := &p.lineage
	keep := 0
	if m := p.selected(); m != nil {
		keep = m.NewVersion
	}
	wasLatest := len(l.history) == 0 || l.sel.Index() == len(l.history)-1
	l.history, l.chain, l.err = ms, check, ""
	want := keep
	if l.want > 0 {
		want, l.want = l.want, 0
	} else if wasLatest {
		want = 0 // following the latest version
	}
	l.sel.setLen(len(ms))
	l.sel.end()
	if want > 0 {
		l.sel.keep(func(i int) bool { return ms[i].NewVersion == want })
	}
	l.diff.home()
}

func (p *goalsPane) formResult(msg resultMsg[cortex.ACLResult]) tea.Cmd {
	f := p.form
	if f == nil {
		return nil // cancelled meanwhile: the status line says what happened
	}
	if latest, _ := f.send.answer(msg.req); !latest {
		return nil
	}
	if msg.err != nil {
		f.err = errs.As(msg.err).Message
		return nil // the root shows it in the status line too
	}
	p.form = nil
	p.layoutItem()
	var text string
	if f.revoke {
		text = fmt.Sprintf("Revoked %s's access to %s.", f.principal(), f.itemID)
	} else {
		perms, _ := f.permissions()
		text = fmt.Sprintf("Shared %s with %s: %s.", f.itemID, f.principal(), strings.Join(perms, ", "))
	}
	return tea.Batch(showStatus(text, false), p.reloadOpen())
}

func (p *goalsPane) revertResult(msg resultMsg[cortex.ItemResult]) tea.Cmd {
	if msg.err != nil {
		return nil // the root shows it in the status line
	}
	it := msg.value.Item
	if it == nil {
		return showStatus("unexpected cortex.revert result", true)
	}
	r := p.revert.what
	if it.ID == p.open.id {
		p.lineage.want = it.GlobalVersion // show what the revert changed
	}
	text := fmt.Sprintf("Reverted %s to v%d: it is now v%d.", r.id, r.version, it.GlobalVersion)
	return tea.Batch(showStatus(text, false), p.reloadOpen(), p.refresh(&p.list.load, p.loadList))
}

// itemKey handles the keys that work on an item from the list and from
// its detail: new, edit, complete, delete, and showing deleted items.
func (p *goalsPane) itemKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := p.keys
	if p.level == levelLineage {
		return nil, false // the lineage's keys are about versions
	}
	switch {
	case key.Matches(msg, k.New):
		parent := ""
		if p.level == levelDetail && p.open.item != nil {
			parent = p.open.item.ID
		}
		return p.openItemForm(nil, parent), true
	case key.Matches(msg, k.Edit):
		if it := p.selectedItem(); it != nil {
			if p.level == levelList && p.split() {
				// The form shows on the right, under the item it edits.
				return tea.Batch(p.show(it.ID), p.openItemForm(it, "")), true
			}
			return p.openItemForm(it, ""), true
		}
		return nil, true
	case key.Matches(msg, k.Complete):
		return p.complete(p.selectedItem()), true
	case key.Matches(msg, k.Delete):
		return p.askDelete(p.selectedItem()), true
	case key.Matches(msg, k.Deleted) && p.level == levelList:
		p.list.deleted = !p.list.deleted
		p.list.loaded = false
		return p.loadList(), true
	}
	return nil, false
}

func (p *goalsPane) editKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, p.keys.Cancel):
		p.edit = nil
		p.layoutItem()
		return nil
	case key.Matches(msg, p.keys.Apply):
		return p.submitItem()
	}
	return p.edit.update(msg)
}

// treeOrder puts every item whose parent is listed right under it (in the
// order given among siblings), and says how deep each item is.
func treeOrder(items []*cortex.Item) ([]*cortex.Item, map[string]int) {
	listed := make(map[string]bool, len(items))
	for _, it := range items {
		listed[it.ID] = true
	}
	children := map[string][]*cortex.Item{}
	var roots []*cortex.Item
	for _, it := range items {
		if it.Parent != "" && listed[it.Parent] && it.Parent != it.ID {
			children[it.Parent] = append(children[it.Parent], it)
		} else {
			roots = append(roots, it)
		}
	}
	out := make([]*cortex.Item, 0, len(items))
	depth := make(map[string]int, len(items))
	var walk func(it *cortex.Item, d int)
	walk = func(it *cortex.Item, d int) {
		if _, seen := depth[it.ID]; seen {
			return
		}
		depth[it.ID] = d
		out = append(out, it)
		for _, c := range children[it.ID] {
			walk(c, d+1)
		}
	}
	for _, it := range roots {
		walk(it, 0)
	}
	// A cycle the engine should never allow leaves items unreached: list
	// them anyway.
	for _, it := range items {
		walk(it, 0)
	}
	return out, depth
}

// showStatus asks the root to show text in the status line.
func showStatus(text string, isError bool) tea.Cmd {
	return func() tea.Msg { return statusMsg{text: text, isError: isError} }
}

// current is the id of the item under the cursor.
func (p *goalsPane) current() string {
	if i := p.list.cursor.Index(); i < len(p.list.items) {
		return p.list.items[i].ID
	}
	return ""
}

// --- keys ---

func (p *goalsPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case p.list.editing:
		return p.filterKey(msg)
	case p.confirm.Active():
		return p.confirmKey(msg)
	case p.remove.Active():
		return p.removeKey(msg)
	case p.edit != nil:
		return p.editKey(msg)
	case p.form != nil:
		return p.formKey(msg)
	}
	if cmd, ok := p.itemKey(msg); ok {
		return cmd
	}
	switch p.level {
	case levelDetail:
		return p.detailKey(msg)
	case levelLineage:
		return p.lineageKey(msg)
	}
	return p.listKey(msg)
}

func (p *goalsPane) listKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Filter):
		p.list.editing = true
		p.list.input.SetValue(p.list.filter.raw)
		p.list.input.CursorEnd()
		return p.list.input.Focus()
	case key.Matches(msg, k.Clear):
		if p.list.filter.raw == "" {
			return nil
		}
		p.list.input.SetValue("")
		return p.setFilter("")
	case key.Matches(msg, k.Open):
		id := p.current()
		if id == "" {
			return nil
		}
		cmd := p.show(id)
		if cmd == nil {
			cmd = p.reloadOpen() // shown before: make sure it is current
		}
		p.level = levelDetail
		p.layoutItem()
		return cmd
	}
	c := &p.list.cursor
	before := c.Index()
	c.setHeight(p.listRows())
	if c.handleKey(msg) && c.Index() != before && p.split() {
		return p.show(p.current())
	}
	return nil
}

func (p *goalsPane) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, p.keys.Apply):
		raw := strings.Join(strings.Fields(p.list.input.Value()), " ")
		p.stopEditing(true)
		return p.setFilter(raw)
	case key.Matches(msg, p.keys.Cancel):
		p.stopEditing(false)
		return nil
	}
	var cmd tea.Cmd
	p.list.input, cmd = p.list.input.Update(msg)
	return cmd
}

func (p *goalsPane) stopEditing(keep bool) {
	p.list.editing = false
	p.list.input.Blur()
	if !keep {
		p.list.input.SetValue(p.list.filter.raw)
	}
}

func (p *goalsPane) setFilter(raw string) tea.Cmd {
	l := &p.list
	if raw == l.filter.raw && l.filter.err == "" {
		return nil
	}
	l.filter = parseGoalsFilter(raw)
	l.input.SetValue(raw)
	l.cursor.reset()
	if l.filter.err != "" {
		l.items, l.count, l.loaded, l.err = nil, 0, true, ""
		l.cursor.setLen(0)
		return nil
	}
	l.loaded = false
	return p.loadList()
}

func (p *goalsPane) detailKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Lineage):
		p.level = levelLineage
		p.layoutItem()
	case key.Matches(msg, k.Back):
		return p.back()
	case key.Matches(msg, k.Share):
		return p.openForm(false)
	case key.Matches(msg, k.Revoke):
		return p.openForm(true)
	default:
		p.open.detail.handleKey(msg)
	}
	return nil
}

// back leaves the lineage for the fields, or the item for the list.
func (p *goalsPane) back() tea.Cmd {
	switch p.level {
	case levelLineage:
		p.level = levelDetail
	case levelDetail:
		p.level = levelList
	}
	p.layoutItem()
	return nil
}

func (p *goalsPane) lineageKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	l := &p.lineage
	before := l.sel.Index()
	switch {
	case key.Matches(msg, k.Back):
		return p.back()
	case key.Matches(msg, k.Revert):
		return p.askRevert()
	case key.Matches(msg, k.Share):
		return p.openForm(false)
	case key.Matches(msg, k.Revoke):
		return p.openForm(true)
	// The arrows choose the version; pgup/pgdn scroll its diff.
	case key.Matches(msg, nav.Up):
		l.sel.up()
	case key.Matches(msg, nav.Down):
		l.sel.down()
	case key.Matches(msg, nav.Home):
		l.sel.home()
	case key.Matches(msg, nav.End):
		l.sel.end()
	case key.Matches(msg, nav.PageUp):
		l.diff.pageUp()
	case key.Matches(msg, nav.PageDown):
		l.diff.pageDown()
	}
	if l.sel.Index() != before {
		p.layoutItem()
		l.diff.home()
	}
	return nil
}

// selected is the selected entry of the lineage, if any.
func (p *goalsPane) selected() *cortex.Mutation {
	if i := p.lineage.sel.Index(); i < len(p.lineage.history) {
		return &p.lineage.history[i]
	}
	return nil
}

func (p *goalsPane) askRevert() tea.Cmd {
	m, it := p.selected(), p.open.item
	if m == nil || it == nil {
		return nil
	}
	if m.NewVersion >= it.GlobalVersion {
		return showStatus(fmt.Sprintf("v%d is the current version: choose an earlier one to revert to", m.NewVersion), false)
	}
	c := revertConfirm{id: it.ID, version: m.NewVersion}
	p.confirm.open(revertQuestion(c, it.GlobalVersion+1), c)
	p.layoutItem()
	return nil
}

func (p *goalsPane) confirmKey(msg tea.KeyMsg) tea.Cmd {
	ans, c := p.confirm.handleKey(msg)
	p.confirm.close() // n, esc or any other key: nothing happens
	p.layoutItem()
	if ans != answerYes {
		return nil
	}
	p.revert.what = c
	return request(&p.requests, &p.revert.load, cortex.ActionRevert, cortex.VersionArgs{ID: c.id, Version: c.version})
}

func (p *goalsPane) openForm(revoke bool) tea.Cmd {
	if p.open.item == nil {
		return nil
	}
	p.form = newACLForm(p.styles, p.open.item, revoke, p.conn.Agent())
	p.form.setWidth(p.itemWidth())
	p.layoutItem()
	return p.form.focus()
}

func (p *goalsPane) formKey(msg tea.KeyMsg) tea.Cmd {
	f := p.form
	switch {
	case key.Matches(msg, p.keys.Cancel):
		p.form = nil
		p.layoutItem()
		return nil
	case key.Matches(msg, p.keys.Apply):
		if f.send.busy {
			return nil
		}
		if ok, cmd := f.check(); !ok {
			return cmd
		}
		if f.revoke {
			return request(&p.requests, &f.send, cortex.ActionRevoke, cortex.RevokeArgs{ID: f.itemID, Principal: f.principal()})
		}
		perms, _ := f.permissions()
		return request(&p.requests, &f.send, cortex.ActionShare, cortex.ShareArgs{ID: f.itemID, Principal: f.principal(), Permissions: perms})
	}
	return f.update(msg)
}
