package cortex

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// Register adds the cortex.* actions, the cortex context provider and the
// cortex counter to env, and returns the cortex.
func Register(env *kit.Env) *Cortex {
	c := New(env)
	reg := env.Actions
	ActionCreate.Register(reg, action.Spec{Summary: "Create a goal, action or question (you own it)", Joinable: true}, c.actCreate)
	ActionGet.Register(reg, action.Spec{Summary: "An item with its field versions", ReadOnly: true}, c.actGet)
	ActionUpdate.Register(reg, action.Spec{Summary: "Update an item's fields, merging with changes to other fields", Joinable: true}, c.actUpdate)
	ActionDelete.Register(reg, action.Spec{Summary: "Soft-delete an item (status archived; queries skip it)", Joinable: true}, c.actDelete)
	ActionHistory.Register(reg, action.Spec{Summary: "An item's audit trail in order, and whether its hash chain verifies", ReadOnly: true}, c.actHistory)
	ActionVersion.Register(reg, action.Spec{Summary: "An item as it was at a version", ReadOnly: true}, c.actVersion)
	ActionRevert.Register(reg, action.Spec{Summary: "Make a new version with the fields of an earlier one", Joinable: true}, c.actRevert)
	ActionShare.Register(reg, action.Spec{Summary: "Grant an agent permissions on an item", Joinable: true}, c.actShare)
	ActionRevoke.Register(reg, action.Spec{Summary: "Remove an agent's access to an item", Joinable: true}, c.actRevoke)
	ActionQuery.Register(reg, action.Spec{Summary: "Items you can read, filtered, in active order, with count and checksum", ReadOnly: true}, c.actQuery)
	ActionActive.Register(reg, action.Spec{Summary: "Your open items in turn-start order (priority, due date, blocking, age)", ReadOnly: true}, c.actActive)
	ActionBatchQuery.Register(reg, action.Spec{Summary: "Several queries at once, results in query order", ReadOnly: true}, c.actBatchQuery)
	ActionBatchUpdate.Register(reg, action.Spec{Summary: "Many updates in one atomic transaction: all or none", Joinable: true}, c.actBatchUpdate)
	ActionCommit.Register(reg, action.Spec{Summary: "Commit a turn's updates at turn end (traced; atomic)", Joinable: true}, c.actCommit)
	c.startIndexing()
	env.AddProvider(&provider{c: c})
	env.AddCounter("cortex", c.counts)
	env.AddHolder(func() (bool, error) { return kit.Holds(env.Store, itemPrefix()) })
	env.AddChecker("cortex", c.checkStored)
	if env.Access != nil {
		env.Access.Register(ObjectItem, canRead)
	}
	return c
}

// CreateArgs is cortex.create's arguments.
type CreateArgs struct {
	// Type is goal, action or question.
	Type string `json:"type" arg:"required" help:"goal, action or question"`
	// ID is the new item's id; empty for a new UUID.
	ID string `json:"id,omitempty" help:"the item's id (default: a new UUID)"`
	// Fields are the item's fields as JSON values; title is required.
	Fields map[string]json.RawMessage `json:"fields" arg:"required" help:"title (required), description, progress, priority, status, due_at, blocking, tags, org, parent, custom"`
}

// ItemResult is the result of the actions answering with one item:
// cortex.create, get, delete, version and revert.
type ItemResult struct {
	// Item is the item as it stands after the action (or, for
	// cortex.version, as it was at the version asked for).
	Item *Item `json:"item"`
}

func (c *Cortex) actCreate(ctx context.Context, call action.Call, a CreateArgs) (ItemResult, error) {
	it, err := c.Create(ctx, call, a.Type, a.ID, a.Fields)
	return ItemResult{Item: it}, err
}

// GetArgs is cortex.get's arguments.
type GetArgs struct {
	// ID is the item to read.
	ID string `json:"id" arg:"required" help:"the item"`
	// IncludeDeleted also returns a soft-deleted item.
	IncludeDeleted bool `json:"include_deleted,omitempty" help:"also a soft-deleted item"`
}

func (c *Cortex) actGet(ctx context.Context, call action.Call, a GetArgs) (ItemResult, error) {
	it, err := c.Get(ctx, call, a.ID, a.IncludeDeleted)
	return ItemResult{Item: it}, err
}

