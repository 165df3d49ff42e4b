package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
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

// threadsKeys are the tab's own keys, for the footer and for what only
// this tab does; moving and scrolling match nav, answering questions is
// confirm's.
type threadsKeys struct {
	Move    key.Binding
	Section key.Binding
	Enter   key.Binding
	Back    key.Binding
	Page    key.Binding
	Outcome key.Binding
	Tune    key.Binding
	Compact key.Binding
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
	}
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

// threadList is the upper part: every thread, most recently active first,
// and the cursor on one.
type threadList struct {
	load    loader
	threads []*episodic.Thread
	loaded  bool
	err     string
	cursor  listCursor
	sel     string // the selected thread's id
	// want is a new thread to select once the list has it: the cursor
	// follows the newest thread while it is on top (or the tab is away).
	want string
	// What View needs of every thread, worked out once per load so that a
	// frame's work does not grow with the list (issue 17: 10,000 threads):
	// the channels column's width, the activity times in order (for the
	// "last" column's width), and the threads by id (for linked titles).
	chanW    int
	activity []time.Time
	byID     map[string]*episodic.Thread
}

// setThreads replaces the list and works out what View needs of it.
func (l *threadList) setThreads(ts []*episodic.Thread) {
	l.threads = ts
	l.chanW = len("channels") + 2
	l.activity = make([]time.Time, len(ts))
	l.byID = make(map[string]*episodic.Thread, len(ts))
	for i, t := range ts {
		l.chanW = max(l.chanW, min(lineWidth(oneLine(strings.Join(t.Channels, ",")))+2, 22))
		l.activity[i] = t.LastActivityAt
		l.byID[t.ID] = t
	}
	slices.SortFunc(l.activity, func(a, b time.Time) int { return a.Compare(b) })
}

// lastWidth is the width of the widest "last" cell (ago of every thread's
// activity) without formatting every thread's: ago's text grows with the
// time within each of its ranges, so the widest is the oldest time of some
// range, or the oldest of all; the times are sorted, so each is a search.
func (l *threadList) lastWidth(now time.Time) int {
	w := 0
	if len(l.activity) == 0 {
		return w
	}
	w = lineWidth(ago(now, l.activity[0]))
	for _, bound := range []time.Duration{0, time.Minute, time.Hour, 48 * time.Hour} {
		// The oldest time less than bound ago.
		cut := now.Add(-bound)
		i, _ := slices.BinarySearchFunc(l.activity, cut, func(a, t time.Time) int {
			if a.After(t) {
				return 1
			}
			return -1
		})
		if i < len(l.activity) {
			w = max(w, lineWidth(ago(now, l.activity[i])))
		}
	}
	return w
}

// perThread is something loaded for the selected thread (its turns and
// decisions, or its episodes): asked is the thread the request in flight
// is for; the threads selected last keep theirs, to show at once when the
// cursor comes back while they reload.
type perThread[V any] struct {
	load  loader
	asked string
	cache *recentCache[V]
	err   string
}

// tuningState is the linking threshold's tuning: the current one, how many
// decisions are marked and how many more have only inferred outcomes (what
// tuning learns from), and a tuning under way (run.busy).
type tuningState struct {
	load        loader
	tuning      *episodic.Tuning
	marks       loader
	marked      int
	inferred    int
	markedKnown bool
	run         loader
	err         string
}

// lowerState is the lower part: which view, whether it has the arrows (a
// decision to choose, lines to scroll), the chosen decision and the lines.
type lowerState struct {
	section threadsSection
	inside  bool
	decID   string
	scroll  scrollView
	// askOnLoad is the thread o was pressed on while its decisions were
	// still loading: the question opens once they come.
	askOnLoad string
}

// judgeState is the model judging new threads' links: how many judgings
// are under way (link.judging counts up, link.judged down), and how many
// threads they judge against.
type judgeState struct {
	count   int
	threads int
	spinner spinner.Model
}

