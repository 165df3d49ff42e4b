package memory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

// TestMemorizeBadInput: every invalid item is a clear error naming what is
// wrong, and the store is unchanged.
func TestMemorizeBadInput(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("taken", "an item already there"))
	before := r.dump()
	for _, c := range []struct {
		args      any
		kind      errs.Kind
		fragments []string
	}{
		{map[string]any{"store": "working", "item": it("", "")}, errs.Validation, []string{"item.text"}},
		{map[string]any{"store": "working", "item": it("", "\n\t ")}, errs.Validation, []string{"item.text"}},
		{map[string]any{"store": "working", "item": map[string]any{"text": "x", "agent_id": "a"}}, errs.Validation, []string{"type"}},
		{map[string]any{"store": "working", "item": it("", "x", "importance", -0.1)}, errs.Validation, []string{"item.importance", "-0.1"}},
		{map[string]any{"store": "working", "item": it("", "x", "importance", 1.5)}, errs.Validation, []string{"item.importance", "1.5"}},
		{map[string]any{"store": "working", "item": it("", "x", "importance", "high")}, errs.Validation, []string{"importance"}},
		{map[string]any{"store": "working", "item": it("", "x", "tokens_estimate", -5)}, errs.Validation, []string{"item.tokens_estimate"}},
		{map[string]any{"store": "working", "item": it("", "x", "metadata", "a string")}, errs.Validation, []string{"item.metadata", "object", "string"}},
		{map[string]any{"store": "working", "item": it("", "x", "metadata", []int{1, 2})}, errs.Validation, []string{"item.metadata", "object"}},
		{map[string]any{"store": "working", "item": it("", "x", "metadata", 42)}, errs.Validation, []string{"item.metadata", "object"}},
		{map[string]any{"store": "working", "item": it("", "x", "tags", []string{"ok", " "})}, errs.Validation, []string{"item.tags"}},
		{map[string]any{"store": "working", "item": it("", "x", "tags", []string{"a/b"})}, errs.Validation, []string{"item.tags"}},
		{map[string]any{"store": "working", "item": it("a/b", "x")}, errs.Validation, []string{"item.id"}},
		{map[string]any{"store": "working", "item": it("", "x", "agent_id", "x\x1b[2J")}, errs.Validation, []string{"item.agent_id", "control"}},
		{map[string]any{"store": "working", "item": it("", "x", "type", strings.Repeat("t", 300))}, errs.Validation, []string{"item.type"}},
		{map[string]any{"store": "working", "item": it("", strings.Repeat("word ", 60_000))}, errs.Validation, []string{"item.text", "bytes"}},
		{map[string]any{"store": "working", "item": it("", "x", "timestamp", "last tuesday")}, errs.Validation, []string{"timestamp"}},
		{map[string]any{"store": "working", "item": it("", "x", "colour", "red")}, errs.Validation, []string{"colour"}},
		{map[string]any{"store": "working", "item": it("taken", "the same id again")}, errs.Conflict, []string{"taken"}},
		{map[string]any{"store": "nowhere", "item": it("", "x")}, errs.NotFound, []string{"nowhere"}},
		{map[string]any{"store": "", "item": it("", "x")}, errs.Validation, []string{"store"}},
		{map[string]any{"item": it("", "x")}, errs.Validation, []string{"store"}},
		{map[string]any{"store": "working"}, errs.Validation, []string{"item"}},
		{map[string]any{"store": "working", "item": "just text"}, errs.Validation, []string{"item"}},
		{`{"store": "working", "item": {"type": "fact", "text": "x", "agent_id": "a"}`, errs.Parse, nil},
	} {
		r.Fail(agent, "memory.memorize", c.args, c.kind, c.fragments...)
	}
	sameDump(t, "invalid memorizes", before, r.dump())
	r.checkCounters("working")
}

