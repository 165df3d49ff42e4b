package embed

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/engram-console/engram/storage"
)

// The vectors under a prefix are read from the store once and kept in
// memory, decoded, until they change: every write that stores or deletes
// a vector writes a new version stamp for its prefix (Touch) in the same
// transaction, and a search whose transaction sees another stamp than the
// copy in memory reads them afresh. Without it, a search over 100,000
// turns spends most of a second reading and decoding their vectors.

// snapshotBudget bounds the floats kept in memory, all prefixes together
// (64 Mi floats: 256 MiB, and 64 MiB more for their int8 copies); the
// least recently used go first.
const snapshotBudget = 64 << 20

var (
	stampNonce   = newNonce()
	stampCounter atomic.Uint64
)

func newNonce() [8]byte {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return b
}

func stampKey(prefix []byte) []byte {
	return storage.Key(storage.PrefixIndex, "embed", "stamp", string(prefix))
}

// Parent is the prefix a vector key is scanned under (its key up to its
// last part).
func Parent(key []byte) []byte {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i+1]
		}
	}
	return nil
}

// Touch records in tx that the vectors under prefix changed: whoever
// deletes one calls it (a blind write: concurrent writers do not conflict
// over it). The vectors in memory are read afresh at the next search.
func Touch(tx *storage.Tx, prefix []byte) error {
	return tx.Set(stampKey(prefix), newStamp())
}

func newStamp() []byte {
	stamp := make([]byte, 16)
	copy(stamp, stampNonce[:])
	binary.BigEndian.PutUint64(stamp[8:], stampCounter.Add(1))
	return stamp
}

// Stored stores v under key in tx and stamps its prefix; once tx
// commits, v is added to the prefix's vectors in memory when they are the
// ones tx started from (a new utterance's vector does not make the next
// search read 100,000 vectors again), and they are dropped otherwise.
func Stored(tx *storage.Tx, key []byte, v Vector) error {
	prefix := Parent(key)
	old, err := tx.Get(stampKey(prefix))
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	stamp := newStamp()
	if err := tx.Set(key, Encode(v)); err != nil {
		return err
	}
	if err := tx.Set(stampKey(prefix), stamp); err != nil {
		return err
	}
	h := tx.Hook(storedHookKey{string(prefix)}, func() storage.CommitHook {
		return &storedHook{store: tx.Store(), prefix: string(prefix), from: string(old)}
	}).(*storedHook)
	h.to = string(stamp)
	h.keys = append(h.keys, slices.Clone(key))
	h.vecs = append(h.vecs, v)
	return nil
}

type storedHookKey struct{ prefix string }

// storedHook brings the vectors in memory along with a transaction's
// stored vectors.
type storedHook struct {
	store    *storage.Store
	prefix   string
	from, to string
	keys     [][]byte
	vecs     []Vector
}

func (h *storedHook) BeforeCommit() {}

func (h *storedHook) AfterCommit(committed bool) {
	if !committed {
		return
	}
	k := snapKey{h.store, h.prefix}
	snapshots.Lock()
	defer snapshots.Unlock()
	s := snapshots.m[k]
	if s == nil {
		return
	}
	// A snapshot that left another model's vectors out is read afresh:
	// a reembed's vectors replace those, which it does not hold.
	drop := s.stamp != h.from || s.foreign.Skipped > 0
	for _, key := range h.keys {
		if _, ok := s.pos[string(key)]; ok {
			drop = true // replaced: the old one is in the slab
		}
	}
	if drop {
		snapshots.floats -= s.floats
		delete(snapshots.m, k)
		return
	}
	// Readers of s see its first len entries only: appending past them
	// (into spare capacity they share) leaves what they read alone.
	next := *s
	for i, key := range h.keys {
		next.Add(key, h.vecs[i])
	}
	next.stamp = h.to
	snapshots.floats += next.floats - s.floats
	snapshots.m[k] = &next
}

