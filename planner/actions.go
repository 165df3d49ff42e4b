//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/engram-console/engram/core/access"
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
	ActionPlanCreate.Register(reg, action.Spec{Summary: "Write a plan by hand (or from a YAML file)", FileArgs: []string{"file"}}, pl.actCreate)
	ActionPlanDecompose.Register(reg, action.Spec{Summary: "Ask the model to break a goal into a plan (flat, hierarchical, iterative)"}, pl.actDecompose)
	ActionPlanValidate.Register(reg, action.Spec{Summary: "Check a plan is a DAG and give its execution order", ReadOnly: true}, pl.actValidate)
	ActionPlanGet.Register(reg, action.Spec{Summary: "A plan with its subtasks (live while it runs)", ReadOnly: true}, pl.actGet)
	ActionPlanList.Register(reg, action.Spec{Summary: "Every plan, newest first, with its progress", ReadOnly: true}, pl.actList)
	ActionPlanExecute.Register(reg, action.Spec{Summary: "Run a plan: dependency order, parallel where possible, failures per policy",
		FileArgs: []string{"checkpoint"}}, pl.actExecute)
	ActionPlanResume.Register(reg, action.Spec{Summary: "Run a plan again from its checkpoint, skipping what completed",
		FileArgs: []string{"checkpoint"}}, pl.actResume)
	ActionPlanCancel.Register(reg, action.Spec{Summary: "Stop a running plan (resume continues it)"}, pl.actCancel)
	ActionPlanReplan.Register(reg, action.Spec{Summary: "Replace a plan's unfinished subtasks with new ones from the model"}, pl.actReplan)
	ActionPlanStatus.Register(reg, action.Spec{Summary: "A plan's counts per status, and its subtasks if asked", ReadOnly: true}, pl.actStatus)
	ActionPlanDelete.Register(reg, action.Spec{Summary: "Delete a plan (not while it runs), readable or not"}, pl.actDelete)
	ActionPlanShare.Register(reg, action.Spec{Summary: "Grant an agent permissions on a plan"}, pl.actShare)
	ActionPlanRevoke.Register(reg, action.Spec{Summary: "Remove an agent's access to a plan"}, pl.actRevoke)
	ActionPlanSubtaskRetry.Register(reg, action.Spec{Summary: "Run a failed or skipped subtask again, then go on with the plan"}, pl.actSubtaskRetry)
	ActionPlanSubtaskSkip.Register(reg, action.Spec{Summary: "Skip a failed or pending subtask (and what depends on it), then go on with the plan"}, pl.actSubtaskSkip)
	ActionPlanSubtaskDone.Register(reg, action.Spec{Summary: "Mark a subtask done by hand, with a note, then go on with the plan"}, pl.actSubtaskDone)
	ActionStateSet.Register(reg, action.Spec{Summary: "In a plan subtask: set a key of the run's state", ReadOnly: true}, pl.actStateSet)
	ActionStateIncr.Register(reg, action.Spec{Summary: "In a plan subtask: add to a number in the run's state", ReadOnly: true}, pl.actStateIncr)
	ActionStateGet.Register(reg, action.Spec{Summary: "In a plan subtask: read the run's state", ReadOnly: true}, pl.actStateGet)
	ActionTaskSleep.Register(reg, action.Spec{Summary: "Wait (a plan step that takes time)", ReadOnly: true}, pl.actSleep)
	ActionTaskFail.Register(reg, action.Spec{Summary: "Fail the first n attempts (a plan step for testing failure policies)", ReadOnly: true}, pl.actFail)
	ActionTaskNoop.Register(reg, action.Spec{Summary: "Do nothing (a plan step that only groups others)", ReadOnly: true}, pl.actNoop)
	env.AddCounter("planner", pl.counts)
	env.AddHolder(func() (bool, error) { return kit.Holds(env.Store, planPrefix()) })
	env.AddChecker("planner", pl.checkStored)
	if env.Access != nil {
		env.Access.Register("plan", canRead)
	}
	pl.markInterrupted()
	return pl
}

func (pl *Planner) actCreate(ctx context.Context, call action.Call, a CreateArgs) (PlanResult, error) {
	p, err := pl.Create(ctx, call, a)
	return PlanResult{Plan: p}, err
}

func (pl *Planner) actDecompose(ctx context.Context, call action.Call, a DecomposeArgs) (PlanResult, error) {
	p, err := pl.Decompose(ctx, call, a.Goal, a.Strategy, a.MaxDepth, a.ID)
	return PlanResult{Plan: p}, err
}

func (pl *Planner) actValidate(ctx context.Context, call action.Call, a ValidateArgs) (ValidateResult, error) {
	var p *Plan
	switch {
	case a.PlanID != "" && len(a.Subtasks) > 0:
		return ValidateResult{}, kit.Validation("plan_id", "give plan_id or subtasks, not both")
	case a.PlanID != "":
		if _, err := pl.allow(ctx, call, a.PlanID, access.Read); err != nil {
			return ValidateResult{}, err
		}
		var err error
		if p, err = pl.Get(a.PlanID); err != nil {
			return ValidateResult{}, err
		}
	default:
		p = &Plan{}
		for _, in := range a.Subtasks {
			p.Subtasks = append(p.Subtasks, &Subtask{ID: in.ID, Dependencies: in.Dependencies})
		}
	}
	order, err := p.Validate()
	return ValidateResult{Order: order}, err
}

