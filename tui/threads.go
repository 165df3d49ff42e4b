package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

const threadsPaneID paneID = "threads"

// threadsSection is what the lower part of the Threads tab shows about the
// selected thread.
type threadsSection int

const (
	secTurns threadsSection = iota
	secDecisions
	secCompaction
	secTuning
	secCount
)

var threadsSectionNames = [secCount]string{"turns", "decisions", "compaction", "tuning"}

type threadsKeys struct {
	Move    key.Binding
	Section key.Binding
	Enter   key.Binding
	Back    key.Binding
	Page    key.Binding
	Outcome key.Binding
	Tune    key.Binding
	Compact key.Binding
	Yes     key.Binding
	No      key.Binding
	Cancel  key.Binding
}

func newThreadsKeys() threadsKeys {
	return threadsKeys{
		Move:    key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓", "thread")),
		Section: key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "views")),
		Enter:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "into the view")),
		Back:    key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back to the threads")),
		Page:    key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "scroll")),
		Outcome: key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "mark outcome")),
		Tune:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "tune threshold")),
		Compact: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "compact thread")),
		Yes:     key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:      key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "no")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// threadEpisodes is a thread's episode.list.
type threadEpisodes struct {
	episodes []*episodic.Episode
	crosses  []*episodic.CrossEpisode
}

// threadsKept is how many threads besides the selected one keep their
// turns and episodes, to show at once when the cursor comes back.
const threadsKept = 8

// recentCache keeps a value per thread for the selected thread and the
// threadsKept threads touched last; older ones are dropped.
type recentCache[V any] struct {
	m     map[string]V
	order []string // least recently touched first
}

func newRecentCache[V any]() *recentCache[V] { return &recentCache[V]{m: map[string]V{}} }

func (c *recentCache[V]) get(id string) V { return c.m[id] }

func (c *recentCache[V]) len() int { return len(c.m) }

// touch makes id the most recently used (if it is kept).
func (c *recentCache[V]) touch(id string) {
	if i := slices.Index(c.order, id); i >= 0 {
		c.order = append(slices.Delete(c.order, i, i+1), id)
	}
}

// put keeps v for id, dropping the least recently touched values beyond
// the limit, never pinned's.
func (c *recentCache[V]) put(id string, v V, pinned string) {
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
	}
	c.m[id] = v
	c.touch(id)
	for i := 0; len(c.m) > threadsKept+1 && i < len(c.order); {
		if old := c.order[i]; old != pinned && old != id {
			delete(c.m, old)
			c.order = slices.Delete(c.order, i, i+1)
			continue
		}
		i++
	}
}

func (c *recentCache[V]) remove(id string) {
	if i := slices.Index(c.order, id); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	delete(c.m, id)
}

// threadsConfirm is a question before an action that changes things: tune
// the threshold, or compact a thread.
type threadsConfirm struct {
	action string // "tune" or "compact"
	thread string // the thread to compact
	text   string // the question
}

// threadsPane is the Threads tab: the episodic layer's threads, most
// recently active first; below, the selected thread's turns, its linking
// decisions (both scores, agreement, confidence, outcome), its compaction
// tiers as a tree, and the linking threshold's tuning. Everything follows
// the episodic events, whoever sends the messages; while the model judges
// a new thread's links a spinner says so.
type threadsPane struct {
	requests // the engine, and the numbering of this pane's requests
	styles   *Styles
	keys     threadsKeys

	width, height int
	shown         bool // the tab is the one on screen (the spinner ticks)

	// The list.
	list    loader
	threads []*episodic.Thread
	loaded  bool
	listErr string
	cursor  int
	offset  int
	sel     string // the selected thread's id
	// want is a new thread to select once the list has it: the cursor
	// follows the newest thread while it is on top (or the tab is away).
	want string

	// The selected thread's turns and decisions, and its episodes (asked:
	// the id the request in flight is for). The threads selected last show
	// at once when the cursor comes back to them, while they reload.
	detailLoad  loader
	detailAsked string
	details     *recentCache[*episodic.ThreadView]
	detailErr   string

	epLoad  loader
	epAsked string
	eps     *recentCache[*threadEpisodes]
	epErr   string

	tuneLoad loader
	tuning   *episodic.Tuning
	// How many linking decisions are marked (what tuning learns from).
	markLoad    loader
	marked      int
	markedKnown bool

	// The lower part.
	section threadsSection
	inside  bool // the section has the arrows (a decision to choose, lines to scroll)
	decID   string
	scroll  int // the first line of the section shown, when inside

	// The model judging new threads' links: how many judgings are under way
	// (link.judging counts up, link.judged down), and how many threads
	// they judge against.
	judging    int
	judgeCount int
	spinner    spinner.Model

	// The outcome question, the question before tuning or compacting, the
	// tuning and the compaction in flight.
	asking     *episodic.Decision
	confirm    *threadsConfirm
	outcomeReq int
	tuneReq    int
	tuneBusy   bool
	tuneErr    string
	compactReq int
	compactFor string
}

