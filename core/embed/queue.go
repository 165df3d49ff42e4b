package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// BatchSize is the most texts one call to the model embeds.
const BatchSize = 32

// Backoff after a failed call, by the engine clock: FirstBackoff, doubled
// after each further failure, at most MaxBackoff.
const (
	FirstBackoff = 2 * time.Second
	MaxBackoff   = 10 * time.Minute
)

// Marker is what a write leaves beside an item that wants a vector, in the
// same transaction: the text to embed, the item's key (no vector is stored
// once it is gone) and the vector's key.
type Marker struct {
	Text   string `json:"text"`
	Item   []byte `json:"item"`
	Vector []byte `json:"vector"`
}

// Item is one stored text that should carry a vector: for a reembed.
type Item struct {
	// Key is the item's key, Vector its vector's and Marker its pending
	// marker's.
	Key, Vector, Marker []byte
	// Text is what is embedded.
	Text string
}

// Source is a subsystem's texts that carry vectors.
type Source struct {
	// Name names the subsystem ("history", "memory").
	Name string
	// Stores are the stores its items live in now.
	Stores func() []*storage.Store
	// Markers is the key prefix of its pending markers.
	Markers []byte
	// Items calls fn with each item of a store that should carry a vector.
	Items func(tx *storage.Tx, fn func(Item) error) error
}

// Stats are the queue's counts, for engine.info.
type Stats struct {
	// Model is the configured embedding model.
	Model string
	// Dimension is the dimension of its vectors (0 until one was made).
	Dimension int
	// Pending counts the texts waiting for a vector, Failed those of them
	// whose last call failed (they are retried with backoff), Retried the
	// texts sent again after a failure, Embedded the vectors stored and
	// Cached those of them the cache answered without a call.
	Pending, Failed, Retried, Embedded, Cached int
	// LastError is the last failure ("" after a success).
	LastError string
	// NextRetry is when the failed texts are tried again (zero if none).
	NextRetry time.Time
	// Mismatched counts the stored vectors searches skipped because their
	// model or dimension differed from the query's; Mismatch says the last such.
	Mismatched int
	Mismatch   string
}

// retry is a failed job's count of failures and when it is tried again.
type retry struct {
	failures int
	at       time.Time
	// scripted: at was read from a pinned clock (a batch step's at), so
	// only a pinned clock may say it has come; between steps the clock
	// reads the wall's time, and a retry then would not repeat.
	scripted bool
}

// pinner is the engine clock's view of whether a batch step pinned it.
type pinner interface {
	State() (at time.Time, pinned bool)
}

// pinned says whether the clock is pinned to a step's time.
func (q *Queue) pinned() bool {
	p, ok := q.clock.(pinner)
	if !ok {
		return false
	}
	_, pinned := p.State()
	return pinned
}

// scriptedDue says whether a retry timed by a pinned clock may go now:
// only while a Settle waits under a pinned clock (the end of a batch
// step, at its time), never on the worker's own, so that a script's
// output repeats (under mu).
func (q *Queue) scriptedDue() bool { return q.settling > 0 && q.pinned() }

// due says whether a retry at at (scripted as said) may go at now.
func due(at time.Time, scripted bool, now time.Time, pinned bool) bool {
	if at.IsZero() {
		return true
	}
	if scripted && !pinned {
		return false
	}
	return !now.Before(at)
}

type job struct {
	store  *storage.Store
	marker string
}

// Queue embeds the texts writes marked, in the background: one per engine.
type Queue struct {
	provider llm.Provider
	clock    clock.Clock
	log      *slog.Logger

	mu     sync.Mutex
	idle   *sync.Cond
	jobs   []job
	queued map[job]bool
	failed map[job]retry
	// solo are the jobs of a batch the model refused outright: each is
	// sent alone next, so that one text it cannot embed (too long, say)
	// does not hold up the others.
	solo      map[job]bool
	busy      bool
	inflight  int
	started   bool
	stopped   bool
	notBefore time.Time
	// notBeforeScripted: notBefore was read from a pinned clock (retry).
	notBeforeScripted bool
	// settling counts the Settles waiting.
	settling int
	stats    Stats
	sources  []Source
	kick     chan struct{}
	done     chan struct{}
	// purgeChunk overrides the constant when set, and afterPurgeChunk is
	// called after each chunk of a purge commits: tests cut a purge
	// short between two chunks with them, as a kill would.
	purgeChunk      int
	afterPurgeChunk func()
	ctx             context.Context
	cancel          context.CancelFunc
}

