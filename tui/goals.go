package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
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
	Yes     key.Binding
	No      key.Binding
	Apply   key.Binding
	Cancel  key.Binding
	Field   key.Binding
}

func newGoalsKeys() goalsKeys {
	return goalsKeys{
		Move:    key.NewBinding(key.WithKeys("up", "down", "k", "j"), key.WithHelp("↑/↓", "move")),
		Open:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Filter:  key.NewBinding(key.WithKeys("/", "f"), key.WithHelp("/", "filter")),
		Clear:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Ends:    key.NewBinding(key.WithKeys("home", "end", "g", "G"), key.WithHelp("g/G", "first/last")),
		Page:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Lineage: key.NewBinding(key.WithKeys("enter", "l"), key.WithHelp("enter", "lineage")),
		Back:    key.NewBinding(key.WithKeys("esc", "backspace", "h"), key.WithHelp("esc", "back")),
		Scroll:  key.NewBinding(key.WithKeys("up", "down", "k", "j", "pgup", "pgdown"), key.WithHelp("↑/↓", "scroll")),
		Version: key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓", "version")),
		Revert:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "revert")),
		Share:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "share")),
		Revoke:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "revoke")),
		Diff:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "scroll diff")),
		Yes:     key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "revert")),
		No:      key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n", "cancel")),
		Apply:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Field:   key.NewBinding(key.WithKeys("tab", "shift+tab", "up", "down"), key.WithHelp("tab", "next field")),
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

	// The list.
	list    loader
	items   []*cortex.Item
	count   int // how many match, when more than the list holds
	loaded  bool
	listErr string
	cursor  int
	offset  int
	filter  goalsFilter
	editing bool
	input   textinput.Model

	// The open item.
	level      goalsLevel
	openID     string
	item       *cortex.Item
	itemErr    string
	itemLoad   loader
	hist       loader
	history    []cortex.Mutation
	chain      cortex.ChainCheck
	histLoaded bool
	histErr    string
	sel        int // the selected entry of history
	selVersion int // the version to select when the history comes (0: keep)
	detail     viewport.Model
	diff       viewport.Model

	confirm   *revertConfirm
	reverting revertConfirm // the revert in flight
	revertReq int
	form      *aclForm
	formReq   int // the share or revoke in flight
}

// revertConfirm is the question asked before a revert.
type revertConfirm struct {
	id            string
	version, next int
}

func newGoalsPane(engine *core.Engine, styles *Styles) *goalsPane {
	in := textinput.New()
	in.Prompt = "filter: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "e.g. status:blocked #launch (enter applies, esc cancels)"
	in.CharLimit = 300
	return &goalsPane{
		requests: requests{engine: engine, pane: goalsPaneID},
		styles:   styles,
		keys:     newGoalsKeys(),
		input:    in,
		detail:   viewport.New(0, 0),
		diff:     viewport.New(0, 0),
	}
}

func (p *goalsPane) Title() string { return "Goals" }

func (p *goalsPane) Init() tea.Cmd { return p.loadList() }

func (p *goalsPane) Focus() tea.Cmd { return nil }

func (p *goalsPane) Blur() {
	p.stopEditing(false)
	p.confirm = nil
	p.form = nil
}

// Capturing: the filter line, the share form and the revert question take
// every key (q and 1-6 included).
func (p *goalsPane) Capturing() bool { return p.editing || p.confirm != nil || p.form != nil }

