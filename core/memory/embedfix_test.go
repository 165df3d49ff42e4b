package memory_test

import (
	"context"
	"testing"

	embedq "github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// TestRememberSkipsAnotherModelsVectorsOfTheSameDimension: a memory
// item's vector made by another model than the query's, of the same
// dimension, neither ranks the item nor shows in its why, and engine.info
// tells of it. (review 8, M4: only the dimension was compared.)
func TestRememberSkipsAnotherModelsVectorsOfTheSameDimension(t *testing.T) {
	model := &llmtest.Scripted{Model: "model-b", EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
		out := make([][]float32, len(req.Texts))
		for i := range out {
			out[i] = []float32{1, 0, 0}
		}
		return out, nil
	}}
	r := newRigWith(t, rigOptions{llm: model})
	r.memorize("episodic", it("lease", "The lease on the flat ends in May"))
	q := r.e.Env().Embeddings()
	q.Settle(context.Background())
	// The vector as another model of the same dimension stored it.
	key := storage.Key(storage.PrefixMemory, "vec", "episodic", "lease")
	err := r.e.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
		return embedq.Stored(tx, key, embedq.Vector{Model: "model-a", Values: []float32{1, 0, 0}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r.remember("episodic", "zzz unrelated")); len(got) != 0 {
		t.Errorf("model-a's vector answered model-b's query: %v", got)
	}
	var res struct {
		Items []struct {
			ID  string `json:"id"`
			Why struct {
				Vector *float64 `json:"vector"`
			} `json:"why"`
		} `json:"items"`
	}
	raw := r.Do(agent, "memory.remember", map[string]any{"store": "episodic", "prompt": "lease", "explain": true}, &res)
	if len(res.Items) != 1 || res.Items[0].Why.Vector != nil {
		t.Errorf("remember lease with explain: %s", raw)
	}
	if s := q.Stats(); s.Mismatched == 0 {
		t.Errorf("engine.info does not tell of the other model's vector: %+v", s)
	}
}

// TestHardForgetDropsTheCachedVector: a memory forgotten in hard mode
// leaves no cached vector of its text behind. (review 8, M5: the cache
// kept it by the text's hash for ever.)
func TestHardForgetDropsTheCachedVector(t *testing.T) {
	model := &llmtest.Scripted{Model: "m", EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
		out := make([][]float32, len(req.Texts))
		for i := range out {
			out[i] = []float32{1, 0, 0}
		}
		return out, nil
	}}
	r := newRigWith(t, rigOptions{llm: model})
	r.memorize("episodic", it("pin", "my pin is 4711"))
	r.e.Env().Embeddings().Settle(context.Background())
	cached := func() int {
		n := 0
		err := r.e.Env().Store.View(func(tx *storage.Tx) error {
			var err error
			n, err = tx.Count(storage.PrefixKey(storage.PrefixIndex, "embed", "cache"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := cached(); n != 1 {
		t.Fatalf("cached vectors after memorize: %d, want 1", n)
	}
	r.forget("episodic", "oldest", "hard")
	if n := cached(); n != 0 {
		t.Errorf("cached vectors after a hard forget: %d, want 0", n)
	}
}
