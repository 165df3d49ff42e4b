//go:build !noplanning

package planner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// retryBase is the first retry's wait; each next one doubles (100 ms, 200
// ms, 400 ms...).
const retryBase = 100 * time.Millisecond

// outcome is a worker's report.
type outcome struct {
	id       string
	result   json.RawMessage
	delta    map[string]any
	err      error
	attempts int
}

// run is one execution of a plan, driven by one goroutine (the scheduler:
// start and loop), with workers running subtasks and reporting back. The
// scheduler is the only writer of the plan; it changes it holding live.mu,
// so that readers (plan.get, plan.status while it runs) can copy it.
type run struct {
	pl       *Planner
	call     action.Call
	plan     *Plan
	live     *livePlan
	settings Settings
	order    []string
	byID     map[string]*Subtask
	// proposed is how the run treats the actions a model chose: ProposedRun,
	// ProposedAsk or ProposedApprove.
	proposed string
	// pos is each subtask's place in order; dependents the subtasks that
	// depend on each; unmet how many of each one's dependencies have not
	// completed; ready the Pending subtasks with none unmet, by pos. They
	// make scheduling a step O(log n) rather than a scan of the plan.
	pos        map[string]int
	dependents map[string][]string
	unmet      map[string]int
	ready      intHeap
	running    map[string]bool
	results    chan outcome
	failure    error // why the run stopped early
	// replanFirst says the run starts with a replan of the failures an
	// earlier run left (plan.execute under replan).
	replanFirst bool
}

// Execute runs a plan: subtasks in dependency order, independent ones in
// parallel up to max_concurrent, failures handled per on_subtask_failure,
// progress checkpointed after every subtask. Completed subtasks (a resumed
// plan) are not run again.
func (pl *Planner) Execute(ctx context.Context, call action.Call, id string, req ExecuteRequest) (ExecuteResult, error) {
	switch {
	case req.MaxConcurrent < 0:
		return ExecuteResult{}, kit.Validation("max_concurrent", "must be 1 or more")
	case req.MaxRetries < 0:
		return ExecuteResult{}, kit.Validation("max_retries", "must be 0 or more")
	case req.OnSubtaskFailure != "" && !slices.Contains(Policies, req.OnSubtaskFailure):
		return ExecuteResult{}, kit.Validation("on_subtask_failure", "unknown policy %q; use abort, skip, retry or replan", req.OnSubtaskFailure)
	case req.Fallback != "" && (req.Fallback == "retry" || !slices.Contains(Policies, req.Fallback)):
		return ExecuteResult{}, kit.Validation("fallback", "unknown fallback %q; use abort, skip or replan", req.Fallback)
	}
	settings := Settings{MaxConcurrent: max(req.MaxConcurrent, 0), OnSubtaskFailure: req.OnSubtaskFailure, Fallback: req.Fallback,
		MaxRetries: req.MaxRetries, Checkpoint: req.Checkpoint, CheckpointPath: req.CheckpointPath}
	if settings.CheckpointPath != "" {
		settings.CheckpointBy = ranBy(call)
	}
	if settings.MaxConcurrent == 0 {
		settings.MaxConcurrent = 4
	}
	if settings.OnSubtaskFailure == "" {
		settings.OnSubtaskFailure = "abort"
	}
	if settings.Fallback == "" {
		settings.Fallback = "abort"
	}
	if settings.OnSubtaskFailure == "retry" && settings.MaxRetries == 0 {
		settings.MaxRetries = 3
	}
	fresh := req.Fresh
	req.replanFailed = !fresh && settings.OnSubtaskFailure == "replan"
	return pl.start(ctx, call, id, &settings, req, func(p *Plan) (func(), error) {
		if fresh {
			p.runAgain()
		} else {
			p.applyPolicy(settings.OnSubtaskFailure, call.Clock.Now())
		}
		return nil, nil
	})
}

// applyPolicy gives the failed subtasks of an earlier run the policy of
// this one (issue 14, bug 3: executing an aborted plan with skip left its
// failure as it was): skip marks them skipped (their dependents follow
// in the loop), abort and retry run them again, replan leaves them to the
// replan the run starts with.
func (p *Plan) applyPolicy(policy string, now time.Time) {
	for _, s := range p.Subtasks {
		if s.Status != Failed {
			continue
		}
		switch policy {
		case "skip":
			s.Status = Skipped
			if s.FinishedAt == nil {
				s.FinishedAt = &now
			}
		case "abort", "retry":
			p.unskipDependents(s.ID)
			s.Status, s.StartedAt, s.FinishedAt = Pending, nil, nil
		}
	}
}

