package memory_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// forgetFixture memorizes six items into the working store (raised limits):
//
//	id        at        importance  agent    tags            text
//	Note-A    -40 days  0.3         agent_a  travel          Lisbon trip: flight booked for March
//	Note-B    -20 days  0.9         Agent_B  travel, work    Lisbon trip: hotel near the river
//	Note-C    -36 hours 0.1         agent_a  work            quarterly budget review on Thursday
//	Note-D    -6 hours  0.5         Agent_B  home            the garden fence needs paint
//	Note-E    -1 hour   0.7         agent_a  work            trip report for the Berlin office
//	Note-F    now       0.2         agent_c  home            buy paint and brushes
//
// oldest → newest: A B C D E F; least → most important: C F A D E B.
func forgetFixture(t *testing.T) *rig {
	r := newRig(t)
	r.configure(map[string]any{"store": "working", "max_items": 1000, "token_budget": 100000})
	day := 24 * time.Hour
	for _, in := range []map[string]any{
		it("Note-A", "Lisbon trip: flight booked for March", "timestamp", at(-40*day), "importance", 0.3, "tags", []string{"travel"}),
		it("Note-B", "Lisbon trip: hotel near the river", "timestamp", at(-20*day), "importance", 0.9, "agent_id", "Agent_B", "tags", []string{"travel", "work"}),
		it("Note-C", "quarterly budget review on Thursday", "timestamp", at(-36*time.Hour), "importance", 0.1, "tags", []string{"work"}),
		it("Note-D", "the garden fence needs paint", "timestamp", at(-6*time.Hour), "importance", 0.5, "agent_id", "Agent_B", "tags", []string{"home"}),
		it("Note-E", "trip report for the Berlin office", "timestamp", at(-time.Hour), "importance", 0.7, "tags", []string{"work"}),
		it("Note-F", "buy paint and brushes", "timestamp", at(0), "importance", 0.2, "agent_id", "agent_c", "tags", []string{"home"}),
	} {
		r.memorize("working", in)
	}
	return r
}

