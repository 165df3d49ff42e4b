package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// Goal is a goal as the goal tools show it: a cortex item of type goal.
type Goal struct {
	ID          string   `json:"id" jsonschema:"the goal's id"`
	Title       string   `json:"title" jsonschema:"what the goal is"`
	Description string   `json:"description" jsonschema:"more about it"`
	Status      string   `json:"status" jsonschema:"active, in_progress, blocked, completed or archived"`
	Priority    string   `json:"priority" jsonschema:"critical, high, medium or low"`
	Progress    int      `json:"progress" jsonschema:"how far along it is, 0 to 100"`
	DueAt       string   `json:"due_at,omitempty" jsonschema:"when it is due, RFC 3339 (absent: no due date)"`
	Blocking    bool     `json:"blocking" jsonschema:"whether it blocks other work"`
	Tags        []string `json:"tags" jsonschema:"its tags"`
	Parent      string   `json:"parent,omitempty" jsonschema:"the item it is part of (absent: none)"`
	Owner       string   `json:"owner" jsonschema:"the agent that owns it"`
	Version     int      `json:"version" jsonschema:"its version, counting every change: pass it to update_goal as expected_version"`
	CreatedAt   string   `json:"created_at" jsonschema:"when it was created, RFC 3339"`
	UpdatedAt   string   `json:"updated_at" jsonschema:"when it last changed, RFC 3339"`
}

// goalOf is the Goal of a cortex item.
func goalOf(it *cortex.Item) Goal {
	g := Goal{ID: it.ID, Title: it.Title, Description: it.Description, Status: it.Status, Priority: it.Priority,
		Progress: it.Progress, Blocking: it.Blocking, Tags: it.Tags, Parent: it.Parent, Owner: it.Owner,
		Version: it.GlobalVersion, CreatedAt: it.CreatedAt.Format(time.RFC3339Nano), UpdatedAt: it.UpdatedAt.Format(time.RFC3339Nano)}
	if it.DueAt != nil {
		g.DueAt = it.DueAt.Format(time.RFC3339Nano)
	}
	if g.Tags == nil {
		g.Tags = []string{}
	}
	return g
}

// CreateGoalInput is create_goal's input.
type CreateGoalInput struct {
	Title       string   `json:"title" jsonschema:"what the goal is (required)"`
	Description string   `json:"description,omitempty" jsonschema:"more about it"`
	Priority    string   `json:"priority,omitempty" jsonschema:"critical, high, medium (the default) or low"`
	Status      string   `json:"status,omitempty" jsonschema:"active (the default), in_progress, blocked or completed"`
	Progress    *int     `json:"progress,omitempty" jsonschema:"how far along it is, 0 to 100 (default 0)"`
	DueAt       string   `json:"due_at,omitempty" jsonschema:"when it is due, RFC 3339, e.g. 2025-11-06T17:00:00Z"`
	Blocking    bool     `json:"blocking,omitempty" jsonschema:"whether it blocks other work"`
	Tags        []string `json:"tags,omitempty" jsonschema:"tags to find it by"`
	Parent      string   `json:"parent,omitempty" jsonschema:"the id of a goal this one is part of"`
}

// GoalOutput is the output of create_goal: the goal.
type GoalOutput struct {
	Goal Goal `json:"goal" jsonschema:"the goal as it stands now"`
}

// UpdateGoalInput is update_goal's input: the fields to change, and the
// version they were read at.
type UpdateGoalInput struct {
	ID              string    `json:"id" jsonschema:"the goal to update (required)"`
	ExpectedVersion *int      `json:"expected_version,omitempty" jsonschema:"the goal's version when you read it: if a field you change has changed since, the update is a ConflictError whose details.current is the goal as it is now, to merge and retry with its version; without it the update applies whatever changed"`
	Title           *string   `json:"title,omitempty" jsonschema:"a new title"`
	Description     *string   `json:"description,omitempty" jsonschema:"a new description"`
	Priority        *string   `json:"priority,omitempty" jsonschema:"critical, high, medium or low"`
	Status          *string   `json:"status,omitempty" jsonschema:"active, in_progress, blocked, completed or archived"`
	Progress        *int      `json:"progress,omitempty" jsonschema:"how far along it is, 0 to 100"`
	DueAt           *string   `json:"due_at,omitempty" jsonschema:"when it is due, RFC 3339 (empty string: no due date)"`
	Blocking        *bool     `json:"blocking,omitempty" jsonschema:"whether it blocks other work"`
	Tags            *[]string `json:"tags,omitempty" jsonschema:"its tags (replacing the ones it has)"`
}