func (pl *Planner) actGet(ctx context.Context, call action.Call, a PlanArgs) (PlanResult, error) {
	acl, err := pl.allow(ctx, call, a.PlanID, access.Read)
	if err != nil {
		return PlanResult{}, err
	}
	p, err := pl.Get(a.PlanID)
	return PlanResult{Plan: redact(p, acl, call.Principal)}, err
}

func (pl *Planner) actList(ctx context.Context, call action.Call, _ ListArgs) (ListResult, error) {
	plans, unreadable, err := pl.List(call.Principal)
	out := []PlanSummary{}
	for _, p := range plans {
		out = append(out, p.Summary())
	}
	return ListResult{Plans: out, Unreadable: unreadable}, err
}

func (pl *Planner) actExecute(ctx context.Context, call action.Call, a ExecuteArgs) (ExecuteResult, error) {
	req := ExecuteRequest{MaxConcurrent: a.MaxConcurrent, OnSubtaskFailure: a.OnSubtaskFailure, MaxRetries: a.MaxRetries,
		Fallback: a.Fallback, Checkpoint: true, ProposedActions: a.ProposedActions, Approved: a.Approved, Fresh: a.Fresh}
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
	acl, err := pl.allow(ctx, call, a.PlanID, access.Write)
	if err != nil {
		return ExecuteResult{}, err
	}
	res, err := pl.Execute(ctx, call, a.PlanID, req)
	return ranResult(a.PlanID, acl, call.Principal, res, err)
}

func (pl *Planner) actResume(ctx context.Context, call action.Call, a ResumeArgs) (ExecuteResult, error) {
	acl, err := pl.allow(ctx, call, a.PlanID, access.Write)
	if err != nil {
		return ExecuteResult{}, err
	}
	res, err := pl.Resume(ctx, call, a.PlanID, ExecuteRequest{ProposedActions: a.ProposedActions, Approved: a.Approved})
	return ranResult(a.PlanID, acl, call.Principal, res, err)
}

// ranResult shows a run's outcome to the principal that ran it: the plan
// redacted for it, and the final state made of only the subtasks it may
// see. A plan that could not be decoded is named.
func ranResult(id string, acl access.ACL, principal string, res ExecuteResult, err error) (ExecuteResult, error) {
	if isUnreadable(err) {
		return ExecuteResult{}, unreadablePlan(id, err)
	}
	if err != nil || res.Plan == nil {
		return res, err
	}
	redact(res.Plan, acl, principal)
	if slices.ContainsFunc(res.Plan.Subtasks, func(s *Subtask) bool { return s.Redacted }) {
		if order, verr := res.Plan.Validate(); verr == nil {
			res.State = res.Plan.finalState(order)
		}
	}
	return res, nil
}

func (pl *Planner) actCancel(ctx context.Context, call action.Call, a PlanArgs) (CancelResult, error) {
	if _, err := pl.allow(ctx, call, a.PlanID, access.Write); err != nil {
		return CancelResult{}, err
	}
	return CancelResult{Cancelled: pl.Cancel(a.PlanID)}, nil
}

func (pl *Planner) actReplan(ctx context.Context, call action.Call, a PlanArgs) (PlanResult, error) {
	acl, err := pl.allow(ctx, call, a.PlanID, access.Write)
	if err != nil {
		return PlanResult{}, err
	}
	p, err := pl.Replan(ctx, call, a.PlanID)
	return PlanResult{Plan: redact(p, acl, call.Principal)}, err
}

func (pl *Planner) actDelete(ctx context.Context, call action.Call, a PlanArgs) (DeleteResult, error) {
	return pl.Delete(ctx, call, a.PlanID)
}

func (pl *Planner) actShare(ctx context.Context, call action.Call, a ShareArgs) (access.ACL, error) {
	return pl.Share(ctx, call, a.PlanID, a.Principal, a.Permissions)
}

func (pl *Planner) actRevoke(ctx context.Context, call action.Call, a RevokeArgs) (access.ACL, error) {
	return pl.Revoke(ctx, call, a.PlanID, a.Principal)
}

