package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
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
	// memBrowse: nothing; the app's keys (q, 1-7, tab, ?, :) work.
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
	// Memorize opens the memorize form; Unforget brings the selected
	// soft-forgotten item back.
	Memorize key.Binding
	Unforget key.Binding
	// Why hides or shows why the selected item was recalled.
	Why key.Binding
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
		Memorize:  key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "memorize")),
		Unforget:  key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "unforget")),
		Why:       key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "hide why")),
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

// args is the memory.remember that answers q; with a prompt, it asks why
// each item was recalled.
func (q memoryQuery) args() memory.RememberArgs {
	return memory.RememberArgs{Store: q.store, Prompt: q.prompt, Rank: q.rank, IncludeDeleted: q.deleted, Limit: memoryListLimit,
		Explain: q.prompt != ""}
}

// memoryStores is the stores' cards: memory.stores, loaded by the embedded
// loader.
type memoryStores struct {
	loader
	all    []memory.Capacity // working, episodic, then the others by name
	loaded bool
	err    string
}

// memoryList is the list: the answer to shown, asked as asked, while want
// is what it should show (a key changes want first, then asks).
type memoryList struct {
	loader
	want   memoryQuery
	asked  memoryQuery // what the request in flight asks
	shown  memoryQuery // what items answer
	items  []memory.Recalled
	loaded bool
	err    string
	cursor listCursor
}

// memoryDetail is an open item: every field, as memory.get says now.
type memoryDetail struct {
	id, store string
	item      *memory.Item     // nil until loaded, or once erased
	rank      *memory.Recalled // its score, when a prompt found it
	load      loader
	err       string
	view      scrollView
}

// memoryPane is the Memory tab: the stores side by side with gauges of
// their items and tokens; below, the selected store's items in its own
// order, or ranked for a prompt (the remember box, with each item's score
// and confidence); a forget box that shows what an instruction would
// forget (a dry run) before it does, soft or hard; and an item's every
// field.
type memoryPane struct {
	requests // the connection, and the numbering of this pane's requests
	styles   *Styles
	keys     memoryKeys

	width, height int

	stores memoryStores
	list   memoryList

	mode  memoryMode
	input textinput.Model // the remember box's prompt

	forget *forgetBox    // nil: closed
	detail *memoryDetail // nil: the list shows
	// memorize is the memorize form (nil: closed).
	memorize *fieldForm
	// unforgetLoad is the unforget in flight.
	unforgetLoad loader
	// hideWhy: w hid why the selected item was recalled (shown under
	// the ranked list by default).
	hideWhy bool
	// reads are the numbers of the latest loads of stores, lists and
	// items: their refusals the pane shows itself, superseded or not.
	reads recentRequests
}

// recentRequests remembers the last few request numbers of one kind.
type recentRequests struct {
	nums [16]int
	next int
}

// add remembers req and returns cmd, the request.
func (r *recentRequests) add(req int, cmd tea.Cmd) tea.Cmd {
	r.nums[r.next%len(r.nums)] = req
	r.next++
	return cmd
}

// has says whether req is one of them.
func (r *recentRequests) has(req int) bool { return req > 0 && slices.Contains(r.nums[:], req) }

func newMemoryPane(c conn.Conn, styles *Styles) *memoryPane {
	in := textinput.New()
	in.Prompt = "remember: "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "what to remember about (enter ranks the store's items, esc goes back)"
	in.CharLimit = 1000
	return &memoryPane{
		requests: requests{conn: c, pane: memoryPaneID},
		styles:   styles,
		keys:     newMemoryKeys(),
		input:    in,
	}
}

func (p *memoryPane) Title() string { return "Memory" }

func (p *memoryPane) Init() tea.Cmd { return p.loadStores() }

// Focus catches up with whatever changed while another tab showed (every
// change publishes an event now; a reload on focus costs little).
func (p *memoryPane) Focus() tea.Cmd {
	return p.reload()
}

func (p *memoryPane) Blur() {
	p.mode = memBrowse
	p.input.Blur()
	p.forget = nil
	p.memorize = nil
	p.layout()
}

// Capturing: the remember prompt, the forget box and the memorize form
// take every key (q and 1-7 included).
func (p *memoryPane) Capturing() bool {
	return p.mode == memPrompting || p.forget != nil || p.memorize != nil
}