// runAgain makes every subtask pending with nothing recorded of earlier
// runs (plan.execute fresh: a completed plan run anew). Approvals stay.
func (p *Plan) runAgain() {
	for _, s := range p.Subtasks {
		*s = Subtask{ID: s.ID, Description: s.Description, Dependencies: s.Dependencies, Action: s.Action, Status: Pending,
			Warning: s.Warning, Proposed: s.Proposed, ApprovedBy: s.ApprovedBy, Depth: s.Depth, Parent: s.Parent}
	}
}

// skippedByDependency is the start of the error of a subtask skipped
// because a dependency was (skipDependents).
const skippedByDependency = "a dependency ("

// unskipDependents makes pending again the subtasks skipped, transitively,
// because subtask id was: id runs again or is done, so they may run.
// (The loop skips again those that another skipped dependency holds.)
func (p *Plan) unskipDependents(id string) {
	dependents := map[string][]*Subtask{}
	for _, s := range p.Subtasks {
		for _, d := range s.Dependencies {
			dependents[d] = append(dependents[d], s)
		}
	}
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		at := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range dependents[at] {
			if seen[s.ID] || s.Status != Skipped || !strings.HasPrefix(s.Error, skippedByDependency) {
				continue
			}
			seen[s.ID] = true
			s.Status, s.Error, s.FinishedAt = Pending, "", nil
			stack = append(stack, s.ID)
		}
	}
}

// Resume runs a plan again with the settings it last ran with, skipping
// what it completed; only how to treat the actions a model chose is taken
// from how (ProposedActions, Approved).
func (pl *Planner) Resume(ctx context.Context, call action.Call, id string, how ExecuteRequest) (ExecuteResult, error) {
	return pl.start(ctx, call, id, nil, how, nil)
}

// prepareFunc changes a plan, loaded once the run holds it, before the run
// saves it and starts: what plan.execute's policy or a subtask action does
// to its failed subtasks. It returns what to do once the run has saved the
// change (publish, trace), or an error that refuses the run with nothing
// changed.
type prepareFunc func(p *Plan) (after func(), err error)

func (pl *Planner) start(ctx context.Context, call action.Call, id string, settings *Settings, how ExecuteRequest, prepare prepareFunc) (ExecuteResult, error) {
	proposed := cmp.Or(how.ProposedActions, ProposedRun)
	if !slices.Contains([]string{ProposedRun, ProposedAsk, ProposedApprove}, proposed) {
		return ExecuteResult{}, kit.Validation("proposed_actions", "unknown %q; use run, ask or approve", proposed)
	}
	if len(how.Approved) > 0 && proposed != ProposedApprove {
		return ExecuteResult{}, kit.Validation("approved", "goes with proposed_actions approve")
	}
	// Hold the plan before reading it: read first, and a run that ends in
	// between would save over what this one read (two runs from one
	// stale copy).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !pl.claim(id, nil, cancel) {
		return ExecuteResult{}, errs.New(errs.Conflict, "plan %q is already running; cancel it with plan.cancel or wait", id).With("field", "plan_id")
	}
	defer pl.release(id)
	var p *Plan
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		var err error
		p, err = loadPlan(tx, id)
		return err
	})
	if err != nil {
		return ExecuteResult{}, err
	}
	if settings == nil {
		if p.Settings == nil {
			return ExecuteResult{}, errs.New(errs.Validation, "plan %q never ran; use plan.execute", id).With("field", "plan_id")
		}
		// A file path is the person's who gave it: another principal's
		// resume writes no checkpoint file there.
		again := *p.Settings
		if again.CheckpointPath != "" && runnerOf(&Subtask{RanBy: again.CheckpointBy}) != principalOf(call) {
			again.CheckpointPath, again.CheckpointBy = "", ""
		}
		settings = &again
	}
	order, err := p.Validate()
	if err != nil {
		return ExecuteResult{}, err
	}
	var after func()
	if prepare != nil {
		if after, err = prepare(p); err != nil {
			return ExecuteResult{}, err
		}
	}
	if err := approveProposed(p, call.Principal, proposed, how.Approved); err != nil {
		return ExecuteResult{}, err
	}
	r := &run{pl: pl, call: call, plan: p, live: &livePlan{plan: p}, settings: *settings, order: order, proposed: proposed,
		running: map[string]bool{}, results: make(chan outcome), replanFirst: how.replanFailed}
	for _, s := range p.Subtasks {
		if s.Status == InProgress { // interrupted last time
			s.Status = Pending
		}
	}
	p.Status, p.Settings = "running", settings
	r.index()
	if err := r.saveAll(ctx, true); err != nil {
		return ExecuteResult{}, err
	}
	if after != nil {
		after()
	}
	pl.showLive(id, r.live)
	r.loop(ctx)
	r.finish(ctx.Err() != nil)
	if err := r.saveAll(context.WithoutCancel(ctx), false); err != nil {
		return ExecuteResult{}, err
	}
	counts := p.Count()
	EventPlanFinished.Publish(pl.env.Events, pl.audience(id), PlanFinishedEvent{PlanID: id, Status: p.Status, Counts: counts})
	pl.traceRun(context.WithoutCancel(ctx), call, p, counts)
	return ExecuteResult{Plan: p, State: p.finalState(r.order), Progress: counts}, nil
}

