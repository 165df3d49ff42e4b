package history

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Folding evicted utterances into the running summary (extracting their
// entities, recompressing) costs more than the rest of a write, so a write
// only marks what it evicted — a fold key per utterance, in the write's own
// transaction — and a background worker folds them in right after. Every
// reader of the summary settles the worker first, so it always sees every
// eviction folded in; and the worker folds each write's evictions as one
// step, with the token limit and time of that write, so the summary comes
// out exactly as if the write had folded them itself.

// foldEntry is what a fold key holds: which write evicted the utterance
// (its evictions fold together), and that write's limit and time.
type foldEntry struct {
	Batch int       `json:"batch"`
	Limit int       `json:"limit"`
	At    time.Time `json:"at"`
	// Principal and Turn of the write, for the trace of a model summary.
	Principal string `json:"principal,omitempty"`
	Turn      string `json:"turn,omitempty"`
	// Speaker and Text of the evicted utterance, as it was evicted: a fold
	// never reads the utterance, which a delete may have removed since
	// (the summary keeps what an evicted utterance said).
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// markFold records that the utterances out were evicted and await folding.
func markFold(tx *kit.Txn, call action.Call, conv *Conversation, out []*Utterance, at time.Time) error {
	for _, u := range out {
		e := foldEntry{Batch: out[0].UtteranceIndex, Limit: conv.SummaryTokenLimit, At: at, Principal: call.Principal, Turn: call.Turn,
			Speaker: u.Speaker, Text: u.Text}
		if err := tx.SetJSON(foldKey(conv.Conversation, u.UtteranceIndex), e); err != nil {
			return err
		}
	}
	return nil
}

// foldPending folds every pending eviction of conversation c, a write's
// worth per transaction, oldest first. Only the folder runs it, one job at
// a time, and it does not take the conversation's write lock: writes never
// wait for a fold (a fold touches only the summary and the fold keys, which
// writes do not read).
func (h *History) foldPending(ctx context.Context, c string) error {
	if c == resumeJob {
		return h.resumeFolds()
	}
	st, _, err := h.storeOf(c)
	if err != nil {
		return err
	}
	for {
		done := false
		err := h.env.UpdateOn(ctx, st, func(tx *kit.Txn) error {
			var err error
			done, err = h.foldBatch(tx, c)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// foldBatch folds the oldest pending write's evictions into the summary;
// done when there were none.
func (h *History) foldBatch(tx *kit.Txn, c string) (done bool, err error) {
	rec, err := loadSummary(tx.Tx, c)
	if err != nil {
		return false, err
	}
	var batch *foldEntry
	var keys [][]byte
	var lines []text.Line
	// Fold keys are deleted once folded, and a scan from the start of the
	// prefix would step over every deleted one (a write after a million
	// evictions would cost a million steps): evictions go oldest first, so
	// the pending ones start where the last fold ended.
	from := storage.Range{Prefix: foldPrefix(c), Start: foldKey(c, rec.NextFold)}
	err = tx.Scan(from, func(k, v []byte) error {
		var e foldEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return err
		}
		if batch != nil && e.Batch != batch.Batch {
			return storage.ErrStop
		}
		batch = &e
		keys = append(keys, k)
		i, err := storage.ParseUint64(storage.LastPart(k))
		if err != nil {
			return err
		}
		lines = append(lines, text.Line{Index: int(i), Speaker: e.Speaker, Text: e.Text})
		return nil
	})
	if err != nil || batch == nil {
		return batch == nil, err
	}
	model := llm.Available(h.env.LLM)
	var previous string
	if model {
		previous = rec.current()
	}
	// A large batch (history.configure shrinking a full buffer) is added
	// a chunk at a time, each compressed before the next: compressing
	// thousands of parts at once costs the square of their number.
	tokens := 0
	for chunk := range slices.Chunk(lines, foldChunk) {
		rec.Extractive.Add(chunk...)
		_, tokens = rec.Extractive.Compress(batch.Limit, countTokens)
	}
	rec.UpdatedAt = batch.At
	rec.NextFold = lines[len(lines)-1].Index + 1
	if err := tx.SetJSON(sumKey(c), rec); err != nil {
		return false, err
	}
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return false, err
		}
	}
	EventSummary.Publish(tx, audienceIn(tx.Tx, c), SummaryEvent{Conversation: c, Covered: rec.Extractive.Covered(), TokenCount: tokens, Writer: "extractive"})
	if model && len(lines) > 0 {
		spans, limit := rec.Extractive.Spans(), batch.Limit
		call := action.Call{Principal: batch.Principal, Turn: batch.Turn, Clock: h.env.Clock}
		tx.AfterCommit(func(ctx context.Context) {
			h.modelSummary(ctx, call, c, previous, lines, spans, limit)
		})
	}
	return false, nil
}

// foldChunk is how many evicted utterances a fold adds to the summary
// before compressing it (a write evicts fewer: its fold is one step).
const foldChunk = 64

// resumeJob is the folder's job of queueing the folds a previous run left
// pending; no conversation is named with a '/'.
const resumeJob = "/resume"

// resumeFolds queues the folds a previous run left pending.
func (h *History) resumeFolds() error {
	st, err := h.stores.get(BackendDurable)
	if err != nil || st == nil {
		return nil // no durable backend (an in-memory engram): nothing survived
	}
	var convs []string
	err = st.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, "fold")), func(k []byte) error {
			parts := storage.SplitKey(storage.PrefixHistory, k)
			if len(parts) < 2 {
				return nil
			}
			convs = append(convs, parts[1])
			// One pending fold of a conversation is enough to queue it: the
			// rest (a million, after a bulk load) are skipped, not read.
			return &storage.SkipTo{Key: storage.PrefixEnd(foldPrefix(parts[1]))}
		})
	})
	h.enqueueFolds(convs...)
	if err != nil {
		return fmt.Errorf("resuming summary folds: %w", err)
	}
	return nil
}

// enqueueFolds queues the pending folds of conversations.
func (h *History) enqueueFolds(convs ...string) {
	if !h.holdFolds {
		h.folder.Enqueue(convs...)
	}
}

// settleFolds makes sure conversation c's pending folds have run — queued
// again (a fold that failed stays pending until then), and waited for —
// before its summary is read. A conversation name that does not parse has
// nothing to fold: the reader reports it.
func (h *History) settleFolds(c string) {
	if name, err := conversationName(c); err == nil {
		h.enqueueFolds(name)
	}
	h.folder.Settle(context.Background())
}