// registry finds the queue of a store, so that a search (which holds a
// transaction, not the engine) can tell of a dimension mismatch.
var registry sync.Map // *storage.Store → *Queue

// New returns the queue of an engine using provider and the engine clock.
func New(provider llm.Provider, clk clock.Clock, log *slog.Logger) *Queue {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	q := &Queue{provider: provider, clock: clk, log: log, queued: map[job]bool{}, failed: map[job]retry{}, solo: map[job]bool{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	q.idle = sync.NewCond(&q.mu)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	return q
}

// Enabled says whether a model is configured: without one nothing is
// marked and search is lexical.
func (q *Queue) Enabled() bool { return q != nil && llm.Available(q.provider) }

// Model names the configured embedding model.
func (q *Queue) Model() string {
	info := q.provider.Info()
	switch {
	case info.EmbedModel != "":
		return info.EmbedModel
	case info.Model != "":
		return info.Model
	}
	return info.Provider
}

// Register adds a subsystem's source and queues the texts its stores'
// markers say are still waiting (the previous run's, at open).
func (q *Queue) Register(s Source) error {
	q.mu.Lock()
	q.sources = append(q.sources, s)
	q.mu.Unlock()
	if !q.Enabled() {
		return nil
	}
	for _, st := range s.Stores() {
		registry.Store(st, q)
		if err := q.Recover(st, s.Markers); err != nil {
			return err
		}
	}
	return nil
}

// Recover queues the markers under prefix in st.
func (q *Queue) Recover(st *storage.Store, prefix []byte) error {
	if !q.Enabled() {
		return nil
	}
	var found []job
	err := st.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(prefix), func(k []byte) error {
			found = append(found, job{store: st, marker: string(k)})
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("finding the texts still to embed: %w", err)
	}
	q.enqueue(found...)
	return nil
}

// Mark writes, in tx, the marker that asks for text's vector, and queues it
// once tx commits. Without a model it writes nothing.
func (q *Queue) Mark(tx *storage.Tx, marker []byte, m Marker) error {
	if !q.Enabled() {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := tx.Set(marker, b); err != nil {
		return err
	}
	h := tx.Hook(q, func() storage.CommitHook { return &enqueueHook{q: q, store: tx.Store()} }).(*enqueueHook)
	h.jobs = append(h.jobs, job{store: tx.Store(), marker: string(marker)})
	return nil
}

// enqueueHook queues a transaction's markers once it commits.
type enqueueHook struct {
	q     *Queue
	store *storage.Store
	jobs  []job
}

func (h *enqueueHook) BeforeCommit() {}
func (h *enqueueHook) AfterCommit(committed bool) {
	if committed {
		h.q.enqueue(h.jobs...)
	}
}

func (q *Queue) enqueue(jobs ...job) {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return
	}
	for _, j := range jobs {
		registry.Store(j.store, q)
		if !q.queued[j] {
			q.queued[j] = true
			q.jobs = append(q.jobs, j)
		}
	}
	if !q.started && len(q.jobs) > 0 {
		q.started = true
		go q.run()
	}
	q.mu.Unlock()
	q.Kick()
}

// Kick makes the worker look at the clock again: a test or a batch step
// that moved the engine clock past a retry's time.
func (q *Queue) Kick() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// ready says whether the worker has a batch to send now (under mu).
func (q *Queue) ready() bool {
	_, ok := q.readyAt()
	return ok
}

// readyAt says whether a job can be sent now, or else when the first one
// can (zero: when a step pinning the clock says so, or nothing waits).
func (q *Queue) readyAt() (time.Time, bool) {
	if len(q.jobs) == 0 {
		return time.Time{}, false
	}
	now, pinned := q.clock.Now(), q.scriptedDue()
	if !due(q.notBefore, q.notBeforeScripted, now, pinned) {
		if q.notBeforeScripted {
			return time.Time{}, false
		}
		return q.notBefore, false
	}
	var first time.Time
	kickOnly := false
	for _, j := range q.jobs {
		r, failed := q.failed[j]
		if !failed || due(r.at, r.scripted, now, pinned) {
			return now, true
		}
		if r.scripted {
			kickOnly = true
		} else if first.IsZero() || r.at.Before(first) {
			first = r.at
		}
	}
	if kickOnly && first.IsZero() {
		return time.Time{}, false
	}
	return first, false
}

// Settle waits until the worker has nothing it could send now (or ctx
// ends): texts waiting for a retry's time do not hold it up.
func (q *Queue) Settle(ctx context.Context) {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.settling++
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.settling--
		q.mu.Unlock()
	}()
	q.Kick()
	done := make(chan struct{})
	go func() {
		q.mu.Lock()
		for !q.stopped && q.started && (q.busy || q.ready()) {
			q.idle.Wait()
		}
		q.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		q.mu.Lock()
		q.idle.Broadcast() // the waiter above stays until the next change; it holds nothing
		q.mu.Unlock()
	}
}

// Unpinned tells the queue that a request without at runs (the console,
// a script's step without at): from now on the wall's time is the engine's
// time, so retries scheduled under a pinned clock, which only a pinned
// step could bring due, move onto it (now plus their backoff). Without
// this a failure during a step with at held every later text back until
// another pinned step came, which in the console never does. A script
// whose every step has at never calls it, so its output still repeats.
func (q *Queue) Unpinned() {
	if q == nil || q.pinned() {
		return
	}
	q.mu.Lock()
	now, moved := q.clock.Now(), false
	var first time.Time
	for j, r := range q.failed {
		if !r.scripted {
			continue
		}
		r.at, r.scripted, moved = now.Add(backoff(r.failures)), false, true
		q.failed[j] = r
		if first.IsZero() || r.at.Before(first) {
			first = r.at
		}
	}
	if q.notBeforeScripted {
		q.notBefore, q.notBeforeScripted, moved = first, false, true
	}
	q.mu.Unlock()
	if moved {
		q.Kick()
	}
}

// Stop ends the worker: a call in flight is cancelled, and what is still
// pending keeps its marker for the next open.
func (q *Queue) Stop() {
	if q == nil {
		return
	}
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return
	}
	q.stopped = true
	started := q.started
	q.idle.Broadcast()
	q.mu.Unlock()
	q.cancel()
	if started {
		<-q.done
	}
	registry.Range(func(k, v any) bool {
		if v == q {
			registry.Delete(k)
			forgetStore(k.(*storage.Store))
		}
		return true
	})
}