func newThreadsPane(engine *core.Engine, styles *Styles) *threadsPane {
	return &threadsPane{
		requests: requests{engine: engine, pane: threadsPaneID},
		styles:   styles,
		keys:     newThreadsKeys(),
		details:  newRecentCache[*episodic.ThreadView](),
		eps:      newRecentCache[*threadEpisodes](),
		spinner:  spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
	}
}

func (p *threadsPane) Title() string { return "Threads" }

// Init loads the threads and the linking configuration, unless this engram
// has no episodic layer.
func (p *threadsPane) Init() tea.Cmd {
	if _, err := p.engine.Env().Actions.Lookup("thread.list"); err != nil {
		p.loaded, p.listErr = true, errs.As(err).Message
		return nil
	}
	return tea.Batch(p.loadList(), p.loadTuning(), p.loadMarked())
}

// Focus refreshes what shows (a slow subscriber may miss progress events)
// and restarts the spinner, whose ticks went to another tab.
func (p *threadsPane) Focus() tea.Cmd {
	p.shown = true
	if !p.available() {
		return nil
	}
	return tea.Batch(p.reload(), p.refresh(&p.tuneLoad, p.loadTuning), p.refresh(&p.markLoad, p.loadMarked), p.tick())
}

func (p *threadsPane) Blur() {
	p.shown = false
	p.asking, p.confirm = nil, nil
}

// Capturing: the questions take every key (y and n, and q must not quit
// under them).
func (p *threadsPane) Capturing() bool { return p.asking != nil || p.confirm != nil }

func (p *threadsPane) Keys() []key.Binding {
	k := p.keys
	if p.asking != nil {
		return []key.Binding{withHelp(k.Yes, "y", "it was correct"), withHelp(k.No, "n", "it was incorrect"), k.Cancel}
	}
	if c := p.confirm; c != nil {
		return []key.Binding{withHelp(k.Yes, "y", c.action), withHelp(k.No, "n/esc", "cancel")}
	}
	if len(p.threads) == 0 {
		return nil
	}
	section := withHelp(k.Section, "←/→", "views")
	if p.inside {
		back := withHelp(k.Back, "esc", "back to the threads")
		if p.section == secDecisions {
			return []key.Binding{withHelp(k.Move, "↑/↓", "decision"), back, withHelp(k.Outcome, "o", "mark its outcome"), section, k.Tune, k.Compact}
		}
		return []key.Binding{withHelp(k.Move, "↑/↓", "scroll"), back, k.Page, section, k.Outcome, k.Tune, k.Compact}
	}
	enter := withHelp(k.Enter, "enter", "scroll "+threadsSectionNames[p.section])
	if p.section == secDecisions {
		enter = withHelp(k.Enter, "enter", "choose a decision")
	}
	switch p.section {
	case secDecisions:
		return []key.Binding{k.Outcome, k.Tune, k.Move, section, enter, k.Compact}
	case secCompaction:
		return []key.Binding{k.Compact, section, k.Move, enter, k.Outcome, k.Tune}
	case secTuning:
		return []key.Binding{k.Tune, section, k.Move, enter, k.Outcome, k.Compact}
	}
	return []key.Binding{k.Move, section, enter, k.Outcome, k.Tune, k.Compact}
}

