package core

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// newFullEngine is an in-memory engine with every default subsystem.
func newFullEngine(t *testing.T) (*Engine, *clock.Fixed) {
	t.Helper()
	c := clock.NewFixed(t0)
	e, err := Open(Options{InMemory: true, Clock: c, IDSeed: "idempotency"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e, c
}

func cortexItems(t *testing.T, e *Engine) int {
	t.Helper()
	info, err := e.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.Counts["cortex"]["items"]
}

func keyed(e *Engine, who, key, name, args string) (json.RawMessage, error) {
	return e.Do(context.Background(), conn.Request{Action: name, Args: json.RawMessage(args), Principal: who, IdempotencyKey: key})
}

func TestRetryWithIdempotencyKeyReturnsTheFirstResultAndCreatesNothing(t *testing.T) {
	e, clk := newFullEngine(t)
	args := `{"type":"goal","fields":{"title":"Ship <it> & tell"}}`
	first, err := keyed(e, "", "create-1", "cortex.create", args)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(60_000_000_000) // a minute: a new run would stamp another time
	again, err := keyed(e, "", "create-1", "cortex.create", args)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) {
		t.Errorf("the retry's result:\n%s\nwant the first's:\n%s", again, first)
	}
	if n := cortexItems(t, e); n != 1 {
		t.Errorf("%d items after a retry, want 1", n)
	}
	// Another agent's same key is its own request.
	if _, err := keyed(e, "bob", "create-1", "cortex.create", args); err != nil {
		t.Fatal(err)
	}
	if n := cortexItems(t, e); n != 2 {
		t.Errorf("%d items after bob's request, want 2", n)
	}
}

func TestIdempotencyKeyOfAnotherRequestIsRefusedAndChangesNothing(t *testing.T) {
	e, _ := newFullEngine(t)
	if _, err := keyed(e, "", "k", "cortex.create", `{"type":"goal","fields":{"title":"one"}}`); err != nil {
		t.Fatal(err)
	}
	_, err := keyed(e, "", "k", "cortex.create", `{"type":"goal","fields":{"title":"two"}}`)
	if e := errs.As(err); e == nil || e.Kind != errs.Validation || e.Details["field"] != "idempotency_key" {
		t.Errorf("the key with other args: %v, want a ValidationError naming idempotency_key", err)
	}
	if n := cortexItems(t, e); n != 1 {
		t.Errorf("%d items, want 1", n)
	}
}

func TestReadOnlyActionsIgnoreTheIdempotencyKey(t *testing.T) {
	e, _ := newFullEngine(t)
	if _, err := keyed(e, "", "", "cortex.create", `{"type":"goal","id":"g","fields":{"title":"one"}}`); err != nil {
		t.Fatal(err)
	}
	before, err := keyed(e, "", "read", "cortex.get", `{"id":"g"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyed(e, "", "", "cortex.update", `{"id":"g","updates":{"title":"two"}}`); err != nil {
		t.Fatal(err)
	}
	after, err := keyed(e, "", "read", "cortex.get", `{"id":"g"}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) == string(before) {
		t.Errorf("cortex.get with a key answered from the record: %s", after)
	}
}

func TestFailedKeyedRequestRunsAgainOnRetry(t *testing.T) {
	e, _ := newFullEngine(t)
	if _, err := keyed(e, "alice", "", "cortex.create", `{"type":"goal","id":"g","fields":{"title":"hers"}}`); err != nil {
		t.Fatal(err)
	}
	update := `{"id":"g","updates":{"progress":50}}`
	// Refused: the denial is traced (a commit), yet nothing is recorded.
	if _, err := keyed(e, "bob", "u1", "cortex.update", update); errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob's update before the grant: %v, want PermissionError", err)
	}
	if _, err := keyed(e, "alice", "", "cortex.share", `{"id":"g","principal":"bob","permissions":["read","write"]}`); err != nil {
		t.Fatal(err)
	}
	out, err := keyed(e, "bob", "u1", "cortex.update", update)
	if err != nil {
		t.Fatalf("bob's retry after the grant: %v, want it to run", err)
	}
	var item struct {
		Item struct {
			Progress int `json:"progress"`
		} `json:"item"`
	}
	if err := json.Unmarshal(out, &item); err != nil || item.Item.Progress != 50 {
		t.Errorf("the retry's result: %s", out)
	}
}
