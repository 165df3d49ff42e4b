package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// model is a scripted embedding model: a vector of dim components from
// each text's length, failing while down is set.
type model struct {
	name string
	dim  int

	mu    sync.Mutex
	down  error
	calls [][]string
}

func (m *model) Info() llm.Info { return llm.Info{Provider: "test", EmbedModel: m.name} }
func (m *model) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("no chat")
}
func (m *model) Embed(_ context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, req.Texts)
	if m.down != nil {
		return llm.EmbedResponse{}, m.down
	}
	out := make([][]float32, len(req.Texts))
	for i, t := range req.Texts {
		v := make([]float32, m.dim)
		for j := range v {
			v[j] = float32(len(t) + j)
		}
		out[i] = v
	}
	return llm.EmbedResponse{Vectors: out}, nil
}
func (m *model) set(err error) { m.mu.Lock(); m.down = err; m.mu.Unlock() }
func (m *model) texts() (calls, texts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.calls {
		texts += len(c)
	}
	return len(m.calls), texts
}

type rig struct {
	t     *testing.T
	st    *storage.Store
	clock *clock.Fixed
	m     *model
	q     *Queue
}

func newRig(t *testing.T, m *model) *rig {
	t.Helper()
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, st: st, clock: clock.NewFixed(t0), m: m}
	r.q = New(m, r.clock, nil)
	t.Cleanup(func() { r.q.Stop(); _ = st.Close() })
	if err := r.q.Register(r.source()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) source() Source {
	return Source{Name: "test", Markers: storage.PrefixKey("t/", "q"), Stores: func() []*storage.Store { return []*storage.Store{r.st} },
		Items: func(tx *storage.Tx, fn func(Item) error) error {
			return tx.Scan(storage.Prefix(storage.PrefixKey("t/", "item")), func(k, v []byte) error {
				id := storage.LastPart(k)
				return fn(Item{Key: k, Vector: storage.Key("t/", "vec", id), Marker: storage.Key("t/", "q", id), Text: string(v)})
			})
		}}
}