func (p *goalsPane) Keys() []key.Binding {
	k := p.keys
	switch {
	case p.editing:
		return []key.Binding{k.Apply, k.Cancel}
	case p.confirm != nil:
		return []key.Binding{k.Yes, k.No}
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
	switch p.level {
	case levelDetail:
		return []key.Binding{k.Lineage, k.Back, k.Share, k.Revoke, k.Scroll}
	case levelLineage:
		return []key.Binding{k.Version, k.Revert, k.Back, k.Share, k.Revoke, k.Diff}
	}
	keys := []key.Binding{k.Open, k.Filter}
	if p.filter.raw != "" {
		keys = append(keys, k.Clear)
	}
	return append(keys, k.Move, k.Ends, k.Page)
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
	p.input.Width = max(w-len(p.input.Prompt)-3, 1)
	if p.form != nil {
		p.form.setWidth(p.itemWidth())
	}
	p.layoutItem()
}

// --- loading ---

func (p *goalsPane) loadList() tea.Cmd {
	if p.filter.err != "" {
		return nil
	}
	name := "cortex.active"
	if len(p.filter.q.Status) > 0 || p.filter.all {
		name = "cortex.query"
	}
	q := p.filter.q
	q.Limit = goalsListLimit
	return p.run(&p.list, name, q)
}

func (p *goalsPane) loadItem() tea.Cmd {
	if p.openID == "" {
		return nil
	}
	return p.run(&p.itemLoad, "cortex.get", map[string]any{"id": p.openID, "include_deleted": true})
}

func (p *goalsPane) loadHistory() tea.Cmd {
	if p.openID == "" {
		return nil
	}
	return p.run(&p.hist, "cortex.history", map[string]any{"id": p.openID})
}

// open shows an item (loading it and its lineage) unless it is shown.
func (p *goalsPane) open(id string) tea.Cmd {
	if id == "" || id == p.openID {
		return nil
	}
	p.openID = id
	p.item, p.itemErr = nil, ""
	p.history, p.histLoaded, p.histErr = nil, false, ""
	p.chain = cortex.ChainCheck{}
	p.sel, p.selVersion = 0, 0
	p.confirm, p.form = nil, nil
	p.layoutItem()
	p.detail.GotoTop()
	return tea.Batch(p.loadItem(), p.loadHistory())
}

// reloadOpen refreshes the open item and its lineage.
func (p *goalsPane) reloadOpen() tea.Cmd {
	if p.openID == "" {
		return nil
	}
	return tea.Batch(p.refresh(&p.itemLoad, p.loadItem), p.refresh(&p.hist, p.loadHistory))
}

func (p *goalsPane) Update(msg tea.Msg) tea.Cmd {
	// A resize to a split screen shows the item under the cursor; SetSize
	// cannot load it, the next message does.
	if id := p.current(); p.split() && p.level == levelList && id != "" && id != p.openID {
		return tea.Batch(p.open(id), p.Update(msg))
	}
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != goalsPaneID {
			return nil
		}
		return p.result(msg)
	case events.Event:
		if msg.Name != cortex.EventItemMutated {
			return nil
		}
		cmds := []tea.Cmd{p.refresh(&p.list, p.loadList)}
		if ev, ok := msg.Data.(cortex.ItemEvent); ok && ev.ItemID == p.openID {
			cmds = append(cmds, p.reloadOpen())
		}
		return tea.Batch(cmds...)
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	// Cursor blinks and the like go to the input that has the keyboard.
	var cmd tea.Cmd
	switch {
	case p.editing:
		p.input, cmd = p.input.Update(msg)
	case p.form != nil:
		cmd = p.form.update(msg)
	}
	return cmd
}

// result applies the answer to one of the pane's requests.
func (p *goalsPane) result(msg actionResultMsg) tea.Cmd {
	switch msg.req {
	case p.list.req:
		return p.listResult(msg)
	case p.itemLoad.req:
		p.itemLoad.busy = false
		var res struct {
			Item *cortex.Item `json:"item"`
		}
		switch {
		case msg.err != nil:
			// Gone, or no longer readable (access revoked elsewhere).
			p.item, p.itemErr = nil, errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil || res.Item == nil:
			p.itemErr = "unexpected cortex.get result"
		default:
			p.item, p.itemErr = res.Item, ""
		}
		p.layoutItem()
		if p.itemLoad.dirty {
			return p.loadItem()
		}
		return nil
	case p.hist.req:
		p.hist.busy = false
		p.histLoaded = true
		var res struct {
			Mutations []cortex.Mutation `json:"mutations"`
			cortex.ChainCheck
		}
		switch {
		case msg.err != nil:
			p.histErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil:
			p.histErr = "unexpected cortex.history result"
		default:
			p.setHistory(res.Mutations, res.ChainCheck)
		}
		p.layoutItem()
		if p.hist.dirty {
			return p.loadHistory()
		}
		return nil
	case p.revertReq:
		p.revertReq = 0
		return p.revertResult(msg)
	case p.formReq:
		p.formReq = 0
		return p.formResult(msg)
	}
	return nil // stale
}

func (p *goalsPane) listResult(msg actionResultMsg) tea.Cmd {
	p.list.busy = false
	p.loaded = true
	var res cortex.QueryResult
	switch {
	case msg.err != nil:
		p.listErr = errs.As(msg.err).Message
		p.items, p.count = nil, 0
	case json.Unmarshal(msg.result, &res) != nil:
		p.listErr = "unexpected " + msg.action + " result"
	default:
		p.listErr = ""
		// The cursor stays on its item when the list changes around it.
		var at string
		if p.cursor < len(p.items) {
			at = p.items[p.cursor].ID
		}
		p.items, p.count = res.Items, res.Count
		p.cursor = min(p.cursor, max(len(p.items)-1, 0))
		if i := slices.IndexFunc(p.items, func(it *cortex.Item) bool { return it.ID == at }); i >= 0 {
			p.cursor = i
		}
	}
	var cmds []tea.Cmd
	if p.list.dirty {
		cmds = append(cmds, p.loadList())
	}
	// The item under the cursor is loaded even when only the list shows: a
	// split screen (which may come with the first resize, after this
	// answer) shows it at once, and enter opens it without waiting.
	if (p.split() && p.level == levelList) || p.openID == "" {
		cmds = append(cmds, p.open(p.current()))
	}
	return tea.Batch(cmds...)
}

// setHistory takes a new lineage, keeping the selected version (or moving
// to the one asked for).
func (p *goalsPane) setHistory(ms []cortex.Mutation, check cortex.ChainCheck) {
	keep := 0
	if p.sel < len(p.history) && len(p.history) > 0 {
		keep = p.history[p.sel].NewVersion
	}
	wasLatest := len(p.history) == 0 || p.sel == len(p.history)-1
	p.history, p.chain, p.histErr = ms, check, ""
	want := keep
	if p.selVersion > 0 {
		want, p.selVersion = p.selVersion, 0
	} else if wasLatest {
		want = 0 // following the latest version
	}
	p.sel = len(ms) - 1
	if i := slices.IndexFunc(ms, func(m cortex.Mutation) bool { return m.NewVersion == want }); want > 0 && i >= 0 {
		p.sel = i
	}
	p.sel = max(p.sel, 0)
	p.diff.GotoTop()
}

func (p *goalsPane) formResult(msg actionResultMsg) tea.Cmd {
	f := p.form
	if f == nil || !f.busy {
		return nil // cancelled meanwhile: the status line says what happened
	}
	f.busy = false
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

func (p *goalsPane) revertResult(msg actionResultMsg) tea.Cmd {
	if msg.err != nil {
		return nil // the root shows it in the status line
	}
	var res struct {
		Item *cortex.Item `json:"item"`
	}
	if json.Unmarshal(msg.result, &res) != nil || res.Item == nil {
		return showStatus("unexpected cortex.revert result", true)
	}
	r := p.reverting
	if res.Item.ID == p.openID {
		p.selVersion = res.Item.GlobalVersion // show what the revert changed
	}
	text := fmt.Sprintf("Reverted %s to v%d: it is now v%d.", r.id, r.version, res.Item.GlobalVersion)
	return tea.Batch(showStatus(text, false), p.reloadOpen(), p.refresh(&p.list, p.loadList))
}

// showStatus asks the root to show text in the status line.
func showStatus(text string, isError bool) tea.Cmd {
	return func() tea.Msg { return statusMsg{text: text, isError: isError} }
}

// current is the id of the item under the cursor.
func (p *goalsPane) current() string {
	if p.cursor < len(p.items) {
		return p.items[p.cursor].ID
	}
	return ""
}

// --- keys ---

func (p *goalsPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case p.editing:
		return p.filterKey(msg)
	case p.confirm != nil:
		return p.confirmKey(msg)
	case p.form != nil:
		return p.formKey(msg)
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
	before := p.cursor
	switch {
	case key.Matches(msg, k.Filter):
		p.editing = true
		p.input.SetValue(p.filter.raw)
		p.input.CursorEnd()
		return p.input.Focus()
	case key.Matches(msg, k.Clear):
		if p.filter.raw == "" {
			return nil
		}
		p.input.SetValue("")
		return p.setFilter("")
	case key.Matches(msg, k.Open):
		id := p.current()
		if id == "" {
			return nil
		}
		cmd := p.open(id)
		if cmd == nil {
			cmd = p.reloadOpen() // shown before: make sure it is current
		}
		p.level = levelDetail
		p.layoutItem()
		return cmd
	case msg.String() == "up" || msg.String() == "k":
		p.cursor--
	case msg.String() == "down" || msg.String() == "j":
		p.cursor++
	case msg.String() == "pgup":
		p.cursor -= p.listRows()
	case msg.String() == "pgdown":
		p.cursor += p.listRows()
	case msg.String() == "home" || msg.String() == "g":
		p.cursor = 0
	case msg.String() == "end" || msg.String() == "G":
		p.cursor = len(p.items) - 1
	}
	p.cursor = max(min(p.cursor, len(p.items)-1), 0)
	if p.cursor != before && p.split() {
		return p.open(p.current())
	}
	return nil
}

func (p *goalsPane) filterKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, p.keys.Apply):
		raw := strings.Join(strings.Fields(p.input.Value()), " ")
		p.stopEditing(true)
		return p.setFilter(raw)
	case key.Matches(msg, p.keys.Cancel):
		p.stopEditing(false)
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return cmd
}