// UpdateArgs is cortex.update's arguments.
type UpdateArgs struct {
	// ID is the item to update.
	ID string `json:"id" arg:"required" help:"the item"`
	// Updates are the fields to set, as JSON values.
	Updates map[string]json.RawMessage `json:"updates" arg:"required" help:"fields to set, e.g. {\"progress\": 75}"`
	// ExpectedVersion is the version the caller read; nil skips the check.
	ExpectedVersion *int `json:"expected_version,omitempty" help:"the version you read: a conflict if a field you write changed since"`
	// MaxRetries is how often a conflicting update is re-applied.
	MaxRetries int `json:"max_retries,omitempty" help:"on a conflict, re-read and re-apply up to this many times (default 0)"`
}

func (c *Cortex) actUpdate(ctx context.Context, call action.Call, a UpdateArgs) (UpdateResult, error) {
	return c.Update(ctx, call, a.ID, a.Updates, a.ExpectedVersion, a.MaxRetries)
}

// IDArgs is the arguments of the actions naming only an item:
// cortex.delete and cortex.history.
type IDArgs struct {
	// ID is the item.
	ID string `json:"id" arg:"required" help:"the item"`
}

func (c *Cortex) actDelete(ctx context.Context, call action.Call, a IDArgs) (ItemResult, error) {
	it, err := c.Delete(ctx, call, a.ID)
	return ItemResult{Item: it}, err
}

// HistoryResult is cortex.history's result: the audit trail and whether
// its hash chain verifies.
type HistoryResult struct {
	// Mutations are the item's audit entries, oldest first (never null).
	Mutations []Mutation `json:"mutations"`
	ChainCheck
}

func (c *Cortex) actHistory(ctx context.Context, call action.Call, a IDArgs) (HistoryResult, error) {
	ms, check, err := c.History(ctx, call, a.ID)
	if ms == nil {
		ms = []Mutation{}
	}
	return HistoryResult{Mutations: ms, ChainCheck: check}, err
}

// VersionArgs is the arguments of cortex.version and cortex.revert.
type VersionArgs struct {
	// ID is the item.
	ID string `json:"id" arg:"required" help:"the item"`
	// Version is the version to show or to revert to.
	Version int `json:"version" arg:"required" help:"the version"`
}

func (c *Cortex) actVersion(ctx context.Context, call action.Call, a VersionArgs) (ItemResult, error) {
	it, err := c.Version(ctx, call, a.ID, a.Version)
	return ItemResult{Item: it}, err
}

func (c *Cortex) actRevert(ctx context.Context, call action.Call, a VersionArgs) (ItemResult, error) {
	it, err := c.Revert(ctx, call, a.ID, a.Version)
	return ItemResult{Item: it}, err
}

// ShareArgs is cortex.share's arguments.
type ShareArgs struct {
	// ID is the item.
	ID string `json:"id" arg:"required" help:"the item"`
	// Principal is the agent to share with.
	Principal string `json:"principal" arg:"required" help:"the agent to share with"`
	// Permissions replace any the agent had: read, write, delete, share.
	Permissions []string `json:"permissions" arg:"required" help:"any of read, write, delete, share"`
}

// ACLResult is the result of cortex.share and cortex.revoke: the item's
// access list after the change.
type ACLResult struct {
	// ACL is the item's access list, the owner first.
	ACL []ACLEntry `json:"acl"`
}

func (c *Cortex) actShare(ctx context.Context, call action.Call, a ShareArgs) (ACLResult, error) {
	acl, err := c.Share(ctx, call, a.ID, a.Principal, a.Permissions)
	return ACLResult{ACL: acl}, err
}

// RevokeArgs is cortex.revoke's arguments.
type RevokeArgs struct {
	// ID is the item.
	ID string `json:"id" arg:"required" help:"the item"`
	// Principal is the agent whose access to remove.
	Principal string `json:"principal" arg:"required" help:"the agent whose access to remove"`
}

func (c *Cortex) actRevoke(ctx context.Context, call action.Call, a RevokeArgs) (ACLResult, error) {
	acl, err := c.Revoke(ctx, call, a.ID, a.Principal)
	return ACLResult{ACL: acl}, err
}