func (p *threadsPane) SetSize(w, h int) { p.width, p.height = w, h }

// available reports whether this engram has the episodic layer.
func (p *threadsPane) available() bool {
	_, err := p.engine.Env().Actions.Lookup("thread.list")
	return err == nil
}

// --- loading ---

func (p *threadsPane) loadList() tea.Cmd { return p.run(&p.list, "thread.list", struct{}{}) }

func (p *threadsPane) loadTuning() tea.Cmd { return p.run(&p.tuneLoad, "episode.tuning", struct{}{}) }

// loadMarked counts the marked decisions (every thread's).
func (p *threadsPane) loadMarked() tea.Cmd {
	return p.run(&p.markLoad, "episode.decisions", struct{}{})
}

func (p *threadsPane) loadDetail() tea.Cmd {
	if p.sel == "" {
		return nil
	}
	p.detailAsked = p.sel
	return p.run(&p.detailLoad, "thread.get", map[string]any{"thread_id": p.sel, "include_archived": true})
}

func (p *threadsPane) loadEpisodes() tea.Cmd {
	if p.sel == "" {
		return nil
	}
	p.epAsked = p.sel
	return p.run(&p.epLoad, "episode.list", map[string]any{"thread_id": p.sel})
}

// reload refreshes the list and the selected thread, once per burst of
// events.
func (p *threadsPane) reload() tea.Cmd {
	return tea.Batch(p.refresh(&p.list, p.loadList), p.refresh(&p.detailLoad, p.loadDetail), p.refresh(&p.epLoad, p.loadEpisodes))
}

// selectThread shows the thread at i.
func (p *threadsPane) selectThread(i int) tea.Cmd {
	if len(p.threads) == 0 {
		return nil
	}
	i = max(min(i, len(p.threads)-1), 0)
	p.cursor = i
	id := p.threads[i].ID
	if id == p.sel {
		return nil
	}
	p.sel, p.decID, p.scroll, p.inside = id, "", 0, false
	p.detailErr, p.epErr = "", ""
	p.details.touch(id)
	p.eps.touch(id)
	// The requests for the thread shown before are stale now.
	return tea.Batch(p.loadDetail(), p.loadEpisodes())
}

func (p *threadsPane) Update(msg tea.Msg) tea.Cmd {
	cmd := p.update(msg)
	p.offset = p.scrolled() // the list keeps the cursor in view
	return cmd
}

func (p *threadsPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != threadsPaneID {
			return nil
		}
		return p.result(msg)
	case events.Event:
		return p.event(msg)
	case spinner.TickMsg:
		if p.judging == 0 {
			return nil // nothing to wait for: let the spinner stop
		}
		var cmd tea.Cmd
		p.spinner, cmd = p.spinner.Update(msg)
		return cmd
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	return nil
}

// tick starts the spinner when the model judges and the tab shows.
func (p *threadsPane) tick() tea.Cmd {
	if p.judging == 0 || !p.shown {
		return nil
	}
	return p.spinner.Tick
}

// event follows the episodic layer.
func (p *threadsPane) event(ev events.Event) tea.Cmd {
	switch ev.Name {
	case episodic.EventJudging:
		p.judging++
		if d, ok := ev.Data.(map[string]any); ok {
			if ids, ok := d["candidates"].([]string); ok {
				p.judgeCount += len(ids)
			}
		}
		if p.judging == 1 {
			return p.tick()
		}
		return nil
	case episodic.EventJudged:
		// One judging is over (each link.judging is followed by one
		// link.judged, decided or not); others may still be under way.
		p.judging = max(p.judging-1, 0)
		if d, ok := ev.Data.(map[string]any); ok {
			if n, ok := d["candidates"].(int); ok {
				p.judgeCount = max(p.judgeCount-n, 0)
			}
		}
		if p.judging == 0 {
			p.judgeCount = 0
		}
		return nil
	case episodic.EventThreadCreated, episodic.EventTurnAdded, episodic.EventLinkDecided:
		if t, ok := ev.Data.(*episodic.Thread); ok && t != nil && p.following(t.ID) {
			p.want = t.ID
		}
	case episodic.EventCompacted, episodic.EventCompactFailed, episodic.EventConfigured:
	case episodic.EventOutcome:
		// A decision is marked: tuning has something to learn from now.
		p.tuneErr = ""
		return tea.Batch(p.reload(), p.refresh(&p.markLoad, p.loadMarked))
	case episodic.EventTuned:
		return tea.Batch(p.reload(), p.refresh(&p.tuneLoad, p.loadTuning))
	default:
		return nil
	}
	return p.reload()
}