// Stats are the queue's counts now. Without a model, Pending counts the
// markers the stores hold: texts a run with a model left waiting, which
// the next run with one embeds.
func (q *Queue) Stats() Stats {
	waiting := q.offlineWaiting()
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.stats
	s.Model = q.Model()
	s.Pending = len(q.jobs) + waiting
	if q.busy {
		s.Pending += q.inflight
	}
	s.Failed = len(q.failed)
	if _, ok := q.readyAt(); !ok && len(q.failed) > 0 {
		for _, r := range q.failed {
			if s.NextRetry.IsZero() || r.at.Before(s.NextRetry) {
				s.NextRetry = r.at
			}
		}
		if q.notBefore.After(s.NextRetry) {
			s.NextRetry = q.notBefore
		}
	}
	return s
}

// offlineWaiting counts the sources' markers when no model is configured
// (nothing is queued then); 0 with a model, whose queue holds them.
func (q *Queue) offlineWaiting() int {
	if q.Enabled() {
		return 0
	}
	q.mu.Lock()
	sources := append([]Source(nil), q.sources...)
	q.mu.Unlock()
	n := 0
	for _, s := range sources {
		for _, st := range s.Stores() {
			_ = st.View(func(tx *storage.Tx) error {
				c, err := tx.Count(s.Markers)
				n += c
				return err
			}) // a count that cannot be read shows as nothing waiting
		}
	}
	return n
}

