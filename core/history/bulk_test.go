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
	// More than one of BulkLoad's transactions (1,000 writes), with
	// evictions from a buffer of 50.
	n := 2500
	if raceDetector {
		n = 1200
	}
	for i := range n {
		conv := "default"
		if i%7 == 3 {
			conv = "side"
		}
		reqs = append(reqs, history.WriteRequest{Conversation: conv, Speaker: speakerOf(i), Text: c.next()})
	}
	ctx := context.Background()
	one, bulk := newRig(t), newRig(t)
	for _, r := range []*rig{one, bulk} {
		r.configure(map[string]any{"buffer_size": 50})
	}
	for _, req := range reqs {
		if _, err := one.h.Write(ctx, one.call(), req); err != nil {
			t.Fatal(err)
		}
	}
	n, err := bulk.h.BulkLoad(ctx, bulk.call(), slices.Values(reqs))
	if err != nil || n != len(reqs) {
		t.Fatalf("BulkLoad = %d, %v", n, err)
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
