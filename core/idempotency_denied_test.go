package core

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// A keyed write that is refused (a joinable action: it runs inside the
// transaction that would record its answer, which rolls back) leaves its
// one access_denied entry in the trace, and draws the ids the same write
// without a key draws: a script run through a client, which gives such
// writes a key of their own, prints what it prints in process.
func TestAKeyedRefusedWriteIsTracedOnceAndDrawsTheSameIDs(t *testing.T) {
	run := func(key string) (next string) {
		e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "test"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.Close() }()
		ctx := context.Background()
		if _, err := e.Do(ctx, Request{Action: "cortex.create", Principal: "alice", Args: json.RawMessage(`{"type":"goal","id":"g","fields":{"title":"mine"}}`)}); err != nil {
			t.Fatal(err)
		}
		_, err = e.Do(ctx, Request{Action: "cortex.update", Principal: "bob", IdempotencyKey: key, Args: json.RawMessage(`{"id":"g","updates":{"title":"bob's"}}`)})
		if errs.KindOf(err) != errs.Permission {
			t.Fatalf("bob's update (key %q): %v; want a PermissionError", key, err)
		}
		out, err := e.Do(ctx, Request{Action: "trace.list", Principal: "alice", Args: json.RawMessage(`{"kind": "access_denied"}`)})
		if err != nil {
			t.Fatal(err)
		}
		var trace struct {
			Entries []struct {
				Principal string `json:"principal"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(out, &trace); err != nil || len(trace.Entries) != 1 || trace.Entries[0].Principal != "bob" {
			t.Errorf("key %q: alice's access_denied entries: %s (%v); want bob's refusal once", key, out, err)
		}
		out, err = e.Do(ctx, Request{Action: "cortex.create", Principal: "alice", Args: json.RawMessage(`{"type":"goal","fields":{"title":"next"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			Item struct {
				ID string `json:"id"`
			} `json:"item"`
		}
		if err := json.Unmarshal(out, &created); err != nil {
			t.Fatal(err)
		}
		return created.Item.ID
	}
	if keyed, plain := run("k1"), run(""); keyed != plain {
		t.Errorf("after a refused keyed update the next goal is %s; after the same update without a key, %s", keyed, plain)
	}
}
