package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/planner"
)

const (
	plansPaneID paneID = "plans"
	// plansSplitWidth is the width from which the list stays on the left and
	// the selected plan shows on the right; below it the list sits above.
	plansSplitWidth = 150
	// plansDefaultAtOnce is how many subtasks a run starts at once unless
	// the user picks another number (the planner's default).
	plansDefaultAtOnce = 4
)

// planPolicyHelp says what each failure policy of plan.execute
// (planner.Policies) does when a subtask fails.
var planPolicyHelp = map[string]string{
	"abort":  "stop launching subtasks; what completed keeps its results",
	"skip":   "mark it skipped, and whatever depends on it; run the rest",
	"retry":  "retry it up to 3 times (after 100, 200, 400 ms), then abort",
	"replan": "ask the model to plan the unfinished work anew (needs a model)",
}

// planPolicyOnFailed says what each policy does, executed again, to the
// subtasks an earlier run left failed.
var planPolicyOnFailed = map[string]string{
	"abort":  "run once more; the plan stops if one fails again",
	"skip":   "skipped, with whatever depends on them; the rest runs",
	"retry":  "run again, retried up to 3 times",
	"replan": "replaced by the model's new subtasks (needs a model)",
}

// plansKeys are the Plans tab's own keys, for the footer and for matching;
// moving through the list and the DAG matches the shared nav keymap.
type plansKeys struct {
	Move      key.Binding
	Open      key.Binding
	Back      key.Binding
	Scroll    key.Binding
	Step      key.Binding
	Execute   key.Binding
	Cancel    key.Binding
	Resume    key.Binding
	Replan    key.Binding
	Decompose key.Binding
	File      key.Binding
	Run       key.Binding
	Close     key.Binding
	Policy    key.Binding
	AtOnce    key.Binding
	Strategy  key.Binding
	// AskScroll and AskPage scroll the actions the question lists, when
	// they do not all fit.
	AskScroll key.Binding
	AskPage   key.Binding
	// RetryStep, SkipStep and DoneStep act on the walked subtask of a plan
	// that stopped: run it again, skip it, mark it done with a note.
	RetryStep key.Binding
	SkipStep  key.Binding
	DoneStep  key.Binding
	// Page moves the plan list by a page.
	Page key.Binding
}

func newPlansKeys() plansKeys {
	return plansKeys{
		Move:      key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓", "plan")),
		Open:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "subtasks")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Scroll:    key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "scroll stages")),
		Step:      key.NewBinding(key.WithKeys("up", "down", "left", "right", "k", "j", "h", "l", "home", "end", "g", "G"), key.WithHelp("arrows", "move")),
		Execute:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "execute")),
		Cancel:    key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel")),
		Resume:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "resume")),
		Replan:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "replan")),
		Decompose: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "decompose")),
		File:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "from a file")),
		Run:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Close:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Policy:    key.NewBinding(key.WithKeys("left", "right", "h", "l", "tab", "shift+tab"), key.WithHelp("←/→", "on failure")),
		AtOnce:    key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "-", "up", "down"), key.WithHelp("↑/↓/1-9", "at once")),
		Strategy:  key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "strategy")),
		AskScroll: key.NewBinding(key.WithKeys("up", "down", "k", "j"), key.WithHelp("↑/↓", "read the actions")),
		AskPage:   key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
		RetryStep: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "retry")),
		SkipStep:  key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip")),
		DoneStep:  key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "mark done")),
		Page:      key.NewBinding(key.WithKeys("pgup", "pgdown"), key.WithHelp("pgup/pgdn", "page")),
	}
}

// planRun is a plan.execute or plan.resume the pane started: it runs in a
// command under a context the pane can cancel.
type planRun struct {
	req    int
	verb   string // execute, resume, retry, skip, mark done
	cancel context.CancelFunc
}

// runAsk is a plan.execute or plan.resume held back while the person
// looks at the actions a model chose for the plan: the console never runs
// a model's choice unseen (issue 13, item 1). It carries the request from
// the key that asked for it to the answer.
type runAsk struct {
	plan    string
	verb    string              // execute, resume, retry, skip, mark done
	execute planner.ExecuteArgs // execute's choices
	// step and note are the subtask a person retries, skips or marks done,
	// and the note marking it done.
	step, note string
	// chosen are the subtasks whose actions wait for approval, as the
	// question shows them.
	chosen []*planner.Subtask
}

// promptKind is which line at the bottom takes the keyboard: a goal to
// decompose, a YAML file to read a plan from, or the choices of a run.
type promptKind int

const (
	promptNone promptKind = iota
	promptGoal
	promptFile
	promptExecute
	// promptNote takes the note of a subtask marked done by hand.
	promptNote
	// promptNoModel says decomposing needs a model, which this engram has
	// not: before the person types a goal for nothing.
	promptNoModel
)

// sureKind is what the pane asks y/n about before doing it.
type sureKind int

const (
	// sureCancel stops a running plan.
	sureCancel sureKind = iota
	// sureFresh runs a completed plan again from the start.
	sureFresh
)

// sureAsk is a y/n question of the pane and what it is about.
type sureAsk struct {
	kind sureKind
	plan string
}

// plansList is the list of plans, newest first.
type plansList struct {
	load   loader
	plans  []planner.PlanSummary
	loaded bool
	err    string
	absent bool // no planner in this engram
	cursor listCursor
	want   string // a plan to select once the list has it (one just made)
}

// planDetail is the selected plan (and the ones seen before, shown at once
// when the cursor comes back to them while they reload), and the walk
// through its subtasks.
type planDetail struct {
	load  loader
	docs  map[string]*planner.Plan
	asked string // the id plan.get was last asked for
	// gets are the plan.get requests in flight: request number → plan id,
	// so that one answering "no plan" is told from any other failure.
	gets map[int]string
	// gone are plans a plan.get found deleted, or a deletion event named:
	// a list answered before the deletion still shows them, and loading
	// them again would only fail again.
	gone  map[string]bool
	dags  map[string]*planDAG
	dagOf map[string]*planner.Plan // the plan each DAG was laid out from
	// walking: the DAG has the arrow keys, step is the subtask selected.
	walking  bool
	step     string
	stageOff int // the first stage shown
}

// planNotice is a line under the plan about the last thing done to it.
type planNotice struct {
	text  string
	isErr bool
	plan  string // the plan it is about
}

// plansPrompt is the open prompt: its line (goal or file), the choices of
// a run, and the decompose or create in flight.
type plansPrompt struct {
	kind     promptKind
	input    textinput.Model
	strategy int // in planner.Strategies
	policy   int // in planner.Policies
	atOnce   int
	err      string
	// step is the subtask a note is for (promptNote).
	step string
	// offline says the engine has no language model: d says so first.
	offline bool
	// busy is the decompose or create in flight (busy.busy), what it does
	// and how to give up on it.
	busy     loader
	busyWhat string
	busyStop context.CancelFunc
}