// following reports whether the cursor follows a new thread: the tab is
// away, or the cursor is on the newest thread but the new one (the list
// may have it already) and the user is doing nothing else.
func (p *threadsPane) following(newID string) bool {
	if p.inside || p.asking != nil || p.confirm != nil {
		return false
	}
	if !p.shown || p.sel == "" {
		return true
	}
	for _, t := range p.threads {
		if t.ID != newID {
			return t.ID == p.sel
		}
	}
	return true
}

// result applies the answer to one of the pane's requests.
func (p *threadsPane) result(msg actionResultMsg) tea.Cmd {
	switch msg.req {
	case p.list.req:
		return p.listResult(msg)
	case p.detailLoad.req:
		p.detailLoad.busy = false
		var res struct {
			Thread episodic.ThreadView `json:"thread"`
		}
		switch {
		case msg.err != nil:
			p.details.remove(p.detailAsked)
			p.detailErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil || res.Thread.Thread == nil:
			p.detailErr = "unexpected thread.get result"
		default:
			p.details.put(p.detailAsked, &res.Thread, p.sel)
			p.detailErr = ""
			p.keepDecision()
		}
		if p.detailLoad.dirty || p.detailAsked != p.sel {
			return p.loadDetail()
		}
		return nil
	case p.epLoad.req:
		p.epLoad.busy = false
		var res struct {
			Episodes []*episodic.Episode      `json:"episodes"`
			Crosses  []*episodic.CrossEpisode `json:"cross_thread_episodes"`
		}
		switch {
		case msg.err != nil:
			p.epErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil:
			p.epErr = "unexpected episode.list result"
		default:
			p.epErr = ""
			p.eps.put(p.epAsked, &threadEpisodes{episodes: res.Episodes, crosses: res.Crosses}, p.sel)
		}
		if p.epLoad.dirty || p.epAsked != p.sel {
			return p.loadEpisodes()
		}
		return nil
	case p.tuneLoad.req:
		p.tuneLoad.busy = false
		var t episodic.Tuning
		if msg.err == nil && json.Unmarshal(msg.result, &t) == nil {
			p.tuning = &t
		}
		if p.tuneLoad.dirty {
			return p.loadTuning()
		}
		return nil
	case p.markLoad.req:
		p.markLoad.busy = false
		var res struct {
			Decisions []*episodic.Decision `json:"decisions"`
		}
		if msg.err == nil && json.Unmarshal(msg.result, &res) == nil {
			p.marked, p.markedKnown = 0, true
			for _, d := range res.Decisions {
				if d != nil && d.Outcome != "" {
					p.marked++
				}
			}
			if p.marked > 0 {
				p.tuneErr = ""
			}
		}
		if p.markLoad.dirty {
			return p.loadMarked()
		}
		return nil
	case p.outcomeReq:
		p.outcomeReq = 0
		if msg.err != nil {
			return nil // the root shows the error
		}
		var res struct {
			Decision *episodic.Decision `json:"decision"`
		}
		if json.Unmarshal(msg.result, &res) != nil || res.Decision == nil {
			return showStatus("unexpected episode.outcome result", true)
		}
		d := res.Decision
		other := d.Candidate
		if other == p.sel {
			other = d.ThreadID
		}
		return showStatus(withTitle("Marked "+d.Decision+" with “%s” "+d.Outcome+" (t tunes).", p.titleOf(other)), false)
	case p.tuneReq:
		p.tuneReq, p.tuneBusy = 0, false
		if msg.err != nil {
			p.tuneErr = tuneError(msg.err)
			return nil
		}
		var rec episodic.TuningRecord
		if json.Unmarshal(msg.result, &rec) != nil {
			p.tuneErr = "unexpected episode.tune result"
			return nil
		}
		p.tuneErr = ""
		from := plural(rec.Decisions, "marked decision", "marked decisions")
		text := fmt.Sprintf("Link threshold %.2f → %.2f, from %s (the report is above).", rec.PreviousThreshold, rec.NewThreshold, from)
		if rec.NewThreshold == rec.PreviousThreshold {
			text = fmt.Sprintf("Link threshold stays %.2f, from %s (the report is above).", rec.NewThreshold, from)
		}
		return tea.Batch(p.refresh(&p.tuneLoad, p.loadTuning), showStatus(text, false))
	case p.compactReq:
		p.compactReq = 0
		id := p.compactFor
		if msg.err != nil {
			return nil
		}
		var res struct {
			Episodes []*episodic.Episode `json:"episodes"`
		}
		json.Unmarshal(msg.result, &res)
		text := withTitle("Compacted "+plural(len(res.Episodes), "episode", "episodes")+" of “%s”; turns archived.", p.titleOf(id))
		if len(res.Episodes) == 0 {
			text = withTitle(nothingToCompact, p.titleOf(id))
		}
		if id == p.sel && p.section == secCompaction {
			// The compaction view lists the newest episode first: the
			// one just compacted is at the top, under the new open one.
			p.inside, p.scroll = false, 0
		}
		return tea.Batch(showStatus(text, false), p.reload())
	}
	return nil // stale
}

