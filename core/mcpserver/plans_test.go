//go:build !noplanning

package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

// hold is an action the test holds: test.hold waits until the test lets
// it go, or its context ends.
type hold struct {
	entered chan struct{}
	release chan struct{}
}

// addHold registers test.hold on e.
func addHold(t *testing.T, e *core.Engine) *hold {
	t.Helper()
	h := &hold{entered: make(chan struct{}, 16), release: make(chan struct{})}
	action.Register(e.Env().Actions, action.Spec{Name: "test.hold", Summary: "Wait until the test lets go"},
		func(ctx context.Context, _ action.Call, _ struct{}) (map[string]bool, error) {
			h.entered <- struct{}{}
			select {
			case <-h.release:
				return map[string]bool{"held": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	t.Cleanup(h.letGo) // before the server closes and the engine with it
	return h
}

// letGo releases every held action, now and later.
func (h *hold) letGo() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// createPlan creates a plan through create_plan.
func createPlan(t *testing.T, cs *mcp.ClientSession, args map[string]any) PlanStatusOutput {
	t.Helper()
	var out PlanStatusOutput
	if res := callTool(t, cs, "create_plan", args, &out); res.IsError {
		t.Fatalf("create_plan: %v", toolErr(t, res))
	}
	return out
}

// planAs reads plan id directly from the engine as agent.
func planAs(t *testing.T, e *core.Engine, agent, id string) *planner.Plan {
	t.Helper()
	res, err := conn.CallAs(t.Context(), e, conn.Request{Principal: agent}, planner.ActionPlanGet, planner.PlanArgs{PlanID: id})
	if err != nil {
		t.Fatalf("plan.get %s as %s: %v", id, agent, err)
	}
	return res.Plan
}

// plansOf lists the plans agent may read, straight from the engine.
func plansOf(t *testing.T, e *core.Engine, agent string) []planner.PlanSummary {
	t.Helper()
	res, err := conn.CallAs(t.Context(), e, conn.Request{Principal: agent}, planner.ActionPlanList, planner.ListArgs{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Plans
}

// chain is a plan of three task.noop subtasks, each after the one before.
var chain = map[string]any{"id": "chain", "goal": "Do three things in turn", "subtasks": []map[string]any{
	{"id": "a", "action": map[string]any{"name": "task.noop"}},
	{"id": "b", "dependencies": []string{"a"}, "action": map[string]any{"name": "task.noop"}},
	{"id": "c", "dependencies": []string{"b"}, "action": map[string]any{"name": "state.set", "args": map[string]any{"key": "done", "value": true}}},
}}

func TestCreatePlanStoresTheSubtasksAsWritten(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	out := createPlan(t, cs, chain)
	if out.PlanID != "chain" || out.Goal != "Do three things in turn" || out.Status != "pending" || out.Strategy != "manual" ||
		out.Progress.Total != 3 || out.Progress.Pending != 3 || len(out.Subtasks) != 3 {
		t.Fatalf("plan = %+v", out)
	}
	c := out.Subtasks[2]
	if c.ID != "c" || c.Action != "state.set" || !slices.Equal(c.Dependencies, []string{"b"}) || c.Status != planner.Pending {
		t.Errorf("subtask c = %+v", c)
	}
	p := planAs(t, e, "alice", "chain")
	if len(p.Subtasks) != 3 || string(p.Subtasks[2].Action.Args) != `{"key":"done","value":true}` {
		t.Errorf("stored plan = %+v", p)
	}
}

func TestCreatePlanFromAGoalIdUsesTheGoalsTitle(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Make breakfast"})
	out := createPlan(t, cs, map[string]any{"goal_id": g.ID, "subtasks": []map[string]any{{"id": "toast", "action": map[string]any{"name": "task.noop"}}}})
	if out.Goal != "Make breakfast" {
		t.Errorf("plan goal = %q; want the goal's title", out.Goal)
	}
}

func TestCreatePlanFromAGoalAloneAsksTheModel(t *testing.T) {
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(testTime), IDSeed: "mcp",
		LLM: llmtest.New(`{"subtasks": [{"id": "s1", "description": "boil water"}, {"id": "s2", "description": "brew", "dependencies": ["s1"]}]}`)}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	e, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	out := createPlan(t, cs, map[string]any{"goal": "Make tea", "id": "tea"})
	if out.PlanID != "tea" || out.Strategy != "flat" || len(out.Subtasks) != 2 || out.Subtasks[1].Description != "brew" ||
		!slices.Equal(out.Subtasks[1].Dependencies, []string{"s1"}) {
		t.Errorf("decomposed plan = %+v", out)
	}
}

func TestCreatePlanWithoutAModelAsksForSubtasks(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	te := wantToolError(t, callTool(t, cs, "create_plan", map[string]any{"goal": "Make tea"}, nil), errs.LLM, "subtasks")
	if te.Details["field"] != "subtasks" {
		t.Errorf("details = %v; want field subtasks", te.Details)
	}
	if plans := plansOf(t, e, "alice"); len(plans) != 0 {
		t.Errorf("plans stored: %+v", plans)
	}
}

func TestCreatePlanRefusesBadInputAndStoresNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	noop := map[string]any{"name": "task.noop"}
	for _, c := range []struct {
		name     string
		args     map[string]any
		kind     errs.Kind
		mentions string
	}{
		{"no goal", map[string]any{"subtasks": []map[string]any{{"id": "a", "action": noop}}}, errs.Validation, "goal"},
		{"subtasks of the wrong type", map[string]any{"goal": "g", "subtasks": "a then b"}, errs.Validation, "subtasks"},
		{"subtask without id", map[string]any{"goal": "g", "subtasks": []map[string]any{{"description": "x"}}}, errs.Validation, "id"},
		{"unknown dependency", map[string]any{"goal": "g", "subtasks": []map[string]any{{"id": "a", "dependencies": []string{"zz"}, "action": noop}}}, errs.Validation, "zz"},
		{"a cycle", map[string]any{"goal": "g", "subtasks": []map[string]any{{"id": "a", "dependencies": []string{"b"}, "action": noop}, {"id": "b", "dependencies": []string{"a"}, "action": noop}}}, errs.CyclicDependency, "a → b → a"},
		{"unknown goal id", map[string]any{"goal_id": "no-goal", "subtasks": []map[string]any{{"id": "a", "action": noop}}}, errs.NotFound, "no-goal"},
		{"strategy with subtasks", map[string]any{"goal": "g", "strategy": "flat", "subtasks": []map[string]any{{"id": "a", "action": noop}}}, errs.Validation, "strategy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantToolError(t, callTool(t, cs, "create_plan", c.args, nil), c.kind, c.mentions)
		})
	}
	if plans := plansOf(t, e, "alice"); len(plans) != 0 {
		t.Errorf("plans stored after failed calls: %+v", plans)
	}
}

func TestRunPlanAnswersBeforeThePlanFinishes(t *testing.T) {
	e := newEngine(t)
	h := addHold(t, e)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	createPlan(t, cs, map[string]any{"id": "held", "goal": "Wait for the test", "subtasks": []map[string]any{
		{"id": "hold", "action": map[string]any{"name": "test.hold"}},
		{"id": "after", "dependencies": []string{"hold"}, "action": map[string]any{"name": "task.noop"}},
	}})
	finished := e.SubscribeAs(t.Context(), "alice", planner.EventPlanFinished.Name())

	var started PlanStatusOutput
	if res := callTool(t, cs, "run_plan", map[string]any{"plan_id": "held"}, &started); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	// The call answered while test.hold still holds the first subtask.
	if started.PlanID != "held" || started.Status != "running" || started.Subtasks[0].Status != planner.InProgress ||
		started.Subtasks[1].Status != planner.Pending {
		t.Fatalf("run_plan answered %+v; want the plan running, hold in progress", started)
	}
	var status PlanStatusOutput
	callTool(t, cs, "plan_status", map[string]any{"plan_id": "held"}, &status)
	if status.Status != "running" || status.Progress.Running != 1 || status.Progress.Completed != 0 {
		t.Fatalf("plan_status while held = %+v", status)
	}
	// A second run of a running plan is refused.
	wantToolError(t, callTool(t, cs, "run_plan", map[string]any{"plan_id": "held"}, nil), errs.Conflict, "already running")

	h.letGo()
	select {
	case <-finished:
	case <-time.After(waitLimit):
		t.Fatal("the plan never finished")
	}
	callTool(t, cs, "plan_status", map[string]any{"plan_id": "held"}, &status)
	if status.Status != "completed" || status.Progress.Completed != 2 || len(status.Failures) != 0 {
		t.Fatalf("plan_status after the run = %+v", status)
	}
	if held, ok := status.Subtasks[0].Result.(map[string]any); !ok || held["held"] != true {
		t.Errorf("hold's result = %v", status.Subtasks[0].Result)
	}
}

func TestRunPlanWithWaitSendsProgressAsSubtasksFinish(t *testing.T) {
	e := newEngine(t)
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	cs := connectWith(t, newServer(t, e, Options{Agent: "alice"}), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params }})
	createPlan(t, cs, chain)
	params := &mcp.CallToolParams{Name: "run_plan", Arguments: map[string]any{"plan_id": "chain", "wait": true}}
	params.SetProgressToken("run-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatal(toolErr(t, res))
	}
	var done PlanStatusOutput
	decode(t, res, &done)
	if done.Status != "completed" || done.Progress.Completed != 3 {
		t.Fatalf("run_plan with wait = %+v; want the plan completed", done)
	}
	for want := 1; want <= 3; want++ {
		select {
		case p := <-progress:
			if p.ProgressToken != "run-1" || p.Progress != float64(want) || p.Total != 3 || p.Message == "" {
				t.Errorf("progress %d = %+v", want, p)
			}
		case <-time.After(waitLimit):
			t.Fatalf("progress notification %d never came", want)
		}
	}
	if p := planAs(t, e, "alice", "chain"); p.Status != "completed" {
		t.Errorf("stored plan status %s", p.Status)
	}
}

func TestRunPlanReportsAFailedSubtask(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	createPlan(t, cs, map[string]any{"id": "flaky", "goal": "Fail once", "subtasks": []map[string]any{
		{"id": "f", "action": map[string]any{"name": "task.fail", "args": map[string]any{"message": "boom"}}},
	}})
	var out PlanStatusOutput
	if res := callTool(t, cs, "run_plan", map[string]any{"plan_id": "flaky", "wait": true, "on_subtask_failure": "abort"}, &out); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	if out.Status == "completed" || len(out.Failures) != 1 || out.Failures[0].Subtask != "f" || out.Failures[0].Attempts != 1 {
		t.Errorf("run = %+v; want f failed", out)
	}
}

func TestRunPlanRefusesBadInputAndRunsNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	createPlan(t, cs, chain)
	for _, c := range []struct {
		name     string
		args     map[string]any
		kind     errs.Kind
		mentions string
	}{
		{"missing plan_id", map[string]any{}, errs.Validation, "plan_id"},
		{"wait of the wrong type", map[string]any{"plan_id": "chain", "wait": "yes"}, errs.Validation, "wait"},
		{"unknown plan", map[string]any{"plan_id": "nope"}, errs.NotFound, "nope"},
		{"unknown failure policy", map[string]any{"plan_id": "chain", "on_subtask_failure": "shrug"}, errs.Validation, "on_subtask_failure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantToolError(t, callTool(t, cs, "run_plan", c.args, nil), c.kind, c.mentions)
		})
	}
	if p := planAs(t, e, "alice", "chain"); p.Status != "pending" || p.Count().Pending != 3 {
		t.Errorf("plan after failed runs = %s %+v", p.Status, p.Count())
	}
}

