package tui

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/memory"
)

const (
	memoryPaneID paneID = "memory"
	// memoryListLimit is the most items the list (and a remember) asks for.
	memoryListLimit = 200
)

// memoryMode is what has the keyboard on the Memory tab.
type memoryMode int

const (
	// memBrowse: nothing; the app's keys (q, 1-6, tab, ?, :) work.
	memBrowse memoryMode = iota
	// memPrompting: the remember box's prompt line.
	memPrompting
)

type memoryKeys struct {
	Remember  key.Binding
	Forget    key.Binding
	Open      key.Binding
	Store     key.Binding
	StoreN    key.Binding
	Move      key.Binding
	Page      key.Binding
	Rank      key.Binding
	Deleted   key.Binding
	ForgetOne key.Binding
	Back      key.Binding
	Run       key.Binding
	Cancel    key.Binding
	Preview   key.Binding
	Mode      key.Binding
	Yes       key.Binding
	No        key.Binding
	Scroll    key.Binding
}

func newMemoryKeys() memoryKeys {
	return memoryKeys{
		Remember:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "remember")),
		Forget:    key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "forget")),
		Open:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail")),
		Store:     key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "store")),
		StoreN:    key.NewBinding(key.WithKeys("alt+1", "alt+2", "alt+3", "alt+4", "alt+5", "alt+6", "alt+7", "alt+8", "alt+9"), key.WithHelp("alt+1-9", "store n")),
		Move:      key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓ g/G", "move")),
		Page:      key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Rank:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "rank")),
		Deleted:   key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "show forgotten")),
		ForgetOne: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "forget it")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Run:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "remember")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Preview:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "preview")),
		Mode:      key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "soft/hard")),
		Yes:       key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "forget them")),
		No:        key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n", "change it")),
		Scroll:    key.NewBinding(key.WithKeys("up", "down", "k", "j", "pgup", "pgdown"), key.WithHelp("↑/↓", "scroll")),
	}
}

// memoryQuery is what the list shows: memory.remember on a store with a
// prompt ("" for the store's own order), a rank ("" for the store type's)
// and forgotten items or not.
type memoryQuery struct {
	store   string
	prompt  string
	rank    string
	deleted bool
}

// memoryPane is the Memory tab: the stores side by side with gauges of
// their items and tokens; below, the selected store's items in its own
// order, or ranked for a prompt (the remember box, with each item's score
// and confidence); a forget box that shows what an instruction would
// forget (a dry run) before it does, soft or hard; and an item's every
// field.
type memoryPane struct {
	requests // the engine, and the numbering of this pane's requests
	styles   *Styles
	keys     memoryKeys

	width, height int

	// The stores.
	storesLoad   loader
	stores       []memory.Capacity
	storesLoaded bool
	storesErr    string

	// The list: the answer to shown, asked as asked.
	list       loader
	want       memoryQuery // what the list should show
	asked      memoryQuery // what the request in flight asks
	shown      memoryQuery // what items answer
	items      []memory.Recalled
	listLoaded bool
	listErr    string
	cursor     int
	offset     int

	mode  memoryMode
	input textinput.Model // the remember box's prompt

	forget *forgetBox

	// The open item.
	detailID   string
	detailFrom string // its store
	detail     *memory.Item
	detailRank *memory.Recalled // its score, when a prompt found it
	detailLoad loader
	detailErr  string
	detailView viewport.Model
}

