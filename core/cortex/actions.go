package cortex

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
)

// Register adds the cortex.* actions, the cortex context provider and the
// cortex counter to env, and returns the cortex.
func Register(env *kit.Env) *Cortex {
	c := New(env)
	reg := env.Actions
	action.Register(reg, action.Spec{Name: "cortex.create", Summary: "Create a goal, action or question (you own it)"}, c.actCreate)
	action.Register(reg, action.Spec{Name: "cortex.get", Summary: "An item with its field versions", ReadOnly: true}, c.actGet)
	action.Register(reg, action.Spec{Name: "cortex.update", Summary: "Update an item's fields, merging with changes to other fields"}, c.actUpdate)
	action.Register(reg, action.Spec{Name: "cortex.delete", Summary: "Soft-delete an item (status archived; queries skip it)"}, c.actDelete)
	action.Register(reg, action.Spec{Name: "cortex.history", Summary: "An item's audit trail in order, and whether its hash chain verifies", ReadOnly: true}, c.actHistory)
	action.Register(reg, action.Spec{Name: "cortex.version", Summary: "An item as it was at a version", ReadOnly: true}, c.actVersion)
	action.Register(reg, action.Spec{Name: "cortex.revert", Summary: "Make a new version with the fields of an earlier one"}, c.actRevert)
	action.Register(reg, action.Spec{Name: "cortex.share", Summary: "Grant an agent permissions on an item"}, c.actShare)
	action.Register(reg, action.Spec{Name: "cortex.revoke", Summary: "Remove an agent's access to an item"}, c.actRevoke)
	action.Register(reg, action.Spec{Name: "cortex.query", Summary: "Items you can read, filtered, in active order, with count and checksum", ReadOnly: true}, c.actQuery)
	action.Register(reg, action.Spec{Name: "cortex.active", Summary: "Your open items in turn-start order (priority, due date, blocking, age)", ReadOnly: true}, c.actActive)
	action.Register(reg, action.Spec{Name: "cortex.batch_query", Summary: "Several queries at once, results in query order", ReadOnly: true}, c.actBatchQuery)
	action.Register(reg, action.Spec{Name: "cortex.batch_update", Summary: "Many updates in one atomic transaction: all or none"}, c.actBatchUpdate)
	action.Register(reg, action.Spec{Name: "cortex.commit", Summary: "Commit a turn's updates at turn end (traced; atomic)"}, c.actCommit)
	env.AddProvider(&provider{c: c})
	env.AddCounter("cortex", c.counts)
	return c
}

type createArgs struct {
	Type   string                     `json:"type" arg:"required" help:"goal, action or question"`
	ID     string                     `json:"id,omitempty" help:"the item's id (default: a new UUID)"`
	Fields map[string]json.RawMessage `json:"fields" arg:"required" help:"title (required), description, progress, priority, status, due_at, blocking, tags, org, parent, custom"`
}

func (c *Cortex) actCreate(ctx context.Context, call action.Call, a createArgs) (map[string]*Item, error) {
	it, err := c.Create(ctx, call, a.Type, a.ID, a.Fields)
	return map[string]*Item{"item": it}, err
}

type getArgs struct {
	ID             string `json:"id" arg:"required" help:"the item"`
	IncludeDeleted bool   `json:"include_deleted,omitempty" help:"also a soft-deleted item"`
}

func (c *Cortex) actGet(ctx context.Context, call action.Call, a getArgs) (map[string]*Item, error) {
	it, err := c.Get(ctx, call, a.ID, a.IncludeDeleted)
	return map[string]*Item{"item": it}, err
}

type updateArgs struct {
	ID              string                     `json:"id" arg:"required" help:"the item"`
	Updates         map[string]json.RawMessage `json:"updates" arg:"required" help:"fields to set, e.g. {\"progress\": 75}"`
	ExpectedVersion *int                       `json:"expected_version,omitempty" help:"the version you read: a conflict if a field you write changed since"`
	MaxRetries      int                        `json:"max_retries,omitempty" help:"on a conflict, re-read and re-apply up to this many times (default 0)"`
}