func TestAnAgentCannotSeeOrRunAnotherAgentsPlan(t *testing.T) {
	e := newEngine(t)
	_, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, planner.ActionPlanCreate, planner.CreateArgs{ID: "bobs", Goal: "bob's plan",
		Subtasks: []planner.SubtaskInput{{ID: "a", Action: &planner.ActionSpec{Name: "task.noop"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	for _, tool := range []string{"plan_status", "run_plan"} {
		te := toolErr(t, callTool(t, cs, tool, map[string]any{"plan_id": "bobs"}, nil))
		if te.Kind != errs.Permission && te.Kind != errs.NotFound {
			t.Errorf("%s of bob's plan = %s: %s; want a PermissionError or NotFoundError", tool, te.Kind, te.Message)
		}
	}
	if p := planAs(t, e, "bob", "bobs"); p.Status != "pending" {
		t.Errorf("bob's plan ran: %s", p.Status)
	}
}

func TestPlanStatusOfAnUnknownPlanIsNotFound(t *testing.T) {
	cs := connect(t, newServer(t, newEngine(t), Options{Agent: "alice"}))
	wantToolError(t, callTool(t, cs, "plan_status", map[string]any{"plan_id": "nope"}, nil), errs.NotFound, "nope")
	wantToolError(t, callTool(t, cs, "plan_status", map[string]any{}, nil), errs.Validation, "plan_id")
}

func TestClosingTheServerCancelsTheRunItStarted(t *testing.T) {
	e := newEngine(t)
	h := addHold(t, e)
	s := New(e, Options{Agent: "alice"})
	cs := connect(t, s)
	createPlan(t, cs, map[string]any{"id": "held", "goal": "Wait", "subtasks": []map[string]any{{"id": "hold", "action": map[string]any{"name": "test.hold"}}}})
	if res := callTool(t, cs, "run_plan", map[string]any{"plan_id": "held"}, nil); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	<-h.entered
	s.Close() // returns once the run has stopped
	if p := planAs(t, e, "alice", "held"); p.Status != "cancelled" {
		t.Errorf("plan after Close = %s; want cancelled (plan.resume continues it)", p.Status)
	}
}

// decode decodes a successful call's structured content into out.
func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

func TestPlanStatusCountsARetriedSubtasksRetries(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	createPlan(t, cs, map[string]any{"id": "retried", "goal": "Succeed the second time", "subtasks": []map[string]any{
		{"id": "f", "action": map[string]any{"name": "task.fail", "args": map[string]any{"times": 1}}},
	}})
	if res := callTool(t, cs, "run_plan", map[string]any{"plan_id": "retried", "wait": true, "on_subtask_failure": "retry", "max_retries": 2}, nil); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	var status PlanStatusOutput
	callTool(t, cs, "plan_status", map[string]any{"plan_id": "retried"}, &status)
	f := status.Subtasks[0]
	if status.Status != "completed" || f.Status != planner.Completed || f.Attempts != 2 || f.Retries != 1 || len(status.Failures) != 0 {
		t.Errorf("status = %+v; want f completed on its second attempt, one retry", status)
	}
}

func TestCreatePlanCannotUseAnotherAgentsGoal(t *testing.T) {
	e := newEngine(t)
	bobs, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"bob's secret"`)}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	te := toolErr(t, callTool(t, cs, "create_plan", map[string]any{"goal_id": bobs.Item.ID,
		"subtasks": []map[string]any{{"id": "a", "action": map[string]any{"name": "task.noop"}}}}, nil))
	if te.Kind != errs.Permission && te.Kind != errs.NotFound {
		t.Errorf("create_plan from bob's goal = %s: %s; want a PermissionError or NotFoundError", te.Kind, te.Message)
	}
	if plans := plansOf(t, e, "alice"); len(plans) != 0 {
		t.Errorf("plans stored: %+v", plans)
	}
}

func TestPlanStatusRefusesAPlanIdOfTheWrongType(t *testing.T) {
	cs := connect(t, newServer(t, newEngine(t), Options{Agent: "alice"}))
	wantToolError(t, callTool(t, cs, "plan_status", map[string]any{"plan_id": 7}, nil), errs.Validation, "plan_id")
}

func TestAWaitingRunPlanLeavesTheSessionFreeForOtherCalls(t *testing.T) {
	e := newEngine(t)
	h := addHold(t, e)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	createPlan(t, cs, map[string]any{"id": "held", "goal": "Wait for the test", "subtasks": []map[string]any{
		{"id": "hold", "action": map[string]any{"name": "test.hold"}},
	}})
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_plan", Arguments: map[string]any{"plan_id": "held", "wait": true}})
		if err != nil {
			t.Error(err)
		}
		answered <- res
	}()
	select {
	case <-h.entered:
	case <-time.After(waitLimit):
		t.Fatal("the plan never started")
	}
	// The same session calls plan_status while run_plan waits.
	var status PlanStatusOutput
	callTool(t, cs, "plan_status", map[string]any{"plan_id": "held"}, &status)
	if status.Status != "running" {
		t.Errorf("plan_status during a waiting run_plan = %s; want running", status.Status)
	}
	select {
	case res := <-answered:
		t.Fatalf("run_plan with wait answered before the plan ended: %+v", res)
	default:
	}
	h.letGo()
	select {
	case res := <-answered:
		var out PlanStatusOutput
		decode(t, res, &out)
		if out.Status != "completed" {
			t.Errorf("run_plan with wait = %+v; want completed", out)
		}
	case <-time.After(waitLimit):
		t.Fatal("run_plan with wait never answered")
	}
}
