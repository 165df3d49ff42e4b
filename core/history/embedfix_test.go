package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// TestDropLeavesNoVectorWhileTheWorkerEmbeds: conversations written and
// dropped at once, while the embedding worker stores their vectors, leave
// no vector behind. (review 8, H1: the drop listed its keys in one
// transaction and deleted them in a later one; a vector the worker stored
// in between stayed, and a new conversation of the same name returned the
// dropped text for its searches.) The model's small, varying delay lets
// the worker's commit fall anywhere around the drop.
func TestDropLeavesNoVectorWhileTheWorkerEmbeds(t *testing.T) {
	var n atomic.Int64
	m := &llmtest.Scripted{Model: "m", Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			time.Sleep(time.Duration(n.Add(1)%7) * 150 * time.Microsecond)
			out := make([][]float32, len(req.Texts))
			for i := range out {
				out[i] = []float32{1, 2, 3}
			}
			return out, nil
		}}
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: m})
	for i := 0; i < 300; i++ {
		c := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		r.Do(enginetest.Who{}, "history.write", map[string]any{"conversation": c, "speaker": "user", "text": "secret plan number one"}, nil)
		r.Do(enginetest.Who{}, "history.drop", map[string]any{"conversation": c}, nil)
	}
	r.h.Settle()
	var left []string
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		for _, kind := range []string{"vec", "embq"} {
			err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, kind)), func(k []byte) error {
				left = append(left, string(k))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d keys of dropped conversations left, first %q", len(left), left[0])
	}
}

// TestRetryOfAStepWithAtDoesNotHoldLaterWrites: a text whose embedding
// failed during a step with at (the clock pinned), and the texts written
// after it by requests without at, get their vectors once the model is
// back and the backoff has passed on the wall's time. (review 8, M1: the
// retry and the hold on the whole queue waited for another pinned step,
// which in the console never comes.)
func TestRetryOfAStepWithAtDoesNotHoldLaterWrites(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	at := r.clock.Now()
	args, _ := json.Marshal(map[string]any{"conversation": "c", "speaker": "user", "text": "written by a tour step"})
	if _, err := r.e.Do(context.Background(), conn.Request{Action: "history.write", Args: args, At: &at}); err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	r.clock.Advance(time.Hour)
	r.write("c", "user", "written interactively an hour later")
	r.clock.Advance(embed.MaxBackoff)
	r.e.Env().Embeddings().Kick()
	r.h.Settle()
	if n := len(r.vectors("c")); n != 2 {
		t.Errorf("%d of 2 utterances have vectors after the model came back and the backoff passed", n)
	}
}

// markers counts the pending embedding markers of conv in st.
func markers(t *testing.T, st *storage.Store, conv string) int {
	t.Helper()
	n := 0
	err := st.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(storage.PrefixKey(storage.PrefixHistory, "embq", conv))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMovedConversationsWaitingTextsGetVectors: a conversation moved to
// another backend while a text waits for its vector gets the vector there
// once the model is back. (review 8, M2: the marker was copied to the
// target store but the queue only knew the old one's, so the text waited
// for ever and reembed counted it as waiting.)
func TestMovedConversationsWaitingTextsGetVectors(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: flaky(&down)})
	r.write("c", "user", "the budget meeting moved to Friday")
	r.do("history.backend", map[string]any{"conversation": "c", "backend": "in-memory"}, nil)
	mem := history.InMemoryStore(r.h)
	if mem == nil {
		t.Fatal("no in-memory store")
	}
	down.Store(false)
	r.clock.Advance(embed.FirstBackoff)
	r.e.Env().Embeddings().Kick()
	r.h.Settle()
	n := 0
	err := mem.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(storage.PrefixKey(storage.PrefixHistory, "vec", "c"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || markers(t, mem, "c") != 0 {
		t.Errorf("after the move and the retry: %d vectors, %d markers in the target store; want 1 and 0", n, markers(t, mem, "c"))
	}
}

// TestReembedQueuesMarkersTheQueueDoesNotKnow: a pending marker the queue
// never heard of (a copy brought it) is queued by embeddings.reembed
// rather than counted as waiting for ever. (review 8, M2)
func TestReembedQueuesMarkersTheQueueDoesNotKnow(t *testing.T) {
	var down atomic.Bool
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	r.write("c", "user", "the lease ends in May")
	r.h.Settle()
	st := r.e.Env().Store
	// A marker written behind the queue's back, as a copy writes it.
	key := storage.Key(storage.PrefixHistory, "embq", "c", storage.Uint64(0))
	m := embed.Marker{Text: "the lease ends in May",
		Item:   storage.Key(storage.PrefixHistory, "utt", "c", storage.Uint64(0)),
		Vector: storage.Key(storage.PrefixHistory, "vec", "c", storage.Uint64(0))}
	if err := st.Update(context.Background(), func(tx *storage.Tx) error { return tx.SetJSON(key, m) }); err != nil {
		t.Fatal(err)
	}
	var res embed.ReembedResult
	r.do("embeddings.reembed", map[string]any{}, &res)
	r.h.Settle()
	if n := markers(t, st, "c"); n != 0 {
		t.Errorf("reembed left %d markers waiting (result %+v)", n, res)
	}
}

// constant is an embedding model named name that gives every text v.
func constant(name string, v []float32) *llmtest.Scripted {
	return &llmtest.Scripted{Model: name, Func: func(llm.Request) llmtest.Answer { return llmtest.Text("ok") },
		EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
			out := make([][]float32, len(req.Texts))
			for i := range out {
				out[i] = v
			}
			return out, nil
		}}
}

