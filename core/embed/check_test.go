package embed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/storage"
)

// Issue 18, embedding housekeeping: engram check knows the keys the
// embedding queue keeps.

// TestCheckRecordRejectsARecordWhoseDimensionDiffersFromItsLength: a
// record whose stated dimension is not its length is damage, even when
// its bytes would read as a raw vector (Decode's fallback, which a search
// would then compare); whole records and raw vectors pass.
func TestCheckRecordRejectsARecordWhoseDimensionDiffersFromItsLength(t *testing.T) {
	good := Encode(Vector{Model: "abc", Values: []float32{1, 2, 3}})
	if err := CheckRecord(good); err != nil {
		t.Errorf("a whole record: %v", err)
	}
	if err := CheckRecord(search.EncodeVector([]float32{1, 2})); err != nil {
		t.Errorf("a raw vector: %v", err)
	}
	// Model "abc", stated dimension 4, three components: 24 bytes, which
	// Decode reads as a raw vector of 6.
	short := Encode(Vector{Model: "abc", Values: []float32{1, 2, 3}})
	binary.LittleEndian.PutUint32(short[4+1+3:], 4)
	if v := Decode(short); v.Dim() != 6 || v.Model != "" {
		t.Fatalf("the damaged record decodes as %+v; the test needs the raw fallback", v)
	}
	for name, b := range map[string][]byte{
		"stated dimension 4 of 3": short,
		"no components":           Encode(Vector{Model: "abc"}),
		"a header cut short":      good[:7],
		"not whole float32s":      {1, 2, 3},
		"empty":                   {},
	} {
		if err := CheckRecord(b); err == nil {
			t.Errorf("%s: passes", name)
		}
	}
	if err := CheckRecord(short); err == nil || !strings.Contains(err.Error(), "states dimension 4") {
		t.Errorf("the damaged record: %v", err)
	}
}

// corruptKey sets key to value in r's store, as a bug or a hand would.
func (r *rig) corruptKey(key, value []byte) {
	r.t.Helper()
	if err := r.st.Update(context.Background(), func(tx *storage.Tx) error { return tx.Set(key, value) }); err != nil {
		r.t.Fatal(err)
	}
}

// TestCheckNamesAnUnreadableCachedVector: a cached vector that is not a
// whole record naming its model is reported by its key; the entries the
// queue wrote are not.
func TestCheckNamesAnUnreadableCachedVector(t *testing.T) {
	r := newRig(t, &model{name: "m", dim: 3})
	r.write(map[string]string{"a": "one", "b": "two"})
	r.settle()
	if p, err := r.q.Check(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("a healthy store: %v %v", p, err)
	}
	bad := Encode(Vector{Model: "m", Values: []float32{1, 2, 3}})
	binary.LittleEndian.PutUint32(bad[4+1+1:], 2)
	for name, v := range map[string][]byte{
		"stated dimension 2 of 3": bad,
		"a raw vector":            search.EncodeVector([]float32{1, 2, 3}),
		"no model":                Encode(Vector{Values: []float32{1}}),
	} {
		t.Run(name, func(t *testing.T) {
			r.corruptKey(CacheKey("m", "one"), v)
			p, err := r.q.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(p) != 1 || !strings.Contains(p[0], "cached vector") || !strings.Contains(p[0], string(CacheKey("m", "one"))) {
				t.Errorf("problems: %q", p)
			}
		})
	}
}

// TestCheckNamesADamagedVersionStamp: a version stamp of another length
// than the ones the queue writes is reported by its key.
func TestCheckNamesADamagedVersionStamp(t *testing.T) {
	r := newRig(t, &model{name: "m", dim: 3})
	r.write(map[string]string{"a": "one"})
	r.settle()
	key := stampKey(storage.PrefixKey("t/", "vec"))
	if p, err := r.q.Check(context.Background()); err != nil || len(p) != 0 {
		t.Fatalf("a healthy store: %v %v", p, err)
	}
	r.corruptKey(key, []byte("x"))
	p, err := r.q.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || !strings.Contains(p[0], "version stamp") || !strings.Contains(p[0], "is 1 bytes") {
		t.Errorf("problems: %q", p)
	}
}

