package memory_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	embedq "github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/storage"
)

// The memory checker of engram check (issue 13, item 2: "index vs
// records"): every test starts from a store written through the actions,
// damages one thing directly in the store, and expects exactly the problem
// naming it.

// checkedRig is a rig whose stores were written through the actions, with
// the updates that rewrite indexes: soft and hard forgets, evictions, a
// shrink, a share, ids with dots, tags and episodes.
func checkedRig(t testing.TB) *rig { return checkedRigWith(t, rigOptions{}) }

// checkedRigWith is checkedRig with options (an embedding model).
func checkedRigWith(t testing.TB, o rigOptions) *rig {
	r := newRigWith(t, o)
	r.configure(map[string]any{"store": "small", "type": "working", "max_items": 4, "on_full": "evict"})
	for i, imp := range []float64{0.5, 0.2, 0.9, 0.1, 0.7, 0.05, 0.6} {
		r.memorize("small", it(fmt.Sprintf("note.%d", i), fmt.Sprintf("the flight to Lisbon number %d is booked", i),
			"importance", imp, "tags", []string{"travel", fmt.Sprintf("t%d", i%2)}))
	}
	r.memorize("working", it("w1", "Maria likes green tea", "tags", []string{"food"}))
	r.memorize("working", it("w2", "Tom moved to Berlin", "tags", []string{"people"}))
	r.memorize("working", it("w3", "the invoice is due on Friday"))
	r.forget("working", "items tagged food", "soft")
	r.forget("working", "item w2", "hard")
	r.forget("working", "item w1", "hard") // erasing an item that was soft-forgotten
	r.memorize("episodic", it("e1", "checked in at the hotel", "metadata", map[string]any{"episode": "trip-7"}))
	r.memorize("episodic", it("e2", "dinner by the river", "metadata", map[string]any{"episode": 12}))
	r.memorize("episodic", it("e3", "the train was late", "metadata", map[string]any{"episode": "trip-7"}))
	r.forget("episodic", "episode trip-7", "soft")
	r.configure(map[string]any{"store": "small", "max_items": 3})
	r.Do(agent, "memory.share", map[string]any{"store": "small", "principal": "bob", "permissions": []string{"read"}}, nil)
	return r
}

// check runs every checker and returns the memory checker's problems.
func (r *rig) check() []string {
	r.T.Helper()
	found, err := r.e.Env().Check(context.Background())
	if err != nil {
		r.T.Fatal(err)
	}
	return found["memory"]
}

// damage changes the store directly, as a bug or a broken disk would.
func (r *rig) damage(fn func(tx *storage.Tx) error) {
	r.T.Helper()
	if err := r.e.Env().Store.Update(context.Background(), fn); err != nil {
		r.T.Fatal(err)
	}
}

// changeState rewrites fields of a store's record.
func (r *rig) changeState(store string, fields map[string]any) {
	r.T.Helper()
	key := storage.Key(storage.PrefixMemory, "store", store)
	r.damage(func(tx *storage.Tx) error {
		var st map[string]any
		if err := tx.GetJSON(key, &st); err != nil {
			return err
		}
		for k, v := range fields {
			st[k] = v
		}
		return tx.SetJSON(key, st)
	})
}

// wantProblems fails unless the problems are exactly n, each holding
// every one of parts.
func wantProblems(t *testing.T, problems []string, n int, parts ...string) {
	t.Helper()
	if len(problems) != n {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), n, strings.Join(problems, "\n"))
	}
	for _, p := range problems {
		for _, part := range parts {
			if !strings.Contains(p, part) {
				t.Errorf("problem %q does not say %q", p, part)
			}
		}
	}
}