// UpdateGoalOutput is update_goal's output.
type UpdateGoalOutput struct {
	Goal   Goal `json:"goal" jsonschema:"the goal as it stands after the update"`
	Merged bool `json:"merged" jsonschema:"true when the goal had changed since expected_version but not in the fields you changed, so your change was applied on top"`
}

// ActiveGoalsInput is active_goals's input.
type ActiveGoalsInput struct {
	Tags     []string `json:"tags,omitempty" jsonschema:"only goals with any of these tags"`
	Priority []string `json:"priority,omitempty" jsonschema:"only goals of these priorities"`
	Text     string   `json:"text,omitempty" jsonschema:"only goals whose title or description holds all these words"`
	Limit    int      `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 1000)"`
	Cursor   string   `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// ActiveGoalsOutput is active_goals's output (and the goals resource's
// content).
type ActiveGoalsOutput struct {
	Goals      []Goal `json:"goals" jsonschema:"the open goals you may read, most urgent first (priority, due date, blocking, age)"`
	Count      int    `json:"count" jsonschema:"how many goals match, on every page"`
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page (absent: this is the last)"`
}

// GoalHistoryInput is goal_history's input.
type GoalHistoryInput struct {
	ID string `json:"id" jsonschema:"the goal (required)"`
}

// GoalHistoryOutput is goal_history's output: the goal's versions.
type GoalHistoryOutput struct {
	ID            string        `json:"id" jsonschema:"the goal"`
	Versions      []GoalVersion `json:"versions" jsonschema:"every change of the goal, oldest first: version 1 is its creation"`
	ChainVerified bool          `json:"chain_verified" jsonschema:"whether the audit trail's hash chain verifies (nobody rewrote it)"`
}

// GoalVersion is one change of a goal.
type GoalVersion struct {
	Version  int           `json:"version" jsonschema:"the version this change made"`
	Kind     string        `json:"kind" jsonschema:"create, update, delete, revert, share or revoke"`
	By       string        `json:"by" jsonschema:"the agent that made it"`
	At       string        `json:"at" jsonschema:"when, RFC 3339"`
	Merged   bool          `json:"merged" jsonschema:"whether it was merged onto a newer version than its writer read"`
	Summary  string        `json:"summary,omitempty" jsonschema:"what it did, in words"`
	Changes  []FieldChange `json:"changes" jsonschema:"the fields it changed"`
	Previous int           `json:"previous,omitempty" jsonschema:"the version it followed (absent for the creation)"`
}

// FieldChange is one field's value before and after a change.
type FieldChange struct {
	Field string `json:"field" jsonschema:"the field"`
	Old   any    `json:"old" jsonschema:"its value before (null at creation)"`
	New   any    `json:"new" jsonschema:"its value after"`
}

