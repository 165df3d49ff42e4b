package planner

// The plan.*, state.* and task.* actions' arguments and results, in every
// build, so that a client (the console) calls them typed. Results that used
// to be maps have their fields in alphabetical order of their JSON names:
// the order the maps printed in, which batch output keeps.

import (
	"encoding/json"
	"time"
)

// CreateArgs are plan.create's arguments: a plan written by hand.
type CreateArgs struct {
	ID             string          `json:"id,omitempty" help:"the plan's id (default: a new UUID)"`
	Goal           string          `json:"goal,omitempty" help:"what the plan achieves"`
	Subtasks       []SubtaskInput  `json:"subtasks,omitempty" help:"[{id, description, dependencies?, action?: {name, args}}]"`
	State          json.RawMessage `json:"state,omitempty" help:"the initial state, an object"`
	MaxReplans     *int            `json:"max_replans,omitempty" help:"how often it may be replanned (default 3)"`
	OriginalPlanID string          `json:"original_plan_id,omitempty" help:"the plan this one derives from"`
	File           string          `json:"file,omitempty" help:"a YAML file holding goal and subtasks (instead of them)"`
}

// SubtaskInput is a subtask as written.
type SubtaskInput struct {
	ID           string      `json:"id" arg:"required"`
	Description  string      `json:"description,omitempty"`
	Dependencies []string    `json:"dependencies,omitempty"`
	Action       *ActionSpec `json:"action,omitempty"`
}

// PlanResult is the answer of plan.create, plan.decompose, plan.get and
// plan.replan: the plan.
type PlanResult struct {
	Plan *Plan `json:"plan"`
}

// DecomposeArgs are plan.decompose's arguments.
type DecomposeArgs struct {
	Goal     string `json:"goal" arg:"required" help:"what to achieve"`
	Strategy string `json:"strategy,omitempty" help:"flat (default), hierarchical or iterative"`
	MaxDepth int    `json:"max_depth,omitempty" help:"for hierarchical plans: the deepest level kept (default 2; deeper ones are flattened)"`
	ID       string `json:"id,omitempty" help:"the plan's id (default: a new UUID)"`
}

// ValidateArgs are plan.validate's arguments: a stored plan, or subtasks.
type ValidateArgs struct {
	PlanID   string         `json:"plan_id,omitempty" help:"a stored plan"`
	Subtasks []SubtaskInput `json:"subtasks,omitempty" help:"or subtasks to check without storing them"`
}

// ValidateResult is plan.validate's answer: the execution order.
type ValidateResult struct {
	Order []string `json:"order"`
}

// PlanArgs name the plan of plan.get, plan.resume, plan.cancel,
// plan.replan and plan.delete.
type PlanArgs struct {
	PlanID string `json:"plan_id" arg:"required" help:"the plan"`
}

// ListArgs are plan.list's arguments: none.
type ListArgs struct{}

// ListResult is plan.list's answer: every plan the caller may read,
// newest first.
type ListResult struct {
	Plans []PlanSummary `json:"plans"`
	// Unreadable are the plans whose stored records could not be read
	// (damaged): left out of Plans, so that the others still list.
	Unreadable []UnreadablePlan `json:"unreadable,omitempty"`
}

// UnreadablePlan is a plan plan.list could not read: plan.delete removes it.
type UnreadablePlan struct {
	PlanID string `json:"plan_id"`
	// Error says what is wrong with the record.
	Error string `json:"error"`
}

// ShareArgs are plan.share's arguments.
type ShareArgs struct {
	PlanID string `json:"plan_id" arg:"required" help:"the plan"`
	// Principal is the agent to share with.
	Principal string `json:"principal" arg:"required" help:"the agent to share with"`
	// Permissions replace any the agent had.
	Permissions []string `json:"permissions" arg:"required" help:"any of read, write, delete, share"`
}

// RevokeArgs are plan.revoke's arguments.
type RevokeArgs struct {
	PlanID string `json:"plan_id" arg:"required" help:"the plan"`
	// Principal is the agent whose access to remove.
	Principal string `json:"principal" arg:"required" help:"the agent whose access to remove"`
}

// DeleteResult is plan.delete's answer: what was deleted.
type DeleteResult struct {
	PlanID string `json:"plan_id"`
	// Goal is the deleted plan's goal (absent when its record was unreadable).
	Goal string `json:"goal,omitempty"`
	// Subtasks is how many subtasks it had.
	Subtasks int `json:"subtasks"`
	// Records is how many stored records went: the plan, its subtasks'
	// progress records and its access list.
	Records int `json:"records"`
	// Unreadable says the plan's record could not be read; it was deleted
	// all the same.
	Unreadable bool `json:"unreadable,omitempty"`
}

