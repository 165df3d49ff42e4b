package embed

import (
	"context"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// TestLastErrorGoesWithTheFailedTexts: once the texts whose embedding
// failed are deleted, the queue's last error goes too: nothing waits that
// it could be about. (review 8 nit: it lingered in engine.info.)
func TestLastErrorGoesWithTheFailedTexts(t *testing.T) {
	m := &model{name: "m", dim: 2}
	m.set(&llm.Error{Provider: "test", Op: "embed", Transient: true, Msg: "down"})
	r := newRig(t, m)
	r.write(map[string]string{"a": "one"})
	r.settle()
	if s := r.q.Stats(); s.Failed != 1 || s.LastError == "" {
		t.Fatalf("stats after the failure: %+v", s)
	}
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Delete(storage.Key("t/", "item", "a")); err != nil {
			return err
		}
		return tx.Delete(storage.Key("t/", "q", "a"))
	})
	if err != nil {
		t.Fatal(err)
	}
	m.set(nil)
	r.clock.Advance(FirstBackoff)
	r.q.Kick()
	r.settle()
	if s := r.q.Stats(); s.Failed != 0 || s.Pending != 0 || s.LastError != "" {
		t.Errorf("stats once the failed text is gone: %+v", s)
	}
}

// TestReembedDoesNotMarkATextChangedMeanwhile: an item whose text changes
// (and is embedded) between a reembed's reading and its marking keeps the
// new text's vector: the reembed does not mark it again with the text it
// read earlier. (review 8 nit: the marker it wrote carried the old text.)
func TestReembedDoesNotMarkATextChangedMeanwhile(t *testing.T) {
	m := &model{name: "m", dim: 2}
	r := newRig(t, m)
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Set(storage.Key("t/", "item", "a"), []byte("one")); err != nil {
			return err
		}
		return tx.Set(storage.Key("t/", "vec", "a"), Encode(Vector{Model: "old", Values: []float32{1, 2}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	src := r.source()
	items := src.Items
	changed := false
	src.Items = func(tx *storage.Tx, fn func(Item) error) error {
		if err := items(tx, fn); err != nil {
			return err
		}
		if !changed { // the item is rewritten, and embedded, meanwhile
			changed = true
			r.write(map[string]string{"a": "a longer text"})
			r.settle()
		}
		return nil
	}
	r.q.mu.Lock()
	r.q.sources = []Source{src}
	r.q.mu.Unlock()
	if _, err := r.q.Reembed(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	r.settle()
	if v, ok := r.vector("a"); !ok || v.Values[0] != float32(len("a longer text")) {
		t.Errorf("the item's vector after the reembed: %+v (want the new text's)", v)
	}
}

// TestCachedCountDoesNotDependOnBatching: two commits of the same text
// count one vector made and one answered by the cache, whether the worker
// took them in one batch or in two. (review 8: the count varied from run
// to run with the worker's timing.)
func TestCachedCountDoesNotDependOnBatching(t *testing.T) {
	for i := 0; i < 50; i++ {
		r := newRig(t, &model{name: "m", dim: 2})
		r.write(map[string]string{"a": "same text"})
		r.write(map[string]string{"b": "same text"})
		r.settle()
		if s := r.q.Stats(); s.Cached != 1 || s.Embedded != 2 {
			t.Fatalf("run %d: embedded %d, cached %d; want 2 and 1", i, s.Embedded, s.Cached)
		}
	}
}

// TestARepeatedTextIsCachedWhenItsFirstItemIsGone: of two items with the
// same text in one batch, the second counts as cached; when the first was
// deleted meanwhile (so stores nothing), the second still writes the
// cache entry for the vector the model made.
func TestARepeatedTextIsCachedWhenItsFirstItemIsGone(t *testing.T) {
	m := &model{name: "m", dim: 2}
	m.set(&llm.Error{Provider: "test", Op: "embed", Transient: true, Msg: "connection refused"})
	r := newRig(t, m)
	r.write(map[string]string{"a": "same text", "b": "same text"})
	r.settle()
	if err := r.st.Update(context.Background(), func(tx *storage.Tx) error { return tx.Delete(storage.Key("t/", "item", "a")) }); err != nil {
		t.Fatal(err)
	}
	m.set(nil)
	r.clock.Advance(FirstBackoff)
	r.settle()
	if _, ok := r.vector("b"); !ok {
		t.Fatal("b has no vector")
	}
	err := r.st.View(func(tx *storage.Tx) error {
		ok, err := tx.Has(CacheKey("m", "same text"))
		if err == nil && !ok {
			t.Error("the model was called for the text, yet nothing is cached")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
