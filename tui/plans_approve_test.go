//go:build !noplanning

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

// runRecorder is a connection that notes every plan.execute and
// plan.resume the console sends ("plan.execute tidy ask"), and can hide
// from plan.get that a model chose actions (a plan the pane saw before a
// replan, say).
type runRecorder struct {
	conn.Conn
	mu   sync.Mutex
	runs []string
	// stale, while set, makes plan.get answer without the proposals.
	stale atomic.Bool
}

func (c *runRecorder) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	switch req.Action {
	case planner.ActionPlanExecute.Name(), planner.ActionPlanResume.Name():
		var a struct {
			PlanID   string                   `json:"plan_id"`
			Proposed string                   `json:"proposed_actions"`
			Approved []planner.ProposedAction `json:"approved"`
		}
		_ = json.Unmarshal(req.Args, &a)
		run := req.Action + " " + a.PlanID + " " + a.Proposed
		for _, p := range a.Approved {
			run += " " + p.Subtask + "=" + p.Action.Name // what the person was shown
		}
		c.mu.Lock()
		c.runs = append(c.runs, run)
		c.mu.Unlock()
	case planner.ActionPlanGet.Name():
		res, err := c.Conn.Do(ctx, req)
		if err != nil || !c.stale.Load() {
			return res, err
		}
		var r planner.PlanResult
		if err := json.Unmarshal(res, &r); err != nil || r.Plan == nil {
			return res, err
		}
		for _, s := range r.Plan.Subtasks {
			s.Proposed = false
		}
		return json.Marshal(r)
	}
	return c.Conn.Do(ctx, req)
}

// sent is what plan.execute and plan.resume the console sent, in order.
func (c *runRecorder) sent() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.runs, " | ")
}

// newProposingEngine opens an in-memory engine with the planner and a
// scripted model answering answers in order, behind a runRecorder.
func newProposingEngine(t *testing.T, answers ...string) (*runRecorder, *llmtest.Scripted) {
	t.Helper()
	model := llmtest.New(answers...)
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(goldenTime), IDSeed: "golden", LLM: model}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	engine, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	return &runRecorder{Conn: engine}, model
}

// tidyAnswer is the model's decomposition of "Tidy up": look (no action:
// the model does it), then note, whose action (state.set) the model chose.
const tidyAnswer = `{"subtasks": [
	{"id": "look", "description": "Look around"},
	{"id": "note", "description": "Note it", "dependencies": ["look"], "action": {"name": "state.set", "args": {"key": "noted", "value": true}}}]}`

// decomposeTidy makes the plan "tidy" from tidyAnswer.
func decomposeTidy(t *testing.T, c conn.Conn) {
	t.Helper()
	do(t, c, "plan.decompose", "", `{"goal": "Tidy up", "id": "tidy"}`)
}