// write stores items id → text and marks them, in one transaction.
func (r *rig) write(texts map[string]string) {
	r.t.Helper()
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for id, text := range texts {
			if err := tx.Set(storage.Key("t/", "item", id), []byte(text)); err != nil {
				return err
			}
			if err := r.q.Mark(tx, storage.Key("t/", "q", id), Marker{Text: text, Item: storage.Key("t/", "item", id), Vector: storage.Key("t/", "vec", id)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) settle() { r.q.Settle(context.Background()) }

// vector reads an item's stored vector (ok false if it has none).
func (r *rig) vector(id string) (Vector, bool) {
	var v Vector
	var ok bool
	err := r.st.View(func(tx *storage.Tx) error {
		b, err := tx.Get(storage.Key("t/", "vec", id))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		v, ok = Decode(b), err == nil
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return v, ok
}

func (r *rig) markers() int {
	n := 0
	err := r.st.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(storage.PrefixKey("t/", "q"))
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

// TestVectorRecordCarriesModelAndDimension: a stored vector says which
// model made it; a raw vector stored before records reads as model unknown.
func TestVectorRecordCarriesModelAndDimension(t *testing.T) {
	v := Vector{Model: "nomic-embed-text", Values: []float32{0.5, -1, 2}}
	got := Decode(Encode(v))
	if got.Model != v.Model || got.Dim() != 3 || got.Values[1] != -1 {
		t.Errorf("round trip: %+v", got)
	}
	if m, d := Header(Encode(v)); m != v.Model || d != 3 {
		t.Errorf("header: %q %d", m, d)
	}
	legacy := Decode(search.EncodeVector([]float32{1, 2, 3, 4}))
	if legacy.Model != "" || legacy.Dim() != 4 || legacy.Values[3] != 4 {
		t.Errorf("a raw vector reads as %+v", legacy)
	}
}

// TestSearchSkipsVectorsOfAnotherDimension: vectors another model made
// (another dimension) are skipped, never compared, and the queue tells of
// them; the others are scored.
func TestSearchSkipsVectorsOfAnotherDimension(t *testing.T) {
	r := newRig(t, &model{name: "new", dim: 4})
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Set(storage.Key("t/", "vec", "a"), Encode(Vector{Model: "new", Values: []float32{1, 0, 0, 0}})); err != nil {
			return err
		}
		if err := tx.Set(storage.Key("t/", "vec", "b"), Encode(Vector{Model: "old", Values: []float32{1, 0}})); err != nil {
			return err
		}
		return tx.Set(storage.Key("t/", "vec", "c"), search.EncodeVector([]float32{1, 0, 0})) // legacy
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	var m Mismatch
	err = r.st.View(func(tx *storage.Tx) error {
		var err error
		m, err = Similarities(tx, storage.PrefixKey("t/", "vec"), []float32{1, 0, 0, 0}, func(k []byte, cos float64) {
			got[storage.LastPart(k)] = cos
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["a"] != 1 {
		t.Errorf("scored %v, want only a", got)
	}
	if m.Skipped != 2 || m.QueryDim != 4 {
		t.Errorf("mismatch %+v", m)
	}
	s := r.q.Stats()
	if s.Mismatched != 2 || !strings.Contains(s.Mismatch, "query vector has dimension 4") || !strings.Contains(s.Mismatch, "embeddings.reembed") {
		t.Errorf("stats: %d %q", s.Mismatched, s.Mismatch)
	}
}

// TestWritesAreEmbeddedInBatches: texts are sent at most BatchSize a call,
// each stored with the model's name, and their markers go.
func TestWritesAreEmbeddedInBatches(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	r := newRig(t, m)
	texts := map[string]string{}
	for i := range 70 {
		texts[fmt.Sprintf("%03d", i)] = fmt.Sprintf("text number %d", i)
	}
	r.write(texts)
	r.settle()
	calls, sent := m.texts()
	if sent != 70 || calls < 3 {
		t.Errorf("%d texts in %d calls, want 70 in at least 3", sent, calls)
	}
	for _, c := range m.calls {
		if len(c) > BatchSize {
			t.Errorf("a call of %d texts", len(c))
		}
	}
	v, ok := r.vector("042")
	if !ok || v.Model != "m1" || v.Dim() != 3 {
		t.Errorf("vector of 042: %+v %v", v, ok)
	}
	if n := r.markers(); n != 0 {
		t.Errorf("%d markers left", n)
	}
	if s := r.q.Stats(); s.Pending != 0 || s.Embedded != 70 || s.Dimension != 3 || s.Model != "m1" {
		t.Errorf("stats %+v", s)
	}
}

// TestSameTextIsEmbeddedOnce: the cache by text hash answers the second
// item with the same text, without a call.
func TestSameTextIsEmbeddedOnce(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	r := newRig(t, m)
	r.write(map[string]string{"a": "the same words"})
	r.settle()
	r.write(map[string]string{"b": "the same words"})
	r.settle()
	if _, sent := m.texts(); sent != 1 {
		t.Errorf("%d texts sent, want 1", sent)
	}
	if v, ok := r.vector("b"); !ok || v.Model != "m1" {
		t.Errorf("b: %+v %v", v, ok)
	}
	if s := r.q.Stats(); s.Cached != 1 || s.Embedded != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestFailedCallIsRetriedByTheEngineClock: a failed call leaves the texts
// pending and failed; nothing is sent again before the backoff passes on
// the engine clock; then the vectors are stored.
func TestFailedCallIsRetriedByTheEngineClock(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	m.set(&llm.Error{Provider: "test", Op: "embed", Transient: true, Msg: "connection refused"})
	r := newRig(t, m)
	r.write(map[string]string{"a": "one", "b": "two"})
	r.settle()
	s := r.q.Stats()
	if s.Pending != 2 || s.Failed != 2 || !strings.Contains(s.LastError, "connection refused") || !s.NextRetry.Equal(t0.Add(FirstBackoff)) {
		t.Fatalf("after the failure: %+v", s)
	}
	calls, _ := m.texts()
	// Not before the backoff.
	r.clock.Advance(FirstBackoff - time.Second)
	r.settle()
	if c, _ := m.texts(); c != calls {
		t.Errorf("%d calls before the backoff passed, want %d", c, calls)
	}
	m.set(nil)
	r.clock.Advance(time.Second)
	r.settle()
	if _, ok := r.vector("a"); !ok {
		t.Fatal("a has no vector after the retry")
	}
	s = r.q.Stats()
	if s.Pending != 0 || s.Failed != 0 || s.Retried != 2 || s.LastError != "" || !s.NextRetry.IsZero() {
		t.Errorf("after the retry: %+v", s)
	}
}

// TestRefusedTextDoesNotHoldUpTheOthers: a batch the model refuses is
// sent again one text at a time; only the text it cannot embed waits.
func TestRefusedTextDoesNotHoldUpTheOthers(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	poison := &poisonModel{model: m}
	st, _ := storage.Open(storage.Options{InMemory: true})
	r := &rig{t: t, st: st, clock: clock.NewFixed(t0), m: m}
	r.q = New(poison, r.clock, nil)
	t.Cleanup(func() { r.q.Stop(); _ = st.Close() })
	r.write(map[string]string{"a": "fine", "b": "poison", "c": "also fine"})
	r.settle()
	for _, id := range []string{"a", "c"} {
		if _, ok := r.vector(id); !ok {
			t.Errorf("%s has no vector", id)
		}
	}
	if s := r.q.Stats(); s.Pending != 1 || s.Failed != 1 {
		t.Errorf("stats %+v", s)
	}
}

type poisonModel struct{ *model }

func (p *poisonModel) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	for _, t := range req.Texts {
		if t == "poison" {
			return llm.EmbedResponse{}, &llm.Error{Provider: "test", Op: "embed", Status: 400, Msg: "input too long"}
		}
	}
	return p.model.Embed(ctx, req)
}

// TestPendingMarkersAreFoundAtOpen: texts a previous run left unembedded
// are queued again when the source registers.
func TestPendingMarkersAreFoundAtOpen(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	m.set(errors.New("down"))
	r := newRig(t, m)
	r.write(map[string]string{"a": "one"})
	r.settle()
	r.q.Stop()
	if n := r.markers(); n != 1 {
		t.Fatalf("%d markers after the failure, want 1", n)
	}
	// The next run.
	m.set(nil)
	r.q = New(m, r.clock, nil)
	if err := r.q.Register(r.source()); err != nil {
		t.Fatal(err)
	}
	r.settle()
	if _, ok := r.vector("a"); !ok || r.markers() != 0 {
		t.Errorf("after the restart: vector %v, %d markers", ok, r.markers())
	}
}

// TestReembedQueuesOtherModelsVectors: a reembed queues what is missing or
// another model's, leaves current vectors alone, and queues nothing the
// second time.
func TestReembedQueuesOtherModelsVectors(t *testing.T) {
	m := &model{name: "m2", dim: 3}
	r := newRig(t, m)
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for id, rec := range map[string][]byte{
			"old":    Encode(Vector{Model: "m1", Values: []float32{1, 2}}),
			"legacy": search.EncodeVector([]float32{1, 2, 3}),
			"cur":    Encode(Vector{Model: "m2", Values: []float32{1, 2, 3}}),
		} {
			if err := tx.Set(storage.Key("t/", "item", id), []byte("text of "+id)); err != nil {
				return err
			}
			if err := tx.Set(storage.Key("t/", "vec", id), rec); err != nil {
				return err
			}
		}
		return tx.Set(storage.Key("t/", "item", "none"), []byte("never embedded"))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.q.Reembed(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued != 3 || res.Sources[0].Current != 1 || res.Sources[0].Examined != 4 || res.Dimension != 3 {
		t.Errorf("first reembed: %+v", res)
	}
	r.settle()
	for _, id := range []string{"old", "legacy", "none", "cur"} {
		if v, ok := r.vector(id); !ok || v.Model != "m2" || v.Dim() != 3 {
			t.Errorf("%s: %+v", id, v)
		}
	}
	res, err = r.q.Reembed(context.Background(), "")
	if err != nil || res.Queued != 0 || res.Sources[0].Current != 4 {
		t.Errorf("second reembed: %+v %v", res, err)
	}
}

// TestSearchSeesWhatChangedSinceItsSnapshot: the vectors kept in memory
// are read afresh once a vector is stored or deleted (Touch), so a search
// never answers from a stale copy.
func TestSearchSeesWhatChangedSinceItsSnapshot(t *testing.T) {
	r := newRig(t, &model{name: "m1", dim: 3})
	prefix := storage.PrefixKey("t/", "vec")
	count := func() int {
		n := 0
		err := r.st.View(func(tx *storage.Tx) error {
			_, err := Similarities(tx, prefix, []float32{1, 1, 1}, func([]byte, float64) { n++ })
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r.write(map[string]string{"a": "one"})
	r.settle()
	if n := count(); n != 1 {
		t.Fatalf("%d vectors, want 1", n)
	}
	r.write(map[string]string{"b": "two two"})
	r.settle()
	// The new vector joined the copy in memory: no search reads them all
	// again for it.
	snapshots.Lock()
	kept := snapshots.m[snapKey{r.st, string(prefix)}]
	snapshots.Unlock()
	if kept == nil || kept.Len() != 2 {
		t.Errorf("the vectors in memory after one more was stored: %v", kept)
	}
	if n := count(); n != 2 {
		t.Errorf("%d vectors after the queue stored one more, want 2", n)
	}
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Delete(storage.Key("t/", "vec", "a")); err != nil {
			return err
		}
		return Touch(tx, prefix)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d vectors after a deletion, want 1", n)
	}
}

// TestNearestIsTheMostSimilarFirst: the n most similar by cosine, ties in
// key order, other dimensions skipped and counted.
func TestNearestIsTheMostSimilarFirst(t *testing.T) {
	r := newRig(t, &model{name: "m1", dim: 2})
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for id, v := range map[string][]float32{"a": {1, 0}, "b": {0, 1}, "c": {1, 1}, "d": {2, 0}, "e": {1, 0, 0}} {
			if err := tx.Set(storage.Key("t/", "vec", id), Encode(Vector{Model: "m1", Values: v})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = r.st.View(func(tx *storage.Tx) error {
		got, m, err := Nearest(tx, storage.PrefixKey("t/", "vec"), []float32{1, 0}, 3)
		if err != nil {
			return err
		}
		var keys []string
		for _, g := range got {
			keys = append(keys, storage.LastPart(g.Key))
		}
		if strings.Join(keys, ",") != "a,d,c" || got[0].Cosine < 0.9999 || m.Skipped != 1 {
			t.Errorf("nearest %v (%+v), mismatch %+v", keys, got, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScriptedRetryWaitsForAStepAtItsTime: a failure under a pinned clock
// (a batch step's at) is retried only at the end of a step whose time has
// come, never between steps when the clock reads the wall's time, so that
// a script's output repeats.
func TestScriptedRetryWaitsForAStepAtItsTime(t *testing.T) {
	m := &model{name: "m1", dim: 3}
	m.set(&llm.Error{Provider: "test", Op: "embed", Transient: true, Msg: "down"})
	wall := clock.NewFixed(t0.Add(time.Hour))
	clk := clock.NewPinnable(wall)
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, st: st, clock: wall, m: m}
	r.q = New(m, clk, nil)
	t.Cleanup(func() { r.q.Stop(); _ = st.Close() })
	clk.Pin(t0)
	r.write(map[string]string{"a": "one"})
	r.settle()
	calls, _ := m.texts()
	m.set(nil)
	// Between steps: the wall's time is past the retry's, but no retry.
	clk.Unpin()
	r.settle()
	r.q.Kick()
	if c, _ := m.texts(); c != calls {
		t.Fatalf("retried between steps (%d calls, want %d)", c, calls)
	}
	// A step before the retry's time.
	clk.Pin(t0.Add(FirstBackoff - time.Second))
	r.settle()
	if c, _ := m.texts(); c != calls {
		t.Fatalf("retried before its time (%d calls, want %d)", c, calls)
	}
	// The step at its time.
	clk.Pin(t0.Add(FirstBackoff))
	r.settle()
	if _, ok := r.vector("a"); !ok {
		t.Error("not retried at the step at its time")
	}
}
