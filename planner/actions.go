//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
)

// Subsystem is the planner as a part of the engine (main adds it).
func Subsystem(opts Options) func(env *kit.Env) error {
	return func(env *kit.Env) error {
		Register(env, opts)
		return nil
	}
}

// Register adds the plan.*, state.* and task.* actions to env.
func Register(env *kit.Env, opts Options) *Planner {
	pl := New(env, opts)
	reg := env.Actions
	action.Register(reg, action.Spec{Name: "plan.create", Summary: "Write a plan by hand (or from a YAML file)"}, pl.actCreate)
	action.Register(reg, action.Spec{Name: "plan.decompose", Summary: "Ask the model to break a goal into a plan (flat, hierarchical, iterative)"}, pl.actDecompose)
	action.Register(reg, action.Spec{Name: "plan.validate", Summary: "Check a plan is a DAG and give its execution order", ReadOnly: true}, pl.actValidate)
	action.Register(reg, action.Spec{Name: "plan.get", Summary: "A plan with its subtasks (live while it runs)", ReadOnly: true}, pl.actGet)
	action.Register(reg, action.Spec{Name: "plan.list", Summary: "Every plan, newest first, with its progress", ReadOnly: true}, pl.actList)
	action.Register(reg, action.Spec{Name: "plan.execute", Summary: "Run a plan: dependency order, parallel where possible, failures per policy"}, pl.actExecute)
	action.Register(reg, action.Spec{Name: "plan.resume", Summary: "Run a plan again from its checkpoint, skipping what completed"}, pl.actResume)
	action.Register(reg, action.Spec{Name: "plan.cancel", Summary: "Stop a running plan (resume continues it)"}, pl.actCancel)
	action.Register(reg, action.Spec{Name: "plan.replan", Summary: "Replace a plan's unfinished subtasks with new ones from the model"}, pl.actReplan)
	action.Register(reg, action.Spec{Name: "plan.status", Summary: "A plan's counts per status, and its subtasks if asked", ReadOnly: true}, pl.actStatus)
	action.Register(reg, action.Spec{Name: "state.set", Summary: "In a plan subtask: set a key of the run's state", ReadOnly: true}, pl.actStateSet)
	action.Register(reg, action.Spec{Name: "state.incr", Summary: "In a plan subtask: add to a number in the run's state", ReadOnly: true}, pl.actStateIncr)
	action.Register(reg, action.Spec{Name: "state.get", Summary: "In a plan subtask: read the run's state", ReadOnly: true}, pl.actStateGet)
	action.Register(reg, action.Spec{Name: "task.sleep", Summary: "Wait (a plan step that takes time)", ReadOnly: true}, pl.actSleep)
	action.Register(reg, action.Spec{Name: "task.fail", Summary: "Fail the first n attempts (a plan step for testing failure policies)", ReadOnly: true}, pl.actFail)
	action.Register(reg, action.Spec{Name: "task.noop", Summary: "Do nothing (a plan step that only groups others)", ReadOnly: true}, pl.actNoop)
	env.AddCounter("planner", pl.counts)
	return pl
}

func (pl *Planner) actCreate(ctx context.Context, call action.Call, a CreateRequest) (map[string]*Plan, error) {
	p, err := pl.Create(ctx, call, a)
	return map[string]*Plan{"plan": p}, err
}

type decomposeArgs struct {
	Goal     string `json:"goal" arg:"required" help:"what to achieve"`
	Strategy string `json:"strategy,omitempty" help:"flat (default), hierarchical or iterative"`
	MaxDepth int    `json:"max_depth,omitempty" help:"for hierarchical plans: the deepest level kept (default 2; deeper ones are flattened)"`
	ID       string `json:"id,omitempty" help:"the plan's id (default: a new UUID)"`
}

func (pl *Planner) actDecompose(ctx context.Context, call action.Call, a decomposeArgs) (map[string]*Plan, error) {
	p, err := pl.Decompose(ctx, call, a.Goal, a.Strategy, a.MaxDepth, a.ID)
	return map[string]*Plan{"plan": p}, err
}

type validateArgs struct {
	PlanID   string         `json:"plan_id,omitempty" help:"a stored plan"`
	Subtasks []SubtaskInput `json:"subtasks,omitempty" help:"or subtasks to check without storing them"`
}

func (pl *Planner) actValidate(ctx context.Context, call action.Call, a validateArgs) (map[string][]string, error) {
	var p *Plan
	switch {
	case a.PlanID != "" && len(a.Subtasks) > 0:
		return nil, kit.Validation("plan_id", "give plan_id or subtasks, not both")
	case a.PlanID != "":
		var err error
		if p, err = pl.Get(a.PlanID); err != nil {
			return nil, err
		}
	default:
		p = &Plan{}
		for _, in := range a.Subtasks {
			p.Subtasks = append(p.Subtasks, &Subtask{ID: in.ID, Dependencies: in.Dependencies})
		}
	}
	order, err := p.Validate()
	return map[string][]string{"order": order}, err
}

