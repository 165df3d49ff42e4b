package history_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// Issue 13 item 2: engram check verifies index vs records. These tests
// check the history's part: a store written through the actions checks
// clean, and each kind of damage is reported once, naming what is wrong.

// historyProblems runs engram check's checkers and returns the history's.
func historyProblems(t testing.TB, r *rig) []string {
	t.Helper()
	r.h.Settle()
	res, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return res["history"]
}

// writeMix writes a realistic mix through the actions: evictions, deletes
// in the buffer and in the archive, a shrunk buffer, a token budget, a
// share and a revoke, and conversations moved between backends.
func writeMix(t *testing.T, r *rig, durable bool) {
	r.configure(map[string]any{"buffer_size": 4})
	for i := range 12 {
		r.write("default", speakerOf(i), fmt.Sprintf("Maria booked the Lisbon trip number %d for $%d on day %d.", i, 100+i, i%28))
	}
	r.do("history.delete", map[string]any{"utterance_index": 2}, nil)  // archived
	r.do("history.delete", map[string]any{"utterance_index": 10}, nil) // buffered
	r.configure(map[string]any{"buffer_size": 2, "max_tokens": 200})
	r.write("default", "user", "The budget review moved to Thursday.")

	for i := range 3 {
		r.write("shared", speakerOf(i), fmt.Sprintf("Tom sends invoice %d to Aisha.", i))
	}
	r.do("history.share", map[string]any{"conversation": "shared", "principal": "bob", "permissions": []string{"read"}}, nil)
	r.do("history.share", map[string]any{"conversation": "shared", "principal": "carol", "permissions": []string{"read", "write"}}, nil)
	r.do("history.revoke", map[string]any{"conversation": "shared", "principal": "bob"}, nil)

	if durable {
		r.configure(map[string]any{"conversation": "moved", "buffer_size": 2})
		for i := range 5 {
			r.write("moved", speakerOf(i), fmt.Sprintf("Jonas ships order %d from Osaka.", i))
		}
		r.do("history.backend", map[string]any{"conversation": "moved", "backend": "in-memory"}, nil)
		r.write("moved", "user", "And one more from Oslo.")
		r.do("history.backend", map[string]any{"conversation": "moved", "backend": "durable"}, nil)
		r.write("moved", "assistant", "Noted: Oslo.")

		r.configure(map[string]any{"conversation": "memory", "buffer_size": 2, "backend": "in-memory"})
		for i := range 4 {
			r.write("memory", speakerOf(i), fmt.Sprintf("Li pays rent %d in Lima.", i))
		}
	}
}

// TestCheckFindsNothingWrongInAHealthyDurableStore: a durable store written
// through the actions, with a conversation in the in-memory backend, has
// no history problems.
func TestCheckFindsNothingWrongInAHealthyDurableStore(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir()})
	writeMix(t, r, true)
	if p := historyProblems(t, r); len(p) > 0 {
		t.Errorf("a healthy store has problems:\n  %s", strings.Join(p, "\n  "))
	}
}

// TestCheckFindsNothingWrongInAHealthyInMemoryStore: the same in an engram
// running in memory.
func TestCheckFindsNothingWrongInAHealthyInMemoryStore(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	writeMix(t, r, false)
	if p := historyProblems(t, r); len(p) > 0 {
		t.Errorf("a healthy store has problems:\n  %s", strings.Join(p, "\n  "))
	}
}

// TestCheckCountsPendingFoldsAsCoveringTheirEvictions: evictions not yet
// folded into the summary (a crash right after the write) are not a
// problem: their fold keys stand for them.
func TestCheckCountsPendingFoldsAsCoveringTheirEvictions(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{holdFolds: true})
	r.configure(map[string]any{"buffer_size": 2})
	for i := range 6 {
		r.write("default", speakerOf(i), fmt.Sprintf("Sofia moved meeting %d.", i))
	}
	if p := historyProblems(t, r); len(p) > 0 {
		t.Errorf("pending folds are reported:\n  %s", strings.Join(p, "\n  "))
	}
}

// damageRig is conversation default with utterances 0-5, 0-2 evicted into
// the summary, 3-5 in a buffer of 3, in an engram running in memory.
func damageRig(t *testing.T) *rig {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 3})
	for i := range 6 {
		r.write("default", speakerOf(i), fmt.Sprintf("Grace will confirm the Berlin order %d of $%d.", i, 500+i))
	}
	if p := historyProblems(t, r); len(p) > 0 {
		t.Fatalf("before any damage: %v", p)
	}
	return r
}

func uttKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "utt", c, storage.Uint64(uint64(i)))
}
func convKey(c string) []byte { return storage.Key(storage.PrefixHistory, "conv", c) }
func vecKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "vec", c, storage.Uint64(uint64(i)))
}
func embqKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "embq", c, storage.Uint64(uint64(i)))
}