// actStatus counts per status in one pass, listing the subtasks (without
// the completed ones unless include_completed) with details if asked.
func (pl *Planner) actStatus(ctx context.Context, call action.Call, a StatusArgs) (StatusResult, error) {
	acl, err := pl.allow(ctx, call, a.PlanID, access.Read)
	if err != nil {
		return StatusResult{}, err
	}
	p, err := pl.Get(a.PlanID)
	if err != nil {
		return StatusResult{}, err
	}
	redact(p, acl, call.Principal)
	withCompleted := a.IncludeCompleted == nil || *a.IncludeCompleted
	res := StatusResult{PlanID: p.ID, Status: p.Status, Subtasks: []StatusSubtask{}}
	for _, s := range p.Subtasks {
		res.add(s.Status)
		res.Total++
		if s.Status == Completed && !withCompleted {
			continue
		}
		st := StatusSubtask{ID: s.ID, Status: s.Status, Attempts: s.Attempts}
		if a.IncludeDetails {
			st.Description, st.Result, st.Error, st.Redacted = s.Description, s.Result, s.Error, s.Redacted
		}
		res.Subtasks = append(res.Subtasks, st)
	}
	return res, nil
}

func inSubtask(ctx context.Context, name string) (*subtaskContext, error) {
	sc := subtaskOf(ctx)
	if sc == nil {
		return nil, errs.New(errs.Validation, "%s only works inside a plan subtask (its action), where there is a run state", name)
	}
	return sc, nil
}

func (pl *Planner) actStateSet(ctx context.Context, call action.Call, a StateSetArgs) (StateValue, error) {
	sc, err := inSubtask(ctx, "state.set")
	if err != nil {
		return StateValue{}, err
	}
	var v any
	_ = json.Unmarshal(a.Value, &v) // cannot fail: the args decoded it as JSON
	sc.state[a.Key], sc.delta[a.Key] = v, deepCopy(v)
	return StateValue{Key: a.Key, Value: v}, nil
}

func (pl *Planner) actStateIncr(ctx context.Context, call action.Call, a StateIncrArgs) (StateValue, error) {
	sc, err := inSubtask(ctx, "state.incr")
	if err != nil {
		return StateValue{}, err
	}
	by := 1.0
	if a.By != nil {
		by = *a.By
	}
	cur := 0.0
	if v, ok := sc.state[a.Key]; ok {
		n, isNum := v.(float64)
		if !isNum {
			return StateValue{}, kit.Validation("key", "state %q is not a number", a.Key)
		}
		cur = n
	}
	sc.state[a.Key], sc.delta[a.Key] = cur+by, cur+by
	return StateValue{Key: a.Key, Value: cur + by}, nil
}

func (pl *Planner) actStateGet(ctx context.Context, call action.Call, a StateGetArgs) (StateGetResult, error) {
	sc, err := inSubtask(ctx, "state.get")
	if err != nil {
		return StateGetResult{}, err
	}
	if a.Key == "" {
		return StateGetResult{State: deepCopy(sc.state).(map[string]any)}, nil
	}
	value, err := action.MarshalJSON(sc.state[a.Key])
	if err != nil {
		return StateGetResult{}, err
	}
	return StateGetResult{Key: a.Key, Value: value}, nil
}

// maxSleepMs is the longest task.sleep: a day, in milliseconds.
const maxSleepMs = 24 * 60 * 60 * 1000

func (pl *Planner) actSleep(ctx context.Context, call action.Call, a SleepArgs) (SleepResult, error) {
	if a.Ms < 0 || a.Ms > maxSleepMs {
		// Past the limit, ms as a time.Duration would overflow.
		return SleepResult{}, kit.Validation("ms", "must be from 0 to %d (a day), not %d", maxSleepMs, a.Ms)
	}
	if err := pl.sleep(ctx, time.Duration(a.Ms)*time.Millisecond); err != nil {
		return SleepResult{}, errs.New(errs.Internal, "task.sleep interrupted: %w", err)
	}
	return SleepResult{SleptMs: a.Ms}, nil
}

func (pl *Planner) actFail(ctx context.Context, call action.Call, a FailArgs) (FailResult, error) {
	attempt := 1
	if sc := subtaskOf(ctx); sc != nil {
		attempt = sc.attempt
	}
	if a.Times > 0 && attempt > a.Times {
		return FailResult{Attempt: attempt}, nil
	}
	msg := a.Message
	if msg == "" {
		msg = "failing as asked"
	}
	return FailResult{}, errs.New(errs.Internal, "task.fail: %s (attempt %d)", msg, attempt)
}

func (pl *Planner) actNoop(ctx context.Context, call action.Call, _ NoopArgs) (NoopResult, error) {
	return NoopResult{OK: true}, nil
}

// counts reports plans for engine.info: every plan, whoever owns it; a
// damaged one is counted under "unreadable" (only when there is one), and
// never makes engine.info fail.
func (pl *Planner) counts() (map[string]int, error) {
	plans, unreadable, err := pl.list(func(access.ACL, error) bool { return true })
	if err != nil {
		return nil, err
	}
	out := map[string]int{"plans": len(plans) + len(unreadable), "running": 0}
	if len(unreadable) > 0 {
		out["unreadable"] = len(unreadable)
	}
	for _, p := range plans {
		switch p.Status {
		case PlanRunning:
			out["running"]++
		case PlanInterrupted:
			out["interrupted"]++ // only when there is one, as unreadable
		}
	}
	return out, nil
}
