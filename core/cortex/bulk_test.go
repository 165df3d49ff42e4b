package cortex

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

// dumpStore is every key of e's store with its value, in key order.
func dumpStore(t *testing.T, e *testEnv) []string {
	t.Helper()
	var kvs []string
	err := e.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(nil), func(k, v []byte) error {
			kvs = append(kvs, fmt.Sprintf("%q = %q", k, v))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

// TestBulkCreateWritesWhatCreateWrites: the benchmarks' bulk loader
// (seed 000 §6.4's 100k items in seconds) stores byte for byte what
// cortex.create stores for the same items, one Create after another a
// millisecond apart: items, versions, audit entries and chain heads,
// indexes, trace entries. Past the trace's pruning point too, and with
// more transactions than one.
func TestBulkCreateWritesWhatCreateWrites(t *testing.T) {
	specs := itemSpecs(700, 11)
	bulk := newEnv(t)
	bulk.bulkCreate(specs, 50)

	one := newEnv(t)
	for _, s := range specs {
		fields := map[string]json.RawMessage{}
		for k, v := range s.fields {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			fields[k] = b
		}
		one.clock.Advance(time.Millisecond)
		if _, err := one.c.Create(context.Background(), one.actionCall(call{As: s.owner}), s.typ, s.id, fields); err != nil {
			t.Fatal(err)
		}
	}

	got, want := dumpStore(t, bulk), dumpStore(t, one)
	if len(got) != len(want) {
		t.Errorf("the bulk loader wrote %d keys, Create %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("key %d differs:\n bulk   %s\n create %s", i, got[i], want[i])
		}
	}
	if !bulk.clock.Now().Equal(one.clock.Now()) {
		t.Errorf("the bulk loader left the clock at %s, Create at %s", bulk.clock.Now(), one.clock.Now())
	}
}