func (p *goalsPane) stopEditing(keep bool) {
	p.editing = false
	p.input.Blur()
	if !keep {
		p.input.SetValue(p.filter.raw)
	}
}

func (p *goalsPane) setFilter(raw string) tea.Cmd {
	if raw == p.filter.raw && p.filter.err == "" {
		return nil
	}
	p.filter = parseGoalsFilter(raw)
	p.input.SetValue(raw)
	p.cursor, p.offset = 0, 0
	if p.filter.err != "" {
		p.items, p.count, p.loaded, p.listErr = nil, 0, true, ""
		return nil
	}
	p.loaded = false
	return p.loadList()
}

func (p *goalsPane) detailKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Lineage):
		p.level = levelLineage
		p.layoutItem()
		return nil
	case key.Matches(msg, k.Back):
		return p.back()
	case key.Matches(msg, k.Share):
		return p.openForm(false)
	case key.Matches(msg, k.Revoke):
		return p.openForm(true)
	}
	switch msg.String() {
	case "up", "k":
		p.detail.ScrollUp(1)
	case "down", "j":
		p.detail.ScrollDown(1)
	case "pgup":
		p.detail.PageUp()
	case "pgdown":
		p.detail.PageDown()
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
	before := p.sel
	switch {
	case key.Matches(msg, k.Back):
		return p.back()
	case key.Matches(msg, k.Revert):
		return p.askRevert()
	case key.Matches(msg, k.Share):
		return p.openForm(false)
	case key.Matches(msg, k.Revoke):
		return p.openForm(true)
	case msg.String() == "up" || msg.String() == "k":
		p.sel--
	case msg.String() == "down" || msg.String() == "j":
		p.sel++
	case msg.String() == "home" || msg.String() == "g":
		p.sel = 0
	case msg.String() == "end" || msg.String() == "G":
		p.sel = len(p.history) - 1
	case msg.String() == "pgup":
		p.diff.PageUp()
	case msg.String() == "pgdown":
		p.diff.PageDown()
	}
	p.sel = max(min(p.sel, len(p.history)-1), 0)
	if p.sel != before {
		p.layoutItem()
		p.diff.GotoTop()
	}
	return nil
}

