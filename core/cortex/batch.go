package cortex

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// ItemUpdate is one update of a batch or a commit.
type ItemUpdate struct {
	ID              string                     `json:"id" arg:"required"`
	Updates         map[string]json.RawMessage `json:"updates" arg:"required"`
	ExpectedVersion *int                       `json:"expected_version,omitempty"`
}

// ItemError says why one update of a batch failed.
type ItemError struct {
	Index   int       `json:"index"`
	ID      string    `json:"id"`
	Kind    errs.Kind `json:"kind"`
	Message string    `json:"message"`

	current int // a ConflictError's current version
}

// BatchResult is what a batch update committed.
type BatchResult struct {
	TransactionID string  `json:"transaction_id"`
	Committed     bool    `json:"committed"`
	Succeeded     int     `json:"succeeded"`
	Failed        int     `json:"failed"`
	Items         []*Item `json:"items"`
	MergeApplied  int     `json:"merge_applied"`
}

// maxBatch bounds one batch: what fits in one Badger transaction with room.
const maxBatch = 3000

// applyAll applies updates in one transaction with one transaction id: all
// of them, or (when any fails) none. retries allows re-applying an update on
// the current version after a conflict, inside the transaction.
func (c *Cortex) applyAll(ctx context.Context, call action.Call, updates []ItemUpdate, retries int) (BatchResult, error) {
	if len(updates) == 0 {
		return BatchResult{}, fieldErr("updates", "give at least one {id, updates}")
	}
	if len(updates) > maxBatch {
		return BatchResult{}, fieldErr("updates", "%d updates; at most %d fit in one transaction", len(updates), maxBatch)
	}
	txID := c.env.IDs.New()
	// Invalid updates are refused before the transaction, with the same
	// details as a rollback, so a caller handles both alike.
	parsed := make([][]change, len(updates))
	var failures []ItemError
	var firstErr error
	for i, u := range updates {
		changes, err := parseUpdates(u.Updates)
		if err == nil && len(changes) == 0 {
			err = fieldErr("updates", "nothing to update: give at least one field, e.g. {\"progress\": 75}")
		}
		if err != nil {
			failures = append(failures, itemError(i, u.ID, err))
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		parsed[i] = changes
	}
	if len(failures) > 0 {
		return BatchResult{}, c.rolledBack(ctx, call, txID, len(updates), failures, firstErr)
	}
	var res BatchResult
	err := c.env.Update(ctx, func(tx *kit.Txn) error {
		res = BatchResult{TransactionID: txID, Items: make([]*Item, 0, len(updates))}
		failures, firstErr = nil, nil
		for i, u := range updates {
			r, err := c.applyRetrying(tx, call, txID, u.ID, parsed[i], u.ExpectedVersion, retries)
			if err != nil {
				if !errors.As(err, new(*errs.Error)) {
					// The store failed (e.g. the transaction grew too big),
					// not this update: the later ones would fail alike.
					return err
				}
				failures = append(failures, itemError(i, u.ID, err))
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			res.Items = append(res.Items, r.Item)
			if r.MergeApplied {
				res.MergeApplied++
			}
		}
		if len(failures) > 0 {
			return errRollback
		}
		res.Committed, res.Succeeded = true, len(updates)
		_, err := tx.Trace(call, "cortex.batch", fmt.Sprintf("FC batch of %d updates committed, transaction %s (%d merged)", len(updates), txID, res.MergeApplied),
			batchNote{Count: len(updates), MergeApplied: res.MergeApplied, TransactionID: txID})
		return err
	})
	switch {
	case errors.Is(err, errRollback):
		return BatchResult{}, c.rolledBack(ctx, call, txID, len(updates), failures, firstErr)
	case errors.Is(err, storage.ErrTooBig):
		return BatchResult{}, errs.New(errs.Budget, "%d updates do not fit in one transaction (%w); send them in smaller batches", len(updates), err).
			With("transaction_id", txID).With("committed", false).With("succeeded", 0).With("updates", len(updates))
	case err != nil:
		return BatchResult{}, c.afterFailure(ctx, call, err)
	}
	return res, nil
}

func itemError(i int, id string, err error) ItemError {
	e := errs.As(err)
	cur, _ := e.Details["current_version"].(int)
	return ItemError{Index: i, ID: id, Kind: e.Kind, Message: e.Message, current: cur}
}

// rolledBack is the error of a batch none of whose updates was applied.
func (c *Cortex) rolledBack(ctx context.Context, call action.Call, txID string, n int, failures []ItemError, firstErr error) error {
	first := errs.As(firstErr)
	return c.afterFailure(ctx, call, errs.New(first.Kind,
		"rolled back: %d of %d updates failed, so none was applied (first: updates[%d] %s: %s)%w",
		len(failures), n, failures[0].Index, failures[0].ID, first.Message, quiet{firstErr}).
		With("transaction_id", txID).With("committed", false).With("succeeded", 0).
		With("failed", len(failures)).With("rolled_back", n-len(failures)).With("errors", failures))
}

var errRollback = errors.New("roll back")

// applyRetrying applies one update inside tx; on a conflict it re-reads the
// item and applies the update again on its current version, up to retries
// times (inside one transaction the re-read sees the same state, so one
// retry settles it).
func (c *Cortex) applyRetrying(tx *kit.Txn, call action.Call, txID, id string, changes []change, expected *int, retries int) (UpdateResult, error) {
	for attempt := 0; ; attempt++ {
		r, err := c.applyUpdate(tx, call, txID, id, changes, expected, false)
		var conflict *errs.Error
		if err == nil || attempt >= retries || !errors.As(err, &conflict) || conflict.Kind != errs.Conflict || conflict.Details["current"] == nil {
			r.Retries = attempt
			return r, err
		}
		cur := conflict.Details["current"].(*Item).GlobalVersion
		expected = &cur
	}
}

// BatchUpdate applies every update in one atomic transaction.
func (c *Cortex) BatchUpdate(ctx context.Context, call action.Call, updates []ItemUpdate) (BatchResult, error) {
	return c.applyAll(ctx, call, updates, 0)
}

// Commit is commit_at_turn_end: a turn's updates, atomically, traced as
// "FC commit succeeded" or "FC commit failed: ConflictError, item_id=X,
// current_version=N", and announced as an event either way.
func (c *Cortex) Commit(ctx context.Context, call action.Call, updates []ItemUpdate, retries int) (BatchResult, error) {
	if retries < 0 {
		return BatchResult{}, fieldErr("max_retries", "must be 0 or more")
	}
	res, err := c.applyAll(ctx, call, updates, retries)
	if err != nil {
		c.reportCommitFailure(ctx, call, err)
		return res, err
	}
	ids := make([]string, len(res.Items))
	for i, it := range res.Items {
		ids[i] = it.ID
	}
	c.traceAndPublish(ctx, call, "cortex.commit", "FC commit succeeded", committedNote{Items: ids, TransactionID: res.TransactionID})
	return res, nil
}

// reportCommitFailure traces "FC commit failed: <kind>[, item_id=X,
// current_version=N]" and publishes the commit event.
func (c *Cortex) reportCommitFailure(ctx context.Context, call action.Call, err error) {
	kind := errs.KindOf(err)
	msg := "FC commit failed: " + string(kind)
	data := commitFailedNote{Error: string(kind)}
	e := errs.As(err)
	failures, _ := e.Details["errors"].([]ItemError)
	if i := slices.IndexFunc(failures, func(f ItemError) bool { return f.Kind == errs.Conflict }); i >= 0 {
		msg += fmt.Sprintf(", item_id=%s, current_version=%d", failures[i].ID, failures[i].current)
		data.ItemID, data.CurrentVersion = &failures[i].ID, &failures[i].current
	} else if cur, ok := e.Details["current"].(*Item); ok && kind == errs.Conflict {
		msg += fmt.Sprintf(", item_id=%s, current_version=%d", cur.ID, cur.GlobalVersion)
		data.ItemID, data.CurrentVersion = &cur.ID, &cur.GlobalVersion
	}
	c.traceAndPublish(ctx, call, "cortex.commit.failed", msg, data)
}

// CommitEvent is the payload of EventCommit.
type CommitEvent struct {
	// Message is the trace message: "FC commit succeeded" or "FC commit failed: <kind>…".
	Message string `json:"message"`
	// OK says whether the commit succeeded.
	OK bool `json:"ok"`
	// TurnID is the turn whose updates were committed.
	TurnID string `json:"turn_id"`
}

// EventCommit is published after every commit at turn end, successful or not.
var EventCommit = events.Define[CommitEvent]("cortex.commit", "after every commit of a turn's cortex updates at turn end, successful or not")

// batchNote is the data of the cortex.batch trace entry.
type batchNote struct {
	Count         int    `json:"count"`
	MergeApplied  int    `json:"merge_applied"`
	TransactionID string `json:"transaction_id"`
}

// committedNote is the data of cortex.commit's "FC commit succeeded" entry.
type committedNote struct {
	Items         []string `json:"items"`
	TransactionID string   `json:"transaction_id"`
}

// commitFailedNote is the data of the cortex.commit.failed trace entry;
// a conflict also names the item and its current version (pointers: absent
// otherwise, as the entry has always had them).
type commitFailedNote struct {
	CurrentVersion *int    `json:"current_version,omitempty"`
	Error          string  `json:"error"`
	ItemID         *string `json:"item_id,omitempty"`
}

func (c *Cortex) traceAndPublish(ctx context.Context, call action.Call, kind, msg string, data any) {
	err := c.env.Update(ctx, func(tx *kit.Txn) error {
		_, err := tx.Trace(call, kind, msg, data)
		EventCommit.Publish(tx, events.Only(call.Principal), CommitEvent{TurnID: call.Turn, Message: msg, OK: !strings.Contains(kind, "failed")})
		return err
	})
	if err != nil {
		c.env.Log.Warn("tracing a commit failed", "err", err)
	}
}

// counts reports items and audit entries for engine.info.
func (c *Cortex) counts() (map[string]int, error) {
	out := map[string]int{}
	err := c.env.Store.View(func(tx *storage.Tx) error {
		var err error
		if out["items"], err = tx.Count(itemPrefix()); err != nil {
			return err
		}
		out["mutations"], err = tx.Count(auditCountPrefix())
		return err
	})
	return out, err
}