// waiting reports that the prompt's request is in flight.
func (q *plansPrompt) waiting() bool { return q.busy.busy }

// plansPane is the Plans tab: the plans, newest first; the selected plan's
// subtasks drawn as a DAG in stages (each subtask in the column of its
// longest chain of dependencies), with its progress while it runs; keys to
// decompose a goal, read a plan from a YAML file, execute (choosing the
// failure policy), cancel, resume and replan. Everything follows the
// planner's events, whoever runs the plan.
type plansPane struct {
	requests // the engine, and the numbering of this pane's requests
	styles   *Styles
	keys     plansKeys

	width, height int
	focused       bool

	list   plansList
	plan   planDetail
	notice planNotice
	prompt plansPrompt
	// approve is the question asked before a run of a plan holding actions
	// a model chose that nobody approved.
	approve confirm[runAsk]
	// ask is how far the person has read the actions the question lists.
	ask askScroll
	// sure asks before cancelling a run or running a completed plan anew.
	sure confirm[sureAsk]

	// runs are the runs in flight the pane started, by plan id; others
	// the replan and cancel requests in flight: req → plan id.
	runs   map[string]*planRun
	others map[int]string
	// ended is, by plan id, the last request number sent when a run the
	// pane started ended: the list and the plan read by a request up to
	// it are older than the run's result, and must not undo it on screen.
	// (One number per plan run here: it is never dropped.)
	ended map[string]int

	spinner   spinner.Model
	still     bool // tests: the spinner keeps its first frame (no ticks)
	bar       progress.Model
	lastTotal int
}

// The runs the pane started stop when the console quits.
var _ stopper = (*plansPane)(nil)

func newPlansPane(engine conn.Conn, styles *Styles, offline bool) *plansPane {
	in := textinput.New()
	in.PromptStyle = styles.Prompt
	in.CharLimit = 2000
	// The line's own up/down cycle suggestions, which it has none of.
	in.KeyMap.NextSuggestion = key.NewBinding(key.WithDisabled())
	in.KeyMap.PrevSuggestion = key.NewBinding(key.WithDisabled())
	full, empty := styles.BarFull.Dark, styles.BarEmpty.Dark
	if !lipgloss.HasDarkBackground() {
		full, empty = styles.BarFull.Light, styles.BarEmpty.Light
	}
	bar := progress.New(progress.WithSolidFill(full), progress.WithColorProfile(lipgloss.ColorProfile()),
		progress.WithFillCharacters('█', '░'))
	bar.EmptyColor = empty
	return &plansPane{
		requests: requests{conn: engine, pane: plansPaneID},
		styles:   styles,
		keys:     newPlansKeys(),
		plan:     planDetail{docs: map[string]*planner.Plan{}, gets: map[int]string{}, gone: map[string]bool{}, dags: map[string]*planDAG{}, dagOf: map[string]*planner.Plan{}},
		prompt:   plansPrompt{input: in, atOnce: plansDefaultAtOnce, offline: offline},
		sure:     confirm[sureAsk]{Yes: "yes"},
		approve:  confirm[runAsk]{Yes: "run them"},
		runs:     map[string]*planRun{},
		others:   map[int]string{},
		ended:    map[string]int{},
		spinner:  spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(styles.Prompt)),
		// The bar's colours follow the console's profile: with none (an
		// ASCII terminal, the golden tests) it reads as █ done and ░ to do.
		bar: bar,
	}
}

func (p *plansPane) Title() string { return "Plans" }

// Init loads the plans, unless this engram has no planner (a -tags
// noplanning build): the pane then says so, without an error in the status
// line at every start.
func (p *plansPane) Init() tea.Cmd {
	if err := p.conn.CheckAction(planner.ActionPlanList.Name()); err != nil {
		p.list.loaded, p.list.err, p.list.absent = true, errs.As(err).Message, true
		return nil
	}
	return p.loadList()
}

// Focus catches up (plans may have changed while another tab showed) and
// restarts the spinners, whose ticks went to that tab.
func (p *plansPane) Focus() tea.Cmd {
	p.focused = true
	return tea.Batch(p.refresh(&p.list.load, p.loadList), p.refresh(&p.plan.load, p.loadDoc), p.tick())
}

func (p *plansPane) Blur() {
	p.focused = false
	p.approve.close() // nothing ran; the key asks again
	p.sure.close()
	if p.prompt.kind != promptNone && !p.prompt.waiting() {
		p.closePrompt()
	}
}

// Capturing: a prompt or the question takes every key (q and 1-7
// included).
func (p *plansPane) Capturing() bool {
	return p.prompt.kind != promptNone || p.approve.Active() || p.sure.Active()
}

// KeyMap is every binding of the pane's keys struct.
func (p *plansPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *plansPane) Keys() []key.Binding {
	k := p.keys
	if p.sure.Active() {
		return p.sure.Keys()
	}
	if p.approve.Active() {
		yn := p.approve.Keys()
		if !p.askLayout(p.width).scrolls {
			return yn
		}
		// Reading comes before answering: y waits for the end.
		return append([]key.Binding{k.AskScroll}, append(yn, k.AskPage)...)
	}
	switch p.prompt.kind {
	case promptGoal:
		return []key.Binding{withHelp(k.Run, "enter", "decompose"), k.Close, k.Strategy}
	case promptFile:
		return []key.Binding{withHelp(k.Run, "enter", "create the plan"), k.Close}
	case promptExecute:
		return []key.Binding{withHelp(k.Run, "enter", "execute"), k.Close, k.Policy, k.AtOnce}
	case promptNote:
		return []key.Binding{withHelp(k.Run, "enter", "mark done"), k.Close}
	case promptNoModel:
		return []key.Binding{withHelp(k.Close, "esc", "close"), k.File}
	}
	switch {
	case p.list.absent:
		return nil
	case len(p.list.plans) == 0:
		return []key.Binding{k.Decompose, k.File}
	}
	// The key that matters most for the selected plan comes first: the
	// short footer shows two.
	var first []key.Binding
	sum := p.current()
	switch {
	case sum != nil && (sum.Status == planner.PlanRunning || p.runs[sum.ID] != nil):
		first = []key.Binding{k.Cancel}
	case sum != nil && (sum.Status == planner.PlanCancelled || sum.Status == planner.PlanInterrupted):
		first = []key.Binding{k.Resume}
	case sum != nil && stopped(sum.Status):
		// What works without a model first (issue 14: the footer offered
		// only replan): x applies a policy to the failure, r runs what is
		// pending, and a subtask's own keys act on one failure.
		first = []key.Binding{withHelp(k.Execute, "x", "with a policy"), k.Resume}
	case sum != nil && sum.Status == planner.PlanCompleted:
		first = []key.Binding{withHelp(k.Execute, "x", "run again")}
	default:
		first = []key.Binding{k.Execute}
	}
	rest := []key.Binding{k.Execute, k.Resume, k.Cancel, k.Replan, k.Decompose, k.File}
	switch {
	case p.plan.walking:
		// esc first: the one-line footer keeps the way back at 80 columns.
		first = append(append([]key.Binding{k.Back}, p.stepKeys()...), append([]key.Binding{k.Step}, first...)...)
		rest = append(rest, k.RetryStep, k.SkipStep, k.DoneStep)
	case sum != nil && stopped(sum.Status):
		first = append(first, withHelp(k.Open, "enter", "subtasks (t retry, s skip, m done)"))
		rest = append(rest, k.Move, k.Scroll)
	default:
		first = append(first, k.Open)
		rest = append(rest, k.Move, k.Scroll, k.Page)
	}
	for _, b := range rest {
		if !slices.ContainsFunc(first, func(f key.Binding) bool { return f.Help().Key == b.Help().Key }) {
			first = append(first, b)
		}
	}
	return first
}