// Issue 13, item 1: the console shows the actions a model chose and runs
// them only once the person says y. x, enter asks and runs nothing; n runs
// nothing; y runs the plan, approved by the console's agent.
func TestPlansAskBeforeRunningModelChosenActions(t *testing.T) {
	t.Parallel()
	rc, model := newProposingEngine(t, tidyAnswer, "looked around")
	decomposeTidy(t, rc)
	before := string(do(t, rc, "plan.get", "", `{"plan_id": "tidy"}`))
	tm := startPlans(t, rc, goldenWidth, goldenHeight)
	waitFor(t, tm, "tidy · Tidy up", "note ◆")
	tm.Type("x")
	waitFor(t, tm, "Execute tidy")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "The model chose this action for tidy", `note  state.set {"key":"noted","value":true}`,
		"Run it?  y run it · n/esc cancel")
	// The question holds the keyboard: q does not quit, 1 does not switch.
	tm.Type("q1")
	tm.Type("n")
	waitFor(t, tm, "Nothing ran: the plan waits until you approve the actions the model chose.")
	if got := rc.sent(); got != "" {
		t.Errorf("sent %q before the person answered", got)
	}
	if after := string(do(t, rc, "plan.get", "", `{"plan_id": "tidy"}`)); after != before {
		t.Errorf("the plan changed though nothing was approved:\n%s\n%s", before, after)
	}
	tm.Type("x")
	waitFor(t, tm, "Execute tidy")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Run it?")
	tm.Type("y")
	waitFor(t, tm, "Plan tidy completed: 2 of 2 completed")
	m := finish(t, tm)
	if got, want := rc.sent(), "plan.execute tidy approve note=state.set"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	d := getPlan(t, rc, "tidy")
	note := d.SubtaskByID("note")
	if note.Status != planner.Completed || note.ApprovedBy != rc.Agent() || !note.Proposed {
		t.Errorf("note: %s, proposed %v, approved by %q; want completed, approved by %q", note.Status, note.Proposed, note.ApprovedBy, rc.Agent())
	}
	if model.Calls() != 2 {
		t.Errorf("the model was asked %d times, want 2 (decompose, look)", model.Calls())
	}
	if p := plansOf(m); p.approve.Active() || p.Capturing() {
		t.Error("the question is still open after the run")
	}
}

// A plan with nothing a model chose runs at once, and still asks the
// engine to refuse any such action the pane did not see (issue 13, item 1).
func TestPlansRunAPlanWithoutProposalsAtOnce(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t)
	do(t, rc, "plan.create", "", `{"id": "garden", "goal": "Plant the garden", "subtasks": [
		{"id": "dig", "action": {"name": "noop"}}, {"id": "sow", "dependencies": ["dig"], "action": {"name": "noop"}}]}`)
	tm := startPlans(t, rc, goldenWidth, goldenHeight)
	waitFor(t, tm, "garden · Plant the garden", "← dig")
	tm.Type("x")
	waitFor(t, tm, "Execute garden")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Plan garden completed: 2 of 2 completed")
	m := finish(t, tm)
	if got, want := rc.sent(), "plan.execute garden ask"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	for _, s := range getPlan(t, rc, "garden").Subtasks {
		if s.Proposed || s.ApprovedBy != "" {
			t.Errorf("%s: proposed %v, approved by %q", s.ID, s.Proposed, s.ApprovedBy)
		}
	}
	if plansOf(m).approve.Active() {
		t.Error("a question was asked")
	}
}

// A resume asks too: the plan holds the action a replan chose. esc runs
// nothing; y resumes it, approved (issue 13, item 1).
func TestPlansAskBeforeResumingAReplansProposal(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t, `{"subtasks": [{"id": "again", "description": "Count again", "action": {"name": "task.noop"}}]}`)
	do(t, rc, "plan.create", "", `{"id": "count", "goal": "Count the chairs", "subtasks": [{"id": "a", "action": {"name": "fail"}}]}`)
	if res, err := conn.Call(context.Background(), rc.Conn, planner.ActionPlanExecute, planner.ExecuteArgs{PlanID: "count"}); err != nil || res.Plan.Status != planner.PlanAborted {
		t.Fatalf("the first run: %v %v", res.Plan, err)
	}
	do(t, rc, "plan.replan", "", `{"plan_id": "count"}`)
	tm := startPlans(t, rc, goldenWidth, goldenHeight)
	waitFor(t, tm, "count · Count the chairs", "again ◆")
	tm.Type("r")
	waitFor(t, tm, "The model chose this action for count", "again  task.noop", "Run it?")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "Nothing ran: the plan waits")
	if got := rc.sent(); got != "" {
		t.Errorf("sent %q after esc", got)
	}
	tm.Type("r")
	waitFor(t, tm, "Run it?")
	tm.Type("y")
	waitFor(t, tm, "Plan count completed")
	finish(t, tm)
	if got, want := rc.sent(), "plan.resume count approve again=task.noop"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if s := getPlan(t, rc, "count").SubtaskByID("again"); s == nil || s.Status != planner.Completed || s.ApprovedBy != rc.Agent() {
		t.Errorf("again: %+v", s)
	}
}

