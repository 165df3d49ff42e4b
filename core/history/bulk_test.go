package history_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
)

// TestBulkLoadWritesWhatWriteWrites: the same utterances, written one by
// one with Write and loaded with BulkLoad into another engine on the same
// clock, leave the same store behind — utterances, postings, counters,
// evictions and the summary they were folded into — and search the same.
func TestBulkLoadWritesWhatWriteWrites(t *testing.T) {
	t.Parallel()
	c := newCorpus(t)
	var reqs []history.WriteRequest
	// BulkLoad commits 100 writes to a transaction here (1,000 in the
	// product: the size only bounds a transaction, the boundary is the
	// same code): the first 400 requests alternate conversations, so each
	// change of conversation ends a transaction early; the last 200 are
	// one conversation, so full transactions end there too. Both kinds of
	// boundary, and ~550 evictions from a buffer of 50 folded into the
	// summary, in 600 writes rather than the 2,500 (1,200 under -race,
	// where each transaction ended at a change of conversation) it took
	// with the product's transaction size.
	const n = 600
	for i := range n {
		conv := "default"
		if i%7 == 3 && i < 400 {
			conv = "side"
		}
		reqs = append(reqs, history.WriteRequest{Conversation: conv, Speaker: speakerOf(i), Text: c.next()})
	}
	ctx := context.Background()
	one, bulk := newRig(t), newRigWith(t, rigOptions{bulkChunk: 100})
	for _, r := range []*rig{one, bulk} {
		r.configure(map[string]any{"buffer_size": 50})
	}
	for _, req := range reqs {
		if _, err := one.h.Write(ctx, one.call(), req); err != nil {
			t.Fatal(err)
		}
	}
	written, err := bulk.h.BulkLoad(ctx, bulk.call(), slices.Values(reqs))
	if err != nil || written != len(reqs) {
		t.Fatalf("BulkLoad = %d, %v", written, err)
	}
	one.h.Settle()
	bulk.h.Settle()
	sameDump(t, "BulkLoad against Write", dump(t, one.e.Env().Store), dump(t, bulk.e.Env().Store))
	for _, q := range []string{"Lisbon flight", "Maria order", "budget"} {
		a := one.search(map[string]any{"query": q})
		b := bulk.search(map[string]any{"query": q})
		if len(a) == 0 || !slices.EqualFunc(a, b, func(x, y utt) bool { return x.UtteranceIndex == y.UtteranceIndex }) {
			t.Errorf("search %q: after Write %v, after BulkLoad %v", q, indexes(a), indexes(b))
		}
	}
}

// TestBulkLoadStopsAtABadRequest: a bad request is a ValidationError
// naming its position and field; the requests before it are written, none
// after.
func TestBulkLoadStopsAtABadRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	reqs := []history.WriteRequest{
		{Speaker: "user", Text: "one"}, {Speaker: "user", Text: "two"},
		{Speaker: "robot", Text: "three"}, {Speaker: "user", Text: "four"},
	}
	n, err := r.h.BulkLoad(context.Background(), r.call(), slices.Values(reqs))
	var e *errs.Error
	if n != 2 || !errors.As(err, &e) || e.Kind != errs.Validation {
		t.Fatalf("BulkLoad = %d, %v; want 2 and a ValidationError", n, err)
	}
	for _, want := range []string{"request 2", `unknown speaker "robot"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got := indexes(r.read("", "")); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("written %v; want [0 1]", got)
	}
}