// TestForgetForms: every instruction form, with what it names; a dry run
// names the same and changes nothing; the real run forgets exactly those.
func TestForgetForms(t *testing.T) {
	cases := []struct {
		instruction string
		form        string
		want        []string // in the order forgotten
	}{
		{"oldest", "oldest [N]", []string{"Note-A"}},
		{"oldest 3", "oldest [N]", []string{"Note-A", "Note-B", "Note-C"}},
		{"the oldest 2 items", "oldest [N]", []string{"Note-A", "Note-B"}},
		{"Forget the oldest memories.", "oldest [N]", []string{"Note-A"}},
		{"OLDEST", "oldest [N]", []string{"Note-A"}},
		{"oldest 100", "oldest [N]", []string{"Note-A", "Note-B", "Note-C", "Note-D", "Note-E", "Note-F"}},
		{"newest", "newest [N]", []string{"Note-F"}},
		{"most recent 2", "newest [N]", []string{"Note-F", "Note-E"}},
		{"latest", "newest [N]", []string{"Note-F"}},
		{"least important", "least important [N]", []string{"Note-C"}},
		{"least important 3", "least important [N]", []string{"Note-C", "Note-F", "Note-A"}},
		{"item Note-D", "item <id>", []string{"Note-D"}},
		{"forget item Note-D.", "item <id>", []string{"Note-D"}},
		{"items Note-E, Note-A", "item <id>", []string{"Note-E", "Note-A"}},
		{"items Note-E,Note-E", "item <id>", []string{"Note-E"}},
		{"items tagged work", "items tagged <tag>", []string{"Note-B", "Note-C", "Note-E"}},
		{"tagged Travel", "items tagged <tag>", []string{"Note-A", "Note-B"}},
		{"everything tagged home", "items tagged <tag>", []string{"Note-D", "Note-F"}},
		{"items tagged nothing-here", "items tagged <tag>", []string{}},
		{"older than 30 days", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A"}},
		{"older than 30 Days", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A"}},
		{"older than 12h", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A", "Note-B", "Note-C"}},
		{"memories older than 2 weeks", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A", "Note-B"}},
		{"older than 1 month", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A"}},
		{"older than 90m", "older than <duration> (e.g. 30 days, 12h)", []string{"Note-A", "Note-B", "Note-C", "Note-D"}},
		{"older than 5 years", "older than <duration> (e.g. 30 days, 12h)", []string{}},
		{"before 2025-11-03", "before <date> (RFC 3339 or 2025-11-05)", []string{"Note-A", "Note-B"}},
		{"before 2025-11-05", "before <date> (RFC 3339 or 2025-11-05)", []string{"Note-A", "Note-B", "Note-C"}},
		{"items before 2025-11-05T09:00:00Z", "before <date> (RFC 3339 or 2025-11-05)", []string{"Note-A", "Note-B", "Note-C", "Note-D"}},
		{"before 2025-11-05T09:00:00.000000001+01:00", "before <date> (RFC 3339 or 2025-11-05)", []string{"Note-A", "Note-B", "Note-C", "Note-D"}},
		{"from agent Agent_B", "from agent <id>", []string{"Note-B", "Note-D"}},
		{"from agent agent_b", "from agent <id>", []string{}},
		{"about the Lisbon trip", "about <topic>", []string{"Note-A", "Note-B"}},
		{"about paint", "about <topic>", []string{"Note-F", "Note-D"}}, // best match first
		{"about Berlin", "about <topic>", []string{"Note-E"}},
		{"about quantum physics", "about <topic>", []string{}},
		{"to fit 20 tokens", "to fit <n> tokens", nil}, // checked by token count below
	}
	for _, c := range cases {
		t.Run(c.instruction, func(t *testing.T) {
			r := forgetFixture(t)
			before := r.dump()
			dry := r.forget("working", c.instruction, "soft", "dry_run", true)
			sameDump(t, "a dry run", before, r.dump())
			if !dry.DryRun || dry.Matched != c.form {
				t.Errorf("dry run: dry_run %v, matched %q; want %q", dry.DryRun, dry.Matched, c.form)
			}
			res := r.forget("working", c.instruction, "soft")
			if !slices.Equal(forgottenIDs(res), forgottenIDs(dry)) {
				t.Errorf("the dry run named %v, the real run forgot %v", forgottenIDs(dry), forgottenIDs(res))
			}
			if c.want != nil && !slices.Equal(forgottenIDs(res), c.want) {
				t.Errorf("forgot %v, want %v", forgottenIDs(res), c.want)
			}
			if c.want == nil { // to fit 20 tokens
				if cp := r.capacity("working"); cp.TokenUsage > 20 {
					t.Errorf("still %d tokens", cp.TokenUsage)
				}
			}
			for _, f := range res.Forgotten {
				if !f.Deleted {
					t.Errorf("%s: forgotten but not marked deleted", f.ID)
				}
			}
			left := ids(r.remember("working", ""))
			for _, id := range forgottenIDs(res) {
				if slices.Contains(left, id) {
					t.Errorf("%s still remembered", id)
				}
			}
			if len(left)+len(res.Forgotten) != 6 {
				t.Errorf("left %v after forgetting %v", left, forgottenIDs(res))
			}
			r.checkCounters("working")
		})
	}
}

// TestForgetHard: every form erases in hard mode, the counters and indexes
// stay exact, a soft-forgotten item can be erased later.
func TestForgetHard(t *testing.T) {
	for _, instr := range []string{"oldest 2", "least important 2", "items tagged work", "from agent Agent_B", "about Lisbon trip", "older than 1 day", "to fit 10 tokens"} {
		t.Run(instr, func(t *testing.T) {
			r := forgetFixture(t)
			res := r.forget("working", instr, "hard")
			if len(res.Forgotten) == 0 {
				t.Fatal("forgot nothing")
			}
			for _, f := range res.Forgotten {
				r.Fail(agent, "memory.get", map[string]any{"store": "working", "id": f.ID}, errs.NotFound)
			}
			if c := r.checkCounters("working"); c.ItemCount != 6-len(res.Forgotten) || c.Deleted != 0 {
				t.Errorf("capacity %+v", c)
			}
		})
	}
	r := forgetFixture(t)
	r.forget("working", "items tagged travel", "soft")
	if c := r.checkCounters("working"); c.Deleted != 2 {
		t.Fatalf("capacity %+v", r.capacity("working"))
	}
	// Forms that walk live items do not see the soft-forgotten ones…
	if got := forgottenIDs(r.forget("working", "oldest", "hard", "dry_run", true)); !slices.Equal(got, []string{"Note-C"}) {
		t.Errorf("oldest live: %v", got)
	}
	// …but an item named by id can be erased after being forgotten softly.
	r.forget("working", "items Note-A, Note-B", "hard")
	if c := r.checkCounters("working"); c.Deleted != 0 || c.ItemCount != 4 {
		t.Errorf("capacity %+v", c)
	}
}

// TestForgetBadInput: clear errors, nothing changed.
func TestForgetBadInput(t *testing.T) {
	r := forgetFixture(t)
	before := r.dump()
	for _, c := range []struct {
		args      map[string]any
		kind      errs.Kind
		fragments []string
	}{
		{map[string]any{"store": "working", "instruction": "oldest", "mode": "gentle"}, errs.Validation, []string{"mode", "gentle", "soft", "hard"}},
		{map[string]any{"store": "working", "instruction": "oldest 0"}, errs.Validation, []string{"0"}},
		{map[string]any{"store": "working", "instruction": "oldest 99999999999999999999999"}, errs.Validation, []string{"count"}},
		{map[string]any{"store": "working", "instruction": "older than a while"}, errs.Validation, []string{"duration"}},
		{map[string]any{"store": "working", "instruction": "older than 3 fortnights"}, errs.Validation, []string{"duration"}},
		{map[string]any{"store": "working", "instruction": "older than 99999999999 years"}, errs.Validation, []string{"duration"}},
		{map[string]any{"store": "working", "instruction": "before yesterday"}, errs.Validation, []string{"date"}},
		{map[string]any{"store": "working", "instruction": "before 2025-13-45"}, errs.Validation, []string{"date"}},
		{map[string]any{"store": "working", "instruction": "item Note-Z"}, errs.NotFound, []string{"Note-Z"}},
		{map[string]any{"store": "working", "instruction": "items Note-A, Note-Z"}, errs.NotFound, []string{"Note-Z"}},
		{map[string]any{"store": "working", "instruction": "item note-a"}, errs.NotFound, []string{"note-a"}},
		{map[string]any{"store": "working", "instruction": "   "}, errs.Validation, []string{"instruction"}},
		{map[string]any{"store": "nowhere", "instruction": "oldest"}, errs.NotFound, []string{"nowhere", "memory.configure"}},
		{map[string]any{"instruction": "oldest"}, errs.Validation, []string{"store"}},
		{map[string]any{"store": "working"}, errs.Validation, []string{"instruction"}},
		{map[string]any{"store": "working", "instruction": "oldest", "dry": true}, errs.Validation, []string{"dry"}},
	} {
		for _, dry := range []bool{false, true} {
			args := map[string]any{}
			for k, v := range c.args {
				args[k] = v
			}
			if dry {
				args["dry_run"] = true
			}
			r.Fail(agent, "memory.forget", args, c.kind, c.fragments...)
		}
	}
	sameDump(t, "failed forgets", before, r.dump())
}

// TestForgetRecordsTrace: a forget publishes what it did to the turn trace;
// a dry run records nothing.
func TestForgetRecordsTrace(t *testing.T) {
	r := forgetFixture(t)
	if _, err := r.Try(inTurn("turn_1"), "memory.forget", map[string]any{"store": "working", "instruction": "oldest", "dry_run": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Try(inTurn("turn_1"), "memory.forget", map[string]any{"store": "working", "instruction": "oldest 2", "mode": "hard"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Entries []struct {
			Kind    string          `json:"kind"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"entries"`
	}
	r.Do(agent, "trace.list", map[string]any{"turn": "turn_1"}, &res)
	if len(res.Entries) != 1 || res.Entries[0].Kind != "memory.forgotten" || !jsonEq(res.Entries[0].Data, `{"store":"working","ids":["Note-A","Note-B"],"mode":"hard"}`) {
		t.Errorf("trace: %+v", res.Entries)
	}
}

// TestForgetOldest: "oldest" forgets the oldest item and remember no longer finds it.
// (Seed 004, scenario 2.3.)
func TestForgetOldest(t *testing.T) {
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

// TestForgetOldestThenLeastImportant: the instructions every store
// understands: oldest, least important.
// (Seed 004, scenario 2.6.)
func TestForgetOldestThenLeastImportant(t *testing.T) {
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

// TestForgetInstructionsPerStoreType: "to fit <n> tokens" is working
// memory's, "episode <id>" episodic memory's.
// (Seed 004, scenario 2.7.)
func TestForgetInstructionsPerStoreType(t *testing.T) {
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
		r.Fail(agent, "memory.forget", map[string]any{"store": "working", "instruction": "episode e"}, errs.UnsupportedInstruction, "to fit <n> tokens")
		e := r.Fail(agent, "memory.forget", map[string]any{"store": "episodic", "instruction": "to fit 10 tokens"}, errs.UnsupportedInstruction, "episode <id>")
		if forms, _ := e.Details["understood"].([]string); slices.Contains(forms, "to fit <n> tokens") || !slices.Contains(forms, "episode <id>") {
			t.Errorf("episodic memory's forms: %v", forms)
		}
	})
}

// TestForgetUnsupportedInstructionListsForms: an instruction the store does
// not understand fails, listing the forms it does, and changes nothing.
// (Seed 004, scenario 2.11.)
func TestForgetUnsupportedInstructionListsForms(t *testing.T) {
	r := newRig(t)
	for i := range 3 {
		r.memorize("working", it("", "a note", "timestamp", at(time.Duration(i))))
	}
	before := r.dump()
	for _, instr := range []string{"forget whatever feels right", "the purple ones", "oldest-ish", "", "items"} {
		args := map[string]any{"store": "working", "instruction": instr, "mode": "soft"}
		if instr == "" {
			r.Fail(agent, "memory.forget", args, errs.Validation, "instruction")
			continue
		}
		e := r.Fail(agent, "memory.forget", args, errs.UnsupportedInstruction, "does not understand", "oldest [N]", "least important", "items tagged <tag>", "to fit <n> tokens")
		forms, _ := e.Details["understood"].([]string)
		if len(forms) < 10 {
			t.Errorf("%q: details.understood = %v", instr, e.Details["understood"])
		}
	}
	sameDump(t, "unsupported instructions", before, r.dump())
}

// TestSoftForgetKeepsItemForAudit: soft forgetting marks the item deleted, kept for audit.
// (Seed 004, scenario 2.13.)
func TestSoftForgetKeepsItemForAudit(t *testing.T) {
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

// TestHardForgetErasesItem: hard forgetting erases the item and every key
// that refers to it, whether it was live or soft-forgotten first.
// (Seed 004, scenario 2.14.)
func TestHardForgetErasesItem(t *testing.T) {
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
			r.Fail(agent, "memory.get", map[string]any{"store": "episodic", "id": "h.Two"}, errs.NotFound, "h.Two")
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
