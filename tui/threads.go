package tui

import (
	"encoding/json"
	"fmt"
	"slices"

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
		Yes:     key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "correct")),
		No:      key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "incorrect")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// threadEpisodes is a thread's episode.list.
type threadEpisodes struct {
	episodes []*episodic.Episode
	crosses  []*episodic.CrossEpisode
}

// threadsPane is the Threads tab: the episodic layer's threads, most
// recently active first; below, the selected thread's turns, its linking
// decisions (both scores, agreement, confidence, outcome), its compaction
// tiers as a tree, and the linking threshold's tuning. Everything follows
// the episodic events, whoever sends the messages; while the model judges
// a new thread's links a spinner says so.
type threadsPane struct {
	engine *core.Engine
	styles *Styles
	keys   threadsKeys
	seq    int // numbers every request

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
	// the id the request in flight is for). Threads seen before show at
	// once when the cursor comes back to them, while they reload.
	detailLoad  loader
	detailAsked string
	details     map[string]*episodic.ThreadView
	detailErr   string

	epLoad  loader
	epAsked string
	eps     map[string]*threadEpisodes
	epErr   string

	tuneLoad loader
	tuning   *episodic.Tuning

	// The lower part.
	section threadsSection
	inside  bool // the section has the arrows (a decision to choose, lines to scroll)
	decID   string
	scroll  int // the first line of the section shown, when inside

	// The model judging a new thread's links.
	judging    bool
	judgeCount int
	spinner    spinner.Model

	// The outcome question, the tuning and the compaction in flight.
	asking     *episodic.Decision
	outcomeReq int
	tuneReq    int
	tuneBusy   bool
	tuneErr    string
	compactReq int
	compactFor string
}