func (c *Cortex) actQuery(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	return c.Query(ctx, call, q)
}

func (c *Cortex) actActive(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	return c.Active(ctx, call, q)
}

// BatchQueryArgs is cortex.batch_query's arguments.
type BatchQueryArgs struct {
	// Queries are run in order, each like cortex.query.
	Queries []Query `json:"queries" arg:"required" help:"queries, each with the fields of cortex.query"`
}

// BatchQueryResult is cortex.batch_query's result.
type BatchQueryResult struct {
	// Results are the queries' results, in query order.
	Results []QueryResult `json:"results"`
}

func (c *Cortex) actBatchQuery(ctx context.Context, call action.Call, a BatchQueryArgs) (BatchQueryResult, error) {
	out := make([]QueryResult, len(a.Queries))
	for i, q := range a.Queries {
		res, err := c.Query(ctx, call, q)
		if err != nil {
			return BatchQueryResult{}, fmt.Errorf("queries[%d]: %w", i, err)
		}
		out[i] = res
	}
	return BatchQueryResult{Results: out}, nil
}

// BatchUpdateArgs is cortex.batch_update's arguments.
type BatchUpdateArgs struct {
	// Updates are applied in one transaction: all or none.
	Updates []ItemUpdate `json:"updates" arg:"required" help:"[{id, updates, expected_version?}], applied all or none"`
}

func (c *Cortex) actBatchUpdate(ctx context.Context, call action.Call, a BatchUpdateArgs) (BatchResult, error) {
	return c.BatchUpdate(ctx, call, a.Updates)
}

// CommitArgs is cortex.commit's arguments.
type CommitArgs struct {
	// Updates are a turn's updates, applied all or none.
	Updates []ItemUpdate `json:"updates" arg:"required" help:"[{id, updates, expected_version?}], applied all or none"`
	// MaxRetries is how often a conflicting update is re-applied on the
	// current version.
	MaxRetries int `json:"max_retries,omitempty" help:"on a conflict, re-apply on the current version up to this many times (default 0; turn.end uses 3)"`
}

func (c *Cortex) actCommit(ctx context.Context, call action.Call, a CommitArgs) (BatchResult, error) {
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
		Data:  ContextSection{Count: res.Count, Items: res.Items},
		Notes: []kit.Note{{Kind: "cortex.retrieved", Message: msg, Data: retrievedNote{Actions: n["action"], Goals: n["goal"], Questions: n["question"]}}},
	}, nil
}

// ContextSection is the cortex's section of a turn's working memory.
type ContextSection struct {
	// Count is how many items are active, not only those in Items.
	Count int `json:"count"`
	// Items are the most urgent active items, at most 20.
	Items []*Item `json:"items"`
}

// retrievedNote is the data of the cortex.retrieved trace entry: how many
// active items of each type there are.
type retrievedNote struct {
	Actions   int `json:"actions"`
	Goals     int `json:"goals"`
	Questions int `json:"questions"`
}

// TurnCommit is the cortex's part of turn.end's committed result.
type TurnCommit struct {
	// Items are the updated items, in update order.
	Items []*Item `json:"items"`
	// TransactionID is the one transaction all the updates were applied in.
	TransactionID string `json:"transaction_id"`
}

// commitNote is the data of a successful cortex.commit trace entry.
type commitNote struct {
	Count         int    `json:"count"`
	TransactionID string `json:"transaction_id"`
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
	if _, err := tx.Trace(call, "cortex.commit", "FC commit succeeded", commitNote{Count: len(items), TransactionID: txID}); err != nil {
		return nil, err
	}
	EventCommit.Publish(tx, events.Only(call.Principal), CommitEvent{TurnID: end.TurnID, Message: "FC commit succeeded", OK: true})
	return TurnCommit{Items: items, TransactionID: txID}, nil
}

// CommitFailed records a failed turn.end commit the way cortex.commit does:
// "FC commit failed: ConflictError, item_id=X, current_version=N", and the
// cortex.commit event.
func (p *provider) CommitFailed(ctx context.Context, end kit.TurnEnd, err error) {
	call := action.Call{Principal: end.Principal, Turn: end.TurnID, Clock: p.c.env.Clock}
	p.c.reportCommitFailure(ctx, call, err)
}