// PlanSummary is a plan in plan.list.
type PlanSummary struct {
	ID          string    `json:"id"`
	Goal        string    `json:"goal"`
	Strategy    string    `json:"strategy"`
	Status      string    `json:"status"`
	Progress    Counts    `json:"progress"`
	ReplanCount int       `json:"replan_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// ExecuteArgs are plan.execute's arguments.
type ExecuteArgs struct {
	PlanID           string           `json:"plan_id" arg:"required" help:"the plan"`
	MaxConcurrent    int              `json:"max_concurrent,omitempty" help:"subtasks running at once (default 4; 1 runs them one by one)"`
	OnSubtaskFailure string           `json:"on_subtask_failure,omitempty" help:"abort (default), skip, retry or replan"`
	MaxRetries       int              `json:"max_retries,omitempty" help:"with retry: retries after the first attempt (default 3), waiting 100 ms, 200 ms, 400 ms..."`
	Fallback         string           `json:"fallback,omitempty" help:"with retry: what to do once the retries are spent: abort (default), skip or replan"`
	Checkpoint       json.RawMessage  `json:"checkpoint,omitempty" help:"true (default): checkpoint in the store after every subtask; false: don't; a path: also write the checkpoint file there"`
	ProposedActions  string           `json:"proposed_actions,omitempty" help:"the actions a model chose (proposed: true): run (default) runs them; ask refuses to start while the plan holds any; approve runs those it holds now. With ask and approve, those a replan proposes during the run run their description instead"`
	Approved         []ProposedAction `json:"approved,omitempty" help:"with approve: the actions you were shown, [{subtask, action: {name, args}}]; the run starts only if they are exactly those waiting"`
	// Fresh runs the plan anew: every subtask pending, nothing kept of
	// earlier runs (a completed plan run again).
	Fresh bool `json:"fresh,omitempty" help:"true: run every subtask again from the start, dropping earlier results (a completed plan run anew)"`
}

// ProposedAction is an action a model chose for a subtask, as the person
// was shown it and approved it (ExecuteArgs.Approved).
type ProposedAction struct {
	Subtask string     `json:"subtask" arg:"required"`
	Action  ActionSpec `json:"action"`
}

// ResumeArgs are plan.resume's arguments.
type ResumeArgs struct {
	PlanID          string           `json:"plan_id" arg:"required" help:"the plan"`
	ProposedActions string           `json:"proposed_actions,omitempty" help:"the actions a model chose: run (default), ask or approve, as for plan.execute"`
	Approved        []ProposedAction `json:"approved,omitempty" help:"with approve: the actions you were shown, as for plan.execute"`
}

// How a run treats the actions a model chose for subtasks
// (ExecuteArgs.ProposedActions): a model's choice is data until the person
// approves it (issue 13, item 1). The console asks the person, then
// approves; a batch script runs them, as before, within the allowlist a
// model may choose from.
const (
	// ProposedRun runs them (the default).
	ProposedRun = "run"
	// ProposedAsk refuses to start while the plan holds any unapproved.
	ProposedAsk = "ask"
	// ProposedApprove approves those the plan holds, then runs.
	ProposedApprove = "approve"
)

// ExecuteRequest says how to run a plan (Planner.Execute).
type ExecuteRequest struct {
	MaxConcurrent    int
	OnSubtaskFailure string
	Fallback         string
	MaxRetries       int
	Checkpoint       bool
	CheckpointPath   string
	// ProposedActions is ProposedRun (when empty), ProposedAsk or
	// ProposedApprove; Approved, when set with ProposedApprove, is what
	// the person was shown: the run starts only if it is exactly what waits.
	ProposedActions string
	Approved        []ProposedAction
	// Fresh runs every subtask again from the start (ExecuteArgs.Fresh).
	Fresh bool
	// replanFailed says the run begins by replanning the failures an
	// earlier run left (plan.execute with on_subtask_failure replan).
	replanFailed bool
}

// ExecuteResult is a run's outcome: plan.execute's and plan.resume's answer.
type ExecuteResult struct {
	Plan     *Plan          `json:"plan"`
	State    map[string]any `json:"state"`
	Progress Counts         `json:"progress"`
}

// CancelResult is plan.cancel's answer: whether the plan was running.
type CancelResult struct {
	Cancelled bool `json:"cancelled"`
}

// SubtaskRetryArgs are plan.subtask_retry's arguments: a failed or skipped
// subtask to run again, then the plan goes on.
type SubtaskRetryArgs struct {
	PlanID          string           `json:"plan_id" arg:"required" help:"the plan"`
	Subtask         string           `json:"subtask" arg:"required" help:"the failed or skipped subtask to run again"`
	ProposedActions string           `json:"proposed_actions,omitempty" help:"the actions a model chose: run (default), ask or approve, as for plan.execute"`
	Approved        []ProposedAction `json:"approved,omitempty" help:"with approve: the actions you were shown, as for plan.execute"`
}

// SubtaskSkipArgs are plan.subtask_skip's arguments: a failed or pending
// subtask to skip (its dependents are skipped with it), then the plan goes
// on.
type SubtaskSkipArgs struct {
	PlanID  string `json:"plan_id" arg:"required" help:"the plan"`
	Subtask string `json:"subtask" arg:"required" help:"the failed or pending subtask to skip"`
	// Note says why, for whoever reads the plan later.
	Note            string           `json:"note,omitempty" help:"why it is skipped (kept in the subtask and the trace)"`
	ProposedActions string           `json:"proposed_actions,omitempty" help:"the actions a model chose: run (default), ask or approve, as for plan.execute"`
	Approved        []ProposedAction `json:"approved,omitempty" help:"with approve: the actions you were shown, as for plan.execute"`
}

// SubtaskDoneArgs are plan.subtask_done's arguments: a failed, skipped or
// pending subtask someone did by hand, with what they did; then the plan
// goes on.
type SubtaskDoneArgs struct {
	PlanID  string `json:"plan_id" arg:"required" help:"the plan"`
	Subtask string `json:"subtask" arg:"required" help:"the failed, skipped or pending subtask that is done"`
	// Note is what was done: the subtask's result, for its dependents.
	Note            string           `json:"note" arg:"required" help:"what was done (the subtask's result: {\"note\": ...})"`
	ProposedActions string           `json:"proposed_actions,omitempty" help:"the actions a model chose: run (default), ask or approve, as for plan.execute"`
	Approved        []ProposedAction `json:"approved,omitempty" help:"with approve: the actions you were shown, as for plan.execute"`
}

// StatusArgs are plan.status's arguments.
type StatusArgs struct {
	PlanID           string `json:"plan_id" arg:"required" help:"the plan"`
	IncludeCompleted *bool  `json:"include_completed,omitempty" help:"list completed subtasks too (default true)"`
	IncludeDetails   bool   `json:"include_details,omitempty" help:"list the subtasks with their descriptions, results and errors"`
}

// StatusResult is plan.status's answer: the counts per status, and the
// subtasks asked for.
type StatusResult struct {
	PlanID string `json:"plan_id"`
	Status string `json:"status"`
	Counts
	Subtasks []StatusSubtask `json:"subtasks"`
}

// StatusSubtask is a subtask in plan.status (its details only if asked).
type StatusSubtask struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	Attempts    int             `json:"attempts"`
	Description string          `json:"description,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       string          `json:"error,omitempty"`
	// Redacted says the result and error were left out: another principal
	// ran the subtask (only it and the plan's owner see them).
	Redacted bool `json:"redacted,omitempty"`
}

