package memory_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/retrieval"
)

// Issue 18, item 3: memory.remember's lexical stage shares core/retrieval's
// thesaurus and field weights.

func TestRememberFindsADerivedWordThroughTheThesaurus(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("visa", "Sent the application for the Berlin visa.", "timestamp", at(-time.Hour)))
	r.memorize("working", it("lunch", "Lunch was pasta.", "timestamp", at(-time.Hour)))
	if got := ids(r.remember("working", "apply")); !slices.Equal(got, []string{"visa"}) {
		t.Fatalf("remember apply: %v; want the item saying application", got)
	}
	got := rememberWhy(r, map[string]any{"store": "working", "prompt": "when did I apply?"})
	if len(got) != 1 {
		t.Fatalf("remember with why: %v", recalledIDs(got))
	}
	why := got[0].Why
	want := memory.MatchedTerm{Term: "application", Field: "text", Count: 1, SynonymOf: "apply", Relation: retrieval.RelDerived}
	if !slices.Contains(why.Matched, want) {
		t.Errorf("matched %+v; want %+v", why.Matched, want)
	}
	if !slices.Contains(why.Synonyms, retrieval.Synonym{Term: "applic", Of: "apply", Relation: retrieval.RelDerived}) {
		t.Errorf("synonyms %+v; want applic for apply", why.Synonyms)
	}
	// The thesaurus word's share is the synonyms part, at Derived's
	// weight: no word of the prompt is in the text itself.
	syn := part(t, why, memory.PartSynonyms)
	if syn.Contribution <= 0 || part(t, why, memory.PartLexical).Contribution != 0 || len(why.Terms) != 0 {
		t.Errorf("parts %+v, terms %v; want all of the score from the synonyms part", why.Parts, why.Terms)
	}
	if !strings.Contains(why.Text, "thesaurus: application for apply") {
		t.Errorf("why text %q does not say the thesaurus word", why.Text)
	}
}

func TestThesaurusOnlyMatchRanksBelowAnExactMatch(t *testing.T) {
	r := newRig(t)
	// The same strength: one word in a text of two terms, each word in
	// one item; the thesaurus match is the more recent and the more
	// important, so only relevance puts the exact one first.
	r.memorize("working", it("exact", "Apply today.", "timestamp", at(-2*time.Hour), "importance", 0.2))
	r.memorize("working", it("derived", "Application today.", "timestamp", at(-time.Hour), "importance", 0.9))
	got := r.remember("working", "apply", "rank", "relevance")
	if !slices.Equal(ids(got), []string{"exact", "derived"}) {
		t.Fatalf("remember apply by relevance: %v; want the exact word first, the derived one after", ids(got))
	}
	if *got[0].Confidence != 1 || *got[1].Confidence >= 1 || *got[1].Confidence <= 0 {
		t.Errorf("confidences %v, %v; want 1, then less", *got[0].Confidence, *got[1].Confidence)
	}
}

func TestATagMatchLiftsAnItemOverAnOtherwiseEqualOne(t *testing.T) {
	r := newRig(t)
	// Equal texts and times: without the tag, the id breaks the tie for a.
	r.memorize("working", it("a", "Booked the flight to Lisbon.", "timestamp", at(-time.Hour), "tags", []string{"work"}))
	r.memorize("working", it("b", "Booked the flight to Lisbon.", "timestamp", at(-time.Hour), "tags", []string{"travel"}))
	for i, text := range []string{"Lunch was pasta.", "The car needs new tyres.", "Call the dentist."} {
		r.memorize("working", it(string(rune('c'+i)), text, "timestamp", at(-time.Hour)))
	}
	got := rememberWhy(r, map[string]any{"store": "working", "prompt": "travel flight", "rank": "relevance"})
	if !slices.Equal(recalledIDs(got), []string{"b", "a"}) {
		t.Fatalf("remember travel flight: %v; want b (tagged travel) over a", recalledIDs(got))
	}
	if got[0].Score <= got[1].Score {
		t.Errorf("scores %v, %v; want the tag to add to b's", got[0].Score, got[1].Score)
	}
	tags := part(t, got[0].Why, memory.PartTags)
	if !slices.Equal(got[0].Why.Tagged, []string{"travel"}) || tags.Contribution <= 0 || tags.Weight != retrieval.DefaultParams.Weight[retrieval.FieldTags] {
		t.Errorf("b's why: tagged %v, tags part %+v; want travel, weighed as retrieval's tags field", got[0].Why.Tagged, tags)
	}
	if len(got[1].Why.Tagged) != 0 || slices.ContainsFunc(got[1].Why.Parts, func(p memory.Part) bool { return p.Name == memory.PartTags }) {
		t.Errorf("a's why %+v; want no tag part", got[1].Why)
	}
	// A tag alone finds its items, as a word of the text would.
	if got := ids(r.remember("working", "travel")); !slices.Equal(got, []string{"b"}) {
		t.Errorf("remember travel: %v; want b", got)
	}
}