// TestSearchSkipsAnotherModelsVectorsOfTheSameDimension: vectors another
// model made are never compared with the query's, even of the same
// dimension; engine.info tells the operator to reembed, and after the
// reembed the vectors count again. (review 8, M4: only the dimension was
// compared, so a changed model of the same size went unnoticed and its
// meaningless cosines ranked utterances that share no word.)
func TestSearchSkipsAnotherModelsVectorsOfTheSameDimension(t *testing.T) {
	dir := t.TempDir()
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: constant("model-a", []float32{1, 0, 0})})
	r.write("c", "user", "the budget for the trip")
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	r = newRigWith(t, rigOptions{dir: dir, llm: constant("model-b", []float32{1, 0, 0})})
	if hits := r.search(map[string]any{"conversation": "c", "query": "zzz unrelated"}); len(hits) != 0 {
		t.Errorf("model-a's vector answered model-b's query: %+v", hits)
	}
	e := r.embeddings()
	if e == nil || e.Mismatched != 1 || !strings.Contains(e.Mismatch, "model-a") || !strings.Contains(e.Mismatch, "embeddings.reembed") {
		t.Fatalf("engine.info does not tell of another model's vectors: %+v", e)
	}
	var res embed.ReembedResult
	r.do("embeddings.reembed", map[string]any{}, &res)
	r.h.Settle()
	if hits := r.search(map[string]any{"conversation": "c", "query": "zzz unrelated"}); len(hits) != 1 {
		t.Errorf("after the reembed the vector does not count: %+v", hits)
	}
	if e := r.embeddings(); e.Mismatched != 1 {
		t.Errorf("searches after the reembed still skip vectors: %+v", e)
	}
}

// blockingEmbed is an embedding model whose calls wait for their context
// to end: started closes at the first call, returned when it returns.
type blockingEmbed struct {
	*llmtest.Scripted
	started, returned chan struct{}
}

func (b *blockingEmbed) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	close(b.started)
	<-ctx.Done()
	close(b.returned)
	return llm.EmbedResponse{}, ctx.Err()
}

