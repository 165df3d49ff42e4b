//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
)

// What a person does to one subtask of a plan that stopped (issue 14, bug
// 3: without a model, a failed subtask could be neither retried nor
// skipped, and the plan stayed aborted): run it again, skip it, or mark it
// done with a note. Each changes the subtask as the plan's run starts, in
// the run's first save, and the plan then goes on as plan.resume goes on
// (with the settings it last ran with). A refusal changes nothing.

// maxNote bounds a note: a sentence or a paragraph, not a document.
const maxNote = 2000

func (pl *Planner) actSubtaskRetry(ctx context.Context, call action.Call, a SubtaskRetryArgs) (ExecuteResult, error) {
	how := ExecuteRequest{ProposedActions: a.ProposedActions, Approved: a.Approved}
	return pl.bySubtask(ctx, call, a.PlanID, a.Subtask, how, "subtask_retried", func(p *Plan, s *Subtask) (string, error) {
		if s.Status != Failed && s.Status != Skipped {
			return "", notNow(s, "retried", "a failed or skipped one")
		}
		if err := dependenciesAllow(p, s); err != nil {
			return "", err
		}
		p.unskipDependents(s.ID)
		s.Status, s.Error, s.StartedAt, s.FinishedAt, s.Note, s.MarkedBy = Pending, "", nil, nil, "", ""
		return fmt.Sprintf("subtask %s of plan %s retried by hand", s.ID, p.ID), nil
	})
}

func (pl *Planner) actSubtaskSkip(ctx context.Context, call action.Call, a SubtaskSkipArgs) (ExecuteResult, error) {
	note, err := cleanNote(a.Note, false)
	if err != nil {
		return ExecuteResult{}, err
	}
	how := ExecuteRequest{ProposedActions: a.ProposedActions, Approved: a.Approved}
	return pl.bySubtask(ctx, call, a.PlanID, a.Subtask, how, "subtask_skipped", func(p *Plan, s *Subtask) (string, error) {
		if s.Status != Failed && s.Status != Pending {
			return "", notNow(s, "skipped", "a failed or pending one")
		}
		if s.FinishedAt == nil { // a failure keeps when it failed: no idle time counts as run time
			now := call.Clock.Now()
			s.FinishedAt = &now
		}
		s.Status, s.Note, s.MarkedBy = Skipped, note, call.Principal
		msg := fmt.Sprintf("subtask %s of plan %s skipped by hand", s.ID, p.ID)
		if note != "" {
			msg += ": " + llm.Truncate(note, 80)
		}
		return msg, nil
	})
}

func (pl *Planner) actSubtaskDone(ctx context.Context, call action.Call, a SubtaskDoneArgs) (ExecuteResult, error) {
	note, err := cleanNote(a.Note, true)
	if err != nil {
		return ExecuteResult{}, err
	}
	how := ExecuteRequest{ProposedActions: a.ProposedActions, Approved: a.Approved}
	return pl.bySubtask(ctx, call, a.PlanID, a.Subtask, how, "subtask_done", func(p *Plan, s *Subtask) (string, error) {
		if s.Status != Failed && s.Status != Skipped && s.Status != Pending {
			return "", notNow(s, "marked done", "a failed, skipped or pending one")
		}
		// The note is its result, as an action's would be: dependents
		// read it under results.<id>.
		result, err := json.Marshal(map[string]string{"note": note})
		if err != nil {
			return "", err
		}
		now := call.Clock.Now()
		p.unskipDependents(s.ID)
		// Done by hand, it ran for no time here: no start, so that run
		// times leave it out (and the idle time since a failure).
		s.Status, s.Result, s.Error, s.StartedAt, s.FinishedAt = Completed, result, "", nil, &now
		s.Delta = map[string]any{"results": map[string]any{s.ID: map[string]any{"note": note}}}
		s.Note, s.MarkedBy, s.RanBy = note, call.Principal, ranBy(call)
		return fmt.Sprintf("subtask %s of plan %s marked done by hand: %s", s.ID, p.ID, llm.Truncate(note, 80)), nil
	})
}

// bySubtask checks that call may write plan id, then runs it on with
// edit's change to its subtask sub; change names the change in the
// plan.changed event, and edit returns the trace's message.
func (pl *Planner) bySubtask(ctx context.Context, call action.Call, id, sub string, how ExecuteRequest, change string,
	edit func(p *Plan, s *Subtask) (string, error)) (ExecuteResult, error) {
	acl, err := pl.allow(ctx, call, id, access.Write)
	if err != nil {
		return ExecuteResult{}, err
	}
	res, err := pl.start(ctx, call, id, nil, how, func(p *Plan) (func(), error) {
		s := p.SubtaskByID(sub)
		if s == nil {
			return nil, errs.New(errs.Validation, "subtask: plan %s has no subtask %q; plan.get lists them", id, sub).With("field", "subtask")
		}
		msg, err := edit(p, s)
		if err != nil {
			return nil, err
		}
		status := s.Status
		return func() {
			if status != Pending {
				EventSubtaskFinished.Publish(pl.env.Events, pl.audience(id), SubtaskFinishedEvent{PlanID: id, Subtask: sub, Status: status, Attempts: s.Attempts, Error: s.Error})
			}
			EventPlanChanged.Publish(pl.env.Events, pl.audience(id), PlanChangedEvent{PlanID: id, Change: change, Subtask: sub})
			err := pl.env.Update(context.WithoutCancel(ctx), func(tx *kit.Txn) error {
				_, err := tx.TraceAbout(call, about(id), "plan."+change, msg, map[string]any{"plan_id": id, "subtask": sub})
				return err
			})
			if err != nil {
				pl.env.Log.Warn("writing a trace entry failed", "plan", id, "err", err)
			}
		}, nil
	})
	return ranResult(id, acl, call.Principal, res, err)
}

// notNow is the error of a subtask whose status does not allow what was
// asked.
func notNow(s *Subtask, what, which string) error {
	return errs.New(errs.Validation, "subtask: %s is %s, so it cannot be %s; choose %s (plan.status lists them)", s.ID, s.Status, what, which).
		With("field", "subtask").With("status", s.Status)
}

// dependenciesAllow refuses to retry a subtask a skipped or failed
// dependency still holds back: the run would skip it again at once.
func dependenciesAllow(p *Plan, s *Subtask) error {
	for _, d := range s.Dependencies {
		if dep := p.SubtaskByID(d); dep != nil && (dep.Status == Skipped || dep.Status == Failed) {
			return errs.New(errs.Validation, "subtask: %s depends on %s, which is %s; retry or mark done %s first", s.ID, d, dep.Status, d).
				With("field", "subtask")
		}
	}
	return nil
}

// cleanNote trims a note and checks it: required for plan.subtask_done
// (it is the subtask's result), at most maxNote bytes.
func cleanNote(note string, required bool) (string, error) {
	note = strings.TrimSpace(note)
	switch {
	case required && note == "":
		return "", kit.Validation("note", "say what was done; it is recorded as the subtask's result")
	case len(note) > maxNote:
		return "", kit.Validation("note", "at most %d bytes, not %d; keep it to what was done", maxNote, len(note))
	}
	return note, nil
}