func TestThesaurusAndTagsFindNothingOfAnotherPrincipalsStore(t *testing.T) {
	r := aliceStore(t)
	r.Do(alice, "memory.memorize", map[string]any{"store": "alice_notes", "item": it("loan", "Alice's loan application went in.", "agent_id", "alice", "tags", []string{"mortgage"})}, nil)
	r.Do(bob, "memory.configure", map[string]any{"store": "bob_notes", "type": "working"}, nil)
	r.Do(bob, "memory.memorize", map[string]any{"store": "bob_notes", "item": it("bike", "Bob fixed his bike.", "agent_id", "bob")}, nil)
	// Alice finds hers through the new paths: a derived word, a tag.
	for _, prompt := range []string{"apply", "mortgage"} {
		var res memory.RememberResult
		r.Do(alice, "memory.remember", map[string]any{"store": "alice_notes", "prompt": prompt}, &res)
		if !slices.Equal(recalledIDs(res.Items), []string{"loan"}) {
			t.Errorf("alice's remember %q: %v; want her loan item", prompt, recalledIDs(res.Items))
		}
	}
	for _, prompt := range []string{"apply", "mortgage", "secret", "apply mortgage secret"} {
		// Bob's own store holds nothing of hers.
		var res memory.RememberResult
		r.Do(bob, "memory.remember", map[string]any{"store": "bob_notes", "prompt": prompt, "explain": true}, &res)
		if len(res.Items) != 0 {
			t.Errorf("bob's remember %q in his store: %v", prompt, recalledIDs(res.Items))
		}
		// Hers is refused, and his turn.start recalls none of it.
		before := r.dump()
		r.Fail(bob, "memory.remember", map[string]any{"store": "alice_notes", "prompt": prompt}, errs.Permission, "bob may not")
		sameDump(t, "bob's refused remember", before, r.dump())
		raw := r.Do(enginetest.Who{As: "bob", Turn: "b-" + strings.ReplaceAll(prompt, " ", "-")}, "turn.start", map[string]any{"input": prompt}, nil)
		if strings.Contains(string(raw), "loan") || strings.Contains(string(raw), "4242") {
			t.Errorf("bob's turn.start %q holds alice's items: %s", prompt, raw)
		}
	}
}

func TestRememberRefusesBadInputWithAThesaurusOrTagPrompt(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("visa", "Sent the application for the visa.", "tags", []string{"travel"}))
	before := r.dump()
	for _, c := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"limit": -1}, "limit"},
		{map[string]any{"rank": "loudest"}, "rank"},
		{map[string]any{"when": "3 blorfs ago"}, "when"},
		{map[string]any{"filters": map[string]any{"metadata": []int{1}}}, "filters.metadata"},
	} {
		c.args["store"], c.args["prompt"] = "working", "apply travel"
		e := r.Fail(agent, "memory.remember", c.args, errs.Validation, c.field)
		if e.Details["field"] != c.field {
			t.Errorf("%v: details %v; want field %s", c.args, e.Details, c.field)
		}
	}
	sameDump(t, "refused remembers", before, r.dump())
}