func (c *Cortex) actUpdate(ctx context.Context, call action.Call, a updateArgs) (UpdateResult, error) {
	return c.Update(ctx, call, a.ID, a.Updates, a.ExpectedVersion, a.MaxRetries)
}

type idArgs struct {
	ID string `json:"id" arg:"required" help:"the item"`
}

func (c *Cortex) actDelete(ctx context.Context, call action.Call, a idArgs) (map[string]*Item, error) {
	it, err := c.Delete(ctx, call, a.ID)
	return map[string]*Item{"item": it}, err
}

type historyResult struct {
	Mutations []Mutation `json:"mutations"`
	ChainCheck
}

func (c *Cortex) actHistory(ctx context.Context, call action.Call, a idArgs) (historyResult, error) {
	ms, check, err := c.History(ctx, call, a.ID)
	if ms == nil {
		ms = []Mutation{}
	}
	return historyResult{Mutations: ms, ChainCheck: check}, err
}

type versionArgs struct {
	ID      string `json:"id" arg:"required" help:"the item"`
	Version int    `json:"version" arg:"required" help:"the version"`
}

func (c *Cortex) actVersion(ctx context.Context, call action.Call, a versionArgs) (map[string]*Item, error) {
	it, err := c.Version(ctx, call, a.ID, a.Version)
	return map[string]*Item{"item": it}, err
}

func (c *Cortex) actRevert(ctx context.Context, call action.Call, a versionArgs) (map[string]*Item, error) {
	it, err := c.Revert(ctx, call, a.ID, a.Version)
	return map[string]*Item{"item": it}, err
}

type shareArgs struct {
	ID          string   `json:"id" arg:"required" help:"the item"`
	Principal   string   `json:"principal" arg:"required" help:"the agent to share with"`
	Permissions []string `json:"permissions" arg:"required" help:"any of read, write, delete, share"`
}

func (c *Cortex) actShare(ctx context.Context, call action.Call, a shareArgs) (map[string][]ACLEntry, error) {
	acl, err := c.Share(ctx, call, a.ID, a.Principal, a.Permissions)
	return map[string][]ACLEntry{"acl": acl}, err
}

type revokeArgs struct {
	ID        string `json:"id" arg:"required" help:"the item"`
	Principal string `json:"principal" arg:"required" help:"the agent whose access to remove"`
}

func (c *Cortex) actRevoke(ctx context.Context, call action.Call, a revokeArgs) (map[string][]ACLEntry, error) {
	acl, err := c.Revoke(ctx, call, a.ID, a.Principal)
	return map[string][]ACLEntry{"acl": acl}, err
}

func (c *Cortex) actQuery(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	return c.Query(ctx, call, q)
}

func (c *Cortex) actActive(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	return c.Active(ctx, call, q)
}

type batchQueryArgs struct {
	Queries []Query `json:"queries" arg:"required" help:"queries, each with the fields of cortex.query"`
}

func (c *Cortex) actBatchQuery(ctx context.Context, call action.Call, a batchQueryArgs) (map[string][]QueryResult, error) {
	out := make([]QueryResult, len(a.Queries))
	for i, q := range a.Queries {
		res, err := c.Query(ctx, call, q)
		if err != nil {
			return nil, fmt.Errorf("queries[%d]: %w", i, err)
		}
		out[i] = res
	}
	return map[string][]QueryResult{"results": out}, nil
}

type batchUpdateArgs struct {
	Updates []ItemUpdate `json:"updates" arg:"required" help:"[{id, updates, expected_version?}], applied all or none"`
}

func (c *Cortex) actBatchUpdate(ctx context.Context, call action.Call, a batchUpdateArgs) (BatchResult, error) {
	return c.BatchUpdate(ctx, call, a.Updates)
}