// stopped reports whether a plan of status ended with work left that a
// person can act on, subtask by subtask.
func stopped(status string) bool {
	return status == planner.PlanAborted || status == planner.PlanFailed
}

// stepKeys are the keys that act on the walked subtask as it stands: t for
// a failed or skipped one, s for a failed or pending one, m for any not
// completed; none while the plan runs.
func (p *plansPane) stepKeys() []key.Binding {
	st := p.walkedStep()
	if st == nil || p.isRunning(p.currentID()) {
		return nil
	}
	var out []key.Binding
	if st.Status == planner.Failed || st.Status == planner.Skipped {
		out = append(out, p.keys.RetryStep)
	}
	if st.Status == planner.Failed || st.Status == planner.Pending {
		out = append(out, p.keys.SkipStep)
	}
	if st.Status != planner.Completed && st.Status != planner.InProgress {
		out = append(out, p.keys.DoneStep)
	}
	return out
}

// walkedStep is the subtask selected in the DAG, if the pane walks it.
func (p *plansPane) walkedStep() *planner.Subtask {
	if !p.plan.walking {
		return nil
	}
	if d := p.shown(); d != nil {
		return d.SubtaskByID(p.plan.step)
	}
	return nil
}

// isRunning reports whether plan id runs: from here, or elsewhere (the
// list says so).
func (p *plansPane) isRunning(id string) bool {
	if p.runs[id] != nil {
		return true
	}
	return slices.ContainsFunc(p.list.plans, func(s planner.PlanSummary) bool { return s.ID == id && s.Status == planner.PlanRunning })
}

// split reports whether the list and the plan show side by side.
func (p *plansPane) split() bool { return p.width >= plansSplitWidth }

func (p *plansPane) listWidth() int {
	if p.split() {
		return min(max(p.width*2/5, 50), 70)
	}
	return p.width
}

func (p *plansPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.prompt.input.Width = max(w-len(p.prompt.input.Prompt)-4, 1)
}

// current is the plan under the cursor.
func (p *plansPane) current() *planner.PlanSummary {
	if i := p.list.cursor.Index(); i < len(p.list.plans) {
		return &p.list.plans[i]
	}
	return nil
}

func (p *plansPane) currentID() string {
	if s := p.current(); s != nil {
		return s.ID
	}
	return ""
}

// shown is the selected plan's subtasks, if they have come.
func (p *plansPane) shown() *planner.Plan { return p.plan.docs[p.currentID()] }

// --- loading ---

func (p *plansPane) loadList() tea.Cmd {
	if p.list.absent {
		return nil
	}
	return request(&p.requests, &p.list.load, planner.ActionPlanList, planner.ListArgs{})
}

// loadDoc loads the selected plan.
func (p *plansPane) loadDoc() tea.Cmd {
	id := p.currentID()
	if id == "" {
		return nil
	}
	p.plan.asked = id
	cmd := request(&p.requests, &p.plan.load, planner.ActionPlanGet, planner.PlanArgs{PlanID: id})
	p.plan.gets[p.plan.load.req] = id
	return cmd
}

// The pane says itself that a plan is gone.
var _ quietFailures = (*plansPane)(nil)

// quietFailure: a plan.get that finds no plan was asked before the plan
// was deleted (elsewhere: tour.remove, the palette) and answers after. The
// plan is gone, not in error: the list, loaded again, drops it.
func (p *plansPane) quietFailure(req int, err error) bool {
	_, get := p.plan.gets[req]
	return get && errs.KindOf(err) == errs.NotFound
}

// selectionChanged loads the plan the cursor moved to.
func (p *plansPane) selectionChanged() tea.Cmd {
	p.plan.stageOff = 0
	p.plan.walking = false
	p.plan.step = ""
	if p.notice.plan != p.currentID() {
		p.notice.text = ""
	}
	if p.currentID() == p.plan.asked && p.plan.load.busy {
		return nil
	}
	p.plan.load.busy = false // the answer for the plan left behind is stale
	return p.loadDoc()
}

func (p *plansPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case resultMsg[planner.ListResult]:
		return tea.Batch(p.listResult(msg), p.tickIfStarted())
	case resultMsg[planner.PlanResult]:
		return tea.Batch(p.planResult(msg), p.tickIfStarted())
	case resultMsg[planner.ExecuteResult]:
		return tea.Batch(p.runResult(msg), p.tickIfStarted())
	case resultMsg[planner.CancelResult]:
		return tea.Batch(p.cancelResult(msg), p.tickIfStarted())
	case events.Event:
		return tea.Batch(p.event(msg), p.tickIfStarted())
	case spinner.TickMsg:
		if !p.running() || p.still {
			return nil // nothing runs: let the spinner stop
		}
		var cmd tea.Cmd
		p.spinner, cmd = p.spinner.Update(msg)
		return cmd
	case tea.KeyMsg:
		return p.handleKey(msg)
	}
	if p.prompt.kind == promptGoal || p.prompt.kind == promptFile {
		var cmd tea.Cmd
		p.prompt.input, cmd = p.prompt.input.Update(msg) // cursor blinks
		return cmd
	}
	return nil
}

// event follows the planner: any of its events reloads the list, and the
// selected plan if it is about that one (once per burst of events).
func (p *plansPane) event(ev events.Event) tea.Cmd {
	id, ok := planEventPlan(ev)
	if !ok {
		return nil
	}
	if c, ok := planner.EventPlanChanged.Of(ev); ok && c.Change == "deleted" {
		// Gone (tour.remove, the palette): reloading it would only say
		// so, as an error in the status line.
		delete(p.plan.docs, id)
		p.plan.gone[id] = true
		return p.refresh(&p.list.load, p.loadList)
	}
	if c, ok := planner.EventPlanChanged.Of(ev); ok && c.Change == "created" {
		delete(p.plan.gone, id) // made again, under the same id
		if !p.plan.walking && !p.Capturing() {
			p.list.want = id // a new plan (from the palette, say) is what to look at
		}
	}
	cmds := []tea.Cmd{p.refresh(&p.list.load, p.loadList)}
	if id == p.currentID() {
		cmds = append(cmds, p.refresh(&p.plan.load, p.loadDoc))
	}
	return tea.Batch(cmds...)
}

