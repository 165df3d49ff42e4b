package memory_test

import (
	"reflect"
	"testing"
	"time"

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
