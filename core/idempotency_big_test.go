package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// A keyed write whose result is larger than a value of the store can
// hold (1 MiB in memory: a batch_update of 400 goals of ~3 KB) runs, and commits,
// as the same write without a key does; a retry is told that it committed
// (its result was too large to keep) and changes nothing.
func TestAKeyedWriteWithAResultTooLargeToKeepCommits(t *testing.T) {
	e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ctx := context.Background()
	// 400 goals, each with a 2,500-byte description, make a result over
	// 1 MiB as 1,500 goals of a one-letter title did, in a quarter of the
	// commits (one per create, slow under -race). The result's size is
	// checked below.
	const n = 400
	description := strings.Repeat("a long description ", 125)
	var b strings.Builder
	b.WriteString(`{"updates":[`)
	for i := range n {
		if _, err := e.Do(ctx, Request{Action: "cortex.create", Args: json.RawMessage(fmt.Sprintf(`{"type":"goal","id":"g%d","fields":{"title":"t","description":%q}}`, i, description))}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"g%d","updates":{"progress":5}}`, i)
	}
	b.WriteString(`]}`)
	req := Request{Action: "cortex.batch_update", Args: json.RawMessage(b.String()), IdempotencyKey: "k1"}
	out, err := e.Do(ctx, req)
	if err != nil {
		t.Fatalf("the keyed batch_update: %v", err)
	}
	if len(out) <= 1<<20 {
		t.Fatalf("the result is %d bytes; the test needs one over 1 MiB", len(out))
	}
	_, err = e.Do(ctx, req)
	if errs.KindOf(err) != errs.Conflict || !strings.Contains(err.Error(), "too large to keep") {
		t.Errorf("the retry: %v; want a ConflictError saying the result was too large to keep", err)
	}
	got, err := e.Do(ctx, Request{Action: "cortex.get", Args: json.RawMessage(`{"id":"g0"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"global_version":2`) {
		t.Errorf("g0 after the update and its retry: %.300s; want version 2", got)
	}
}
