package memory_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// The seed's tests (seed 004, 2.1–2.15), one Go test each, driven through
// the memory.* actions (engine.Do) as the batch runner and the TUI do.

func TestMemory_2_1_MemorizeStoresItem(t *testing.T) {
	for _, store := range []string{"working", "episodic"} {
		t.Run(store, func(t *testing.T) {
			r := newRig(t)
			in := map[string]any{
				"id": "pref_1", "type": "preference", "text": "Maria prefers window seats on flights to Lisbon",
				"tokens_estimate": 12, "timestamp": "2025-11-04T09:30:00Z", "agent_id": "agent_a",
				"tags": []string{"travel", "Seating"}, "metadata": map[string]any{"source": "chat", "turn": 7},
				"importance": 0.8,
			}
			res := r.memorize(store, in)
			if !res.Success {
				t.Fatalf("success = false: %+v", res)
			}
			if res.Ref != store+"/pref_1" {
				t.Errorf("ref = %q, want %q", res.Ref, store+"/pref_1")
			}
			got := r.remember(store, "window seats")
			if len(got) != 1 || got[0].ID != "pref_1" {
				t.Fatalf("remember returned %v, want [pref_1]", ids(got))
			}
			g := got[0]
			want := item{ID: "pref_1", Type: "preference", Text: in["text"].(string), TokensEstimate: 12,
				Timestamp: time.Date(2025, 11, 4, 9, 30, 0, 0, time.UTC), AgentID: "agent_a", Importance: 0.8}
			if g.Type != want.Type || g.Text != want.Text || g.TokensEstimate != want.TokensEstimate || !g.Timestamp.Equal(want.Timestamp) ||
				g.AgentID != want.AgentID || g.Importance != want.Importance || g.Deleted {
				t.Errorf("remembered %+v, want %+v", g, want)
			}
			if !slices.Equal(g.Tags, []string{"travel", "seating"}) {
				t.Errorf("tags = %q, want [travel seating] (lower case)", g.Tags)
			}
			if !jsonEq(g.Metadata, `{"source":"chat","turn":7}`) {
				t.Errorf("metadata = %s", g.Metadata)
			}
			// memory.get returns the same item.
			if got := r.get(store, "pref_1"); got.Text != want.Text {
				t.Errorf("memory.get = %+v", got)
			}
		})
	}
}

// TestMemory_2_1_Defaults: what an item may leave out is filled in.
func TestMemory_2_1_Defaults(t *testing.T) {
	r := newRig(t)
	text := "The quarterly budget review moved to Thursday afternoon"
	res := r.memorize("episodic", map[string]any{"type": "event", "text": text, "agent_id": "agent_b"})
	g := res.Item
	if g.ID == "" || res.Ref != "episodic/"+g.ID {
		t.Errorf("id %q, ref %q: want a generated id in the ref", g.ID, res.Ref)
	}
	if g.TokensEstimate != llm.CountTokens(text) {
		t.Errorf("tokens_estimate = %d, want the count %d", g.TokensEstimate, llm.CountTokens(text))
	}
	if !g.Timestamp.Equal(t0) {
		t.Errorf("timestamp = %v, want the engine clock %v", g.Timestamp, t0)
	}
	if g.Importance != 0.5 || g.Deleted || g.Tags == nil || len(g.Tags) != 0 || string(g.Metadata) != "{}" {
		t.Errorf("defaults: importance %v, deleted %v, tags %#v, metadata %s", g.Importance, g.Deleted, g.Tags, g.Metadata)
	}
	// An importance of 0 is kept, not replaced by the default.
	z := r.memorize("episodic", it("zero", "nothing much", "importance", 0))
	if z.Item.Importance != 0 {
		t.Errorf("importance 0 became %v", z.Item.Importance)
	}
}

