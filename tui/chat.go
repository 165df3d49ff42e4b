package tui

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
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
	// chatBrowse: nothing; the app's keys (q, 1-6, tab, ?, :) work.
	chatBrowse chatMode = iota
	// chatTyping: the message line.
	chatTyping
	// chatSearching: the search line.
	chatSearching
	// chatResults: search results show; the app's keys work.
	chatResults
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
	Type    key.Binding
	Send    key.Binding
	Leave   key.Binding
	Search  key.Binding
	Switch  key.Binding
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
}

func newChatKeys() chatKeys {
	return chatKeys{
		Type:    key.NewBinding(key.WithKeys("enter", "i"), key.WithHelp("enter", "type a message")),
		Send:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
		Leave:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop typing")),
		Search:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Switch:  key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "conversations")),
		Context: key.NewBinding(key.WithKeys("ctrl+p"), key.WithHelp("ctrl+p", "summary/context")),
		Scroll:  key.NewBinding(key.WithKeys("up", "down", "k", "j"), key.WithHelp("↑/↓", "scroll")),
		Page:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		Ends:    key.NewBinding(key.WithKeys("home", "end", "g", "G"), key.WithHelp("g/G", "top/bottom")),
		Side:    key.NewBinding(key.WithKeys("shift+up", "shift+down"), key.WithHelp("shift+↑/↓", "scroll side")),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back to the chat")),
		Run:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "search")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Pick:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "switch")),
		Move:    key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "choose")),
		Channel: key.NewBinding(key.WithKeys("ctrl+t"), key.WithHelp("ctrl+t", "channel")),
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
// ctrl+o switches conversations or starts a new one.
type chatPane struct {
	requests // the engine, and the numbering of this pane's requests
	styles   *Styles
	keys     chatKeys
	fade     time.Duration

	width, height int
	mode          chatMode
	before        chatMode // where esc from a search goes back to
	main          chatMain
	page          sidePage
	sideTurned    bool // narrow: the side panel's other page shows

	// The conversation shown.
	conv        string
	utts        []*history.Utterance
	stats       history.Stats
	read, stat  loader
	loaded      bool // the buffer of conv has come
	statsLoaded bool // and its stats
	loadErr     string

	input    textinput.Model
	convView viewport.Model
	sideView viewport.Model
	hitsView viewport.Model

	// The message in flight.
	sendReq  int
	sending  string
	sendConv string
	sendFrom int // the index the conversation was at when it was sent
	spinner  spinner.Model
	// The last exchange: the prompt it was (or would have been) sent with.
	last     *core.ChatResult
	lastConv string

	// The eviction highlight.
	fadeID    int
	highlight bool

	// Search.
	search    textinput.Model
	query     string
	hits      []history.Hit
	searchReq int
	searched  bool // hits holds the answer to query
	searchErr string

	switcher *chatSwitcher

	// The channel messages go on ("" none: the conversation only) and, on
	// an explicit channel, the thread of the conversation shown ("" a new
	// one: the next message starts it, and the ones after continue it).
	// Each conversation keeps its own thread: convThreads holds the others'.
	channel     string
	threadID    string
	convThreads map[string]string
	picker      *channelPicker
	// announce is the thread a message just started, to say so once its
	// title is known.
	announce string
	// sendChannel is the channel of the message in flight.
	sendChannel string
	// Where each message sent from here went, by conversation and
	// utterance index; the threads' titles to say it with.
	routes    map[string]map[int]*chatRoute
	titles    map[string]string
	titlesReq int
}

func newChatPane(engine *core.Engine, styles *Styles, fade time.Duration) *chatPane {
	in := textinput.New()
	in.Prompt = "› "
	in.PromptStyle = styles.Prompt
	in.Placeholder = "say something (enter sends, esc stops typing)"
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
		requests:    requests{engine: engine, pane: chatPaneID},
		styles:      styles,
		keys:        newChatKeys(),
		fade:        fade,
		conv:        history.DefaultConversation,
		input:       in,
		search:      search,
		convView:    viewport.New(0, 0),
		sideView:    viewport.New(0, 0),
		hitsView:    viewport.New(0, 0),
		spinner:     spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
		routes:      map[string]map[int]*chatRoute{},
		titles:      map[string]string{},
		convThreads: map[string]string{},
		// Every message goes through the episodic layer too, by default as
		// on the web: the first starts a thread, the next ones continue it
		// (ctrl+t picks another channel or thread, or none).
		channel: "web",
	}
}