// selected is the selected entry of the lineage, if any.
func (p *goalsPane) selected() *cortex.Mutation {
	if p.sel < len(p.history) {
		return &p.history[p.sel]
	}
	return nil
}

func (p *goalsPane) askRevert() tea.Cmd {
	m := p.selected()
	if m == nil || p.item == nil {
		return nil
	}
	if m.NewVersion >= p.item.GlobalVersion {
		return showStatus(fmt.Sprintf("v%d is the current version: choose an earlier one to revert to", m.NewVersion), false)
	}
	p.confirm = &revertConfirm{id: p.item.ID, version: m.NewVersion, next: p.item.GlobalVersion + 1}
	p.layoutItem()
	return nil
}

func (p *goalsPane) confirmKey(msg tea.KeyMsg) tea.Cmd {
	c := p.confirm
	p.confirm = nil
	p.layoutItem()
	if !key.Matches(msg, p.keys.Yes) {
		return nil // n, esc or anything else: nothing happens
	}
	cmd := p.run(nil, "cortex.revert", map[string]any{"id": c.id, "version": c.version})
	p.reverting, p.revertReq = *c, p.seq
	return cmd
}

func (p *goalsPane) openForm(revoke bool) tea.Cmd {
	if p.item == nil {
		return nil
	}
	p.form = newACLForm(p.styles, p.item, revoke, p.engine.Agent())
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
		if f.busy {
			return nil
		}
		if f.err = f.validate(); f.err != "" {
			return nil
		}
		var cmd tea.Cmd
		if f.revoke {
			cmd = p.run(nil, "cortex.revoke", map[string]any{"id": f.itemID, "principal": f.principal()})
		} else {
			perms, _ := f.permissions()
			cmd = p.run(nil, "cortex.share", map[string]any{"id": f.itemID, "principal": f.principal(), "permissions": perms})
		}
		f.busy, p.formReq = true, p.seq
		return cmd
	}
	return f.update(msg)
}