// tuneOrCompact is what the question before a change is about: tuning, or
// compacting a thread.
type tuneOrCompact struct {
	tune   bool
	thread string // the thread to compact
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

	list   threadList
	detail perThread[*episodic.ThreadView]
	eps    perThread[*episodic.EpisodesResult]
	tune   tuningState
	lower  lowerState
	judge  judgeState

	// ask is the outcome question about a decision; confirm the question
	// before tuning or compacting.
	ask     confirm[*episodic.Decision]
	confirm confirm[tuneOrCompact]
	// outcome is the marking of a decision in flight; compact the
	// compaction, and compacting the thread it compacts.
	outcome    loader
	compact    loader
	compacting string
}

func newThreadsPane(engine conn.Conn, styles *Styles) *threadsPane {
	return &threadsPane{
		requests: requests{conn: engine, pane: threadsPaneID},
		styles:   styles,
		keys:     newThreadsKeys(),
		detail:   perThread[*episodic.ThreadView]{cache: newRecentCache[*episodic.ThreadView]()},
		eps:      perThread[*episodic.EpisodesResult]{cache: newRecentCache[*episodic.EpisodesResult]()},
		lower:    lowerState{scroll: scrollView{Above: countNote(" ↑ %s above"), Below: countNote(" ↓ %s below")}},
		judge:    judgeState{spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt))},
		ask:      confirm[*episodic.Decision]{Yes: "correct", No: "incorrect", YesHelp: "it was correct", NoHelp: "it was incorrect"},
	}
}

func (p *threadsPane) Title() string { return "Threads" }