// StateSetArgs are state.set's arguments.
type StateSetArgs struct {
	Key   string          `json:"key" arg:"required" help:"the state key"`
	Value json.RawMessage `json:"value" arg:"required" help:"any JSON value"`
}

// StateIncrArgs are state.incr's arguments.
type StateIncrArgs struct {
	Key string   `json:"key" arg:"required" help:"the state key (a number, or absent: 0)"`
	By  *float64 `json:"by,omitempty" help:"how much to add (default 1)"`
}

// StateValue is the answer of state.set and state.incr: the key and its
// value now.
type StateValue struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// StateGetArgs are state.get's arguments.
type StateGetArgs struct {
	Key string `json:"key,omitempty" help:"one key (default: the whole state)"`
}

// StateGetResult is state.get's answer: with a key, the key and its value
// (null when the state has no such key); without, the whole state.
type StateGetResult struct {
	Key   string         `json:"key,omitempty"`
	State map[string]any `json:"state,omitzero"`
	// Value is JSON so that a missing key reads "value": null while the
	// whole state leaves value out.
	Value json.RawMessage `json:"value,omitempty"`
}

// SleepArgs are task.sleep's arguments.
type SleepArgs struct {
	Ms int `json:"ms" arg:"required" help:"milliseconds to wait"`
}

// SleepResult is task.sleep's answer.
type SleepResult struct {
	SleptMs int `json:"slept_ms"`
}

// FailArgs are task.fail's arguments.
type FailArgs struct {
	Times   int    `json:"times,omitempty" help:"how many attempts fail (default: all)"`
	Message string `json:"message,omitempty" help:"the failure's message"`
}

// FailResult is task.fail's answer, once its failing attempts are spent.
type FailResult struct {
	Attempt int `json:"attempt"`
}

// NoopArgs are task.noop's arguments: none.
type NoopArgs struct{}

// NoopResult is task.noop's answer.
type NoopResult struct {
	OK bool `json:"ok"`
}