// planEventPlan is the plan a planner event is about; ok is false for any
// other event.
func planEventPlan(ev events.Event) (id string, ok bool) {
	switch d := ev.Data.(type) {
	case planner.SubtaskStartedEvent:
		return d.PlanID, true
	case planner.SubtaskFinishedEvent:
		return d.PlanID, true
	case planner.ProgressEvent:
		return d.PlanID, true
	case planner.PlanFinishedEvent:
		return d.PlanID, true
	case planner.PlanChangedEvent:
		return d.PlanID, true
	}
	return "", false
}

// running reports that something runs: a plan the pane started, or one
// the list says is running (started elsewhere).
func (p *plansPane) running() bool {
	if len(p.runs) > 0 || p.prompt.waiting() {
		return true
	}
	return slices.ContainsFunc(p.list.plans, func(s planner.PlanSummary) bool { return s.Status == planner.PlanRunning })
}

// tick starts the spinners if something runs and the pane shows. (A second
// start is harmless: the spinner drops the ticks of all but one loop.)
func (p *plansPane) tick() tea.Cmd {
	if p.still || !p.focused || !p.running() {
		return nil
	}
	return p.spinner.Tick
}

// tickIfStarted starts the spinners when a run appears; the loop runs
// itself after that.
func (p *plansPane) tickIfStarted() tea.Cmd {
	was := p.lastTotal > 0
	n := len(p.runs)
	if p.prompt.waiting() {
		n++
	}
	for _, s := range p.list.plans {
		if s.Status == planner.PlanRunning {
			n++
		}
	}
	p.lastTotal = n
	if n > 0 && !was {
		return p.tick()
	}
	return nil
}

// planResult applies a plan: the selected one loaded (plan.get), one made
// at the prompt (plan.decompose, plan.create), or a replan.
func (p *plansPane) planResult(msg resultMsg[planner.PlanResult]) tea.Cmd {
	asked, get := p.plan.gets[msg.req]
	delete(p.plan.gets, msg.req)
	switch {
	case get && errs.KindOf(msg.err) == errs.NotFound:
		// Deleted after it was asked for: the list it came from is stale.
		delete(p.plan.docs, asked)
		p.plan.gone[asked] = true
		if latest, _ := p.plan.load.answer(msg.req); latest {
			return tea.Batch(p.recheckAsk(), p.refresh(&p.list.load, p.loadList))
		}
		return p.refresh(&p.list.load, p.loadList)
	case msg.req == p.plan.load.req:
		latest, again := p.plan.load.answer(msg.req)
		if !latest {
			return nil
		}
		switch {
		case msg.err != nil:
			delete(p.plan.docs, p.plan.asked) // gone
		case msg.value.Plan != nil && p.olderThanRun(msg.value.Plan.ID, msg.req):
			// Read before the run's result came: a newer load follows.
		case msg.value.Plan != nil:
			delete(p.plan.gone, msg.value.Plan.ID)
			p.plan.docs[msg.value.Plan.ID] = msg.value.Plan
			p.keepStepSelection()
		}
		cmd := p.recheckAsk()
		if again {
			return tea.Batch(cmd, p.loadDoc())
		}
		return cmd
	case msg.req == p.prompt.busy.req && p.prompt.waiting():
		return p.promptResult(msg)
	}
	if id, ok := p.others[msg.req]; ok {
		delete(p.others, msg.req)
		return p.replanResult(id, msg.err)
	}
	return nil // stale
}

// reloadAll loads again the list and the plan shown (events were missed:
// a plan may have moved on, or finished, meanwhile).
func (p *plansPane) reloadAll() tea.Cmd {
	return tea.Batch(p.refresh(&p.list.load, p.loadList), p.refresh(&p.plan.load, p.loadDoc))
}

func (p *plansPane) reloadIfShown(id string) tea.Cmd {
	if id != p.currentID() {
		return nil
	}
	return p.refresh(&p.plan.load, p.loadDoc)
}

func (p *plansPane) listResult(msg resultMsg[planner.ListResult]) tea.Cmd {
	latest, again := p.list.load.answer(msg.req)
	if !latest {
		return nil
	}
	p.list.loaded = true
	before := p.currentID()
	if msg.err != nil {
		p.list.err = errs.As(msg.err).Message
		p.list.plans = nil
		p.list.cursor.setLen(0)
	} else {
		p.list.err = ""
		p.list.plans = msg.value.Plans
		p.keepRunResults(msg.req)
		// The cursor stays on its plan when the list changes around it, or
		// goes to the one just made.
		at := before
		if p.list.want != "" && slices.ContainsFunc(p.list.plans, func(s planner.PlanSummary) bool { return s.ID == p.list.want }) {
			at, p.list.want = p.list.want, ""
		}
		p.list.cursor.setLen(len(p.list.plans))
		p.list.cursor.keep(func(i int) bool { return p.list.plans[i].ID == at })
	}
	var cmds []tea.Cmd
	if again {
		cmds = append(cmds, p.loadList())
	}
	if id := p.currentID(); id != before || (id != "" && p.plan.docs[id] == nil && !p.plan.load.busy && !p.plan.gone[id]) {
		cmds = append(cmds, p.selectionChanged())
	}
	return tea.Batch(cmds...)
}

// runResult reports how a run the pane started ended.
func (p *plansPane) runResult(msg resultMsg[planner.ExecuteResult]) tea.Cmd {
	var id string
	var r *planRun
	for pid, run := range p.runs {
		if run.req == msg.req {
			id, r = pid, run
		}
	}
	if r == nil {
		return nil // stale
	}
	r.cancel()
	delete(p.runs, id)
	return tea.Batch(p.reportRun(id, r.verb, msg), p.refresh(&p.list.load, p.loadList), p.reloadIfShown(id))
}

