package cortex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/storage"
)

// EventItemMutated is published after every committed mutation of an item.
var EventItemMutated = events.Define[ItemEvent]("item.mutated", "after every committed create, update, delete, revert, share or revoke of a cortex item")

// ItemEvent says which item changed, how, and to which version.
type ItemEvent struct {
	ItemID       string `json:"item_id"`
	Type         string `json:"type"`
	MutationType string `json:"mutation_type"`
	Version      int    `json:"version"`
	MutatedBy    string `json:"mutated_by"`
}

// Cortex is the frontal cortex over an engine's store.
type Cortex struct {
	env *kit.Env
	// index answers queries from memory (liveindex.go).
	index liveIndex
	// beforeAttempt, when set (tests only), runs before every attempt of an
	// update, e.g. to have other turns write in between (seed 1.4).
	beforeAttempt func(id string, attempt int)
}

// New returns the frontal cortex of env. Register adds its actions.
func New(env *kit.Env) *Cortex { return &Cortex{env: env} }

var fieldErr = kit.Validation

// mutation carries what a write knows about its call.
type mutation struct {
	call  action.Call
	txID  string
	kind  string // create|update|delete|revert|share|revoke
	merge bool
	note  string
}

// mutatedBy is the turn when the call has one, else the agent.
func mutatedBy(call action.Call) string {
	if call.Turn != "" {
		return call.Turn
	}
	return call.Principal
}

// commitMutation writes after (the new state of the item; before is nil on
// create) with its version snapshot, its audit entry chained to the one
// before, and its index changes, and queues the item.mutated event.
func (c *Cortex) commitMutation(tx *kit.Txn, before, after *Item, m mutation) (*Mutation, error) {
	entry := newMutation(before, after, m, c.env.IDs.New())
	prevHash, err := chainHead(tx.Tx, after.ID)
	if err != nil {
		return nil, err
	}
	sealed, state, err := sealMutation(entry, after, prevHash)
	if err != nil {
		return nil, err
	}
	return entry, c.writeMutation(tx, before, after, entry, sealed, state)
}

// newMutation is the audit entry of the mutation from before to after,
// with the id given; it stamps after's UpdatedAt. It reads nothing
// stored: the bulk loader of the benchmarks builds entries in parallel
// with it.
func newMutation(before, after *Item, m mutation, id string) *Mutation {
	now := m.call.Clock.Now()
	entry := &Mutation{
		MutationID: id, ItemID: after.ID, MutationType: m.kind,
		NewVersion: after.GlobalVersion, FieldChanges: map[string]FieldChange{}, ChangedFields: []string{},
		MutatedBy: mutatedBy(m.call), AgentID: m.call.Principal, TurnID: m.call.Turn,
		MutationTimestamp: now, TransactionID: m.txID, MergeApplied: m.merge,
		AgentPermissionsVerified: true, Summary: m.note,
	}
	if before != nil {
		prev := before.GlobalVersion
		entry.PreviousVersion = &prev
	}
	for _, f := range changedFields(before, after) {
		if before == nil && isEmpty(after.fieldValue(f)) {
			continue // a creation records the fields it set, not every empty one
		}
		entry.ChangedFields = append(entry.ChangedFields, f)
		var old any
		oldV := 0
		if before != nil {
			old, oldV = before.fieldValue(f), before.FieldVersions[f]
		}
		entry.FieldChanges[f] = FieldChange{Old: old, New: after.fieldValue(f), Version: versionLabel(oldV, after.FieldVersions[f])}
	}
	after.UpdatedAt = now
	return entry
}

// sealMutation encodes entry chained to prevHash, and after as it stands
// (also its version snapshot): what writeMutation stores.
func sealMutation(entry *Mutation, after *Item, prevHash string) (sealed, state []byte, err error) {
	if sealed, err = sealAndEncode(entry, prevHash); err != nil {
		return nil, nil, err
	}
	state, err = json.Marshal(after)
	return sealed, state, err
}

