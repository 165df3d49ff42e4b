package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/wire"
	"github.com/engram-console/engram/planner"
)

// CreatePlanInput is create_plan's input: subtasks written out, or a goal
// for the language model to break down.
type CreatePlanInput struct {
	Goal     string             `json:"goal,omitempty" jsonschema:"what the plan achieves (required unless goal_id)"`
	GoalID   string             `json:"goal_id,omitempty" jsonschema:"a goal's id (create_goal, active_goals): its title is the plan's goal"`
	Subtasks []PlanSubtaskInput `json:"subtasks,omitempty" jsonschema:"the plan's steps; without them the language model breaks the goal down (engram must run with a model, --llm)"`
	Strategy string             `json:"strategy,omitempty" jsonschema:"without subtasks, how the model breaks the goal down: flat (default), hierarchical or iterative"`
	ID       string             `json:"id,omitempty" jsonschema:"the plan's id (default: a new one)"`
	State    map[string]any     `json:"state,omitempty" jsonschema:"the state the run starts from, an object its subtasks read and write"`
}

// PlanSubtaskInput is a subtask as create_plan takes it.
type PlanSubtaskInput struct {
	ID           string           `json:"id" jsonschema:"the subtask's id, unique in the plan (required)"`
	Description  string           `json:"description,omitempty" jsonschema:"what it does (default: its id)"`
	Dependencies []string         `json:"dependencies,omitempty" jsonschema:"the ids of the subtasks that must complete before it starts"`
	Action       *PlanActionInput `json:"action,omitempty" jsonschema:"the engram action it runs (default: it asks the language model with its description)"`
}

// PlanActionInput is the action a subtask runs.
type PlanActionInput struct {
	Name string         `json:"name" jsonschema:"the action, e.g. state.set, memory.remember, task.noop"`
	Args map[string]any `json:"args,omitempty" jsonschema:"its arguments; a string of the form ${state.key} is replaced by that value of the run's state"`
}

// PlanStatusInput is plan_status's input.
type PlanStatusInput struct {
	PlanID string `json:"plan_id" jsonschema:"the plan (required)"`
}

// RunPlanInput is run_plan's input.
type RunPlanInput struct {
	PlanID           string `json:"plan_id" jsonschema:"the plan (required)"`
	Wait             bool   `json:"wait,omitempty" jsonschema:"true: answer when the run ends, sending a progress notification as each subtask finishes (when the call has a progress token); false (default): answer as soon as the run has started"`
	MaxConcurrent    int    `json:"max_concurrent,omitempty" jsonschema:"subtasks running at once (default 4; 1 runs them one by one)"`
	OnSubtaskFailure string `json:"on_subtask_failure,omitempty" jsonschema:"what a failed subtask does: abort (default), skip, retry or replan"`
	MaxRetries       int    `json:"max_retries,omitempty" jsonschema:"with retry: retries after the first attempt (default 3)"`
	Fresh            bool   `json:"fresh,omitempty" jsonschema:"true: run every subtask again from the start (a completed plan run anew)"`
}

// PlanStatusOutput is a plan and its subtasks, as they stand: the output
// of create_plan, run_plan and plan_status.
type PlanStatusOutput struct {
	PlanID   string        `json:"plan_id" jsonschema:"the plan's id: pass it to run_plan and plan_status"`
	Goal     string        `json:"goal" jsonschema:"what the plan achieves"`
	Strategy string        `json:"strategy" jsonschema:"how it was made: manual (written out), flat, hierarchical or iterative"`
	Status   string        `json:"status" jsonschema:"pending (never ran), running, completed, partial (some skipped), failed, aborted, cancelled or interrupted"`
	Progress PlanCounts    `json:"progress" jsonschema:"its subtasks counted by status"`
	Subtasks []PlanSubtask `json:"subtasks" jsonschema:"its subtasks in plan order"`
	Failures []PlanFailure `json:"failures" jsonschema:"the subtasks that failed, with why"`
}