func TestMemory_2_2_RememberRetrievesRelevant(t *testing.T) {
	r := newRig(t)
	items := []map[string]any{
		it("i1", "The budget review for the Lisbon office is on Thursday", "tags", []string{"finance"}, "metadata", map[string]any{"owner": "maria"}),
		it("i2", "Maria approved the budget increase of $40,000", "tags", []string{"finance", "decision"}, "metadata", map[string]any{"owner": "maria"}),
		it("i3", "The cat likes to sleep on the warm windowsill", "type", "observation", "tags", []string{"home"}),
		it("i4", "Tom is allergic to peanuts", "type", "preference", "tags", []string{"health"}),
		it("i5", "Flights to Osaka are cheaper in March", "tags", []string{"travel"}),
	}
	for _, in := range items {
		r.memorize("working", in)
	}
	byID := map[string]map[string]any{}
	for _, in := range items {
		byID[in["id"].(string)] = in
	}
	for _, rank := range []string{"", "relevance"} {
		got := r.remember("working", "budget review", "rank", rank)
		if len(got) == 0 || got[0].ID != "i1" {
			t.Fatalf("rank %q: remember = %v, want i1 (budget review) first", rank, ids(got))
		}
		if !slices.Equal(sorted(ids(got)), []string{"i1", "i2"}) {
			t.Errorf("rank %q: remember = %v, want the budget items i1, i2", rank, ids(got))
		}
		for i, g := range got {
			if g.Score == nil || g.Confidence == nil || *g.Score <= 0 || *g.Confidence <= 0 || *g.Confidence > 1 {
				t.Errorf("%s: score %v, confidence %v", g.ID, g.Score, g.Confidence)
				continue
			}
			if i > 0 && *g.Score > *got[i-1].Score {
				t.Errorf("rank %q: not ranked by relevance: %s (%v) after %s (%v)", rank, g.ID, *g.Score, got[i-1].ID, *got[i-1].Score)
			}
			in := byID[g.ID]
			if g.Text != in["text"] || g.Type != in["type"] || !slices.Equal(g.Tags, in["tags"].([]string)) {
				t.Errorf("%s: original fields lost: %+v", g.ID, g)
			}
			want, _ := json.Marshal(in["metadata"])
			if in["metadata"] == nil {
				want = []byte("{}")
			}
			if !jsonEq(g.Metadata, string(want)) {
				t.Errorf("%s: metadata %s, want %s", g.ID, g.Metadata, want)
			}
		}
		if *got[0].Confidence != 1 {
			t.Errorf("the best match's confidence = %v, want 1", *got[0].Confidence)
		}
	}
}

func TestMemory_2_3_ForgetOldest(t *testing.T) {
	r := newRig(t)
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		r.memorize("working", it(id, "note about the garden plan "+id, "timestamp", at(time.Duration(i)*time.Hour)))
	}
	res := r.forget("working", "oldest", "soft")
	if !slices.Equal(forgottenIDs(res), []string{"a"}) {
		t.Fatalf("forgot %v, want [a]", forgottenIDs(res))
	}
	if got := ids(r.remember("working", "garden plan")); !slices.Equal(sorted(got), []string{"b", "c", "d", "e"}) {
		t.Errorf("remember after forgetting the oldest = %v, want b..e", got)
	}
	if got := ids(r.remember("working", "")); !slices.Equal(sorted(got), []string{"b", "c", "d", "e"}) {
		t.Errorf("remember everything = %v, want b..e", got)
	}
	r.checkCounters("working")
}

func TestMemory_2_4_SummarizeWithinLimit(t *testing.T) {
	r := newRig(t)
	texts := []string{
		"Maria Lopez booked the flight to Lisbon for December 3rd at $420.",
		"The team decided to ship version 2.4 on Friday after the security review.",
		"Tom asked for the Q3 budget report by Monday; it must include the Berlin office.",
		"Aisha prefers meetings after 10am and never on Wednesdays.",
		"The Redis cluster ran out of memory twice last week; Jonas will add two nodes.",
		"Dentist appointment moved to November 14 at 3pm.",
		"The customer Acme Corp signed a $40,000 contract for the pilot.",
		"Grace recommended the Osaka hotel near the station; breakfast is included.",
		"Weekly standup now starts at 9:15 in room 4B.",
		"Pedro will present the launch plan to the board on the 20th.",
	}
	var want []string
	for i, s := range texts {
		res := r.memorize("episodic", it("", s, "timestamp", at(time.Duration(i)*time.Minute)))
		want = append(want, res.Item.ID)
	}
	sum := r.summarize("episodic", "all", 100)
	if strings.TrimSpace(sum.Text) == "" {
		t.Fatal("the summary is empty")
	}
	if sum.TokenCount > 100 || sum.TokenCount != llm.CountTokens(sum.Text) {
		t.Errorf("token_count %d (counted %d), want <= 100", sum.TokenCount, llm.CountTokens(sum.Text))
	}
	if !slices.Equal(sum.SourceItems, want) {
		t.Errorf("source_items = %v, want every item, oldest first: %v", sum.SourceItems, want)
	}
	if sum.Writer != "extractive" {
		t.Errorf("writer = %q without a model", sum.Writer)
	}
	// Names and amounts survive compression where they fit.
	for _, keep := range []string{"Maria", "Lisbon"} {
		if !strings.Contains(sum.Text, keep) {
			t.Logf("summary lacks %q: %s", keep, sum.Text)
		}
	}
}