// Index is vectors held in memory for a nearest-neighbour search: a
// search's snapshot of the vectors under a prefix (at one stamp), or the
// retrieval evaluation's. Add the vectors, Pack, then search; it is safe
// for concurrent searches once packed, and Add may follow.
//
// Each vector is kept normalised to length 1 (so a cosine is a dot
// product) and again quantised to int8, a quarter of the size: Nearest
// scans the int8 copy for candidates and ranks them by their exact
// cosines.
type Index struct {
	keys   [][]byte
	models []string
	vecs   [][]float32 // normalised (a zero vector stays zero)
	q8     [][]int8    // vecs quantised: vecs[i][j] ≈ q8[i][j]·scale[i]
	scale  []float32
	floats int
	// pos finds a key's entry. The copies a stored vector makes of a
	// snapshot share it (and append to it), so it is read and written
	// under mu.
	pos map[string]int
	mu  *sync.RWMutex
	// stamp and used are a search snapshot's: the stamp it was read at,
	// and when it was last used (for the budget).
	stamp string
	used  uint64
	// foreign tells of the vectors load left out: another model's than
	// the one queries are made by now (see SameModel).
	foreign Mismatch
}

// Add appends a vector under key (a normalised copy of it: v is left
// alone).
func (s *Index) Add(key []byte, v Vector) {
	v.Values = slices.Clone(v.Values)
	s.add(key, v)
}

// add is Add taking v.Values as its own: it is normalised in place.
func (s *Index) add(key []byte, v Vector) {
	if s.pos == nil {
		s.pos, s.mu = map[string]int{}, &sync.RWMutex{}
	}
	s.mu.Lock()
	s.pos[string(key)] = len(s.keys)
	s.mu.Unlock()
	q8, scale := normalise(v.Values)
	s.keys = append(s.keys, key)
	s.models = append(s.models, v.Model)
	s.vecs = append(s.vecs, v.Values)
	s.q8 = append(s.q8, q8)
	s.scale = append(s.scale, scale)
	s.floats += len(v.Values)
}

// quantise is a normalised copy of v, its int8 copy and their scale (as
// normalise makes them).
func quantise(v []float32) ([]float32, []int8, float32) {
	unit := slices.Clone(v)
	q8, scale := normalise(unit)
	return unit, q8, scale
}

// normalise scales v to length 1 in place (a zero vector stays zero) and
// quantises it to int8 with its scale: the largest element becomes ±127
// (never -128, which dot8's AVX2 form cannot take), v[i] ≈ q8[i]·scale.
func normalise(v []float32) ([]int8, float32) {
	q8 := make([]int8, len(v))
	n := norm(v)
	if n == 0 {
		return q8, 0
	}
	// Multiplications, not divisions: a cold read normalises 25 million
	// components.
	var largest float32
	inv := 1 / n
	for i, x := range v {
		x *= inv
		v[i] = x
		if x > largest { // not max(): its NaN and -0 checks cost a third of a cold read
			largest = x
		} else if -x > largest {
			largest = -x
		}
	}
	scale, up := largest/127, 127/largest
	for i, x := range v {
		// |x·up| ≤ 127 (a rounding over it truncates back to ±127).
		if r := x * up; r >= 0 {
			q8[i] = int8(r + 0.5)
		} else {
			q8[i] = int8(r - 0.5)
		}
	}
	return q8, scale
}

// Len is how many vectors the index holds.
func (s *Index) Len() int { return len(s.keys) }

type snapKey struct {
	store  *storage.Store
	prefix string
}

var snapshots = struct {
	sync.Mutex
	m      map[snapKey]*Index
	floats int
	clock  uint64
}{m: map[snapKey]*Index{}}

