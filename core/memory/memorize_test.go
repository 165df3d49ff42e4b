package memory_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
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

// TestMemorizeRejectsItemWithoutRequiredField: an item without text or
// type is refused, naming the field. (Seed 004, scenario 2.9; an item
// without agent_id is the acting agent's since issue 14: see
// TestMemorizeWithoutAgentIsAboutTheAgentActing.)
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
		{map[string]any{"type": "fact", "text": "   ", "agent_id": "a"}, "item.text"},
		{map[string]any{"type": "", "text": "empty type", "agent_id": "a"}, "item.type"},
	} {
		e := r.Fail(agent, "memory.memorize", map[string]any{"store": "working", "item": c.item}, errs.Validation, c.field)
		if f, _ := e.Details["field"].(string); !strings.HasSuffix(f, c.field) {
			t.Errorf("%v: details.field = %v, want %s", c.item, e.Details["field"], c.field)
		}
	}
	sameDump(t, "invalid items", before, r.dump())
	r.checkCounters("working")
}

// TestMemorizeWithoutAgentIsAboutTheAgentActing: an item without agent_id
// (or with an empty one) is about the principal acting, the engine's agent
// for the console and --agent, a step's `as` otherwise (issue 14: it failed
// with a ValidationError, though the engine knows who acts).
func TestMemorizeWithoutAgentIsAboutTheAgentActing(t *testing.T) {
	r := newRig(t)
	var res memorized
	r.Do(agent, "memory.memorize", map[string]any{"store": "working", "item": map[string]any{"id": "mine", "type": "fact", "text": "no agent given"}}, &res)
	if res.Item.AgentID != core.DefaultAgent {
		t.Errorf("as the engine's agent: agent_id %q, want %q", res.Item.AgentID, core.DefaultAgent)
	}
	r.Do(alice, "memory.configure", map[string]any{"store": "alice_notes", "type": "working"}, nil)
	r.Do(alice, "memory.memorize", map[string]any{"store": "alice_notes", "item": map[string]any{"id": "hers", "type": "fact", "text": "an empty agent", "agent_id": ""}}, &res)
	if res.Item.AgentID != "alice" {
		t.Errorf("as alice: agent_id %q, want alice", res.Item.AgentID)
	}
	// Stored so: a filter on the agent finds it.
	var got struct{ Items []item }
	r.Do(alice, "memory.remember", map[string]any{"store": "alice_notes", "filters": map[string]any{"agent_id": "alice"}}, &got)
	if len(got.Items) != 1 || got.Items[0].ID != "hers" {
		t.Errorf("remember by agent_id alice: %+v", got.Items)
	}
	// An agent_id given is kept, whoever acts.
	r.Do(agent, "memory.memorize", map[string]any{"store": "working", "item": it("theirs", "about another agent")}, &res)
	if res.Item.AgentID != "agent_a" {
		t.Errorf("given agent_a: agent_id %q", res.Item.AgentID)
	}
}