func newMemoryPane(engine *core.Engine, styles *Styles) *memoryPane {
	in := textinput.New()
	in.Prompt = "remember: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "what to remember about (enter ranks the store's items, esc goes back)"
	in.CharLimit = 1000
	return &memoryPane{
		requests:   requests{engine: engine, pane: memoryPaneID},
		styles:     styles,
		keys:       newMemoryKeys(),
		input:      in,
		detailView: viewport.New(0, 0),
	}
}

func (p *memoryPane) Title() string { return "Memory" }

func (p *memoryPane) Init() tea.Cmd { return p.loadStores() }

// Focus catches up: memory.configure changes a store without an event.
func (p *memoryPane) Focus() tea.Cmd {
	return p.reload()
}

func (p *memoryPane) Blur() {
	p.mode = memBrowse
	p.input.Blur()
	p.forget = nil
	p.layout()
}

// Capturing: the remember prompt and the forget box take every key (q and
// 1-6 included).
func (p *memoryPane) Capturing() bool { return p.mode == memPrompting || p.forget != nil }

func (p *memoryPane) Keys() []key.Binding {
	k := p.keys
	rank := withHelp(k.Rank, "r", "by "+p.nextRank())
	deleted := k.Deleted
	if p.want.deleted {
		deleted = withHelp(deleted, "d", "hide forgotten")
	}
	switch {
	case p.forget != nil:
		return p.forget.keys(k)
	case p.mode == memPrompting:
		return []key.Binding{k.Run, withHelp(k.Cancel, "esc", "back")}
	case p.detailID != "":
		x := k.ForgetOne
		if p.detail != nil && p.detail.Deleted {
			x = withHelp(x, "x", "erase it")
		}
		return []key.Binding{withHelp(k.Back, "esc", "back to list"), x, withHelp(k.Scroll, "↑/↓", "scroll")}
	case p.want.prompt != "":
		return []key.Binding{withHelp(k.Back, "esc", "back to store"), rank, deleted, withHelp(k.Remember, "/", "new prompt"),
			k.Open, k.Forget, k.ForgetOne, k.Store, k.Move}
	}
	return []key.Binding{k.Remember, k.Forget, k.Open, k.Store, rank, deleted, k.ForgetOne, k.Move, k.Page}
}

func (p *memoryPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len(p.input.Prompt)-4, 1)
	if p.forget != nil {
		p.forget.setWidth(w)
	}
	p.layout()
}

// --- loading ---

func (p *memoryPane) loadStores() tea.Cmd {
	return p.run(&p.storesLoad, "memory.stores", struct{}{})
}

// loadList asks for what want says (nothing before a store is chosen).
func (p *memoryPane) loadList() tea.Cmd {
	q := p.want
	if q.store == "" {
		return nil
	}
	p.asked = q
	return p.run(&p.list, "memory.remember", map[string]any{"store": q.store, "prompt": q.prompt, "rank": q.rank,
		"include_deleted": q.deleted, "limit": memoryListLimit})
}

func (p *memoryPane) loadDetail() tea.Cmd {
	if p.detailID == "" {
		return nil
	}
	return p.run(&p.detailLoad, "memory.get", map[string]any{"store": p.detailFrom, "id": p.detailID})
}

// reload refreshes what shows, once per burst of events.
func (p *memoryPane) reload() tea.Cmd {
	cmds := []tea.Cmd{p.refresh(&p.storesLoad, p.loadStores), p.refresh(&p.list, p.loadList)}
	if p.detailID != "" {
		cmds = append(cmds, p.refresh(&p.detailLoad, p.loadDetail))
	}
	return tea.Batch(cmds...)
}

// requery shows want from scratch: the list is the answer to another
// question now.
func (p *memoryPane) requery() tea.Cmd {
	p.cursor, p.offset = 0, 0
	p.layout()
	if p.want == p.shown && p.listLoaded && (!p.list.busy || p.asked == p.want) {
		return nil
	}
	return p.loadList()
}

// eventStore is the store a memory event is about.
func eventStore(data any) (string, bool) {
	if d, ok := data.(map[string]any); ok {
		s, ok := d["store"].(string)
		return s, ok
	}
	return "", false
}