// A plan the pane saw before the model's actions came (a stale copy): the
// engine refuses the run that asks, the pane says so and reloads the plan,
// and the key then asks (issue 13, item 1).
func TestPlansAskAfterTheEngineRefusesAStalePlan(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t, tidyAnswer)
	decomposeTidy(t, rc)
	rc.stale.Store(true)
	tm := startPlans(t, rc, goldenWidth, goldenHeight)
	waitFor(t, tm, "tidy · Tidy up", "← look")
	rc.stale.Store(false)
	tm.Type("x")
	waitFor(t, tm, "Execute tidy")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "execute tidy did not start: the model chose actions nobody has approved yet; x shows them", "note ◆")
	tm.Type("x")
	waitFor(t, tm, "Execute tidy")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "The model chose this action for tidy", "Run it?")
	m := finish(t, tm)
	if got, want := rc.sent(), "plan.execute tidy ask"; got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
	if d := getPlan(t, rc, "tidy"); d.Status != planner.PlanPending {
		t.Errorf("the refused run changed the plan: %s", d.Status)
	}
	// Leaving the tab takes the question away; nothing ran.
	p := plansOf(m)
	p.Blur()
	if p.approve.Active() || p.Capturing() {
		t.Error("the question stayed open on a hidden tab")
	}
}

