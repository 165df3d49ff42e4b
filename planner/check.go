//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/storage"
)

// checkStored compares the records kept beside each plan with the plans
// (engram check), in one read transaction:
//
//   - plan/<id> decodes as a checkpoint of plan id;
//   - plan/<id>/s/<sid> decodes, belongs to a plan that exists, and names
//     one of its subtasks;
//   - plan/<id>/acl decodes and belongs to a plan that exists (a plan
//     without one is not a problem: it was stored before plans had owners);
//   - a retired access list (idx/plan retired/<id>) is that of a deleted
//     plan, so no live plan has its id.
//
// A problem names the plan and what is wrong; an error only means the store
// could not be read.
func (pl *Planner) checkStored(ctx context.Context) ([]string, error) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// subtasks holds each plan's subtask ids (nil: the plan is unreadable,
	// so its records cannot be checked against it). A plan's record sorts
	// before the records under it, so one pass sees the plan first.
	subtasks := map[string]map[string]bool{}
	err := pl.env.Store.View(func(tx *storage.Tx) error {
		err := tx.Scan(storage.Prefix(planPrefix()), func(key, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			parts := storage.SplitKey(storage.PrefixPlan, key)
			if len(parts) == 0 {
				add("plan record at key %q: not a key the planner writes", key)
				return nil
			}
			id := parts[0]
			ids, exists := subtasks[id]
			switch {
			case len(parts) == 1:
				subtasks[id] = checkPlan(id, value, add)
			case len(parts) == 2 && parts[1] == "acl":
				var acl access.ACL
				if !exists {
					add("plan %s: an access list is stored, but the plan does not exist", id)
				} else if err := json.Unmarshal(value, &acl); err != nil {
					add("plan %s: access list unreadable: %v", id, err)
				}
			case len(parts) == 3 && parts[1] == "s":
				checkProgress(id, parts[2], value, exists, ids, add)
			default:
				add("plan record at key %q: not a key the planner writes", key)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Scan(storage.Prefix(retiredPrefix()), func(key, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			id := storage.LastPart(key)
			var acl access.ACL
			if _, live := subtasks[id]; live {
				add("plan %s: a retired access list is kept for it, but the plan is live", id)
			} else if err := json.Unmarshal(value, &acl); err != nil {
				add("plan %s (deleted): retired access list unreadable: %v", id, err)
			}
			return nil
		})
	})
	return problems, err
}

// retiredPrefix is where retiredKey puts every deleted plan's access list.
func retiredPrefix() []byte { return storage.PrefixKey(storage.PrefixIndex, "plan retired") }

// checkPlan decodes a plan's record and returns its subtask ids, or nil
// when it cannot be read (a problem then).
func checkPlan(id string, value []byte, add func(string, ...any)) map[string]bool {
	p, err := DecodeCheckpoint(value)
	if err != nil {
		add("plan %s: record unreadable: %v", id, err)
		return nil
	}
	if p.ID != id {
		add("plan %s: its record is a checkpoint of plan %q", id, p.ID)
		return nil
	}
	ids := make(map[string]bool, len(p.Subtasks))
	for _, s := range p.Subtasks {
		ids[s.ID] = true
	}
	return ids
}

// checkProgress checks one subtask's progress record against its plan.
func checkProgress(id, sid string, value []byte, exists bool, ids map[string]bool, add func(string, ...any)) {
	var s Subtask
	switch err := json.Unmarshal(value, &s); {
	case !exists:
		add("plan %s: progress of subtask %s is stored, but the plan does not exist", id, sid)
	case err != nil:
		add("plan %s: progress of subtask %s unreadable: %v", id, sid, err)
	case s.ID != sid:
		add("plan %s: progress record of subtask %s says it is subtask %q", id, sid, s.ID)
	case ids != nil && !ids[sid]:
		add("plan %s: progress of subtask %s is stored, but the plan has no such subtask", id, sid)
	}
}
