// Package planner will decompose goals into plans of subtasks, validate and
// order them as a DAG, execute them with bounded parallelism, failure
// policies and checkpoints, and register the plan.* actions (seed 002). It is
// empty until the planner issue lands; main wires it in then.
package planner