// bigPlan is a pending plan "big" whose model chose n actions (a, b, …),
// each a state.set with args of about argLen characters, on pane p.
func bigPlan(p *plansPane, n, argLen int) *planner.Plan {
	d := &planner.Plan{ID: "big", Goal: "g", Status: planner.PlanPending}
	for i := range n {
		id := string(rune('a' + i))
		d.Subtasks = append(d.Subtasks, &planner.Subtask{ID: id, Status: planner.Pending, Proposed: true,
			Action: &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key": "` + strings.Repeat(id, argLen) + `", "value": "` + id + `"}`)}})
	}
	p.list.loaded, p.list.plans = true, []planner.PlanSummary{{ID: "big", Goal: "g", Status: planner.PlanPending}}
	p.list.cursor.setLen(1)
	p.plan.docs["big"] = d
	return d
}

// pressAsk answers the open question with keys, and reports the status line
// the last one asked for ("" for none).
func pressAsk(t *testing.T, p *plansPane, ks ...string) string {
	t.Helper()
	var status string
	for _, k := range ks {
		status = ""
		if cmd := p.handleKey(keyMsg(t, k)); cmd != nil {
			if m, ok := cmd().(statusMsg); ok {
				status = m.text
			}
		}
	}
	return status
}

// Issue 13, item 1 (review): the question shows each action whole, its
// args JSON wrapped over the lines it needs, never cut; no line is wider
// than the pane; the question fits at every size.
func TestPlansQuestionShowsLongArgsWhole(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(rc, &styles, false)
	p.SetSize(80, 24)
	d := bigPlan(p, 1, 300)
	d.Subtasks = append(d.Subtasks, &planner.Subtask{ID: "done", Status: planner.Pending, Proposed: true, ApprovedBy: "local",
		Action: &planner.ActionSpec{Name: "task.noop"}}) // approved already: not asked about
	if cmd := p.resume(); cmd != nil || !p.approve.Active() || !p.Capturing() {
		t.Fatalf("r did not ask: active %v", p.approve.Active())
	}
	lines := p.promptLines(80)
	text := strings.Join(lines, "\n")
	if strings.Contains(text, "…") || strings.Contains(text, "task.noop") || strings.Contains(text, "actions 1") {
		t.Errorf("the question cuts, scrolls or lists an approved action:\n%s", text)
	}
	// The args, read back from their lines, are the args in full.
	var args string
	for _, l := range lines {
		if a, ok := strings.CutPrefix(l, "     "); ok {
			args += a
		}
	}
	if want := compactArgs(d.Subtasks[0].Action.Args); args != want {
		t.Errorf("the args shown:\n%s\nwant\n%s", args, want)
	}
	for i, l := range lines {
		if w := lineWidth(l); w > 80 {
			t.Errorf("line %d is %d wide: %q", i, w, l)
		}
	}
	if k := p.Keys(); len(k) != 2 || k[0].Help().Desc != "run it" {
		t.Errorf("keys %v", k)
	}
	bigPlan(p, 8, 200)
	p.approve.close()
	p.resume()
	for _, size := range [][2]int{{60, 24}, {80, 24}, {200, 60}, {40, 10}, {20, 6}, {30, 3}} {
		p.SetSize(size[0], size[1])
		checkScreen(t, fmt.Sprintf("the question at %dx%d", size[0], size[1]), p.View(), size[0], size[1])
		if v := p.View(); !strings.Contains(v, "Run them?") {
			t.Errorf("at %dx%d the question is cut off:\n%s", size[0], size[1], v)
		}
	}
}

// eightAnswer is a decomposition of "Set it all up" into eight subtasks
// whose actions (state.set, with long args) the model chose: more than
// the question shows at once at 80x24.
var eightAnswer = func() string {
	var subs []string
	for i := range 8 {
		id := fmt.Sprintf("set%d", i+1)
		subs = append(subs, fmt.Sprintf(`{"id": %q, "description": "Set %d", "action": {"name": "state.set", "args": {"key": "setting.%d", "value": %q}}}`,
			id, i+1, i+1, strings.Repeat(fmt.Sprint(i+1), 90)))
	}
	return `{"subtasks": [` + strings.Join(subs, ", ") + `]}`
}()

// eightApproved is what y sends once the person has read all eight.
const eightApproved = "plan.execute eight approve set1=state.set set2=state.set set3=state.set set4=state.set set5=state.set set6=state.set set7=state.set set8=state.set"

// Issue 13, item 1 (review): with more actions than fit, y before the
// person has scrolled to the last one sends nothing and says why; once
// the end has been on screen, y approves all eight.
func TestPlansApproveOnlyOnceTheLastActionWasShown(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t, eightAnswer)
	do(t, rc, "plan.decompose", "", `{"goal": "Set it all up", "id": "eight"}`)
	tm := startPlans(t, rc, 80, 24)
	// The plan itself, not only its title (drawn from the list while the
	// plan loads): x asks about the model's actions only once they are in.
	waitFor(t, tm, "eight · Set it all up", "0 of 8 completed")
	tm.Type("x")
	waitFor(t, tm, "Execute eight")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "The model chose these actions for eight", "actions 1–", "of 8 · ↓ more", "Run them?", "↑/↓ read the actions")
	tm.Type("y")
	waitFor(t, tm, "Scroll to the last action first: ↓")
	if got := rc.sent(); got != "" {
		t.Errorf("sent %q before the person saw every action", got)
	}
	keys(tm, tea.KeyPgDown, tea.KeyPgDown, tea.KeyPgDown, tea.KeyPgDown, tea.KeyPgDown)
	waitFor(t, tm, "of 8 · the end")
	tm.Type("k") // back up: what was seen stays seen
	tm.Type("y")
	waitFor(t, tm, "Plan eight completed: 8 of 8 completed")
	m := finish(t, tm)
	if got := rc.sent(); got != eightApproved {
		t.Errorf("sent %q, want %q", got, eightApproved)
	}
	for _, s := range getPlan(t, rc, "eight").Subtasks {
		if s.Status != planner.Completed || s.ApprovedBy != rc.Agent() {
			t.Errorf("%s: %s, approved by %q", s.ID, s.Status, s.ApprovedBy)
		}
	}
	if p := plansOf(m); p.approve.Active() || p.Capturing() {
		t.Error("the question is still open after the run")
	}
}

