package planner

import "github.com/engram-console/engram/core/events"

// The payloads' fields are in alphabetical order of their JSON names: the
// order the --events lines had when the payloads were maps.

// SubtaskStartedEvent is the payload of EventSubtaskStarted.
type SubtaskStartedEvent struct {
	Attempt int    `json:"attempt"`
	PlanID  string `json:"plan_id"`
	Subtask string `json:"subtask"`
}

// SubtaskFinishedEvent is the payload of EventSubtaskFinished.
type SubtaskFinishedEvent struct {
	Attempts int `json:"attempts"`
	// Error is the last attempt's error, if the subtask failed.
	Error   string `json:"error,omitempty"`
	PlanID  string `json:"plan_id"`
	Status  string `json:"status"`
	Subtask string `json:"subtask"`
}

// ProgressEvent is the payload of EventProgress.
type ProgressEvent struct {
	Completed int    `json:"completed"`
	PlanID    string `json:"plan_id"`
	// Running is how many subtasks are running now.
	Running int `json:"running"`
	Total   int `json:"total"`
}

// PlanFinishedEvent is the payload of EventPlanFinished.
type PlanFinishedEvent struct {
	Counts Counts `json:"counts"`
	PlanID string `json:"plan_id"`
	Status string `json:"status"`
}

// PlanChangedEvent is the payload of EventPlanChanged.
type PlanChangedEvent struct {
	// Change is "created", "replanned", "deleted", "shared", "revoked",
	// or what a person did to one subtask: "subtask_retried",
	// "subtask_skipped", "subtask_done".
	Change string `json:"change"`
	PlanID string `json:"plan_id"`
	// Subtask is the subtask of a subtask_* change.
	Subtask string `json:"subtask,omitempty"`
}

// Events of plans and their runs.
var (
	EventSubtaskStarted  = events.Define[SubtaskStartedEvent]("plan.subtask.started", "when a subtask starts (again on every retry)")
	EventSubtaskFinished = events.Define[SubtaskFinishedEvent]("plan.subtask.finished", "when a subtask completes, fails for good, or is skipped")
	EventProgress        = events.DefineProgress[ProgressEvent]("plan.progress", "as a run's counts change (a progress event: a slow subscriber may miss some)")
	EventPlanFinished    = events.Define[PlanFinishedEvent]("plan.finished", "when a run ends: completed, failed, aborted or cancelled")
	EventPlanChanged     = events.Define[PlanChangedEvent]("plan.changed", "after a plan is created, replanned, deleted, shared or revoked, and after a person retries, skips or marks done one of its subtasks")
)
