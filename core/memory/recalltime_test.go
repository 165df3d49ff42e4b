package memory_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/llm/llmtest"
)

// budgetItems stores two budget notes that match "note" and "budget"
// alike: one five days before the clock, one two months before (shorter,
// so its BM25 is the higher), and an unrelated one.
func budgetItems(r *rig, store string) {
	r.memorize(store, it("old", "Budget notes: cut travel.", "timestamp", at(-60*24*time.Hour)))
	r.memorize(store, it("recent", "Budget notes: cut travel costs by a tenth.", "timestamp", at(-5*24*time.Hour), "tags", []string{"budget", "q4"}))
	r.memorize(store, it("lunch", "Lunch was pasta.", "timestamp", at(-2*24*time.Hour)))
}

func rememberWhy(r *rig, args map[string]any) []memory.Recalled {
	r.T.Helper()
	args["explain"] = true
	var res memory.RememberResult
	r.Do(agent, "memory.remember", args, &res)
	for _, g := range res.Items {
		if g.Why == nil {
			r.T.Fatalf("%s has no why", g.ID)
		}
	}
	return res.Items
}

func TestRememberLiftsTheItemStoredInThePromptsTime(t *testing.T) {
	r := newRig(t)
	budgetItems(r, "working")
	for _, rank := range []string{"relevance", "importance"} {
		got := rememberWhy(r, map[string]any{"store": "working", "prompt": "what did I note last week about the budget", "rank": rank})
		if len(got) != 2 || got[0].ID != "recent" || got[1].ID != "old" {
			t.Fatalf("rank %s: remember = %v; want the note of last week, then the older one", rank, recalledIDs(got))
		}
		recent, old := got[0], got[1]
		if recent.Score <= old.Score {
			t.Errorf("rank %s: last week's score %v is not above the older one's %v", rank, recent.Score, old.Score)
		}
		if !slices.Equal(recent.Why.Windows, []string{"last week"}) || len(old.Why.Windows) != 0 {
			t.Errorf("rank %s: windows %v and %v; want last week's item alone inside \"last week\"", rank, recent.Why.Windows, old.Why.Windows)
		}
		if !slices.Equal(recent.Why.Terms, []string{"note", "budget"}) {
			t.Errorf("rank %s: terms %v; want note and budget, not the time's words", rank, recent.Why.Terms)
		}
		timePart := part(t, recent.Why, memory.PartTime)
		if timePart.Weight != memory.TimeBoost || timePart.Contribution <= 0 || part(t, old.Why, memory.PartTime).Contribution != 0 {
			t.Errorf("rank %s: time parts %+v and %+v; want weight %v inside the window, nothing outside", rank, timePart, part(t, old.Why, memory.PartTime), memory.TimeBoost)
		}
	}
	// The item's tags that the prompt names say so.
	got := rememberWhy(r, map[string]any{"store": "working", "prompt": "budget"})
	var recent memory.Recalled
	for _, g := range got {
		if g.ID == "recent" {
			recent = g
		}
	}
	if recent.Why == nil || !slices.Contains(recent.Why.Matched, memory.MatchedTerm{Term: "budget", Field: "tags", Count: 1}) ||
		!slices.Contains(recent.Why.Matched, memory.MatchedTerm{Term: "budget", Field: "text", Count: 1}) {
		t.Errorf("recent: %+v; want budget matched in text and in tags", recent.Why)
	}
}

func TestRememberWhenLiftsWhatWasStoredThen(t *testing.T) {
	r := newRig(t)
	budgetItems(r, "episodic")
	got := rememberWhy(r, map[string]any{"store": "episodic", "prompt": "budget notes", "when": "last week", "rank": "relevance"})
	if len(got) != 2 || got[0].ID != "recent" || !slices.Equal(got[0].Why.Windows, []string{"last week"}) {
		t.Errorf("remember with when = %v; want last week's note first, inside the window", recalledIDs(got))
	}
	// A prompt that is only a time asks for what was stored then.
	got = rememberWhy(r, map[string]any{"store": "episodic", "prompt": "two months ago", "rank": "recency"})
	if len(got) != 3 || got[0].ID != "old" {
		t.Errorf("remember \"two months ago\" = %v; want the note of two months ago first", recalledIDs(got))
	}
	got = rememberWhy(r, map[string]any{"store": "episodic", "prompt": "what was it two months ago?", "rank": "recency"})
	if len(got) != 3 || got[0].ID != "old" || !slices.Equal(got[0].Why.Windows, []string{"two months ago"}) {
		t.Errorf("remember \"what was it two months ago?\" = %v; want the note of two months ago first", recalledIDs(got))
	}
}