func TestMemory_2_5_CapacityInfo(t *testing.T) {
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
	r.do("memory.capacity", map[string]any{"store": "working"}, &raw)
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

func TestMemory_2_6_ForgetCommonInstructions(t *testing.T) {
	r := newRig(t)
	// oldest: o; least important (of the rest): l.
	for _, in := range []map[string]any{
		it("o", "note one about the project", "timestamp", at(0), "importance", 0.9),
		it("m1", "note two about the project", "timestamp", at(time.Hour), "importance", 0.6),
		it("l", "note three about the project", "timestamp", at(2*time.Hour), "importance", 0.1),
		it("m2", "note four about the project", "timestamp", at(3*time.Hour), "importance", 0.7),
		it("m3", "note five about the project", "timestamp", at(4*time.Hour), "importance", 0.5),
	} {
		r.memorize("working", in)
	}
	if got := forgottenIDs(r.forget("working", "oldest", "soft")); !slices.Equal(got, []string{"o"}) {
		t.Fatalf("oldest forgot %v, want [o]", got)
	}
	if got := sorted(ids(r.remember("working", "project note"))); !slices.Equal(got, []string{"l", "m1", "m2", "m3"}) {
		t.Errorf("after oldest: %v", got)
	}
	if got := forgottenIDs(r.forget("working", "least important", "soft")); !slices.Equal(got, []string{"l"}) {
		t.Fatalf("least important forgot %v, want [l]", got)
	}
	if got := sorted(ids(r.remember("working", "project note"))); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Errorf("after least important: %v", got)
	}
	r.checkCounters("working")
}