type commitArgs struct {
	Updates    []ItemUpdate `json:"updates" arg:"required" help:"[{id, updates, expected_version?}], applied all or none"`
	MaxRetries int          `json:"max_retries,omitempty" help:"on a conflict, re-apply on the current version up to this many times (default 0; turn.end uses 3)"`
}

func (c *Cortex) actCommit(ctx context.Context, call action.Call, a commitArgs) (BatchResult, error) {
	return c.Commit(ctx, call, a.Updates, a.MaxRetries)
}

// provider is the cortex's part in turns.
type provider struct{ c *Cortex }

// contextLimit is how many active items a turn's working memory gets.
const contextLimit = 20

// turnCommitRetries is how often turn.end re-applies a conflicting update.
const turnCommitRetries = 3

func (p *provider) Name() string { return "cortex" }

// Context injects the principal's active items, and traces how many.
func (p *provider) Context(ctx context.Context, start kit.TurnStart) (kit.Section, error) {
	call := action.Call{Principal: start.Principal, Turn: start.TurnID, Clock: p.c.env.Clock}
	res, err := p.c.Active(ctx, call, Query{Limit: contextLimit})
	if err != nil {
		return kit.Section{}, err
	}
	n := res.CountsByType // all the active items, not only those in the section
	msg := fmt.Sprintf("FC items retrieved: %d goals, %d actions", n["goal"], n["action"])
	if n["question"] > 0 {
		msg += fmt.Sprintf(", %d questions", n["question"])
	}
	return kit.Section{
		Data:  map[string]any{"items": res.Items, "count": res.Count},
		Notes: []kit.Note{{Kind: "cortex.retrieved", Message: msg, Data: map[string]any{"goals": n["goal"], "actions": n["action"], "questions": n["question"]}}},
	}, nil
}

// Commit applies a turn's cortex updates ([{id, updates, expected_version?}])
// inside turn.end's transaction, re-applying a conflicting one on the
// current version up to three times.
func (p *provider) Commit(ctx context.Context, tx *kit.Txn, end kit.TurnEnd) (any, error) {
	if len(end.Updates) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(end.Updates, &raws); err != nil || len(raws) == 0 {
		return nil, errs.New(errs.Validation, "updates.cortex must be a non-empty list of {id, updates, expected_version?}").With("field", "updates.cortex")
	}
	updates := make([]ItemUpdate, len(raws))
	for i, raw := range raws {
		if err := action.DecodeStrict(raw, &updates[i]); err != nil {
			return nil, errs.New(errs.Validation, "updates.cortex[%d]: %w", i, err)
		}
	}
	call := action.Call{Principal: end.Principal, Turn: end.TurnID, Clock: p.c.env.Clock}
	txID := p.c.env.IDs.New()
	var items []*Item
	for i, u := range updates {
		changes, err := parseUpdates(u.Updates)
		if err != nil {
			return nil, errs.New(errs.Validation, "updates.cortex[%d]: %w", i, err)
		}
		r, err := p.c.applyRetrying(tx, call, txID, u.ID, changes, u.ExpectedVersion, turnCommitRetries)
		if err != nil {
			return nil, fmt.Errorf("updates.cortex[%d] (%s): %w", i, u.ID, err)
		}
		items = append(items, r.Item)
	}
	if _, err := tx.Trace(call, "cortex.commit", "FC commit succeeded", map[string]any{"transaction_id": txID, "count": len(items)}); err != nil {
		return nil, err
	}
	tx.Publish(EventCommit, map[string]any{"turn_id": end.TurnID, "message": "FC commit succeeded", "ok": true})
	return map[string]any{"transaction_id": txID, "items": items}, nil
}

// CommitFailed records a failed turn.end commit the way cortex.commit does:
// "FC commit failed: ConflictError, item_id=X, current_version=N", and the
// cortex.commit event.
func (p *provider) CommitFailed(ctx context.Context, end kit.TurnEnd, err error) {
	call := action.Call{Principal: end.Principal, Turn: end.TurnID, Clock: p.c.env.Clock}
	p.c.reportCommitFailure(ctx, call, err)
}