// reportRun says how a run ended, in the status line (or under the plan,
// for an error).
func (p *plansPane) reportRun(id, verb string, msg resultMsg[planner.ExecuteResult]) tea.Cmd {
	if msg.err != nil {
		e := errs.As(msg.err)
		text := fmt.Sprintf("%s %s: %s: %s", verb, id, e.Kind, e.Message)
		if e.Kind == errs.Validation && e.Details["field"] == "proposed_actions" {
			// The pane had not seen the model's actions (the plan was not
			// loaded yet, or changed meanwhile): runResult reloads it, so
			// that the key asks next time.
			again := "x"
			if verb == "resume" {
				again = "r"
			}
			text = fmt.Sprintf("%s %s did not start: the model chose actions nobody has approved yet; %s shows them and asks first", verb, id, again)
		}
		p.setNotice(id, text, true)
		return nil // the root shows it in the status line too
	}
	pl := msg.value.Plan
	if pl == nil {
		return showStatus("unexpected plan."+verb+" result", true)
	}
	// The list, the plan and the status line say the same from this
	// update on: the list does not wait for its reload (issue 18, flaky
	// console tests: "aborted" above a list still saying pending).
	p.plan.docs[pl.ID] = pl
	p.keepStepSelection()
	p.ended[pl.ID] = p.seq
	p.keepRunResults(p.seq)
	c := msg.value.Progress
	text := fmt.Sprintf("Plan %s %s: %d of %d completed", oneLine(pl.ID), pl.Status, c.Completed, c.Total)
	if c.Failed > 0 {
		text += fmt.Sprintf(", %d failed", c.Failed)
	}
	if c.Skipped > 0 {
		text += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	if t, ok := planElapsed(pl, p.conn.Now()); ok {
		text += " " + t.sentence()
	}
	switch pl.Status {
	case planner.PlanCancelled:
		text += "; r resumes it"
	case planner.PlanAborted, planner.PlanFailed:
		text += "; x or t/s/m go on"
	}
	bad := pl.Status == planner.PlanAborted || pl.Status == planner.PlanFailed || pl.Status == planner.PlanPartial
	p.setNotice(pl.ID, "", false)
	return showStatus(text+".", bad)
}

// olderThanRun reports that request req was sent before a run of plan id
// the pane started ended: its answer is older than what the run returned.
func (p *plansPane) olderThanRun(id string, req int) bool {
	end, ok := p.ended[id]
	return ok && req <= end
}

// keepRunResults puts the plan shown over its line in the list read by
// request req, for each plan whose run ended after req was sent: that
// plan is the run's result (or newer), the line older.
func (p *plansPane) keepRunResults(req int) {
	for i, s := range p.list.plans {
		if d := p.plan.docs[s.ID]; d != nil && p.olderThanRun(s.ID, req) {
			p.list.plans[i] = d.Summary()
		}
	}
}

// replanResult reports a replan of plan id.
func (p *plansPane) replanResult(id string, err error) tea.Cmd {
	if err != nil {
		e := errs.As(err)
		p.setNotice(id, fmt.Sprintf("replan %s: %s: %s", id, e.Kind, e.Message), true)
		return nil
	}
	p.setNotice(id, "", false)
	return tea.Batch(showStatus("Replanned "+oneLine(id)+": its unfinished subtasks are new.", false), p.reloadIfShown(id))
}

// cancelResult reports a plan.cancel of a run started elsewhere.
func (p *plansPane) cancelResult(msg resultMsg[planner.CancelResult]) tea.Cmd {
	id, ok := p.others[msg.req]
	if !ok {
		return nil // stale
	}
	delete(p.others, msg.req)
	switch {
	case msg.err != nil:
		return nil // the status line says it
	case !msg.value.Cancelled:
		return showStatus("Plan "+oneLine(id)+" is not running: nothing to cancel.", false)
	}
	return showStatus("Cancelling "+oneLine(id)+"…", false)
}

func (p *plansPane) setNotice(id, text string, isErr bool) {
	p.notice = planNotice{text: text, isErr: isErr, plan: id}
}

// promptResult applies the answer to a decompose or a create.
func (p *plansPane) promptResult(msg resultMsg[planner.PlanResult]) tea.Cmd {
	p.stopWaiting()
	if msg.err != nil {
		e := errs.As(msg.err)
		p.prompt.err = fmt.Sprintf("%s: %s", e.Kind, e.Message)
		return nil // the root shows it in the status line too
	}
	pl := msg.value.Plan
	if pl == nil {
		p.prompt.err = "unexpected " + msg.action + " result"
		return nil
	}
	p.closePrompt()
	p.plan.docs[pl.ID] = pl
	p.list.want = pl.ID
	text := fmt.Sprintf("Created plan %s: %s; x executes it.", oneLine(pl.ID), plural(len(pl.Subtasks), "subtask", "subtasks"))
	if msg.action == planner.ActionPlanDecompose.Name() {
		text = fmt.Sprintf("Decomposed the goal into plan %s: %s; x executes it.", oneLine(pl.ID), plural(len(pl.Subtasks), "subtask", "subtasks"))
	}
	return tea.Batch(showStatus(text, false), p.refresh(&p.list.load, p.loadList))
}

// keepStepSelection keeps the walked subtask valid after a reload (a
// replan may have replaced it).
func (p *plansPane) keepStepSelection() {
	if !p.plan.walking {
		return
	}
	d := p.shown()
	if d == nil || len(d.Subtasks) == 0 {
		p.plan.walking, p.plan.step = false, ""
		return
	}
	if d.SubtaskByID(p.plan.step) == nil {
		p.plan.step = d.Subtasks[0].ID
	}
}

// --- keys ---

func (p *plansPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	if p.sure.Active() {
		return p.sureKey(msg)
	}
	if p.approve.Active() {
		return p.approveKey(msg)
	}
	if p.prompt.kind != promptNone {
		return p.promptKey(msg)
	}
	if p.list.absent {
		return nil
	}
	k := p.keys
	switch {
	case key.Matches(msg, k.Decompose):
		if p.prompt.offline {
			// Say it before the goal is typed, not after (issue 14).
			p.prompt.kind, p.prompt.err = promptNoModel, ""
			return nil
		}
		return p.openPrompt(promptGoal)
	case key.Matches(msg, k.File):
		return p.openPrompt(promptFile)
	case key.Matches(msg, k.Execute):
		return p.askExecute()
	case key.Matches(msg, k.Cancel):
		return p.cancelRun()
	case key.Matches(msg, k.Resume):
		return p.resume()
	case key.Matches(msg, k.Replan):
		return p.replan()
	}
	if p.plan.walking {
		switch {
		case key.Matches(msg, k.RetryStep):
			return p.actOnStep("retry")
		case key.Matches(msg, k.SkipStep):
			return p.actOnStep("skip")
		case key.Matches(msg, k.DoneStep):
			return p.actOnStep("mark done")
		}
		return p.walkKey(msg)
	}
	return p.listKey(msg)
}

// actOnStep retries, skips or (after asking for a note) marks done the
// walked subtask, then the plan goes on (issue 14, bug 3: without a
// model, a failed subtask could be neither retried nor skipped).
func (p *plansPane) actOnStep(verb string) tea.Cmd {
	st, id := p.walkedStep(), p.currentID()
	if st == nil {
		return nil
	}
	if p.isRunning(id) {
		return showStatus("Plan "+oneLine(id)+" is running: c cancels it first.", false)
	}
	allowed := map[string][]string{
		"retry":     {planner.Failed, planner.Skipped},
		"skip":      {planner.Failed, planner.Pending},
		"mark done": {planner.Failed, planner.Skipped, planner.Pending},
	}[verb]
	if !slices.Contains(allowed, st.Status) {
		which := map[string]string{"retry": "a failed or skipped", "skip": "a failed or pending", "mark done": "a failed, skipped or pending"}[verb]
		return showStatus(fmt.Sprintf("Subtask %s is %s: %s works on %s subtask.", oneLine(st.ID), st.Status, verb, which), false)
	}
	if verb == "mark done" {
		cmd := p.openPrompt(promptNote)
		p.prompt.step = st.ID
		return cmd
	}
	return p.askOrRun(runAsk{plan: id, verb: verb, step: st.ID})
}

// sureKey answers the pane's y/n question.
func (p *plansPane) sureKey(msg tea.KeyMsg) tea.Cmd {
	ans, q := p.sure.handleKey(msg)
	switch ans {
	case answerYes:
		switch q.kind {
		case sureCancel:
			return p.cancelPlan(q.plan)
		case sureFresh:
			if p.isRunning(q.plan) {
				return showStatus("Plan "+oneLine(q.plan)+" is running already.", false)
			}
			args := planner.ExecuteArgs{PlanID: q.plan, MaxConcurrent: p.prompt.atOnce, Fresh: true}
			return p.askOrRun(runAsk{plan: q.plan, verb: "execute", execute: args})
		}
	case answerNo, answerCancel:
		if q.kind == sureCancel {
			return showStatus("Plan "+oneLine(q.plan)+" goes on running.", false)
		}
		return showStatus("Nothing ran.", false)
	}
	return nil
}

func (p *plansPane) listKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, p.keys.Open):
		if d := p.shown(); d != nil && len(d.Subtasks) > 0 {
			p.plan.walking = true
			p.plan.step = d.Subtasks[0].ID
			if dag := p.dagFor(d); dag != nil && len(dag.stages) > 0 && p.plan.stageOff < len(dag.stages) && len(dag.stages[p.plan.stageOff]) > 0 {
				p.plan.step = dag.stages[p.plan.stageOff][0].ID // the first one in view
			}
		}
		return nil
	case key.Matches(msg, nav.Left):
		p.plan.stageOff = max(p.plan.stageOff-1, 0)
		return nil
	case key.Matches(msg, nav.Right):
		if d := p.shown(); d != nil {
			if dag := p.dagFor(d); dag != nil {
				p.plan.stageOff = min(p.plan.stageOff+1, max(len(dag.stages)-1, 0))
			}
		}
		return nil
	}
	before := p.list.cursor.Index()
	p.list.cursor.setHeight(p.listRows())
	if p.list.cursor.handleKey(msg) && p.list.cursor.Index() != before {
		return p.selectionChanged()
	}
	return nil
}