// writeMutation stores a sealed mutation inside tx: the audit entry, the
// chain's head, the item and its version, the index changes; and publishes
// item.mutated; the item's new row reaches the query index once tx commits.
func (c *Cortex) writeMutation(tx *kit.Txn, before, after *Item, entry *Mutation, sealed, state []byte) error {
	if err := tx.Set(auditKey(after.ID, after.GlobalVersion), sealed); err != nil {
		return err
	}
	if err := tx.Set(headKey(after.ID), []byte(entry.Hash)); err != nil {
		return err
	}
	if err := tx.Set(itemKey(after.ID), state); err != nil {
		return err
	}
	if err := tx.Set(versionKey(after.ID, after.GlobalVersion), state); err != nil {
		return err
	}
	if err := writeIndexDiff(tx.Tx, before, after); err != nil {
		return err
	}
	if err := c.journal(tx.Tx, after); err != nil {
		return err
	}
	c.index.stage(tx.Tx, after)
	EventItemMutated.Publish(tx, audience(before, after), ItemEvent{ItemID: after.ID, Type: after.Type, MutationType: entry.MutationType, Version: after.GlobalVersion, MutatedBy: entry.MutatedBy})
	return nil
}

// isEmpty reports a field value that says nothing: null, "", false, [], {}.
func isEmpty(v any) bool {
	switch b, _ := json.Marshal(v); string(b) {
	case "null", `""`, "false", "[]", "{}":
		return true
	}
	return false
}

// versionedFields are the fields whose versions an item keeps, besides its
// custom ones.
var versionedFields = append(slices.Clone(editableFields), "deleted_at", "acl")

// changedFields lists the fields whose version moved from before to after.
func changedFields(before, after *Item) []string {
	var out []string
	for f, v := range after.FieldVersions {
		if before == nil || before.FieldVersions[f] != v {
			out = append(out, f)
		}
	}
	for f := range before.fieldVersionsOrNil() {
		if _, ok := after.FieldVersions[f]; !ok {
			out = append(out, f) // a custom field removed
		}
	}
	slices.Sort(out)
	return out
}

func (it *Item) fieldVersionsOrNil() map[string]int {
	if it == nil {
		return nil
	}
	return it.FieldVersions
}

// apply sets changes on a copy of it as version it.GlobalVersion+1, moving
// the version of every field whose value actually changes. It returns the new
// state and the fields that changed (none: nothing to write).
func apply(it *Item, changes []change) (*Item, []string) {
	next := it.clone()
	next.GlobalVersion = it.GlobalVersion + 1
	var changed []string
	for _, ch := range changes {
		if equalValues(it.fieldValue(ch.field), ch.value) && !(ch.value == nil && hasCustom(it, ch.field)) {
			continue
		}
		next.set(ch)
		bump(next, ch.field)
		changed = append(changed, ch.field)
	}
	return next, changed
}

func hasCustom(it *Item, field string) bool {
	key, ok := strings.CutPrefix(field, "custom.")
	if !ok {
		return false
	}
	_, has := it.Custom[key]
	return has
}

// bump moves a field's version and records that the new global version
// changed it.
func bump(it *Item, field string) {
	if it.FieldVersions == nil {
		it.FieldVersions = map[string]int{}
	}
	if it.FieldChangedAt == nil {
		it.FieldChangedAt = map[string]int{}
	}
	it.FieldVersions[field]++
	it.FieldChangedAt[field] = it.GlobalVersion
}

// load reads an item; a missing (or, unless includeDeleted, deleted) item is
// a NotFoundError.
func load(tx *storage.Tx, id string, includeDeleted bool) (*Item, error) {
	var it Item
	if err := tx.GetJSON(itemKey(id), &it); errors.Is(err, storage.ErrNotFound) {
		return nil, notFound(id)
	} else if err != nil {
		return nil, err
	}
	if it.DeletedAt != nil && !includeDeleted {
		return nil, errs.New(errs.NotFound, "item %q was deleted at %s (include_deleted shows it; cortex.revert restores it)",
			id, it.DeletedAt.Format(time.RFC3339)).With("id", id)
	}
	return &it, nil
}

