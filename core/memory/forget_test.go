package memory_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
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
				r.fail("memory.get", map[string]any{"store": "working", "id": f.ID}, errs.NotFound)
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
			r.fail("memory.forget", args, c.kind, c.fragments...)
		}
	}
	sameDump(t, "failed forgets", before, r.dump())
}

// TestForgetRecordsTrace: a forget publishes what it did to the turn trace;
// a dry run records nothing.
func TestForgetRecordsTrace(t *testing.T) {
	r := forgetFixture(t)
	if _, err := r.tryAs("", "turn_1", "memory.forget", map[string]any{"store": "working", "instruction": "oldest", "dry_run": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tryAs("", "turn_1", "memory.forget", map[string]any{"store": "working", "instruction": "oldest 2", "mode": "hard"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Entries []struct {
			Kind    string          `json:"kind"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"entries"`
	}
	r.do("trace.list", map[string]any{"turn": "turn_1"}, &res)
	if len(res.Entries) != 1 || res.Entries[0].Kind != "memory.forgotten" || !jsonEq(res.Entries[0].Data, `{"store":"working","ids":["Note-A","Note-B"],"mode":"hard"}`) {
		t.Errorf("trace: %+v", res.Entries)
	}
}