func TestCheckFindsNothingWrongInAStoreWrittenByTheActions(t *testing.T) {
	r := checkedRig(t)
	if c := r.capacity("small"); c.Deleted == 0 {
		t.Fatalf("small evicted nothing (%+v): the rig does not exercise eviction", c)
	}
	if got := r.check(); len(got) != 0 {
		t.Fatalf("a healthy store has problems:\n%s", strings.Join(got, "\n"))
	}
	// The checker follows the test-only Check, which reads the postings
	// search writes without the checker's help.
	for _, s := range []string{"small", "working", "episodic"} {
		r.checkCounters(s)
	}
}

func TestCheckFindsAnIndexEntryWithoutItsItem(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixIndex, "memory", "working", "tag", "travel", "ghost"), nil)
	})
	wantProblems(t, r.check(), 1, "memory store working", "item ghost does not exist", "tag/travel/ghost")
}

func TestCheckFindsAnItemDeletedWithItsIndexEntriesLeft(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Delete(storage.Key(storage.PrefixMemory, "item", "working", "w3"))
	})
	// One problem for the item, not one per index entry and posting.
	wantProblems(t, r.check(), 1, "memory store working", "item w3 does not exist", "more keys")
}

func TestCheckFindsAPostingWithoutItsItem(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixIndex, "memory/episodic", "t", "hotel", "ghost.v2.-1.3"), nil)
	})
	wantProblems(t, r.check(), 1, "memory store episodic", "item ghost.v2 does not exist")
}

func TestCheckFindsAnItemMissingFromItsRecencyIndex(t *testing.T) {
	r := checkedRig(t)
	keys := r.keysUnder(string(storage.PrefixKey(storage.PrefixIndex, "memory", "working", "time")))
	if len(keys) != 1 || !strings.HasSuffix(keys[0], "/w3") {
		t.Fatalf("working's live time index is %q, want w3's entry only", keys)
	}
	r.damage(func(tx *storage.Tx) error { return tx.Delete([]byte(keys[0])) })
	wantProblems(t, r.check(), 1, "memory store working", "item w3 is missing its index entry", keys[0])
}

func TestCheckFindsAnItemMissingAPosting(t *testing.T) {
	r := checkedRig(t)
	keys := r.keysUnder(string(storage.PrefixKey(storage.PrefixIndex, "memory/working", "t", "invoic")))
	if len(keys) != 1 {
		t.Fatalf("postings of invoic: %q", keys)
	}
	r.damage(func(tx *storage.Tx) error { return tx.Delete([]byte(keys[0])) })
	wantProblems(t, r.check(), 1, "item w3 is missing its index entry", keys[0])
}

func TestCheckFindsAStaleIndexEntry(t *testing.T) {
	r := checkedRig(t)
	// The type index says w3 is a preference; the item says it is a fact.
	r.damage(func(tx *storage.Tx) error {
		if err := tx.Delete(storage.Key(storage.PrefixIndex, "memory", "working", "type", "fact", "w3")); err != nil {
			return err
		}
		return tx.Set(storage.Key(storage.PrefixIndex, "memory", "working", "type", "preference", "w3"), nil)
	})
	got := r.check()
	wantProblems(t, got, 2, "memory store working", "w3")
	if !strings.Contains(got[0], "missing its index entry") || !strings.Contains(got[0], "type/fact/w3") ||
		!strings.Contains(got[1], "stale") || !strings.Contains(got[1], "type/preference/w3") {
		t.Errorf("problems:\n%s", strings.Join(got, "\n"))
	}
}

func TestCheckFindsAForgottenItemStillInTheLiveIndexes(t *testing.T) {
	r := checkedRig(t)
	// e1 is soft-forgotten: its entries are under del/. Mark the item live
	// again without moving them.
	key := storage.Key(storage.PrefixMemory, "item", "episodic", "e1")
	r.damage(func(tx *storage.Tx) error {
		var it map[string]any
		if err := tx.GetJSON(key, &it); err != nil {
			return err
		}
		it["deleted"] = false
		return tx.SetJSON(key, it)
	})
	got := r.check()
	// The counters now disagree too, as they should: the item says live.
	var stale, counts int
	for _, p := range got {
		switch {
		case strings.Contains(p, "e1") && (strings.Contains(p, "stale") || strings.Contains(p, "missing its index entry")):
			stale++
		case strings.Contains(p, "counts"):
			counts++
		default:
			t.Errorf("unexpected problem %q", p)
		}
	}
	if stale == 0 || counts == 0 {
		t.Errorf("want stale entries of e1 and counters; got:\n%s", strings.Join(got, "\n"))
	}
}