func newThreadsPane(engine *core.Engine, styles *Styles) *threadsPane {
	return &threadsPane{
		engine:  engine,
		styles:  styles,
		keys:    newThreadsKeys(),
		details: map[string]*episodic.ThreadView{},
		eps:     map[string]*threadEpisodes{},
		spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
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
	return tea.Batch(p.loadList(), p.loadTuning())
}

// Focus catches up (thread.configure publishes no event) and restarts the
// spinner, whose ticks went to another tab.
func (p *threadsPane) Focus() tea.Cmd {
	p.shown = true
	if !p.available() {
		return nil
	}
	return tea.Batch(p.reload(), p.refresh(&p.tuneLoad, p.loadTuning), p.tick())
}

func (p *threadsPane) Blur() {
	p.shown = false
	p.asking = nil
}

// Capturing: the outcome question takes every key (y and n, and q must not
// quit under it).
func (p *threadsPane) Capturing() bool { return p.asking != nil }

func (p *threadsPane) Keys() []key.Binding {
	k := p.keys
	if p.asking != nil {
		return []key.Binding{withHelp(k.Yes, "y", "it was correct"), withHelp(k.No, "n", "it was incorrect"), k.Cancel}
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

// run starts a request for l (if any), making every earlier one stale.
func (p *threadsPane) run(l *loader, name string, args any) tea.Cmd {
	raw, _ := json.Marshal(args)
	p.seq++
	if l != nil {
		l.req, l.busy, l.dirty = p.seq, true, false
	}
	return runAction(p.engine, threadsPaneID, p.seq, name, raw)
}

// refresh reloads what l loads, unless a load is in flight: then it is
// redone once that one answers.
func (p *threadsPane) refresh(l *loader, load func() tea.Cmd) tea.Cmd {
	if l.busy {
		l.dirty = true
		return nil
	}
	return load()
}

func (p *threadsPane) loadList() tea.Cmd { return p.run(&p.list, "thread.list", struct{}{}) }

func (p *threadsPane) loadTuning() tea.Cmd { return p.run(&p.tuneLoad, "episode.tuning", struct{}{}) }

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
	// The requests for the thread shown before are stale now.
	return tea.Batch(p.loadDetail(), p.loadEpisodes())
}

func (p *threadsPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != threadsPaneID {
			return nil
		}
		return p.result(msg)
	case events.Event:
		return p.event(msg)
	case spinner.TickMsg:
		if !p.judging {
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
	if !p.judging || !p.shown {
		return nil
	}
	return p.spinner.Tick
}

// event follows the episodic layer.
func (p *threadsPane) event(ev events.Event) tea.Cmd {
	switch ev.Name {
	case episodic.EventJudging:
		started := !p.judging
		p.judging, p.judgeCount = true, 0
		if d, ok := ev.Data.(map[string]any); ok {
			if ids, ok := d["candidates"].([]string); ok {
				p.judgeCount = len(ids)
			}
		}
		if started {
			return p.tick()
		}
		return nil
	case episodic.EventThreadCreated, episodic.EventTurnAdded, episodic.EventLinkDecided:
		// The message the model judged for is in: the judging is over.
		p.judging = false
		if t, ok := ev.Data.(*episodic.Thread); ok && t != nil && p.following(t.ID) {
			p.want = t.ID
		}
	case episodic.EventJudged:
		p.judging = false
	case episodic.EventCompacted, episodic.EventCompactFailed, episodic.EventConfigured:
	case episodic.EventOutcome, episodic.EventTuned:
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
	if p.inside || p.asking != nil {
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
			delete(p.details, p.detailAsked)
			p.detailErr = errs.As(msg.err).Message
		case json.Unmarshal(msg.result, &res) != nil || res.Thread.Thread == nil:
			p.detailErr = "unexpected thread.get result"
		default:
			p.details[p.detailAsked], p.detailErr = &res.Thread, ""
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
			p.epErr, p.eps[p.epAsked] = "", &threadEpisodes{episodes: res.Episodes, crosses: res.Crosses}
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
		return showStatus(fmt.Sprintf("Marked %s of “%s” and “%s” %s. t tunes the threshold from the marked decisions.",
			d.Decision, p.titleOf(d.ThreadID), p.titleOf(d.Candidate), d.Outcome), false)
	case p.tuneReq:
		p.tuneReq, p.tuneBusy = 0, false
		if msg.err != nil {
			p.tuneErr = errs.As(msg.err).Message
			return nil
		}
		var rec episodic.TuningRecord
		if json.Unmarshal(msg.result, &rec) != nil {
			p.tuneErr = "unexpected episode.tune result"
			return nil
		}
		p.tuneErr = ""
		return tea.Batch(p.refresh(&p.tuneLoad, p.loadTuning),
			showStatus(fmt.Sprintf("Linking threshold %.2f → %.2f: %s.", rec.PreviousThreshold, rec.NewThreshold, rec.Reason), false))
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
		text := fmt.Sprintf("Compacted %s of “%s”: summaries and skills in the compaction view, turns archived.",
			plural(len(res.Episodes), "episode", "episodes"), p.titleOf(id))
		if len(res.Episodes) == 0 {
			text = fmt.Sprintf("Nothing to compact in “%s”: no turn since its last compaction.", p.titleOf(id))
		}
		return tea.Batch(showStatus(text, false), p.reload())
	}
	return nil // stale
}

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
func (p *threadsPane) shownDetail() *episodic.ThreadView { return p.details[p.sel] }

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
	switch {
	case len(p.threads) == 0:
		return nil
	case key.Matches(msg, k.Tune):
		return p.tune()
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
		return p.compact()
	case key.Matches(msg, k.Enter) && !p.inside:
		p.inside, p.scroll = true, 0
		if p.section == secTurns {
			p.scroll = maxScroll // from the newest turns, as they show
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

// compact runs episode.compact on the selected thread.
func (p *threadsPane) compact() tea.Cmd {
	if p.sel == "" || p.compactReq != 0 {
		return nil
	}
	p.section, p.inside, p.scroll = secCompaction, false, 0
	p.compactFor = p.sel
	cmd := p.run(nil, "episode.compact", map[string]any{"thread_id": p.sel})
	p.compactReq = p.seq
	return tea.Batch(cmd, showStatus(fmt.Sprintf("Compacting “%s”…", p.titleOf(p.sel)), false))
}
