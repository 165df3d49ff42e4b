package planner

// The planner's data types, in every build (even -tags noplanning, which
// leaves the planner's behaviour and its graph library out): the console
// reads plans through them whether or not this engram can run one.

import (
	"encoding/json"
	"time"
)

// Subtask statuses.
const (
	Pending    = "Pending"
	InProgress = "InProgress"
	Completed  = "Completed"
	Failed     = "Failed"
	Skipped    = "Skipped"
)

// Plan statuses (a plan's Status; subtasks have their own, above).
const (
	PlanPending   = "pending"
	PlanRunning   = "running"
	PlanCompleted = "completed"
	PlanPartial   = "partial"
	PlanFailed    = "failed"
	PlanAborted   = "aborted"
	PlanCancelled = "cancelled"
	// PlanInterrupted is a plan whose run ended with the engram running it
	// (a kill, a crash, a power cut): plan.resume continues it.
	PlanInterrupted = "interrupted"
)

// Strategies of decomposition, the default first.
var Strategies = []string{"flat", "hierarchical", "iterative"}

// Policies are the failure policies of plan.execute, the default first.
var Policies = []string{"abort", "skip", "retry", "replan"}

// Plan is a goal broken into subtasks.
type Plan struct {
	ID       string     `json:"id"`
	Goal     string     `json:"goal"`
	Strategy string     `json:"strategy"` // flat|hierarchical|iterative|manual
	Subtasks []*Subtask `json:"subtasks"`
	// Status is the plan's: pending, running, completed, partial, failed,
	// aborted, cancelled, interrupted.
	Status         string `json:"status"`
	ReplanCount    int    `json:"replan_count"`
	MaxReplans     int    `json:"max_replans"`
	OriginalPlanID string `json:"original_plan_id,omitempty"`
	// Provider is the model that decomposed it (replans ask the same).
	Provider  string          `json:"provider,omitempty"`
	State     json.RawMessage `json:"state,omitempty"` // the initial state execution starts from
	Settings  *Settings       `json:"settings,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Subtask is one step of a plan.
type Subtask struct {
	ID           string      `json:"id"`
	Description  string      `json:"description"`
	Dependencies []string    `json:"dependencies"`
	Action       *ActionSpec `json:"action,omitempty"`
	Status       string      `json:"status"`
	// Result is what the subtask's action returned; Delta the state it
	// wrote; Error why it failed.
	Result  json.RawMessage `json:"result,omitempty"`
	Delta   map[string]any  `json:"delta,omitempty"`
	Error   string          `json:"error,omitempty"`
	Warning string          `json:"warning,omitempty"` // what was refused of it as a model proposed it
	// Proposed says a model chose the subtask's action (plan.decompose,
	// plan.replan); ApprovedBy is who approved it to run, when a run asked
	// (proposed_actions "approve" on plan.execute or plan.resume).
	Proposed   bool       `json:"proposed,omitempty"`
	ApprovedBy string     `json:"approved_by,omitempty"`
	Attempts   int        `json:"attempts"`
	Depth      int        `json:"depth"`
	Parent     string     `json:"parent,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// RanBy is the principal its last attempt ran as (whoever executed
	// the plan); absent for the default agent. Only it and the plan's
	// owner see the subtask's result, delta and error.
	RanBy string `json:"ran_by,omitempty"`
	// Note is what the person who skipped it or marked it done by hand
	// said (plan.subtask_skip, plan.subtask_done); MarkedBy is who.
	Note     string `json:"note,omitempty"`
	MarkedBy string `json:"marked_by,omitempty"`
	// Redacted says that Result, Delta and Error were left out: another
	// principal than the reader ran the subtask (only it and the plan's
	// owner see what came out).
	Redacted bool `json:"redacted,omitempty"`
}

// ActionSpec is the registered action a subtask runs (llm.complete with its
// description when absent).
type ActionSpec struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Settings are how a plan was (or will be) executed; resume reuses them.
type Settings struct {
	MaxConcurrent    int    `json:"max_concurrent"`
	OnSubtaskFailure string `json:"on_subtask_failure"`
	Fallback         string `json:"fallback"`
	MaxRetries       int    `json:"max_retries"`
	Checkpoint       bool   `json:"checkpoint"`
	CheckpointPath   string `json:"checkpoint_path,omitempty"`
	// CheckpointBy is who gave CheckpointPath, when not the default
	// agent: a resume by anyone else writes no file there.
	CheckpointBy string `json:"checkpoint_by,omitempty"`
}

// Counts tallies subtasks by status in one pass.
type Counts struct {
	Completed  int `json:"completed"`
	InProgress int `json:"in_progress"`
	Pending    int `json:"pending"`
	Failed     int `json:"failed"`
	Skipped    int `json:"skipped"`
	Total      int `json:"total"`
}

// Summary is the plan as plan.list shows it: the console puts a run's
// result in its list with it, so that both say the same at once.
func (p *Plan) Summary() PlanSummary {
	return PlanSummary{ID: p.ID, Goal: p.Goal, Strategy: p.Strategy, Status: p.Status, Progress: p.Count(),
		ReplanCount: p.ReplanCount, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// Count tallies the plan's subtasks.
func (p *Plan) Count() Counts {
	var c Counts
	for _, s := range p.Subtasks {
		c.add(s.Status)
	}
	c.Total = len(p.Subtasks)
	return c
}

// add counts one subtask of status (Total aside).
func (c *Counts) add(status string) {
	switch status {
	case Completed:
		c.Completed++
	case InProgress:
		c.InProgress++
	case Pending:
		c.Pending++
	case Failed:
		c.Failed++
	case Skipped:
		c.Skipped++
	}
}

// SubtaskByID returns the plan's subtask with id, or nil.
func (p *Plan) SubtaskByID(id string) *Subtask {
	for _, s := range p.Subtasks {
		if s.ID == id {
			return s
		}
	}
	return nil
}
