package history

import (
	"context"
	"fmt"
	"iter"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
)

// bulkChunk is how many writes BulkLoad commits in one transaction: about
// 17 keys each, well inside Badger's limit on a transaction's size.
const bulkChunk = 1000

// BulkLoad writes many utterances as Write writes each of them — the same
// utterances, postings, evictions, counters and events — but bulkChunk of
// them to a transaction instead of one: for building large conversations
// (benchmarks, imports) at the store's speed rather than a commit's. The
// requests are checked as Write checks them; a bad one stops the load
// with an error naming its position, the writes before it kept. A dry run
// has no place in a load. It returns how many utterances it wrote.
func (h *History) BulkLoad(ctx context.Context, call action.Call, reqs iter.Seq[WriteRequest]) (int, error) {
	written := 0
	var chunk []WriteRequest
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := h.update(ctx, call, chunk[0].Conversation, access.Write, func(tx *kit.Txn, conv *Conversation) error {
			for _, req := range chunk {
				if _, err := h.write(tx, call, conv, req); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		written += len(chunk)
		chunk = chunk[:0]
		return nil
	}
	for req := range reqs {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		bad := req.validate()
		if bad == nil && req.DryRun {
			bad = kit.Validation("dry_run", "a load writes; check a write with history.write's dry_run")
		}
		if bad != nil {
			at := written + len(chunk)
			if err := flush(); err != nil {
				return written, err
			}
			return written, fmt.Errorf("request %d: %w", at, bad)
		}
		if len(chunk) > 0 && (len(chunk) == h.bulkChunk || req.Conversation != chunk[0].Conversation) {
			if err := flush(); err != nil {
				return written, err
			}
		}
		chunk = append(chunk, req)
	}
	return written, flush()
}