// KeyMap is every binding of the pane's keys struct.
func (p *memoryPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *memoryPane) Keys() []key.Binding {
	k := p.keys
	rank := withHelp(k.Rank, "r", "by "+p.nextRank())
	deleted := k.Deleted
	if p.list.want.deleted {
		deleted = withHelp(deleted, "d", "hide forgotten")
	}
	switch {
	case p.memorize != nil:
		return formKeys("memorize")
	case p.forget != nil:
		return p.forget.keys(k)
	case p.mode == memPrompting:
		return []key.Binding{k.Run, withHelp(k.Cancel, "esc", "back")}
	case p.detail != nil:
		x := k.ForgetOne
		if p.detail.item != nil && p.detail.item.Deleted {
			x = withHelp(x, "x", "erase it")
		}
		keys := []key.Binding{withHelp(k.Back, "esc", "back to list"), x}
		if p.detail.item != nil && p.detail.item.Deleted {
			keys = append(keys, k.Unforget)
		}
		return append(keys, withHelp(k.Scroll, "↑/↓", "scroll"))
	case p.list.want.prompt != "":
		why := k.Why
		if p.hideWhy {
			why = withHelp(why, "w", "show why")
		}
		return []key.Binding{withHelp(k.Back, "esc", "back to store"), rank, why, deleted, withHelp(k.Remember, "/", "new prompt"),
			k.Open, k.Forget, k.ForgetOne, k.Unforget, k.Memorize, k.Store, k.Move, k.Page}
	}
	return []key.Binding{k.Remember, k.Memorize, k.Forget, k.Open, k.Store, rank, deleted, k.ForgetOne, k.Unforget, k.Move, k.Page, k.StoreN}
}

func (p *memoryPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len(p.input.Prompt)-4, 1)
	if p.forget != nil {
		p.forget.setWidth(w)
	}
	if p.memorize != nil {
		p.memorize.setWidth(w)
	}
	p.layout()
}

// --- loading ---

func (p *memoryPane) loadStores() tea.Cmd {
	cmd := request(&p.requests, &p.stores.loader, memory.ActionStores, action.None{})
	return p.reads.add(p.stores.req, cmd)
}

// loadList asks for what want says (nothing before a store is chosen).
func (p *memoryPane) loadList() tea.Cmd {
	q := p.list.want
	if q.store == "" {
		return nil
	}
	p.list.asked = q
	cmd := request(&p.requests, &p.list.loader, memory.ActionRemember, q.args())
	return p.reads.add(p.list.req, cmd)
}

func (p *memoryPane) loadDetail() tea.Cmd {
	d := p.detail
	if d == nil {
		return nil
	}
	cmd := request(&p.requests, &d.load, memory.ActionGet, memory.GetArgs{Store: d.store, ID: d.id})
	return p.reads.add(d.load.req, cmd)
}

// reload refreshes what shows, once per burst of events.
func (p *memoryPane) reload() tea.Cmd {
	cmds := []tea.Cmd{p.refresh(&p.stores.loader, p.loadStores), p.refresh(&p.list.loader, p.loadList)}
	if p.detail != nil {
		cmds = append(cmds, p.refresh(&p.detail.load, p.loadDetail))
	}
	return tea.Batch(cmds...)
}

// reloadAll loads again what the tab shows (events were missed), the
// forget box's preview too.
func (p *memoryPane) reloadAll() tea.Cmd {
	cmds := []tea.Cmd{p.reload()}
	if p.forget != nil {
		cmds = append(cmds, p.forget.storeChanged(p))
	}
	return tea.Batch(cmds...)
}

// requery shows want from scratch: the list is the answer to another
// question now.
func (p *memoryPane) requery() tea.Cmd {
	l := &p.list
	l.cursor.reset()
	p.layout()
	if l.want == l.shown && l.loaded && (!l.busy || l.asked == l.want) {
		return nil
	}
	return p.loadList()
}

// eventStore is the store a memory event is about ("" when its payload
// does not say: every store may have changed); ok is false for any other
// event.
func eventStore(ev events.Event) (store string, ok bool) {
	if e, ok := memory.EventMemorized.Of(ev); ok {
		return e.Store, true
	}
	if e, ok := memory.EventForgotten.Of(ev); ok {
		return e.Store, true
	}
	if e, ok := memory.EventUnforgotten.Of(ev); ok {
		return e.Store, true
	}
	if e, ok := memory.EventStoreChanged.Of(ev); ok {
		return e.Store, true
	}
	switch ev.Name {
	case memory.EventMemorized.Name(), memory.EventForgotten.Name(), memory.EventUnforgotten.Name(), memory.EventStoreChanged.Name():
		return "", true
	}
	return "", false
}