func (q *Queue) run() {
	defer close(q.done)
	var timer *time.Timer
	for {
		batch, wait, stop := q.next()
		if stop {
			return
		}
		if batch == nil {
			var fire <-chan time.Time
			if wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				fire = timer.C
			}
			select {
			case <-q.kick:
			case <-fire:
			case <-q.ctx.Done():
			}
			if timer != nil {
				timer.Stop()
			}
			continue
		}
		q.process(batch)
	}
}

// next takes the next batch, or says how long to wait for one (0: until
// kicked), or that the queue stopped.
func (q *Queue) next() ([]job, time.Duration, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		q.busy = false
		q.idle.Broadcast()
		return nil, 0, true
	}
	at, ok := q.readyAt()
	if !ok {
		q.busy = false
		q.idle.Broadcast()
		if len(q.jobs) == 0 || at.IsZero() {
			return nil, 0, false
		}
		return nil, max(at.Sub(q.clock.Now()), time.Millisecond), false
	}
	// The jobs that can go now, in order: a solo job goes alone. Failed
	// jobs wait at the back, so the first ones usually all go.
	now, pinned := q.clock.Now(), q.scriptedDue()
	var batch []job
	rest := q.jobs[:0:0]
	fast := min(len(q.jobs), BatchSize)
	for i, j := range q.jobs[:fast] {
		if _, failed := q.failed[j]; failed || q.solo[j] {
			fast = i
			break
		}
	}
	if fast > 0 {
		batch, rest = append(batch, q.jobs[:fast]...), q.jobs[fast:]
	}
	for _, j := range q.jobs[len(batch):] {
		if fast > 0 {
			break
		}
		r, failed := q.failed[j]
		switch {
		case len(batch) == BatchSize || failed && !due(r.at, r.scripted, now, pinned),
			q.solo[j] && len(batch) > 0, len(batch) == 1 && q.solo[batch[0]]:
			rest = append(rest, j)
		default:
			batch = append(batch, j)
		}
	}
	q.jobs = rest
	for _, j := range batch {
		delete(q.queued, j)
		if _, failed := q.failed[j]; failed {
			q.stats.Retried++
		}
	}
	n := len(batch)
	q.busy, q.inflight = true, n
	return batch, 0, false
}

// work is a job with its marker read.
type work struct {
	job
	m      Marker
	vec    []float32
	cached bool
	// again: another work of the batch asks for the same text, which one
	// call answers for both; it counts as cached, as it would had the
	// worker taken the two texts in two batches.
	again bool
}