func TestMemory_2_7_TypeSpecificInstructions(t *testing.T) {
	t.Run("working/to fit", func(t *testing.T) {
		r := newRig(t)
		for _, in := range []map[string]any{
			it("w1", "alpha", "tokens_estimate", 100, "importance", 0.2, "timestamp", at(0)),
			it("w2", "beta", "tokens_estimate", 100, "importance", 0.9, "timestamp", at(1)),
			it("w3", "gamma", "tokens_estimate", 100, "importance", 0.4, "timestamp", at(2)),
			it("w4", "delta", "tokens_estimate", 100, "importance", 0.4, "timestamp", at(3)),
		} {
			r.memorize("working", in)
		}
		// 400 tokens down to 200: the two least important go (w1, then w3,
		// the older of the two at 0.4).
		res := r.forget("working", "to fit 200 tokens", "soft")
		if got := forgottenIDs(res); !slices.Equal(got, []string{"w1", "w3"}) || res.Matched != "to fit <n> tokens" {
			t.Fatalf("forgot %v (%s), want [w1 w3]", got, res.Matched)
		}
		if c := r.checkCounters("working"); c.TokenUsage != 200 {
			t.Errorf("token_usage %d, want 200", c.TokenUsage)
		}
		if got := sorted(ids(r.remember("working", ""))); !slices.Equal(got, []string{"w2", "w4"}) {
			t.Errorf("left %v", got)
		}
		// Already fitting: nothing to do.
		if got := forgottenIDs(r.forget("working", "to fit 1000 tokens", "soft")); len(got) != 0 {
			t.Errorf("forgot %v though it fits", got)
		}
	})
	t.Run("episodic/episode", func(t *testing.T) {
		r := newRig(t)
		for i, in := range []map[string]any{
			it("e1", "checked in at the hotel", "metadata", map[string]any{"episode": "trip-7"}),
			it("e2", "dinner by the river", "metadata", map[string]any{"episode": "trip-7"}),
			it("e3", "sprint planning", "metadata", map[string]any{"episode": 12}),
			it("e4", "no episode at all"),
		} {
			in["timestamp"] = at(time.Duration(i) * time.Minute)
			r.memorize("episodic", in)
		}
		res := r.forget("episodic", "episode trip-7", "soft")
		if got := sorted(forgottenIDs(res)); !slices.Equal(got, []string{"e1", "e2"}) || res.Matched != "episode <id>" {
			t.Fatalf("forgot %v (%s), want e1, e2", got, res.Matched)
		}
		if got := forgottenIDs(r.forget("episodic", "the episode 12", "soft")); !slices.Equal(got, []string{"e3"}) {
			t.Errorf("numeric episode: forgot %v", got)
		}
		if got := ids(r.remember("episodic", "")); !slices.Equal(got, []string{"e4"}) {
			t.Errorf("left %v", got)
		}
	})
	t.Run("each type refuses the other's", func(t *testing.T) {
		r := newRig(t)
		r.memorize("working", it("x", "something"))
		r.memorize("episodic", it("x", "something", "metadata", map[string]any{"episode": "e"}))
		r.fail("memory.forget", map[string]any{"store": "working", "instruction": "episode e"}, errs.UnsupportedInstruction, "to fit <n> tokens")
		e := r.fail("memory.forget", map[string]any{"store": "episodic", "instruction": "to fit 10 tokens"}, errs.UnsupportedInstruction, "episode <id>")
		if forms, _ := e.Details["understood"].([]string); slices.Contains(forms, "to fit <n> tokens") || !slices.Contains(forms, "episode <id>") {
			t.Errorf("episodic memory's forms: %v", forms)
		}
	})
}

func TestMemory_2_8_RememberFiltersByAgent(t *testing.T) {
	r := newRig(t)
	for _, in := range []map[string]any{
		it("a1", "the launch checklist is ready", "agent_id", "agent_a", "tags", []string{"launch"}),
		it("a2", "launch date is the 20th", "agent_id", "agent_a", "tags", []string{"launch", "dates"}),
		it("b1", "launch budget approved", "agent_id", "agent_b", "tags", []string{"launch"}),
		it("b2", "launch party at the office", "agent_id", "agent_b", "tags", []string{"social"}),
		it("c1", "launch postponed rumours", "agent_id", "agent_c", "tags", []string{"dates"}),
	} {
		r.memorize("episodic", in)
	}
	for agent, want := range map[string][]string{"agent_a": {"a1", "a2"}, "agent_b": {"b1", "b2"}, "agent_c": {"c1"}, "agent_z": {}} {
		got := r.remember("episodic", "launch", "filters", map[string]any{"agent_id": agent})
		if !slices.Equal(sorted(ids(got)), want) {
			t.Errorf("agent %s: %v, want %v", agent, ids(got), want)
		}
		for _, g := range got {
			if g.AgentID != agent {
				t.Errorf("agent %s: got %s of %s", agent, g.ID, g.AgentID)
			}
		}
	}
	// Tags (any of), combined with the agent (all filters).
	if got := sorted(ids(r.remember("episodic", "launch", "filters", map[string]any{"tags": []string{"DATES"}}))); !slices.Equal(got, []string{"a2", "c1"}) {
		t.Errorf("tag dates: %v", got)
	}
	if got := sorted(ids(r.remember("episodic", "launch", "filters", map[string]any{"tags": []string{"dates", "social"}, "agent_id": "agent_b"}))); !slices.Equal(got, []string{"b2"}) {
		t.Errorf("tags dates|social of agent_b: %v", got)
	}
}

