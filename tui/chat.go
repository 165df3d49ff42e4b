package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/conn"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
)

const (
	chatPaneID paneID = "chat"
	// chatSearchLimit is the most hits a search asks for.
	chatSearchLimit = 20
	// chatNarrowWidth is the width below which the side panel does not fit
	// beside the conversation: ctrl+p then shows it instead.
	chatNarrowWidth = 72
)

// chatMode is what has the keyboard on the Chat tab.
type chatMode int

const (
	// chatBrowse: nothing; the app's keys (q, 1-7, tab, ?, :) work.
	chatBrowse chatMode = iota
	// chatTyping: the message line.
	chatTyping
	// chatSearching: the search line.
	chatSearching
	// chatResults: search results show; the app's keys work.
	chatResults
	// chatReplying: the line of an assistant's reply written by hand.
	chatReplying
)

// chatMain is what the main area shows on a narrow screen, where the side
// panel does not fit beside the conversation.
type chatMain int

const (
	mainConversation chatMain = iota
	mainSide
)

// sidePage is the scrollable lower part of the side panel.
type sidePage int

const (
	pageSummary sidePage = iota
	pageContext
)

type chatKeys struct {
	Type   key.Binding
	Send   key.Binding
	Leave  key.Binding
	Search key.Binding
	Switch key.Binding
	// SwitchC is c, ctrl+o's twin while no line has the keyboard.
	SwitchC key.Binding
	Context key.Binding
	Scroll  key.Binding
	Page    key.Binding
	Ends    key.Binding
	Side    key.Binding
	Back    key.Binding
	Run     key.Binding
	Cancel  key.Binding
	Pick    key.Binding
	Move    key.Binding
	Channel key.Binding
	// Older and Newer recall the searches made before, in the search line.
	Older, Newer key.Binding
	// Jump shows the selected hit in the conversation; Results goes back
	// from there to the hits.
	Jump    key.Binding
	Results key.Binding
	// Reply writes the assistant's reply by hand (no model answers);
	// Save saves it.
	Reply key.Binding
	Save  key.Binding
	// Why shows or hides why the selected hit was found.
	Why key.Binding
}

func newChatKeys() chatKeys {
	return chatKeys{
		Type:    key.NewBinding(key.WithKeys("enter", "i"), key.WithHelp("enter", "type a message")),
		Send:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
		Leave:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop typing")),
		Search:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Switch:  key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "conversations")),
		SwitchC: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "conversations")),
		Context: key.NewBinding(key.WithKeys("ctrl+p"), key.WithHelp("ctrl+p", "summary/context")),
		Scroll:  key.NewBinding(key.WithKeys("up", "down", "k", "j"), key.WithHelp("↑/↓", "scroll")),
		Page:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Ends:    key.NewBinding(key.WithKeys("home", "end", "g", "G"), key.WithHelp("g/G", "top/bottom")),
		Side:    key.NewBinding(key.WithKeys("shift+up", "shift+down"), key.WithHelp("shift+↑/↓", "scroll side")),
		Back:    key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back to the chat")),
		Run:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "search")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Pick:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "switch")),
		Move:    key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "choose")),
		Channel: key.NewBinding(key.WithKeys("ctrl+t"), key.WithHelp("ctrl+t", "channel")),
		Older:   key.NewBinding(key.WithKeys("up"), key.WithHelp("↑/↓", "earlier searches")),
		Newer:   key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "later search")),
		Jump:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "show in the chat")),
		Results: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back to the results")),
		Reply:   key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "reply by hand")),
		Save:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "save the reply")),
		Why:     key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "hide why")),
	}
}

// chatFadeMsg ends the highlight of an eviction (the root hands it to the
// Chat pane whichever tab shows, so that a highlight cannot outlive its
// time on another tab).
type chatFadeMsg struct{ id int }

// chatPane is the Chat tab: a conversation of the history (its buffer,
// oldest first; what was evicted lives on in the summary) with a message
// line at the bottom, and a side panel with the buffer's fill, the last
// eviction and, below, the running summary or the context the last message
// was sent with. / searches the whole conversation (the evicted part too);
// ctrl+o switches conversations or starts a new one; ctrl+t picks the
// channel messages go on; without a model, a writes the assistant's reply.
type chatPane struct {
	requests      // the engine, and the numbering of this pane's requests
	model    bool // a language model answers messages
	styles   *Styles
	keys     chatKeys

	width, height int
	// mode is what has the keyboard; main what the main area shows on a
	// narrow screen.
	mode chatMode
	main chatMain

	// conv is the conversation shown; buf its buffer and figures.
	conv  string
	buf   chatBuffer
	input textinput.Model
	out   chatOutgoing
	evict chatHighlight
	find  chatSearch
	side  chatSide
	route chatRouting
	reply chatReply

	// The switcher and the channel picker, while open.
	switcher *chatSwitcher
	picker   *channelPicker
}