// postingsOf lists the search posting keys of utterance i of c.
func postingsOf(tx *storage.Tx, c string, i int) ([][]byte, error) {
	var out [][]byte
	err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "history", "t", c)), func(k []byte) error {
		if strings.HasPrefix(storage.LastPart(k), storage.Uint64(uint64(i))+".") {
			out = append(out, k)
		}
		return nil
	})
	return out, err
}

// editConv changes conversation c's state as a JSON object.
func editConv(tx *storage.Tx, c string, fn func(m map[string]any)) error {
	var m map[string]any
	if err := tx.GetJSON(convKey(c), &m); err != nil {
		return err
	}
	fn(m)
	return tx.SetJSON(convKey(c), m)
}

// TestCheckFindsEachKindOfDamageOnce: each damage, done directly to the
// store, is reported by exactly one problem that names it.
func TestCheckFindsEachKindOfDamageOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(tx *storage.Tx) error
		want   []string
	}{
		{"a delete that left the utterance's postings", func(tx *storage.Tx) error {
			var u history.Utterance
			if err := tx.GetJSON(uttKey("default", 1), &u); err != nil {
				return err
			}
			_, dl := text.TermCounts(u.Text)
			if err := tx.Delete(uttKey("default", 1)); err != nil {
				return err
			}
			return editConv(tx, "default", func(m map[string]any) {
				m["docs"] = m["docs"].(float64) - 1
				m["doc_length"] = m["doc_length"].(float64) - float64(dl)
			})
		}, []string{"conversation default:", "search postings name utterance 1, which does not exist"}},
		{"an utterance missing one of its postings", func(tx *storage.Tx) error {
			keys, err := postingsOf(tx, "default", 4)
			if err != nil || len(keys) == 0 {
				return fmt.Errorf("no postings of utterance 4 (%v)", err)
			}
			return tx.Delete(keys[0])
		}, []string{"utterance 4 is missing its search posting for term"}},
		{"a posting naming no utterance", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixIndex, "history", "t", "default", "zebra", storage.Uint64(99)+".u1.5"), nil)
		}, []string{"1 search postings name utterance 99, which does not exist"}},
		{"a stale posting of an utterance", func(tx *storage.Tx) error {
			keys, err := postingsOf(tx, "default", 4)
			if err != nil || len(keys) == 0 {
				return fmt.Errorf("no postings of utterance 4 (%v)", err)
			}
			return tx.Set(storage.Key(storage.PrefixIndex, "history", "t", "default", "zebra", storage.LastPart(keys[0])), nil)
		}, []string{"utterance 4 has 1 search postings its text does not make"}},
		{"a posting whose speaker is not the utterance's", func(tx *storage.Tx) error {
			keys, err := postingsOf(tx, "default", 4) // said by the user
			if err != nil || len(keys) == 0 {
				return fmt.Errorf("no postings of utterance 4 (%v)", err)
			}
			parts := storage.SplitKey(storage.PrefixIndex, keys[0])
			return tx.Set(storage.Key(storage.PrefixIndex, "history", "t", "default", parts[3],
				strings.Replace(parts[4], ".u", ".a", 1)), nil)
		}, []string{"does not match utterance 4"}},
		{"a vector naming no utterance", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "vec", "default", storage.Uint64(77)), []byte{0, 0, 128, 63})
		}, []string{"names utterance 77, which does not exist"}},
		{"a wrong token total", func(tx *storage.Tx) error {
			return editConv(tx, "default", func(m map[string]any) { m["total_tokens"] = m["total_tokens"].(float64) + 5 })
		}, []string{"tokens in its buffer, holds"}},
		{"a wrong buffer size", func(tx *storage.Tx) error {
			return editConv(tx, "default", func(m map[string]any) { m["size"] = 2.0 })
		}, []string{"counts 2 utterances in its buffer, holds 3"}},
		{"a wrong eviction count", func(tx *storage.Tx) error {
			return editConv(tx, "default", func(m map[string]any) { m["evicted_count"] = 4.0 })
		}, []string{"counts 4 evictions, its summary covers 3 and 0 are pending"}},
		{"an unreadable utterance", func(tx *storage.Tx) error {
			return tx.Set(uttKey("default", 4), []byte("{not json"))
		}, []string{"utterance 4", "is unreadable"}},
		{"an unreadable conversation state", func(tx *storage.Tx) error {
			return tx.Set(convKey("default"), []byte("[1, 2"))
		}, []string{"its state", "is unreadable"}},
		{"an unreadable summary", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "sum", "default"), []byte("nope"))
		}, []string{"its summary", "is unreadable"}},
		{"an archived utterance that says it is buffered", func(tx *storage.Tx) error {
			var u history.Utterance
			if err := tx.GetJSON(uttKey("default", 1), &u); err != nil {
				return err
			}
			u.Evicted, u.EvictedAt = false, nil
			return tx.SetJSON(uttKey("default", 1), u)
		}, []string{"utterance 1 says it is in the buffer, but the buffer starts at 3"}},
		{"a buffered utterance that says it is evicted", func(tx *storage.Tx) error {
			var u history.Utterance
			if err := tx.GetJSON(uttKey("default", 5), &u); err != nil {
				return err
			}
			u.Evicted = true
			return tx.SetJSON(uttKey("default", 5), u)
		}, []string{"utterance 5 says it is evicted, but it is in the buffer"}},
		{"a pending fold of a buffered utterance", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "fold", "default", storage.Uint64(4)),
				[]byte(`{"batch": 4, "limit": 200, "at": "2025-11-05T10:00:00Z", "speaker": "user", "text": "x"}`))
		}, []string{"pending fold of utterance 4, which was not evicted"}},
		{"a grant of an unknown permission", func(tx *storage.Tx) error {
			return editConv(tx, "default", func(m map[string]any) {
				m["grants"] = []map[string]any{{"principal_type": "agent", "principal_id": "bob", "permissions": []string{"read", "fly"}}}
			})
		}, []string{"the grant to bob holds an unknown permission \"fly\""}},
		{"a conversation without its where record", func(tx *storage.Tx) error {
			return tx.Delete(storage.Key(storage.PrefixHistory, "where", "default"))
		}, []string{"no where record names its backend"}},
		{"a where record without its conversation", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "where", "nowhere"), []byte(history.BackendInMemory))
		}, []string{"conversation nowhere:", "which holds no conversation nowhere"}},
		{"a where record naming no backend", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "where", "default"), []byte("floppy"))
		}, []string{"names no backend", "floppy"}},
		{"a summary of a conversation with no state, named like another", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixHistory, "sum", "default2"), []byte(`{"extractive": {"parts": []}}`))
		}, []string{"conversation default2:", "holds its summary", "but no state"}},
		{"postings of a conversation with no state, named like another", func(tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixIndex, "history", "t", "default2", "zebra", storage.Uint64(0)+".u1.5"), nil)
		}, []string{"conversation default2:", "holds its search postings", "but no state"}},
		// Issue 18: the embedding keys.
		{"a vector record whose stated dimension is not its length", func(tx *storage.Tx) error {
			// Model "abc", dimension 4 stated, 3 components: 24 bytes, which
			// read as a raw vector of 6 when not held to the record.
			b := embed.Encode(embed.Vector{Model: "abc", Values: []float32{1, 2, 3}})
			binary.LittleEndian.PutUint32(b[4+1+3:], 4)
			return tx.Set(vecKey("default", 4), b)
		}, []string{"vector of utterance 4 is unreadable", "states dimension 4"}},
		{"a vector that is not whole float32s", func(tx *storage.Tx) error {
			return tx.Set(vecKey("default", 4), []byte{1, 2, 3})
		}, []string{"vector of utterance 4 is unreadable", "3 bytes"}},
		{"a pending embedding of an utterance that does not exist", func(tx *storage.Tx) error {
			return tx.SetJSON(embqKey("default", 77), embed.Marker{Text: "gone", Item: uttKey("default", 77), Vector: vecKey("default", 77)})
		}, []string{"conversation default:", "pending embedding", "names utterance 77, which does not exist"}},
		{"an unreadable pending embedding", func(tx *storage.Tx) error {
			return tx.Set(embqKey("default", 4), []byte("{nope"))
		}, []string{"pending embedding of utterance 4: unreadable"}},
		{"a pending embedding naming another utterance's keys", func(tx *storage.Tx) error {
			return tx.SetJSON(embqKey("default", 4), embed.Marker{Text: "x", Item: uttKey("default", 5), Vector: vecKey("default", 5)})
		}, []string{"pending embedding of utterance 4: names item"}},
		{"pending embeddings of a conversation with no state", func(tx *storage.Tx) error {
			return tx.SetJSON(embqKey("ghost", 0), embed.Marker{Text: "boo", Item: uttKey("ghost", 0), Vector: vecKey("ghost", 0)})
		}, []string{"conversation ghost:", "holds its pending embeddings", "but no state"}},
		{"utterances of a conversation with no state", func(tx *storage.Tx) error {
			return tx.SetJSON(uttKey("ghost", 0), history.Utterance{Conversation: "ghost", Speaker: "user", Text: "boo"})
		}, []string{"conversation ghost:", "holds its utterances", "but no state"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := damageRig(t)
			if err := r.e.Env().Store.Update(context.Background(), tc.damage); err != nil {
				t.Fatal(err)
			}
			p := historyProblems(t, r)
			if len(p) != 1 {
				t.Fatalf("want one problem, got %d:\n  %s", len(p), strings.Join(p, "\n  "))
			}
			for _, w := range tc.want {
				if !strings.Contains(p[0], w) {
					t.Errorf("the problem %q does not say %q", p[0], w)
				}
			}
		})
	}
}