func TestASoftForgottenItemsTagsNeitherFindItNorRaiseTheFloor(t *testing.T) {
	r := newRig(t)
	// The forgotten item has every word of the prompt as a tag; the live
	// one says one of them once, in a long text: relevant only beside
	// live items.
	r.memorize("episodic", it("gone", "Notes.", "tags", []string{"travel", "lisbon", "work"}))
	r.memorize("episodic", it("live", "On the way home we talked about the garden, the weather, the neighbours, the new bakery, "+
		"the school run, the old car, the price of bread, the dog, the roof and, at the very end, travel.", "timestamp", at(-time.Hour)))
	for _, text := range []string{"Lunch was pasta.", "The car needs new tyres.", "Call the dentist.", "Water the plants."} {
		r.memorize("episodic", it("", text))
	}
	r.forget("episodic", "item gone", "soft")
	if got := ids(r.remember("episodic", "travel lisbon work")); !slices.Equal(got, []string{"live"}) {
		t.Errorf("remember travel lisbon work: %v; want the live item alone", got)
	}
	if got := ids(r.remember("episodic", "travel lisbon work", "include_deleted", true)); !slices.Contains(got, "gone") {
		t.Errorf("remember with include_deleted: %v; want the forgotten item too", got)
	}
}

func TestAForgottenItemsWordIsNoThesaurusWordOfARecall(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("visa", "Sent the application for the Berlin visa.", "timestamp", at(-time.Hour)))
	r.memorize("working", it("now", "Apply now for the grant.", "timestamp", at(-time.Hour)))
	r.forget("working", "item visa", "soft")
	// Only the forgotten item says "application": the prompt is not
	// expanded with it, so the why of what is recalled does not show a
	// forgotten text's word (as it would not once the item is erased).
	got := rememberWhy(r, map[string]any{"store": "working", "prompt": "apply"})
	if !slices.Equal(recalledIDs(got), []string{"now"}) {
		t.Fatalf("remember apply: %v; want now", recalledIDs(got))
	}
	if len(got[0].Why.Synonyms) != 0 {
		t.Errorf("synonyms %+v; want none: only a forgotten item holds the word", got[0].Why.Synonyms)
	}
	// Asked to include forgotten items, the word is found again.
	got = rememberWhy(r, map[string]any{"store": "working", "prompt": "apply", "include_deleted": true})
	if !slices.Equal(sorted(recalledIDs(got)), []string{"now", "visa"}) {
		t.Fatalf("remember apply with forgotten items: %v; want now and visa", recalledIDs(got))
	}
}

// TestRecallsReadTheForgottenItemsOncePerVersion: a prompt word that is a
// tag needs the store's soft-forgotten items (the tag index does not mark
// them); a store at capacity evicts, so they may be most of a million.
// Recalls between two writes read them from the store once, and each
// still leaves the forgotten item out.
func TestRecallsReadTheForgottenItemsOncePerVersion(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("a", "Booked the flight to Lisbon.", "timestamp", at(-time.Hour), "tags", []string{"travel"}))
	r.memorize("working", it("b", "Packed the bags.", "timestamp", at(-time.Hour), "tags", []string{"travel"}))
	r.memorize("working", it("c", "Lunch was pasta.", "timestamp", at(-time.Hour)))
	r.forget("working", "item b", "soft")
	before := memory.ForgottenScans()
	for range 3 {
		if got := ids(r.remember("working", "travel")); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("remember travel: %v; want a (b is forgotten)", got)
		}
	}
	if n := memory.ForgottenScans() - before; n != 1 {
		t.Errorf("three recalls read the forgotten items %d times; want once", n)
	}
	r.forget("working", "item a", "soft")
	if got := ids(r.remember("working", "travel")); len(got) != 0 {
		t.Errorf("remember travel after forgetting a too: %v; want nothing", got)
	}
}
