package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/memory"
)

// TestRememberWithCachedPostingsEqualsTheStore: a property test of the
// postings cache (issue 17: remember over a million items). Random
// memorizes, soft and hard forgets, unforgets, and evictions from a
// bounded store, with remembers in between (which fill the cache); after
// every step, each prompt recalls exactly what it recalls with every
// posting read from the store: the same items, scores and order.
func TestRememberWithCachedPostingsEqualsTheStore(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"store": "s", "type": "episodic"})
	r.configure(map[string]any{"store": "w", "type": "working", "max_items": 60, "on_full": "evict"})
	c := newCorpus(9)
	rng := rand.New(rand.NewPCG(4, 4))
	prompts := append([]string{"flight", "Maria", "server migration"}, benchPrompts...)
	var ids []string
	remember := func(store, prompt string, deleted bool) string {
		args, _ := json.Marshal(map[string]any{"store": store, "prompt": prompt, "limit": 20, "include_deleted": deleted})
		raw, err := r.e.Do(context.Background(), core.Request{Action: "memory.remember", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	compare := func(step int) {
		t.Helper()
		for _, store := range []string{"s", "w"} {
			for _, p := range prompts {
				deleted := rng.IntN(2) == 0
				cached := remember(store, p, deleted)
				memory.SetTermCache(false)
				stored := remember(store, p, deleted)
				memory.SetTermCache(true)
				if cached != stored {
					t.Fatalf("step %d, %s %q: with the cache\n%s\nfrom the store\n%s", step, store, p, cached, stored)
				}
			}
		}
	}
	for step := range 150 {
		store := []string{"s", "w"}[rng.IntN(2)]
		switch op := rng.IntN(10); {
		case op < 5 || len(ids) == 0:
			it := c.item(step)
			id := fmt.Sprintf("m%03d", step)
			r.Do(agent, "memory.memorize", map[string]any{"store": store, "item": map[string]any{
				"id": id, "type": it.Type, "text": it.Text, "agent_id": it.AgentID, "tags": it.Tags,
				"importance": it.Importance, "timestamp": it.Timestamp}}, nil)
			ids = append(ids, store+"/"+id)
		case op < 8:
			ref := ids[rng.IntN(len(ids))]
			mode := []string{"soft", "hard"}[rng.IntN(2)]
			_, _ = r.Try(agent, "memory.forget", map[string]any{"store": ref[:1], "instruction": "item " + ref[2:], "mode": mode})
		default:
			ref := ids[rng.IntN(len(ids))]
			_, _ = r.Try(agent, "memory.unforget", map[string]any{"store": ref[:1], "id": ref[2:]})
		}
		if step%5 == 0 {
			compare(step)
		}
	}
	compare(150)
}
