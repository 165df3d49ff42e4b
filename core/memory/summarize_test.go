package memory_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
)

func summarizeFixture(t *testing.T) *rig {
	r := newRig(t)
	for i, in := range []map[string]any{
		it("s1", "Maria booked the Lisbon flight for December 3rd at $420.", "tags", []string{"travel"}, "agent_id", "ann"),
		it("s2", "The Lisbon hotel is Casa do Rio, check-in after 3pm.", "tags", []string{"Travel"}, "agent_id", "bob"),
		it("s3", "Quarterly budget review moved to Thursday at 10am.", "tags", []string{"work"}, "agent_id", "ann"),
		it("s4", "Jonas will add two Redis nodes before the launch on the 20th.", "tags", []string{"work"}, "agent_id", "bob"),
		it("s5", "Tom is allergic to peanuts.", "tags", []string{"health"}, "agent_id", "ann"),
	} {
		in["timestamp"] = at(time.Duration(i-4) * time.Hour) // s5 now, s1 four hours ago
		r.memorize("episodic", in)
	}
	r.memorize("episodic", it("gone", "This forgotten item must not be summarized: Zanzibar.", "tags", []string{"travel"}, "timestamp", at(-time.Minute)))
	r.forget("episodic", "item gone", "soft")
	return r
}

func TestSummarizeScopes(t *testing.T) {
	r := summarizeFixture(t)
	for scope, want := range map[string][]string{
		"all":                        {"s1", "s2", "s3", "s4", "s5"},
		"":                           {"s1", "s2", "s3", "s4", "s5"},
		" all ":                      {"s1", "s2", "s3", "s4", "s5"},
		"tag:travel":                 {"s1", "s2"},
		"tag:TRAVEL":                 {"s1", "s2"},
		"tag:work":                   {"s3", "s4"},
		"tag:none":                   {},
		"agent:ann":                  {"s1", "s3", "s5"},
		"agent:bob":                  {"s2", "s4"},
		"agent:Ann":                  {},
		"since:2025-11-05T08:00:00Z": {"s3", "s4", "s5"},
		"since:2025-11-05":           {"s1", "s2", "s3", "s4", "s5"},
		"since:2025-11-06":           {},
	} {
		sum := r.summarize("episodic", scope, 200)
		if !slices.Equal(sum.SourceItems, want) {
			t.Errorf("scope %q: source_items %v, want %v", scope, sum.SourceItems, want)
		}
		if (sum.Text == "") != (len(want) == 0) || sum.TokenCount > 200 || sum.TokenCount != llm.CountTokens(sum.Text) {
			t.Errorf("scope %q: %+v", scope, sum)
		}
		if strings.Contains(sum.Text, "Zanzibar") {
			t.Errorf("scope %q: a forgotten item is summarized: %s", scope, sum.Text)
		}
	}
	all := r.summarize("episodic", "all", 200)
	for _, keep := range []string{"Maria", "Lisbon", "$420", "Jonas", "peanuts"} {
		if !strings.Contains(all.Text, keep) {
			t.Errorf("the summary lacks %q:\n%s", keep, all.Text)
		}
	}
}

func TestSummarizeTokenLimits(t *testing.T) {
	r := summarizeFixture(t)
	for _, limit := range []int{1, 3, 8, 15, 30, 60, 1000} {
		sum := r.summarize("episodic", "all", limit)
		if sum.TokenCount > limit || sum.TokenCount != llm.CountTokens(sum.Text) || len(sum.SourceItems) != 5 {
			t.Errorf("limit %d: %+v", limit, sum)
		}
		if limit >= 8 && sum.Text == "" {
			t.Errorf("limit %d: empty summary", limit)
		}
	}
}

func TestSummarizeBadInput(t *testing.T) {
	r := summarizeFixture(t)
	before := r.dump()
	for _, c := range []struct {
		args      map[string]any
		kind      errs.Kind
		fragments []string
	}{
		{map[string]any{"store": "episodic", "scope": "everything", "token_limit": 100}, errs.Validation, []string{"scope", "everything", "tag:<tag>"}},
		{map[string]any{"store": "episodic", "scope": "tag:", "token_limit": 100}, errs.Validation, []string{"scope", "tag"}},
		{map[string]any{"store": "episodic", "scope": "agent:", "token_limit": 100}, errs.Validation, []string{"scope", "agent"}},
		{map[string]any{"store": "episodic", "scope": "since:yesterday", "token_limit": 100}, errs.Validation, []string{"scope", "yesterday"}},
		{map[string]any{"store": "episodic", "scope": "all", "token_limit": 0}, errs.Validation, []string{"token_limit"}},
		{map[string]any{"store": "episodic", "scope": "all", "token_limit": -5}, errs.Validation, []string{"token_limit"}},
		{map[string]any{"store": "episodic", "scope": "all"}, errs.Validation, []string{"token_limit"}},
		{map[string]any{"store": "pantry", "scope": "all", "token_limit": 10}, errs.NotFound, []string{"pantry"}},
	} {
		r.Fail(agent, "memory.summarize", c.args, c.kind, c.fragments...)
	}
	sameDump(t, "failed summaries", before, r.dump())
	// An empty store has an empty summary.
	r.configure(map[string]any{"store": "blank", "type": "working"})
	raw := r.Do(agent, "memory.summarize", map[string]any{"store": "blank", "scope": "all", "token_limit": 10}, nil)
	if !strings.Contains(string(raw), `"source_items":[]`) || !strings.Contains(string(raw), `"text":""`) {
		t.Errorf("empty store: %s", raw)
	}
}

// TestSummarizeStaysWithinTokenLimit: without a model, the summary is
// extractive, within the token limit, from every item oldest first.
// (Seed 004, scenario 2.4.)
func TestSummarizeStaysWithinTokenLimit(t *testing.T) {
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