// statusWidth is what a status line holds on an 80-column terminal (it is
// indented by one).
const statusWidth = 79

// withTitle puts a title in format's %s, cut so that the line fits
// statusWidth.
func withTitle(format, title string) string {
	room := statusWidth - lineWidth(strings.Replace(format, "%s", "", 1))
	return strings.Replace(format, "%s", truncateTo(title, max(room, 12)), 1)
}

const nothingToCompact = "Nothing to compact in “%s”: no new turn."

// tuneError says why tuning failed, in the console's words when it is
// that nothing is marked yet.
func tuneError(err error) string {
	e := errs.As(err)
	if e.Kind == errs.Validation && strings.HasPrefix(e.Message, "no linking decision has an outcome") {
		return noMarkedDecision
	}
	return e.Message
}

const noMarkedDecision = "No decision is marked yet. Mark a decision first: o in the decisions view, then t."

func (p *threadsPane) listResult(msg actionResultMsg) tea.Cmd {
	p.list.busy = false
	var res struct {
		Threads []*episodic.Thread `json:"threads"`
	}
	switch {
	case msg.err != nil:
		p.listErr = errs.As(msg.err).Message
	case json.Unmarshal(msg.result, &res) != nil:
		p.listErr = "unexpected thread.list result"
	default:
		p.listErr = ""
		p.threads = slices.DeleteFunc(res.Threads, func(t *episodic.Thread) bool { return t == nil })
	}
	p.loaded = true
	var cmds []tea.Cmd
	if p.list.dirty {
		cmds = append(cmds, p.loadList())
	}
	// The cursor stays on its thread as the list reorders around it (unless
	// a new thread is to be followed); the first answer selects the most
	// recent thread.
	if i := slices.IndexFunc(p.threads, func(t *episodic.Thread) bool { return t.ID == p.want }); i >= 0 && p.want != "" {
		p.want = ""
		cmds = append(cmds, p.selectThread(i))
	} else if i := slices.IndexFunc(p.threads, func(t *episodic.Thread) bool { return t.ID == p.sel }); i >= 0 {
		p.cursor = i
	} else if len(p.threads) > 0 {
		p.sel = ""
		cmds = append(cmds, p.selectThread(min(p.cursor, len(p.threads)-1)))
	} else {
		p.sel, p.cursor = "", 0
	}
	return tea.Batch(cmds...)
}

// current is the selected thread.
func (p *threadsPane) current() *episodic.Thread {
	if p.cursor < len(p.threads) && p.threads[p.cursor].ID == p.sel {
		return p.threads[p.cursor]
	}
	return nil
}

// shownDetail is the selected thread's turns and decisions, once they have
// come.
func (p *threadsPane) shownDetail() *episodic.ThreadView { return p.details.get(p.sel) }