func TestMemory_2_9_InvalidItem(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("keep", "an item already there"))
	before := r.dump()
	for _, c := range []struct {
		item  map[string]any
		field string
	}{
		{map[string]any{"type": "fact", "agent_id": "a"}, "text"},
		{map[string]any{"text": "no type", "agent_id": "a"}, "type"},
		{map[string]any{"type": "fact", "text": "no agent"}, "agent_id"},
		{map[string]any{"type": "fact", "text": "   ", "agent_id": "a"}, "item.text"},
		{map[string]any{"type": "", "text": "empty type", "agent_id": "a"}, "item.type"},
		{map[string]any{"type": "fact", "text": "empty agent", "agent_id": ""}, "item.agent_id"},
	} {
		e := r.fail("memory.memorize", map[string]any{"store": "working", "item": c.item}, errs.Validation, c.field)
		if f, _ := e.Details["field"].(string); !strings.HasSuffix(f, c.field) {
			t.Errorf("%v: details.field = %v, want %s", c.item, e.Details["field"], c.field)
		}
	}
	sameDump(t, "invalid items", before, r.dump())
	r.checkCounters("working")
}

func TestMemory_2_10_RememberNoMatch(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("x", "Maria booked the flight to Lisbon"))
	r.memorize("episodic", it("y", "the team shipped version 2.4"))
	for _, store := range []string{"working", "episodic"} {
		raw := r.do("memory.remember", map[string]any{"store": store, "prompt": "quantum chromodynamics lecture"}, nil)
		if string(raw) != `{"items":[]}` {
			t.Errorf("%s: %s, want {\"items\":[]}", store, raw)
		}
	}
	// An empty store too, and a filter that excludes everything.
	r.configure(map[string]any{"store": "empty", "type": "episodic"})
	if raw := r.do("memory.remember", map[string]any{"store": "empty", "prompt": "anything"}, nil); string(raw) != `{"items":[]}` {
		t.Errorf("empty store: %s", raw)
	}
	if raw := r.do("memory.remember", map[string]any{"store": "working", "prompt": "Lisbon", "filters": map[string]any{"agent_id": "nobody"}}, nil); string(raw) != `{"items":[]}` {
		t.Errorf("filtered out: %s", raw)
	}
}

func TestMemory_2_11_UnsupportedInstruction(t *testing.T) {
	r := newRig(t)
	for i := range 3 {
		r.memorize("working", it("", "a note", "timestamp", at(time.Duration(i))))
	}
	before := r.dump()
	for _, instr := range []string{"forget whatever feels right", "the purple ones", "oldest-ish", "", "items"} {
		args := map[string]any{"store": "working", "instruction": instr, "mode": "soft"}
		if instr == "" {
			r.fail("memory.forget", args, errs.Validation, "instruction")
			continue
		}
		e := r.fail("memory.forget", args, errs.UnsupportedInstruction, "does not understand", "oldest [N]", "least important", "items tagged <tag>", "to fit <n> tokens")
		forms, _ := e.Details["understood"].([]string)
		if len(forms) < 10 {
			t.Errorf("%q: details.understood = %v", instr, e.Details["understood"])
		}
	}
	sameDump(t, "unsupported instructions", before, r.dump())
}