func TestCheckFindsAWrongItemCount(t *testing.T) {
	r := checkedRig(t)
	r.changeState("working", map[string]any{"item_count": 12})
	wantProblems(t, r.check(), 1, "memory store working: counts 12 live items, holds 1")
}

func TestCheckFindsAWrongTokenUsage(t *testing.T) {
	r := checkedRig(t)
	r.changeState("small", map[string]any{"token_usage": 1})
	wantProblems(t, r.check(), 1, "memory store small: counts 1 tokens of live items, holds")
}

func TestCheckFindsAWrongTermTotal(t *testing.T) {
	r := checkedRig(t)
	r.changeState("episodic", map[string]any{"total_length": 1})
	wantProblems(t, r.check(), 1, "memory store episodic: counts 1 terms of indexed items, holds")
}

func TestCheckFindsAnUnreadableItem(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixMemory, "item", "working", "w3"), []byte("{not json"))
	})
	wantProblems(t, r.check(), 1, "memory store working", `"memory/item/working/w3"`, "unreadable")
}

func TestCheckFindsAnUnreadableStoreRecord(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixMemory, "store", "small"), []byte("]"))
	})
	wantProblems(t, r.check(), 1, `"memory/store/small"`, "unreadable")
}

func TestCheckFindsItemsOfAStoreThatDoesNotExist(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error { return tx.Delete(storage.Key(storage.PrefixMemory, "store", "small")) })
	wantProblems(t, r.check(), 1, "memory store small: has items, index entries, postings but no store record")
}

func TestCheckFindsAnEmbeddingWithoutItsItem(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixMemory, "vec", "working", "w2"), []byte{0, 0, 128, 63})
	})
	wantProblems(t, r.check(), 1, "memory store working", "item w2 does not exist", "memory/vec/working/w2")
}

func TestCheckFindsAnImpLowKeyOfNoLiveItem(t *testing.T) {
	r := checkedRig(t)
	r.changeState("small", map[string]any{"imp_low": []string{"00000/x/ghost"}})
	wantProblems(t, r.check(), 1, "memory store small", `imp_low names "00000/x/ghost", which is not a live item`)
}

func TestCheckFindsALiveItemBelowTheBottomOfTheImpIndex(t *testing.T) {
	r := checkedRig(t)
	// Every live item of working is now below imp_from and not in
	// imp_low: eviction would never reach it.
	r.changeState("working", map[string]any{"imp_from": "99999", "imp_low": nil})
	wantProblems(t, r.check(), 1, "memory store working", "item w3 is below imp_from")
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"store": "big", "type": "episodic"})
	r.fill("big", 2000, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.e.Env().Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// BenchmarkCheck checks a store of 10,000 items (and 1,000 and 50,000 to
// see how it grows):
//
//	go test ./core/memory -run '^$' -bench BenchmarkCheck -benchtime 3x
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := newRig(b)
			r.configure(map[string]any{"store": "big", "type": "episodic"})
			r.fill("big", n, nil)
			b.ResetTimer()
			for b.Loop() {
				if got := r.check(); len(got) != 0 {
					b.Fatal(got)
				}
			}
		})
	}
}

// Issue 18: the embedding keys of a memory store.

func vecKey(store, id string) []byte  { return storage.Key(storage.PrefixMemory, "vec", store, id) }
func embqKey(store, id string) []byte { return storage.Key(storage.PrefixMemory, "embq", store, id) }
func itemKey(store, id string) []byte { return storage.Key(storage.PrefixMemory, "item", store, id) }

