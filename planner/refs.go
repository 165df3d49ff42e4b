package planner

import (
	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionPlanCreate is the plan.create action. Write a plan by hand (or from a YAML file).
	ActionPlanCreate = action.NewRef[CreateArgs, PlanResult]("plan.create")
	// ActionPlanDecompose is the plan.decompose action. Ask the model to break a goal into a plan (flat, hierarchical, iterative).
	ActionPlanDecompose = action.NewRef[DecomposeArgs, PlanResult]("plan.decompose")
	// ActionPlanValidate is the plan.validate action. Check a plan is a DAG and give its execution order.
	ActionPlanValidate = action.NewRef[ValidateArgs, ValidateResult]("plan.validate")
	// ActionPlanGet is the plan.get action. A plan with its subtasks (live while it runs).
	ActionPlanGet = action.NewRef[PlanArgs, PlanResult]("plan.get")
	// ActionPlanList is the plan.list action. Every plan, newest first, with its progress.
	ActionPlanList = action.NewRef[ListArgs, ListResult]("plan.list")
	// ActionPlanExecute is the plan.execute action. Run a plan: dependency order, parallel where possible, failures per policy.
	ActionPlanExecute = action.NewRef[ExecuteArgs, ExecuteResult]("plan.execute")
	// ActionPlanResume is the plan.resume action. Run a plan again from its checkpoint, skipping what completed.
	ActionPlanResume = action.NewRef[ResumeArgs, ExecuteResult]("plan.resume")
	// ActionPlanCancel is the plan.cancel action. Stop a running plan (resume continues it).
	ActionPlanCancel = action.NewRef[PlanArgs, CancelResult]("plan.cancel")
	// ActionPlanReplan is the plan.replan action. Replace a plan's unfinished subtasks with new ones from the model.
	ActionPlanReplan = action.NewRef[PlanArgs, PlanResult]("plan.replan")
	// ActionPlanStatus is the plan.status action. A plan's counts per status, and its subtasks if asked.
	ActionPlanStatus = action.NewRef[StatusArgs, StatusResult]("plan.status")
	// ActionPlanDelete is the plan.delete action. Delete a plan (not while it runs), readable or not.
	ActionPlanDelete = action.NewRef[PlanArgs, DeleteResult]("plan.delete")
	// ActionPlanShare is the plan.share action. Grant an agent permissions on a plan.
	ActionPlanShare = action.NewRef[ShareArgs, access.ACL]("plan.share")
	// ActionPlanRevoke is the plan.revoke action. Remove an agent's access to a plan.
	ActionPlanRevoke = action.NewRef[RevokeArgs, access.ACL]("plan.revoke")
	// ActionPlanSubtaskRetry is the plan.subtask_retry action. Run a failed or skipped subtask again, then go on with the plan.
	ActionPlanSubtaskRetry = action.NewRef[SubtaskRetryArgs, ExecuteResult]("plan.subtask_retry")
	// ActionPlanSubtaskSkip is the plan.subtask_skip action. Skip a failed or pending subtask (and what depends on it), then go on with the plan.
	ActionPlanSubtaskSkip = action.NewRef[SubtaskSkipArgs, ExecuteResult]("plan.subtask_skip")
	// ActionPlanSubtaskDone is the plan.subtask_done action. Mark a subtask done by hand, with a note, then go on with the plan.
	ActionPlanSubtaskDone = action.NewRef[SubtaskDoneArgs, ExecuteResult]("plan.subtask_done")
	// ActionStateSet is the state.set action. In a plan subtask: set a key of the run's state.
	ActionStateSet = action.NewRef[StateSetArgs, StateValue]("state.set")
	// ActionStateIncr is the state.incr action. In a plan subtask: add to a number in the run's state.
	ActionStateIncr = action.NewRef[StateIncrArgs, StateValue]("state.incr")
	// ActionStateGet is the state.get action. In a plan subtask: read the run's state.
	ActionStateGet = action.NewRef[StateGetArgs, StateGetResult]("state.get")
	// ActionTaskSleep is the task.sleep action. Wait (a plan step that takes time).
	ActionTaskSleep = action.NewRef[SleepArgs, SleepResult]("task.sleep")
	// ActionTaskFail is the task.fail action. Fail the first n attempts (a plan step for testing failure policies).
	ActionTaskFail = action.NewRef[FailArgs, FailResult]("task.fail")
	// ActionTaskNoop is the task.noop action. Do nothing (a plan step that only groups others).
	ActionTaskNoop = action.NewRef[NoopArgs, NoopResult]("task.noop")
)