func (p *chatPane) Title() string { return "Chat" }

func (p *chatPane) Init() tea.Cmd { return p.load() }

// Focus catches up (history.configure changes the buffer's size without
// an event when it evicts nothing) and restarts what was running.
func (p *chatPane) Focus() tea.Cmd {
	cmds := []tea.Cmd{p.reload()}
	if p.sending != "" {
		cmds = append(cmds, p.spinner.Tick) // ticks that came while away went to another tab
	}
	if p.mode == chatTyping {
		cmds = append(cmds, p.input.Focus())
	}
	return tea.Batch(cmds...)
}

func (p *chatPane) Blur() {
	p.switcher, p.picker = nil, nil
	switch p.mode {
	case chatTyping:
		p.mode = chatBrowse
	case chatSearching:
		p.mode = chatBrowse
		if p.searched {
			p.mode = chatResults
		}
	}
	p.input.Blur()
	p.search.Blur()
}

// Capturing: the message line, the search line and the switcher take every
// key (q and 1-6 included); esc gives the keyboard back.
func (p *chatPane) Capturing() bool {
	return p.switcher != nil || p.picker != nil || p.mode == chatTyping || p.mode == chatSearching
}

func (p *chatPane) Keys() []key.Binding {
	k := p.keys
	ctx := withHelp(k.Context, "ctrl+p", p.contextHelp())
	switch {
	case p.picker != nil:
		keys := []key.Binding{withHelp(k.Pick, "enter", "use it"), withHelp(k.Cancel, "esc", "keep "+channelName(p.channel)),
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
		return []key.Binding{k.Send, k.Leave, k.Switch, ctx, k.Channel, withHelp(k.Search, "/", "search (on an empty line)"),
			withHelp(k.Scroll, "↑/↓", "scroll"), k.Page, k.Side}
	case p.mode == chatSearching:
		return []key.Binding{k.Run, k.Cancel}
	case p.mode == chatResults:
		return []key.Binding{k.Back, withHelp(k.Search, "/", "new search"), k.Scroll, k.Page, k.Switch, ctx, k.Channel}
	}
	return []key.Binding{k.Type, k.Search, withHelp(k.Switch, "ctrl+o/c", "conversations"), ctx, k.Channel, k.Scroll, k.Page, k.Ends, k.Side}
}

func (p *chatPane) contextHelp() string {
	if p.narrow() {
		return "side panel"
	}
	if p.page == pageContext {
		return "show the summary"
	}
	return "show the context"
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
	p.search.Width = max(w-len(p.search.Prompt)-4, 1)
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
	return p.run(&p.read, "history.read", map[string]any{"conversation": p.conv})
}

func (p *chatPane) loadStats() tea.Cmd {
	return p.run(&p.stat, "history.stats", map[string]any{"conversation": p.conv})
}

func (p *chatPane) load() tea.Cmd { return tea.Batch(p.loadBuffer(), p.loadStats()) }

// reload refreshes the buffer and the stats, once per burst of events.
func (p *chatPane) reload() tea.Cmd {
	return tea.Batch(p.refresh(&p.read, p.loadBuffer), p.refresh(&p.stat, p.loadStats))
}

// eventConversation is the conversation a history event is about.
func eventConversation(data any) (string, bool) {
	switch d := data.(type) {
	case *history.Utterance:
		if d == nil {
			return "", false
		}
		return d.Conversation, true
	case history.Utterance:
		return d.Conversation, true
	case map[string]any:
		c, ok := d["conversation"].(string)
		return c, ok
	}
	return "", false
}

func (p *chatPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != chatPaneID {
			return nil
		}
		return p.result(msg)
	case events.Event:
		switch msg.Name {
		case episodic.EventThreadCreated, episodic.EventTurnAdded:
			// A new thread: its title, for the notes; the picker lists it
			// (and a thread's new turn changes its count there).
			if t, ok := msg.Data.(*episodic.Thread); ok && t != nil {
				p.titles[t.ID] = oneLine(t.Title)
				p.renderConv()
			}
			return p.refreshPicker()
		case history.EventWritten, history.EventEvicted, history.EventSummary:
		case kit.EventTraceRecorded:
			// A deletion or a move to another backend says so only in the
			// trace.
			if e, ok := msg.Data.(trace.Entry); ok && (e.Kind == "history.deleted" || e.Kind == "history.backend") {
				return p.reload()
			}
			return nil
		default:
			return nil
		}
		c, ok := eventConversation(msg.Data)
		var cmds []tea.Cmd
		if !ok || c == p.conv {
			cmds = append(cmds, p.reload())
		}
		if p.switcher != nil && msg.Name == history.EventWritten && !p.switcher.busy {
			cmds = append(cmds, p.loadSwitcher()) // a new conversation may have appeared
		}
		return tea.Batch(cmds...)
	case chatFadeMsg:
		if msg.id == p.fadeID && p.highlight {
			p.highlight = false
			p.render()
		}
		return nil
	case spinner.TickMsg:
		if p.sending == "" {
			return nil // nothing in flight: let the spinner stop
		}
		var cmd tea.Cmd
		p.spinner, cmd = p.spinner.Update(msg)
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
		p.search, cmd = p.search.Update(msg)
	}
	return cmd
}

