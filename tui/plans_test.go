//go:build !noplanning

package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/planner"
)

// planGate is a subtask action the test holds: test.gate waits until the
// test opens the gate (or the run is cancelled), and says when it is
// waiting.
type planGate struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (g *planGate) release() { g.once.Do(func() { close(g.open) }) }

// waitEntered waits until a subtask is held at the gate.
func (g *planGate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitLimit):
		t.Fatal("no subtask reached the gate")
	}
}

// newPlanEngine opens an in-memory engine with the planner on the fixed
// clock, and two test actions for plan subtasks: test.work {ms} takes ms
// of the engine clock (it advances it, so that times are the same every
// run when subtasks run one at a time), and test.gate waits at the gate.
func newPlanEngine(t *testing.T) (conn.Conn, *clock.Fixed, *planGate) {
	t.Helper()
	clk := clock.NewFixed(goldenTime)
	engine, gate := newPlanEngineAt(t, "", clk)
	return engine, clk, gate
}

// newPlanEngineAt is newPlanEngine on clk, with a durable store in dir
// ("": in memory), so that a test can open it again as a relaunch does.
func newPlanEngineAt(t *testing.T, dir string, clk *clock.Fixed) (*core.Engine, *planGate) {
	t.Helper()
	opts := core.Options{InMemory: dir == "", DataDir: dir, Clock: clk, IDSeed: "golden"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	engine, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEngine(t, engine) })
	gate := &planGate{entered: make(chan struct{}, 16), open: make(chan struct{})}
	reg := engine.Env().Actions
	type workArgs struct {
		Ms int `json:"ms"`
	}
	action.Register(reg, action.Spec{Name: "test.work", Summary: "Take ms of the engine clock"},
		func(_ context.Context, _ action.Call, a workArgs) (map[string]int, error) {
			clk.Advance(time.Duration(a.Ms) * time.Millisecond)
			return map[string]int{"worked_ms": a.Ms}, nil
		})
	action.Register(reg, action.Spec{Name: "test.gate", Summary: "Wait until the test opens the gate"},
		func(ctx context.Context, _ action.Call, _ struct{}) (map[string]bool, error) {
			gate.entered <- struct{}{}
			select {
			case <-gate.open:
				return map[string]bool{"passed": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	// Before the engine closes: let any held run go, and wait for it to end.
	t.Cleanup(func() {
		gate.release()
		deadline := time.Now().Add(waitLimit)
		for time.Now().Before(deadline) {
			res, err := conn.Call(context.Background(), engine, planner.ActionPlanList, planner.ListArgs{})
			if err != nil || !slices.ContainsFunc(res.Plans, func(s planner.PlanSummary) bool { return s.Status == planner.PlanRunning }) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Error("a plan was still running at the end of the test")
	})
	return engine, gate
}

// work is a test.work action of ms.
func work(ms int) string { return fmt.Sprintf(`{"name": "test.work", "args": {"ms": %d}}`, ms) }

// createReport makes the diamond-plus plan of the frames: fetch, then parse
// and enrich side by side, merged, then published; notify on its own.
// enrich runs the given action (work, the gate, a failure).
func createReport(t *testing.T, engine conn.Conn, enrich string) {
	t.Helper()
	do(t, engine, "plan.create", "", `{"id": "report", "goal": "Publish the weekly report", "subtasks": [
		{"id": "fetch", "description": "Fetch the week's numbers", "action": `+work(1000)+`},
		{"id": "parse", "description": "Parse them into tables", "dependencies": ["fetch"], "action": `+work(2000)+`},
		{"id": "enrich", "description": "Add last year's figures", "dependencies": ["fetch"], "action": `+enrich+`},
		{"id": "merge", "description": "Merge tables and figures", "dependencies": ["parse", "enrich"], "action": `+work(500)+`},
		{"id": "publish", "description": "Publish the report", "dependencies": ["merge"], "action": `+work(800)+`},
		{"id": "notify", "description": "Tell the team it is coming", "action": `+work(300)+`}]}`)
}

// seedPlans makes an earlier plan, run to completion, then the report
// plan (newest, so first in the list).
func seedPlans(t *testing.T, engine conn.Conn, clk *clock.Fixed, enrich string) {
	t.Helper()
	clk.Set(goldenTime.Add(-time.Hour))
	do(t, engine, "plan.create", "", `{"id": "breakfast", "goal": "Prepare breakfast", "subtasks": [
		{"id": "toast", "action": `+work(1500)+`}, {"id": "eggs", "action": `+work(2500)+`},
		{"id": "coffee", "dependencies": ["toast"], "action": `+work(1000)+`}]}`)
	do(t, engine, "plan.execute", "", `{"plan_id": "breakfast", "max_concurrent": 1}`)
	clk.Set(goldenTime)
	createReport(t, engine, enrich)
}

func plansOf(m *Model) *plansPane { return m.panes[tabPlans].(*plansPane) }

// startPlans opens the console on the Plans tab. Its spinners keep their
// first frame, so that a frame taken mid-run is the same every time.
func startPlans(t *testing.T, engine conn.Conn, width, height int) *teatest.TestModel {
	t.Helper()
	m := New(engine, Options{StatusFade: time.Hour})
	plansOf(m).still = true
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(width, height))
	t.Cleanup(func() { _ = tm.Quit() })
	tm.Type("4")
	return tm
}

// getPlan reads a plan through the engine.
func getPlan(t *testing.T, engine conn.Conn, id string) *planner.Plan {
	t.Helper()
	res, err := conn.Call(context.Background(), engine, planner.ActionPlanGet, planner.PlanArgs{PlanID: id})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

// statuses lists a plan's subtasks as id:Status.
func statuses(d *planner.Plan) string {
	var out []string
	for _, s := range d.Subtasks {
		out = append(out, s.ID+":"+s.Status)
	}
	return strings.Join(out, " ")
}

// execute picks the run's choices (the policy by pressing → that many
// times, subtasks at once by a digit) and starts it.
func execute(t *testing.T, tm *teatest.TestModel, right int, atOnce string) {
	t.Helper()
	tm.Type("x")
	waitFor(t, tm, "Execute report", "[abort]")
	for range right {
		keys(tm, tea.KeyRight)
	}
	tm.Type(atOnce)
	keys(tm, tea.KeyEnter)
}

// --- golden frames ---

func TestGoldenPlansEmpty(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "No plans yet.")
	requireGolden(t, finish(t, tm))
}

func TestGoldenPlansBefore(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, work(1500))
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "2 plans, newest first", "Publish the weekly report", "stage 4", "← parse, enrich")
	m := finish(t, tm)
	requireGolden(t, m)
	p := plansOf(m)
	g := p.dagFor(p.shown())
	var got []string
	for _, col := range g.stages {
		var ids []string
		for _, s := range col {
			ids = append(ids, s.ID)
		}
		got = append(got, strings.Join(ids, ","))
	}
	if want := "fetch,notify | parse,enrich | merge | publish"; strings.Join(got, " | ") != want {
		t.Errorf("stages %q, want %q", strings.Join(got, " | "), want)
	}
}

// TestGoldenPlansDuring runs the report one subtask at a time and holds
// enrich at the gate: fetch and parse completed, enrich running (its
// spinner on its first frame), the rest pending.
func TestGoldenPlansDuring(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	gate.waitEntered(t)
	waitFor(t, tm, "2 of 6 completed · 1 running · 3 pending", "running    2/6")
	clk.Advance(1250 * time.Millisecond) // enrich has been running this long
	m := finish(t, tm)
	requireGolden(t, m)
	if d := plansOf(m).shown(); d == nil || statuses(d) != "fetch:Completed parse:Completed enrich:InProgress merge:Pending publish:Pending notify:Pending" {
		t.Errorf("the frame shows %v", d)
	}
}

// TestGoldenPlansAfterFailure: enrich fails under the skip policy; what
// depends on it is skipped, notify still runs; the plan ends partial.
func TestGoldenPlansAfterFailure(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "task.fail", "args": {"message": "last year's archive is offline"}}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 1, "1") // skip
	waitFor(t, tm, "Plan report partial: 3 of 6 completed, 3 skipped in 3.3s.", "partial    3/6")
	m := finish(t, tm)
	requireGolden(t, m)
	want := "fetch:Completed parse:Completed enrich:Skipped merge:Skipped publish:Skipped notify:Completed"
	if got := statuses(getPlan(t, engine, "report")); got != want {
		t.Errorf("the plan is %s, want %s", got, want)
	}
}