// edit changes the plan where readers may be looking.
func (r *run) edit(fn func()) {
	r.live.mu.Lock()
	defer r.live.mu.Unlock()
	fn()
}

// index builds the scheduling indexes for the plan as it is (at the start,
// and after a replan).
func (r *run) index() {
	r.byID = r.plan.index()
	r.pos = make(map[string]int, len(r.order))
	for i, id := range r.order {
		r.pos[id] = i
	}
	r.dependents = make(map[string][]string, len(r.order))
	r.unmet = make(map[string]int, len(r.order))
	r.ready = r.ready[:0]
	for _, s := range r.plan.Subtasks {
		n := 0
		for _, d := range s.Dependencies {
			r.dependents[d] = append(r.dependents[d], s.ID)
			if r.byID[d].Status != Completed {
				n++
			}
		}
		r.unmet[s.ID] = n
		if n == 0 && s.Status == Pending {
			r.ready.push(r.pos[s.ID])
		}
	}
}

// loop schedules until nothing is left to run.
func (r *run) loop(ctx context.Context) {
	if r.replanFirst && r.pendingReplan() {
		// Failures of an earlier run, executed now under replan.
		if err := r.replan(ctx); err != nil {
			r.failure = err
			return
		}
	}
	// Pending subtasks behind ones skipped in an earlier run.
	for _, id := range r.order {
		if r.byID[id].Status == Skipped {
			r.skipDependents(id)
		}
	}
	stopping := false
	for {
		for !stopping && ctx.Err() == nil && len(r.running) < r.settings.MaxConcurrent && r.ready.len() > 0 {
			if id := r.order[r.ready.pop()]; r.byID[id].Status == Pending && !r.running[id] {
				r.launch(ctx, id)
			}
		}
		if len(r.running) == 0 {
			if stopping || ctx.Err() != nil || r.ready.len() == 0 {
				return
			}
			continue
		}
		select {
		case o := <-r.results:
			delete(r.running, o.id)
			if stop := r.settle(ctx, o); stop {
				stopping = true
			}
		case <-ctx.Done():
			// Workers see the cancellation and report; keep collecting.
			o := <-r.results
			delete(r.running, o.id)
			r.settle(ctx, o)
		}
		if stopping && len(r.running) == 0 && r.failure == nil && r.pendingReplan() {
			// Replan with nothing running, then carry on.
			if err := r.replan(ctx); err != nil {
				r.failure = err
				return
			}
			stopping = false
		}
	}
}

// completed makes the dependents of a completed subtask that were waiting
// only for it ready.
func (r *run) completed(id string) {
	for _, d := range r.dependents[id] {
		if r.unmet[d]--; r.unmet[d] == 0 && r.byID[d].Status == Pending && !r.running[d] {
			r.ready.push(r.pos[d])
		}
	}
}

// skipDependents marks Skipped every Pending subtask that depends on the
// skipped subtask id, transitively, in execution order (skip policy).
func (r *run) skipDependents(id string) {
	seen := map[string]bool{}
	var reach []int
	stack := slices.Clone(r.dependents[id])
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] || r.byID[d].Status != Pending {
			continue
		}
		seen[d] = true
		reach = append(reach, r.pos[d])
		stack = append(stack, r.dependents[d]...)
	}
	slices.Sort(reach)
	for _, at := range reach {
		s := r.byID[r.order[at]]
		for _, d := range s.Dependencies {
			if r.byID[d].Status == Skipped {
				r.edit(func() { s.Status, s.Error = Skipped, skippedByDependency+d+") was skipped" })
				r.checkpoint(context.Background(), s)
				r.publishFinished(s)
				break
			}
		}
	}
}