// addGoalTools registers create_goal, update_goal, active_goals and
// goal_history.
func (s *Server) addGoalTools() {
	addTool(s, toolSpec{name: "create_goal", title: "Create a goal",
		description: "Create a goal you own. Returns it with its id and version (pass the version to update_goal)."},
		func(ctx context.Context, cl *caller, in CreateGoalInput) (GoalOutput, error) {
			fields := map[string]any{"title": in.Title}
			setIf(fields, "description", in.Description, in.Description != "")
			setIf(fields, "priority", in.Priority, in.Priority != "")
			setIf(fields, "status", in.Status, in.Status != "")
			setIf(fields, "progress", in.Progress, in.Progress != nil)
			setIf(fields, "due_at", in.DueAt, in.DueAt != "")
			setIf(fields, "blocking", in.Blocking, in.Blocking)
			setIf(fields, "tags", in.Tags, in.Tags != nil)
			setIf(fields, "parent", in.Parent, in.Parent != "")
			raw, err := rawFields(fields)
			if err != nil {
				return GoalOutput{}, err
			}
			res, err := call(ctx, cl, cortex.ActionCreate, cortex.CreateArgs{Type: "goal", Fields: raw})
			if err != nil {
				return GoalOutput{}, err
			}
			return GoalOutput{Goal: goalOf(res.Item)}, nil
		})

	addTool(s, toolSpec{name: "update_goal", title: "Update a goal",
		description: "Change some of a goal's fields. Pass expected_version (the version you read) so that a change someone " +
			"made since to a field you change is a conflict, answered with the goal as it is now, instead of being overwritten.",
		destructive: true, idempotent: true},
		func(ctx context.Context, cl *caller, in UpdateGoalInput) (UpdateGoalOutput, error) {
			updates := map[string]any{}
			setIf(updates, "title", in.Title, in.Title != nil)
			setIf(updates, "description", in.Description, in.Description != nil)
			setIf(updates, "priority", in.Priority, in.Priority != nil)
			setIf(updates, "status", in.Status, in.Status != nil)
			setIf(updates, "progress", in.Progress, in.Progress != nil)
			if in.DueAt != nil {
				if *in.DueAt == "" {
					updates["due_at"] = nil
				} else {
					updates["due_at"] = *in.DueAt
				}
			}
			setIf(updates, "blocking", in.Blocking, in.Blocking != nil)
			setIf(updates, "tags", in.Tags, in.Tags != nil)
			if len(updates) == 0 {
				return UpdateGoalOutput{}, kit.Validation("updates", "nothing to update: give at least one of title, description, priority, status, progress, due_at, blocking, tags")
			}
			if _, err := getGoal(ctx, cl, in.ID); err != nil {
				return UpdateGoalOutput{}, err
			}
			raw, err := rawFields(updates)
			if err != nil {
				return UpdateGoalOutput{}, err
			}
			res, err := call(ctx, cl, cortex.ActionUpdate, cortex.UpdateArgs{ID: in.ID, Updates: raw, ExpectedVersion: in.ExpectedVersion})
			if err != nil {
				return UpdateGoalOutput{}, withCurrentGoal(err)
			}
			return UpdateGoalOutput{Goal: goalOf(res.Item), Merged: res.MergeApplied}, nil
		})

	addTool(s, toolSpec{name: "active_goals", title: "Active goals",
		description: "Your open goals (and those shared with you), most urgent first: priority, due date, blocking, age.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, in ActiveGoalsInput) (ActiveGoalsOutput, error) {
			return activeGoals(ctx, cl, in)
		})

	addTool(s, toolSpec{name: "goal_history", title: "Goal history",
		description: "Every version of a goal, oldest first: who changed which fields from what to what, and when.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, in GoalHistoryInput) (GoalHistoryOutput, error) {
			if _, err := getGoal(ctx, cl, in.ID); err != nil {
				return GoalHistoryOutput{}, err
			}
			res, err := call(ctx, cl, cortex.ActionHistory, cortex.IDArgs{ID: in.ID})
			if err != nil {
				return GoalHistoryOutput{}, err
			}
			out := GoalHistoryOutput{ID: in.ID, Versions: []GoalVersion{}, ChainVerified: res.Verified}
			for _, m := range res.Mutations {
				v := GoalVersion{Version: m.NewVersion, Kind: m.MutationType, By: m.MutatedBy,
					At: m.MutationTimestamp.Format(time.RFC3339Nano), Merged: m.MergeApplied, Summary: m.Summary, Changes: []FieldChange{}}
				if m.PreviousVersion != nil {
					v.Previous = *m.PreviousVersion
				}
				for _, f := range m.ChangedFields {
					ch := m.FieldChanges[f]
					v.Changes = append(v.Changes, FieldChange{Field: f, Old: ch.Old, New: ch.New})
				}
				out.Versions = append(out.Versions, v)
			}
			return out, nil
		})
}