// decisions are the selected thread's linking decisions (as the new thread
// or as the earlier one).
func (p *threadsPane) decisions() []*episodic.Decision {
	if d := p.shownDetail(); d != nil {
		return d.Decisions
	}
	return nil
}

// decIndex is the chosen decision's row (the first when none is chosen).
func (p *threadsPane) decIndex() int {
	ds := p.decisions()
	if i := slices.IndexFunc(ds, func(d *episodic.Decision) bool { return d.ID == p.decID }); i >= 0 {
		return i
	}
	return 0
}

// keepDecision keeps the chosen decision chosen across reloads.
func (p *threadsPane) keepDecision() {
	ds := p.decisions()
	if len(ds) == 0 {
		p.decID = ""
		return
	}
	p.decID = ds[p.decIndex()].ID
}

// titleOf is a thread's title, as the list knows it.
func (p *threadsPane) titleOf(id string) string {
	for _, t := range p.threads {
		if t.ID == id {
			return oneLine(t.Title)
		}
	}
	return shortID(id)
}

// shortID is the end of a UUIDv7 id: what tells ids made in one run apart.
func shortID(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// --- keys ---

func (p *threadsPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if p.asking != nil {
		return p.askKey(msg)
	}
	if p.confirm != nil {
		return p.confirmKey(msg)
	}
	switch {
	case len(p.threads) == 0:
		return nil
	case key.Matches(msg, k.Tune):
		return p.askTune()
	case key.Matches(msg, k.Section):
		if msg.String() == "right" || msg.String() == "l" {
			p.section = (p.section + 1) % secCount
		} else {
			p.section = (p.section + secCount - 1) % secCount
		}
		p.inside, p.scroll = false, 0
		return nil
	case key.Matches(msg, k.Outcome):
		return p.ask()
	case key.Matches(msg, k.Compact):
		return p.askCompact()
	case key.Matches(msg, k.Enter) && !p.inside:
		p.inside, p.scroll = true, 0
		if p.section == secTurns {
			// From the newest turns, as they show (clamped, so that the
			// first ↑ scrolls).
			p.scroll = p.maxSectionScroll()
		}
		return nil
	case key.Matches(msg, k.Back) && p.inside:
		p.inside = false
		return nil
	}
	if p.inside {
		p.insideKey(msg.String())
		return nil
	}
	if key.Matches(msg, k.Move, k.Page) {
		p.want = "" // the user moves: the cursor no longer follows a new thread
	}
	switch msg.String() {
	case "up", "k":
		return p.selectThread(p.cursor - 1)
	case "down", "j":
		return p.selectThread(p.cursor + 1)
	case "home", "g":
		return p.selectThread(0)
	case "end", "G":
		return p.selectThread(len(p.threads) - 1)
	case "pgup":
		return p.selectThread(p.cursor - p.listRows())
	case "pgdown":
		return p.selectThread(p.cursor + p.listRows())
	}
	return nil
}

// maxScroll scrolls as far down as there is (the view clamps it).
const maxScroll = 1 << 30

// insideKey moves within the section: the chosen decision, or the lines.
func (p *threadsPane) insideKey(k string) {
	if p.section == secDecisions {
		ds := p.decisions()
		if len(ds) == 0 {
			return
		}
		i := p.decIndex()
		switch k {
		case "up", "k":
			i--
		case "down", "j":
			i++
		case "home", "g":
			i = 0
		case "end", "G":
			i = len(ds) - 1
		}
		p.decID = ds[max(min(i, len(ds)-1), 0)].ID
		return
	}
	page := max(p.sectionRows()-1, 1)
	switch k {
	case "up", "k":
		p.scroll--
	case "down", "j":
		p.scroll++
	case "pgup":
		p.scroll -= page
	case "pgdown":
		p.scroll += page
	case "home", "g":
		p.scroll = 0
	case "end", "G":
		p.scroll = maxScroll
	}
	p.scroll = max(min(p.scroll, p.maxSectionScroll()), 0)
}

// ask opens the outcome question for the chosen decision.
func (p *threadsPane) ask() tea.Cmd {
	ds := p.decisions()
	if p.section != secDecisions {
		p.section, p.inside, p.scroll = secDecisions, false, 0
	}
	if len(ds) == 0 {
		if p.shownDetail() == nil {
			return showStatus("The thread's decisions are still loading: o again in a moment.", false)
		}
		return showStatus("No linking decision about this thread to mark: decisions are made when a new thread starts.", false)
	}
	p.asking = ds[p.decIndex()]
	return nil
}

func (p *threadsPane) askKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	var outcome string
	switch {
	case key.Matches(msg, k.Yes):
		outcome = episodic.OutcomeCorrect
	case key.Matches(msg, k.No):
		outcome = episodic.OutcomeIncorrect
	case key.Matches(msg, k.Cancel):
		p.asking = nil
		return nil
	default:
		return nil
	}
	d := p.asking
	p.asking = nil
	cmd := p.run(nil, "episode.outcome", map[string]any{"decision_id": d.ID, "outcome": outcome})
	p.outcomeReq = p.seq
	return cmd
}