// Issue 13, item 1 (review): a reload that changes the actions (a replan
// elsewhere) starts the reading over: y waits for the new end. A reload
// with the same actions keeps what was read.
func TestPlansReloadWithOtherActionsStartsTheReadingOver(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(rc, &styles, false)
	p.SetSize(80, 24)
	d := bigPlan(p, 8, 100)
	p.resume()
	if !p.askLayout(80).scrolls {
		t.Fatalf("eight long actions fit at 80x24:\n%s", strings.Join(p.promptLines(80), "\n"))
	}
	if status := pressAsk(t, p, "y"); !strings.HasPrefix(status, "Scroll to the last action first: ↓") || !p.approve.Active() || len(p.runs) != 0 {
		t.Fatalf("y before scrolling: status %q, question open %v, runs %v", status, p.approve.Active(), p.runs)
	}
	for range 40 {
		pressAsk(t, p, "j")
	}
	if !p.ask.seen || !strings.Contains(strings.Join(p.promptLines(80), "\n"), "of 8 · the end") {
		t.Fatalf("scrolled to the end, seen %v:\n%s", p.ask.seen, strings.Join(p.promptLines(80), "\n"))
	}
	reload := func(d *planner.Plan) {
		p.plan.load.req, p.plan.load.busy, p.plan.asked = 7, true, "big"
		p.Update(resultMsg[planner.PlanResult]{pane: plansPaneID, req: 7, value: planner.PlanResult{Plan: d}})
	}
	same := *d
	reload(&same)
	if !p.ask.seen {
		t.Error("a reload with the same actions forgot what was read")
	}
	other := bigPlan(p, 8, 100)
	other.Subtasks[7].Action.Args = json.RawMessage(`{"key": "other"}`)
	reload(other)
	if !p.approve.Active() || p.ask.seen || p.ask.off != 0 {
		t.Fatalf("after the change: question open %v, seen %v, at line %d", p.approve.Active(), p.ask.seen, p.ask.off)
	}
	if status := pressAsk(t, p, "y"); !strings.HasPrefix(status, "Scroll to the last action first") || len(p.runs) != 0 {
		t.Errorf("y after the change: status %q, runs %v", status, p.runs)
	}
	pressAsk(t, p, "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgup")
	if !p.ask.seen {
		t.Error("paging to the end did not count as read")
	}
	pressAsk(t, p, "y")
	if p.approve.Active() || p.runs["big"] == nil {
		t.Errorf("y after reading: question open %v, runs %v", p.approve.Active(), p.runs)
	}
	p.stop()
}

// TestGoldenPlansAskScrolls: eight long actions at 80x24, after a y that
// came before the person scrolled: the first ones in full, where the
// person is, and why nothing ran.
func TestGoldenPlansAskScrolls(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t, eightAnswer)
	do(t, rc, "plan.decompose", "", `{"goal": "Set it all up", "id": "eight"}`)
	tm := startPlans(t, rc, 80, 24)
	// The plan itself, not only its title (drawn from the list while the
	// plan loads): x asks about the model's actions only once they are in.
	waitFor(t, tm, "eight · Set it all up", "0 of 8 completed")
	tm.Type("x")
	waitFor(t, tm, "Execute eight")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Run them?")
	tm.Type("y")
	waitFor(t, tm, "Scroll to the last action first")
	m := finish(t, tm)
	requireGoldenSized(t, m, 80, 24)
}