// load is the snapshot of the vectors under prefix that tx sees.
func load(tx *storage.Tx, prefix []byte) (*Index, error) {
	stamp, err := tx.Get(stampKey(prefix))
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	k := snapKey{tx.Store(), string(prefix)}
	snapshots.Lock()
	s := snapshots.m[k]
	if s != nil && s.stamp == string(stamp) {
		snapshots.clock++
		s.used = snapshots.clock
		snapshots.Unlock()
		return s, nil
	}
	snapshots.Unlock()
	s = &Index{stamp: string(stamp)}
	want := queryModel(tx.Store())
	err = tx.Scan(storage.Prefix(prefix), func(key, v []byte) error {
		vec := Decode(v)
		if !SameModel(vec.Model, want) {
			s.foreign.Skipped++
			s.foreign.Dim, s.foreign.Model, s.foreign.QueryModel = vec.Dim(), vec.Model, want
			return nil
		}
		s.add(slices.Clone(key), vec) // Decode's values are new
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Pack()
	snapshots.Lock()
	defer snapshots.Unlock()
	if old := snapshots.m[k]; old != nil {
		snapshots.floats -= old.floats
	}
	snapshots.clock++
	s.used = snapshots.clock
	snapshots.m[k] = s
	snapshots.floats += s.floats
	for snapshots.floats > snapshotBudget && len(snapshots.m) > 1 {
		var oldest snapKey
		var at uint64 = math.MaxUint64
		for key, v := range snapshots.m {
			if v.used < at && key != k {
				oldest, at = key, v.used
			}
		}
		snapshots.floats -= snapshots.m[oldest].floats
		delete(snapshots.m, oldest)
	}
	return s, nil
}

// Pack copies the vectors (and their int8 copies) into one slab each, in
// order, so that a scan reads memory in sequence.
func (s *Index) Pack() {
	slab := make([]float32, 0, s.floats)
	for i, v := range s.vecs {
		start := len(slab)
		slab = append(slab, v...)
		s.vecs[i] = slab[start:len(slab):len(slab)]
	}
	slab8 := make([]int8, 0, s.floats)
	for i, v := range s.q8 {
		start := len(slab8)
		slab8 = append(slab8, v...)
		s.q8[i] = slab8[start:len(slab8):len(slab8)]
	}
}

// parallelMin is how many vectors a scan has before it is split among
// the processors.
const parallelMin = 20_000

// forgetStore drops the snapshots of a store (its queue stopped).
func forgetStore(st *storage.Store) {
	snapshots.Lock()
	defer snapshots.Unlock()
	for k, s := range snapshots.m {
		if k.store == st {
			snapshots.floats -= s.floats
			delete(snapshots.m, k)
		}
	}
}

// scan calls fn with each vector of s of q's dimension and its cosine to
// q, and tells of the others.
func (s *Index) scan(q []float32, fn func(i int, cos float32)) Mismatch {
	m := Mismatch{QueryDim: len(q)}
	qu, _, _ := quantise(q)
	for i, v := range s.vecs {
		if len(v) != len(q) {
			m.Skipped++
			m.Dim, m.Model = len(v), s.models[i]
			continue
		}
		fn(i, dot(qu, v))
	}
	return m
}

// Neighbour is a stored vector near a query.
type Neighbour struct {
	// Key is the vector's key.
	Key []byte
	// Cosine is its cosine similarity to the query.
	Cosine float64
}

// Nearest is the n vectors under prefix most similar to q, best first
// (among equal similarities, the first key first). Vectors of another
// dimension are skipped and told of, as Similarities does. This is what a
// fusion by rank needs: n keys, not a score for every vector.
func Nearest(tx *storage.Tx, prefix []byte, q []float32, n int) ([]Neighbour, Mismatch, error) {
	return NearestWhere(tx, prefix, q, n, nil)
}

// NearestWhere is Nearest among the vectors whose key keep accepts (all
// when keep is nil): keep is asked only of the vectors that come near,
// from several goroutines at once.
func NearestWhere(tx *storage.Tx, prefix []byte, q []float32, n int, keep func(key []byte) bool) ([]Neighbour, Mismatch, error) {
	s, err := load(tx, prefix)
	if err != nil || n <= 0 {
		return nil, Mismatch{}, err
	}
	out, m := s.NearestWhere(q, n, keep)
	if m = s.withForeign(m); m.Skipped > 0 {
		noteMismatch(tx, prefix, m)
	}
	return out, m, nil
}

// Cosines is the cosine similarity of q to the vectors stored under
// prefix at keys, in the order of keys; a key with no vector, or one of
// another dimension than q's, is left out. It reads those vectors only.
func Cosines(tx *storage.Tx, prefix []byte, q []float32, keys [][]byte) ([]Neighbour, error) {
	s, err := load(tx, prefix)
	if err != nil {
		return nil, err
	}
	return s.Cosines(q, keys), nil
}

// Cosines is the cosine similarity of q to the vectors at keys, in the
// order of keys; a key with no vector, or one of another dimension than
// q's, is left out.
func (s *Index) Cosines(q []float32, keys [][]byte) []Neighbour {
	if s.mu == nil || len(keys) == 0 {
		return nil
	}
	qu, _, _ := quantise(q)
	at := make([]int, 0, len(keys))
	s.mu.RLock()
	for _, k := range keys {
		i, ok := s.pos[string(k)]
		if !ok || i >= len(s.keys) { // added to a later copy than s
			i = -1
		}
		at = append(at, i)
	}
	s.mu.RUnlock()
	var out []Neighbour
	for _, i := range at {
		if i >= 0 && len(s.vecs[i]) == len(q) {
			out = append(out, Neighbour{Key: s.keys[i], Cosine: float64(dot(qu, s.vecs[i]))})
		}
	}
	return out
}

// Candidates is how many vectors Nearest ranks by their exact cosine to
// find the best n: those best by the int8 copies. The int8 products are
// off by about 0.005 at 256 dimensions (each element is rounded to 1/254
// of the vector's largest); a vector among the true best n is outranked
// by the int8 copies of 4n others only when they are all that close.
func Candidates(n int) int { return max(4*n, 200) }

// Nearest is the n vectors most similar to q (by cosine), best first,
// the first added first among equals; vectors of another dimension than
// q's are skipped and counted in the Mismatch.
func (s *Index) Nearest(q []float32, n int) ([]Neighbour, Mismatch) {
	return s.NearestWhere(q, n, nil)
}

// NearestWhere is Nearest among the vectors whose key keep accepts (all
// when keep is nil). It compares q's int8 copy to every vector's (a
// share of them on each processor when there are many), keeps the
// Candidates(n) best, and ranks those by their exact cosines. keep is
// asked only of a vector that would join the candidates.
func (s *Index) NearestWhere(q []float32, n int, keep func(key []byte) bool) ([]Neighbour, Mismatch) {
	qu, q8, qscale := quantise(q)
	if n <= 0 || qscale == 0 {
		return nil, Mismatch{QueryDim: len(q)}
	}
	total := len(s.q8)
	parts := 1
	if total >= parallelMin {
		parts = runtime.GOMAXPROCS(0)
	}
	k := Candidates(n)
	tops := make([][]hit, parts)
	mismatches := make([]Mismatch, parts)
	var wg sync.WaitGroup
	size := (total + parts - 1) / parts
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := min(p*size, total), min((p+1)*size, total)
			tops[p], mismatches[p] = s.top(q8, k, lo, hi, keep)
		}()
	}
	wg.Wait()
	var all []hit
	m := Mismatch{QueryDim: len(q)}
	for p := range parts {
		all = append(all, tops[p]...)
		if mismatches[p].Skipped > 0 {
			m.Skipped += mismatches[p].Skipped
			m.Dim, m.Model = mismatches[p].Dim, mismatches[p].Model
		}
	}
	for j, h := range all {
		all[j].cos = dot(qu, s.vecs[h.i])
	}
	slices.SortFunc(all, func(a, b hit) int {
		if c := cmp.Compare(b.cos, a.cos); c != 0 {
			return c
		}
		return a.i - b.i
	})
	all = all[:min(n, len(all))]
	out := make([]Neighbour, len(all))
	for i, h := range all {
		out[i] = Neighbour{Key: s.keys[h.i], Cosine: float64(h.cos)}
	}
	return out, m
}