// approveProposed applies how a run treats the actions a model chose for
// p's unfinished subtasks (proposed, ExecuteRequest.ProposedActions):
// "ask" refuses the run before anything changes while any waits for
// approval, "approve" records principal as having approved them (issue 13,
// item 1: a model's choice is shown to the person and confirmed before it
// runs; the console asks, then approves).
//
// shown, when set, is what the person approved: the run starts only if the
// actions waiting are exactly those (a replan may have changed them since).
func approveProposed(p *Plan, principal, proposed string, shown []ProposedAction) error {
	if proposed == ProposedRun {
		return nil
	}
	var waiting []*Subtask
	for _, s := range p.Subtasks {
		if awaitsApproval(s) && s.Status != Completed {
			waiting = append(waiting, s)
		}
	}
	if len(waiting) == 0 && shown == nil {
		return nil
	}
	if proposed == ProposedAsk {
		names := make([]string, len(waiting))
		ids := make([]string, len(waiting))
		for i, s := range waiting {
			names[i] = fmt.Sprintf("%s (%s)", s.ID, s.Action.Name)
			ids[i] = s.ID
		}
		return errs.New(errs.Validation, "plan %s: a model chose the actions of %s; look at them (plan.get), then run it with proposed_actions approve, or write the plan yourself (plan.create)",
			p.ID, strings.Join(names, ", ")).With("field", "proposed_actions").With("subtasks", ids)
	}
	if shown != nil && !sameProposals(waiting, shown) {
		return errs.New(errs.Conflict, "plan %s: the actions a model chose are not the ones you approved (it was replanned meanwhile?); look at them again (plan.get)", p.ID).
			With("field", "approved")
	}
	for _, s := range waiting {
		s.ApprovedBy = principal
	}
	return nil
}

// sameProposals reports whether shown names exactly the waiting subtasks'
// actions, arguments included (JSON compared after compacting).
func sameProposals(waiting []*Subtask, shown []ProposedAction) bool {
	if len(waiting) != len(shown) {
		return false
	}
	want := map[string]ActionSpec{}
	for _, a := range shown {
		want[a.Subtask] = a.Action
	}
	for _, s := range waiting {
		a, ok := want[s.ID]
		if !ok || a.Name != s.Action.Name || !sameJSON(a.Args, s.Action.Args) {
			return false
		}
	}
	return true
}