// TestFailedOpenStopsTheEmbeddingWorker: when a subsystem registered after
// history fails, Open stops the embedding worker history's recovery
// started (its call is cancelled) and closes the store before it returns.
// (review 8, L3: the worker kept calling the model and writing the store
// of an engine that never opened.)
func TestFailedOpenStopsTheEmbeddingWorker(t *testing.T) {
	dir := t.TempDir()
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: flaky(&down)})
	r.write("c", "user", "the lease ends in May")
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	m := &blockingEmbed{Scripted: constant("m", []float32{1, 2, 3}), started: make(chan struct{}), returned: make(chan struct{})}
	_, err := core.Open(core.Options{DataDir: dir, Clock: clock.NewFixed(t0), LLM: m,
		Subsystems: []core.Subsystem{
			func(env *kit.Env) error { _, err := history.Register(env, history.Options{}); return err },
			func(env *kit.Env) error { <-m.started; return errors.New("a later subsystem fails") },
		}})
	if err == nil {
		t.Fatal("Open succeeded")
	}
	select {
	case <-m.returned:
	default:
		t.Fatal("Open returned while the embedding worker's call still ran")
	}
	// The store was closed: the directory opens again.
	r = newRigWith(t, rigOptions{dir: dir, llm: flaky(&down)})
	if n := markers(t, r.e.Env().Store, "c"); n != 1 {
		t.Errorf("the waiting text's marker: %d, want 1", n)
	}
}

// TestOfflineRestartShowsTextsStillWaiting: restarted without a model
// while texts still wait for their vectors, engine.info's embeddings shows
// them pending, as docs/batch.md says. (review 8, L2: it showed nothing.)
func TestOfflineRestartShowsTextsStillWaiting(t *testing.T) {
	dir := t.TempDir()
	var down atomic.Bool
	down.Store(true)
	r := newRigWith(t, rigOptions{dir: dir, keep: true, llm: flaky(&down)})
	r.write("c", "user", "the lease ends in May")
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	r = newRigWith(t, rigOptions{dir: dir})
	if e := r.embeddings(); e == nil || e.Pending != 1 {
		t.Errorf("engine.info's embeddings offline with a text waiting: %+v", e)
	}
	r.do("history.drop", map[string]any{"conversation": "c"}, nil)
	if e := r.embeddings(); e != nil {
		t.Errorf("engine.info's embeddings offline once nothing waits: %+v", e)
	}
}

// embedIndexKeys lists the keys under idx/embed/ of the engine's store.
func embedIndexKeys(t *testing.T, r *rig) []string {
	t.Helper()
	var keys []string
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "embed")), func(k []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestDropAndDeleteLeaveNoCachedVectorOrStamp: history.delete removes its
// text's cached vector, and history.drop its texts' cached vectors and the
// version stamp naming the conversation. (review 8, M5: the cache kept a
// deleted text's vector by its hash for ever, and the stamp key named the
// dropped conversation.)
func TestDropAndDeleteLeaveNoCachedVectorOrStamp(t *testing.T) {
	var down atomic.Bool
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: flaky(&down)})
	r.write("c", "user", "my social security number is 078-05-1120")
	r.write("c", "user", "the lease ends in May")
	r.h.Settle()
	if n := len(embedIndexKeys(t, r)); n != 3 {
		t.Fatalf("after two writes: %v, want two cached vectors and a stamp", embedIndexKeys(t, r))
	}
	r.do("history.delete", map[string]any{"conversation": "c", "utterance_index": 0}, nil)
	if n := len(embedIndexKeys(t, r)); n != 2 {
		t.Errorf("after history.delete: %v, want one cached vector and a stamp", embedIndexKeys(t, r))
	}
	r.do("history.drop", map[string]any{"conversation": "c"}, nil)
	if keys := embedIndexKeys(t, r); len(keys) != 0 {
		t.Errorf("after history.drop: %v left", keys)
	}
	// A conversation in the in-memory backend (dropped in chunks).
	r.write("m", "user", "the boiler needs a service")
	r.do("history.backend", map[string]any{"conversation": "m", "backend": "in-memory"}, nil)
	r.h.Settle()
	mem := history.InMemoryStore(r.h)
	count := func() int {
		n := 0
		err := mem.View(func(tx *storage.Tx) error {
			var err error
			n, err = tx.Count(storage.PrefixKey(storage.PrefixIndex, "embed"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r.do("history.drop", map[string]any{"conversation": "m"}, nil)
	if n := count(); n != 0 {
		t.Errorf("after dropping an in-memory conversation: %d embedding index keys left in its store", n)
	}
	if keys := embedIndexKeys(t, r); len(keys) != 0 {
		t.Errorf("after dropping a conversation moved to memory: %v left in the engine's store", keys)
	}
}