// authorize returns a PermissionError unless call's principal may do op
// (read, write, delete or share) on it. Every operation returns the item,
// so each needs read too. The error wraps an access.Denial, which
// afterFailure traces once the failed transaction has rolled back.
func authorize(call action.Call, it *Item, op string) error {
	acl := access.ACL{Owner: it.Owner, Grants: it.ACL}
	return access.Check(call.Principal, acl, op, access.Object{Type: it.Type, ID: it.ID, ShareAction: "cortex.share"}, call.Clock.Now())
}

// afterFailure records in the trace what a failed call must leave behind
// even though its transaction rolled back: an access denial (seed 3.2).
func (c *Cortex) afterFailure(ctx context.Context, call action.Call, err error) error {
	return c.env.TraceFailure(ctx, call, err)
}

// audience is who sees an event about a change from before (nil: none) to
// after: whoever may read the item afterwards, and whoever could before (a
// revoked principal learns that the item left its view).
func audience(before, after *Item) events.Audience {
	var who []string
	for _, it := range []*Item{before, after} {
		if it != nil {
			who = append(who, it.readers()...)
		}
	}
	return events.Only(who...)
}

// ObjectItem is the access registry's name for a cortex item (trace
// subjects, the planner's questions).
const ObjectItem = "cortex item"

// about is the trace subject of item id.
func about(id string) trace.Subject { return trace.Subject{Type: ObjectItem, ID: id} }

// canRead reports whether principal may read item id (deleted ones too:
// their trace entries stay theirs).
func canRead(tx *storage.Tx, principal, id string) (bool, error) {
	it, err := load(tx, id, true)
	if errs.KindOf(err) == errs.NotFound {
		return false, nil
	}
	return err == nil && it.can(principal, "read"), err
}

// trace appends an entry in a transaction of its own.
func (c *Cortex) trace(ctx context.Context, call action.Call, kind, message string, data any) {
	err := c.env.Update(ctx, func(tx *kit.Txn) error {
		_, err := tx.Trace(call, kind, message, data)
		return err
	})
	if err != nil {
		c.env.Log.Warn("writing a trace entry failed", "kind", kind, "err", err)
	}
}

// Create makes a new item owned by the calling principal.
func (c *Cortex) Create(ctx context.Context, call action.Call, typ, id string, fields map[string]json.RawMessage) (*Item, error) {
	it, err := c.newItem(call, typ, id, fields)
	if err != nil {
		return nil, err
	}
	err = c.env.Update(ctx, func(tx *kit.Txn) error { return c.insert(tx, call, it) })
	if err != nil {
		return nil, c.afterFailure(ctx, call, err)
	}
	return it, nil
}

// newItem validates a create's arguments and builds the item at version 1.
func (c *Cortex) newItem(call action.Call, typ, id string, fields map[string]json.RawMessage) (*Item, error) {
	if err := validateType(typ); err != nil {
		return nil, err
	}
	if err := kit.CheckName("id", id, "/"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(id) != id {
		return nil, fieldErr("id", "must not start or end with spaces")
	}
	if _, ok := fields["title"]; !ok {
		return nil, fieldErr("fields.title", "an item needs a title")
	}
	changes, err := parseUpdates(fields)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = c.env.IDs.New()
	}
	now := call.Clock.Now()
	it := &Item{
		ID: id, Type: typ, Priority: "medium", Status: "active", Tags: []string{}, Custom: map[string]any{}, Owner: call.Principal,
		GlobalVersion: 1, FieldVersions: map[string]int{}, FieldChangedAt: map[string]int{},
		ACL:       []ACLEntry{{PrincipalType: "agent", PrincipalID: call.Principal, Permissions: slices.Clone(Permissions)}},
		CreatedAt: now, UpdatedAt: now,
	}
	for _, ch := range changes {
		it.set(ch)
	}
	for _, f := range versionedFields {
		it.FieldVersions[f], it.FieldChangedAt[f] = 1, 1
	}
	for k := range it.Custom {
		it.FieldVersions["custom."+k], it.FieldChangedAt["custom."+k] = 1, 1
	}
	return it, nil
}