// Init loads the threads and the linking configuration, unless this engram
// has no episodic layer.
func (p *threadsPane) Init() tea.Cmd {
	if err := p.conn.CheckAction(episodic.ActionThreadList.Name()); err != nil {
		p.list.loaded, p.list.err = true, errs.As(err).Message
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
	return tea.Batch(p.reload(), p.refresh(&p.tune.load, p.loadTuning), p.refresh(&p.tune.marks, p.loadMarked), p.tick())
}

func (p *threadsPane) Blur() {
	p.shown = false
	p.ask.close()
	p.confirm.close()
}

// Capturing: the questions take every key (y and n, and q must not quit
// under them).
func (p *threadsPane) Capturing() bool { return p.ask.Active() || p.confirm.Active() }

// KeyMap is every binding of the pane's keys struct.
func (p *threadsPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *threadsPane) Keys() []key.Binding {
	k := p.keys
	if p.ask.Active() {
		return p.ask.Keys()
	}
	if p.confirm.Active() {
		return p.confirm.Keys()
	}
	if len(p.list.threads) == 0 {
		return nil
	}
	section := withHelp(k.Section, "←/→", "views")
	if p.lower.inside {
		back := withHelp(k.Back, "esc", "back to the threads")
		if p.lower.section == secDecisions {
			return []key.Binding{back, withHelp(k.Move, "↑/↓", "decision"), withHelp(k.Outcome, "o", "mark its outcome"), section, k.Page, k.Tune, k.Compact}
		}
		// The way back first: at 80 columns the footer has room for one.
		return []key.Binding{back, withHelp(k.Move, "↑/↓", "scroll"), k.Page, section, k.Outcome, k.Tune, k.Compact}
	}
	enter := withHelp(k.Enter, "enter", "scroll "+threadsSectionNames[p.lower.section])
	if p.lower.section == secDecisions {
		enter = withHelp(k.Enter, "enter", "choose a decision")
	}
	switch p.lower.section {
	case secDecisions:
		return []key.Binding{k.Outcome, k.Tune, k.Move, section, enter, k.Compact, k.Page}
	case secCompaction:
		return []key.Binding{k.Compact, section, k.Move, enter, k.Outcome, k.Tune, k.Page}
	case secTuning:
		return []key.Binding{k.Tune, section, k.Move, enter, k.Outcome, k.Compact, k.Page}
	}
	return []key.Binding{k.Move, section, enter, k.Outcome, k.Tune, k.Compact, k.Page}
}

func (p *threadsPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.list.cursor.setHeight(p.listRows())
}

// available reports whether this engram has the episodic layer.
func (p *threadsPane) available() bool {
	err := p.conn.CheckAction(episodic.ActionThreadList.Name())
	return err == nil
}

// --- loading ---

func (p *threadsPane) loadList() tea.Cmd {
	return request(&p.requests, &p.list.load, episodic.ActionThreadList, action.None{})
}

func (p *threadsPane) loadTuning() tea.Cmd {
	return request(&p.requests, &p.tune.load, episodic.ActionEpisodeTuning, action.None{})
}

// loadMarked counts the marked decisions (every thread's).
func (p *threadsPane) loadMarked() tea.Cmd {
	return request(&p.requests, &p.tune.marks, episodic.ActionEpisodeDecisions, episodic.DecisionsArgs{})
}

func (p *threadsPane) loadDetail() tea.Cmd {
	if p.list.sel == "" {
		return nil
	}
	p.detail.asked = p.list.sel
	return request(&p.requests, &p.detail.load, episodic.ActionThreadGet, episodic.GetArgs{ThreadID: p.list.sel, IncludeArchived: true})
}

func (p *threadsPane) loadEpisodes() tea.Cmd {
	if p.list.sel == "" {
		return nil
	}
	p.eps.asked = p.list.sel
	return request(&p.requests, &p.eps.load, episodic.ActionEpisodeList, episodic.EpisodesArgs{ThreadID: p.list.sel})
}

// reload refreshes the list and the selected thread, once per burst of
// events.
func (p *threadsPane) reload() tea.Cmd {
	return tea.Batch(p.refresh(&p.list.load, p.loadList), p.refresh(&p.detail.load, p.loadDetail), p.refresh(&p.eps.load, p.loadEpisodes))
}

// reloadAll loads again what the tab shows (events were missed). The
// judgings it counted may have ended unseen (or died with an owner that
// went away): it stops counting them rather than spin for ever.
func (p *threadsPane) reloadAll() tea.Cmd {
	p.judge.count, p.judge.threads = 0, 0
	if !p.available() {
		return nil
	}
	return tea.Batch(p.reload(), p.refresh(&p.tune.load, p.loadTuning), p.refresh(&p.tune.marks, p.loadMarked))
}

// selectThread shows the thread at i.
func (p *threadsPane) selectThread(i int) tea.Cmd {
	if len(p.list.threads) == 0 {
		return nil
	}
	p.list.cursor.set(i)
	id := p.list.threads[p.list.cursor.Index()].ID
	if id == p.list.sel {
		return nil
	}
	p.list.sel = id
	p.lower.decID, p.lower.inside = "", false
	p.lower.scroll.home()
	p.detail.err, p.eps.err = "", ""
	p.detail.cache.touch(id)
	p.eps.cache.touch(id)
	// The requests for the thread shown before are stale now.
	return tea.Batch(p.loadDetail(), p.loadEpisodes())
}

func (p *threadsPane) Update(msg tea.Msg) tea.Cmd {
	if a, ok := msg.(addressed); ok && a.addressee() != p.ID() {
		return nil // another pane's answer
	}
	cmd := p.update(msg)
	// The list keeps the cursor in view, whatever changed its length.
	p.list.cursor.setLen(len(p.list.threads))
	p.list.cursor.setHeight(p.listRows())
	return cmd
}

func (p *threadsPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case resultMsg[episodic.ListResult]:
		return p.listResult(msg)
	case resultMsg[episodic.GetResult]:
		return p.detailResult(msg)
	case resultMsg[episodic.EpisodesResult]:
		return p.episodesResult(msg)
	case resultMsg[*episodic.Tuning]:
		return p.tuningResult(msg)
	case resultMsg[episodic.DecisionsResult]:
		return p.marksResult(msg)
	case resultMsg[episodic.OutcomeResult]:
		return p.outcomeResult(msg)
	case resultMsg[episodic.TuningRecord]:
		return p.tuneResult(msg)
	case resultMsg[episodic.CompactResult]:
		return p.compactResult(msg)
	case events.Event:
		return p.event(msg)
	case spinner.TickMsg:
		if p.judge.count == 0 {
			return nil // nothing to wait for: let the spinner stop
		}
		var cmd tea.Cmd
		p.judge.spinner, cmd = p.judge.spinner.Update(msg)
		return cmd
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	return nil
}

// tick starts the spinner when the model judges and the tab shows.
func (p *threadsPane) tick() tea.Cmd {
	if p.judge.count == 0 || !p.shown {
		return nil
	}
	return p.judge.spinner.Tick
}

// event follows the episodic layer.
func (p *threadsPane) event(ev events.Event) tea.Cmd {
	switch ev.Name {
	case episodic.EventJudging.Name():
		p.judge.count++
		if j, ok := episodic.EventJudging.Of(ev); ok {
			p.judge.threads += len(j.Candidates)
		}
		if p.judge.count == 1 {
			return p.tick()
		}
		return nil
	case episodic.EventJudged.Name():
		// One judging is over (each link.judging is followed by one
		// link.judged, decided or not); others may still be under way.
		p.judge.count = max(p.judge.count-1, 0)
		if j, ok := episodic.EventJudged.Of(ev); ok {
			p.judge.threads = max(p.judge.threads-j.Candidates, 0)
		}
		if p.judge.count == 0 {
			p.judge.threads = 0
		}
		return nil
	case episodic.EventThreadCreated.Name():
		if t, ok := episodic.EventThreadCreated.Of(ev); ok && p.following(t.ID) {
			p.list.want = t.ID
		}
	case episodic.EventTurnAdded.Name(), episodic.EventLinkDecided.Name(),
		episodic.EventCompacted.Name(), episodic.EventCompactFailed.Name(), episodic.EventConfigured.Name():
	case episodic.EventOutcome.Name(), episodic.EventOutcomeInferred.Name():
		// A decision is marked, or its outcome inferred: tuning has
		// something to learn from now.
		p.tune.err = ""
		return tea.Batch(p.reload(), p.refresh(&p.tune.marks, p.loadMarked))
	case episodic.EventAccess.Name():
		// Threads shared or revoked: which threads, links and decisions
		// this agent may see changed (from any agent, any face).
		return tea.Batch(p.reload(), p.refresh(&p.tune.marks, p.loadMarked))
	case episodic.EventTuned.Name():
		return tea.Batch(p.reload(), p.refresh(&p.tune.load, p.loadTuning))
	default:
		return nil
	}
	return p.reload()
}

// following reports whether the cursor follows a new thread: the tab is
// away, or the cursor is on the newest thread but the new one (the list
// may have it already) and the user is doing nothing else.
func (p *threadsPane) following(newID string) bool {
	if p.lower.inside || p.ask.Active() || p.confirm.Active() {
		return false
	}
	if !p.shown || p.list.sel == "" {
		return true
	}
	for _, t := range p.list.threads {
		if t.ID != newID {
			return t.ID == p.list.sel
		}
	}
	return true
}

// --- results ---

func (p *threadsPane) listResult(msg resultMsg[episodic.ListResult]) tea.Cmd {
	latest, again := p.list.load.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err != nil {
		p.list.err = errs.As(msg.err).Message
	} else {
		p.list.err = ""
		p.list.setThreads(slices.DeleteFunc(msg.value.Threads, func(t *episodic.Thread) bool { return t == nil }))
	}
	p.list.loaded = true
	p.list.cursor.setLen(len(p.list.threads))
	var cmds []tea.Cmd
	if again {
		cmds = append(cmds, p.loadList())
	}
	// The cursor stays on its thread as the list reorders around it (unless
	// a new thread is to be followed); the first answer selects the most
	// recent thread.
	ts, l := p.list.threads, &p.list
	i := slices.IndexFunc(ts, func(t *episodic.Thread) bool { return t.ID == l.want })
	if i < 0 && !again && msg.err == nil {
		// The list was asked for after the thread started, and has it
		// not: another agent's thread, not this agent's to follow (nor to
		// jump to should it be shared later).
		l.want = ""
	}
	switch {
	case i >= 0 && l.want != "":
		l.want = ""
		cmds = append(cmds, p.selectThread(i))
	case l.cursor.keep(func(i int) bool { return ts[i].ID == l.sel }):
		// The cursor stays on its thread.
	case len(ts) > 0:
		l.sel = ""
		cmds = append(cmds, p.selectThread(l.cursor.Index()))
	default:
		l.sel = ""
		l.cursor.reset()
	}
	return tea.Batch(cmds...)
}

func (p *threadsPane) detailResult(msg resultMsg[episodic.GetResult]) tea.Cmd {
	latest, again := p.detail.load.answer(msg.req)
	if !latest {
		return nil
	}
	switch {
	case msg.err != nil:
		p.detail.cache.remove(p.detail.asked)
		p.detail.err = errs.As(msg.err).Message
	case msg.value.Thread.Thread == nil:
		p.detail.err = "unexpected thread.get result"
	default:
		v := msg.value.Thread
		p.detail.cache.put(p.detail.asked, &v, p.list.sel)
		p.detail.err = ""
		p.keepDecision()
	}
	if again || p.detail.asked != p.list.sel {
		return p.loadDetail()
	}
	return p.askIfPressed()
}

// askIfPressed opens the outcome question o asked for while the thread's
// decisions were loading, now that they have come, unless the selection
// moved or another question opened meanwhile.
func (p *threadsPane) askIfPressed() tea.Cmd {
	want := p.lower.askOnLoad
	if want == "" || p.shownDetail() == nil {
		return nil
	}
	p.lower.askOnLoad = ""
	if want != p.list.sel || p.ask.Active() || p.confirm.Active() || p.lower.section != secDecisions {
		return nil
	}
	return p.askOutcome()
}

func (p *threadsPane) episodesResult(msg resultMsg[episodic.EpisodesResult]) tea.Cmd {
	latest, again := p.eps.load.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err != nil {
		p.eps.err = errs.As(msg.err).Message
	} else {
		v := msg.value
		p.eps.err = ""
		p.eps.cache.put(p.eps.asked, &v, p.list.sel)
	}
	if again || p.eps.asked != p.list.sel {
		return p.loadEpisodes()
	}
	return nil
}

func (p *threadsPane) tuningResult(msg resultMsg[*episodic.Tuning]) tea.Cmd {
	latest, again := p.tune.load.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err == nil && msg.value != nil {
		p.tune.tuning = msg.value
	}
	if again {
		return p.loadTuning()
	}
	return nil
}

func (p *threadsPane) marksResult(msg resultMsg[episodic.DecisionsResult]) tea.Cmd {
	latest, again := p.tune.marks.answer(msg.req)
	if !latest {
		return nil
	}
	if msg.err == nil {
		p.tune.marked, p.tune.inferred, p.tune.markedKnown = 0, 0, true
		for _, d := range msg.value.Decisions {
			switch {
			case d == nil:
			case d.Outcome != "":
				p.tune.marked++
			case len(d.Inferred) > 0:
				p.tune.inferred++
			}
		}
		if p.tune.marked+p.tune.inferred > 0 {
			p.tune.err = ""
		}
	}
	if again {
		return p.loadMarked()
	}
	return nil
}

func (p *threadsPane) outcomeResult(msg resultMsg[episodic.OutcomeResult]) tea.Cmd {
	if latest, _ := p.outcome.answer(msg.req); !latest || msg.err != nil {
		return nil // stale, or failed: the root shows the error
	}
	d := msg.value.Decision
	if d == nil {
		return showStatus("unexpected episode.outcome result", true)
	}
	other := d.Candidate
	if other == p.list.sel {
		other = d.ThreadID
	}
	return showStatus(withTitle("Marked "+d.Decision+" with “%s” "+d.Outcome+" (t tunes).", p.titleOf(other)), false)
}

func (p *threadsPane) tuneResult(msg resultMsg[episodic.TuningRecord]) tea.Cmd {
	if latest, _ := p.tune.run.answer(msg.req); !latest {
		return nil
	}
	if msg.err != nil {
		p.tune.err = tuneError(msg.err)
		return nil
	}
	rec := msg.value
	p.tune.err = ""
	from := learnedFrom(rec)
	text := fmt.Sprintf("Link threshold %.2f → %.2f, from %s (the report is above).", rec.PreviousThreshold, rec.NewThreshold, from)
	if rec.NewThreshold == rec.PreviousThreshold {
		text = fmt.Sprintf("Link threshold stays %.2f, from %s (the report is above).", rec.NewThreshold, from)
	}
	return tea.Batch(p.refresh(&p.tune.load, p.loadTuning), showStatus(text, false))
}

func (p *threadsPane) compactResult(msg resultMsg[episodic.CompactResult]) tea.Cmd {
	if latest, _ := p.compact.answer(msg.req); !latest || msg.err != nil {
		return nil
	}
	id := p.compacting
	n := len(msg.value.Episodes)
	text := withTitle("Compacted "+plural(n, "episode", "episodes")+" of “%s”; turns archived.", p.titleOf(id))
	if n == 0 {
		text = withTitle(nothingToCompact, p.titleOf(id))
	}
	if id == p.list.sel && p.lower.section == secCompaction {
		// The compaction view lists the newest episode first: the
		// one just compacted is at the top, under the new open one.
		p.lower.inside = false
		p.lower.scroll.home()
	}
	return tea.Batch(showStatus(text, false), p.reload())
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

// outcomeCounts says what tuning learns from: "2 marked decisions", or
// "2 marked and 3 inferred decisions" once some outcomes are inferred.
func outcomeCounts(marked, inferred int) string {
	if inferred == 0 {
		return plural(marked, "marked decision", "marked decisions")
	}
	return fmt.Sprintf("%d marked and %s", marked, plural(inferred, "inferred decision", "inferred decisions"))
}

// learnedFrom is what a tuning learned from (a record made before
// outcomes were inferred counts its decisions as marked).
func learnedFrom(rec episodic.TuningRecord) string {
	if rec.Marked+rec.Inferred == 0 {
		return plural(rec.Decisions, "marked decision", "marked decisions")
	}
	return outcomeCounts(rec.Marked, rec.Inferred)
}

// tuneError says why tuning failed, in the console's words when it is
// that nothing is marked yet.
func tuneError(err error) string {
	e := errs.As(err)
	if e.Details["reason"] == episodic.ReasonNoOutcomes {
		return noMarkedDecision
	}
	return e.Message
}

const noMarkedDecision = "No decision is marked yet. Mark a decision first: o in the decisions view, then t; or go on chatting, and engram infers outcomes from what the user says next."

// --- what is selected ---

// current is the selected thread.
func (p *threadsPane) current() *episodic.Thread {
	if i := p.list.cursor.Index(); i < len(p.list.threads) && p.list.threads[i].ID == p.list.sel {
		return p.list.threads[i]
	}
	return nil
}

// shownDetail is the selected thread's turns and decisions, once they have
// come.
func (p *threadsPane) shownDetail() *episodic.ThreadView { return p.detail.cache.get(p.list.sel) }

// shownEpisodes is the selected thread's episodes, once they have come.
func (p *threadsPane) shownEpisodes() *episodic.EpisodesResult { return p.eps.cache.get(p.list.sel) }

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
	if i := slices.IndexFunc(ds, func(d *episodic.Decision) bool { return d.ID == p.lower.decID }); i >= 0 {
		return i
	}
	return 0
}

// keepDecision keeps the chosen decision chosen across reloads.
func (p *threadsPane) keepDecision() {
	ds := p.decisions()
	if len(ds) == 0 {
		p.lower.decID = ""
		return
	}
	p.lower.decID = ds[p.decIndex()].ID
}

// titleOf is a thread's title, as the list knows it.
func (p *threadsPane) titleOf(id string) string {
	if t, ok := p.list.byID[id]; ok {
		return oneLine(t.Title)
	}
	return shortID(id)
}

// --- keys ---

func (p *threadsPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if p.ask.Active() {
		return p.askKey(msg)
	}
	if p.confirm.Active() {
		return p.confirmKey(msg)
	}
	switch {
	case len(p.list.threads) == 0:
		return nil
	case key.Matches(msg, k.Tune):
		return p.askTune()
	case key.Matches(msg, k.Section):
		if key.Matches(msg, nav.Right) {
			p.showSection((p.lower.section + 1) % secCount)
		} else {
			p.showSection((p.lower.section + secCount - 1) % secCount)
		}
		return nil
	case key.Matches(msg, k.Outcome):
		return p.askOutcome()
	case key.Matches(msg, k.Compact):
		return p.askCompact()
	case key.Matches(msg, k.Enter) && !p.lower.inside:
		p.lower.inside = true
		p.syncScroll()
		p.lower.scroll.home()
		if p.lower.section == secTurns {
			// From the newest turns, as they show, so that the first ↑
			// scrolls.
			p.lower.scroll.end()
		}
		return nil
	case key.Matches(msg, k.Back) && p.lower.inside:
		p.lower.inside = false
		return nil
	}
	if p.lower.inside {
		p.insideKey(msg)
		return nil
	}
	if key.Matches(msg, k.Move, k.Page) {
		p.list.want = "" // the user moves: the cursor no longer follows a new thread
	}
	p.list.cursor.setHeight(p.listRows())
	if p.list.cursor.handleKey(msg) {
		return p.selectThread(p.list.cursor.Index())
	}
	return nil
}

// showSection shows a view, from its start, outside it.
func (p *threadsPane) showSection(s threadsSection) {
	p.lower.section, p.lower.inside = s, false
	p.lower.scroll.home()
}

// syncScroll gives the section's scroll its lines and height as they are
// now (they change with the data, the size and going inside).
func (p *threadsPane) syncScroll() {
	rows := p.sectionRows()
	v := &p.lower.scroll
	v.Page = max(rows-1, 1)
	v.setLines(p.sectionContent(p.width))
	v.setHeight(rows)
}

// insideKey moves within the section: the chosen decision, or the lines.
func (p *threadsPane) insideKey(msg tea.KeyMsg) {
	if p.lower.section == secDecisions {
		ds := p.decisions()
		if len(ds) == 0 {
			return
		}
		var c listCursor
		c.setLen(len(ds))
		c.setHeight(max(p.sectionRows()-3, 1))
		c.set(p.decIndex())
		if c.handleKey(msg) {
			p.lower.decID = ds[c.Index()].ID
		}
		return
	}
	p.syncScroll()
	p.lower.scroll.handleKey(msg)
}

// askOutcome opens the outcome question for the chosen decision.
func (p *threadsPane) askOutcome() tea.Cmd {
	ds := p.decisions()
	if p.lower.section != secDecisions {
		p.showSection(secDecisions)
	}
	if len(ds) == 0 {
		if p.shownDetail() == nil {
			p.lower.askOnLoad = p.list.sel
			return showStatus("The thread's decisions are still loading: the question opens once they come.", false)
		}
		return showStatus("No linking decision about this thread to mark: decisions are made when a new thread starts.", false)
	}
	d := ds[p.decIndex()]
	q := fmt.Sprintf("Was %s of “%s” and “%s” right?", d.Decision, p.titleOf(d.ThreadID), p.titleOf(d.Candidate))
	if n := len(d.Inferred); n > 0 && d.Outcome == "" {
		// What engram read, so that the mark confirms or overrides it.
		q += fmt.Sprintf(" (inferred %s)", d.Inferred[n-1].Outcome)
	}
	p.ask.open(q, d)
	return nil
}

// askKey answers the outcome question: y correct, n incorrect, esc cancels.
func (p *threadsPane) askKey(msg tea.KeyMsg) tea.Cmd {
	ans, d := p.ask.handleKey(msg)
	outcome := map[answer]string{answerYes: episodic.OutcomeCorrect, answerNo: episodic.OutcomeIncorrect}[ans]
	if outcome == "" || d == nil {
		return nil
	}
	return request(&p.requests, &p.outcome, episodic.ActionEpisodeOutcome, episodic.OutcomeArgs{DecisionID: d.ID, Outcome: outcome})
}

// askTune shows the tuning view and asks before tuning, unless nothing is
// marked to tune from.
func (p *threadsPane) askTune() tea.Cmd {
	if p.tune.run.busy {
		return nil
	}
	p.showSection(secTuning)
	if p.tune.markedKnown && p.tune.marked+p.tune.inferred == 0 {
		p.tune.err = noMarkedDecision
		return nil
	}
	q := "Tune the link threshold from the decisions' outcomes?"
	if p.tune.markedKnown {
		q = fmt.Sprintf("Tune the link threshold from %s?", outcomeCounts(p.tune.marked, p.tune.inferred))
	}
	p.confirm.Yes = "tune"
	p.confirm.open(q, tuneOrCompact{tune: true})
	return nil
}

// askCompact shows the compaction view and asks before compacting the
// selected thread, unless it has nothing to compact.
func (p *threadsPane) askCompact() tea.Cmd {
	if p.list.sel == "" || p.compact.busy {
		return nil
	}
	p.showSection(secCompaction)
	title := p.titleOf(p.list.sel)
	q := fmt.Sprintf("Compact “%s”?", title)
	if n, ok := p.uncompacted(); ok {
		if n == 0 {
			return showStatus(withTitle(nothingToCompact, title), false)
		}
		q = fmt.Sprintf("Compact %s of “%s”?", plural(n, "turn", "turns"), title)
	}
	p.confirm.Yes = "compact"
	p.confirm.open(q, tuneOrCompact{thread: p.list.sel})
	return nil
}

// uncompacted is how many of the selected thread's turns are in episodes
// not compacted yet, once its episodes have come.
func (p *threadsPane) uncompacted() (int, bool) {
	eps := p.shownEpisodes()
	if eps == nil {
		return 0, false
	}
	n := 0
	for _, ep := range eps.Episodes {
		if ep != nil && ep.Status != episodic.EpisodeCompacted {
			n += ep.TurnCount
		}
	}
	return n, true
}

// confirmKey answers the question before tuning or compacting.
func (p *threadsPane) confirmKey(msg tea.KeyMsg) tea.Cmd {
	ans, c := p.confirm.handleKey(msg)
	switch {
	case ans != answerYes:
		return nil
	case c.tune:
		return p.runTune()
	}
	return p.runCompact(c.thread)
}

// runTune runs episode.tune and shows its report.
func (p *threadsPane) runTune() tea.Cmd {
	if p.tune.run.busy {
		return nil
	}
	p.showSection(secTuning)
	p.tune.err = ""
	return request(&p.requests, &p.tune.run, episodic.ActionEpisodeTune, action.None{})
}

// runCompact runs episode.compact on a thread.
func (p *threadsPane) runCompact(id string) tea.Cmd {
	if id == "" || p.compact.busy {
		return nil
	}
	p.compacting = id
	cmd := request(&p.requests, &p.compact, episodic.ActionEpisodeCompact, episodic.CompactArgs{ThreadID: id})
	return tea.Batch(cmd, showStatus(withTitle("Compacting “%s”…", p.titleOf(id)), false))
}