func TestRememberRefusesAWhenThatPlacesNothing(t *testing.T) {
	r := newRig(t)
	budgetItems(r, "working")
	before := r.dump()
	for _, when := range []string{"someday", "3 blorfs ago", "after the move"} {
		e := r.Fail(agent, "memory.remember", map[string]any{"store": "working", "prompt": "budget", "when": when}, errs.Validation, "when", when)
		if e.Details["field"] != "when" {
			t.Errorf("when %q: details %v; want field when", when, e.Details)
		}
	}
	sameDump(t, "a refused when", before, r.dump())
}

func TestWhyPartsAddUpToTheScoreInEachRankMode(t *testing.T) {
	offline := newRig(t)
	withModel := newRigWith(t, rigOptions{llm: &llmtest.Scripted{EmbedFunc: embed}})
	for name, r := range map[string]*rig{"offline": offline, "model": withModel} {
		budgetItems(r, "working")
		r.memorize("working", it("car", "The car needs new tyres before the trip.", "timestamp", at(-3*24*time.Hour)))
		for _, rank := range []string{"relevance", "importance", "recency"} {
			for _, prompt := range []string{"what did I note last week about the budget", "automobile budget", "the", ""} {
				for _, g := range rememberWhy(r, map[string]any{"store": "working", "prompt": prompt, "rank": rank}) {
					sum := 0.0
					names := []string{}
					for _, p := range g.Why.Parts {
						sum += p.Contribution
						names = append(names, p.Name)
						if math.Abs(p.Value*p.Weight-p.Contribution) > 1e-5 {
							t.Errorf("%s %s %q %s: part %+v is not its value times its weight", name, rank, prompt, g.ID, p)
						}
					}
					if math.Abs(sum-g.Score) > 1e-5 || math.Abs(g.Why.Score-g.Score) > 1e-5 {
						t.Errorf("%s %s %q %s: parts %+v add up to %v, why says %v; the score is %v", name, rank, prompt, g.ID, g.Why.Parts, sum, g.Why.Score, g.Score)
					}
					// The tags part is there when (and only when) the
					// item has a tag the prompt says.
					want := []string{"lexical", "time", "importance", "recency"}
					if len(g.Why.Tagged) > 0 {
						want = slices.Insert(want, 1, "tags")
					}
					if name == "model" && prompt != "" {
						want = slices.Insert(want, len(want)-3, "vector")
					}
					if !slices.Equal(names, want) {
						t.Errorf("%s %s %q %s: parts %v; want %v", name, rank, prompt, g.ID, names, want)
					}
				}
			}
		}
	}
}

func part(t *testing.T, w *memory.Why, name string) memory.Part {
	t.Helper()
	for _, p := range w.Parts {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("why %+v has no part %s", w, name)
	return memory.Part{}
}

func recalledIDs(rs []memory.Recalled) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// TestBroadWindowsRankAsNarrowOnes: a window holding more items than
// remember reads keys of (told item by item as candidates are read) lifts
// and explains the same items as one whose ids are read from the index.
func TestBroadWindowsRankAsNarrowOnes(t *testing.T) {
	r := newRigWith(t, rigOptions{llm: &llmtest.Scripted{EmbedFunc: embed}})
	budgetItems(r, "working")
	for i := range 30 {
		r.memorize("working", it("", "Budget line for travel and a tenth of costs.", "timestamp", at(-time.Duration(i)*30*24*time.Hour-time.Hour)))
	}
	cases := []map[string]any{
		{"prompt": "what did I note last week about the budget", "rank": "relevance"},
		{"prompt": "budget notes", "when": "after May", "rank": "relevance"},
		{"prompt": "travel costs in the summer of 2025", "rank": "importance"},
		{"prompt": "last week", "rank": "importance"},
		{"prompt": "", "when": "two months ago", "rank": "recency"},
	}
	ask := func(c map[string]any) string {
		args := map[string]any{"store": "working", "limit": 5}
		for k, v := range c {
			args[k] = v
		}
		args["explain"] = true
		return string(r.Do(agent, "memory.remember", args, nil))
	}
	for _, c := range cases {
		narrow := ask(c)
		restore := memory.SetMaxWindowKeys(1)
		broad := ask(c)
		restore()
		if narrow != broad {
			t.Errorf("%v:\nnarrow %s\nbroad  %s", c, narrow, broad)
		}
	}
}