// sameJSON compares two JSON texts as values, ignoring spacing and key
// order (absent and null are the same). Numbers compare as written, not as
// float64: 9007199254740993 is not 9007199254740992.
func sameJSON(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		var v any
		if len(raw) == 0 {
			return nil, true
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		err := d.Decode(&v)
		return v, err == nil
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// awaitsApproval reports whether s runs an action a model chose that no
// one approved.
func awaitsApproval(s *Subtask) bool {
	return s.Proposed && s.Action != nil && s.ApprovedBy == ""
}

// launch starts a worker for subtask id on its own copy of its input state.
func (r *run) launch(ctx context.Context, id string) {
	s := r.byID[id]
	now := r.call.Clock.Now()
	r.edit(func() { s.Status, s.StartedAt, s.Error, s.RanBy = InProgress, &now, "", ranBy(r.call) })
	r.running[id] = true
	initial, deltas := r.plan.State, r.ancestorDeltas(id)
	spec := s.Action
	if r.proposed != ProposedRun && awaitsApproval(s) {
		// A replan during this run proposed it, after the person
		// approved what the plan held: nobody approved this action.
		spec = nil
		r.edit(func() {
			s.Warning = fmt.Sprintf("the model proposed the action %q during the run, and nobody approved it: the subtask ran its description instead", s.Action.Name)
		})
	}
	description := s.Description
	attemptsSoFar := s.Attempts
	retries := 0
	if r.settings.OnSubtaskFailure == "retry" {
		retries = r.settings.MaxRetries
	}
	planID := r.plan.ID
	// base is the subtask as it starts, from which a writing action's
	// transaction makes its completed record (see runSubtask).
	var base *Subtask
	if r.settings.Checkpoint || r.settings.CheckpointPath != "" {
		c := *s
		c.Dependencies = slices.Clone(s.Dependencies)
		base = &c
	}
	// The first attempt's start is published here, by the scheduler, so
	// that events show subtasks launched together as started together
	// (before any of them finishes); retries are published by the worker.
	EventSubtaskStarted.Publish(r.pl.env.Events, r.pl.audience(planID), SubtaskStartedEvent{PlanID: planID, Subtask: id, Attempt: 1})
	go func() {
		// The input state is built here, in parallel with other workers:
		// deltas are never changed once recorded.
		input := stateFrom(initial, deltas)
		var pristine map[string]any
		if retries > 0 {
			pristine = deepCopy(input).(map[string]any) // each retry starts from the same state
		}
		o := outcome{id: id, attempts: attemptsSoFar}
		for attempt := 1; ; attempt++ {
			o.attempts++
			state := input
			if attempt > 1 {
				EventSubtaskStarted.Publish(r.pl.env.Events, r.pl.audience(planID), SubtaskStartedEvent{PlanID: planID, Subtask: id, Attempt: attempt})
				state = deepCopy(pristine).(map[string]any)
			}
			var progress *completion
			if base != nil {
				progress = &completion{record: func(result json.RawMessage, delta map[string]any) *Subtask {
					done, finished := *base, r.call.Clock.Now()
					done.Status, done.Result, done.Delta, done.Attempts, done.FinishedAt = Completed, result, delta, o.attempts, &finished
					return &done
				}}
			}
			// task.fail counts the subtask's attempts over every run: a
			// retry by hand (plan.subtask_retry) is its next attempt.
			o.result, o.delta, o.err = r.pl.runSubtask(ctx, r.call, r.plan, id, description, spec, state, o.attempts, progress)
			if o.err == nil || attempt > retries || ctx.Err() != nil {
				break
			}
			// Exponential backoff: 100 ms, 200 ms, 400 ms...
			if r.pl.sleep(ctx, retryBase<<(attempt-1)) != nil {
				break
			}
		}
		r.results <- o
	}()
}

// ancestorDeltas lists the deltas of the completed ancestors of subtask id,
// in execution order: what its input state is made of.
func (r *run) ancestorDeltas(id string) []map[string]any {
	seen := map[string]bool{}
	var at []int
	stack := slices.Clone(r.byID[id].Dependencies)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if s := r.byID[d]; s != nil {
			if s.Status == Completed {
				at = append(at, r.pos[d])
			}
			stack = append(stack, s.Dependencies...)
		}
	}
	slices.Sort(at)
	deltas := make([]map[string]any, 0, len(at))
	for _, p := range at {
		// What another principal's run produced is not this run's to
		// build on: it may hold what only that principal could read.
		if s := r.byID[r.order[p]]; runnerOf(s) == principalOf(r.call) {
			deltas = append(deltas, s.Delta)
		}
	}
	return deltas
}

// principalOf is the principal call acts as, named as runnerOf names it.
func principalOf(call action.Call) string { return runnerOf(&Subtask{RanBy: ranBy(call)}) }

// settle records a worker's outcome; it returns true when the run must stop
// launching (abort, cancellation, or a replan to make).
func (r *run) settle(ctx context.Context, o outcome) bool {
	s := r.byID[o.id]
	now := r.call.Clock.Now()
	if o.err == nil {
		r.edit(func() {
			s.Attempts, s.Status, s.Result, s.Delta, s.FinishedAt = o.attempts, Completed, o.result, o.delta, &now
		})
		r.completed(s.ID)
		r.checkpoint(ctx, s)
		r.publishFinished(s)
		return r.failure != nil // a checkpoint that could not be written stops the run
	}
	if ctx.Err() != nil {
		// Interrupted (cancelled mid-action, or while waiting to retry,
		// whatever error that left): it runs again on resume.
		r.edit(func() { s.Attempts, s.Status, s.StartedAt = o.attempts, Pending, nil })
		return true
	}
	policy := r.settings.OnSubtaskFailure
	if policy == "retry" {
		policy = r.settings.Fallback // the retries are spent
	}
	status := Failed
	if policy == "skip" {
		status = Skipped
	}
	r.edit(func() { s.Attempts, s.Status, s.Error, s.FinishedAt = o.attempts, status, errs.As(o.err).Message, &now })
	r.checkpoint(ctx, s)
	r.publishFinished(s)
	switch policy {
	case "skip":
		r.skipDependents(s.ID)
		return r.failure != nil
	case "replan":
		return true
	default: // abort
		if r.failure == nil {
			r.failure = o.err
		}
		return true
	}
}

// pendingReplan reports a failed subtask waiting for a replan.
func (r *run) pendingReplan() bool {
	if r.settings.OnSubtaskFailure != "replan" && !(r.settings.OnSubtaskFailure == "retry" && r.settings.Fallback == "replan") {
		return false
	}
	return slices.ContainsFunc(r.plan.Subtasks, func(s *Subtask) bool { return s.Status == Failed })
}

// replan replaces the unfinished subtasks with new ones from the model.
func (r *run) replan(ctx context.Context) error {
	next, err := r.pl.replanned(ctx, r.plan, principalOf(r.call))
	if err != nil {
		return err
	}
	order, err := next.Validate()
	if err != nil {
		return err
	}
	r.edit(func() { *r.plan = *next })
	r.order = order
	r.index()
	if err := r.saveAll(ctx, false); err != nil {
		return err
	}
	EventPlanChanged.Publish(r.pl.env.Events, r.pl.audience(r.plan.ID), PlanChangedEvent{PlanID: r.plan.ID, Change: "replanned"})
	return nil
}

// finish sets the plan's final status (cancelled: the run's context ended).
func (r *run) finish(cancelled bool) {
	c := r.plan.Count()
	var status string
	switch {
	case r.failure != nil && c.Failed > 0:
		status = "aborted"
		if errs.KindOf(r.failure) == errs.MaxReplansExceeded || errs.KindOf(r.failure) == errs.LLM {
			status = "failed"
		}
	case r.failure != nil:
		status = "failed"
	case cancelled && (c.Pending > 0 || c.InProgress > 0):
		status = "cancelled"
	case c.Failed > 0:
		// Failed subtasks left from an earlier run (resume does not run
		// them again): the plan did not complete.
		status = "aborted"
	case c.Pending > 0 || c.InProgress > 0:
		status = "cancelled"
	case c.Skipped > 0:
		status = "partial"
	default:
		status = "completed"
	}
	r.edit(func() { r.plan.Status, r.plan.UpdatedAt = status, r.call.Clock.Now() })
}

// checkpoint records one subtask's progress: a record in the store, and
// the whole plan in the checkpoint file when there is one.
func (r *run) checkpoint(ctx context.Context, s *Subtask) {
	if r.settings.Checkpoint || r.settings.CheckpointPath != "" {
		err := r.writeFile(false, func() error {
			return r.pl.env.Store.Update(context.WithoutCancel(ctx), func(tx *storage.Tx) error { return saveProgress(tx, r.plan.ID, s) })
		})
		if err != nil && r.failure == nil {
			r.failure = errs.New(errs.Checkpoint, "checkpointing subtask %s: %w", s.ID, err)
		}
	}
	counts := r.plan.Count()
	EventProgress.Publish(r.pl.env.Events, r.pl.audience(r.plan.ID), ProgressEvent{PlanID: r.plan.ID, Completed: counts.Completed,
		Total: counts.Total, Running: len(r.running)})
}

// saveAll writes the whole plan (folding in the progress records), and the
// checkpoint file if there is one; start says it is the run's first save
// (see writeFile).
func (r *run) saveAll(ctx context.Context, start bool) error {
	r.edit(func() { r.plan.UpdatedAt = r.call.Clock.Now() })
	return r.writeFile(start, func() error {
		return r.pl.env.Store.Update(ctx, func(tx *storage.Tx) error { return savePlan(tx, r.plan) })
	})
}

// writeFile runs store, the store's part of a checkpoint, and writes the
// checkpoint file if the run has one, with what other principals' runs
// produced left out (as plan.get shows it to this run's principal). The
// file is prepared first and put in place only once store succeeded, so a
// store that refuses the write (a full disk) leaves the person's file as
// it was. A file that cannot be prepared stops the run's start (start:
// nothing has changed yet); later it fails the run only after store, whose
// record a resume relies on.
func (r *run) writeFile(start bool, store func() error) error {
	if r.settings.CheckpointPath == "" {
		return store()
	}
	b, err := EncodeCheckpoint(r.plan)
	if err != nil {
		return err
	}
	view, err := DecodeCheckpoint(b)
	if err != nil {
		return err
	}
	put, discard, err := prepareCheckpointFile(r.settings.CheckpointPath, redact(view, access.ACL{}, principalOf(r.call)))
	if err != nil {
		if start {
			return err
		}
		return errors.Join(store(), err)
	}
	defer discard()
	if err := store(); err != nil {
		return err
	}
	return put()
}

// intHeap is a min-heap of positions.
type intHeap []int

func (h intHeap) len() int { return len(h) }

func (h *intHeap) push(x int) {
	*h = append(*h, x)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if (*h)[parent] <= (*h)[i] {
			break
		}
		(*h)[parent], (*h)[i] = (*h)[i], (*h)[parent]
		i = parent
	}
}

