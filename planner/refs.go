package planner

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionPlanCreate is plan.create: write a plan by hand (or from a YAML file).
	ActionPlanCreate = action.NewRef[CreateArgs, PlanResult]("plan.create")
	// ActionPlanDecompose is plan.decompose: ask the model to break a goal into a plan (flat, hierarchical, iterative).
	ActionPlanDecompose = action.NewRef[DecomposeArgs, PlanResult]("plan.decompose")
	// ActionPlanValidate is plan.validate: check a plan is a DAG and give its execution order.
	ActionPlanValidate = action.NewRef[ValidateArgs, ValidateResult]("plan.validate")
	// ActionPlanGet is plan.get: a plan with its subtasks (live while it runs).
	ActionPlanGet = action.NewRef[PlanArgs, PlanResult]("plan.get")
	// ActionPlanList is plan.list: every plan, newest first, with its progress.
	ActionPlanList = action.NewRef[ListArgs, ListResult]("plan.list")
	// ActionPlanExecute is plan.execute: run a plan: dependency order, parallel where possible, failures per policy.
	ActionPlanExecute = action.NewRef[ExecuteArgs, ExecuteResult]("plan.execute")
	// ActionPlanResume is plan.resume: run a plan again from its checkpoint, skipping what completed.
	ActionPlanResume = action.NewRef[PlanArgs, ExecuteResult]("plan.resume")
	// ActionPlanCancel is plan.cancel: stop a running plan (resume continues it).
	ActionPlanCancel = action.NewRef[PlanArgs, CancelResult]("plan.cancel")
	// ActionPlanReplan is plan.replan: replace a plan's unfinished subtasks with new ones from the model.
	ActionPlanReplan = action.NewRef[PlanArgs, PlanResult]("plan.replan")
	// ActionPlanStatus is plan.status: a plan's counts per status, and its subtasks if asked.
	ActionPlanStatus = action.NewRef[StatusArgs, StatusResult]("plan.status")
	// ActionStateSet is state.set: in a plan subtask: set a key of the run's state.
	ActionStateSet = action.NewRef[StateSetArgs, StateValue]("state.set")
	// ActionStateIncr is state.incr: in a plan subtask: add to a number in the run's state.
	ActionStateIncr = action.NewRef[StateIncrArgs, StateValue]("state.incr")
	// ActionStateGet is state.get: in a plan subtask: read the run's state.
	ActionStateGet = action.NewRef[StateGetArgs, StateGetResult]("state.get")
	// ActionTaskSleep is task.sleep: wait (a plan step that takes time).
	ActionTaskSleep = action.NewRef[SleepArgs, SleepResult]("task.sleep")
	// ActionTaskFail is task.fail: fail the first n attempts (a plan step for testing failure policies).
	ActionTaskFail = action.NewRef[FailArgs, FailResult]("task.fail")
	// ActionTaskNoop is task.noop: do nothing (a plan step that only groups others).
	ActionTaskNoop = action.NewRef[NoopArgs, NoopResult]("task.noop")
)