// chatBuffer is the conversation shown: its buffer, its figures, and the
// loads that bring them.
type chatBuffer struct {
	utts        []*history.Utterance
	stats       history.Stats
	read, stat  loader
	loaded      bool // the buffer of the conversation has come
	statsLoaded bool // and its stats
	loadErr     string
	// statsErr is why the stats did not come (the side panel says it,
	// not "Loading…").
	statsErr string
	// view scrolls the conversation, the newest kept in view.
	view scrollView
	// at is the line of each utterance's header in view, by index.
	at map[int]int
	// mark is the utterance a search hit was shown at (marked: there is one).
	mark   int
	marked bool
	// revoked: the conversation's owner took the console's access back;
	// nothing reloads it (it would be refused) until access is given again.
	revoked bool
}

// chatOutgoing is the message in flight (its text is "" when none is) and
// the last exchange.
type chatOutgoing struct {
	load    loader
	text    string
	conv    string
	from    int    // the index the conversation was at when it was sent
	channel string // the channel it went on
	spinner spinner.Model
	// last is the last exchange: the prompt it was (or would have been)
	// sent with; lastConv its conversation.
	last     *core.ChatSendResult
	lastConv string
	// reconfigured holds the settings history.configure gave lastConv
	// after the last message was sent (nil: none since).
	reconfigured *history.ConfiguredEvent
}

// chatHighlight is the highlight of a new eviction in the side panel, on
// for fade after the eviction shows; id tells its fade from an earlier one's.
type chatHighlight struct {
	fade time.Duration
	id   int
	on   bool
}

// chatSearch is the search of the conversation: its line, the query asked
// and its hits.
type chatSearch struct {
	input    textinput.Model
	before   chatMode // where esc from a search goes back to
	query    string
	hits     []history.Hit
	load     loader
	searched bool // hits holds the answer to query
	err      string
	view     scrollView
	// sel is the hit selected (enter shows it in the conversation); starts
	// the line each hit begins on in view (-1: not shown).
	sel    int
	starts []int
	// jumped: enter showed a hit in the conversation; esc goes back to the
	// hits from there.
	jumped bool
	// past is the searches made this session, for ↑ and ↓.
	past queryHistory
	// hideWhy: w hid why the selected hit was found (shown by default).
	hideWhy bool
}

// queryHistory is the queries asked, oldest first, and where ↑/↓ are in
// it: like a shell's, the line being typed comes back after the newest.
type queryHistory struct {
	queries []string
	pos     int    // the query shown; len(queries): the line being typed
	draft   string // the line being typed, kept while older ones show
}

// add records q as the newest query (once: asking an old one again moves
// it to the end) and starts over from the line being typed.
func (h *queryHistory) add(q string) {
	h.queries = append(slices.DeleteFunc(h.queries, func(o string) bool { return o == q }), q)
	h.start()
}

// start puts ↑/↓ back after the newest query, with an empty line.
func (h *queryHistory) start() { h.pos, h.draft = len(h.queries), "" }

// older is the query before the one shown (cur is the line as it stands);
// ok is false when there is none.
func (h *queryHistory) older(cur string) (string, bool) {
	if h.pos == 0 {
		return "", false
	}
	if h.pos == len(h.queries) {
		h.draft = cur
	}
	h.pos--
	return h.queries[h.pos], true
}

// newer is the query after the one shown, and after the newest the line
// that was being typed; ok is false when the line being typed shows.
func (h *queryHistory) newer() (string, bool) {
	if h.pos >= len(h.queries) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.queries) {
		return h.draft, true
	}
	return h.queries[h.pos], true
}

// chatSide is the side panel's scrollable page: the summary or the
// context. turned: on a narrow screen, the other page shows.
type chatSide struct {
	page   sidePage
	turned bool
	view   scrollView
}

// chatRouting is where messages go: the channel ("" none: the conversation
// only) and, on an explicit channel, the thread of the conversation shown
// ("" a new one: the next message starts it, and the ones after continue
// it), and where each message sent from here went.
type chatRouting struct {
	channel  string
	threadID string
	// threads holds the other conversations' threads: each keeps its own.
	threads map[string]string
	// announce is the thread a message just started, to say so once its
	// title is known.
	announce string
	// routes is where each message went, by conversation and utterance
	// index; titles the threads' titles to say it with.
	routes map[string]map[int]*chatRoute
	titles map[string]string
	load   loader // the titles
	// fresh is the conversation whose next message starts a new thread
	// (chosen in the picker); otherwise, with no thread yet, it continues
	// the conversation's thread on the channel, if it has one.
	fresh string
	// continued is the thread the conversation's stored messages on the
	// channel last went to, shown as where the next goes (after a
	// relaunch). It is never sent as thread_id: the engine's
	// continue_thread decides, with its write check (an agent that may not
	// write that thread starts its own).
	continued string
}

// shownThread is the thread messages are said to go to: the one chosen or
// continued in this run, else the one the stored messages went to.
func (r *chatRouting) shownThread() string {
	if r.threadID != "" {
		return r.threadID
	}
	return r.continued
}