type planArgs struct {
	PlanID string `json:"plan_id" arg:"required" help:"the plan"`
}

func (pl *Planner) actGet(ctx context.Context, call action.Call, a planArgs) (map[string]*Plan, error) {
	p, err := pl.Get(a.PlanID)
	return map[string]*Plan{"plan": p}, err
}

// planSummary is a plan in plan.list.
type planSummary struct {
	ID          string    `json:"id"`
	Goal        string    `json:"goal"`
	Strategy    string    `json:"strategy"`
	Status      string    `json:"status"`
	Progress    Counts    `json:"progress"`
	ReplanCount int       `json:"replan_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (pl *Planner) actList(ctx context.Context, call action.Call, _ struct{}) (map[string][]planSummary, error) {
	plans, err := pl.List()
	out := []planSummary{}
	for _, p := range plans {
		out = append(out, planSummary{ID: p.ID, Goal: p.Goal, Strategy: p.Strategy, Status: p.Status, Progress: p.Count(),
			ReplanCount: p.ReplanCount, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt})
	}
	return map[string][]planSummary{"plans": out}, err
}

type executeArgs struct {
	PlanID           string          `json:"plan_id" arg:"required" help:"the plan"`
	MaxConcurrent    int             `json:"max_concurrent,omitempty" help:"subtasks running at once (default 4; 1 runs them one by one)"`
	OnSubtaskFailure string          `json:"on_subtask_failure,omitempty" help:"abort (default), skip, retry or replan"`
	MaxRetries       int             `json:"max_retries,omitempty" help:"with retry: retries after the first attempt (default 3), waiting 100 ms, 200 ms, 400 ms..."`
	Fallback         string          `json:"fallback,omitempty" help:"with retry: what to do once the retries are spent: abort (default), skip or replan"`
	Checkpoint       json.RawMessage `json:"checkpoint,omitempty" help:"true (default): checkpoint in the store after every subtask; false: don't; a path: also write the checkpoint file there"`
}

func (pl *Planner) actExecute(ctx context.Context, call action.Call, a executeArgs) (ExecuteResult, error) {
	req := ExecuteRequest{MaxConcurrent: a.MaxConcurrent, OnSubtaskFailure: a.OnSubtaskFailure, MaxRetries: a.MaxRetries,
		Fallback: a.Fallback, Checkpoint: true}
	if len(a.Checkpoint) > 0 && string(a.Checkpoint) != "null" {
		var on bool
		var path string
		switch {
		case json.Unmarshal(a.Checkpoint, &on) == nil:
			req.Checkpoint = on
		case json.Unmarshal(a.Checkpoint, &path) == nil && path != "":
			req.CheckpointPath = path
		default:
			return ExecuteResult{}, kit.Validation("checkpoint", "must be true, false or a file path")
		}
	}
	return pl.Execute(ctx, call, a.PlanID, req)
}

func (pl *Planner) actResume(ctx context.Context, call action.Call, a planArgs) (ExecuteResult, error) {
	return pl.Resume(ctx, call, a.PlanID)
}

func (pl *Planner) actCancel(ctx context.Context, call action.Call, a planArgs) (map[string]bool, error) {
	if _, err := pl.Get(a.PlanID); err != nil {
		return nil, err
	}
	return map[string]bool{"cancelled": pl.Cancel(a.PlanID)}, nil
}

func (pl *Planner) actReplan(ctx context.Context, call action.Call, a planArgs) (map[string]*Plan, error) {
	p, err := pl.Replan(ctx, call, a.PlanID)
	return map[string]*Plan{"plan": p}, err
}

type statusArgs struct {
	PlanID           string `json:"plan_id" arg:"required" help:"the plan"`
	IncludeCompleted *bool  `json:"include_completed,omitempty" help:"list completed subtasks too (default true)"`
	IncludeDetails   bool   `json:"include_details,omitempty" help:"list the subtasks with their descriptions, results and errors"`
}

// statusResult is plan.status's answer.
type statusResult struct {
	PlanID string `json:"plan_id"`
	Status string `json:"status"`
	Counts
	Subtasks []statusSubtask `json:"subtasks"`
}

type statusSubtask struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"`
	Description string          `json:"description,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// actStatus counts per status in one pass, listing the subtasks (without
// the completed ones unless include_completed) with details if asked.
func (pl *Planner) actStatus(ctx context.Context, call action.Call, a statusArgs) (statusResult, error) {
	p, err := pl.Get(a.PlanID)
	if err != nil {
		return statusResult{}, err
	}
	withCompleted := a.IncludeCompleted == nil || *a.IncludeCompleted
	res := statusResult{PlanID: p.ID, Status: p.Status, Subtasks: []statusSubtask{}}
	for _, s := range p.Subtasks {
		switch s.Status {
		case Completed:
			res.Completed++
		case InProgress:
			res.InProgress++
		case Pending:
			res.Pending++
		case Failed:
			res.Failed++
		case Skipped:
			res.Skipped++
		}
		res.Total++
		if s.Status == Completed && !withCompleted {
			continue
		}
		st := statusSubtask{ID: s.ID, Status: s.Status, Attempts: s.Attempts}
		if a.IncludeDetails {
			st.Description, st.Result, st.Error = s.Description, s.Result, s.Error
		}
		res.Subtasks = append(res.Subtasks, st)
	}
	return res, nil
}

type stateSetArgs struct {
	Key   string          `json:"key" arg:"required" help:"the state key"`
	Value json.RawMessage `json:"value" arg:"required" help:"any JSON value"`
}

func inSubtask(ctx context.Context, name string) (*subtaskContext, error) {
	sc := subtaskOf(ctx)
	if sc == nil {
		return nil, errs.New(errs.Validation, "%s only works inside a plan subtask (its action), where there is a run state", name)
	}
	return sc, nil
}

func (pl *Planner) actStateSet(ctx context.Context, call action.Call, a stateSetArgs) (map[string]any, error) {
	sc, err := inSubtask(ctx, "state.set")
	if err != nil {
		return nil, err
	}
	var v any
	json.Unmarshal(a.Value, &v)
	sc.state[a.Key], sc.delta[a.Key] = v, deepCopy(v)
	return map[string]any{"key": a.Key, "value": v}, nil
}

type stateIncrArgs struct {
	Key string   `json:"key" arg:"required" help:"the state key (a number, or absent: 0)"`
	By  *float64 `json:"by,omitempty" help:"how much to add (default 1)"`
}

func (pl *Planner) actStateIncr(ctx context.Context, call action.Call, a stateIncrArgs) (map[string]any, error) {
	sc, err := inSubtask(ctx, "state.incr")
	if err != nil {
		return nil, err
	}
	by := 1.0
	if a.By != nil {
		by = *a.By
	}
	cur := 0.0
	if v, ok := sc.state[a.Key]; ok {
		n, isNum := v.(float64)
		if !isNum {
			return nil, kit.Validation("key", "state %q is not a number", a.Key)
		}
		cur = n
	}
	sc.state[a.Key], sc.delta[a.Key] = cur+by, cur+by
	return map[string]any{"key": a.Key, "value": cur + by}, nil
}

type stateGetArgs struct {
	Key string `json:"key,omitempty" help:"one key (default: the whole state)"`
}

func (pl *Planner) actStateGet(ctx context.Context, call action.Call, a stateGetArgs) (map[string]any, error) {
	sc, err := inSubtask(ctx, "state.get")
	if err != nil {
		return nil, err
	}
	if a.Key == "" {
		return map[string]any{"state": deepCopy(sc.state)}, nil
	}
	return map[string]any{"key": a.Key, "value": deepCopy(sc.state[a.Key])}, nil
}

type sleepArgs struct {
	Ms int `json:"ms" arg:"required" help:"milliseconds to wait"`
}

func (pl *Planner) actSleep(ctx context.Context, call action.Call, a sleepArgs) (map[string]int, error) {
	if a.Ms < 0 {
		return nil, kit.Validation("ms", "must be 0 or more")
	}
	if err := pl.sleep(ctx, time.Duration(a.Ms)*time.Millisecond); err != nil {
		return nil, errs.New(errs.Internal, "task.sleep interrupted: %w", err)
	}
	return map[string]int{"slept_ms": a.Ms}, nil
}

type failArgs struct {
	Times   int    `json:"times,omitempty" help:"how many attempts fail (default: all)"`
	Message string `json:"message,omitempty" help:"the failure's message"`
}

func (pl *Planner) actFail(ctx context.Context, call action.Call, a failArgs) (map[string]int, error) {
	attempt := 1
	if sc := subtaskOf(ctx); sc != nil {
		attempt = sc.attempt
	}
	if a.Times > 0 && attempt > a.Times {
		return map[string]int{"attempt": attempt}, nil
	}
	msg := a.Message
	if msg == "" {
		msg = "failing as asked"
	}
	return nil, errs.New(errs.Internal, "task.fail: %s (attempt %d)", msg, attempt)
}

func (pl *Planner) actNoop(ctx context.Context, call action.Call, _ struct{}) (map[string]bool, error) {
	return map[string]bool{"ok": true}, nil
}

// counts reports plans for engine.info.
func (pl *Planner) counts() (map[string]int, error) {
	plans, err := pl.List()
	if err != nil {
		return nil, err
	}
	out := map[string]int{"plans": len(plans), "running": 0}
	for _, p := range plans {
		if p.Status == "running" {
			out["running"]++
		}
	}
	return out, nil
}
