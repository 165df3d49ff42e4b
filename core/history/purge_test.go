package history_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/storage"
)

// cachedModels counts the cached vectors of the engine's store by the
// model each names.
func (r *rig) cachedModels() map[string]int {
	r.t.Helper()
	out := map[string]int{}
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "embed", "cache")), func(_, v []byte) error {
			m, _ := embed.Header(v)
			out[m]++
			return nil
		})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestReembedAfterAModelChangePurgesTheOldModelsCache: the cached vectors
// an earlier model made are dead weight once the model changed (the cache
// key hashes the model with the text); embeddings.reembed drops them, says
// how many in purged, and the new model's vectors are cached in their
// place. (Issue 18: embedding housekeeping.)
func TestReembedAfterAModelChangePurgesTheOldModelsCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := oldEmbedder()
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: old})
	r.write("c", "user", "the budget for the trip")
	r.write("c", "user", "nothing in common")
	r.h.Settle()
	if got := r.cachedModels(); got["old-embed"] != 2 {
		t.Fatalf("the old model's cache: %v", got)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	r = newRigWith(t, rigOptions{dir: dir, llm: flaky(&down)})
	var res embed.ReembedResult
	r.do("embeddings.reembed", map[string]any{}, &res)
	if res.Queued != 2 || res.Purged != 2 {
		t.Errorf("reembed: %+v (want 2 queued, 2 purged)", res)
	}
	r.h.Settle()
	if got := r.cachedModels(); len(got) != 1 || got["flaky-embed"] != 2 {
		t.Errorf("the cache after the reembed: %v (want the new model's 2 only)", got)
	}
	r.do("embeddings.reembed", map[string]any{}, &res)
	if res.Queued != 0 || res.Purged != 0 {
		t.Errorf("a second reembed: %+v", res)
	}
	found, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found["history"])+len(found["embeddings"]) > 0 {
		t.Errorf("problems after the reembed: %v", found)
	}
}

// TestDeleteOfflineDropsTheCachedVectorAModelMade: an utterance deleted
// by a run without a model leaves no cached vector of its text behind,
// though the model that made it is not configured any more: its text
// must not stay recoverable from the cache. (Issue 18: before, only the
// configured model's entry went, and offline none.)
func TestDeleteOfflineDropsTheCachedVectorAModelMade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: flaky(&down)})
	r.write("c", "user", "my pin is 4711")
	r.write("c", "user", "the weather is fine")
	r.h.Settle()
	if got := r.cachedModels(); got["flaky-embed"] != 2 {
		t.Fatalf("the cache: %v", got)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	r = newRigWith(t, rigOptions{dir: dir}) // offline
	r.do("history.delete", map[string]any{"conversation": "c", "utterance_index": 0}, nil)
	if got := r.cachedModels(); got["flaky-embed"] != 1 {
		t.Errorf("the cache after deleting one of two texts offline: %v (want 1 left)", got)
	}
	r.do("history.drop", map[string]any{"conversation": "c"}, nil)
	if got := r.cachedModels(); len(got) != 0 {
		t.Errorf("the cache after dropping the conversation offline: %v", got)
	}
}

// TestDeleteAfterAMoveDropsTheCachedVectorWhereItWasMade: a conversation
// moved from the durable backend to the in-memory one leaves its texts'
// cached vectors in the durable store, where they were made; deleting an
// utterance there must drop its text's entry from that cache too, or the
// deleted text stays recoverable on disk (history.drop already drops
// from both).
func TestDeleteAfterAMoveDropsTheCachedVectorWhereItWasMade(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: flaky(&down)})
	r.write("c", "user", "my pin is 4711")
	r.write("c", "user", "the weather is fine")
	r.h.Settle()
	if got := r.cachedModels(); got["flaky-embed"] != 2 {
		t.Fatalf("the cache: %v", got)
	}
	r.do("history.backend", map[string]any{"conversation": "c", "backend": "in-memory"}, nil)
	r.do("history.delete", map[string]any{"conversation": "c", "utterance_index": 0}, nil)
	if got := r.cachedModels(); got["flaky-embed"] != 1 {
		t.Errorf("the durable cache after deleting one of two texts in memory: %v (want 1 left)", got)
	}
}