// result applies the answer to one of the pane's requests.
func (p *chatPane) result(msg actionResultMsg) tea.Cmd {
	switch {
	case msg.req == p.read.req:
		p.read.busy = false
		var res struct {
			Utterances []*history.Utterance `json:"utterances"`
		}
		switch {
		case msg.err != nil:
			p.loadErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil:
			p.loadErr = "unexpected history.read result"
		default:
			p.loadErr = ""
			p.utts = res.Utterances
		}
		p.loaded = true
		p.render()
		if p.read.dirty {
			return p.loadBuffer()
		}
		return nil
	case msg.req == p.stat.req:
		p.stat.busy = false
		var cmd tea.Cmd
		var st history.Stats
		switch {
		case msg.err != nil:
			p.loadErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &st) != nil:
			p.loadErr = "unexpected history.stats result"
		default:
			cmd = p.setStats(st)
		}
		p.render()
		if p.stat.dirty {
			return tea.Batch(cmd, p.loadStats())
		}
		return cmd
	case msg.req == p.sendReq:
		return p.sendResult(msg)
	case msg.req == p.searchReq:
		p.searchReq = 0
		var res struct {
			Results []history.Hit `json:"results"`
		}
		switch {
		case msg.err != nil:
			p.searchErr = errs.As(msg.err).Message
			p.hits = nil
		case json.Unmarshal(msg.result, &res) != nil:
			p.searchErr = "unexpected history.search result"
		default:
			p.searchErr, p.hits = "", res.Results
		}
		p.searched = true
		p.renderHits()
		p.hitsView.GotoTop()
		return nil
	case p.switcher != nil && msg.req == p.switcher.req:
		p.switcher.setList(msg)
		p.render()
		return nil
	case p.picker != nil && msg.req == p.picker.load.req:
		return p.picker.setList(p, msg)
	case msg.req == p.titlesReq:
		return p.titlesResult(msg)
	}
	return nil // stale
}

