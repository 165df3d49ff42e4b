package embed

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Issue 18, embedding housekeeping: a reembed purges the cache of other
// models.

// cacheEntries reads every cache entry of r's store: key → model (or
// "?" for one that does not read).
func (r *rig) cacheEntries() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	err := r.st.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(cachePrefix()), func(k, v []byte) error {
			m, _ := Header(v)
			if checkCached(v) != nil {
				m = "?"
			}
			out[string(k)] = m
			return nil
		})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// oldCache writes n cache entries of model old (dimension 2), one of the
// current model "m2" of another dimension (the model changed under its
// name) and one that does not read.
func (r *rig) oldCache(n int) {
	r.t.Helper()
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range n {
			if err := tx.Set(CacheKey("old", fmt.Sprint("text ", i)), Encode(Vector{Model: "old", Values: []float32{1, 2}})); err != nil {
				return err
			}
		}
		if err := tx.Set(CacheKey("m2", "resized"), Encode(Vector{Model: "m2", Values: []float32{1, 2}})); err != nil {
			return err
		}
		return tx.Set(CacheKey("m2", "garbage"), []byte{1, 2, 3})
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// TestReembedPurgesTheCacheOfOtherModels: after a model change, a reembed
// drops the cached vectors the new model cannot use (another model's,
// another dimension's, unreadable ones) and keeps its own; the result
// counts them.
func TestReembedPurgesTheCacheOfOtherModels(t *testing.T) {
	m := &model{name: "m2", dim: 3}
	r := newRig(t, m)
	r.write(map[string]string{"a": "kept text"})
	r.settle()
	r.oldCache(5)
	res, err := r.q.Reembed(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Purged != 7 {
		t.Errorf("purged %d, want 7 (5 of model old, 1 of another dimension, 1 unreadable)", res.Purged)
	}
	got := r.cacheEntries()
	if len(got) != 1 || got[string(CacheKey("m2", "kept text"))] != "m2" {
		t.Errorf("the cache after the purge: %v", got)
	}
	// Nothing more to purge the second time.
	if res, err := r.q.Reembed(context.Background(), ""); err != nil || res.Purged != 0 {
		t.Errorf("second reembed: %+v %v", res, err)
	}
}

// TestReembedCutShortLosesNothingAndTheNextFinishes: a reembed stopped
// between two chunks of its purge (as a kill would stop it; each chunk is
// its own transaction) keeps the texts it queued, and the purged chunks
// stay purged; the next reembed, in a new queue on the same store (the
// next run), purges the rest and the texts are embedded.
func TestReembedCutShortLosesNothingAndTheNextFinishes(t *testing.T) {
	m := &model{name: "m2", dim: 3}
	r := newRig(t, m)
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for _, id := range []string{"x", "y"} {
			if err := tx.Set(storage.Key("t/", "item", id), []byte("text of "+id)); err != nil {
				return err
			}
			if err := tx.Set(storage.Key("t/", "vec", id), Encode(Vector{Model: "old", Values: []float32{1, 2}})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.write(map[string]string{"z": "warm"}) // the queue learns the dimension; "warm" is cached
	r.settle()
	r.oldCache(8) // 10 entries to purge
	ctx, cancel := context.WithCancel(context.Background())
	r.q.purgeChunk = 3
	chunks := 0
	r.q.afterPurgeChunk = func() {
		if chunks++; chunks == 2 {
			cancel()
		}
	}
	m.set(errors.New("the model is down")) // the queued texts wait
	if _, err := r.q.Reembed(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("the reembed cut short returned %v", err)
	}
	// Two chunks of 3 of the 11 entries were read: up to 6 purged.
	purged := 11 - len(r.cacheEntries())
	if purged < 5 || purged > 6 {
		t.Errorf("%d cache entries purged by two chunks of 3 of 11, want 5 or 6", purged)
	}
	if r.markers() != 2 {
		t.Errorf("%d markers after the reembed cut short, want the 2 it queued", r.markers())
	}

	// The next run: a new queue on the same store.
	r.q.Stop()
	m.set(nil)
	r.q = New(m, r.clock, nil)
	if err := r.q.Register(r.source()); err != nil {
		t.Fatal(err)
	}
	res, err := r.q.Reembed(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Purged != 10-purged || res.Sources[0].Waiting != 2 {
		t.Errorf("the next reembed: %+v (want %d purged, both texts waiting)", res, 10-purged)
	}
	r.settle()
	for _, id := range []string{"x", "y", "z"} {
		if v, ok := r.vector(id); !ok || v.Model != "m2" {
			t.Errorf("%s: %+v", id, v)
		}
	}
	for k, model := range r.cacheEntries() {
		if model != "m2" {
			t.Errorf("left in the cache: %q of %s", k, model)
		}
	}
}

// TestUncacheDropsATextUnderEveryModelThatCachedIt: a text deleted for
// good leaves no cached vector behind, whichever model made it: one
// configured earlier, or one configured before an offline run deletes it.
func TestUncacheDropsATextUnderEveryModelThatCachedIt(t *testing.T) {
	r := newRig(t, &model{name: "old", dim: 2})
	r.write(map[string]string{"a": "secret one", "b": "secret two"})
	r.settle()
	next := func(p llm.Provider) {
		r.q.Stop()
		r.q = New(p, r.clock, nil)
		if err := r.q.Register(r.source()); err != nil {
			t.Fatal(err)
		}
	}
	next(&model{name: "new", dim: 3}) // a model change, no reembed yet
	r.write(map[string]string{"c": "secret one"})
	r.settle()
	if got := r.cacheEntries(); len(got) != 3 {
		t.Fatalf("the cache: %v", got)
	}
	uncache := func(text string) {
		err := r.st.Update(context.Background(), func(tx *storage.Tx) error { return r.q.Uncache(tx, text) })
		if err != nil {
			t.Fatal(err)
		}
	}
	uncache("secret one")
	if got := r.cacheEntries(); len(got) != 1 || got[string(CacheKey("old", "secret two"))] != "old" {
		t.Errorf("after uncaching under model new: %v (want only old's secret two)", got)
	}
	next(llm.Offline{}) // no model now
	uncache("secret two")
	if got := r.cacheEntries(); len(got) != 0 {
		t.Errorf("after uncaching offline: %v", got)
	}
}

// TestPurgeLeavesOnlyTheModelItKeepsRecorded: once a reembed purged a
// store's cache, only the configured model is recorded there as caching
// (Uncache deletes under it alone).
func TestPurgeLeavesOnlyTheModelItKeepsRecorded(t *testing.T) {
	r := newRig(t, &model{name: "old", dim: 2})
	r.write(map[string]string{"a": "one"})
	r.settle()
	r.q.Stop()
	r.q = New(&model{name: "new", dim: 3}, r.clock, nil)
	if err := r.q.Register(r.source()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.q.Reembed(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	r.settle()
	if _, err := r.q.Reembed(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	var models []string
	err := r.st.View(func(tx *storage.Tx) error {
		var err error
		models, err = cachedModels(tx)
		return err
	})
	if err != nil || len(models) != 1 || models[0] != "new" {
		t.Errorf("models recorded after the purge: %v %v", models, err)
	}
}