// PlanCounts counts a plan's subtasks by status.
type PlanCounts struct {
	Completed int `json:"completed" jsonschema:"subtasks done"`
	Running   int `json:"running" jsonschema:"subtasks running now"`
	Pending   int `json:"pending" jsonschema:"subtasks waiting to run"`
	Failed    int `json:"failed" jsonschema:"subtasks that failed"`
	Skipped   int `json:"skipped" jsonschema:"subtasks skipped"`
	Total     int `json:"total" jsonschema:"all its subtasks"`
}

// PlanSubtask is one subtask of a plan, as it stands.
type PlanSubtask struct {
	ID           string   `json:"id" jsonschema:"the subtask's id"`
	Description  string   `json:"description" jsonschema:"what it does"`
	Dependencies []string `json:"dependencies" jsonschema:"the subtasks it waits for"`
	Action       string   `json:"action,omitempty" jsonschema:"the action it runs (absent: it asks the language model)"`
	Status       string   `json:"status" jsonschema:"Pending, InProgress, Completed, Failed or Skipped"`
	Attempts     int      `json:"attempts" jsonschema:"how many times it has run"`
	Retries      int      `json:"retries" jsonschema:"how many of those were retries after a failure"`
	Result       any      `json:"result,omitempty" jsonschema:"what its action returned"`
	Error        string   `json:"error,omitempty" jsonschema:"why it failed or was skipped"`
	Redacted     bool     `json:"redacted,omitempty" jsonschema:"true: another agent ran it, so its result and error are not shown to you"`
}

// PlanFailure is a failed subtask.
type PlanFailure struct {
	Subtask  string `json:"subtask" jsonschema:"the subtask"`
	Error    string `json:"error" jsonschema:"why it failed"`
	Attempts int    `json:"attempts" jsonschema:"how many times it ran"`
}

// planStatusOf is the PlanStatusOutput of a plan.
func planStatusOf(p *planner.Plan) PlanStatusOutput {
	c := p.Count()
	out := PlanStatusOutput{PlanID: p.ID, Goal: p.Goal, Strategy: p.Strategy, Status: p.Status,
		Progress: PlanCounts{Completed: c.Completed, Running: c.InProgress, Pending: c.Pending, Failed: c.Failed, Skipped: c.Skipped, Total: c.Total},
		Subtasks: []PlanSubtask{}, Failures: []PlanFailure{}}
	for _, st := range p.Subtasks {
		ps := PlanSubtask{ID: st.ID, Description: st.Description, Dependencies: st.Dependencies, Status: st.Status,
			Attempts: st.Attempts, Retries: max(st.Attempts-1, 0), Error: st.Error, Redacted: st.Redacted}
		if ps.Dependencies == nil {
			ps.Dependencies = []string{}
		}
		if st.Action != nil {
			ps.Action = st.Action.Name
		}
		if len(st.Result) > 0 {
			var v any
			if json.Unmarshal(st.Result, &v) == nil {
				ps.Result = v
			}
		}
		out.Subtasks = append(out.Subtasks, ps)
		if st.Status == planner.Failed {
			out.Failures = append(out.Failures, PlanFailure{Subtask: st.ID, Error: st.Error, Attempts: st.Attempts})
		}
	}
	return out
}