func (p *memoryPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case resultMsg[memory.StoresResult]:
		return p.storesResult(msg)
	case resultMsg[memory.RememberResult]:
		return p.listResult(msg)
	case resultMsg[memory.GetResult]:
		return p.detailResult(msg)
	case resultMsg[memory.MemorizeResult]:
		return p.memorized(msg)
	case resultMsg[memory.UnforgetResult]:
		return p.unforgotten(msg)
	case resultMsg[memory.ForgetResult]:
		if p.forget != nil {
			return p.forget.result(p, msg)
		}
		return nil
	case events.Event:
		s, ok := eventStore(msg)
		if !ok {
			return nil
		}
		about := func(store string) bool { return s == "" || s == store }
		cmds := []tea.Cmd{p.refresh(&p.stores.loader, p.loadStores)}
		if about(p.list.want.store) {
			cmds = append(cmds, p.refresh(&p.list.loader, p.loadList))
		}
		if p.detail != nil && about(p.detail.store) {
			cmds = append(cmds, p.refresh(&p.detail.load, p.loadDetail))
		}
		if p.forget != nil && about(p.forget.store) {
			cmds = append(cmds, p.forget.storeChanged(p))
		}
		return tea.Batch(cmds...)
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	// Cursor blinks and the like go to the line that has the keyboard.
	var cmd tea.Cmd
	switch {
	case p.memorize != nil:
		cmd = p.memorize.update(msg)
	case p.forget != nil:
		p.forget.input, cmd = p.forget.input.Update(msg)
	case p.mode == memPrompting:
		p.input, cmd = p.input.Update(msg)
	}
	return cmd
}

func (p *memoryPane) detailResult(msg resultMsg[memory.GetResult]) tea.Cmd {
	d := p.detail
	if d == nil {
		return nil
	}
	latest, again := d.load.answer(msg.req)
	if !latest {
		return nil
	}
	switch {
	case msg.err != nil:
		d.item, d.err = nil, storeGone(msg.err, d.store) // erased (hard), or the store revoked
	case msg.value.Item == nil:
		d.err = "unexpected memory.get result"
	default:
		d.item, d.err = msg.value.Item, ""
	}
	p.layout()
	if again {
		return p.loadDetail()
	}
	return nil
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

func (p *memoryPane) storesResult(msg resultMsg[memory.StoresResult]) tea.Cmd {
	st := &p.stores
	latest, again := st.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err != nil {
		st.err = errs.As(msg.err).Message
	} else {
		st.err = ""
		st.all = slices.SortedStableFunc(slices.Values(msg.value.Stores), storeOrder)
	}
	st.loaded = true
	var cmds []tea.Cmd
	if again {
		cmds = append(cmds, p.loadStores())
	}
	// The first answer chooses the store; a store that went away (no
	// longer shared with the viewer: stores are never removed) gives way
	// to the first one, and the status line says why.
	if gone := p.list.want.store; p.store(gone) == nil && len(st.all) > 0 {
		if gone != "" && msg.err == nil {
			cmds = append(cmds, showStatus(fmt.Sprintf("Store %s is no longer shared with you: showing %s.", gone, st.all[0].Store), false))
		}
		cmds = append(cmds, p.selectStore(st.all[0].Store))
	}
	p.layout()
	return tea.Batch(cmds...)
}

func (p *memoryPane) listResult(msg resultMsg[memory.RememberResult]) tea.Cmd {
	l := &p.list
	latest, again := l.answer(msg.req)
	if !latest {
		return nil
	}
	asked := l.asked
	if msg.err != nil {
		l.err = storeGone(msg.err, asked.store)
		l.items = nil
		l.cursor.setLen(0)
	} else {
		l.err = ""
		// The cursor stays on its item when the list changes around it
		// (the same question answered again).
		was := ""
		if at := p.current(); at != nil {
			was = at.ID
		}
		l.items = slices.DeleteFunc(msg.value.Items, func(r memory.Recalled) bool { return r.Item == nil })
		l.cursor.setLen(len(l.items))
		if asked != l.shown {
			l.cursor.reset()
		} else if was != "" {
			l.cursor.keep(func(i int) bool { return l.items[i].ID == was })
		}
	}
	l.shown, l.loaded = asked, true
	p.layout()
	if again || l.want != asked {
		return p.loadList()
	}
	return nil
}

// store is the named store's capacity, if it is listed.
func (p *memoryPane) store(name string) *memory.Capacity {
	for i := range p.stores.all {
		if p.stores.all[i].Store == name {
			return &p.stores.all[i]
		}
	}
	return nil
}

// storeType is the selected store's type ("" before it is known).
func (p *memoryPane) storeType() string {
	if s := p.store(p.list.want.store); s != nil {
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
	if p.list.want.rank != "" {
		return p.list.want.rank
	}
	return defaultRank(p.storeType())
}

// ranks are the orders r goes through, the store's first: with a prompt,
// relevance comes next.
func (p *memoryPane) ranks() []string {
	def := defaultRank(p.storeType())
	out := []string{def}
	if p.list.want.prompt != "" {
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
	if name == p.list.want.store {
		return nil
	}
	p.list.want.store, p.list.want.rank = name, ""
	p.detail = nil
	p.layout()
	return p.requery()
}

// --- keys ---

func (p *memoryPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case p.memorize != nil:
		return p.memorizeKey(msg)
	case p.forget != nil:
		return p.forget.key(p, msg)
	case p.mode == memPrompting:
		return p.promptKey(msg)
	case p.detail != nil:
		return p.detailKey(msg)
	}
	return p.listKey(msg)
}

func (p *memoryPane) listKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Remember):
		p.mode = memPrompting
		p.input.SetValue(p.list.want.prompt)
		p.input.CursorEnd()
		p.layout()
		return p.input.Focus()
	case key.Matches(msg, k.Forget):
		return p.openForget("", false)
	case key.Matches(msg, k.Memorize):
		return p.openMemorize()
	case key.Matches(msg, k.Unforget):
		if it := p.current(); it != nil {
			return p.unforget(p.list.shown.store, it.Item)
		}
		return nil
	case key.Matches(msg, k.ForgetOne):
		if it := p.current(); it != nil {
			return p.openForget("item "+it.ID, it.Deleted)
		}
		return nil
	case key.Matches(msg, k.Open):
		return p.openDetail()
	case key.Matches(msg, k.Store):
		return p.moveStore(key.Matches(msg, nav.Right))
	case key.Matches(msg, k.StoreN):
		if n, ok := keyDigit(msg); ok && n <= len(p.stores.all) {
			return p.selectStore(p.stores.all[n-1].Store)
		}
		return nil
	case key.Matches(msg, k.Rank):
		p.list.want.rank = p.nextRank()
		if p.list.want.rank == defaultRank(p.storeType()) {
			p.list.want.rank = ""
		}
		return p.requery()
	case key.Matches(msg, k.Deleted):
		p.list.want.deleted = !p.list.want.deleted
		return p.requery()
	case key.Matches(msg, k.Why) && p.list.want.prompt != "":
		p.hideWhy = !p.hideWhy
		p.layout()
		return nil
	case key.Matches(msg, k.Back):
		if p.list.want.prompt == "" {
			return nil
		}
		p.input.SetValue("")
		p.setPrompt("")
		return p.requery()
	}
	p.list.cursor.handleKey(msg)
	return nil
}