func newChatPane(engine conn.Conn, styles *Styles, fade time.Duration, model bool) *chatPane {
	in := textinput.New()
	in.Prompt = "› "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "say something (enter sends; / on an empty line searches)"
	in.CharLimit = 8000
	// The line's own up/down and ctrl+p/ctrl+n cycle suggestions, which
	// it has none of: the pane uses those keys.
	in.KeyMap.NextSuggestion = key.NewBinding(key.WithDisabled())
	in.KeyMap.PrevSuggestion = key.NewBinding(key.WithDisabled())
	search := textinput.New()
	search.Prompt = "search: "
	search.PromptStyle = styles.Prompt
	search.Placeholder = "words to look for, in the buffer and the evicted (enter searches, esc cancels)"
	search.CharLimit = 500
	return &chatPane{
		requests: requests{conn: engine, pane: chatPaneID},
		model:    model,
		styles:   styles,
		keys:     newChatKeys(),
		conv:     history.DefaultConversation,
		input:    in,
		buf:      chatBuffer{view: scrollView{Follow: true, Above: fixedNote(""), Below: fixedNote(" ↓ newer below (pgdn, or G when not typing)")}},
		out:      chatOutgoing{spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt))},
		evict:    chatHighlight{fade: fade},
		find:     chatSearch{input: search, view: scrollView{Above: fixedNote(""), Below: fixedNote("")}},
		reply:    newChatReply(styles),
		side:     chatSide{view: scrollView{Above: fixedNote(" ↑ more above (shift+↑)"), Below: fixedNote(" ↓ more below (shift+↓)")}},
		// Every message goes through the episodic layer too, by default as
		// on the web: the first starts a thread, the next ones continue it
		// (ctrl+t picks another channel or thread, or none).
		route: chatRouting{channel: "web", threads: map[string]string{}, routes: map[string]map[int]*chatRoute{}, titles: map[string]string{}},
	}
}

func (p *chatPane) Title() string { return "Chat" }

func (p *chatPane) Init() tea.Cmd { return p.load() }

// Focus catches up (with what the palette did while it covered the tab)
// and restarts what was running.
func (p *chatPane) Focus() tea.Cmd {
	cmds := []tea.Cmd{p.reload()}
	if p.out.text != "" {
		cmds = append(cmds, p.out.spinner.Tick) // ticks that came while away went to another tab
	}
	switch p.mode {
	case chatTyping:
		cmds = append(cmds, p.input.Focus())
	case chatReplying:
		cmds = append(cmds, p.reply.input.Focus())
	}
	return tea.Batch(cmds...)
}

func (p *chatPane) Blur() {
	p.switcher, p.picker = nil, nil
	switch p.mode {
	case chatTyping, chatReplying:
		p.mode = chatBrowse
	case chatSearching:
		p.mode = chatBrowse
		if p.find.searched {
			p.mode = chatResults
		}
	}
	p.input.Blur()
	p.find.input.Blur()
	p.reply.input.Blur()
}

// Capturing: the message line, the search line and the switcher take every
// key (q and 1-7 included); esc gives the keyboard back.
func (p *chatPane) Capturing() bool {
	return p.switcher != nil || p.picker != nil || p.mode == chatTyping || p.mode == chatSearching || p.mode == chatReplying
}

// switchBoth is Switch and SwitchC together, for the footer.
func (k chatKeys) switchBoth() key.Binding {
	return key.NewBinding(key.WithKeys(append(k.Switch.Keys(), k.SwitchC.Keys()...)...), key.WithHelp("c/ctrl+o", "conversations"))
}