// TestConfigureChecksTypesLimitsAndPolicies: new stores need a type, types never change, limits and
// policies are checked, and the stores are listed.
func TestConfigureChecksTypesLimitsAndPolicies(t *testing.T) {
	r := newRig(t)
	before := r.dump()
	for _, c := range []struct {
		args      map[string]any
		kind      errs.Kind
		fragments []string
	}{
		{map[string]any{"store": "notes"}, errs.Validation, []string{"type", "new store"}},
		{map[string]any{"store": "notes", "type": "semantic"}, errs.Validation, []string{"type", "semantic"}},
		{map[string]any{"store": "working", "type": "episodic"}, errs.Validation, []string{"type", "cannot change"}},
		{map[string]any{"store": "episodic", "type": "working"}, errs.Validation, []string{"type", "cannot change"}},
		{map[string]any{"store": "notes", "type": "working", "max_items": -1}, errs.Validation, []string{"max_items"}},
		{map[string]any{"store": "notes", "type": "working", "token_budget": -1}, errs.Validation, []string{"token_budget"}},
		{map[string]any{"store": "notes", "type": "working", "on_full": "panic"}, errs.Validation, []string{"on_full", "evict", "reject"}},
		{map[string]any{"store": "a/b", "type": "working"}, errs.Validation, []string{"store"}},
		{map[string]any{"store": "", "type": "working"}, errs.Validation, []string{"store"}},
		{map[string]any{"type": "working"}, errs.Validation, []string{"store"}},
		{map[string]any{"store": "notes", "type": "working", "max_item": 3}, errs.Validation, []string{"max_item"}},
	} {
		r.Fail(agent, "memory.configure", c.args, c.kind, c.fragments...)
	}
	sameDump(t, "failed configures", before, r.dump())

	// New stores: working evicts by default, episodic rejects.
	w := r.configure(map[string]any{"store": "scratch", "type": "working", "max_items": 3})
	if w.Type != "working" || w.MaxItems != 3 || w.MaxTokens != 0 || w.OnFull != "evict" || w.Available.Items != 3 || w.Available.Tokens != -1 {
		t.Errorf("scratch: %+v", w)
	}
	e := r.configure(map[string]any{"store": "journal", "type": "episodic", "token_budget": 500})
	if e.Type != "episodic" || e.OnFull != "reject" || e.MaxTokens != 500 {
		t.Errorf("journal: %+v", e)
	}
	// Configuring again keeps what is not given; the same type is fine.
	if c := r.configure(map[string]any{"store": "scratch", "type": "working", "on_full": "reject"}); c.MaxItems != 3 || c.OnFull != "reject" {
		t.Errorf("reconfigured: %+v", c)
	}
	if c := r.configure(map[string]any{"store": "scratch", "max_items": 0}); c.MaxItems != 0 || c.Available.Items != -1 {
		t.Errorf("no limit: %+v", c)
	}
	stores := enginetest.Call[memory.StoresResult](r.Rig, agent, "memory.stores", action.None{})
	var names []string
	for _, s := range stores.Stores {
		names = append(names, s.Store+":"+s.Type)
	}
	if want := []string{"episodic:episodic", "journal:episodic", "scratch:working", "working:working"}; !slices.Equal(names, want) {
		t.Errorf("stores %v, want %v", names, want)
	}
	if stores.Stores[3].MaxItems != 100 || stores.Stores[3].MaxTokens != 4000 {
		t.Errorf("the default working store: %+v", stores.Stores[3])
	}
}

