package memory_test

import (
	"context"
	"sync/atomic"
	"testing"

	embedq "github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// TestMemoryStaysRememberedWhileEmbeddingFails: with the embedding model
// down, memorize succeeds and remember finds the item by its words; the
// retry after the backoff stores its vector, and a reembed after a model
// change re-embeds it (and queues nothing the second time).
func TestMemoryStaysRememberedWhileEmbeddingFails(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	dim := atomic.Int32{}
	dim.Store(2)
	model := &llmtest.Scripted{Model: "m-embed", EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
		if down.Load() {
			return nil, &llm.Error{Provider: "scripted", Op: "embed", Transient: true, Msg: "connection refused"}
		}
		out := make([][]float32, len(req.Texts))
		for i := range out {
			out[i] = make([]float32, dim.Load())
			out[i][0] = 1
		}
		return out, nil
	}}
	r := newRigWith(t, rigOptions{llm: model})
	r.memorize("episodic", it("lease", "The lease on the flat ends in May"))
	if got := ids(r.remember("episodic", "lease")); len(got) != 1 || got[0] != "lease" {
		t.Fatalf("remember while the model is down: %v", got)
	}
	q := r.e.Env().Embeddings()
	if s := q.Stats(); s.Pending != 1 || s.Failed != 1 {
		t.Fatalf("stats while the model is down: %+v", s)
	}
	down.Store(false)
	r.clock.Advance(embedq.FirstBackoff)
	q.Settle(context.Background())
	vec := func() embedq.Vector {
		var v embedq.Vector
		err := r.e.Env().Store.View(func(tx *storage.Tx) error {
			b, err := tx.Get(storage.Key(storage.PrefixMemory, "vec", "episodic", "lease"))
			v = embedq.Decode(b)
			return err
		})
		if err != nil {
			t.Fatalf("the item's vector: %v", err)
		}
		return v
	}
	if v := vec(); v.Dim() != 2 || v.Model != "m-embed" {
		t.Errorf("vector after the retry: %+v", v)
	}
	// The model now gives another dimension: reembed replaces the vector.
	dim.Store(3)
	var res embedq.ReembedResult
	r.Do(agent, "embeddings.reembed", map[string]any{"source": "memory"}, &res)
	if res.Queued != 1 || len(res.Sources) != 1 || res.Sources[0].Source != "memory" {
		t.Errorf("reembed: %+v", res)
	}
	q.Settle(context.Background())
	if v := vec(); v.Dim() != 3 {
		t.Errorf("vector after reembed: %+v", v)
	}
	r.Do(agent, "embeddings.reembed", map[string]any{"source": "memory"}, &res)
	if res.Queued != 0 || res.Sources[0].Current != 1 {
		t.Errorf("second reembed: %+v", res)
	}
}