// KeyMap is every binding of the pane's keys struct.
func (p *chatPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *chatPane) Keys() []key.Binding {
	k := p.keys
	ctx := withHelp(k.Context, "ctrl+p", p.contextHelp())
	switch {
	case p.picker != nil:
		keys := []key.Binding{withHelp(k.Pick, "enter", "use it"), withHelp(k.Cancel, "esc", "keep "+channelName(p.route.channel)),
			withHelp(k.Channel, "ctrl+t/←/→", "channel")}
		if episodic.IsExplicit(p.picker.channel) {
			keys = append(keys, withHelp(k.Move, "↑/↓", "thread"))
		}
		return keys
	case p.switcher != nil:
		pick := k.Pick
		if row := p.switcher.current(p.conv); row != nil && row.isNew {
			pick = withHelp(pick, "enter", "start it")
		}
		return []key.Binding{pick, k.Cancel, k.Move}
	case p.mode == chatTyping:
		// One line at 120 columns: the line's placeholder says what /
		// does, and the scroll notes name pgdn and shift+↓.
		return []key.Binding{k.Send, k.Leave, k.Switch, withHelp(k.Context, "ctrl+p", p.contextHelpShort()), k.Channel,
			withHelp(k.Scroll, "↑/↓", "scroll")}
	case p.mode == chatReplying:
		return []key.Binding{k.Save, k.Cancel, withHelp(k.Scroll, "↑/↓", "scroll")}
	case p.mode == chatSearching && len(p.find.past.queries) > 0:
		return []key.Binding{k.Run, k.Cancel, k.Older}
	case p.mode == chatSearching:
		return []key.Binding{k.Run, k.Cancel}
	case p.mode == chatResults:
		keys := []key.Binding{k.Back, k.Jump, withHelp(k.Search, "/", "new search"), withHelp(k.Scroll, "↑/↓", "choose"), k.Page, k.Ends,
			withHelp(k.switchBoth(), "c/ctrl+o", "conversations"), ctx, k.Channel, k.Side}
		if p.find.anyWhy() {
			why := k.Why
			if p.find.hideWhy {
				why = withHelp(why, "w", "show why")
			}
			keys = slices.Insert(keys, 2, why)
		}
		return keys
	case p.find.jumped && p.main == mainConversation:
		return []key.Binding{k.Results, k.Type, withHelp(k.Search, "/", "new search"), k.Scroll, k.Page, k.Ends, withHelp(k.switchBoth(), "c/ctrl+o", "conversations"), ctx, k.Channel}
	}
	keys := []key.Binding{k.Type, k.Search, withHelp(k.switchBoth(), "c/ctrl+o", "conversations"), ctx, k.Channel, k.Scroll, k.Page, k.Ends, k.Side}
	if !p.hasModel() {
		// After the search, so that the footer keeps its first keys.
		keys = append(keys[:2], append([]key.Binding{k.Reply}, keys[2:]...)...)
	}
	return keys
}

func (p *chatPane) contextHelp() string {
	if p.narrow() {
		return "side panel"
	}
	if p.side.page == pageContext {
		return "show the summary"
	}
	return "show the context"
}

// contextHelpShort is contextHelp in a word, for the typing footer.
func (p *chatPane) contextHelpShort() string {
	switch {
	case p.narrow():
		return "side panel"
	case p.side.page == pageContext:
		return "summary"
	}
	return "context"
}

// narrow reports that the side panel does not fit beside the conversation.
func (p *chatPane) narrow() bool { return p.width < chatNarrowWidth }

// sideWidth is the side panel's width (when it shows beside the main area).
func (p *chatPane) sideWidth() int { return min(max(p.width*2/5, 30), 60) }

// mainWidth is the main area's width.
func (p *chatPane) mainWidth() int {
	if p.narrow() {
		return p.width
	}
	return max(p.width-p.sideWidth()-1, 1)
}

// bodyHeight is the rows between the title line and the input line.
func (p *chatPane) bodyHeight() int { return max(p.height-3, 1) }

func (p *chatPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len("› ")-4, 1)
	p.find.input.Width = max(w-len(p.find.input.Prompt)-4, 1)
	p.reply.input.Width = max(w-len(p.reply.input.Prompt)-4, 1)
	if p.switcher != nil {
		p.switcher.input.Width = max(p.mainWidth()-len(p.switcher.input.Prompt)-4, 1)
	}
	if !p.narrow() {
		p.main = mainConversation
	}
	p.render()
}

// --- loading ---

func (p *chatPane) loadBuffer() tea.Cmd {
	return request(&p.requests, &p.buf.read, history.ActionRead, history.ReadArgs{Conversation: p.conv})
}

func (p *chatPane) loadStats() tea.Cmd {
	return request(&p.requests, &p.buf.stat, history.ActionStats, history.StatsArgs{Conversation: p.conv})
}

func (p *chatPane) load() tea.Cmd { return tea.Batch(p.loadBuffer(), p.loadStats()) }

// reload refreshes the buffer and the stats, once per burst of events
// (not a conversation whose access was taken back).
func (p *chatPane) reload() tea.Cmd {
	if p.buf.revoked {
		return nil
	}
	return tea.Batch(p.refresh(&p.buf.read, p.loadBuffer), p.refresh(&p.buf.stat, p.loadStats))
}

// reloadAll loads again what the tab shows (events were missed): the
// conversation, its stats, and the switcher's and picker's lists if open.
func (p *chatPane) reloadAll() tea.Cmd {
	cmds := []tea.Cmd{p.reload(), p.refreshPicker()}
	if p.switcher != nil {
		cmds = append(cmds, p.refresh(&p.switcher.load, p.loadSwitcher))
	}
	return tea.Batch(cmds...)
}

// historyEvent is the conversation a history event is about; ok is false
// for any other event.
func historyEvent(ev events.Event) (conv string, ok bool) {
	if u, ok := history.EventWritten.Of(ev); ok {
		return u.Conversation, true
	}
	if e, ok := history.EventEvicted.Of(ev); ok {
		return e.Conversation, true
	}
	if s, ok := history.EventSummary.Of(ev); ok {
		return s.Conversation, true
	}
	if d, ok := history.EventDeleted.Of(ev); ok {
		return d.Conversation, true
	}
	if m, ok := history.EventMoved.Of(ev); ok {
		return m.Conversation, true
	}
	if d, ok := history.EventDropped.Of(ev); ok {
		return d.Conversation, true
	}
	return "", false
}