// walkKey moves through the DAG: ↑/↓ within a stage, ←/→ between stages.
func (p *plansPane) walkKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, p.keys.Back) {
		p.plan.walking = false
		return nil
	}
	d := p.shown()
	if d == nil {
		p.plan.walking = false
		return nil
	}
	dag := p.dagFor(d)
	col, row := dag.find(p.plan.step)
	if col < 0 {
		col, row = 0, 0
	}
	switch {
	case key.Matches(msg, nav.Up):
		row--
	case key.Matches(msg, nav.Down):
		row++
	case key.Matches(msg, nav.Left):
		col--
	case key.Matches(msg, nav.Right):
		col++
	case key.Matches(msg, nav.Home):
		row = 0
	case key.Matches(msg, nav.End):
		row = len(dag.stages[col]) - 1
	default:
		return nil
	}
	col = max(min(col, len(dag.stages)-1), 0)
	row = max(min(row, len(dag.stages[col])-1), 0)
	p.plan.step = dag.stages[col][row].ID
	return nil
}

func (p *plansPane) openPrompt(which promptKind) tea.Cmd {
	p.prompt.kind, p.prompt.err = which, ""
	in := &p.prompt.input
	in.Reset()
	switch which {
	case promptGoal:
		in.Prompt = "goal: "
		in.Placeholder = "what to achieve, e.g. Publish the quarterly report"
	case promptFile:
		in.Prompt = "YAML file: "
		in.Placeholder = "a path, e.g. ~/plans/release.yaml"
	case promptNote:
		in.Prompt = "note: "
		in.Placeholder = "what was done, e.g. printed them at the library"
	}
	in.Width = max(p.width-len(in.Prompt)-4, 1)
	return in.Focus()
}

func (p *plansPane) closePrompt() {
	p.prompt.kind, p.prompt.err = promptNone, ""
	p.prompt.input.Blur()
	p.stopWaiting()
}

// stopWaiting gives up the prompt's request in flight, if any: its answer,
// should it come, is then stale.
func (p *plansPane) stopWaiting() {
	if p.prompt.busyStop != nil {
		p.prompt.busyStop()
	}
	p.prompt.busy, p.prompt.busyWhat, p.prompt.busyStop = loader{}, "", nil
}

func (p *plansPane) promptKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if key.Matches(msg, k.Close) {
		if p.prompt.waiting() {
			// Gives up on the model's answer (or the file).
			p.closePrompt()
			return showStatus("Stopped waiting: nothing was created.", false)
		}
		p.closePrompt()
		return nil
	}
	if p.prompt.kind == promptExecute {
		return p.executeKey(msg)
	}
	if p.prompt.kind == promptNoModel {
		if key.Matches(msg, k.File) {
			return p.openPrompt(promptFile)
		}
		return nil
	}
	if p.prompt.waiting() {
		return nil // one at a time
	}
	switch {
	case key.Matches(msg, k.Run):
		return p.submitPrompt()
	case p.prompt.kind == promptGoal && key.Matches(msg, k.Strategy):
		n := len(planner.Strategies)
		if key.Matches(msg, nav.Next) {
			p.prompt.strategy = (p.prompt.strategy + 1) % n
		} else {
			p.prompt.strategy = (p.prompt.strategy + n - 1) % n
		}
		return nil
	}
	var cmd tea.Cmd
	p.prompt.input, cmd = p.prompt.input.Update(msg)
	p.prompt.err = "" // an edit answers the error
	return cmd
}