func (h *intHeap) pop() int {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < last && (*h)[l] < (*h)[small] {
			small = l
		}
		if l+1 < last && (*h)[l+1] < (*h)[small] {
			small = l + 1
		}
		if small == i {
			break
		}
		(*h)[i], (*h)[small] = (*h)[small], (*h)[i]
		i = small
	}
	return top
}

func (r *run) publishFinished(s *Subtask) {
	EventSubtaskFinished.Publish(r.pl.env.Events, r.pl.audience(r.plan.ID), SubtaskFinishedEvent{
		PlanID: r.plan.ID, Subtask: s.ID, Status: s.Status, Attempts: s.Attempts, Error: s.Error})
}

// runSubtask runs a subtask's action once, on its copy of the state, and
// returns the result and the delta it makes to the state.
//
// progress, when the run is checkpointed, is how a writing action
// commits the subtask's completed record with its own writes.
func (pl *Planner) runSubtask(ctx context.Context, call action.Call, p *Plan, id, description string, spec *ActionSpec, state map[string]any, attempt int,
	progress *completion) (json.RawMessage, map[string]any, error) {
	name, args := "llm.complete", json.RawMessage(nil)
	if spec == nil || spec.Name == "" {
		args, _ = json.Marshal(map[string]any{
			"prompt": description,
			"system": "You are carrying out one step of a plan toward this goal: " + p.Goal + ". Do the step and answer with its result, briefly.",
		})
	} else {
		name, args = spec.Name, spec.Args
		if alias, ok := actionAliases[name]; ok {
			name = alias
		}
		if err := pl.subtaskMayRun(call, p.ID, id, name); err != nil {
			return nil, nil, err
		}
		var err error
		if args, err = substituteState(args, state); err != nil {
			return nil, nil, err
		}
	}
	sc := &subtaskContext{planID: p.ID, subtaskID: id, attempt: attempt, state: state, delta: map[string]any{}}
	finish := func(result json.RawMessage) (json.RawMessage, map[string]any, error) {
		var parsed any
		_ = json.Unmarshal(result, &parsed) // cannot fail: an action's result is JSON
		sc.delta["results"] = map[string]any{id: parsed}
		return result, sc.delta, nil
	}
	if progress == nil || !pl.joinable(name) {
		// Nothing stored changes, nothing is checkpointed, or the action
		// may wait (on a model, a worker) and so cannot hold the
		// subtask's transaction open: it runs on its own, and a kill
		// between it and its checkpoint runs it again on resume.
		result, err := pl.env.Run(context.WithValue(ctx, subtaskKey{}, sc), call, name, args)
		if err != nil {
			return nil, nil, err
		}
		return finish(result)
	}
	// The action writes, and is joinable: its writes and the subtask's completed record
	// commit in one transaction (issue 13, item 8), so that a kill leaves
	// either both — resume does not run it again — or neither — resume
	// runs it as if for the first time. The action's own Updates join the
	// transaction (kit.Join); a storage conflict runs it again from the
	// same state, as the store retries any transaction.
	var result json.RawMessage
	var delta map[string]any
	if err := ctx.Err(); err != nil {
		return nil, nil, err // cancelled: it runs on resume
	}
	var escaped bool
	var runErr error
	err := pl.env.Update(ctx, func(tx *kit.Txn) error {
		sc.state, sc.delta = deepCopy(state).(map[string]any), map[string]any{}
		joined, joint := kit.JoinStrict(context.WithValue(ctx, subtaskKey{}, sc), tx)
		out, err := pl.env.Run(joined, call, name, args)
		broken := joint.Close()
		switch {
		case joint.Refused():
			return kit.ErrUnjoined // rolled back: it runs on its own below
		case joint.Escaped():
			// After an Update that failed, one committed on its own (as
			// cortex.update's max_retries re-applies after a conflict):
			// what is in tx failed; the action's outcome is that of one
			// run on its own, checkpointed after it.
			escaped, runErr = true, err
			if err == nil {
				result, delta, _ = finish(out)
			}
			return errEscaped
		case err != nil:
			return err // and its writes roll back
		case broken:
			return kit.ErrUnjoined // it went on after a failed Update, whose writes are in tx
		}
		result, delta, _ = finish(out)
		return saveProgress(tx.Tx, p.ID, progress.record(result, delta))
	})
	if escaped {
		if runErr != nil {
			return nil, nil, runErr
		}
		return result, delta, nil
	}
	if errors.Is(err, kit.ErrUnjoined) {
		sc.state, sc.delta = state, map[string]any{}
		result, err := pl.env.Run(context.WithValue(ctx, subtaskKey{}, sc), call, name, args)
		if err != nil {
			return nil, nil, err
		}
		return finish(result)
	}
	if err != nil {
		return nil, nil, err
	}
	return result, delta, nil
}