// TestCheckOfTheCacheStopsWhenCancelled: a cancelled check of a large cache stops
// with the context's error.
func TestCheckOfTheCacheStopsWhenCancelled(t *testing.T) {
	r := newRig(t, &model{name: "m", dim: 1})
	err := r.st.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range 3000 {
			if err := tx.Set(CacheKey("m", fmt.Sprint(i)), Encode(Vector{Model: "m", Values: []float32{1}})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.q.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled check returned %v", err)
	}
}

// TestAnUnreadableCachedVectorIsNeverStored: a cache entry that does not
// read whole as the model's record (here raw float32s, which the lenient
// Decode would take for a vector of the model's dimension) is not used:
// the model is asked, and its answer is stored and cached in its place.
func TestAnUnreadableCachedVectorIsNeverStored(t *testing.T) {
	m := &model{name: "m", dim: 3}
	r := newRig(t, m)
	r.write(map[string]string{"a": "one"})
	r.settle()
	r.corruptKey(CacheKey("m", "two"), search.EncodeVector([]float32{9, 9, 9}))
	r.write(map[string]string{"b": "two"})
	r.settle()
	if v, ok := r.vector("b"); !ok || v.Model != "m" || v.Values[0] != float32(len("two")) {
		t.Errorf("b's vector: %+v (want the model's)", v)
	}
	if p, err := r.q.Check(context.Background()); err != nil || len(p) != 0 {
		t.Errorf("the damaged entry was not replaced: %q %v", p, err)
	}
}

// TestRepairDropsOnlyWhatHoldsNothingToLose: engram check --repair drops
// the cached vector and the version stamp that do not read and the
// pending markers that do not read or whose item is gone, saying so; a
// marker still waiting for its item's vector, the stored vectors and the
// good cache entries stay, and check finds nothing more.
func TestRepairDropsOnlyWhatHoldsNothingToLose(t *testing.T) {
	m := &model{name: "m", dim: 3}
	r := newRig(t, m)
	r.write(map[string]string{"a": "one", "b": "two"})
	r.settle()
	m.set(errors.New("down"))
	r.write(map[string]string{"c": "three"}) // waits for its vector
	r.settle()
	r.corruptKey(CacheKey("m", "one"), []byte("junk"))
	r.corruptKey(stampKey(storage.PrefixKey("t/", "vec")), []byte("x"))
	r.corruptKey(storage.Key("t/", "q", "gone"), []byte(`{"text": "gone", "item": "dC9pdGVtL2dvbmU=", "vector": "dC92ZWMvZ29uZQ=="}`)) // t/item/gone, t/vec/gone
	r.corruptKey(storage.Key("t/", "q", "junk"), []byte("{"))
	dropped, err := r.q.Repair(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 4 {
		t.Fatalf("dropped %d: %q", len(dropped), dropped)
	}
	for i, want := range []string{"the cached vector", "the version stamp", "its item \"t/item/gone\" is gone", "the pending embedding \"t/q/junk\": unreadable"} {
		if !strings.Contains(strings.Join(dropped, "\n"), want) {
			t.Errorf("dropped %d: nothing says %q in %q", i, want, dropped)
		}
	}
	if p, err := r.q.Check(context.Background()); err != nil || len(p) != 0 {
		t.Errorf("check after the repair: %q %v", p, err)
	}
	if r.markers() != 1 {
		t.Errorf("%d markers after the repair, want c's", r.markers())
	}
	for _, id := range []string{"a", "b"} {
		if _, ok := r.vector(id); !ok {
			t.Errorf("%s's vector went", id)
		}
	}
	if got := r.cacheEntries(); len(got) != 1 || got[string(CacheKey("m", "two"))] != "m" {
		t.Errorf("the cache after the repair: %v", got)
	}
	if again, err := r.q.Repair(context.Background()); err != nil || len(again) != 0 {
		t.Errorf("a second repair: %q %v", again, err)
	}
}
