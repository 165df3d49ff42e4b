package core

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

// A keyed write that is refused (a joinable action: it runs inside the
// transaction that would record its answer, which rolls back) still
// leaves its one access_denied entry in the trace.
func TestAKeyedRefusedWriteLeavesItsDenialOnce(t *testing.T) {
	e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ctx := context.Background()
	if _, err := e.Do(ctx, Request{Action: "cortex.create", Principal: "alice", Args: json.RawMessage(`{"type":"goal","id":"g","fields":{"title":"mine"}}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Do(ctx, Request{Action: "cortex.update", Principal: "bob", IdempotencyKey: "k1", Args: json.RawMessage(`{"id":"g","updates":{"title":"bob's"}}`)})
	if errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob's keyed update: %v; want a PermissionError", err)
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
		t.Errorf("alice's access_denied entries: %s (%v); want bob's refusal once", out, err)
	}
}