// submitPrompt runs plan.decompose or plan.create {file}, under a context
// esc cancels.
func (p *plansPane) submitPrompt() tea.Cmd {
	text := strings.TrimSpace(p.prompt.input.Value())
	switch p.prompt.kind {
	case promptGoal:
		if text == "" {
			p.prompt.err = "type the goal to decompose"
			return nil
		}
		ctx := p.startWaiting("asking the model for a plan…")
		args := planner.DecomposeArgs{Goal: text, Strategy: planner.Strategies[p.prompt.strategy]}
		return tea.Batch(requestCtx(ctx, &p.requests, &p.prompt.busy, planner.ActionPlanDecompose, args), p.tick())
	case promptFile:
		if text == "" {
			p.prompt.err = "type the path of a YAML file with goal: and subtasks:"
			return nil
		}
		ctx := p.startWaiting("reading " + text + "…")
		args := planner.CreateArgs{File: expandHome(text)}
		return tea.Batch(requestCtx(ctx, &p.requests, &p.prompt.busy, planner.ActionPlanCreate, args), p.tick())
	case promptNote:
		if text == "" {
			p.prompt.err = "say what was done: it is recorded as the subtask's result"
			return nil
		}
		id, step := p.currentID(), p.prompt.step
		p.closePrompt()
		if id == "" || step == "" {
			return nil
		}
		if p.isRunning(id) {
			return showStatus("Plan "+oneLine(id)+" is running: c cancels it first.", false)
		}
		return p.askOrRun(runAsk{plan: id, verb: "mark done", step: step, note: text})
	}
	return nil
}

// startWaiting notes what the prompt's request does, and returns the
// context that giving up cancels.
func (p *plansPane) startWaiting(what string) context.Context {
	ctx, cancel := context.WithCancel(p.context())
	p.prompt.err, p.prompt.busyWhat, p.prompt.busyStop = "", what, cancel
	return ctx
}

// expandHome turns a leading ~/ into the home directory.
func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
}

// askExecute opens the run's choices for the selected plan.
func (p *plansPane) askExecute() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if sum.Status == planner.PlanRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running: c cancels it.", false)
	}
	if sum.Status == planner.PlanCompleted {
		// Executing it would run nothing: offer what x can mean (issue 14).
		p.sure.Yes = "run it again"
		p.sure.open(fmt.Sprintf("Plan %s completed. Run it again from the start?", oneLine(sum.ID)), sureAsk{kind: sureFresh, plan: sum.ID})
		return nil
	}
	p.prompt.kind, p.prompt.policy, p.prompt.err = promptExecute, 0, "" // abort unless the user picks another
	return nil
}

// executeKey takes the run's choices: the failure policy (←/→, tab) and
// how many subtasks run at once (a digit, +/-, ↑/↓); enter starts it.
func (p *plansPane) executeKey(msg tea.KeyMsg) tea.Cmd {
	n := len(planner.Policies)
	switch {
	case key.Matches(msg, p.keys.Run):
		id := p.currentID()
		p.closePrompt()
		if id == "" {
			return nil
		}
		args := planner.ExecuteArgs{PlanID: id, OnSubtaskFailure: planner.Policies[p.prompt.policy], MaxConcurrent: p.prompt.atOnce}
		return p.askOrRun(runAsk{plan: id, verb: "execute", execute: args})
	case key.Matches(msg, nav.Right, nav.Next):
		p.prompt.policy = (p.prompt.policy + 1) % n
	case key.Matches(msg, nav.Left, nav.Prev):
		p.prompt.policy = (p.prompt.policy + n - 1) % n
	case key.Matches(msg, nav.Increase, navArrows.Up):
		p.prompt.atOnce = min(p.prompt.atOnce+1, 9)
	case key.Matches(msg, nav.Decrease, navArrows.Down):
		p.prompt.atOnce = max(p.prompt.atOnce-1, 1)
	case key.Matches(msg, p.keys.AtOnce):
		if d, ok := keyDigit(msg); ok {
			p.prompt.atOnce = d
		}
	}
	return nil
}

// start runs plan.execute or plan.resume (send makes the request under
// ctx) in a command the pane can cancel; the pane follows the run through
// the planner's events meanwhile.
func (p *plansPane) start(id, verb string, send func(ctx context.Context) tea.Cmd) tea.Cmd {
	ctx, cancel := context.WithCancel(p.context())
	cmd := send(ctx)
	p.runs[id] = &planRun{req: p.seq, verb: verb, cancel: cancel}
	p.setNotice(id, "", false)
	return tea.Batch(cmd, p.tick())
}

func (p *plansPane) resume() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if sum.Status == planner.PlanRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running already.", false)
	}
	return p.askOrRun(runAsk{plan: sum.ID, verb: "resume"})
}

// awaitingApproval lists d's unfinished subtasks whose action a model chose
// and nobody approved: what a run that asks would refuse
// (planner.ProposedAsk).
func awaitingApproval(d *planner.Plan) []*planner.Subtask {
	var out []*planner.Subtask
	for _, s := range d.Subtasks {
		if s.Proposed && s.Action != nil && s.ApprovedBy == "" && s.Status != planner.Completed {
			out = append(out, s)
		}
	}
	return out
}

// askOrRun sends r, unless the plan holds actions a model chose that
// nobody approved: then it shows them and asks first. The request asks
// the engine to refuse such actions (planner.ProposedAsk), so that a plan
// the pane has not seen as it stands does not run them either.
func (p *plansPane) askOrRun(r runAsk) tea.Cmd {
	if d := p.plan.docs[r.plan]; d != nil {
		r.chosen = awaitingApproval(d)
	}
	if len(r.chosen) == 0 {
		return p.send(r, planner.ProposedAsk)
	}
	p.openAsk(r)
	return nil
}

// openAsk asks about r's chosen actions: "Run it?" or "Run them?".
func (p *plansPane) openAsk(r runAsk) {
	q, yes := "Run them?", "run them"
	if len(r.chosen) == 1 {
		q, yes = "Run it?", "run it"
	}
	p.approve.Yes = yes
	p.approve.open(q, r)
	p.ask = askScroll{} // a new list is read from its top
}

// send starts r's run; proposed is how it treats the actions a model
// chose (planner.ProposedAsk, or ProposedApprove once the person said yes).
//
// With approve, the request names the actions shown, so that the engine
// runs none the person did not see (a replan may land in between).
func (p *plansPane) send(r runAsk, proposed string) tea.Cmd {
	var shown []planner.ProposedAction
	if proposed == planner.ProposedApprove {
		for _, s := range r.chosen {
			shown = append(shown, planner.ProposedAction{Subtask: s.ID, Action: *s.Action})
		}
	}
	switch r.verb {
	case "resume":
		args := planner.ResumeArgs{PlanID: r.plan, ProposedActions: proposed, Approved: shown}
		return p.start(r.plan, r.verb, func(ctx context.Context) tea.Cmd {
			return requestCtx(ctx, &p.requests, nil, planner.ActionPlanResume, args)
		})
	case "retry":
		args := planner.SubtaskRetryArgs{PlanID: r.plan, Subtask: r.step, ProposedActions: proposed, Approved: shown}
		return p.start(r.plan, r.verb, func(ctx context.Context) tea.Cmd {
			return requestCtx(ctx, &p.requests, nil, planner.ActionPlanSubtaskRetry, args)
		})
	case "skip":
		args := planner.SubtaskSkipArgs{PlanID: r.plan, Subtask: r.step, ProposedActions: proposed, Approved: shown}
		return p.start(r.plan, r.verb, func(ctx context.Context) tea.Cmd {
			return requestCtx(ctx, &p.requests, nil, planner.ActionPlanSubtaskSkip, args)
		})
	case "mark done":
		args := planner.SubtaskDoneArgs{PlanID: r.plan, Subtask: r.step, Note: r.note, ProposedActions: proposed, Approved: shown}
		return p.start(r.plan, r.verb, func(ctx context.Context) tea.Cmd {
			return requestCtx(ctx, &p.requests, nil, planner.ActionPlanSubtaskDone, args)
		})
	}
	args := r.execute
	args.ProposedActions, args.Approved = proposed, shown
	return p.start(r.plan, r.verb, func(ctx context.Context) tea.Cmd {
		return requestCtx(ctx, &p.requests, nil, planner.ActionPlanExecute, args)
	})
}