// setStats takes a conversation's figures; a new eviction (not the one
// there was when the conversation was first shown) is highlighted for a
// while.
func (p *chatPane) setStats(st history.Stats) tea.Cmd {
	prev := p.stats.LastEviction
	first := !p.statsLoaded
	p.stats, p.statsLoaded, p.loadErr = st, true, ""
	cur := st.LastEviction
	if first || cur == nil || (prev != nil && prev.At.Equal(cur.At) && slices.Equal(prev.Indexes, cur.Indexes)) {
		return nil
	}
	p.fadeID++
	p.highlight = true
	id := p.fadeID
	return tea.Tick(p.fade, func(time.Time) tea.Msg { return chatFadeMsg{id: id} })
}

func (p *chatPane) sendResult(msg actionResultMsg) tea.Cmd {
	text, conv, channel := p.sending, p.sendConv, p.sendChannel
	p.sendReq, p.sending = 0, ""
	if msg.err != nil {
		// Nothing was recorded: give the text back to try again.
		if p.input.Value() == "" && conv == p.conv {
			p.input.SetValue(text)
			p.input.CursorEnd()
		}
		p.render()
		return nil // the root shows the error in the status line
	}
	var res core.ChatResult
	if err := json.Unmarshal(msg.result, &res); err != nil {
		p.render()
		return showStatus("unexpected chat.send result", true)
	}
	p.last, p.lastConv = &res, conv
	var cmds []tea.Cmd
	if len(res.Thread) > 0 {
		cmds = append(cmds, p.routed(conv, channel, res.Thread))
	}
	if res.LLMError != "" {
		cmds = append(cmds, showStatus("The model did not answer ("+res.LLMError+"); your message is recorded.", true))
	}
	if !res.Answered && conv == p.conv {
		// No answer: what the model was (or would have been) sent shows.
		p.page = pageContext
	}
	p.render()
	p.sideView.GotoTop()
	return tea.Batch(append(cmds, p.reload())...)
}

// --- keys ---

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
	case key.Matches(msg, k.Switch), msg.String() == "c" && (p.mode == chatBrowse || p.mode == chatResults):
		return p.openSwitcher()
	case key.Matches(msg, k.Channel):
		return p.openPicker()
	case key.Matches(msg, k.Context):
		p.toggleSide()
		return nil
	case key.Matches(msg, k.Side):
		view := &p.sideView
		if msg.String() == "shift+up" {
			view.ScrollUp(3)
		} else {
			view.ScrollDown(3)
		}
		return nil
	}
	switch p.mode {
	case chatTyping:
		return p.typingKey(msg)
	case chatSearching:
		return p.searchKey(msg)
	case chatResults:
		return p.resultsKey(msg)
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
			p.main, p.sideTurned = mainSide, false
		case !p.sideTurned:
			p.page, p.sideTurned = 1-p.page, true
		default:
			p.main = mainConversation
		}
	} else if p.page == pageSummary {
		p.page = pageContext
	} else {
		p.page = pageSummary
	}
	p.render()
	p.sideView.GotoTop()
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
	case msg.String() == "up", msg.String() == "down", key.Matches(msg, k.Page):
		p.scrollMain(msg.String())
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
		p.mode = chatTyping
		p.main = mainConversation
		p.render()
		return p.input.Focus()
	case key.Matches(msg, k.Search):
		return p.startSearch()
	case msg.String() == "esc" && p.main == mainSide:
		p.main = mainConversation
		p.render()
		return nil
	}
	p.scrollMain(msg.String())
	return nil
}

// scrollMain scrolls whatever the main area shows.
func (p *chatPane) scrollMain(k string) {
	view := &p.convView
	switch {
	case p.mode == chatResults:
		view = &p.hitsView
	case p.main == mainSide:
		view = &p.sideView
	}
	switch k {
	case "up", "k":
		view.ScrollUp(1)
	case "down", "j":
		view.ScrollDown(1)
	case "pgup":
		view.PageUp()
	case "pgdown":
		view.PageDown()
	case "home", "g":
		view.GotoTop()
	case "end", "G":
		view.GotoBottom()
	}
}