// errEscaped rolls back a subtask's transaction after an Update of its
// action committed on its own (kit.Joint.Escaped).
var errEscaped = errors.New("planner: a write of the subtask committed on its own")

// completion is how a writing subtask's transaction records it completed.
type completion struct {
	record func(result json.RawMessage, delta map[string]any) *Subtask
}

// joinable reports whether the action name writes in a way a subtask's
// transaction can hold (action.Spec.Joinable).
func (pl *Planner) joinable(name string) bool {
	a, err := pl.env.Actions.Lookup(name)
	return err == nil && a.Joinable && !a.ReadOnly
}

// readOnly reports whether the action name changes nothing stored.
func (pl *Planner) readOnly(name string) bool {
	a, err := pl.env.Actions.Lookup(name)
	return err == nil && a.ReadOnly
}

// subtaskMayRun refuses, in any plan's subtask, the plan.* actions that
// change something: a plan does not create, run, resume, replan or cancel
// plans (issue 13, item 1). They are also the only actions whose arguments
// name files (plan.create's file, plan.execute's checkpoint), and a file
// path comes only from the person — a flag, a console prompt, a batch
// script's own step — never from a plan or a model.
//
// A plan someone else wrote runs, when call's principal executes it, only
// the actions a model may propose (read-only and task.*): its subtasks act
// with the executor's authority, and a plan is not a way to borrow it.
func (pl *Planner) subtaskMayRun(call action.Call, planID, id, name string) error {
	if strings.HasPrefix(name, "plan.") && !pl.readOnly(name) {
		return errs.New(errs.Permission, "subtask %s: a plan's subtask may not run %s (a plan does not create, run or change plans, and no file path comes from a plan); run it yourself, outside the plan", id, name).
			With("field", "action.name").With("action", name)
	}
	if a, err := pl.env.Actions.Lookup(name); err == nil && (a.NamesFiles || len(a.FileArgs) > 0) {
		return errs.New(errs.Permission, "subtask %s: a plan's subtask may not run %s (its arguments name a file, and no file path comes from a plan); run it yourself, outside the plan", id, name).
			With("field", "action.name").With("action", name)
	}
	if strings.HasPrefix(name, "token.") {
		// Tokens are managed only by the operator, by hand (engram
		// token), never over TCP: a plan must not be a way around that,
		// nor keep a new token's secret in its results.
		return errs.New(errs.Permission, "subtask %s: a plan's subtask may not run %s (tokens are managed only with engram token, by hand); run it yourself, outside the plan", id, name).
			With("field", "action.name").With("action", name)
	}
	if pl.modelMayPropose(name) {
		return nil
	}
	var acl access.ACL
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		var err error
		acl, err = loadACL(tx, planID)
		return err
	})
	if err != nil {
		return err
	}
	if owner := acl.OwnerOf(); owner != call.Principal {
		return errs.New(errs.Permission, "subtask %s: %s wrote this plan, so when %s runs it, it may run only read-only and task.* actions, not %s; ask %s to run it",
			id, owner, call.Principal, name, owner).With("field", "action.name").With("action", name)
	}
	return nil
}