// addPlanTools registers create_plan, run_plan and plan_status.
func (s *Server) addPlanTools() {
	addTool(s, toolSpec{name: "create_plan", title: "Create a plan",
		description: "Make a plan: a goal broken into subtasks that form a DAG. Write the subtasks out (each running an engram " +
			"action), or give only a goal (or goal_id) for the language model to break down. Run it with run_plan."},
		func(ctx context.Context, cl *caller, in CreatePlanInput) (PlanStatusOutput, error) {
			goal := in.Goal
			if in.GoalID != "" {
				if in.Goal != "" {
					return PlanStatusOutput{}, kit.Validation("goal_id", "give goal or goal_id, not both")
				}
				g, err := getGoal(ctx, cl, in.GoalID)
				if err != nil {
					return PlanStatusOutput{}, err
				}
				goal = g.Title
			}
			if goal == "" {
				return PlanStatusOutput{}, kit.Validation("goal", "say what the plan achieves (or give goal_id)")
			}
			if len(in.Subtasks) == 0 {
				res, err := call(ctx, cl, planner.ActionPlanDecompose, planner.DecomposeArgs{Goal: goal, Strategy: in.Strategy, ID: in.ID})
				if e := errs.As(err); e != nil && e.Kind == errs.LLM && strings.HasPrefix(e.Message, "plan.decompose needs a language model") {
					// plan.decompose's fix names plan.create; an agent's is a field.
					return PlanStatusOutput{}, withMessage(e, "subtasks: engram has no language model to break the goal down "+
						"(start it with --llm ollama or --llm openai for one), so give the plan's subtasks, each "+
						"{id, description?, dependencies?, action?: {name, args}}")
				} else if err != nil {
					return PlanStatusOutput{}, err
				}
				return planStatusOf(res.Plan), nil
			}
			if in.Strategy != "" {
				return PlanStatusOutput{}, kit.Validation("strategy", "is how the model breaks a goal down: leave it out when you give subtasks")
			}
			args := planner.CreateArgs{ID: in.ID, Goal: goal}
			if in.State != nil {
				raw, err := json.Marshal(in.State)
				if err != nil {
					return PlanStatusOutput{}, kit.Validation("state", "%v", err)
				}
				args.State = raw
			}
			for i, st := range in.Subtasks {
				si := planner.SubtaskInput{ID: st.ID, Description: st.Description, Dependencies: st.Dependencies}
				if st.Action != nil {
					raw, err := json.Marshal(st.Action.Args)
					if err != nil {
						return PlanStatusOutput{}, kit.Validation(fmt.Sprintf("subtasks[%d].action.args", i), "%v", err)
					}
					if st.Action.Args == nil {
						raw = nil
					}
					si.Action = &planner.ActionSpec{Name: st.Action.Name, Args: raw}
				}
				args.Subtasks = append(args.Subtasks, si)
			}
			res, err := call(ctx, cl, planner.ActionPlanCreate, args)
			if err != nil {
				return PlanStatusOutput{}, err
			}
			return planStatusOf(res.Plan), nil
		})

	addTool(s, toolSpec{name: "run_plan", title: "Run a plan",
		description: "Start running a plan: subtasks in dependency order, in parallel where they can. Answers as soon as the run " +
			"has started, with the plan as it stands; follow it with plan_status. With wait: true, answers when the run ends and " +
			"sends a progress notification as each subtask finishes (a call cancelled while it waits leaves the run going). " +
			"Its subtasks may run any action, deletions included.",
		destructive: true},
		s.runPlan)

	addTool(s, toolSpec{name: "plan_status", title: "Plan status",
		description: "A plan as it stands (live while it runs): its status, and each subtask's status, attempts, result and error.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, in PlanStatusInput) (PlanStatusOutput, error) {
			res, err := call(ctx, cl, planner.ActionPlanGet, planner.PlanArgs{PlanID: in.PlanID})
			if err != nil {
				return PlanStatusOutput{}, err
			}
			return planStatusOf(res.Plan), nil
		})
}