func (p *memoryPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != memoryPaneID {
			return nil
		}
		return p.result(msg)
	case events.Event:
		if msg.Name != memory.EventMemorized && msg.Name != memory.EventForgotten {
			return nil
		}
		cmds := []tea.Cmd{p.refresh(&p.storesLoad, p.loadStores)}
		s, ok := eventStore(msg.Data)
		if !ok || s == p.want.store {
			cmds = append(cmds, p.refresh(&p.list, p.loadList))
		}
		if p.detailID != "" && (!ok || s == p.detailFrom) {
			cmds = append(cmds, p.refresh(&p.detailLoad, p.loadDetail))
		}
		if p.forget != nil && (!ok || s == p.forget.store) {
			cmds = append(cmds, p.forget.storeChanged(p))
		}
		return tea.Batch(cmds...)
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	// Cursor blinks and the like go to the line that has the keyboard.
	var cmd tea.Cmd
	switch {
	case p.forget != nil:
		p.forget.input, cmd = p.forget.input.Update(msg)
	case p.mode == memPrompting:
		p.input, cmd = p.input.Update(msg)
	}
	return cmd
}

// result applies the answer to one of the pane's requests.
func (p *memoryPane) result(msg actionResultMsg) tea.Cmd {
	switch {
	case msg.req == p.storesLoad.req:
		return p.storesResult(msg)
	case msg.req == p.list.req:
		return p.listResult(msg)
	case msg.req == p.detailLoad.req:
		p.detailLoad.busy = false
		var res struct {
			Item *memory.Item `json:"item"`
		}
		switch {
		case msg.err != nil:
			p.detail, p.detailErr = nil, errs.As(msg.err).Message // erased (hard), most likely
		case json.Unmarshal(msg.result, &res) != nil || res.Item == nil:
			p.detailErr = "unexpected memory.get result"
		default:
			p.detail, p.detailErr = res.Item, ""
		}
		p.layout()
		if p.detailLoad.dirty {
			return p.loadDetail()
		}
		return nil
	case p.forget != nil && msg.req == p.forget.req:
		return p.forget.result(p, msg)
	}
	return nil // stale
}

// storeOrder puts the default stores first (working, then episodic), the
// others after them by name.
func storeOrder(a, b memory.Capacity) int {
	rank := func(c memory.Capacity) int {
		switch c.Store {
		case memory.TypeWorking:
			return 0
		case memory.TypeEpisodic:
			return 1
		}
		return 2
	}
	if c := rank(a) - rank(b); c != 0 {
		return c
	}
	return strings.Compare(a.Store, b.Store)
}

func (p *memoryPane) storesResult(msg actionResultMsg) tea.Cmd {
	p.storesLoad.busy = false
	var res struct {
		Stores []memory.Capacity `json:"stores"`
	}
	switch {
	case msg.err != nil:
		p.storesErr = errs.As(msg.err).Message
	case json.Unmarshal(msg.result, &res) != nil:
		p.storesErr = "unexpected memory.stores result"
	default:
		p.storesErr = ""
		p.stores = slices.SortedStableFunc(slices.Values(res.Stores), storeOrder)
	}
	p.storesLoaded = true
	var cmds []tea.Cmd
	if p.storesLoad.dirty {
		cmds = append(cmds, p.loadStores())
	}
	// The first answer chooses the store; a store that went away gives
	// way to the first one.
	if p.store(p.want.store) == nil && len(p.stores) > 0 {
		cmds = append(cmds, p.selectStore(p.stores[0].Store))
	}
	p.layout()
	return tea.Batch(cmds...)
}