// actionAliases lets plans name the test and workflow actions briefly.
var actionAliases = map[string]string{"sleep": "task.sleep", "fail": "task.fail", "noop": "task.noop"}

// statePattern is a whole-string reference to the state: ${state.a.b}.
var statePattern = regexp.MustCompile(`^\$\{state((?:\.[^.{}]+)*)\}$`)

// substituteState replaces string arguments of the form ${state.path} by
// that value of the subtask's state.
func substituteState(args json.RawMessage, state map[string]any) (json.RawMessage, error) {
	if !bytes.Contains(args, []byte("${state")) {
		return args, nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, errs.New(errs.Validation, "action.args: not JSON: %v", err)
	}
	var walk func(any) (any, error)
	walk = func(x any) (any, error) {
		switch t := x.(type) {
		case string:
			m := statePattern.FindStringSubmatch(t)
			if m == nil {
				return t, nil
			}
			var cur any = state
			for _, part := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
				if part == "" {
					continue
				}
				obj, ok := cur.(map[string]any)
				if !ok || obj[part] == nil {
					return nil, errs.New(errs.Validation, "action.args: %s: the state has no %q", t, part)
				}
				cur = obj[part]
			}
			return cur, nil
		case map[string]any:
			for k, y := range t {
				nv, err := walk(y)
				if err != nil {
					return nil, err
				}
				t[k] = nv
			}
		case []any:
			for i, y := range t {
				nv, err := walk(y)
				if err != nil {
					return nil, err
				}
				t[i] = nv
			}
		}
		return x, nil
	}
	v, err := walk(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// subtaskContext is what the state.* and task.* actions see of the subtask
// running them.
type subtaskContext struct {
	planID, subtaskID string
	attempt           int
	state             map[string]any
	delta             map[string]any
}

type subtaskKey struct{}

func subtaskOf(ctx context.Context) *subtaskContext {
	sc, _ := ctx.Value(subtaskKey{}).(*subtaskContext)
	return sc
}

// traceRun notes the outcome of a run in the trace.
func (pl *Planner) traceRun(ctx context.Context, call action.Call, p *Plan, c Counts) {
	msg := fmt.Sprintf("plan %s %s: %d/%d completed", p.ID, p.Status, c.Completed, c.Total)
	if c.Failed > 0 || c.Skipped > 0 {
		msg += fmt.Sprintf(", %d failed, %d skipped", c.Failed, c.Skipped)
	}
	err := pl.env.Update(ctx, func(tx *kit.Txn) error {
		_, err := tx.Trace(call, "plan.executed", msg, map[string]any{"plan_id": p.ID, "status": p.Status})
		return err
	})
	if err != nil {
		pl.env.Log.Warn("writing a trace entry failed", "plan", p.ID, "err", err)
	}
}