// --- behaviour ---

func TestPlansListSelection(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, work(1500))
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "Publish the weekly report", "stage 4")
	keys(tm, tea.KeyDown)
	waitFor(t, tm, "breakfast · Prepare breakfast", "← toast", "3 of 3 completed")
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "report · Publish the weekly report")
	keys(tm, tea.KeyDown)
	waitFor(t, tm, "breakfast · Prepare breakfast")
	// enter walks the subtasks: the details of the one selected show.
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "▸ toast · ✓ Completed · 1 attempt", "runs test.work")
	keys(tm, tea.KeyRight)
	waitFor(t, tm, "▸ coffee · ✓ Completed", "after toast")
	m := finish(t, tm)
	p := plansOf(m)
	if p.currentID() != "breakfast" || p.shown() == nil || p.shown().ID != "breakfast" || !p.plan.walking || p.plan.step != "coffee" {
		t.Errorf("on %q showing %v, walking %v at %q: want breakfast's coffee", p.currentID(), p.shown(), p.plan.walking, p.plan.step)
	}
	press(m, "esc")
	if p.plan.walking {
		t.Error("esc did not leave the subtasks")
	}
}

// TestPlansExecuteLive: once started, the run shows as it goes, from the
// planner's events alone (no key is pressed after enter).
func TestPlansExecuteLive(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "4")
	gate.waitEntered(t)
	// fetch, then parse and notify: enrich is held.
	waitFor(t, tm, "3 of 6 completed · 1 running · 2 pending", "1 running")
	gate.release()
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "completed  6/6")
	m := finish(t, tm)
	if d := getPlan(t, engine, "report"); d.Status != "completed" {
		t.Errorf("the plan is %s", d.Status)
	}
	p := plansOf(m)
	if len(p.runs) != 0 || p.running() {
		t.Errorf("runs %v still in flight", p.runs)
	}
	if d := p.shown(); d == nil || d.Status != "completed" {
		t.Errorf("the pane shows %+v", d)
	}
}