// insert writes a new item (from newItem) inside tx.
func (c *Cortex) insert(tx *kit.Txn, call action.Call, it *Item) error {
	if ok, err := tx.Has(itemKey(it.ID)); err != nil {
		return err
	} else if ok {
		return errs.New(errs.Conflict, "an item with id %q already exists; choose another id or leave it out", it.ID).With("id", it.ID)
	}
	if err := c.checkParent(tx.Tx, call, it); err != nil {
		return err
	}
	if _, err := c.commitMutation(tx, nil, it, mutation{call: call, txID: c.env.IDs.New(), kind: "create"}); err != nil {
		return err
	}
	return traceCreated(tx, call, it)
}

// traceCreated records a creation in the trace.
func traceCreated(tx *kit.Txn, call action.Call, it *Item) error {
	_, err := tx.TraceAbout(call, about(it.ID), "cortex.create", fmt.Sprintf("FC %s created: %s", it.Type, it.ID), nil)
	return err
}

// checkParent: a parent must be an item the caller can read, and not the
// item itself or one of its descendants.
func (c *Cortex) checkParent(tx *storage.Tx, call action.Call, it *Item) error {
	if it.Parent == "" {
		return nil
	}
	// The parent itself must be live and readable...
	parent, err := load(tx, it.Parent, false)
	if errs.KindOf(err) == errs.NotFound {
		return fieldErr("parent", "no item %q to be the parent (or it was deleted)", it.Parent)
	} else if err != nil {
		return err
	}
	if err := authorize(call, parent, "read"); err != nil {
		return err
	}
	// ...and none of its ancestors, deleted or not, may be the item.
	seen := map[string]bool{it.ID: true}
	for p := it.Parent; p != ""; {
		if seen[p] {
			return fieldErr("parent", "%q would make the item its own ancestor", it.Parent)
		}
		seen[p] = true
		anc, err := load(tx, p, true)
		if errs.KindOf(err) == errs.NotFound {
			return nil // a lost ancestor ends the chain
		} else if err != nil {
			return err
		}
		p = anc.Parent
	}
	return nil
}

// Get reads an item the caller may read.
func (c *Cortex) Get(ctx context.Context, call action.Call, id string, includeDeleted bool) (*Item, error) {
	var it *Item
	err := c.env.Store.View(func(tx *storage.Tx) error {
		var err error
		if it, err = load(tx, id, includeDeleted); err != nil {
			return err
		}
		return authorize(call, it, "read")
	})
	if err != nil {
		return nil, c.afterFailure(ctx, call, err)
	}
	return it, nil
}

// UpdateResult is what an update did.
type UpdateResult struct {
	Item         *Item `json:"item"`
	MergeApplied bool  `json:"merge_applied"`
	// Retries is how many times the update was re-applied after a conflict.
	Retries int `json:"retries"`
}

// Update applies updates to an item. With expectedVersion, an item that
// moved on is still updated if none of the written fields changed after that
// version (merge_applied); if one did, it is a ConflictError carrying the
// current item — unless maxRetries allows re-reading the item and applying
// the updates again on its current version.
func (c *Cortex) Update(ctx context.Context, call action.Call, id string, updates map[string]json.RawMessage, expectedVersion *int, maxRetries int) (UpdateResult, error) {
	changes, err := parseUpdates(updates)
	if err != nil {
		return UpdateResult{}, err
	}
	if len(changes) == 0 {
		return UpdateResult{}, fieldErr("updates", "nothing to update: give at least one field, e.g. {\"progress\": 75}")
	}
	if maxRetries < 0 {
		return UpdateResult{}, fieldErr("max_retries", "must be 0 or more")
	}
	expected := expectedVersion
	for attempt := 0; ; attempt++ {
		if c.beforeAttempt != nil {
			c.beforeAttempt(id, attempt)
		}
		var res UpdateResult
		err := c.env.Update(ctx, func(tx *kit.Txn) error {
			var err error
			res, err = c.applyUpdate(tx, call, c.env.IDs.New(), id, changes, expected, true)
			return err
		})
		if err == nil {
			res.Retries = attempt
			return res, nil
		}
		// (Declared here: a conflict of an earlier attempt says nothing
		// about how this one failed.)
		var conflict *errs.Error
		retryable := errors.As(err, &conflict) && conflict.Kind == errs.Conflict && conflict.Details["current"] != nil
		if !retryable || attempt >= maxRetries {
			if retryable && maxRetries > 0 {
				c.trace(ctx, call, "cortex.update.failed", fmt.Sprintf("FC update failed after %d retries, item_id=%s, field=%s",
					maxRetries, id, strings.Join(conflictFields(conflict), ",")), updateFailedNote{ItemID: id, Retries: maxRetries})
			}
			return UpdateResult{}, c.afterFailure(ctx, call, err)
		}
		// Re-read: apply the same updates on the version that is current now.
		current := conflict.Details["current"].(*Item).GlobalVersion
		expected = &current
	}
}

