package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
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

// The plan and subtask statuses the planner reports (docs/batch.md, Plans).
const (
	stepPending    = "Pending"
	stepInProgress = "InProgress"
	stepCompleted  = "Completed"
	stepFailed     = "Failed"
	stepSkipped    = "Skipped"
	planRunning    = "running"
)

// planPolicies are the failure policies of plan.execute, the default first.
var planPolicies = []string{"abort", "skip", "retry", "replan"}

// planPolicyHelp says what each policy does when a subtask fails.
var planPolicyHelp = map[string]string{
	"abort":  "stop launching subtasks; what completed keeps its results",
	"skip":   "mark it skipped, and whatever depends on it; run the rest",
	"retry":  "retry it up to 3 times (after 100, 200, 400 ms), then abort",
	"replan": "ask the model to plan the unfinished work anew (needs a model)",
}

// planStrategies are plan.decompose's strategies, the default first.
var planStrategies = []string{"flat", "hierarchical", "iterative"}

// The pane reads plans as the plan.* actions return them (it does not import
// the planner, which a -tags noplanning build leaves out).

type planCounts struct {
	Completed  int `json:"completed"`
	InProgress int `json:"in_progress"`
	Pending    int `json:"pending"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	Total      int `json:"total"`
}

// planSummary is a plan in plan.list.
type planSummary struct {
	ID          string     `json:"id"`
	Goal        string     `json:"goal"`
	Strategy    string     `json:"strategy"`
	Status      string     `json:"status"`
	Progress    planCounts `json:"progress"`
	ReplanCount int        `json:"replan_count"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// planDoc is a plan with its subtasks (plan.get).
type planDoc struct {
	ID          string       `json:"id"`
	Goal        string       `json:"goal"`
	Strategy    string       `json:"strategy"`
	Subtasks    []*planStep  `json:"subtasks"`
	Status      string       `json:"status"`
	ReplanCount int          `json:"replan_count"`
	MaxReplans  int          `json:"max_replans"`
	Provider    string       `json:"provider"`
	Settings    *planSetting `json:"settings"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
}

type planSetting struct {
	MaxConcurrent    int    `json:"max_concurrent"`
	OnSubtaskFailure string `json:"on_subtask_failure"`
	Fallback         string `json:"fallback"`
	MaxRetries       int    `json:"max_retries"`
}

// planStep is one subtask.
type planStep struct {
	ID           string          `json:"id"`
	Description  string          `json:"description"`
	Dependencies []string        `json:"dependencies"`
	Action       *planStepAction `json:"action"`
	Status       string          `json:"status"`
	Result       json.RawMessage `json:"result"`
	Error        string          `json:"error"`
	Attempts     int             `json:"attempts"`
	StartedAt    *time.Time      `json:"started_at"`
	FinishedAt   *time.Time      `json:"finished_at"`
}

type planStepAction struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// counts tallies the plan's subtasks.
func (d *planDoc) counts() planCounts {
	var c planCounts
	for _, s := range d.Subtasks {
		switch s.Status {
		case stepCompleted:
			c.Completed++
		case stepInProgress:
			c.InProgress++
		case stepPending:
			c.Pending++
		case stepFailed:
			c.Failed++
		case stepSkipped:
			c.Skipped++
		}
	}
	c.Total = len(d.Subtasks)
	return c
}

// step returns the subtask with id.
func (d *planDoc) step(id string) *planStep {
	for _, s := range d.Subtasks {
		if s.ID == id {
			return s
		}
	}
	return nil
}

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
}

func newPlansKeys() plansKeys {
	return plansKeys{
		Move:      key.NewBinding(key.WithKeys("up", "down", "k", "j", "home", "end", "g", "G"), key.WithHelp("↑/↓", "plan")),
		Open:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "subtasks")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Scroll:    key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "scroll stages")),
		Step:      key.NewBinding(key.WithKeys("up", "down", "left", "right", "k", "j", "h", "l"), key.WithHelp("arrows", "move")),
		Execute:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "execute")),
		Cancel:    key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel")),
		Resume:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "resume")),
		Replan:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "replan")),
		Decompose: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "decompose")),
		File:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "from a file")),
		Run:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Close:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Policy:    key.NewBinding(key.WithKeys("left", "right", "h", "l", "tab", "shift+tab"), key.WithHelp("←/→", "on failure")),
		AtOnce:    key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7", "8", "9", "+", "-"), key.WithHelp("1-9", "at once")),
		Strategy:  key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "strategy")),
	}
}

// planRun is a plan.execute or plan.resume the pane started: it runs in a
// command under a context the pane can cancel.
type planRun struct {
	req    int
	verb   string // execute, resume
	cancel context.CancelFunc
}

// plansPrompt is the line at the bottom that takes the keyboard: a goal to
// decompose, a YAML file to read a plan from, or the choices of a run.
type plansPrompt int

const (
	promptNone plansPrompt = iota
	promptGoal
	promptFile
	promptExecute
)

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

	// The list.
	list    loader
	plans   []planSummary
	loaded  bool
	listErr string
	absent  bool // no planner in this engram
	cursor  int
	offset  int
	want    string // a plan to select once the list has it (one just made)

	// The selected plan (and the ones seen before, shown at once when the
	// cursor comes back to them while they reload).
	load  loader
	docs  map[string]*planDoc
	doc   string // the id plan.get was last asked for
	dags  map[string]*planDAG
	dagOf map[string]*planDoc // the doc each DAG was laid out from

	// Walking the subtasks: the DAG has the arrow keys.
	walking   bool
	selStep   string
	stageOff  int // the first stage shown
	notice    string
	noticeErr bool
	noticeFor string // the plan the notice is about

	// Runs in flight, by plan id.
	runs map[string]*planRun

	// The prompt at the bottom.
	prompt    plansPrompt
	input     textinput.Model
	strategy  int
	policy    int
	atOnce    int
	promptErr string
	busyReq   int // the decompose or create in flight
	busyWhat  string
	busyStop  context.CancelFunc

	otherReq  map[int]string // replan and cancel requests in flight: req → plan id
	spinner   spinner.Model
	still     bool // tests: the spinner keeps its first frame (no ticks)
	bar       progress.Model
	lastTotal int
}

func newPlansPane(engine *core.Engine, styles *Styles) *plansPane {
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
		requests: requests{engine: engine, pane: plansPaneID},
		styles:   styles,
		keys:     newPlansKeys(),
		docs:     map[string]*planDoc{},
		dags:     map[string]*planDAG{},
		dagOf:    map[string]*planDoc{},
		runs:     map[string]*planRun{},
		otherReq: map[int]string{},
		input:    in,
		atOnce:   plansDefaultAtOnce,
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
	if _, err := p.engine.Env().Actions.Lookup("plan.list"); err != nil {
		p.loaded, p.listErr, p.absent = true, errs.As(err).Message, true
		return nil
	}
	return p.loadList()
}

// Focus catches up (plans may have changed while another tab showed) and
// restarts the spinners, whose ticks went to that tab.
func (p *plansPane) Focus() tea.Cmd {
	p.focused = true
	return tea.Batch(p.refresh(&p.list, p.loadList), p.refresh(&p.load, p.loadDoc), p.tick())
}

func (p *plansPane) Blur() {
	p.focused = false
	if p.prompt != promptNone && p.busyReq == 0 {
		p.closePrompt()
	}
}

// Capturing: a prompt takes every key (q and 1-6 included).
func (p *plansPane) Capturing() bool { return p.prompt != promptNone }

func (p *plansPane) Keys() []key.Binding {
	k := p.keys
	switch p.prompt {
	case promptGoal:
		return []key.Binding{withHelp(k.Run, "enter", "decompose"), k.Close, k.Strategy}
	case promptFile:
		return []key.Binding{withHelp(k.Run, "enter", "create the plan"), k.Close}
	case promptExecute:
		return []key.Binding{withHelp(k.Run, "enter", "execute"), k.Close, k.Policy, k.AtOnce}
	}
	switch {
	case p.absent:
		return nil
	case len(p.plans) == 0:
		return []key.Binding{k.Decompose, k.File}
	}
	// The key that matters most for the selected plan comes first: the
	// short footer shows two.
	var first []key.Binding
	sum := p.current()
	switch {
	case sum != nil && (sum.Status == planRunning || p.runs[sum.ID] != nil):
		first = []key.Binding{k.Cancel}
	case sum != nil && sum.Status == "cancelled":
		first = []key.Binding{k.Resume}
	case sum != nil && (sum.Status == "aborted" || sum.Status == "failed"):
		// Resume and execute run what is pending, never a failed subtask
		// again: a replan replaces it.
		first = []key.Binding{k.Replan}
	default:
		first = []key.Binding{k.Execute}
	}
	rest := []key.Binding{k.Execute, k.Resume, k.Cancel, k.Replan, k.Decompose, k.File}
	if p.walking {
		first = append([]key.Binding{k.Step, k.Back}, first...)
	} else {
		first = append(first, k.Open)
		rest = append(rest, k.Move, k.Scroll)
	}
	for _, b := range rest {
		if !slices.ContainsFunc(first, func(f key.Binding) bool { return f.Help().Key == b.Help().Key }) {
			first = append(first, b)
		}
	}
	return first
}

// split reports whether the list and the plan show side by side.
func (p *plansPane) split() bool { return p.width >= plansSplitWidth }

func (p *plansPane) listWidth() int {
	if p.split() {
		return min(max(p.width*2/5, 50), 70)
	}
	return p.width
}

// planWidth is the width the selected plan is drawn in.
func (p *plansPane) planWidth() int {
	if p.split() {
		return p.width - p.listWidth() - 1
	}
	return p.width
}

func (p *plansPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.input.Width = max(w-len(p.input.Prompt)-4, 1)
}

// current is the plan under the cursor.
func (p *plansPane) current() *planSummary {
	if p.cursor < len(p.plans) {
		return &p.plans[p.cursor]
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
func (p *plansPane) shown() *planDoc { return p.docs[p.currentID()] }

// --- loading ---

func (p *plansPane) loadList() tea.Cmd {
	if p.absent {
		return nil
	}
	return p.run(&p.list, "plan.list", struct{}{})
}

// loadDoc loads the selected plan.
func (p *plansPane) loadDoc() tea.Cmd {
	id := p.currentID()
	if id == "" {
		return nil
	}
	p.doc = id
	return p.run(&p.load, "plan.get", map[string]string{"plan_id": id})
}

// selectionChanged loads the plan the cursor moved to.
func (p *plansPane) selectionChanged() tea.Cmd {
	p.stageOff = 0
	p.walking = false
	p.selStep = ""
	if p.noticeFor != p.currentID() {
		p.notice = ""
	}
	if p.currentID() == p.doc && p.load.busy {
		return nil
	}
	p.load.busy = false // the answer for the plan left behind is stale
	return p.loadDoc()
}

func (p *plansPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionResultMsg:
		if msg.pane != plansPaneID {
			return nil
		}
		return tea.Batch(p.result(msg), p.tickIfStarted())
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
	if p.prompt == promptGoal || p.prompt == promptFile {
		var cmd tea.Cmd
		p.input, cmd = p.input.Update(msg) // cursor blinks
		return cmd
	}
	return nil
}

// event follows the planner: any plan.* event reloads the list, and the
// selected plan if it is about that one (once per burst of events).
func (p *plansPane) event(ev events.Event) tea.Cmd {
	if !strings.HasPrefix(ev.Name, "plan.") {
		return nil
	}
	id := eventPlanID(ev.Data)
	if d, ok := ev.Data.(map[string]any); ok && d["change"] == "created" && id != "" && !p.walking && p.prompt == promptNone {
		p.want = id // a new plan (from the palette, say) is what to look at
	}
	cmds := []tea.Cmd{p.refresh(&p.list, p.loadList)}
	if id == "" || id == p.currentID() {
		cmds = append(cmds, p.refresh(&p.load, p.loadDoc))
	}
	return tea.Batch(cmds...)
}

// eventPlanID is the plan a planner event is about.
func eventPlanID(data any) string {
	switch d := data.(type) {
	case map[string]any:
		id, _ := d["plan_id"].(string)
		return id
	case map[string]string:
		return d["plan_id"]
	}
	return ""
}

// running reports that something runs: a plan the pane started, or one
// the list says is running (started elsewhere).
func (p *plansPane) running() bool {
	if len(p.runs) > 0 || p.busyReq != 0 {
		return true
	}
	return slices.ContainsFunc(p.plans, func(s planSummary) bool { return s.Status == planRunning })
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
	if p.busyReq != 0 {
		n++
	}
	for _, s := range p.plans {
		if s.Status == planRunning {
			n++
		}
	}
	p.lastTotal = n
	if n > 0 && !was {
		return p.tick()
	}
	return nil
}

// result applies the answer to one of the pane's requests.
func (p *plansPane) result(msg actionResultMsg) tea.Cmd {
	switch {
	case msg.req == p.list.req:
		return p.listResult(msg)
	case msg.req == p.load.req:
		p.load.busy = false
		var res struct {
			Plan *planDoc `json:"plan"`
		}
		switch {
		case msg.err != nil:
			delete(p.docs, p.doc) // gone
		case json.Unmarshal(msg.result, &res) == nil && res.Plan != nil:
			p.docs[res.Plan.ID] = res.Plan
			p.keepStepSelection()
		}
		if p.load.dirty {
			return p.loadDoc()
		}
		return nil
	case msg.req == p.busyReq:
		return p.promptResult(msg)
	}
	for id, r := range p.runs {
		if r.req == msg.req {
			r.cancel()
			delete(p.runs, id)
			return tea.Batch(p.runResult(id, r.verb, msg), p.refresh(&p.list, p.loadList), p.reloadIfShown(id))
		}
	}
	if id, ok := p.otherReq[msg.req]; ok {
		delete(p.otherReq, msg.req)
		return p.otherResult(id, msg)
	}
	return nil // stale
}

func (p *plansPane) reloadIfShown(id string) tea.Cmd {
	if id != p.currentID() {
		return nil
	}
	return p.refresh(&p.load, p.loadDoc)
}

func (p *plansPane) listResult(msg actionResultMsg) tea.Cmd {
	p.list.busy = false
	p.loaded = true
	var res struct {
		Plans []planSummary `json:"plans"`
	}
	before := p.currentID()
	switch {
	case msg.err != nil:
		p.listErr = errs.As(msg.err).Message
		p.plans = nil
	case json.Unmarshal(msg.result, &res) != nil:
		p.listErr = "unexpected plan.list result"
	default:
		p.listErr = ""
		p.plans = res.Plans
		// The cursor stays on its plan when the list changes around it, or
		// goes to the one just made.
		at := before
		if p.want != "" && slices.ContainsFunc(p.plans, func(s planSummary) bool { return s.ID == p.want }) {
			at, p.want = p.want, ""
		}
		p.cursor = min(p.cursor, max(len(p.plans)-1, 0))
		if i := slices.IndexFunc(p.plans, func(s planSummary) bool { return s.ID == at }); i >= 0 {
			p.cursor = i
		}
	}
	var cmds []tea.Cmd
	if p.list.dirty {
		cmds = append(cmds, p.loadList())
	}
	if id := p.currentID(); id != before || (id != "" && p.docs[id] == nil && !p.load.busy) {
		cmds = append(cmds, p.selectionChanged())
	}
	return tea.Batch(cmds...)
}

// runResult reports how a run the pane started ended.
func (p *plansPane) runResult(id, verb string, msg actionResultMsg) tea.Cmd {
	if msg.err != nil {
		e := errs.As(msg.err)
		p.setNotice(id, fmt.Sprintf("%s %s: %s: %s", verb, id, e.Kind, e.Message), true)
		return nil // the root shows it in the status line too
	}
	var res struct {
		Plan     *planDoc   `json:"plan"`
		Progress planCounts `json:"progress"`
	}
	if json.Unmarshal(msg.result, &res) != nil || res.Plan == nil {
		return showStatus("unexpected plan."+verb+" result", true)
	}
	pl := res.Plan
	p.docs[pl.ID] = pl
	p.keepStepSelection()
	c := res.Progress
	text := fmt.Sprintf("Plan %s %s: %d of %d completed", oneLine(pl.ID), pl.Status, c.Completed, c.Total)
	if c.Failed > 0 {
		text += fmt.Sprintf(", %d failed", c.Failed)
	}
	if c.Skipped > 0 {
		text += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	if d, ok := planElapsed(pl, p.engine.Clock().Now()); ok {
		text += " in " + formatPlanDuration(d)
	}
	switch pl.Status {
	case "cancelled":
		text += "; r resumes it"
	case "aborted", "failed":
		text += "; p replans what is left (with a model)"
	}
	bad := pl.Status == "aborted" || pl.Status == "failed" || pl.Status == "partial"
	p.setNotice(pl.ID, "", false)
	return showStatus(text+".", bad)
}

func (p *plansPane) otherResult(id string, msg actionResultMsg) tea.Cmd {
	switch msg.action {
	case "plan.replan":
		if msg.err != nil {
			e := errs.As(msg.err)
			p.setNotice(id, fmt.Sprintf("replan %s: %s: %s", id, e.Kind, e.Message), true)
			return nil
		}
		p.setNotice(id, "", false)
		return tea.Batch(showStatus("Replanned "+oneLine(id)+": its unfinished subtasks are new.", false), p.reloadIfShown(id))
	case "plan.cancel":
		if msg.err != nil {
			return nil // the status line says it
		}
		var res struct {
			Cancelled bool `json:"cancelled"`
		}
		json.Unmarshal(msg.result, &res)
		if !res.Cancelled {
			return showStatus("Plan "+oneLine(id)+" is not running: nothing to cancel.", false)
		}
		return showStatus("Cancelling "+oneLine(id)+"…", false)
	}
	return nil
}

func (p *plansPane) setNotice(id, text string, isErr bool) {
	p.notice, p.noticeErr, p.noticeFor = text, isErr, id
}

// promptResult applies the answer to a decompose or a create.
func (p *plansPane) promptResult(msg actionResultMsg) tea.Cmd {
	p.busyReq, p.busyWhat = 0, ""
	if p.busyStop != nil {
		p.busyStop()
		p.busyStop = nil
	}
	if msg.err != nil {
		e := errs.As(msg.err)
		p.promptErr = fmt.Sprintf("%s: %s", e.Kind, e.Message)
		return nil // the root shows it in the status line too
	}
	var res struct {
		Plan *planDoc `json:"plan"`
	}
	if json.Unmarshal(msg.result, &res) != nil || res.Plan == nil {
		p.promptErr = "unexpected " + msg.action + " result"
		return nil
	}
	p.closePrompt()
	pl := res.Plan
	p.docs[pl.ID] = pl
	p.want = pl.ID
	text := fmt.Sprintf("Created plan %s: %s; x executes it.", oneLine(pl.ID), plural(len(pl.Subtasks), "subtask", "subtasks"))
	if msg.action == "plan.decompose" {
		text = fmt.Sprintf("Decomposed the goal into plan %s: %s; x executes it.", oneLine(pl.ID), plural(len(pl.Subtasks), "subtask", "subtasks"))
	}
	return tea.Batch(showStatus(text, false), p.refresh(&p.list, p.loadList))
}

// keepStepSelection keeps the walked subtask valid after a reload (a
// replan may have replaced it).
func (p *plansPane) keepStepSelection() {
	if !p.walking {
		return
	}
	d := p.shown()
	if d == nil || len(d.Subtasks) == 0 {
		p.walking, p.selStep = false, ""
		return
	}
	if d.step(p.selStep) == nil {
		p.selStep = d.Subtasks[0].ID
	}
}

// --- keys ---

func (p *plansPane) handleKey(msg tea.KeyMsg) tea.Cmd {
	if p.prompt != promptNone {
		return p.promptKey(msg)
	}
	if p.absent {
		return nil
	}
	k := p.keys
	switch {
	case key.Matches(msg, k.Decompose):
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
	if p.walking {
		return p.walkKey(msg)
	}
	return p.listKey(msg)
}

func (p *plansPane) listKey(msg tea.KeyMsg) tea.Cmd {
	before := p.cursor
	switch msg.String() {
	case "enter":
		if d := p.shown(); d != nil && len(d.Subtasks) > 0 {
			p.walking = true
			p.selStep = d.Subtasks[0].ID
			if dag := p.dagFor(d); dag != nil && len(dag.stages) > 0 && p.stageOff < len(dag.stages) && len(dag.stages[p.stageOff]) > 0 {
				p.selStep = dag.stages[p.stageOff][0].ID // the first one in view
			}
		}
		return nil
	case "up", "k":
		p.cursor--
	case "down", "j":
		p.cursor++
	case "home", "g":
		p.cursor = 0
	case "end", "G":
		p.cursor = len(p.plans) - 1
	case "pgup":
		p.cursor -= p.listRows()
	case "pgdown":
		p.cursor += p.listRows()
	case "left", "h":
		p.stageOff = max(p.stageOff-1, 0)
		return nil
	case "right", "l":
		if d := p.shown(); d != nil {
			if dag := p.dagFor(d); dag != nil {
				p.stageOff = min(p.stageOff+1, max(len(dag.stages)-1, 0))
			}
		}
		return nil
	default:
		return nil
	}
	p.cursor = max(min(p.cursor, len(p.plans)-1), 0)
	if p.cursor != before {
		return p.selectionChanged()
	}
	return nil
}

// walkKey moves through the DAG: ↑/↓ within a stage, ←/→ between stages.
func (p *plansPane) walkKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, p.keys.Back) {
		p.walking = false
		return nil
	}
	d := p.shown()
	if d == nil {
		p.walking = false
		return nil
	}
	dag := p.dagFor(d)
	col, row := dag.find(p.selStep)
	if col < 0 {
		col, row = 0, 0
	}
	switch msg.String() {
	case "up", "k":
		row--
	case "down", "j":
		row++
	case "left", "h":
		col--
	case "right", "l":
		col++
	case "home", "g":
		row = 0
	case "end", "G":
		row = len(dag.stages[col]) - 1
	default:
		return nil
	}
	col = max(min(col, len(dag.stages)-1), 0)
	row = max(min(row, len(dag.stages[col])-1), 0)
	p.selStep = dag.stages[col][row].ID
	return nil
}

func (p *plansPane) openPrompt(which plansPrompt) tea.Cmd {
	p.prompt, p.promptErr = which, ""
	p.input.Reset()
	switch which {
	case promptGoal:
		p.input.Prompt = "goal: "
		p.input.Placeholder = "what to achieve, e.g. Publish the quarterly report"
	case promptFile:
		p.input.Prompt = "YAML file: "
		p.input.Placeholder = "a path, e.g. ~/plans/release.yaml"
	}
	p.input.Width = max(p.width-len(p.input.Prompt)-4, 1)
	return p.input.Focus()
}

func (p *plansPane) closePrompt() {
	p.prompt, p.promptErr = promptNone, ""
	p.input.Blur()
	if p.busyStop != nil {
		p.busyStop()
		p.busyStop = nil
	}
	p.busyReq, p.busyWhat = 0, ""
}

func (p *plansPane) promptKey(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if key.Matches(msg, k.Close) {
		if p.busyReq != 0 {
			// Gives up on the model's answer (or the file).
			p.closePrompt()
			return showStatus("Stopped waiting: nothing was created.", false)
		}
		p.closePrompt()
		return nil
	}
	if p.prompt == promptExecute {
		return p.executeKey(msg)
	}
	if p.busyReq != 0 {
		return nil // one at a time
	}
	switch {
	case key.Matches(msg, k.Run):
		return p.submitPrompt()
	case p.prompt == promptGoal && key.Matches(msg, k.Strategy):
		n := len(planStrategies)
		if msg.String() == "tab" {
			p.strategy = (p.strategy + 1) % n
		} else {
			p.strategy = (p.strategy + n - 1) % n
		}
		return nil
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	p.promptErr = "" // an edit answers the error
	return cmd
}

// submitPrompt runs plan.decompose or plan.create {file}.
func (p *plansPane) submitPrompt() tea.Cmd {
	text := strings.TrimSpace(p.input.Value())
	var name string
	var args map[string]any
	switch p.prompt {
	case promptGoal:
		if text == "" {
			p.promptErr = "type the goal to decompose"
			return nil
		}
		name, args = "plan.decompose", map[string]any{"goal": text, "strategy": planStrategies[p.strategy]}
		p.busyWhat = "asking the model for a plan…"
	case promptFile:
		if text == "" {
			p.promptErr = "type the path of a YAML file with goal: and subtasks:"
			return nil
		}
		name, args = "plan.create", map[string]any{"file": text}
		p.busyWhat = "reading " + text + "…"
	default:
		return nil
	}
	p.promptErr = ""
	ctx, cancel := context.WithCancel(context.Background())
	p.busyStop = cancel
	p.seq++
	p.busyReq = p.seq
	engine, req := p.engine, p.seq
	cmd := func() tea.Msg {
		if file, ok := args["file"].(string); ok {
			args["file"] = expandHome(file)
		}
		raw, _ := json.Marshal(args)
		res, err := engine.Do(ctx, core.Request{Action: name, Args: raw})
		return actionResultMsg{pane: plansPaneID, req: req, action: name, result: res, err: err}
	}
	return tea.Batch(cmd, p.tick())
}

// expandHome turns a leading ~/ into the home directory (in a command: it
// reads the environment).
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
	if sum.Status == planRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running: c cancels it.", false)
	}
	p.prompt, p.policy, p.promptErr = promptExecute, 0, "" // abort unless the user picks another
	return nil
}

func (p *plansPane) executeKey(msg tea.KeyMsg) tea.Cmd {
	n := len(planPolicies)
	switch s := msg.String(); {
	case s == "enter":
		id := p.currentID()
		p.closePrompt()
		if id == "" {
			return nil
		}
		return p.start(id, "execute", map[string]any{"plan_id": id, "on_subtask_failure": planPolicies[p.policy], "max_concurrent": p.atOnce})
	case s == "right" || s == "l" || s == "tab":
		p.policy = (p.policy + 1) % n
	case s == "left" || s == "h" || s == "shift+tab":
		p.policy = (p.policy + n - 1) % n
	case s == "+" || s == "up":
		p.atOnce = min(p.atOnce+1, 9)
	case s == "-" || s == "down":
		p.atOnce = max(p.atOnce-1, 1)
	case len(s) == 1 && s[0] >= '1' && s[0] <= '9':
		p.atOnce = int(s[0] - '0')
	}
	return nil
}

// start runs plan.execute or plan.resume in a command the pane can cancel;
// the pane follows the run through the planner's events meanwhile.
func (p *plansPane) start(id, verb string, args map[string]any) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	p.seq++
	p.runs[id] = &planRun{req: p.seq, verb: verb, cancel: cancel}
	p.setNotice(id, "", false)
	raw, _ := json.Marshal(args)
	return tea.Batch(runActionCtx(ctx, p.engine, plansPaneID, p.seq, "plan."+verb, raw), p.tick())
}

func (p *plansPane) resume() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if sum.Status == planRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running already.", false)
	}
	return p.start(sum.ID, "resume", map[string]any{"plan_id": sum.ID})
}

// cancelRun stops the selected plan's run: the pane's own by cancelling
// its context (the run then ends "cancelled" and reports as usual), one
// started elsewhere (the palette, another client) with plan.cancel.
func (p *plansPane) cancelRun() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if r := p.runs[sum.ID]; r != nil {
		r.cancel()
		return showStatus("Cancelling "+oneLine(sum.ID)+"…", false)
	}
	cmd := p.run(nil, "plan.cancel", map[string]string{"plan_id": sum.ID})
	p.otherReq[p.seq] = sum.ID
	return cmd
}

func (p *plansPane) replan() tea.Cmd {
	sum := p.current()
	if sum == nil {
		return nil
	}
	if sum.Status == planRunning || p.runs[sum.ID] != nil {
		return showStatus("Plan "+oneLine(sum.ID)+" is running: cancel it (c) before replanning.", false)
	}
	p.setNotice(sum.ID, "", false)
	cmd := p.run(nil, "plan.replan", map[string]string{"plan_id": sum.ID})
	p.otherReq[p.seq] = sum.ID
	return tea.Batch(cmd, showStatus("Asking the model to replan "+oneLine(sum.ID)+"…", false))
}

// stop gives up every run the pane started (the console is quitting).
func (p *plansPane) stop() {
	for _, r := range p.runs {
		r.cancel()
	}
	if p.busyStop != nil {
		p.busyStop()
	}
}
