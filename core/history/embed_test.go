package history_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// oldEmbedder is an embedding model of two dimensions, "old-embed", whose
// vectors are all alike: a model a store is later moved off.
func oldEmbedder() *llmtest.Scripted {
	return &llmtest.Scripted{Model: "old-embed", Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			out := make([][]float32, len(req.Texts))
			for i := range out {
				out[i] = []float32{1, 0}
			}
			return out, nil
		}}
}

// flaky is an embedding model that fails while down is set.
func flaky(down *atomic.Bool) *llmtest.Scripted {
	return &llmtest.Scripted{Model: "flaky-embed", Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			if down.Load() {
				return nil, &llm.Error{Provider: "scripted", Op: "embed", Transient: true, Msg: "connection refused"}
			}
			out := make([][]float32, len(req.Texts))
			for i, t := range req.Texts {
				out[i] = []float32{float32(len(t)), 1, 2}
			}
			return out, nil
		}}
}

// vectors reads the stored vectors of a conversation.
func (r *rig) vectors(conv string) []embed.Vector {
	r.t.Helper()
	var out []embed.Vector
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, "vec", conv)), func(_, v []byte) error {
			out = append(out, embed.Decode(v))
			return nil
		})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *rig) embeddings() *conn.EmbeddingsInfo {
	r.t.Helper()
	var info conn.Info
	raw := r.do("engine.info", map[string]any{"counts": false}, nil)
	if err := json.Unmarshal(raw, &info); err != nil {
		r.t.Fatal(err)
	}
	return info.Embeddings
}

// TestFailedEmbeddingKeepsWritesSearchable: with the embedding model
// down, writes succeed and are found by their words; engine.info shows the
// texts pending and failed; once the model is back and the backoff has
// passed on the engine clock, the retry stores their vectors. (Before the
// queue, the failure was logged at debug level and the vector never came.)
func TestFailedEmbeddingKeepsWritesSearchable(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	r.write("c", "user", "the budget meeting moved to Friday")
	r.write("c", "assistant", "noted, Friday it is")
	if hits := r.search(map[string]any{"conversation": "c", "query": "budget"}); len(hits) != 1 || hits[0].UtteranceIndex != 0 {
		t.Fatalf("lexical search while the model is down: %+v", hits)
	}
	e := r.embeddings()
	// The first write's call failed; the second waits behind the backoff.
	if e == nil || e.Pending != 2 || e.Failed != 1 || e.Model != "flaky-embed" || !strings.Contains(e.LastError, "connection refused") || e.NextRetry == nil {
		t.Fatalf("engine.info while the model is down: %+v", e)
	}
	if n := len(r.vectors("c")); n != 0 {
		t.Fatalf("%d vectors while the model is down", n)
	}
	down.Store(false)
	r.clock.Advance(embed.FirstBackoff)
	r.h.Settle()
	e = r.embeddings()
	if e.Pending != 0 || e.Failed != 0 || e.Retried != 1 || e.Embedded != 2 || e.Dimension != 3 || e.LastError != "" {
		t.Errorf("engine.info after the retry: %+v", e)
	}
	vs := r.vectors("c")
	if len(vs) != 2 || vs[0].Model != "flaky-embed" || vs[0].Dim() != 3 {
		t.Errorf("vectors after the retry: %+v", vs)
	}
}

// TestEmbeddingCountsAreTheOperatorsAlone: the queue's counts, errors and
// mismatch are about every agent's texts (a cached count even tells
// whether someone wrote a text before), so another agent's engine.info
// tells it the model and dimension only.
func TestEmbeddingCountsAreTheOperatorsAlone(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	r.write("c", "user", "my pin is 4711")
	var info conn.Info
	raw := r.Do(enginetest.Who{As: "agent_b"}, "engine.info", map[string]any{"counts": false}, nil)
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if e := info.Embeddings; e == nil || e.Model != "flaky-embed" || *e != (conn.EmbeddingsInfo{Model: e.Model, Dimension: e.Dimension}) {
		t.Errorf("agent_b's engine.info embeddings: %+v, want the model and dimension alone", e)
	}
	if e := r.embeddings(); e == nil || e.Pending != 1 || e.LastError == "" {
		t.Errorf("the operator's engine.info embeddings: %+v, want the queue's counts", e)
	}
}