func TestMemory_2_12_TokenBudget(t *testing.T) {
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
		r.fail("memory.memorize", map[string]any{"store": "budget", "item": it("huge", "x", "tokens_estimate", 1001)}, errs.Budget, "token_budget")
		sameDump(t, "an item over the whole budget", before, r.dump())
	})
	t.Run("reject", func(t *testing.T) {
		r := newRig(t)
		r.configure(map[string]any{"store": "budget", "type": "working", "token_budget": 1000, "on_full": "reject"})
		fill(r, "budget")
		before := r.dump()
		e := r.fail("memory.memorize", map[string]any{"store": "budget", "item": it("big", "a large item", "tokens_estimate", 300)}, errs.Budget, "full", "reject")
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

func TestMemory_2_13_SoftForgetPreserves(t *testing.T) {
	r := newRig(t)
	for i, id := range []string{"s1", "s2", "s3"} {
		r.memorize("episodic", it(id, "holiday photos from Crete "+id, "timestamp", at(time.Duration(i)*time.Minute)))
	}
	res := r.forget("episodic", "item s2", "soft")
	if len(res.Forgotten) != 1 || res.Forgotten[0].ID != "s2" || !res.Forgotten[0].Deleted || res.Mode != "soft" {
		t.Fatalf("forget: %+v", res)
	}
	if got := ids(r.remember("episodic", "holiday photos")); slices.Contains(got, "s2") || len(got) != 2 {
		t.Errorf("remember returns %v; the soft-forgotten s2 should be hidden", got)
	}
	got := r.remember("episodic", "holiday photos", "include_deleted", true)
	i := slices.IndexFunc(got, func(g item) bool { return g.ID == "s2" })
	if i < 0 || !got[i].Deleted || got[i].DeletedAt == nil || !got[i].DeletedAt.Equal(t0) {
		t.Fatalf("include_deleted: %+v", got)
	}
	if got := ids(r.remember("episodic", "", "include_deleted", true)); len(got) != 3 {
		t.Errorf("everything, deleted included: %v", got)
	}
	if g := r.get("episodic", "s2"); !g.Deleted || g.Text != "holiday photos from Crete s2" {
		t.Errorf("memory.get: %+v", g)
	}
	c := r.checkCounters("episodic")
	if c.ItemCount != 2 || c.Deleted != 1 {
		t.Errorf("capacity %+v", c)
	}
	// Soft-forgetting it again changes nothing.
	before := r.dump()
	r.forget("episodic", "item s2", "soft")
	sameDump(t, "a second soft forget", before, r.dump())
}

func TestMemory_2_14_HardForgetErases(t *testing.T) {
	for _, softFirst := range []bool{false, true} {
		name := map[bool]string{false: "live", true: "soft-forgotten first"}[softFirst]
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			// An id with dots and upper case, tags, an episode: every index.
			for i, id := range []string{"h.One", "h.Two", "h.Three"} {
				r.memorize("episodic", it(id, "holiday photos from Crete and Rhodes "+id, "timestamp", at(time.Duration(i)*time.Minute),
					"tags", []string{"travel", "photos"}, "metadata", map[string]any{"episode": "crete"}, "agent_id", "agent_"+id))
			}
			if softFirst {
				r.forget("episodic", "item h.Two", "soft")
			}
			res := r.forget("episodic", "item h.Two", "hard")
			if len(res.Forgotten) != 1 || res.Forgotten[0].ID != "h.Two" || res.Mode != "hard" {
				t.Fatalf("forget: %+v", res)
			}
			for _, deleted := range []bool{false, true} {
				if got := ids(r.remember("episodic", "holiday photos Crete", "include_deleted", deleted)); slices.Contains(got, "h.Two") || len(got) != 2 {
					t.Errorf("include_deleted %v: remember returns %v", deleted, got)
				}
			}
			r.fail("memory.get", map[string]any{"store": "episodic", "id": "h.Two"}, errs.NotFound, "h.Two")
			for _, prefix := range []string{
				string(storage.PrefixKey(storage.PrefixIndex, "memory", "episodic")),
				string(storage.PrefixKey(storage.PrefixIndex, "memory/episodic")),
				string(storage.PrefixKey(storage.PrefixMemory, "item", "episodic")),
				string(storage.PrefixKey(storage.PrefixMemory, "vec", "episodic")),
			} {
				keys := r.keysUnder(prefix)
				if prefix != string(storage.PrefixKey(storage.PrefixMemory, "vec", "episodic")) && len(keys) == 0 {
					t.Errorf("no keys under %s at all: the check looks in the wrong place", prefix)
				}
				for _, k := range keys {
					if strings.Contains(k, "h.Two") || strings.Contains(k, "agent_h.Two") {
						t.Errorf("key %q still refers to the erased item", k)
					}
				}
			}
			c := r.checkCounters("episodic")
			if c.ItemCount != 2 || c.Deleted != 0 {
				t.Errorf("capacity %+v", c)
			}
			if got := sorted(ids(r.remember("episodic", "Rhodes"))); !slices.Equal(got, []string{"h.One", "h.Three"}) {
				t.Errorf("the others: %v", got)
			}
		})
	}
}

func TestMemory_2_15_TypesDiffer(t *testing.T) {
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

func jsonEq(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