func (p *chatPane) Update(msg tea.Msg) tea.Cmd {
	if a, ok := msg.(addressed); ok && a.addressee() != chatPaneID {
		return nil // another pane's answer
	}
	switch msg := msg.(type) {
	case chatShowMsg:
		return p.show(msg.conv)
	case resultMsg[history.Utterances]:
		return p.bufferResult(msg)
	case resultMsg[history.Stats]:
		return p.statsResult(msg)
	case resultMsg[core.ChatSendResult]:
		return p.sendResult(msg)
	case resultMsg[history.SearchResult]:
		return p.searchResult(msg)
	case resultMsg[history.WriteResult]:
		return p.replyWritten(msg)
	case resultMsg[episodic.MessageResult]:
		return p.replyCopied(msg)
	case resultMsg[history.ListResult]:
		if p.switcher != nil {
			return p.switcher.setList(p, msg)
		}
		return nil
	case resultMsg[episodic.ListResult]:
		if p.picker != nil && msg.req == p.picker.load.req {
			return p.picker.setList(p, msg)
		}
		return p.titlesResult(msg)
	case events.Event:
		return p.event(msg)
	case chatFadeMsg:
		if msg.id == p.evict.id && p.evict.on {
			p.evict.on = false
			p.render()
		}
		return nil
	case spinner.TickMsg:
		if p.out.text == "" {
			return nil // nothing in flight: let the spinner stop
		}
		var cmd tea.Cmd
		p.out.spinner, cmd = p.out.spinner.Update(msg)
		p.renderConv()
		return cmd
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	// Cursor blinks and the like go to the line that has the keyboard.
	var cmd tea.Cmd
	switch {
	case p.picker != nil:
	case p.switcher != nil:
		p.switcher.input, cmd = p.switcher.input.Update(msg)
	case p.mode == chatTyping:
		p.input, cmd = p.input.Update(msg)
	case p.mode == chatSearching:
		p.find.input, cmd = p.find.input.Update(msg)
	case p.mode == chatReplying:
		p.reply.input, cmd = p.reply.input.Update(msg)
	}
	return cmd
}

// event follows the engine: the history's events about the conversation
// shown reload it (a write or a move also refreshes the switcher's list),
// and the threads' events refresh the picker and the routing notes.
func (p *chatPane) event(ev events.Event) tea.Cmd {
	if t, ok := episodic.EventThreadCreated.Of(ev); ok {
		// A new thread: its title, for the notes.
		p.route.titles[t.ID] = oneLine(t.Title)
		p.renderConv()
		return p.refreshPicker()
	}
	if _, ok := episodic.EventTurnAdded.Of(ev); ok {
		return p.refreshPicker() // the thread's count of turns changed
	}
	if c, ok := history.EventConfigured.Of(ev); ok {
		return p.configured(c)
	}
	if a, ok := history.EventAccess.Of(ev); ok {
		return p.accessChanged(a)
	}
	c, ok := historyEvent(ev)
	if !ok {
		return nil
	}
	var cmds []tea.Cmd
	if c == p.conv && !p.buf.revoked {
		cmds = append(cmds, p.reload())
	}
	_, written := history.EventWritten.Of(ev)
	_, moved := history.EventMoved.Of(ev)
	_, dropped := history.EventDropped.Of(ev)
	if (written || moved || dropped) && p.switcher != nil {
		// A new conversation may have appeared, one changed backend, or
		// one went.
		cmds = append(cmds, p.refresh(&p.switcher.load, p.loadSwitcher))
	}
	return tea.Batch(cmds...)
}

// bufferResult takes history.read's answer, and reads again if the
// conversation changed meanwhile.
func (p *chatPane) bufferResult(msg resultMsg[history.Utterances]) tea.Cmd {
	latest, again := p.buf.read.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err != nil {
		p.buf.loadErr = errs.As(msg.err).Message
	} else {
		p.buf.loadErr, p.buf.utts = "", msg.value.Utterances
	}
	p.buf.loaded = true
	titles := p.restoreRoutes()
	p.render()
	if again {
		return tea.Batch(titles, p.loadBuffer())
	}
	return titles
}

// statsResult takes history.stats's answer.
func (p *chatPane) statsResult(msg resultMsg[history.Stats]) tea.Cmd {
	latest, again := p.buf.stat.answer(msg.req)
	if !latest {
		return nil
	}
	var cmd tea.Cmd
	if msg.err != nil {
		p.buf.statsErr = errs.As(msg.err).Message
	} else {
		cmd = p.setStats(msg.value)
	}
	p.render()
	if again {
		return tea.Batch(cmd, p.loadStats())
	}
	return cmd
}

// setStats takes a conversation's figures; a new eviction (not the one
// there was when the conversation was first shown) is highlighted for a
// while.
func (p *chatPane) setStats(st history.Stats) tea.Cmd {
	prev := p.buf.stats.LastEviction
	first := !p.buf.statsLoaded
	p.buf.stats, p.buf.statsLoaded, p.buf.statsErr = st, true, ""
	cur := st.LastEviction
	if first || cur == nil || (prev != nil && prev.At.Equal(cur.At) && slices.Equal(prev.Indexes, cur.Indexes)) {
		return nil
	}
	p.evict.id++
	p.evict.on = true
	id := p.evict.id
	return tea.Tick(p.evict.fade, func(time.Time) tea.Msg { return chatFadeMsg{id: id} })
}

func (p *chatPane) sendResult(msg resultMsg[core.ChatSendResult]) tea.Cmd {
	if latest, _ := p.out.load.answer(msg.req); !latest {
		return nil
	}
	text, conv, channel := p.out.text, p.out.conv, p.out.channel
	p.out.text = ""
	if msg.err != nil {
		// Nothing was recorded: give the text back to try again.
		if p.input.Value() == "" && conv == p.conv {
			p.input.SetValue(text)
			p.input.CursorEnd()
		}
		p.render()
		return nil // the root shows the error in the status line
	}
	res := msg.value
	p.out.last, p.out.lastConv, p.out.reconfigured = &res, conv, nil
	var cmds []tea.Cmd
	if res.Thread != nil {
		cmds = append(cmds, p.routed(conv, channel, *res.Thread))
	}
	if res.LLMError != "" {
		cmds = append(cmds, showStatus("The model did not answer ("+res.LLMError+"); your message is recorded.", true))
	}
	if !res.Answered && conv == p.conv {
		// No answer: what the model was (or would have been) sent shows.
		p.side.page = pageContext
	}
	p.render()
	p.side.view.home()
	return tea.Batch(append(cmds, p.reload())...)
}

// --- keys ---

// chatTypingNav scrolls the conversation while the message line has the
// keyboard: the arrows and the pages (home and end move in the line).
var chatTypingNav = func() navKeys {
	k := navArrows
	k.Home = key.NewBinding(key.WithDisabled())
	k.End = key.NewBinding(key.WithDisabled())
	return k
}()

func (p *chatPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if p.switcher != nil {
		return p.switcherKey(msg)
	}
	if p.picker != nil {
		return p.pickerKey(msg)
	}
	// Keys that work whatever has the keyboard.
	switch {
	case key.Matches(msg, k.Switch), key.Matches(msg, k.SwitchC) && (p.mode == chatBrowse || p.mode == chatResults):
		return p.openSwitcher()
	case key.Matches(msg, k.Channel):
		return p.openPicker()
	case key.Matches(msg, k.Context):
		p.toggleSide()
		return nil
	case key.Matches(msg, nav.SideUp):
		p.side.view.scrollBy(-3)
		return nil
	case key.Matches(msg, nav.SideDown):
		p.side.view.scrollBy(3)
		return nil
	}
	switch p.mode {
	case chatTyping:
		return p.typingKey(msg)
	case chatSearching:
		return p.searchKey(msg)
	case chatResults:
		return p.resultsKey(msg)
	case chatReplying:
		return p.replyKey(msg)
	}
	return p.browseKey(msg)
}

// toggleSide flips the side panel between the summary and the context of
// the last message; on a narrow screen it cycles the main area through the
// conversation and the side panel's two pages.
func (p *chatPane) toggleSide() {
	if p.narrow() {
		// The conversation, the page shown last, the other page, and back.
		switch {
		case p.main == mainConversation:
			p.main, p.side.turned = mainSide, false
		case !p.side.turned:
			p.side.page, p.side.turned = 1-p.side.page, true
		default:
			p.main = mainConversation
		}
	} else if p.side.page == pageSummary {
		p.side.page = pageContext
	} else {
		p.side.page = pageSummary
	}
	p.render()
	p.side.view.home()
}

func (p *chatPane) typingKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Send):
		return p.send()
	case key.Matches(msg, k.Leave):
		p.mode = chatBrowse
		p.input.Blur()
		p.render()
		return nil
	case key.Matches(msg, k.Search) && p.input.Value() == "":
		return p.startSearch()
	case p.mainView().handleKeyWith(msg, chatTypingNav):
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return cmd
}

