package memory_test

import (
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Token budgets: what a full store does with one more item.
// Seed 004 scenario 2.12.

// TestTokenBudgetEvictsOrRejects: a full store evicts the least important
// items (evict) or refuses the new one (reject).
// (Seed 004, scenario 2.12.)
func TestTokenBudgetEvictsOrRejects(t *testing.T) {
	fill := func(r *rig, store string) {
		// 4 × 200 = 800 tokens; b is the least important, a the oldest.
		for i, in := range []map[string]any{
			it("a", "first", "importance", 0.5),
			it("b", "second", "importance", 0.2),
			it("c", "third", "importance", 0.9),
			it("d", "fourth", "importance", 0.5),
		} {
			in["tokens_estimate"], in["timestamp"] = 200, at(time.Duration(i)*time.Minute)
			r.memorize(store, in)
		}
	}
	t.Run("evict", func(t *testing.T) {
		r := newRig(t)
		c := r.configure(map[string]any{"store": "budget", "type": "working", "token_budget": 1000, "on_full": "evict"})
		if c.MaxTokens != 1000 || c.OnFull != "evict" {
			t.Fatalf("configure: %+v", c)
		}
		fill(r, "budget")
		res := r.memorize("budget", it("big", "a large item", "tokens_estimate", 300, "importance", 0.8))
		if !slices.Equal(res.Evicted, []string{"b"}) {
			t.Errorf("evicted %v, want the least important [b]", res.Evicted)
		}
		c = r.checkCounters("budget")
		if c.TokenUsage != 900 || c.ItemCount != 4 {
			t.Errorf("after: %+v", c)
		}
		if g := r.get("budget", "b"); !g.Deleted || !g.Evicted {
			t.Errorf("the evicted item: %+v", g)
		}
		// Equal importance: the oldest goes first (a, then d).
		res = r.memorize("budget", it("big2", "another large item", "tokens_estimate", 400, "importance", 0.95))
		if !slices.Equal(res.Evicted, []string{"a", "d"}) {
			t.Errorf("evicted %v, want the least important, oldest first: [a d]", res.Evicted)
		}
		if c := r.checkCounters("budget"); c.TokenUsage > 1000 {
			t.Errorf("over budget: %+v", c)
		}
		// An item bigger than the whole budget cannot fit at all.
		before := r.dump()
		r.Fail(agent, "memory.memorize", map[string]any{"store": "budget", "item": it("huge", "x", "tokens_estimate", 1001)}, errs.Budget, "token_budget")
		sameDump(t, "an item over the whole budget", before, r.dump())
	})
	t.Run("reject", func(t *testing.T) {
		r := newRig(t)
		r.configure(map[string]any{"store": "budget", "type": "working", "token_budget": 1000, "on_full": "reject"})
		fill(r, "budget")
		before := r.dump()
		e := r.Fail(agent, "memory.memorize", map[string]any{"store": "budget", "item": it("big", "a large item", "tokens_estimate", 300)}, errs.Budget, "full", "reject")
		if e.Details["store"] != "budget" {
			t.Errorf("details %v", e.Details)
		}
		sameDump(t, "a rejected memorize", before, r.dump())
		if c := r.checkCounters("budget"); c.TokenUsage != 800 || c.OnFull != "reject" {
			t.Errorf("after: %+v", c)
		}
		// What fits still goes in.
		r.memorize("budget", it("small", "fits", "tokens_estimate", 200))
		if c := r.checkCounters("budget"); c.TokenUsage != 1000 || c.Available.Tokens != 0 {
			t.Errorf("full: %+v", c)
		}
	})
}