// send starts chat.send with the message line.
func (p *chatPane) send() tea.Cmd {
	text := strings.TrimSpace(p.input.Value())
	if text == "" {
		return nil
	}
	if p.sending != "" {
		return showStatus("Still waiting for the last message: enter sends once it is in.", false)
	}
	args := map[string]any{"text": text, "conversation": p.conv}
	if p.channel != "" {
		args["channel"] = p.channel
		if episodic.IsExplicit(p.channel) && p.threadID != "" {
			args["thread_id"] = p.threadID
		}
	}
	cmd := p.run(nil, "chat.send", args)
	p.sendReq, p.sending, p.sendConv, p.sendFrom, p.sendChannel = p.seq, text, p.conv, p.stats.NextIndex, p.channel
	p.input.SetValue("")
	p.render()
	p.convView.GotoBottom()
	return tea.Batch(cmd, p.spinner.Tick)
}

// --- search ---

func (p *chatPane) startSearch() tea.Cmd {
	if p.mode != chatResults {
		p.before = p.mode
	}
	p.mode = chatSearching
	p.main = mainConversation
	p.input.Blur()
	p.search.SetValue(p.query)
	p.search.CursorEnd()
	p.render()
	return p.search.Focus()
}

func (p *chatPane) searchKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Run):
		q := strings.Join(strings.Fields(p.search.Value()), " ")
		if q == "" {
			return nil
		}
		p.search.Blur()
		p.mode = chatResults
		p.query, p.hits, p.searched, p.searchErr = q, nil, false, ""
		cmd := p.run(nil, "history.search", map[string]any{"conversation": p.conv, "query": q, "limit": chatSearchLimit})
		p.searchReq = p.seq
		p.render()
		return cmd
	case key.Matches(msg, k.Cancel):
		p.search.Blur()
		if p.query != "" {
			p.mode = chatResults
			p.render()
			return nil
		}
		return p.back()
	}
	var cmd tea.Cmd
	p.search, cmd = p.search.Update(msg)
	return cmd
}

func (p *chatPane) resultsKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	switch {
	case key.Matches(msg, k.Back), msg.String() == "backspace":
		return p.back()
	case key.Matches(msg, k.Search):
		return p.startSearch()
	}
	p.scrollMain(msg.String())
	return nil
}

// back leaves the search for the conversation, and the keyboard to what
// had it before.
func (p *chatPane) back() tea.Cmd {
	p.query, p.hits, p.searched, p.searchErr, p.searchReq = "", nil, false, "", 0
	p.search.SetValue("")
	p.mode = p.before
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
	p.convThreads[p.conv] = p.threadID
	p.threadID, p.announce = p.convThreads[c], ""
	p.conv = c
	p.utts, p.stats, p.loaded, p.statsLoaded, p.loadErr = nil, history.Stats{}, false, false, ""
	p.highlight = false
	p.query, p.hits, p.searched, p.searchErr, p.searchReq = "", nil, false, "", 0
	p.mode, p.main, p.page = chatTyping, mainConversation, pageSummary
	p.render()
	return tea.Batch(p.load(), p.input.Focus(), showStatus("Conversation "+c+".", false))
}

// routed notes where thread.message sent a message (shown under it), and
// keeps an explicit channel's new thread for the messages after it.
func (p *chatPane) routed(conv, channel string, raw json.RawMessage) tea.Cmd {
	var res episodic.MessageResult
	if json.Unmarshal(raw, &res) != nil || res.ThreadID == "" {
		return nil
	}
	if p.routes[conv] == nil {
		p.routes[conv] = map[int]*chatRoute{}
	}
	// The history records the message at the index the conversation was
	// at when it was sent.
	p.routes[conv][p.sendFrom] = &chatRoute{channel: channel, res: res}
	// On an explicit channel, the thread the first message started is the
	// one the conversation's next messages continue.
	if episodic.IsExplicit(channel) && p.channel == channel {
		switch {
		case conv == p.conv && p.threadID == "":
			p.threadID, p.announce = res.ThreadID, res.ThreadID
		case conv != p.conv && p.convThreads[conv] == "":
			p.convThreads[conv] = res.ThreadID
		}
	}
	return p.loadTitles()
}