// TestConfigureLowerLimits: lowering limits evicts the least important
// (then oldest) under evict, and fails, changing nothing, under reject.
func TestConfigureLowerLimits(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"store": "box", "type": "working", "max_items": 10, "token_budget": 1000})
	for i, imp := range []float64{0.5, 0.1, 0.9, 0.3, 0.5, 0.7} {
		r.memorize("box", it(fmt.Sprintf("b%d", i), "thing", "importance", imp, "tokens_estimate", 100, "timestamp", at(time.Duration(i)*time.Minute)))
	}
	r.configure(map[string]any{"store": "box", "on_full": "reject"})
	before := r.dump()
	r.Fail(agent, "memory.configure", map[string]any{"store": "box", "max_items": 3}, errs.Budget, "more than the new limits", "on_full evict")
	r.Fail(agent, "memory.configure", map[string]any{"store": "box", "token_budget": 500}, errs.Budget)
	sameDump(t, "a rejected configure", before, r.dump())

	c := r.configure(map[string]any{"store": "box", "max_items": 4, "on_full": "evict"})
	if c.ItemCount != 4 || c.MaxItems != 4 {
		t.Errorf("max_items 4: %+v", c)
	}
	if got := sorted(ids(r.remember("box", ""))); !slices.Equal(got, []string{"b0", "b2", "b4", "b5"}) {
		t.Errorf("left %v, want the 4 most important (b0 older than b4 at 0.5)", got)
	}
	c = r.configure(map[string]any{"store": "box", "token_budget": 250})
	if c.ItemCount != 2 || c.TokenUsage != 200 {
		t.Errorf("token_budget 250: %+v", c)
	}
	if got := ids(r.remember("box", "")); !slices.Equal(got, []string{"b2", "b5"}) {
		t.Errorf("left %v", got)
	}
	for _, id := range []string{"b0", "b1", "b3", "b4"} {
		if g := r.get("box", id); !g.Deleted || !g.Evicted {
			t.Errorf("%s: %+v", id, g)
		}
	}
	r.checkCounters("box")
}

// TestDefaultWorkingStoreBounded: the default working store keeps at most
// 100 items and 4000 tokens, evicting the least important.
func TestDefaultWorkingStoreBounded(t *testing.T) {
	r := newRig(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 130 {
		r.memorize("working", it(fmt.Sprintf("w%03d", i), fmt.Sprintf("memory number %d about something", i),
			"importance", float64(rng.IntN(11))/10, "tokens_estimate", 10+rng.IntN(60), "timestamp", at(time.Duration(i)*time.Second)))
		r.checkCounters("working")
	}
	c := r.capacity("working")
	if c.ItemCount > 100 || c.TokenUsage > 4000 || c.Deleted == 0 || c.ItemCount+c.Deleted != 130 {
		t.Errorf("capacity %+v", c)
	}
}

// TestEvictionOrderModel: a long run of memorizes into a small bounded
// store with random importance evicts exactly what a model of the policy
// says (the least important, then oldest, live item first), whatever the
// bottom of the imp index looks like; forgets by other forms interleave.
func TestEvictionOrderModel(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"store": "small", "type": "working", "max_items": 8, "token_budget": 400, "on_full": "evict"})
	type entry struct {
		id     string
		imp    float64
		at     time.Time
		tokens int
	}
	var live []entry
	tokens := 0
	rng := rand.New(rand.NewPCG(5, 6))
	less := func(a, b entry) int {
		if a.imp != b.imp {
			if a.imp < b.imp {
				return -1
			}
			return 1
		}
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	for i := range 300 {
		e := entry{id: fmt.Sprintf("m%03d", i), imp: float64(rng.IntN(21)) / 20, at: t0.Add(time.Duration(rng.IntN(1000)) * time.Minute), tokens: 10 + rng.IntN(90)}
		if i%17 == 16 && len(live) > 0 {
			// Interleave a forget: the least important, or one by id.
			slices.SortFunc(live, less)
			victim := live[0]
			if i%2 == 0 {
				victim = live[rng.IntN(len(live))]
				r.forget("small", "item "+victim.id, "soft")
			} else {
				r.forget("small", "least important", "hard")
			}
			live = slices.DeleteFunc(live, func(x entry) bool { return x.id == victim.id })
			tokens -= victim.tokens
		}
		var want []string
		slices.SortFunc(live, less)
		for len(live) > 0 && (len(live)+1 > 8 || tokens+e.tokens > 400) {
			want = append(want, live[0].id)
			tokens -= live[0].tokens
			live = live[1:]
		}
		res := r.memorize("small", it(e.id, "item text "+e.id, "importance", e.imp, "timestamp", e.at.Format(time.RFC3339), "tokens_estimate", e.tokens))
		if !slices.Equal(res.Evicted, want) && !(len(want) == 0 && len(res.Evicted) == 0) {
			t.Fatalf("memorize %d: evicted %v, want %v", i, res.Evicted, want)
		}
		live = append(live, e)
		tokens += e.tokens
		if i%25 == 0 {
			r.checkCounters("small")
		}
	}
	c := r.checkCounters("small")
	if c.ItemCount != len(live) || c.TokenUsage != tokens {
		t.Errorf("capacity %+v; the model has %d items, %d tokens", c, len(live), tokens)
	}
}