// TestUnembeddedWritesAreEmbeddedAfterRestart: what a run could not embed
// is found again when the store is reopened, and embedded then.
func TestUnembeddedWritesAreEmbeddedAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: flaky(&down)})
	r.write("c", "user", "the lease ends in May")
	if e := r.embeddings(); e.Pending != 1 {
		t.Fatalf("pending %+v", e)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	r = newRigWith(t, rigOptions{dir: dir, llm: flaky(&down)})
	r.h.Settle()
	if e := r.embeddings(); e.Pending != 0 || e.Embedded != 1 {
		t.Errorf("engine.info after reopening: %+v", e)
	}
	if vs := r.vectors("c"); len(vs) != 1 || vs[0].Model != "flaky-embed" {
		t.Errorf("vectors after reopening: %+v", vs)
	}
	if hits := r.search(map[string]any{"conversation": "c", "query": "lease"}); len(hits) != 1 {
		t.Errorf("search after reopening: %+v", hits)
	}
}

// TestSearchWithAnotherModelsVectorsDoesNotCrash: vectors stored by a
// model of another dimension are skipped by search, engine.info says so,
// and embeddings.reembed replaces them.
func TestSearchWithAnotherModelsVectorsDoesNotCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := oldEmbedder()
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: old})
	r.write("c", "user", "the budget for the trip")
	r.write("c", "user", "nothing in common")
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	r = newRigWith(t, rigOptions{dir: dir, llm: flaky(&down)}) // dimension 3
	if hits := r.search(map[string]any{"conversation": "c", "query": "budget"}); len(hits) != 1 {
		t.Fatalf("search over another model's vectors: %+v", hits)
	}
	e := r.embeddings()
	if e.Mismatched != 2 || !strings.Contains(e.Mismatch, "model old-embed") || !strings.Contains(e.Mismatch, "embeddings.reembed") {
		t.Errorf("engine.info does not tell of the mismatch: %+v", e)
	}
	var res embed.ReembedResult
	r.do("embeddings.reembed", map[string]any{}, &res)
	if res.Queued != 2 || res.Model != "flaky-embed" {
		t.Errorf("reembed: %+v", res)
	}
	r.h.Settle()
	for _, v := range r.vectors("c") {
		if v.Model != "flaky-embed" || v.Dim() != 3 {
			t.Errorf("after reembed: %+v", v)
		}
	}
	r.do("embeddings.reembed", map[string]any{"source": "history"}, &res)
	if res.Queued != 0 {
		t.Errorf("a second reembed queued %d", res.Queued)
	}
}

// TestReembedIsTheOperators: another agent may not rewrite every
// principal's vectors; an unknown source and no model are clear errors.
func TestReembedIsTheOperators(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	r.Fail(enginetest.Who{As: "agent_b"}, "embeddings.reembed", map[string]any{}, errs.Permission, "only the operator")
	// review 8 nit: permission comes before the check of source.
	r.Fail(enginetest.Who{As: "agent_b"}, "embeddings.reembed", map[string]any{"source": "planner"}, errs.Permission, "only the operator")
	r.fail("embeddings.reembed", map[string]any{"source": "planner"}, errs.Validation, "source", "history")
	offline := newRig(t)
	offline.fail("embeddings.reembed", map[string]any{}, errs.LLM, "no embedding model")
}

// TestNearestUtterancesFollowDeletes: the vector ranking a fusion by rank
// reads is the most similar first, and a deleted utterance leaves it at
// once (the vectors in memory are read afresh).
func TestNearestUtterancesFollowDeletes(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{llm: flaky(&down)}) // vector: {len(text), 1, 2}
	for _, s := range []string{"aaaa", "aaaaaaaaaaaaaaaaaaaa", "a"} {
		r.write("c", "user", s)
	}
	q := []float32{20, 1, 2}
	order, cos, err := history.Nearest(r.h, "c", q, 2)
	if err != nil || len(order) != 2 || order[0] != 1 || order[1] != 0 || cos[1] < 0.9999 {
		t.Fatalf("nearest %v %v %v", order, cos, err)
	}
	r.do("history.delete", map[string]any{"conversation": "c", "utterance_index": 1}, nil)
	if order, _, _ := history.Nearest(r.h, "c", q, 2); len(order) != 2 || order[0] != 0 || order[1] != 2 {
		t.Errorf("after deleting utterance 1: %v", order)
	}
}