func (p *chatPane) browseKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Type):
		// Typing leaves the search for good: the hits and the mark go.
		p.find.clear()
		p.buf.marked = false
		p.mode = chatTyping
		p.main = mainConversation
		p.render()
		return p.input.Focus()
	case key.Matches(msg, k.Search):
		return p.startSearch()
	case key.Matches(msg, k.Reply):
		return p.startReply()
	case key.Matches(msg, k.Results) && p.find.jumped && p.main == mainConversation:
		p.find.jumped = false
		p.mode = chatResults
		p.render()
		return nil
	case key.Matches(msg, nav.Esc) && p.main == mainSide:
		p.main = mainConversation
		p.render()
		return nil
	}
	p.mainView().handleKey(msg)
	return nil
}

// mainView is the section the main area scrolls: the search results, the
// side panel's page (narrow), or the conversation.
func (p *chatPane) mainView() *scrollView {
	switch {
	case p.mode == chatResults:
		return &p.find.view
	case p.main == mainSide:
		return &p.side.view
	}
	return &p.buf.view
}

// send starts chat.send with the message line.
func (p *chatPane) send() tea.Cmd {
	text := strings.TrimSpace(p.input.Value())
	if text == "" {
		return nil
	}
	if p.out.text != "" {
		return showStatus("Still waiting for the last message: enter sends once it is in.", false)
	}
	args := core.ChatSendArgs{Text: text, Conversation: p.conv, Channel: p.route.channel}
	if episodic.IsExplicit(p.route.channel) {
		args.ThreadID = p.route.threadID
		args.ContinueThread = args.ThreadID == "" && p.route.fresh != p.conv
	}
	cmd := request(&p.requests, &p.out.load, core.ActionChatSend, args)
	p.out.text, p.out.conv, p.out.from, p.out.channel = text, p.conv, p.buf.stats.NextIndex, p.route.channel
	p.input.SetValue("")
	p.render()
	p.buf.view.end()
	return tea.Batch(cmd, p.out.spinner.Tick)
}