// updateFailedNote is the data of the cortex.update.failed trace entry.
type updateFailedNote struct {
	ItemID  string `json:"item_id"`
	Retries int    `json:"retries"`
}

// updateNote is the data of the cortex.update trace entry.
type updateNote struct {
	Fields       []string `json:"fields"`
	ItemID       string   `json:"item_id"`
	MergeApplied bool     `json:"merge_applied"`
}

func conflictFields(e *errs.Error) []string {
	fields, _ := e.Details["fields"].([]string)
	return fields
}

// applyUpdate is one update inside a transaction: load, authorize, check the
// expected version field by field, write. traced adds its own "FC update
// succeeded" trace entry (a batch writes one entry for all its updates).
func (c *Cortex) applyUpdate(tx *kit.Txn, call action.Call, txID, id string, changes []change, expected *int, traced bool) (UpdateResult, error) {
	it, err := load(tx.Tx, id, false)
	if err != nil {
		return UpdateResult{}, err
	}
	if err := authorize(call, it, "write"); err != nil {
		return UpdateResult{}, err
	}
	merge := false
	if expected != nil {
		switch {
		case *expected < 1:
			return UpdateResult{}, fieldErr("expected_version", "must be 1 or more")
		case *expected > it.GlobalVersion:
			return UpdateResult{}, fieldErr("expected_version", "%d is ahead of the item's version %d; read the item again", *expected, it.GlobalVersion)
		case *expected < it.GlobalVersion:
			var clash []string
			for _, ch := range changes {
				if it.FieldChangedAt[ch.field] > *expected {
					clash = append(clash, ch.field)
				}
			}
			if len(clash) > 0 {
				// One version, the item's: a field's own count beside it
				// read as a second, contradicting one (issue 14, bug 10).
				return UpdateResult{}, errs.New(errs.Conflict,
					"%s %q is at version %d, not %d: %s changed since; read it again and retry",
					it.Type, id, it.GlobalVersion, *expected, strings.Join(clash, ", ")).
					With("current", it).With("fields", clash).With("expected_version", *expected).With("current_version", it.GlobalVersion)
			}
			merge = true
		}
	}
	next, changed := apply(it, changes)
	if len(changed) == 0 {
		return UpdateResult{Item: it}, nil // every value already as asked: no new version
	}
	if slices.Contains(changed, "parent") {
		if err := c.checkParent(tx.Tx, call, next); err != nil {
			return UpdateResult{}, err
		}
	}
	if _, err := c.commitMutation(tx, it, next, mutation{call: call, txID: txID, kind: "update", merge: merge}); err != nil {
		return UpdateResult{}, err
	}
	if !traced {
		return UpdateResult{Item: next, MergeApplied: merge}, nil
	}
	msg := fmt.Sprintf("FC update succeeded: %s, fields=[%s], version: %d→%d", id, strings.Join(changed, ", "), it.GlobalVersion, next.GlobalVersion)
	if merge {
		msg += ", merge_applied=true"
	}
	if _, err := tx.TraceAbout(call, about(id), "cortex.update", msg, updateNote{Fields: changed, ItemID: id, MergeApplied: merge}); err != nil {
		return UpdateResult{}, err
	}
	return UpdateResult{Item: next, MergeApplied: merge}, nil
}