// TestPlansCancelAndResume: c stops a run midway (what ran stays done, the
// interrupted subtask waits), r resumes it to the end.
func TestPlansCancelAndResume(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	gate.waitEntered(t)
	waitFor(t, tm, "2 of 6 completed · 1 running")
	// c asks first; n leaves the run alone (issue 14: a stray c stopped it).
	tm.Type("c")
	waitFor(t, tm, "Cancel plan report? Its running subtasks stop; r resumes it.", "y cancel it")
	tm.Type("n")
	waitFor(t, tm, "Plan report goes on running.")
	if d := getPlan(t, engine, "report"); d.Status != planner.PlanRunning {
		t.Fatalf("n cancelled the run: %s", d.Status)
	}
	tm.Type("c")
	waitFor(t, tm, "Cancel plan report?")
	tm.Type("y")
	waitFor(t, tm, "Plan report cancelled: 2 of 6 completed in 3.0s; r resumes it.", "cancelled  2/6")
	d := getPlan(t, engine, "report")
	if want := "fetch:Completed parse:Completed enrich:Pending merge:Pending publish:Pending notify:Pending"; d.Status != "cancelled" || statuses(d) != want {
		t.Fatalf("after the cancel: %s %s, want cancelled %s", d.Status, statuses(d), want)
	}
	gate.release()
	tm.Type("r")
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "completed  6/6")
	finish(t, tm)
	d = getPlan(t, engine, "report")
	if want := "fetch:Completed parse:Completed enrich:Completed merge:Completed publish:Completed notify:Completed"; d.Status != "completed" || statuses(d) != want {
		t.Errorf("after the resume: %s %s", d.Status, statuses(d))
	}
	if d.Settings == nil || d.Settings.MaxConcurrent != 1 {
		t.Errorf("the resume did not keep the run's settings: %+v", d.Settings)
	}
}