// hit is a vector's index in a snapshot and its cosine to a query (or
// the int8 copies' estimate of it).
type hit struct {
	i   int
	cos float32
}

// top is the k vectors of s.q8[lo:hi] whose int8 copies' products with
// q8 are the largest (over their scale, which is q8's alone: it orders
// them), best first, of those keep accepts.
func (s *Index) top(q8 []int8, k, lo, hi int, keep func([]byte) bool) ([]hit, Mismatch) {
	m := Mismatch{QueryDim: len(q8)}
	hits := make([]hit, 0, k+1)
	floor := float32(math.Inf(-1))
	for i := lo; i < hi; i++ {
		v := s.q8[i]
		if len(v) != len(q8) {
			m.Skipped++
			m.Dim, m.Model = len(v), s.models[i]
			continue
		}
		c := float32(dot8(q8, v)) * s.scale[i]
		if len(hits) == k && c <= floor || keep != nil && !keep(s.keys[i]) {
			continue
		}
		at, _ := slices.BinarySearchFunc(hits, c, func(h hit, c float32) int {
			if h.cos == c {
				return -1 // after the equal ones: the first key stays first
			}
			return cmp.Compare(c, h.cos)
		})
		hits = slices.Insert(hits, at, hit{i, c})
		if len(hits) > k {
			hits = hits[:k]
		}
		if len(hits) == k {
			floor = hits[k-1].cos
		}
	}
	return hits, m
}

func norm(v []float32) float32 { return float32(math.Sqrt(float64(dot(v, v)))) }

// dot is the dot product of two vectors of the same length, unrolled.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