func (q *Queue) process(batch []job) {
	model := q.Model()
	q.mu.Lock()
	dim := q.stats.Dimension
	q.mu.Unlock()
	var works []*work
	var gone []job
	for _, j := range batch {
		w := &work{job: j}
		err := j.store.View(func(tx *storage.Tx) error {
			if err := tx.GetJSON([]byte(j.marker), &w.m); err != nil {
				return err
			}
			// A cached vector of another dimension than the model's now
			// is stale (the model changed under the same name); one that
			// does not read whole as model's record is damage, never a
			// vector (engram check names it; the model is asked again and
			// its answer replaces it).
			if v, err := tx.Get(CacheKey(model, w.m.Text)); err == nil && checkCached(v) == nil {
				if vec := Decode(v); vec.Model == model && (dim == 0 || vec.Dim() == dim) {
					w.vec, w.cached = vec.Values, true
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, storage.ErrNotFound):
			gone = append(gone, j) // embedded, or its item deleted, meanwhile
			continue
		case err != nil:
			q.fail([]job{j}, fmt.Errorf("reading a text to embed: %w", err))
			continue
		}
		works = append(works, w)
	}
	q.done1(gone, 0, 0)
	var texts []string
	seen := map[string]bool{}
	for _, w := range works {
		if w.vec == nil && seen[w.m.Text] {
			w.again = true
		} else if w.vec == nil {
			seen[w.m.Text] = true
			texts = append(texts, w.m.Text)
		}
	}
	if len(texts) > 0 {
		vecs, err := q.call(texts)
		if err != nil {
			jobs := make([]job, len(works))
			for i, w := range works {
				jobs[i] = w.job
			}
			if len(texts) > 1 && !transient(err) {
				q.split(jobs, err)
			} else {
				q.fail(jobs, err)
			}
			return
		}
		byText := make(map[string][]float32, len(texts))
		for i, t := range texts {
			byText[t] = vecs[i]
		}
		for _, w := range works {
			if w.vec == nil {
				w.vec = byText[w.m.Text]
			}
		}
	}
	// A vector the cache gave before this run knew the model's dimension
	// may be another dimension's: those texts are asked again.
	q.mu.Lock()
	dim = q.stats.Dimension
	q.mu.Unlock()
	var stale []string
	for _, w := range works {
		if w.cached && dim > 0 && len(w.vec) != dim {
			w.vec, w.cached = nil, false
			stale = append(stale, w.m.Text)
		}
	}
	if len(stale) > 0 {
		vecs, err := q.call(slices.Compact(slices.Sorted(slices.Values(stale))))
		if err != nil {
			jobs := make([]job, len(works))
			for i, w := range works {
				jobs[i] = w.job
			}
			q.fail(jobs, err)
			return
		}
		byText := map[string][]float32{}
		for i, t := range slices.Compact(slices.Sorted(slices.Values(stale))) {
			byText[t] = vecs[i]
		}
		for _, w := range works {
			if w.vec == nil {
				w.vec = byText[w.m.Text]
			}
		}
	}
	// One transaction a store.
	byStore := map[*storage.Store][]*work{}
	var order []*storage.Store
	for _, w := range works {
		if byStore[w.store] == nil {
			order = append(order, w.store)
		}
		byStore[w.store] = append(byStore[w.store], w)
	}
	for _, st := range order {
		ws := byStore[st]
		stored, cached := 0, 0
		err := st.Update(q.ctx, func(tx *storage.Tx) error {
			stored, cached = 0, 0
			recorded := false
			for _, w := range ws {
				var now Marker
				if err := tx.GetJSON([]byte(w.marker), &now); errors.Is(err, storage.ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
				if now.Text != w.m.Text {
					continue // written again meanwhile: its new marker is queued
				}
				if err := tx.Delete([]byte(w.marker)); err != nil {
					return err
				}
				if ok, err := tx.Has(w.m.Item); err != nil {
					return err
				} else if !ok {
					continue // deleted meanwhile
				}
				vec := Vector{Model: model, Values: w.vec}
				if err := Stored(tx, w.m.Vector, vec); err != nil {
					return err
				}
				if w.cached || w.again {
					cached++
				}
				// A repeat (again) writes the entry too: the work that
				// called the model for its text may have been skipped
				// (its item deleted or rewritten) or be another store's.
				if !w.cached {
					if err := tx.Set(CacheKey(model, w.m.Text), Encode(vec)); err != nil {
						return err
					}
					if !recorded {
						if err := recordModel(tx, model); err != nil {
							return err
						}
						recorded = true
					}
				}
				stored++
			}
			return nil
		})
		jobs := make([]job, len(ws))
		for i, w := range ws {
			jobs[i] = w.job
		}
		if err != nil {
			q.fail(jobs, fmt.Errorf("storing vectors: %w", err))
			continue
		}
		q.done1(jobs, stored, cached)
	}
}

// call asks the model for texts' vectors and checks the answer.
func (q *Queue) call(texts []string) ([][]float32, error) {
	resp, err := q.provider.Embed(q.ctx, llm.EmbedRequest{Texts: texts})
	if err != nil {
		return nil, err
	}
	if len(resp.Vectors) != len(texts) {
		return nil, fmt.Errorf("the model returned %d vectors for %d texts", len(resp.Vectors), len(texts))
	}
	dim := len(resp.Vectors[0])
	for _, v := range resp.Vectors {
		if len(v) == 0 || len(v) != dim {
			return nil, fmt.Errorf("the model returned vectors of dimensions %d and %d in one answer", dim, len(v))
		}
	}
	q.mu.Lock()
	q.stats.Dimension = dim
	q.mu.Unlock()
	return resp.Vectors, nil
}

// done1 records jobs as finished.
func (q *Queue) done1(jobs []job, stored, cached int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	hadFailed := false
	for _, j := range jobs {
		if _, ok := q.failed[j]; ok {
			hadFailed = true
		}
		delete(q.failed, j)
		delete(q.solo, j)
	}
	q.inflight -= len(jobs)
	q.stats.Embedded += stored
	q.stats.Cached += cached
	if stored > 0 {
		q.notBefore, q.notBeforeScripted = time.Time{}, false
	}
	// The last error goes once no failed text is left, embedded or gone.
	if (stored > 0 || hadFailed) && len(q.failed) == 0 {
		q.stats.LastError = ""
	}
}

// fail puts jobs back at the front of the queue, to be retried after the
// backoff.
func (q *Queue) fail(jobs []job, err error) {
	if len(jobs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight -= len(jobs)
	if q.stopped {
		return // the markers stay: the next open retries them
	}
	var back []job
	now, at, scripted := q.clock.Now(), time.Time{}, q.pinned()
	for _, j := range jobs {
		r := q.failed[j]
		r.failures++
		r.at, r.scripted = now.Add(backoff(r.failures)), scripted
		q.failed[j] = r
		at = r.at
		if !q.queued[j] {
			q.queued[j] = true
			back = append(back, j)
		}
	}
	// At the back: the jobs that did not fail go first.
	q.jobs = append(q.jobs, back...)
	if transient(err) {
		// The model is down or busy: nothing goes before the retry.
		q.notBefore, q.notBeforeScripted = at, scripted
	}
	q.stats.LastError = err.Error()
	q.log.Warn("embedding failed; the texts stay searchable by their words and are retried", "texts", len(jobs),
		"retry_at", at, "err", err)
}

// backoff is the wait after a text's n-th failure.
func backoff(n int) time.Duration {
	d := FirstBackoff << min(n-1, 20)
	if d > MaxBackoff || d <= 0 {
		d = MaxBackoff
	}
	return d
}

// split puts the jobs of a batch the model refused outright back at the
// front of the queue, each to be sent alone right away: the refusal may be
// one text's.
func (q *Queue) split(jobs []job, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight -= len(jobs)
	if q.stopped {
		return
	}
	var back []job
	for _, j := range jobs {
		q.solo[j] = true
		if _, ok := q.failed[j]; !ok {
			q.failed[j] = retry{}
		}
		if !q.queued[j] {
			q.queued[j] = true
			back = append(back, j)
		}
	}
	q.jobs = append(back, q.jobs...)
	q.stats.LastError = err.Error()
	q.log.Warn("the model refused a batch of texts to embed; sending them one by one", "texts", len(jobs), "err", err)
}

// transient says whether err may pass by itself (a timeout, a 503): an
// error that is not an *llm.Error counts as a refusal.
func transient(err error) bool {
	var e *llm.Error
	return errors.As(err, &e) && e.Transient
}

// CacheKey is where the vector of text under model is cached.
func CacheKey(model, text string) []byte {
	sum := sha256.Sum256([]byte(model + "\x00" + text))
	return storage.Key(storage.PrefixIndex, "embed", "cache", hex.EncodeToString(sum[:20]))
}

// noteMismatch tells st's queue of vectors a search skipped.
func noteMismatch(tx *storage.Tx, prefix []byte, m Mismatch) {
	v, ok := registry.Load(tx.Store())
	if !ok {
		return
	}
	q := v.(*Queue)
	model := m.Model
	if model == "" {
		model = "unknown"
	}
	msg := fmt.Sprintf("a search skipped %d stored vectors of dimension %d (model %s) under %s: the query vector has dimension %d; run embeddings.reembed",
		m.Skipped, m.Dim, model, prefix, m.QueryDim)
	if m.QueryModel != "" {
		msg = fmt.Sprintf("a search skipped %d stored vectors under %s made by model %s, not the query's (model %s; the query vector has dimension %d); run embeddings.reembed",
			m.Skipped, prefix, model, m.QueryModel, m.QueryDim)
	}
	q.mu.Lock()
	first := q.stats.Mismatch != msg
	q.stats.Mismatched += m.Skipped
	q.stats.Mismatch = msg
	q.mu.Unlock()
	if first {
		q.log.Warn("embedding dimension mismatch", "detail", msg)
	}
}