// TestPlansAbortPolicy: the default policy stops at the failure.
func TestPlansAbortPolicy(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "task.fail"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	// The plan's own failure line: the plan reloaded after the run (the
	// keys below follow it), not only the list and the status line.
	waitFor(t, tm, "Plan report aborted: 2 of 6 completed, 1 failed in 3.0s; x or t/s/m go on.", "✗ aborted", "✗ task.fail: fail",
		"aborted    2/6") // the list's line, which the keys below follow
	m := finish(t, tm)
	if view := m.View(); !strings.Contains(view, "✗ enrich") || !strings.Contains(view, "✗ task.fail: fail") {
		t.Errorf("the failure does not show:\n%s", view)
	}
	// What works without a model comes first (issue 14): not replan.
	var first []string
	for _, k := range plansOf(m).Keys()[:3] {
		first = append(first, k.Help().Key+" "+k.Help().Desc)
	}
	if got := strings.Join(first, " · "); got != "x with a policy · r resume · enter subtasks (t retry, s skip, m done)" {
		t.Errorf("the first keys for an aborted plan: %s", got)
	}
}

// Issue 14: without a model, d says a model is needed before a goal is
// typed for nothing, and offers the ways that work.
func TestPlansDecomposeWithoutModelSaysSoFirst(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No plans yet.")
	tm.Type("d")
	waitFor(t, tm, "Decompose a goal into a plan", "This needs a language model", "--llm ollama", "f reads a plan from a YAML file")
	m := finish(t, tm)
	p := plansOf(m)
	if p.prompt.kind != promptNoModel || !p.Capturing() || strings.Contains(m.View(), "goal: ") {
		t.Errorf("prompt %d: want the note, no goal line", p.prompt.kind)
	}
	press(m, "f")
	if p.prompt.kind != promptFile {
		t.Errorf("f opened prompt %d, want the file line", p.prompt.kind)
	}
	press(m, "esc")
	if p.Capturing() {
		t.Error("esc did not close it")
	}
	if res := string(do(t, engine, "plan.list", "", "")); res != `{"plans":[]}` {
		t.Errorf("a plan was stored: %s", res)
	}
}