// Delete soft-deletes an item: it gets deleted_at and status archived, and
// leaves queries unless they include deleted items.
func (c *Cortex) Delete(ctx context.Context, call action.Call, id string) (*Item, error) {
	return c.mutate(ctx, call, id, mutateSpec{kind: "delete", perm: "delete"}, func(tx *kit.Txn, it, next *Item) (string, error) {
		now := call.Clock.Now()
		next.DeletedAt = &now
		bump(next, "deleted_at")
		if next.Status != "archived" {
			next.Status = "archived"
			bump(next, "status")
		}
		return "deleted", nil
	})
}

// errNoChange tells mutate that the item is already as asked.
var errNoChange = errors.New("no change")

// mutateSpec says what kind of mutation mutate makes and what it needs.
type mutateSpec struct {
	kind           string // the audit entry's mutation_type
	perm           string // the permission the caller needs
	includeDeleted bool   // whether a deleted item may be changed
}

// mutate is the shape of every single-item change but updates: in one
// transaction, load the item, authorize the caller, let change edit the next
// version (returning the audit summary, e.g. "deleted"), commit it with its audit entry and
// trace it. It returns the new state.
func (c *Cortex) mutate(ctx context.Context, call action.Call, id string, spec mutateSpec, change func(tx *kit.Txn, it, next *Item) (string, error)) (*Item, error) {
	var out *Item
	err := c.env.Update(ctx, func(tx *kit.Txn) error {
		it, err := load(tx.Tx, id, spec.includeDeleted)
		if err != nil {
			return err
		}
		if err := authorize(call, it, spec.perm); err != nil {
			return err
		}
		next := it.clone()
		next.GlobalVersion++
		note, err := change(tx, it, next)
		if errors.Is(err, errNoChange) {
			out = it // already as asked: no new version
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := c.commitMutation(tx, it, next, mutation{call: call, txID: c.env.IDs.New(), kind: spec.kind, note: note}); err != nil {
			return err
		}
		out = next
		_, err = tx.TraceAbout(call, about(id), "cortex."+spec.kind, fmt.Sprintf("FC %s %s: %s", it.Type, id, note), nil)
		return err
	})
	if err != nil {
		return nil, c.afterFailure(ctx, call, err)
	}
	return out, nil
}

// Revert makes a new version whose fields are those of an earlier version.
func (c *Cortex) Revert(ctx context.Context, call action.Call, id string, version int) (*Item, error) {
	return c.mutate(ctx, call, id, mutateSpec{kind: "revert", perm: "write", includeDeleted: true}, func(tx *kit.Txn, it, next *Item) (string, error) {
		if version < 1 || version > it.GlobalVersion {
			return "", errs.New(errs.NotFound, "%s %q has no version %d: its versions are 1 to %d", it.Type, id, version, it.GlobalVersion).
				With("field", "version")
		}
		if version == it.GlobalVersion {
			return "", fieldErr("version", "v%d is the current version: nothing to revert", version)
		}
		var old Item
		if err := tx.GetJSON(versionKey(id, version), &old); err != nil {
			return "", fmt.Errorf("reading v%d of %s: %w", version, id, err)
		}
		restore(next, &old)
		changed := changedFields(it, next)
		if len(changed) == 0 {
			return "", errNoChange
		}
		if slices.Contains(changed, "deleted_at") {
			// Reverting across a deletion deletes or restores the item.
			if err := authorize(call, it, "delete"); err != nil {
				return "", err
			}
		}
		if next.Parent != it.Parent {
			// The old parent may since have been deleted, become unreadable,
			// or become a descendant of the item.
			if err := c.checkParent(tx.Tx, call, next); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("reverted from v%d to v%d", it.GlobalVersion, version), nil
	})
}

// restore sets next's content (not its ACL) to old's, bumping the version of
// each field that differs.
func restore(next, old *Item) {
	for _, f := range append(slices.Clone(editableFields), "deleted_at") {
		if equalValues(next.fieldValue(f), old.fieldValue(f)) {
			continue
		}
		switch f {
		case "deleted_at":
			next.DeletedAt = old.DeletedAt
		default:
			v, _ := json.Marshal(old.fieldValue(f))
			parsed, _ := parseField(f, v)
			next.set(change{field: f, value: parsed})
		}
		bump(next, f)
	}
	keys := map[string]bool{}
	for k := range next.Custom {
		keys[k] = true
	}
	for k := range old.Custom {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		f := "custom." + k
		if equalValues(next.fieldValue(f), old.fieldValue(f)) {
			continue
		}
		next.set(change{field: f, value: old.Custom[k]})
		bump(next, f)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Share grants principal permissions (replacing any it had).
func (c *Cortex) Share(ctx context.Context, call action.Call, id, principal string, perms []string) ([]ACLEntry, error) {
	if principal == "" {
		return nil, fieldErr("principal", "give the agent to share with")
	}
	if len(perms) == 0 {
		return nil, fieldErr("permissions", "give at least one of %s", strings.Join(Permissions, ", "))
	}
	var clean []string
	for _, p := range perms {
		if !slices.Contains(Permissions, p) {
			return nil, fieldErr("permissions", "unknown permission %q; use any of %s", p, strings.Join(Permissions, ", "))
		}
		if !slices.Contains(clean, p) {
			clean = append(clean, p)
		}
	}
	slices.SortFunc(clean, func(a, b string) int { return slices.Index(Permissions, a) - slices.Index(Permissions, b) })
	return c.changeACL(ctx, call, id, "share", func(it *Item) (string, error) {
		if principal == it.Owner {
			return "", fieldErr("principal", "%s owns %q and has every permission", principal, id)
		}
		if call.Principal != it.Owner {
			// Sharing passes on access; it never creates more than the
			// sharer has, and a sharer cannot raise its own.
			if principal == call.Principal {
				return "", refused(call, it, "share", "%s may not change its own access to %q; ask the owner (%s)", call.Principal, id, it.Owner)
			}
			for _, p := range clean {
				if !it.can(call.Principal, p) {
					return "", refused(call, it, "share", "%s may not grant %q on %q: it does not hold that permission itself", call.Principal, p, id)
				}
			}
		}
		entry := ACLEntry{PrincipalType: "agent", PrincipalID: principal, Permissions: clean}
		if i := slices.IndexFunc(it.ACL, func(e ACLEntry) bool { return e.PrincipalID == principal }); i >= 0 && call.Principal != it.Owner {
			// Replacing a grant takes away what it had: the rule of
			// revoking it, so a sharer cannot strip rights it lacks.
			for _, p := range it.ACL[i].Permissions {
				if !it.can(call.Principal, p) {
					return "", refused(call, it, "share", "%s may not change %s's access to %q: %s holds %q, which %s does not", call.Principal, principal, id, principal, p, call.Principal)
				}
			}
		}
		if i := slices.IndexFunc(it.ACL, func(e ACLEntry) bool { return e.PrincipalID == principal }); i >= 0 {
			it.ACL[i] = entry
		} else {
			it.ACL = append(it.ACL, entry)
		}
		return fmt.Sprintf("shared with %s, permissions: [%s]", principal, strings.Join(clean, ", ")), nil
	})
}

// Revoke removes principal's ACL entry.
func (c *Cortex) Revoke(ctx context.Context, call action.Call, id, principal string) ([]ACLEntry, error) {
	if principal == "" {
		return nil, fieldErr("principal", "give the agent whose access to revoke")
	}
	return c.changeACL(ctx, call, id, "revoke", func(it *Item) (string, error) {
		if principal == it.Owner {
			return "", fieldErr("principal", "%s owns %q; an owner's access cannot be revoked", principal, id)
		}
		i := slices.IndexFunc(it.ACL, func(e ACLEntry) bool { return e.PrincipalID == principal })
		if i < 0 {
			return "", errs.New(errs.NotFound, "%s has no access to %q to revoke", principal, id).With("field", "principal")
		}
		if call.Principal != it.Owner && principal != call.Principal {
			for _, p := range it.ACL[i].Permissions {
				if !it.can(call.Principal, p) {
					return "", refused(call, it, "revoke", "%s may not revoke %s's access to %q: %s holds %q, which %s does not", call.Principal, principal, id, principal, p, call.Principal)
				}
			}
		}
		it.ACL = slices.Delete(it.ACL, i, i+1)
		return "revoked access for " + principal, nil
	})
}

func (c *Cortex) changeACL(ctx context.Context, call action.Call, id, kind string, edit func(*Item) (string, error)) ([]ACLEntry, error) {
	it, err := c.mutate(ctx, call, id, mutateSpec{kind: kind, perm: "share"}, func(_ *kit.Txn, _, next *Item) (string, error) {
		note, err := edit(next)
		if err == nil {
			bump(next, "acl")
		}
		return note, err
	})
	if err != nil {
		return nil, err
	}
	return it.ACL, nil
}

// History returns an item's audit entries in order and whether their hash
// chain verifies.
func (c *Cortex) History(ctx context.Context, call action.Call, id string) ([]Mutation, ChainCheck, error) {
	var out []Mutation
	var check ChainCheck
	err := c.env.Store.View(func(tx *storage.Tx) error {
		it, err := load(tx, id, true)
		if err != nil {
			return err
		}
		if err := authorize(call, it, "read"); err != nil {
			return err
		}
		out, check, err = readHistory(tx, id, it.GlobalVersion)
		return err
	})
	if err != nil {
		return nil, ChainCheck{}, c.afterFailure(ctx, call, err)
	}
	return out, check, nil
}

// Version returns an item as it was at a version.
func (c *Cortex) Version(ctx context.Context, call action.Call, id string, version int) (*Item, error) {
	var old Item
	err := c.env.Store.View(func(tx *storage.Tx) error {
		it, err := load(tx, id, true)
		if err != nil {
			return err
		}
		if err := authorize(call, it, "read"); err != nil {
			return err
		}
		if version < 1 || version > it.GlobalVersion {
			return errs.New(errs.NotFound, "%s %q has no version %d: its versions are 1 to %d", it.Type, id, version, it.GlobalVersion).With("field", "version")
		}
		return tx.GetJSON(versionKey(id, version), &old)
	})
	if err != nil {
		return nil, c.afterFailure(ctx, call, err)
	}
	return &old, nil
}

// Query returns the items matching q that the caller may read, in active
// order.
func (c *Cortex) Query(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	if err := q.validate(); err != nil {
		return QueryResult{}, err
	}
	var res QueryResult
	err := c.index.read(ctx, func(idx *memindex.Index) error {
		return c.env.Store.View(func(tx *storage.Tx) error {
			var err error
			res, err = q.fromIndexCached(idx, tx, call.Principal, &c.index.cache)
			return err
		})
	}, func() error {
		return c.env.Store.View(func(tx *storage.Tx) error {
			var err error
			res, err = q.scan(tx, call.Principal)
			return err
		})
	})
	return res, err
}

// activeStatuses are what "active items" means when no status is given.
var activeStatuses = []string{"active", "in_progress", "blocked"}

// Active returns the caller's open items in turn-start order: priority,
// then due date (none last), blocking first, oldest first.
func (c *Cortex) Active(ctx context.Context, call action.Call, q Query) (QueryResult, error) {
	if len(q.Status) == 0 {
		q.Status = activeStatuses
	}
	return c.Query(ctx, call, q)
}

// quiet wraps an error for its type without adding to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// refused is a PermissionError of a share or revoke on it, carrying the
// access.Denial that afterFailure traces (as access.Check's errors do).
func refused(call action.Call, it *Item, op, format string, args ...any) error {
	d := &access.Denial{Event: "access_denied", PrincipalID: call.Principal, ResourceType: it.Type, ResourceID: it.ID,
		AttemptedOperation: op, Timestamp: call.Clock.Now(), ACLChecked: true, Owner: it.Owner}
	return errs.New(errs.Permission, format+"%w", append(args, quiet{d})...).With("principal", call.Principal).With("operation", op)
}