// TestCheckStopsWhenCancelled: a cancelled check returns the context's
// error instead of going on.
func TestCheckStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	r := damageRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.e.Env().Check(ctx); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("a cancelled check returned %v", err)
	}
}

// BenchmarkCheckHistory checks a conversation of n utterances (50 in the
// buffer, the rest evicted into the summary and the archive, each with its
// search postings).
func BenchmarkCheckHistory(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := newRig(b)
			c := newCorpus(b)
			for i := range n {
				if _, err := r.h.Write(context.Background(), r.call(), history.WriteRequest{Speaker: speakerOf(i), Text: c.next()}); err != nil {
					b.Fatal(err)
				}
			}
			r.h.Settle()
			b.ResetTimer()
			for b.Loop() {
				res, err := r.e.Env().Check(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if len(res["history"]) > 0 {
					b.Fatal(res["history"])
				}
			}
		})
	}
}

// What a kill can leave and the history reads correctly is not damage (a
// review saw engram check exit 3 on such stores): a durable conversation
// written before its first write also recorded its backend (it reads from
// the durable default), and the copy an interrupted move leaves in the
// backend it was leaving or entering (never read; the next move into that
// backend clears it).
func TestCheckAcceptsWhatAKillLeavesBehind(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir()})
	r.write("old", "user", "written before the fix")
	r.write("moved", "user", "moved to memory")
	r.Do(enginetest.Who{}, "history.backend", `{"conversation": "moved", "backend": "in-memory"}`, nil)
	env := r.e.Env()
	err := env.Store.Update(t.Context(), func(tx *storage.Tx) error {
		if err := tx.Delete(history.WhereKey("old")); err != nil {
			return err
		}
		// A stray copy of "moved" in the durable store: its state only,
		// as an interrupted move's first chunk may leave it.
		return tx.Set(storage.Key(storage.PrefixHistory, "conv", "moved"), []byte(`{"conversation": "moved", "backend": "durable", "buffer_size": 50}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := historyProblems(t, r); len(p) > 0 {
		t.Errorf("problems in a store a kill could leave:\n  %s", strings.Join(p, "\n  "))
	}
}

// TestCheckFindsNothingWrongWithEmbeddingsStoredAndWaiting: a store
// written with an embedding model, some texts embedded (vectors and cached
// vectors, moved between backends with their conversation) and some still
// waiting (their pending markers) while the model is down, checks clean:
// the history's and the embedding keys' checkers both.
func TestCheckFindsNothingWrongWithEmbeddingsStoredAndWaiting(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{dir: t.TempDir(), llm: flaky(&down)})
	writeMix(t, r, true)
	r.h.Settle()
	down.Store(true)
	r.write("default", "user", "This one waits for the model.")
	r.write("memory", "user", "So does this one, in memory.")
	r.h.Settle()
	if e := r.embeddings(); e.Pending != 2 || e.Embedded == 0 {
		t.Fatalf("the rig does not hold both stored and waiting embeddings: %+v", e)
	}
	res, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"history", "embeddings"} {
		if p := res[name]; len(p) > 0 {
			t.Errorf("%s: a healthy store has problems:\n  %s", name, strings.Join(p, "\n  "))
		}
	}
}

// TestCheckNamesAnUnreadableCachedVector: engram check's embeddings
// checker names a cached vector (keyed by the hash of a model and a text)
// that does not read.
func TestCheckNamesAnUnreadableCachedVector(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	r := newRigWith(t, rigOptions{llm: flaky(&down)})
	r.write("c", "user", "the budget for the trip")
	r.h.Settle()
	key := embed.CacheKey("flaky-embed", "the budget for the trip")
	err := r.e.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
		if ok, err := tx.Has(key); err != nil || !ok {
			return fmt.Errorf("the text's vector is not cached (%v)", err)
		}
		return tx.Set(key, []byte("not a vector"))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := res["embeddings"]; len(p) != 1 || !strings.Contains(p[0], "cached vector") || !strings.Contains(p[0], string(key)) {
		t.Errorf("embeddings problems: %q", p)
	}
	if p := res["history"]; len(p) > 0 {
		t.Errorf("history problems: %q", p)
	}
}