func (p *memoryPane) listResult(msg actionResultMsg) tea.Cmd {
	p.list.busy = false
	asked := p.asked
	var res struct {
		Items []memory.Recalled `json:"items"`
	}
	switch {
	case msg.err != nil:
		p.listErr = errs.As(msg.err).Message
		p.items = nil
	case json.Unmarshal(msg.result, &res) != nil:
		p.listErr = "unexpected memory.remember result"
	default:
		p.listErr = ""
		// The cursor stays on its item when the list changes around it
		// (the same question answered again).
		at := p.current()
		p.items = slices.DeleteFunc(res.Items, func(r memory.Recalled) bool { return r.Item == nil })
		if asked != p.shown {
			p.cursor, p.offset = 0, 0
		} else if i := slices.IndexFunc(p.items, func(r memory.Recalled) bool { return at != nil && r.ID == at.ID }); i >= 0 {
			p.cursor = i
		}
		p.cursor = min(p.cursor, max(len(p.items)-1, 0))
	}
	p.shown, p.listLoaded = asked, true
	p.layout()
	if p.list.dirty || p.want != asked {
		return p.loadList()
	}
	return nil
}

// store is the named store's capacity, if it is listed.
func (p *memoryPane) store(name string) *memory.Capacity {
	for i := range p.stores {
		if p.stores[i].Store == name {
			return &p.stores[i]
		}
	}
	return nil
}

// storeType is the selected store's type ("" before it is known).
func (p *memoryPane) storeType() string {
	if s := p.store(p.want.store); s != nil {
		return s.Type
	}
	return ""
}

// defaultRank is the order of a store's type.
func defaultRank(storeType string) string {
	switch storeType {
	case memory.TypeWorking:
		return "importance"
	case memory.TypeEpisodic:
		return "recency"
	}
	return ""
}

// rank is the order the list is in.
func (p *memoryPane) rank() string {
	if p.want.rank != "" {
		return p.want.rank
	}
	return defaultRank(p.storeType())
}

// ranks are the orders r goes through, the store's first: with a prompt,
// relevance comes next.
func (p *memoryPane) ranks() []string {
	def := defaultRank(p.storeType())
	out := []string{def}
	if p.want.prompt != "" {
		out = append(out, "relevance")
	}
	for _, r := range []string{"importance", "recency"} {
		if r != def {
			out = append(out, r)
		}
	}
	return slices.DeleteFunc(out, func(r string) bool { return r == "" })
}

// nextRank is the order r goes to.
func (p *memoryPane) nextRank() string {
	ranks := p.ranks()
	return ranks[(slices.Index(ranks, p.rank())+1)%len(ranks)]
}

// selectStore shows another store's items, in its own order; a prompt
// stays, to remember the same in that store.
func (p *memoryPane) selectStore(name string) tea.Cmd {
	if name == p.want.store {
		return nil
	}
	p.want.store, p.want.rank = name, ""
	p.detailID = ""
	p.layout()
	return p.requery()
}

// --- keys ---

func (p *memoryPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case p.forget != nil:
		return p.forget.key(p, msg)
	case p.mode == memPrompting:
		return p.promptKey(msg)
	case p.detailID != "":
		return p.detailKey(msg)
	}
	return p.listKey(msg)
}

func (p *memoryPane) listKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Remember):
		p.mode = memPrompting
		p.input.SetValue(p.want.prompt)
		p.input.CursorEnd()
		p.layout()
		return p.input.Focus()
	case key.Matches(msg, k.Forget):
		return p.openForget("", false)
	case key.Matches(msg, k.ForgetOne):
		if it := p.current(); it != nil {
			return p.openForget("item "+it.ID, it.Deleted)
		}
		return nil
	case key.Matches(msg, k.Open):
		return p.openDetail()
	case key.Matches(msg, k.Store):
		return p.moveStore(msg.String() == "right" || msg.String() == "l")
	case key.Matches(msg, k.StoreN):
		if n := int(msg.String()[len("alt+")] - '1'); n < len(p.stores) {
			return p.selectStore(p.stores[n].Store)
		}
		return nil
	case key.Matches(msg, k.Rank):
		p.want.rank = p.nextRank()
		if p.want.rank == defaultRank(p.storeType()) {
			p.want.rank = ""
		}
		return p.requery()
	case key.Matches(msg, k.Deleted):
		p.want.deleted = !p.want.deleted
		return p.requery()
	case key.Matches(msg, k.Back):
		if p.want.prompt == "" {
			return nil
		}
		p.input.SetValue("")
		p.setPrompt("")
		return p.requery()
	}
	before := p.cursor
	switch msg.String() {
	case "up", "k":
		p.cursor--
	case "down", "j":
		p.cursor++
	case "pgup":
		p.cursor -= p.listRows()
	case "pgdown":
		p.cursor += p.listRows()
	case "home", "g":
		p.cursor = 0
	case "end", "G":
		p.cursor = len(p.items) - 1
	}
	p.cursor = max(min(p.cursor, len(p.items)-1), 0)
	if p.cursor != before {
		p.layout()
	}
	return nil
}

