package core

import (
	"context"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/storage"
)

// engine.info's empty is true for a new store and false once it holds
// anything a person made, of each kind alone (the console offers its tour
// from it, without the counts that read every key). Plans: the planner's
// TestEngineInfoIsNotEmptyWithAPlan.
func TestEngineInfoEmptyUntilAnythingIsMade(t *testing.T) {
	kinds := map[string][2]string{
		"a goal":         {"cortex.create", `{"type": "goal", "fields": {"title": "Ship it"}}`},
		"a conversation": {"history.write", `{"speaker": "user", "text": "Hello"}`},
		"a thread":       {"thread.message", `{"channel": "sms", "text": "What's the weather?"}`},
		"a memory":       {"memory.memorize", `{"store": "working", "item": {"id": "m", "type": "fact", "text": "Ana lives in Porto."}}`},
	}
	for kind, step := range kinds {
		t.Run(kind, func(t *testing.T) {
			e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			if info := decode[Info](t, do(t, e, "engine.info", "", `{"counts": false}`)); !info.Empty {
				t.Fatalf("a new store is not empty: %+v", info)
			}
			do(t, e, step[0], "", step[1])
			if info := decode[Info](t, do(t, e, "engine.info", "", `{"counts": false}`)); info.Empty {
				t.Fatalf("after %s the store is still empty", step[0])
			}
		})
	}
}

// A record a Holder cannot read (here a memory store's state, damaged)
// does not fail engine.info: the header and the read-only notice still
// come, and empty says false (unknown: the console then offers no tour
// rather than the wrong thing). engram check reports the record.
func TestEngineInfoAnswersWithARecordItCannotRead(t *testing.T) {
	e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	err = e.env.Store.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixMemory, "store", "working"), []byte("not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if info := decode[Info](t, do(t, e, "engine.info", "", `{"counts": false}`)); info.Empty {
		t.Fatalf("a store with a record it cannot read is empty: %+v", info)
	}
}