// askScroll is where the person is in the actions the question lists:
// the first line shown, and whether the last line has been on screen.
type askScroll struct {
	off  int
	seen bool // the end has been shown: y may approve
}

// approveKey answers the question: y runs the plan, approving the actions
// shown, once the person has had every one on screen in full; the arrows
// and pgup/pgdn scroll them; n or esc runs nothing.
func (p *plansPane) approveKey(msg tea.KeyMsg) tea.Cmd {
	l := p.askLayout(p.width)
	switch {
	case key.Matches(msg, p.keys.AskScroll, p.keys.AskPage):
		step := 1
		if key.Matches(msg, p.keys.AskPage) {
			step = l.rows // a page is what shows: no line is skipped
		}
		if key.Matches(msg, nav.Up, nav.PageUp) {
			step = -step
		}
		p.ask.off = max(min(l.off(p.ask.off)+step, l.maxOff()), 0)
		if l.scrolls && !p.ask.seen && p.ask.off >= l.maxOff() {
			p.ask.seen = true
			// The status line may still say to scroll first.
			return showStatus("You have seen every action: y approves them.", false)
		}
		return nil
	case key.Matches(msg, nav.Yes) && !p.ask.seen && l.off(p.ask.off) < l.maxOff():
		// y approves every action in full: not one the person has not
		// had on screen (issue 13, item 1).
		return showStatus("Scroll to the last action first: ↓ · y approves only what you have seen.", false)
	}
	switch ans, r := p.approve.handleKey(msg); ans {
	case answerYes:
		if p.runs[r.plan] != nil {
			return showStatus("Plan "+oneLine(r.plan)+" is running already.", false)
		}
		return p.send(r, planner.ProposedApprove)
	case answerNo, answerCancel:
		return showStatus("Nothing ran: the plan waits until you approve the actions the model chose.", false)
	}
	return nil
}

// recheckAsk keeps the open question true to the plan as it reloads (a
// replan elsewhere): y approves what the plan holds when the run starts,
// so the question must show just that.
func (p *plansPane) recheckAsk() tea.Cmd {
	if !p.approve.Active() {
		return nil
	}
	r := p.approve.Payload()
	d := p.plan.docs[r.plan]
	if d == nil {
		return nil
	}
	now := awaitingApproval(d)
	if sameActions(now, r.chosen) {
		return nil
	}
	if len(now) == 0 {
		p.approve.close()
		return showStatus("Plan "+oneLine(r.plan)+" changed: no action of a model waits for approval now; nothing ran.", false)
	}
	r.chosen = now
	p.openAsk(r)
	return showStatus("Plan "+oneLine(r.plan)+" changed meanwhile: these are the actions the model chose now.", false)
}

// sameActions reports whether two lists name the same subtasks with the
// same actions.
func sameActions(a, b []*planner.Subtask) bool {
	return slices.EqualFunc(a, b, func(x, y *planner.Subtask) bool {
		return x.ID == y.ID && x.Action.Name == y.Action.Name && string(x.Action.Args) == string(y.Action.Args)
	})
}

// cancelRun stops the selected plan's run: the pane's own by cancelling
// its context (the run then ends "cancelled" and reports as usual), one
// started elsewhere (the palette, another client) with plan.cancel.
func (p *plansPane) cancelRun() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if p.isRunning(sum.ID) {
		// Ask first: a stray c must not stop a long run (issue 14).
		p.sure.Yes = "cancel it"
		p.sure.open(fmt.Sprintf("Cancel plan %s? Its running subtasks stop; r resumes it.", oneLine(sum.ID)), sureAsk{kind: sureCancel, plan: sum.ID})
		return nil
	}
	return p.cancelPlan(sum.ID)
}

// cancelPlan stops plan id's run (see cancelRun).
func (p *plansPane) cancelPlan(id string) tea.Cmd {
	var sum *planner.PlanSummary
	for i := range p.list.plans {
		if p.list.plans[i].ID == id {
			sum = &p.list.plans[i]
		}
	}
	if sum == nil {
		return nil
	}
	if r := p.runs[sum.ID]; r != nil {
		// The status first, then the cancel: the run's report, which the
		// cancel brings, must not be overwritten by "Cancelling…" (a
		// test saw it once, under load).
		return tea.Sequence(showStatus("Cancelling "+oneLine(sum.ID)+"…", false), func() tea.Msg {
			r.cancel()
			return nil
		})
	}
	if sum.Status == planner.PlanInterrupted {
		// Engram stopped during its run (issue 14, bug 1).
		return showStatus("Plan "+oneLine(sum.ID)+" is not running (engram stopped mid-run): r resumes it.", false)
	}
	cmd := request(&p.requests, nil, planner.ActionPlanCancel, planner.PlanArgs{PlanID: sum.ID})
	p.others[p.seq] = sum.ID
	return cmd
}

func (p *plansPane) replan() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if sum.Status == planner.PlanRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running: cancel it (c) before replanning.", false)
	}
	p.setNotice(sum.ID, "", false)
	cmd := request(&p.requests, nil, planner.ActionPlanReplan, planner.PlanArgs{PlanID: sum.ID})
	p.others[p.seq] = sum.ID
	return tea.Batch(cmd, showStatus("Asking the model to replan "+oneLine(sum.ID)+"…", false))
}

// quitQuestion asks before quitting stops a plan's run: one the pane
// started, or one the list shows running (the palette's, which quitting
// cancels too).
func (p *plansPane) quitQuestion() string {
	var ids []string
	for id := range p.runs {
		ids = append(ids, oneLine(id))
	}
	for _, s := range p.list.plans {
		if s.Status == planner.PlanRunning && p.runs[s.ID] == nil {
			ids = append(ids, oneLine(s.ID))
		}
	}
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return "Plan " + ids[0] + " is running: quit and cancel it (r resumes it later)?"
	}
	slices.Sort(ids)
	return "Plans " + strings.Join(ids, ", ") + " are running: quit and cancel them (r resumes them later)?"
}

// stop gives up every run the pane started (the console is quitting).
func (p *plansPane) stop() {
	for _, r := range p.runs {
		r.cancel()
	}
	p.stopWaiting()
}