// The walked subtask says a model chose its action, and whether someone
// approved it (issue 13, item 1).
func TestSubtaskDetailShowsWhoApprovedTheModelsAction(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(rc, &styles, false)
	act := &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key": "k"}`)}
	d := &planner.Plan{ID: "p", Goal: "g", Status: planner.PlanPending, Subtasks: []*planner.Subtask{
		{ID: "waiting", Status: planner.Pending, Proposed: true, Action: act},
		{ID: "approved", Status: planner.Completed, Proposed: true, Action: act, ApprovedBy: "local"},
		{ID: "batch", Status: planner.Completed, Proposed: true, Action: act},
		{ID: "mine", Status: planner.Pending, Action: act},
	}}
	for _, c := range []struct{ step, want string }{
		{"waiting", "◆ the model chose this action · not approved yet: x asks before it runs"},
		{"approved", "◆ the model chose this action · approved by local"},
		{"batch", "◆ the model chose this action · it ran without approval"},
		{"mine", ""},
	} {
		p.plan.step = c.step
		text := strings.Join(p.stepDetail(d, 100), "\n")
		if c.want == "" && strings.Contains(text, "the model chose") || !strings.Contains(text, c.want) {
			t.Errorf("subtask %s: want %q in\n%s", c.step, c.want, text)
		}
	}
}

// TestGoldenPlansAskApproval: the question at 80x24, over a decomposed plan
// whose model chose two actions.
func TestGoldenPlansAskApproval(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t, `{"subtasks": [
		{"id": "look", "description": "Look around"},
		{"id": "note", "description": "Note it", "dependencies": ["look"], "action": {"name": "state.set", "args": {"key": "noted", "value": true}}},
		{"id": "sweep", "description": "Sweep the floor", "dependencies": ["look"], "action": {"name": "task.sleep", "args": {"ms": 1500}}}]}`)
	decomposeTidy(t, rc)
	tm := startPlans(t, rc, 80, 24)
	waitFor(t, tm, "tidy · Tidy up", "sweep ◆")
	tm.Type("x")
	waitFor(t, tm, "Execute tidy")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "The model chose these actions for tidy", "Run them?")
	m := finish(t, tm)
	requireGoldenSized(t, m, 80, 24)
}

// The question stays true to the plan: when the plan reloads with other
// actions awaiting approval (a replan elsewhere), it lists those; with none
// left it closes, and nothing runs (issue 13, item 1).
func TestPlansQuestionFollowsThePlanAsItReloads(t *testing.T) {
	t.Parallel()
	rc, _ := newProposingEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(rc, &styles, false)
	p.SetSize(80, 24)
	proposed := func(id, name string) *planner.Subtask {
		return &planner.Subtask{ID: id, Status: planner.Pending, Proposed: true, Action: &planner.ActionSpec{Name: name}}
	}
	p.list.loaded, p.list.plans = true, []planner.PlanSummary{{ID: "p", Goal: "g", Status: planner.PlanPending}}
	p.list.cursor.setLen(1)
	p.plan.docs["p"] = &planner.Plan{ID: "p", Goal: "g", Status: planner.PlanPending, Subtasks: []*planner.Subtask{proposed("a", "task.noop")}}
	p.resume()
	reload := func(d *planner.Plan) {
		p.plan.load.req, p.plan.load.busy, p.plan.asked = 7, true, "p"
		p.Update(resultMsg[planner.PlanResult]{pane: plansPaneID, req: 7, value: planner.PlanResult{Plan: d}})
	}
	reload(&planner.Plan{ID: "p", Goal: "g", Status: planner.PlanPending, Subtasks: []*planner.Subtask{proposed("b", "state.set")}})
	if got := p.approve.Payload().chosen; !p.approve.Active() || len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("after the replan the question shows %v", got)
	}
	if text := strings.Join(p.promptLines(80), "\n"); !strings.Contains(text, "b  state.set") || strings.Contains(text, "task.noop") {
		t.Errorf("the question:\n%s", text)
	}
	reload(&planner.Plan{ID: "p", Goal: "g", Status: planner.PlanPending, Subtasks: []*planner.Subtask{{ID: "c", Status: planner.Pending}}})
	if p.approve.Active() || len(p.runs) != 0 {
		t.Errorf("with nothing to approve: question open %v, runs %v", p.approve.Active(), p.runs)
	}
}