// runPlan is run_plan. plan.execute answers when the run ends, so it runs
// beside the server (Server.background), detached from the call, until it
// ends or the server closes (which cancels the run: plan.resume continues
// it). The call answers once the run has truly started (its first subtask
// started) or ended, whichever comes first; a run refused at the start (no
// such plan, not yours to run, already running) is the call's error.
func (s *Server) runPlan(ctx context.Context, cl *caller, in RunPlanInput) (PlanStatusOutput, error) {
	if in.PlanID == "" {
		return PlanStatusOutput{}, kit.Validation("plan_id", "give the plan's id (create_plan tells it)")
	}
	before, err := call(ctx, cl, planner.ActionPlanGet, planner.PlanArgs{PlanID: in.PlanID})
	if err != nil {
		return PlanStatusOutput{}, err
	}
	total := len(before.Plan.Subtasks)
	// Subscribe before the run starts, so that no event of it is missed.
	watching, stop := context.WithCancel(ctx)
	defer stop()
	evs := s.c.SubscribeAs(watching, s.opts.Agent, planner.EventSubtaskStarted.Name(), planner.EventSubtaskFinished.Name(), planner.EventPlanFinished.Name())
	type outcome struct {
		res planner.ExecuteResult
		err error
	}
	done := make(chan outcome, 1)
	args := planner.ExecuteArgs{PlanID: in.PlanID, MaxConcurrent: in.MaxConcurrent, OnSubtaskFailure: in.OnSubtaskFailure,
		MaxRetries: in.MaxRetries, Fresh: in.Fresh}
	s.background(func(life context.Context) {
		res, err := call(life, cl, planner.ActionPlanExecute, args)
		done <- outcome{res, err}
	})
	var token any
	if cl.req != nil && cl.req.Params != nil {
		token = cl.req.Params.GetProgressToken()
	}
	// With progress to report, the answer waits for plan.finished too: it
	// comes after every subtask.finished of the run, so that every
	// notification goes out before the answer.
	notify := in.Wait && token != nil
	finished, ended := 0, false
	var result *planner.ExecuteResult
	for {
		select {
		case o := <-done:
			if o.err != nil {
				return PlanStatusOutput{}, o.err
			}
			if !notify || ended {
				return planStatusOf(o.res.Plan), nil
			}
			result = &o.res
		case ev, ok := <-evs:
			if !ok {
				if result != nil { // the connection went: no more events to wait for
					return planStatusOf(result.Plan), nil
				}
				evs = nil // the call ended (ctx.Done says so) or the connection went (done will)
				continue
			}
			if ev.Name == wire.EventGap || ev.Name == conn.EventOwnerChanged.Name() {
				// Events were missed, plan.finished maybe: the run's end
				// (done) is the answer's signal now.
				ended = true
				if result != nil {
					return planStatusOf(result.Plan), nil
				}
				continue
			}
			if st, ok := planner.EventSubtaskStarted.Of(ev); ok && st.PlanID == in.PlanID && !in.Wait {
				now, err := call(ctx, cl, planner.ActionPlanGet, planner.PlanArgs{PlanID: in.PlanID})
				if err != nil {
					return PlanStatusOutput{}, err
				}
				return planStatusOf(now.Plan), nil
			}
			if end, ok := planner.EventPlanFinished.Of(ev); ok && end.PlanID == in.PlanID {
				ended = true
				if result != nil {
					return planStatusOf(result.Plan), nil
				}
			}
			if fin, ok := planner.EventSubtaskFinished.Of(ev); ok && fin.PlanID == in.PlanID && notify {
				finished++
				_ = cl.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, // a client gone is ctx's
					Progress: float64(finished), Total: float64(max(total, finished)),
					Message: fmt.Sprintf("subtask %s %s (%d of %d)", fin.Subtask, fin.Status, finished, max(total, finished))})
			}
		case <-ctx.Done():
			return PlanStatusOutput{}, ctx.Err() // nobody waits for the answer; the run goes on
		}
	}
}

// withMessage is e with another message.
func withMessage(e *errs.Error, msg string) *errs.Error {
	out := *e
	out.Message = msg
	out.Err = nil
	out.Details = map[string]any{"field": "subtasks"}
	for k, v := range e.Details {
		out.Details[k] = v
	}
	return &out
}
