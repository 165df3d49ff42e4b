package memory_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
)

type turnContext struct {
	Context struct {
		TurnID    string                     `json:"turn_id"`
		Providers []string                   `json:"providers"`
		Sections  map[string]json.RawMessage `json:"sections"`
	} `json:"context"`
}

func (r *rig) startTurn(turn, input string) turnContext {
	r.T.Helper()
	raw, err := r.Try(inTurn(turn), "turn.start", map[string]any{"input": input})
	if err != nil {
		r.T.Fatalf("turn.start: %v", err)
	}
	var out turnContext
	if err := json.Unmarshal(raw, &out); err != nil {
		r.T.Fatal(err)
	}
	return out
}

func (r *rig) traceKinds(turn string) []string {
	r.T.Helper()
	var res struct {
		Entries []struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"entries"`
	}
	r.Do(agent, "trace.list", map[string]any{"turn": turn}, &res)
	var out []string
	for _, e := range res.Entries {
		out = append(out, e.Kind+": "+e.Message)
	}
	return out
}

// TestTurnContext: turn.start with an input includes, per store, the
// relevant items in the store's order, and notes it in the trace; an empty
// input gets no memory section.
func TestTurnContext(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("w1", "Maria prefers aisle seats on flights", "importance", 0.9))
	r.memorize("working", it("w2", "Flights must be booked through the travel desk", "importance", 0.4))
	r.memorize("episodic", it("e1", "Last flight to Lisbon was delayed by two hours"))
	r.memorize("episodic", it("e2", "Dinner with the Osaka team"))
	r.memorize("episodic", it("e3", "The flight seat was 14A", "timestamp", at(-1)))
	r.forget("episodic", "item e3", "soft")

	wc := r.startTurn("turn_1", "book a flight for Maria")
	var section map[string][]item
	if err := json.Unmarshal(wc.Context.Sections["memory"], &section); err != nil {
		t.Fatalf("memory section %s: %v", wc.Context.Sections["memory"], err)
	}
	if got := ids(section["working"]); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("working: %v, want by importance [w1 w2]", got)
	}
	if got := ids(section["episodic"]); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("episodic: %v, want [e1] (e3 is forgotten)", got)
	}
	if !slices.Contains(wc.Context.Providers, "memory") {
		t.Errorf("providers %v", wc.Context.Providers)
	}
	kinds := r.traceKinds("turn_1")
	if !slices.ContainsFunc(kinds, func(k string) bool {
		return strings.HasPrefix(k, "memory.remembered: ") && strings.Contains(k, "2 from working") && strings.Contains(k, "1 from episodic")
	}) {
		t.Errorf("trace %q", kinds)
	}

	// Nothing relevant: no section, no note.
	wc = r.startTurn("turn_2", "quantum chromodynamics")
	if _, ok := wc.Context.Sections["memory"]; ok {
		t.Errorf("a section for an irrelevant input: %s", wc.Context.Sections["memory"])
	}
	// No input: no section.
	wc = r.startTurn("turn_3", "")
	if _, ok := wc.Context.Sections["memory"]; ok {
		t.Errorf("a section for an empty input: %s", wc.Context.Sections["memory"])
	}
	for _, turn := range []string{"turn_2", "turn_3"} {
		for _, k := range r.traceKinds(turn) {
			if strings.HasPrefix(k, "memory.") {
				t.Errorf("%s: %s", turn, k)
			}
		}
	}
}

// TestTurnEndMemorizes: turn.end's updates {"memory": [{store, item}]}
// memorize with the turn, atomically, strictly decoded.
func TestTurnEndMemorizes(t *testing.T) {
	r := newRig(t)
	end := func(turn string, updates any) (json.RawMessage, error) {
		return r.Try(inTurn(turn), "turn.end", map[string]any{"updates": map[string]any{"memory": updates}})
	}
	r.startTurn("t1", "hello")
	before := r.dump()
	for _, c := range []struct {
		updates   any
		kind      errs.Kind
		fragments []string
	}{
		{[]any{map[string]any{"store": "episodic", "itme": it("a", "misspelt")}}, errs.Validation, []string{"updates.memory[0]", "itme"}},
		{[]any{map[string]any{"store": "episodic", "item": map[string]any{"type": "fact", "txt": "x", "agent_id": "a"}}}, errs.Validation, []string{"updates.memory[0]", "txt"}},
		{[]any{map[string]any{"store": "episodic", "item": it("ok", "fine")}, map[string]any{"store": "episodic", "item": it("bad", "")}}, errs.Validation, []string{"updates.memory[1]", "item.text"}},
		{[]any{map[string]any{"store": "episodic", "item": it("ok", "fine")}, map[string]any{"store": "attic", "item": it("x", "y")}}, errs.NotFound, []string{"updates.memory[1]", "attic"}},
		{[]any{map[string]any{"store": "episodic", "item": it("dup", "one")}, map[string]any{"store": "episodic", "item": it("dup", "two")}}, errs.Conflict, []string{"updates.memory[1]", "dup"}},
		{[]any{map[string]any{"store": "episodic", "item": it("x", "y", "importance", 2)}}, errs.Validation, []string{"item.importance"}},
		{map[string]any{"store": "episodic", "item": it("x", "y")}, errs.Validation, []string{"updates.memory", "list"}},
		{[]any{}, errs.Validation, []string{"updates.memory"}},
		{"remember this", errs.Validation, []string{"updates.memory"}},
	} {
		res, err := end("t1", c.updates)
		enginetest.CheckErr(t, "turn.end", c.updates, res, err, c.kind, c.fragments...)
	}
	sameDump(t, "failed turn.end", before, r.dump())

	// A budget refusal fails the whole turn too.
	r.configure(map[string]any{"store": "tiny", "type": "working", "max_items": 1, "on_full": "reject"})
	r.memorize("tiny", it("full", "already full"))
	before = r.dump()
	res, err := end("t1", []any{map[string]any{"store": "episodic", "item": it("ok", "fine")}, map[string]any{"store": "tiny", "item": it("more", "no room")}})
	enginetest.CheckErr(t, "turn.end", "tiny", res, err, errs.Budget, "updates.memory[1]")
	sameDump(t, "a turn.end over budget", before, r.dump())

	// Now a good one: both items land, in their stores, with the turn.
	res, err = end("t1", []any{
		map[string]any{"store": "episodic", "item": it("learnt-1", "The user's daughter is called Lea", "tags", []string{"family"})},
		map[string]any{"store": "working", "item": it("learnt-2", "Current task: plan the Lisbon trip", "importance", 0.9)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Committed struct {
			Memory struct {
				Memorized []string `json:"memorized"`
			} `json:"memory"`
		} `json:"committed"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"episodic/learnt-1", "working/learnt-2"}; !slices.Equal(out.Committed.Memory.Memorized, want) {
		t.Errorf("committed %s, want %v", res, want)
	}
	if got := ids(r.remember("episodic", "daughter")); !slices.Equal(got, []string{"learnt-1"}) {
		t.Errorf("episodic: %v", got)
	}
	if got := r.get("working", "learnt-2"); got.Importance != 0.9 || !got.Timestamp.Equal(t0) {
		t.Errorf("working: %+v", got)
	}
	r.checkCounters("episodic")
	r.checkCounters("working")
	// A turn without memory updates commits nothing of memory.
	r.startTurn("t2", "")
	res, err = r.Try(inTurn("t2"), "turn.end", map[string]any{})
	if err != nil || strings.Contains(string(res), `"memory"`) {
		t.Errorf("turn.end without updates: %s, %v", res, err)
	}
}