// moveStore selects the store to the right (or left) of the selected one.
func (p *memoryPane) moveStore(right bool) tea.Cmd {
	all := p.stores.all
	i := slices.IndexFunc(all, func(c memory.Capacity) bool { return c.Store == p.list.want.store })
	if i < 0 {
		return nil
	}
	if right {
		i++
	} else {
		i--
	}
	if i < 0 || i >= len(all) {
		return nil
	}
	return p.selectStore(all[i].Store)
}

// setPrompt changes the prompt, and with it the ranks on offer.
func (p *memoryPane) setPrompt(prompt string) {
	p.list.want.prompt = prompt
	if prompt == "" && p.list.want.rank == "relevance" {
		p.list.want.rank = ""
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
		p.input.SetValue(p.list.want.prompt)
		p.layout()
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return cmd
}

// current is the item under the cursor.
func (p *memoryPane) current() *memory.Recalled {
	if i := p.list.cursor.Index(); i < len(p.list.items) {
		return &p.list.items[i]
	}
	return nil
}

func (p *memoryPane) openDetail() tea.Cmd {
	it := p.current()
	if it == nil {
		return nil
	}
	r := *it
	d := &memoryDetail{id: it.ID, store: p.list.shown.store, item: r.Item,
		view: scrollView{Above: fixedNote(""), Below: fixedNote("")}} // the title says where it is
	if p.list.shown.prompt != "" {
		d.rank = &r
	}
	p.detail = d
	p.layout()
	return p.loadDetail() // every field as it is now
}

func (p *memoryPane) detailKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	d := p.detail
	switch {
	case key.Matches(msg, k.Back):
		p.detail = nil
		p.layout()
		return nil
	case key.Matches(msg, k.ForgetOne):
		if d.item == nil {
			return nil
		}
		id, hard := d.id, d.item.Deleted
		p.detail = nil
		return p.openForget("item "+id, hard)
	case key.Matches(msg, k.Unforget) && d.item != nil && d.item.Deleted:
		// Only a forgotten item comes back: the footer offers u only then.
		return p.unforget(d.store, d.item)
	}
	d.view.handleKey(msg)
	return nil
}

// openForget opens the forget box on the selected store; an instruction
// given is previewed at once. An item already forgotten can only be
// erased: hard starts the box in that mode.
func (p *memoryPane) openForget(instruction string, hard bool) tea.Cmd {
	if p.list.want.store == "" {
		return nil
	}
	p.forget = newForgetBox(p.styles, p.list.want.store)
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