// --- search ---

func (p *chatPane) startSearch() tea.Cmd {
	if p.mode != chatResults {
		p.find.before = p.mode
	}
	p.mode = chatSearching
	p.main = mainConversation
	p.find.jumped = false
	p.buf.marked = false // the last search's hit
	p.input.Blur()
	// A new search starts empty: the ones before are on ↑.
	p.find.input.SetValue("")
	p.find.past.start()
	p.render()
	return p.find.input.Focus()
}

func (p *chatPane) searchKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	f := &p.find
	switch {
	case key.Matches(msg, k.Run):
		q := strings.Join(strings.Fields(f.input.Value()), " ")
		if q == "" {
			return nil
		}
		f.input.Blur()
		p.mode = chatResults
		f.past.add(q)
		f.query, f.hits, f.searched, f.err, f.sel = q, nil, false, "", 0
		cmd := request(&p.requests, &f.load, history.ActionSearch,
			history.SearchRequest{Conversation: p.conv, Query: q, Limit: chatSearchLimit})
		p.render()
		return cmd
	case key.Matches(msg, k.Cancel):
		f.input.Blur()
		if f.query != "" {
			p.mode = chatResults
			p.render()
			return nil
		}
		return p.back()
	case key.Matches(msg, k.Older):
		if q, ok := f.past.older(f.input.Value()); ok {
			f.input.SetValue(q)
			f.input.CursorEnd()
		}
		return nil
	case key.Matches(msg, k.Newer):
		if q, ok := f.past.newer(); ok {
			f.input.SetValue(q)
			f.input.CursorEnd()
		}
		return nil
	}
	var cmd tea.Cmd
	f.input, cmd = f.input.Update(msg)
	return cmd
}

// searchResult takes history.search's answer (unless the search was left
// or asked again meanwhile).
func (p *chatPane) searchResult(msg resultMsg[history.SearchResult]) tea.Cmd {
	f := &p.find
	if latest, _ := f.load.answer(msg.req); !latest {
		return nil
	}
	if msg.err != nil {
		f.err, f.hits = errs.As(msg.err).Message, nil
	} else {
		f.err, f.hits = "", msg.value.Results
	}
	f.searched = true
	f.sel = 0
	p.renderHits()
	f.view.home()
	return nil
}

func (p *chatPane) resultsKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Back):
		return p.back()
	case key.Matches(msg, k.Search):
		return p.startSearch()
	case key.Matches(msg, k.Jump):
		return p.jump()
	case key.Matches(msg, k.Why) && p.find.anyWhy():
		p.find.hideWhy = !p.find.hideWhy
		(&hitCursor{p}).set(p.find.sel) // the selected hit stays in view
		return nil
	}
	if navigate(&hitCursor{p}, msg, nav) {
		p.renderHits()
	}
	return nil
}

// jump shows the selected hit in the conversation: the conversation
// scrolls to it, with the exchange before it in view, and marks it. The
// hits give way (the conversation needs the whole area and the scroll
// keys to be read in), but stay: esc goes back to them, the same hit
// selected, to show the next. A hit no longer in the buffer cannot be
// shown: the status line says so, and the hits stay.
func (p *chatPane) jump() tea.Cmd {
	f := &p.find
	if !f.searched || f.sel >= len(f.hits) || f.hits[f.sel].Utterance == nil {
		return nil
	}
	u := f.hits[f.sel].Utterance
	line, ok := p.buf.at[u.UtteranceIndex]
	if !ok {
		return showStatus(fmt.Sprintf("#%d has left the buffer: the conversation no longer shows it (the summary covers it).", u.UtteranceIndex), false)
	}
	f.jumped = true
	p.mode, p.main = chatBrowse, mainConversation
	p.buf.mark, p.buf.marked = u.UtteranceIndex, true
	p.render()
	p.buf.view.setOffset(line - p.buf.view.Height()/4)
	return nil
}