// TestCheckFindsNothingWrongWithEmbeddingsStoredAndWaiting: the stores of
// checkedRig written with an embedding model (vectors, cached vectors,
// hard forgets that drop them) and an item still waiting for its vector
// while the model is down check clean: the memory's checker and the
// embedding keys' both.
func TestCheckFindsNothingWrongWithEmbeddingsStoredAndWaiting(t *testing.T) {
	var down atomic.Bool
	model := &llmtest.Scripted{Model: "m-embed", EmbedFunc: func(req llm.EmbedRequest) ([][]float32, error) {
		if down.Load() {
			return nil, &llm.Error{Provider: "scripted", Op: "embed", Transient: true, Msg: "connection refused"}
		}
		out := make([][]float32, len(req.Texts))
		for i, t := range req.Texts {
			out[i] = []float32{float32(len(t)), 1}
		}
		return out, nil
	}}
	r := checkedRigWith(t, rigOptions{llm: model})
	q := r.e.Env().Embeddings()
	q.Settle(context.Background())
	down.Store(true)
	r.memorize("working", it("w9", "waiting for the model"))
	q.Settle(context.Background())
	if s := q.Stats(); s.Pending != 1 || s.Embedded == 0 {
		t.Fatalf("the rig does not hold both stored and waiting embeddings: %+v", s)
	}
	found, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"memory", "embeddings"} {
		if p := found[name]; len(p) > 0 {
			t.Errorf("%s: a healthy store has problems:\n%s", name, strings.Join(p, "\n"))
		}
	}
}

func TestCheckFindsAPendingEmbeddingOfAnItemThatDoesNotExist(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.SetJSON(embqKey("working", "w2"), embedq.Marker{Text: "Tom moved to Berlin", Item: itemKey("working", "w2"), Vector: vecKey("working", "w2")})
	})
	wantProblems(t, r.check(), 1, "memory store working", "item w2 does not exist", "memory/embq/working/w2")
}

func TestCheckFindsAnUnreadablePendingEmbedding(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error { return tx.Set(embqKey("working", "w3"), []byte("{nope")) })
	wantProblems(t, r.check(), 1, "memory store working", "pending embedding", "of item w3: unreadable")
}

func TestCheckFindsAPendingEmbeddingNamingAnotherItem(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.SetJSON(embqKey("working", "w3"), embedq.Marker{Text: "x", Item: itemKey("small", "note.6"), Vector: vecKey("small", "note.6")})
	})
	wantProblems(t, r.check(), 1, "memory store working", "pending embedding", "of item w3: names item")
}

func TestCheckFindsAnEmbeddingWhoseStatedDimensionIsNotItsLength(t *testing.T) {
	r := checkedRig(t)
	// Model "abc", dimension 4 stated, 3 components: 24 bytes, which
	// read as a raw vector of 6 when not held to the record.
	b := embedq.Encode(embedq.Vector{Model: "abc", Values: []float32{1, 2, 3}})
	binary.LittleEndian.PutUint32(b[4+1+3:], 4)
	r.damage(func(tx *storage.Tx) error { return tx.Set(vecKey("working", "w3"), b) })
	wantProblems(t, r.check(), 1, "memory store working", "embedding", "of item w3 is unreadable", "states dimension 4")
}

func TestCheckFindsPendingEmbeddingsOfAStoreThatDoesNotExist(t *testing.T) {
	r := checkedRig(t)
	r.damage(func(tx *storage.Tx) error {
		return tx.SetJSON(embqKey("nostore", "x"), embedq.Marker{Text: "x", Item: itemKey("nostore", "x"), Vector: vecKey("nostore", "x")})
	})
	wantProblems(t, r.check(), 1, "memory store nostore: has pending embeddings but no store record")
}