// TestGetReturnsForgottenItemsToo: memory.get returns any item, forgotten ones included; unknown
// ids and stores are NotFoundErrors.
func TestGetReturnsForgottenItemsToo(t *testing.T) {
	r := newRig(t)
	r.memorize("episodic", it("g1", "something"))
	r.forget("episodic", "item g1", "soft")
	if g := r.get("episodic", "g1"); !g.Deleted || g.Text != "something" {
		t.Errorf("%+v", g)
	}
	r.Fail(agent, "memory.get", map[string]any{"store": "episodic", "id": "g2"}, errs.NotFound, "g2")
	r.Fail(agent, "memory.get", map[string]any{"store": "working", "id": "g1"}, errs.NotFound, "g1")
	r.Fail(agent, "memory.get", map[string]any{"store": "cellar", "id": "g1"}, errs.NotFound, "cellar")
	r.Fail(agent, "memory.get", map[string]any{"store": "episodic"}, errs.Validation, "id")
}

// TestEngineInfoCounts: engine.info counts the memory stores.
func TestEngineInfoCounts(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("", "one", "tokens_estimate", 5))
	r.memorize("episodic", it("x", "two", "tokens_estimate", 7))
	r.memorize("episodic", it("y", "three", "tokens_estimate", 9))
	r.forget("episodic", "item y", "soft")
	var info struct {
		Counts map[string]map[string]int `json:"counts"`
	}
	r.Do(agent, "engine.info", map[string]any{}, &info)
	if m := info.Counts["memory"]; m["stores"] != 2 || m["items"] != 2 || m["tokens"] != 12 || m["deleted"] != 1 {
		t.Errorf("counts %v", info.Counts)
	}
}

// TestMemorizeSameID: an id is taken until its item is erased; the
// ConflictError carries the current item.
func TestMemorizeSameID(t *testing.T) {
	r := newRig(t)
	r.memorize("episodic", it("id-1", "first version"))
	e := r.Fail(agent, "memory.memorize", map[string]any{"store": "episodic", "item": it("id-1", "second version")}, errs.Conflict, "id-1", "mode hard")
	if cur, ok := e.Details["current"]; !ok || !strings.Contains(fmt.Sprint(cur), "first version") {
		t.Errorf("details %v", e.Details)
	}
	r.forget("episodic", "item id-1", "soft")
	r.Fail(agent, "memory.memorize", map[string]any{"store": "episodic", "item": it("id-1", "second version")}, errs.Conflict, "forgotten", "erase it first")
	r.forget("episodic", "item id-1", "hard")
	if got := r.memorize("episodic", it("id-1", "second version")); got.Item.Text != "second version" {
		t.Errorf("%+v", got)
	}
	// The same id in another store is another item.
	r.memorize("working", it("id-1", "elsewhere"))
	r.checkCounters("episodic")
	r.checkCounters("working")
}