// hitCursor moves the selection through the hits (the navigation keys),
// scrolling the results to keep the selected one in view.
type hitCursor struct{ p *chatPane }

func (c *hitCursor) set(i int) {
	f := &c.p.find
	f.sel = max(min(i, len(f.hits)-1), 0)
	c.p.renderHits() // the why lines move to the selected hit
	if f.sel >= len(f.starts) || f.starts[f.sel] < 0 {
		return
	}
	start, end := f.starts[f.sel], f.view.TotalLineCount()
	for _, s := range f.starts[f.sel+1:] {
		if s >= 0 {
			end = s - 1 // the blank line between hits
			break
		}
	}
	v := &f.view
	if end > v.Offset()+v.Height() {
		v.setOffset(end - v.Height())
	}
	if start < v.Offset() {
		v.setOffset(start)
	}
}

// perPage is about how many hits a page of the results holds.
func (c *hitCursor) perPage() int { return max(c.p.find.view.Height()/4, 1) }

func (c *hitCursor) up()       { c.set(c.p.find.sel - 1) }
func (c *hitCursor) down()     { c.set(c.p.find.sel + 1) }
func (c *hitCursor) pageUp()   { c.set(c.p.find.sel - c.perPage()) }
func (c *hitCursor) pageDown() { c.set(c.p.find.sel + c.perPage()) }
func (c *hitCursor) home()     { c.set(0); c.p.find.view.home() }
func (c *hitCursor) end()      { c.set(len(c.p.find.hits) - 1) }

// anyWhy says whether a hit says why it was found (w then shows or
// hides it).
func (f *chatSearch) anyWhy() bool {
	return slices.ContainsFunc(f.hits, func(h history.Hit) bool { return whyShown(&h) })
}

// clear forgets the search; an answer in flight is then stale.
func (f *chatSearch) clear() {
	f.query, f.hits, f.searched, f.err, f.load = "", nil, false, "", loader{}
	f.sel, f.jumped = 0, false
	f.input.SetValue("")
}

// back leaves the search for the conversation, and the keyboard to what
// had it before.
func (p *chatPane) back() tea.Cmd {
	p.find.clear()
	p.buf.marked = false // leaving the search leaves its hit too
	p.mode = p.find.before
	p.render()
	if p.mode == chatTyping {
		return p.input.Focus()
	}
	return nil
}

// --- conversations ---

// switchTo shows another conversation (a new one starts empty: its first
// message creates it).
func (p *chatPane) switchTo(c string) tea.Cmd {
	p.switcher = nil
	if c == p.conv {
		p.mode = chatTyping
		p.render()
		return p.input.Focus()
	}
	// The thread messages go to is the conversation's own: the one its
	// messages went to last, or a new one.
	r := &p.route
	r.threads[p.conv] = r.threadID
	r.threadID, r.announce, r.continued = r.threads[c], "", ""
	p.conv = c
	// What loads for the conversation left is stale: a fresh buffer (whose
	// loaders number nothing yet) waits for the new one's.
	p.buf = chatBuffer{view: p.buf.view}
	p.buf.view.setLines(nil)
	p.evict.on = false
	p.find.clear()
	p.mode, p.main, p.side.page = chatTyping, mainConversation, pageSummary
	p.render()
	return tea.Batch(p.load(), p.input.Focus(), showStatus("Conversation "+c+".", false))
}

// chatShowMsg asks the Chat tab to show a conversation, browsing (the
// tour's, once it is loaded; the default one once it is removed).
type chatShowMsg struct{ conv string }

// show opens conversation c without taking the keyboard: the person did
// not ask to type.
func (p *chatPane) show(c string) tea.Cmd {
	if c == p.conv {
		return nil
	}
	_ = p.switchTo(c) // its status line and focus are for a switch the person made
	p.mode = chatBrowse
	p.input.Blur()
	p.render()
	return p.load()
}

// routed notes where thread.message sent a message (shown under it), and
// keeps an explicit channel's new thread for the messages after it.
func (p *chatPane) routed(conv, channel string, res episodic.MessageResult) tea.Cmd {
	if res.ThreadID == "" {
		return nil
	}
	r := &p.route
	if r.routes[conv] == nil {
		r.routes[conv] = map[int]*chatRoute{}
	}
	// The history records the message at the index the conversation was
	// at when it was sent.
	r.routes[conv][p.out.from] = newChatRoute(channel, res)
	// On an explicit channel, the thread the first message started is the
	// one the conversation's next messages continue.
	if episodic.IsExplicit(channel) && r.channel == channel {
		switch {
		case conv == p.conv && r.threadID == "":
			r.threadID, r.announce = res.ThreadID, res.ThreadID
		case conv != p.conv && r.threads[conv] == "":
			r.threads[conv] = res.ThreadID
		}
	}
	return p.loadTitles()
}
