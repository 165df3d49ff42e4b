package memory_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

func TestRememberExplainsWhichWordsMatchedAndWhatOrdered(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("deploy", "We deployed the billing service on Friday.", "importance", 0.8, "timestamp", at(-2*time.Hour)))
	r.memorize("working", it("lunch", "Lunch was pasta.", "timestamp", at(-time.Hour)))
	var res memory.RememberResult
	r.Do(agent, "memory.remember", map[string]any{"store": "working", "prompt": "when are we deploying billing?", "explain": true}, &res)
	if len(res.Items) != 1 || res.Items[0].ID != "deploy" || res.Items[0].Why == nil {
		t.Fatalf("items = %+v; want the deploy item with a why", res.Items)
	}
	why := *res.Items[0].Why
	if !reflect.DeepEqual(why.Terms, []string{"deploying", "billing"}) || why.Rank != "importance" || why.Importance != 0.8 ||
		why.AgeSeconds != 7200 || why.Lexical <= 0 || why.Vector != nil {
		t.Errorf("why = %+v; want the prompt's words deploying and billing, ranked by importance 0.8, two hours old, a BM25 score and no vector", why)
	}
	if why.Text == "" {
		t.Error("why has no text")
	}

	// Without a prompt every item is listed: nothing matched, the order says why.
	r.Do(agent, "memory.remember", map[string]any{"store": "working", "explain": true}, &res)
	if len(res.Items) != 2 || res.Items[0].Why == nil || len(res.Items[0].Why.Terms) != 0 || res.Items[0].Why.Rank != "importance" {
		t.Errorf("items = %+v; want both with a why of no terms, ranked by importance", res.Items)
	}

	// Not asked: no why, the result as it always was.
	var plain memory.RememberResult
	r.Do(agent, "memory.remember", map[string]any{"store": "working", "prompt": "billing"}, &plain)
	if len(plain.Items) != 1 || plain.Items[0].Why != nil {
		t.Errorf("items = %+v; want no why when not asked", plain.Items)
	}
}

func TestItemCheckRefusesWhatMemorizeRefuses(t *testing.T) {
	r := newRig(t)
	imp := 1.5
	for _, c := range []struct {
		in    memory.ItemInput
		field string
	}{
		{memory.ItemInput{Type: "fact", Text: " "}, "item.text"},
		{memory.ItemInput{Text: "x"}, "item.type"},
		{memory.ItemInput{Type: "fact", Text: "x", Importance: &imp}, "item.importance"},
		{memory.ItemInput{Type: "fact", Text: "x", Tags: []string{""}}, "item.tags"},
		{memory.ItemInput{Type: "fact", Text: "x", Metadata: []byte(`[1]`)}, "item.metadata"},
	} {
		err := c.in.Check(core.DefaultAgent)
		if err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("Check(%+v) = %v; want an error about %s", c.in, err, c.field)
		}
		r.Fail(agent, "memory.memorize", map[string]any{"store": "working", "item": c.in}, errs.Validation, c.field)
	}
	if err := (memory.ItemInput{Type: "fact", Text: "Likes tea."}).Check(core.DefaultAgent); err != nil {
		t.Errorf("Check of a sound item: %v", err)
	}
}