// moveStore selects the store to the right (or left) of the selected one.
func (p *memoryPane) moveStore(right bool) tea.Cmd {
	i := slices.IndexFunc(p.stores, func(c memory.Capacity) bool { return c.Store == p.want.store })
	if i < 0 {
		return nil
	}
	if right {
		i++
	} else {
		i--
	}
	if i < 0 || i >= len(p.stores) {
		return nil
	}
	return p.selectStore(p.stores[i].Store)
}

// setPrompt changes the prompt, and with it the ranks on offer.
func (p *memoryPane) setPrompt(prompt string) {
	p.want.prompt = prompt
	if prompt == "" && p.want.rank == "relevance" {
		p.want.rank = ""
	}
}

func (p *memoryPane) promptKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Run):
		prompt := strings.Join(strings.Fields(p.input.Value()), " ")
		p.mode = memBrowse
		p.input.Blur()
		p.setPrompt(prompt)
		p.layout()
		return p.requery()
	case key.Matches(msg, k.Cancel):
		p.mode = memBrowse
		p.input.Blur()
		p.input.SetValue(p.want.prompt)
		p.layout()
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return cmd
}

// current is the item under the cursor.
func (p *memoryPane) current() *memory.Recalled {
	if p.cursor < len(p.items) {
		return &p.items[p.cursor]
	}
	return nil
}

func (p *memoryPane) openDetail() tea.Cmd {
	it := p.current()
	if it == nil {
		return nil
	}
	p.detailID, p.detailFrom = it.ID, p.shown.store
	r := *it
	p.detail, p.detailRank, p.detailErr = r.Item, nil, ""
	if p.shown.prompt != "" {
		p.detailRank = &r
	}
	p.layout()
	p.detailView.GotoTop()
	return p.loadDetail() // every field as it is now
}

func (p *memoryPane) detailKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Back):
		p.detailID, p.detail = "", nil
		p.layout()
		return nil
	case key.Matches(msg, k.ForgetOne):
		if p.detail == nil {
			return nil
		}
		id, hard := p.detailID, p.detail.Deleted
		p.detailID, p.detail = "", nil
		return p.openForget("item "+id, hard)
	}
	switch msg.String() {
	case "up", "k":
		p.detailView.ScrollUp(1)
	case "down", "j":
		p.detailView.ScrollDown(1)
	case "pgup":
		p.detailView.PageUp()
	case "pgdown":
		p.detailView.PageDown()
	}
	return nil
}

// openForget opens the forget box on the selected store; an instruction
// given is previewed at once. An item already forgotten can only be
// erased: hard starts the box in that mode.
func (p *memoryPane) openForget(instruction string, hard bool) tea.Cmd {
	if p.want.store == "" {
		return nil
	}
	p.forget = newForgetBox(p.styles, p.want.store)
	p.forget.hard = hard
	p.forget.setWidth(p.width)
	p.layout()
	if instruction != "" {
		p.forget.input.SetValue(instruction)
		p.forget.input.CursorEnd()
		return tea.Batch(p.forget.focus(), p.forget.dryRun(p))
	}
	return p.forget.focus()
}
