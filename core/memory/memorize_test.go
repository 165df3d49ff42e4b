package memory_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
)

// Memorizing: what an item keeps, what it may leave out, what it must have.
// Seed 004 scenarios 2.1 and 2.9.

// TestMemorizeKeepsEveryField: memorize keeps every field of an item, in
// both store types, and memory.get returns it.
// (Seed 004, scenario 2.1.)
func TestMemorizeKeepsEveryField(t *testing.T) {
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

// TestMemorizeFillsDefaults: what an item may leave out is filled in.
// (Seed 004, scenario 2.1.)
func TestMemorizeFillsDefaults(t *testing.T) {
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

// TestMemorizeRejectsItemWithoutRequiredField: an item without text, type
// or agent is refused, naming the field.
// (Seed 004, scenario 2.9.)
func TestMemorizeRejectsItemWithoutRequiredField(t *testing.T) {
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
		e := r.Fail(agent, "memory.memorize", map[string]any{"store": "working", "item": c.item}, errs.Validation, c.field)
		if f, _ := e.Details["field"].(string); !strings.HasSuffix(f, c.field) {
			t.Errorf("%v: details.field = %v, want %s", c.item, e.Details["field"], c.field)
		}
	}
	sameDump(t, "invalid items", before, r.dump())
	r.checkCounters("working")
}