// TestCapacityCountsItemsAndTokens: capacity reports items, tokens, limits
// and room left.
// (Seed 004, scenario 2.5.)
func TestCapacityCountsItemsAndTokens(t *testing.T) {
	r := newRig(t)
	tokens := 0
	for i, n := range []int{10, 20, 30} {
		r.memorize("working", it("", "a thing to remember", "tokens_estimate", n, "timestamp", at(time.Duration(i))))
		tokens += n
	}
	c := r.capacity("working")
	if c.ItemCount != 3 || c.TokenUsage != tokens {
		t.Errorf("item_count %d, token_usage %d; want 3, %d", c.ItemCount, c.TokenUsage, tokens)
	}
	if c.MaxItems != 100 || c.MaxTokens != 4000 || c.Available.Items != 97 || c.Available.Tokens != 4000-tokens {
		t.Errorf("limits %+v", c)
	}
	if c.OnFull != "evict" || c.Type != "working" || c.Store != "working" {
		t.Errorf("policy %+v", c)
	}
	// The action's result has the seed's field names.
	var raw map[string]any
	r.Do(agent, "memory.capacity", map[string]any{"store": "working"}, &raw)
	for _, f := range []string{"item_count", "token_usage", "max_items", "max_tokens", "available"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("capacity lacks %q: %v", f, raw)
		}
	}
	// An unbounded store says so.
	e := r.capacity("episodic")
	if e.ItemCount != 0 || e.MaxItems != 0 || e.MaxTokens != 0 || e.Available.Items != -1 || e.Available.Tokens != -1 {
		t.Errorf("episodic %+v", e)
	}
	r.checkCounters("working")
}

// TestStoreTypesOrderDifferently: working memory recalls the most important
// first, episodic the most recent.
// (Seed 004, scenario 2.15.)
func TestStoreTypesOrderDifferently(t *testing.T) {
	r := newRig(t)
	// Importance order: p2 > p3 > p1 > p4; recency order: p4 > p3 > p2 > p1.
	items := []map[string]any{
		it("p1", "Coffee order for the team: oat milk flat white", "importance", 0.4, "timestamp", at(0)),
		it("p2", "Coffee allergy: Jonas cannot drink coffee with hazelnut", "importance", 0.95, "timestamp", at(time.Hour)),
		it("p3", "Coffee machine on floor 3 is broken again", "importance", 0.6, "timestamp", at(2*time.Hour)),
		it("p4", "Coffee beans delivery arrives on Tuesdays", "importance", 0.2, "timestamp", at(3*time.Hour)),
		it("x", "Printer toner is low", "importance", 1, "timestamp", at(4*time.Hour)),
	}
	for _, in := range items {
		r.memorize("working", in)
		r.memorize("episodic", in)
	}
	working := ids(r.remember("working", "coffee"))
	episodic := ids(r.remember("episodic", "coffee"))
	if want := []string{"p2", "p3", "p1", "p4"}; !slices.Equal(working, want) {
		t.Errorf("working memory: %v, want by importance %v", working, want)
	}
	if want := []string{"p4", "p3", "p2", "p1"}; !slices.Equal(episodic, want) {
		t.Errorf("episodic memory: %v, want by recency %v", episodic, want)
	}
	if slices.Equal(working, episodic) {
		t.Error("both types return the same order")
	}
	if !slices.Equal(sorted(working), sorted(episodic)) {
		t.Errorf("both should return the same relevant items: %v vs %v", working, episodic)
	}
	// rank overrides the type's order.
	if got := ids(r.remember("working", "coffee", "rank", "recency")); !slices.Equal(got, episodic) {
		t.Errorf("working with rank recency: %v, want %v", got, episodic)
	}
	if got := ids(r.remember("episodic", "coffee", "rank", "importance")); !slices.Equal(got, working) {
		t.Errorf("episodic with rank importance: %v, want %v", got, working)
	}
	// Without a prompt, each type lists everything in its own order.
	if got := ids(r.remember("working", "")); !slices.Equal(got, []string{"x", "p2", "p3", "p1", "p4"}) {
		t.Errorf("working, no prompt: %v", got)
	}
	if got := ids(r.remember("episodic", "")); !slices.Equal(got, []string{"x", "p4", "p3", "p2", "p1"}) {
		t.Errorf("episodic, no prompt: %v", got)
	}
}
