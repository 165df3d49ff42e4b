// Package embed keeps the embedding vectors of engram's stored texts: each
// vector is stored with the model that made it and its dimension, the same
// text under the same model is embedded once (a cache by text hash), and
// writes only leave a pending marker beside the item, in the same
// transaction, which one background worker per engine turns into vectors
// in batches, retrying a failed call with backoff by the engine clock. What
// was not embedded is found again at the next open, so a failed or
// interrupted embedding is never silently lost; search stays lexical for
// the item until its vector is stored.
package embed

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/storage"
)

// magic starts a versioned vector record. Records written before it are
// raw little-endian float32s (search.EncodeVector); a raw vector whose
// first float has exactly these bytes and whose length happens to match a
// record's layout is read as a record: the bytes are a denormal-small
// float no embedding model gives as its first component.
var magic = [4]byte{0xFF, 'E', 'V', 1}

// Vector is a stored embedding and the model that made it.
type Vector struct {
	// Model names the embedding model; "" for a vector stored before
	// records carried it (the model is unknown).
	Model string
	// Values are the vector's components; their count is its dimension.
	Values []float32
}

// Dim is the vector's dimension.
func (v Vector) Dim() int { return len(v.Values) }

// Encode is v's stored record: the magic, the model's name (at most 255
// bytes), the dimension and the components.
func Encode(v Vector) []byte {
	model := v.Model
	if len(model) > 255 {
		model = model[:255]
	}
	b := make([]byte, 0, 4+1+len(model)+4+4*len(v.Values))
	b = append(b, magic[:]...)
	b = append(b, byte(len(model)))
	b = append(b, model...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v.Values)))
	for _, f := range v.Values {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// Decode reads a stored record, or a raw vector stored before records
// (its Model is then "").
func Decode(b []byte) Vector {
	if v, ok := decodeRecord(b); ok {
		return v
	}
	return Vector{Values: search.DecodeVector(b)}
}

// Header reads a record's model and dimension without its components.
func Header(b []byte) (model string, dim int) {
	if len(b) >= 9 && [4]byte(b[:4]) == magic {
		n := int(b[4])
		if len(b) >= 5+n+4 {
			d := int(binary.LittleEndian.Uint32(b[5+n:]))
			if len(b) == 5+n+4+4*d {
				return string(b[5 : 5+n]), d
			}
		}
	}
	return "", len(b) / 4
}

// CheckRecord says what is wrong with a stored vector, for engram check:
// nil for a record that decodes whole (a model's name, a dimension and
// exactly that many components) or for a raw vector stored before records
// (a whole number of float32s). A value that starts as a record is held
// to the record's layout: the raw reading Decode falls back to would take
// its header for components, and a search would compare them.
func CheckRecord(b []byte) error {
	if len(b) >= 4 && [4]byte(b[:4]) == magic {
		if len(b) < 5 || len(b) < 5+int(b[4])+4 {
			return fmt.Errorf("a vector record cut short in its header (%d bytes)", len(b))
		}
		n := int(b[4])
		model := string(b[5 : 5+n])
		d := int(binary.LittleEndian.Uint32(b[5+n:]))
		switch rest := len(b) - (5 + n + 4); {
		case rest != 4*d:
			return fmt.Errorf("a vector record of model %q states dimension %d but holds %d bytes of components (%d expected)", model, d, rest, 4*d)
		case d == 0:
			return fmt.Errorf("a vector record of model %q holds no components", model)
		}
		return nil
	}
	if len(b) == 0 || len(b)%4 != 0 {
		return fmt.Errorf("%d bytes: neither a vector record nor a whole number of float32 components", len(b))
	}
	return nil
}

// checkCached is CheckRecord for a cache entry: the cache has held
// records from its start, so a raw vector there is damage too.
func checkCached(b []byte) error {
	if len(b) < 4 || [4]byte(b[:4]) != magic {
		return fmt.Errorf("not a vector record (%d bytes)", len(b))
	}
	if err := CheckRecord(b); err != nil {
		return err
	}
	if m, _ := Header(b); m == "" {
		return fmt.Errorf("a vector record that names no model")
	}
	return nil
}

func decodeRecord(b []byte) (Vector, bool) {
	if len(b) < 9 || [4]byte(b[:4]) != magic {
		return Vector{}, false
	}
	n := int(b[4])
	if len(b) < 5+n+4 {
		return Vector{}, false
	}
	d := int(binary.LittleEndian.Uint32(b[5+n:]))
	rest := b[5+n+4:]
	if len(rest) != 4*d {
		return Vector{}, false
	}
	return Vector{Model: string(b[5 : 5+n]), Values: search.DecodeVector(rest)}, true
}

// Mismatch tells of the stored vectors a search skipped because their
// dimension differs from the query vector's.
type Mismatch struct {
	// Skipped counts them.
	Skipped int
	// Dim and Model are one skipped vector's dimension and model ("" when
	// unknown).
	Dim   int
	Model string
	// QueryDim is the query vector's dimension.
	QueryDim int
	// QueryModel is set when the skipped vectors were made by another
	// model (Model) than the query's: of the same dimension or not, their
	// cosines would mean nothing.
	QueryModel string
}

// SameModel says whether a vector stored by model stored may be compared
// with a query vector made by model query. A vector of an unknown model
// (""; stored before engram recorded models, when a store had one model)
// counts as the query's: a dimension check still guards it, and
// embeddings.reembed replaces it. An unknown query model compares with
// everything.
func SameModel(stored, query string) bool {
	return stored == "" || query == "" || stored == query
}

// queryModel is the model the queries against st's vectors are made by:
// its queue's ("" when st has no queue with a model).
func queryModel(st *storage.Store) string {
	v, ok := registry.Load(st)
	if !ok || !v.(*Queue).Enabled() {
		return ""
	}
	return v.(*Queue).Model()
}

// withForeign adds to m the vectors of another model load left out.
func (s *Index) withForeign(m Mismatch) Mismatch {
	if s.foreign.Skipped == 0 {
		return m
	}
	f := s.foreign
	f.Skipped += m.Skipped
	f.QueryDim = m.QueryDim
	return f
}

// Similarities is the cosine similarity of q to every vector stored under
// prefix, by key. A vector of another dimension than q's (made by another
// model) is skipped, never compared, and told of in the Mismatch: a
// reembed brings it to the configured model.
func Similarities(tx *storage.Tx, prefix []byte, q []float32, fn func(key []byte, cos float64)) (Mismatch, error) {
	s, err := load(tx, prefix)
	if err != nil {
		return Mismatch{}, err
	}
	m := s.scan(q, func(i int, cos float32) { fn(s.keys[i], float64(cos)) })
	if m = s.withForeign(m); m.Skipped > 0 {
		noteMismatch(tx, prefix, m)
	}
	return m, nil
}

// Uncache deletes, in tx, the cached vectors of texts under every model
// that cached a vector in tx's store (modelsKey records each; the
// configured one counts too): the cache is keyed by a hash of the model
// and the text, and a text deleted for good should not stay behind as its
// vector, whichever model made it and whether or not one is configured
// now. (A store cached in before the record was kept names none of its
// models: the configured one's entries go, and a reembed purges the
// others.)
//
// It drops the entry even when another item holds the same text: the
// cache is keyed by content, not by owner, so that costs the other text
// one model call if it is ever embedded again (its own vector record
// stays). Keeping the entry would be wrong for a forget: a vector can be
// partly inverted to its text, and its key confirms a guessed text (a
// write of that text counts as cached in engine.info), so a forgotten
// text would stay recoverable by someone else. Keeping it only while
// another item holds the text would need a count of each text's owners
// kept across the history's two stores, which no one transaction spans.
func (q *Queue) Uncache(tx *storage.Tx, texts ...string) error {
	if len(texts) == 0 {
		return nil
	}
	models, err := cachedModels(tx)
	if err != nil {
		return err
	}
	if q.Enabled() && !slices.Contains(models, q.Model()) {
		models = append(models, q.Model())
	}
	for _, t := range texts {
		for _, m := range models {
			if err := tx.Delete(CacheKey(m, t)); err != nil {
				return err
			}
		}
	}
	return nil
}

// modelsKey records, in the store the cache entries are in, that model
// cached vectors there: Uncache deletes a text's entry under each model
// so recorded. A purge drops the records of the models it purged. It is
// store metadata, outside idx/embed/: it names a model, no text, and
// stays when the last text goes.
func modelsKey(model string) []byte { return storage.Key(storage.PrefixMeta, "embed-models", model) }

// modelsPrefix is the prefix of the models' records.
func modelsPrefix() []byte { return storage.PrefixKey(storage.PrefixMeta, "embed-models") }

// cachedModels are the models recorded in tx's store as having cached.
func cachedModels(tx *storage.Tx) ([]string, error) {
	var out []string
	err := tx.Keys(storage.Prefix(modelsPrefix()), func(k []byte) error {
		out = append(out, storage.LastPart(k))
		return nil
	})
	return out, err
}

// recordModel records in tx that model caches in tx's store. It writes
// only the first time: a delete's Uncache reads the records, and a write
// each time would make the two transactions conflict for nothing.
func recordModel(tx *storage.Tx, model string) error {
	if ok, err := tx.Has(modelsKey(model)); err != nil || ok {
		return err
	}
	return tx.Set(modelsKey(model), nil)
}

// Forget records in tx that no vector is left under prefix (a dropped
// conversation): its version stamp goes too, rather than naming it for
// ever, and once tx commits the vectors in memory are dropped.
func Forget(tx *storage.Tx, prefix []byte) error {
	if err := tx.Delete(stampKey(prefix)); err != nil {
		return err
	}
	tx.Hook(forgetHookKey{string(prefix)}, func() storage.CommitHook {
		return &forgetHook{store: tx.Store(), prefix: string(prefix)}
	})
	return nil
}

type forgetHookKey struct{ prefix string }

// forgetHook drops a prefix's vectors in memory once its vectors are gone.
type forgetHook struct {
	store  *storage.Store
	prefix string
}

func (h *forgetHook) BeforeCommit() {}

func (h *forgetHook) AfterCommit(committed bool) {
	if !committed {
		return
	}
	k := snapKey{h.store, h.prefix}
	snapshots.Lock()
	defer snapshots.Unlock()
	if s := snapshots.m[k]; s != nil {
		snapshots.floats -= s.floats
		delete(snapshots.m, k)
	}
}