func TestPlansCreateFromYAMLFile(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	path := filepath.Join(t.TempDir(), "garden.yaml")
	yaml := `id: garden
goal: Plant the garden
subtasks:
  - id: dig
    description: Dig the beds
    action: {name: noop}
  - id: sow
    dependencies: [dig]
    action: {name: noop}
  - id: water
    dependencies: [sow]
    action: {name: noop}
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No plans yet.")
	// A file that is not there says so, and the line stays to fix it.
	tm.Type("f")
	waitFor(t, tm, "Create a plan from a YAML file")
	tm.Type(path + ".missing")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✗ ValidationError: file: cannot read")
	for range len(".missing") {
		keys(tm, tea.KeyBackspace)
	}
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Created plan garden: 3 subtasks; x executes it.", "garden · Plant the garden", "← sow")
	m := finish(t, tm)
	p := plansOf(m)
	if p.currentID() != "garden" || p.prompt.kind != promptNone {
		t.Errorf("on %q with prompt %d, want garden and no prompt", p.currentID(), p.prompt.kind)
	}
	if d := getPlan(t, engine, "garden"); d.Goal != "Plant the garden" || len(d.Subtasks) != 3 {
		t.Errorf("stored %+v", d)
	}
}

func TestPlansReplanWithoutModel(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	seedPlans(t, engine, clk, work(1500))
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	tm.Type("p")
	waitFor(t, tm, "✗ replan report: LLMError: plan.replan needs a language model")
	m := finish(t, tm)
	if p := plansOf(m); !p.notice.isErr || !strings.Contains(p.notice.text, "write the plan yourself with plan.create") {
		t.Errorf("notice %q", p.notice.text)
	}
	if d := getPlan(t, engine, "report"); d.ReplanCount != 0 || len(d.Subtasks) != 6 {
		t.Errorf("the plan changed: %+v", d)
	}
}

// TestPlansFollowOtherRuns: a plan created and run elsewhere (the palette,
// another client of the engine) shows as it goes, and c cancels it there.
func TestPlansFollowOtherRuns(t *testing.T) {
	t.Parallel()
	engine, _, gate := newPlanEngine(t)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "No plans yet.")
	createReport(t, engine, `{"name": "test.gate"}`)
	waitFor(t, tm, "1 plan", "report · Publish the weekly report")
	done := make(chan error, 1)
	go func() {
		_, err := conn.Call(context.Background(), engine, planner.ActionPlanExecute, planner.ExecuteArgs{PlanID: "report", MaxConcurrent: 1})
		done <- err
	}()
	gate.waitEntered(t)
	waitFor(t, tm, "2 of 6 completed · 1 running", "1 running")
	// c stops it through the planner (plan.cancel): the pane does not own it.
	tm.Type("c")
	waitFor(t, tm, "Cancel plan report?")
	tm.Type("y")
	waitFor(t, tm, "Cancelling report…", "cancelled  2/6")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := getPlan(t, engine, "report"); d.Status != "cancelled" {
		t.Fatalf("after c: %s", d.Status)
	}
	gate.release()
	tm.Type("r")
	waitFor(t, tm, "Plan report completed: 6 of 6 completed", "6 of 6 completed")
	finish(t, tm)
}

// --- sizes ---

// TestPlansFitsEveryState: every state of the pane (list, walking the
// subtasks, the run's choices, the goal and file lines, a run held midway)
// is exactly the terminal's size at 80x24, 100x30 and 200x60 (list and plan
// side by side), and smaller.
func TestPlansFitsEveryState(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	gate.waitEntered(t)
	waitFor(t, tm, "2 of 6 completed · 1 running")
	m := finish(t, tm)
	p := plansOf(m)
	p.setNotice("report", "replan report: LLMError: plan.decompose needs a language model: start engram with --llm ollama or --llm openai (and --model NAME), or write the plan yourself with plan.create", true)
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 100, Height: 30}, {Width: 200, Height: 60}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		check := func(state string) {
			t.Helper()
			view := m.View()
			checkScreen(t, fmt.Sprintf("%dx%d %s", size.Width, size.Height, state), view, size.Width, size.Height)
			if size.Width >= 80 && !p.Capturing() && !m.help.ShowAll && !strings.Contains(lastLine(view), "q quit") {
				t.Errorf("%dx%d %s: the footer lost q quit: %q", size.Width, size.Height, state, lastLine(view))
			}
		}
		check("list, mid-run")
		press(m, "enter", "right", "down", "right", "right")
		check("walking")
		press(m, "?")
		check("walking, full help")
		press(m, "?", "esc", "x")
		check("run choices")
		press(m, "esc", "d")
		check("no model: the note")
		p.prompt.offline = false
		press(m, "esc", "d", "Plan the offsite")
		check("goal line")
		p.prompt.offline = true
		p.prompt.err = "LLMError: plan.decompose needs a language model: start engram with --llm ollama or --llm openai (and --model NAME), or write the plan yourself with plan.create"
		check("goal line with an error")
		press(m, "esc", "f", "/tmp/nowhere.yaml")
		check("file line")
		press(m, "esc", "c")
		check("cancel question")
		press(m, "n")
		p.prompt.kind, p.prompt.step = promptNote, "enrich"
		check("note line")
		p.closePrompt()
		press(m, "esc", "right", "right", "right")
		check("stages scrolled")
		press(m, "left", "left", "left", "down")
		check("the other plan")
		press(m, "up")
	}
}

// --- units ---

// TestPlanDAGStages: a subtask's stage is its longest chain of
// dependencies, whatever the plan's order; within a stage, plan order.
func TestPlanDAGStages(t *testing.T) {
	t.Parallel()
	d := &planner.Plan{ID: "x", Subtasks: []*planner.Subtask{
		{ID: "e", Dependencies: []string{"d", "a"}},
		{ID: "a"},
		{ID: "d", Dependencies: []string{"b", "c"}},
		{ID: "c", Dependencies: []string{"a"}},
		{ID: "b", Dependencies: []string{"a"}},
		{ID: "z"},
		{ID: "y", Dependencies: []string{"z", "missing"}},
	}}
	g := newPlanDAG(d)
	var got []string
	for _, col := range g.stages {
		var ids []string
		for _, s := range col {
			ids = append(ids, s.ID)
		}
		got = append(got, strings.Join(ids, ","))
	}
	if want := "a,z | c,b,y | d | e"; strings.Join(got, " | ") != want {
		t.Errorf("stages %q, want %q", strings.Join(got, " | "), want)
	}
	if fmt.Sprint(g.dependents["a"]) != "[e c b]" {
		t.Errorf("dependents of a: %v", g.dependents["a"])
	}
	// A cycle (which the planner refuses) is drawn, not looped on.
	cyc := newPlanDAG(&planner.Plan{Subtasks: []*planner.Subtask{{ID: "p", Dependencies: []string{"q"}}, {ID: "q", Dependencies: []string{"p"}}}})
	if len(cyc.stages) == 0 {
		t.Error("a cyclic plan has no stages")
	}
}

// TestPlansSpinnerTicksOnlyWhileRunning: the spinner's ticks go on while
// something runs and stop when nothing does.
func TestPlansSpinnerTicksOnlyWhileRunning(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(engine, &styles, false)
	p.SetSize(goldenWidth, 20)
	p.Focus()
	tick := func() tea.Msg { return p.spinner.Tick() }
	if cmd := p.Update(tick()); cmd != nil {
		t.Error("the spinner ticks with nothing running")
	}
	p.runs["report"] = &planRun{req: 1, verb: "execute", cancel: func() {}}
	if p.tick() == nil {
		t.Error("no tick to start the spinner with a run in flight")
	}
	before := p.spinner.View()
	if cmd := p.Update(tick()); cmd == nil || p.spinner.View() == before {
		t.Error("the spinner did not turn while a run is in flight")
	}
	p.Blur()
	if p.tick() != nil {
		t.Error("the spinner ticks on a hidden tab")
	}
	delete(p.runs, "report")
	p.Focus()
	if cmd := p.Update(tick()); cmd != nil {
		t.Error("the spinner ticks on after the run")
	}
}

// TestPlansNeutralisesControlCharacters: goals, ids and errors come from
// outside; none of them can drive the terminal.
func TestPlansNeutralisesControlCharacters(t *testing.T) {
	t.Parallel()
	engine, _, _ := newPlanEngine(t)
	styles := DefaultStyles()
	p := newPlansPane(engine, &styles, false)
	p.SetSize(goldenWidth, 20)
	hostile := "x\x1b]0;PWNED\x07\x1b[2Jy\nz"
	now := goldenTime
	p.list.loaded = true
	p.list.plans = []planner.PlanSummary{{ID: "evil" + hostile, Goal: hostile, Status: "aborted", Progress: planner.Counts{Total: 1}}}
	p.list.cursor.setLen(len(p.list.plans))
	p.plan.docs["evil"+hostile] = &planner.Plan{ID: "evil" + hostile, Goal: hostile, Status: "aborted", Subtasks: []*planner.Subtask{
		{ID: "s" + hostile, Status: planner.Failed, Error: hostile, Dependencies: []string{hostile}, StartedAt: &now, FinishedAt: &now,
			Action: &planner.ActionSpec{Name: "task.fail", Args: json.RawMessage(`{"message": "` + strings.ReplaceAll(hostile, "\x1b", `\u001b`) + `"}`)}},
	}}
	p.setNotice("evil"+hostile, hostile, true)
	for _, walking := range []bool{false, true} {
		p.plan.walking, p.plan.step = walking, "s"+hostile
		view := p.View()
		checkScreen(t, "hostile plan", view, goldenWidth, 20)
		for _, r := range view {
			if r != '\n' && unicode.IsControl(r) {
				t.Fatalf("the view holds control character %U:\n%q", r, view)
			}
		}
	}
}

// Issue 14, bug 7: a plan cancelled, left alone, then resumed shows the
// time its subtasks ran, and the wall time apart: fetch and parse run 3 s,
// the plan waits 10 s cancelled, the rest runs 1.6 s.
func TestPlansRunTimeLeavesOutTheIdleTimeBetweenRuns(t *testing.T) {
	t.Parallel()
	engine, clk, gate := newPlanEngine(t)
	seedPlans(t, engine, clk, `{"name": "test.gate"}`)
	tm := startPlans(t, engine, goldenWidth, goldenHeight)
	waitFor(t, tm, "[4 Plans]", "stage 4")
	execute(t, tm, 0, "1")
	gate.waitEntered(t)
	tm.Type("c")
	waitFor(t, tm, "Cancel plan report?")
	tm.Type("y")
	// The list's line too: r resumes only a plan the list says is not running.
	waitFor(t, tm, "Plan report cancelled: 2 of 6 completed in 3.0s; r resumes it.", "cancelled  2/6")
	clk.Advance(10 * time.Second)
	gate.release()
	tm.Type("r")
	waitFor(t, tm, "Plan report completed: 6 of 6 completed in 4.6s (14s wall).", "6 of 6 completed · 4.6s run · 14s wall")
	finish(t, tm)
}

// planElapsed counts overlapping subtasks once, a running one up to now,
// and the gaps between runs only in the wall time (issue 14, bug 7).
func TestPlanElapsedSeparatesRunTimeFromWallTime(t *testing.T) {
	t.Parallel()
	at := func(s int) *time.Time { v := goldenTime.Add(time.Duration(s) * time.Second); return &v }
	d := &planner.Plan{Subtasks: []*planner.Subtask{
		{ID: "a", Status: planner.Completed, StartedAt: at(0), FinishedAt: at(4)},
		{ID: "b", Status: planner.Completed, StartedAt: at(1), FinishedAt: at(3)}, // beside a
		{ID: "c", Status: planner.Pending, StartedAt: at(5)},                      // cancelled: no span
		{ID: "d", Status: planner.Completed, StartedAt: at(20), FinishedAt: at(22)},
		{ID: "e", Status: planner.InProgress, StartedAt: at(22)},
		{ID: "f", Status: planner.Pending},
	}}
	got, ok := planElapsed(d, *at(25))
	if want := (planTimes{run: 9 * time.Second, wall: 25 * time.Second}); !ok || got != want {
		t.Errorf("planElapsed = %+v, want %+v", got, want)
	}
	if s := got.String(); s != "9.0s run · 25s wall" {
		t.Errorf("shown as %q", s)
	}
	if s := (planTimes{run: 1500 * time.Millisecond, wall: 1520 * time.Millisecond}).sentence(); s != "in 1.5s" {
		t.Errorf("times that read the same show once: %q", s)
	}
	if _, ok := planElapsed(&planner.Plan{Subtasks: []*planner.Subtask{{ID: "a", Status: planner.Pending}}}, *at(0)); ok {
		t.Error("a plan that never ran has times")
	}
}
