package memory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/engram-console/engram/core/memory"
)

// TestMemorizeManyWritesWhatMemorizeWrites: the bulk path the scale
// generator loads memories with stores, key for key, what memory.memorize
// run once per item stores (the trace aside): items, indexes, postings,
// the store's counters.
func TestMemorizeManyWritesWhatMemorizeWrites(t *testing.T) {
	c := newCorpus(5)
	items := make([]memory.Item, 400)
	for i := range items {
		items[i] = c.item(i)
		items[i].ID = fmt.Sprintf("m%04d", i)
	}
	bulk, one := newRig(t), newRig(t)
	for _, r := range []*rig{bulk, one} {
		r.configure(map[string]any{"store": "big", "type": "episodic"})
	}
	for start := 0; start < len(items); start += 150 {
		if err := bulk.m.MemorizeMany(context.Background(), bulk.call(), "big", items[start:min(start+150, len(items))]); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range items {
		one.Do(agent, "memory.memorize", map[string]any{"store": "big", "item": map[string]any{
			"id": it.ID, "type": it.Type, "text": it.Text, "agent_id": it.AgentID, "tags": it.Tags,
			"importance": it.Importance, "timestamp": it.Timestamp,
		}}, nil)
	}
	sameDump(t, "MemorizeMany against memorize", one.dump(), bulk.dump())
	if err := bulk.m.Check("big"); err != nil {
		t.Fatal(err)
	}
}