// activeGoals runs cortex.active for goals (active_goals, and the goals
// resource).
func activeGoals(ctx context.Context, cl *caller, in ActiveGoalsInput) (ActiveGoalsOutput, error) {
	res, err := call(ctx, cl, cortex.ActionActive, cortex.Query{Type: "goal", Tags: in.Tags, Priority: in.Priority,
		Text: in.Text, Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return ActiveGoalsOutput{}, err
	}
	out := ActiveGoalsOutput{Goals: []Goal{}, Count: res.Count, NextCursor: res.NextCursor}
	for _, it := range res.Items {
		out.Goals = append(out.Goals, goalOf(it))
	}
	return out, nil
}

// getGoal reads goal id: a NotFoundError when there is no such goal (an
// item of another type included), as cortex.get says for the rest.
func getGoal(ctx context.Context, cl *caller, id string) (*cortex.Item, error) {
	if id == "" {
		return nil, kit.Validation("id", "give the goal's id (create_goal and active_goals tell it)")
	}
	res, err := call(ctx, cl, cortex.ActionGet, cortex.GetArgs{ID: id})
	if err != nil {
		return nil, err
	}
	if res.Item.Type != "goal" {
		return nil, errs.New(errs.NotFound, "%q is a %s, not a goal", id, res.Item.Type).With("id", id)
	}
	return res.Item, nil
}

// withCurrentGoal gives a conflict's current item (cortex.update's
// details.current) as a Goal, the shape the agent read it in, so that it
// can merge and retry with its version.
func withCurrentGoal(err error) error {
	e := errs.As(err)
	if e == nil || e.Kind != errs.Conflict || e.Details["current"] == nil {
		return err
	}
	raw, jerr := json.Marshal(e.Details["current"])
	var it cortex.Item
	if jerr != nil || json.Unmarshal(raw, &it) != nil {
		return err
	}
	details := make(map[string]any, len(e.Details))
	for k, v := range e.Details {
		details[k] = v
	}
	details["current"] = goalOf(&it)
	out := *e
	out.Details = details
	return &out
}

// setIf sets m[key] to v when ok.
func setIf(m map[string]any, key string, v any, ok bool) {
	if ok {
		m[key] = v
	}
}

// rawFields encodes fields as cortex.create and cortex.update take them.
func rawFields(fields map[string]any) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, kit.Validation(k, "%v", err)
		}
		out[k] = raw
	}
	return out, nil
}

// ActiveGoalsURI is the resource of the agent's active goals: what
// active_goals answers without filters, as JSON.
const ActiveGoalsURI = "engram://goals/active"

// addGoalResources registers the active goals list resource, and the
// watch that announces its changes: a goal created, updated, deleted,
// reverted, shared or revoked (item.mutated), or a turn's commit
// (cortex.commit), which may change goals.
func (s *Server) addGoalResources() {
	s.MCP.AddResource(&mcp.Resource{URI: ActiveGoalsURI, Name: "active_goals", Title: "Active goals", MIMEType: "application/json",
		Description: "Your open goals, most urgent first, as active_goals answers: {goals, count, next_cursor}. Subscribe to hear when they change."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			out, err := activeGoals(ctx, s.newCaller(req.Session, ActiveGoalsURI), ActiveGoalsInput{})
			if err != nil {
				return nil, protocolError(err)
			}
			return jsonResource(ActiveGoalsURI, out)
		})
	s.addWatch(watch{kinds: []string{cortex.EventItemMutated.Name(), cortex.EventCommit.Name()},
		uris: func(ev events.Event) []string {
			if it, ok := cortex.EventItemMutated.Of(ev); ok && it.Type != "goal" {
				return nil
			}
			return []string{ActiveGoalsURI}
		},
		changed: s.goalsChanged})
}

// goalsState is what the active goals resource last held for the agent,
// and how many subscriptions to it there are.
type goalsState struct {
	mu   sync.Mutex
	subs int
	last [sha256.Size]byte
}

// subscribed counts a subscription and, for the first, notes what the
// resource holds now: what a change is measured against.
func (g *goalsState) subscribed(ctx context.Context, s *Server) {
	g.mu.Lock()
	g.subs++
	first := g.subs == 1
	g.mu.Unlock()
	if first {
		s.goalsChanged(ctx)
	}
}

// unsubscribed counts a subscription ended.
func (g *goalsState) unsubscribed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subs = max(g.subs-1, 0)
}

// goalsChanged says whether the agent's active goals differ from when it
// last looked (and notes them): a goal event of any agent triggers the
// watch, but only a change the agent can see is announced to it, so that
// it does not learn when others' goals change. Without subscribers it
// reads nothing.
func (s *Server) goalsChanged(ctx context.Context) bool {
	s.goals.mu.Lock()
	subs := s.goals.subs
	s.goals.mu.Unlock()
	if subs == 0 {
		return false
	}
	out, err := activeGoals(ctx, s.ownCaller(), ActiveGoalsInput{})
	if err != nil {
		return true // cannot tell: a reader will see the error
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return true
	}
	sum := sha256.Sum256(raw)
	s.goals.mu.Lock()
	defer s.goals.mu.Unlock()
	if sum == s.goals.last {
		return false
	}
	s.goals.last = sum
	return true
}