// askTune shows the tuning view and asks before tuning, unless nothing is
// marked to tune from.
func (p *threadsPane) askTune() tea.Cmd {
	if p.tuneBusy {
		return nil
	}
	p.section, p.inside, p.scroll = secTuning, false, 0
	if p.markedKnown && p.marked == 0 {
		p.tuneErr = noMarkedDecision
		return nil
	}
	q := "Tune the link threshold from the marked decisions?"
	if p.markedKnown {
		q = fmt.Sprintf("Tune the link threshold from %s?", plural(p.marked, "marked decision", "marked decisions"))
	}
	p.confirm = &threadsConfirm{action: "tune", text: q}
	return nil
}

// askCompact shows the compaction view and asks before compacting the
// selected thread, unless it has nothing to compact.
func (p *threadsPane) askCompact() tea.Cmd {
	if p.sel == "" || p.compactReq != 0 {
		return nil
	}
	p.section, p.inside, p.scroll = secCompaction, false, 0
	title := p.titleOf(p.sel)
	q := fmt.Sprintf("Compact “%s”?", title)
	if n, ok := p.uncompacted(); ok {
		if n == 0 {
			return showStatus(withTitle(nothingToCompact, title), false)
		}
		q = fmt.Sprintf("Compact %s of “%s”?", plural(n, "turn", "turns"), title)
	}
	p.confirm = &threadsConfirm{action: "compact", thread: p.sel, text: q}
	return nil
}

// uncompacted is how many of the selected thread's turns are in episodes
// not compacted yet, once its episodes have come.
func (p *threadsPane) uncompacted() (int, bool) {
	eps := p.eps.get(p.sel)
	if eps == nil {
		return 0, false
	}
	n := 0
	for _, ep := range eps.episodes {
		if ep != nil && ep.Status != episodic.EpisodeCompacted {
			n += ep.TurnCount
		}
	}
	return n, true
}

// confirmKey answers the question before tuning or compacting.
func (p *threadsPane) confirmKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	c := p.confirm
	switch {
	case key.Matches(msg, k.Yes):
		p.confirm = nil
		if c.action == "tune" {
			return p.tune()
		}
		return p.compact(c.thread)
	case key.Matches(msg, k.No, k.Cancel):
		p.confirm = nil
	}
	return nil
}

// tune runs episode.tune and shows its report.
func (p *threadsPane) tune() tea.Cmd {
	if p.tuneBusy {
		return nil
	}
	p.section, p.inside, p.scroll = secTuning, false, 0
	p.tuneBusy, p.tuneErr = true, ""
	cmd := p.run(nil, "episode.tune", struct{}{})
	p.tuneReq = p.seq
	return cmd
}

// compact runs episode.compact on a thread.
func (p *threadsPane) compact(id string) tea.Cmd {
	if id == "" || p.compactReq != 0 {
		return nil
	}
	p.compactFor = id
	cmd := p.run(nil, "episode.compact", map[string]any{"thread_id": id})
	p.compactReq = p.seq
	return tea.Batch(cmd, showStatus(withTitle("Compacting “%s”…", p.titleOf(id)), false))
}
