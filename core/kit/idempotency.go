package kit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/storage"
)

// MaxIdempotencyKey is the longest idempotency key engram accepts, in bytes.
const MaxIdempotencyKey = 128

// IdempotencyWindow is how long, on the engine clock, a request's record
// answers a retry with the same key; after it the key may be used afresh.
const IdempotencyWindow = 24 * time.Hour

// idempotencyPurgeBatch bounds the expired records that recording one
// request drops. More than one, so that the purge catches up with the
// writes however fast they come (one recording at a time purges, and at
// most wire.MaxConcurrent, 64, requests run at once: twice that leaves
// room); few, so that a write's transaction stays small.
const idempotencyPurgeBatch = 128

// onceIndexSpace names the records' time index: a key-only entry
// idx/idem/at/<at>/<principal>/<key> per record, oldest first, so that
// finding the expired records reads only them.
const onceIndexSpace = "idem"

// onceIndexKey is a record's entry in the time index.
func onceIndexKey(at time.Time, principal, key string) []byte {
	return storage.Key(storage.PrefixIndex, onceIndexSpace, "at", storage.Time(at), principal, key)
}

// onceIndexedKey marks a store whose every record has its time index
// entry. Records written before the index existed have none: until this
// is set, recording a request also sweeps a batch of them (sweepOnce).
var onceIndexedKey = storage.Key(storage.PrefixMeta, "idem_indexed")

// Once is a write request that carries an idempotency key
// (conn.Request.IdempotencyKey): what RunOnce records, and what a retry
// must repeat exactly.
type Once struct {
	// Key is the request's idempotency key; keys are per Principal.
	Key       string
	Principal string
	Action    string
	// Args is the request's arguments, as sent; a retry must send the
	// same JSON (compared after removing insignificant white space).
	Args json.RawMessage
	// Joinable: the action writes only through Update on the engine's
	// store and waits on nothing (action.Spec.Joinable). It then runs
	// inside the transaction that records its result (Join), so that its
	// writes and its answer commit together: no engine stopping between
	// them can leave a retry without the result.
	Joinable bool
}

// onceRecord is what the store keeps of a request under its key, at
// idem/<principal>/<key>. It is "pending" from the first transaction of
// the request that commits until its result is recorded ("done"); a
// joinable request's is "done" from the start, written in its one
// transaction (runJoined).
type onceRecord struct {
	State      string    `json:"state"`
	Action     string    `json:"action"`
	ArgsSHA256 string    `json:"args_sha256"`
	Principal  string    `json:"principal"`
	At         time.Time `json:"at"`
	// Result is the action's result JSON as a string, so that a replay
	// returns exactly its bytes.
	Result string `json:"result,omitempty"`
	// Unkept is the size in bytes of a result too large to keep
	// (keptResult): a retry is told that the request committed.
	Unkept int `json:"unkept,omitempty"`
}

// keptResult bounds the result a record keeps: what one value of the
// store holds, with room for the rest of the record (an in-memory store
// takes values up to 1 MiB; on disk, a value log file's 64 MiB).
func keptResult(st *storage.Store) int {
	if st.InMemory() {
		return 1<<20 - 4<<10
	}
	return 48 << 20
}

const (
	oncePending = "pending"
	onceDone    = "done"
)

// onceMark travels in the context of a request that carries a key: the
// first transaction of it that commits on the engine's store also writes
// the pending record (UpdateOn), so that what the request changed and the
// fact that it ran cannot be told apart by a crash.
type onceMark struct {
	key       []byte
	pending   []byte
	index     []byte // its time index entry (onceIndexKey)
	committed atomic.Bool
}

type onceKey struct{}

// markOnce adds the pending record to a transaction of the request
// ctx belongs to, until one has committed.
func markOnce(ctx context.Context, tx *storage.Tx) (*onceMark, error) {
	m, _ := ctx.Value(onceKey{}).(*onceMark)
	if m == nil || m.committed.Load() {
		return nil, nil
	}
	if m.index != nil {
		if err := tx.Set(m.index, nil); err != nil {
			return nil, err
		}
	}
	return m, tx.Set(m.key, m.pending)
}

// CheckIdempotencyKey validates a key: 1 to MaxIdempotencyKey bytes of
// printable ASCII (space to tilde).
func CheckIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return Validation("idempotency_key", "is %d bytes; at most %d", len(key), MaxIdempotencyKey).With("limit", MaxIdempotencyKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return Validation("idempotency_key", "has a byte 0x%02x at %d; use printable ASCII only (a UUID, say)", key[i], i)
		}
	}
	return nil
}

// argsHash is the hex SHA-256 of args without insignificant white space
// (none at all is "{}").
func argsHash(args json.RawMessage) string {
	var b []byte
	if len(args) == 0 || string(args) == "null" {
		b = []byte("{}")
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			b = args // not JSON: the action says so; hash it as it is
		} else {
			b = buf.Bytes()
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RunOnce runs a write request that carries an idempotency key at most once
// (within IdempotencyWindow). The first time, run runs; if it succeeds, its
// result is recorded under the key, and a later RunOnce with the same key
// (and principal) returns that result, byte for byte, without running
// again. The same key with another action or other args is a
// ValidationError naming idempotency_key; a failed run records nothing, so
// a retry runs again. A request that committed but whose result was never
// recorded (the engine stopped in between) is a ConflictError. Requests of
// an action that a keyed request runs in turn share its key.
func (e *Env) RunOnce(ctx context.Context, o Once, run func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if ctx.Value(onceKey{}) != nil {
		return run(ctx) // part of a keyed request: recorded with it
	}
	if err := CheckIdempotencyKey(o.Key); err != nil {
		return nil, err
	}
	running := o.Principal + "\x00" + o.Key
	e.mu.Lock()
	if e.onceRunning[running] {
		e.mu.Unlock()
		return nil, errs.New(errs.Conflict, "a request with idempotency_key %q is still running; send it again once it has finished to get its result", o.Key).
			With("idempotency_key", o.Key)
	}
	if e.onceRunning == nil {
		e.onceRunning = map[string]bool{}
	}
	e.onceRunning[running] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.onceRunning, running)
		e.mu.Unlock()
	}()

	key := storage.Key(storage.PrefixIdempotency, o.Principal, o.Key)
	sum := argsHash(o.Args)
	now := e.Clock.Now()
	var rec onceRecord
	found := false
	err := e.Store.View(func(tx *storage.Tx) error {
		err := tx.GetJSON(key, &rec)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		return nil, err
	}
	if found && now.Sub(rec.At) < IdempotencyWindow {
		switch {
		case rec.Action != o.Action || rec.ArgsSHA256 != sum:
			return nil, Validation("idempotency_key", "%q is already used for another request (%s at %s); a retry must send the same action and args, a new request a new key",
				o.Key, rec.Action, rec.At.Format(time.RFC3339Nano))
		case rec.State == onceDone && rec.Unkept > 0:
			return nil, errs.New(errs.Conflict, "this request already committed (idempotency_key %q, at %s) but its result (%s) was too large to keep; read the object to see its state",
				o.Key, rec.At.Format(time.RFC3339Nano), input.Size(int64(rec.Unkept))).With("idempotency_key", o.Key).With("committed_at", rec.At)
		case rec.State == onceDone:
			return json.RawMessage(rec.Result), nil
		default:
			return nil, errs.New(errs.Conflict, "this request already committed (idempotency_key %q, at %s) but its result was lost when the engine stopped; read the object to see its state",
				o.Key, rec.At.Format(time.RFC3339Nano)).With("idempotency_key", o.Key).With("committed_at", rec.At)
		}
	}

	rec = onceRecord{State: oncePending, Action: o.Action, ArgsSHA256: sum, Principal: o.Principal, At: now}
	index := onceIndexKey(now, o.Principal, o.Key)
	pending, err := json.Marshal(rec)
	if err != nil {
		return nil, errs.New(errs.Internal, "encoding an idempotency record: %w", err)
	}
	if o.Joinable {
		out, err := e.runJoined(ctx, o.Key, key, index, rec, pending, run)
		if !errors.Is(err, ErrUnjoined) {
			return out, err
		}
		// Something of it could not join the transaction (an Update
		// inside another, say): nothing of it committed, and it runs
		// again as any other write does.
	}
	m := &onceMark{key: key, pending: pending, index: index}
	out, err := run(context.WithValue(ctx, onceKey{}, m))
	return e.finishMarked(ctx, o.Key, rec, m, out, err)
}

// finishMarked ends a request that ran with the pending mark m (whose
// first transaction that commits on the engine's store writes the pending
// record): a failure drops the record, if one committed; a result is
// recorded in a transaction of its own.
func (e *Env) finishMarked(ctx context.Context, name string, rec onceRecord, m *onceMark, out json.RawMessage, err error) (json.RawMessage, error) {
	key := m.key
	if err != nil {
		if m.committed.Load() {
			// Something of the failed request committed (its access
			// denial's trace entry, say): it records nothing, so a retry
			// runs again.
			if derr := e.dropPending(ctx, key, m.index); derr != nil {
				e.Log.Warn("dropping an idempotency record failed", "key", name, "err", derr)
			}
		}
		return nil, err
	}
	rec.State, rec.Result = onceDone, string(out)
	if werr := e.recordOnce(ctx, key, m.index, rec); werr != nil {
		// The action committed: its result stands. A retry will be told
		// that the result was lost.
		e.Log.Warn("recording an idempotent request's result failed", "key", name, "err", werr)
	}
	return out, nil
}

// runJoined runs a joinable request inside the transaction that records
// its result, as a plan's subtask runs inside the one that records it
// done: both commit, or neither does and a retry runs it afresh. A
// storage conflict runs it again from the same state, as the store
// retries any transaction; a failure rolls its writes back, and records
// nothing. Its Updates join strictly (JoinStrict): one after an Update
// that failed runs on its own, with the pending mark (as cortex.update's
// max_retries re-applies after a conflict), and the request then ends
// as one run unjoined does (finishMarked); one that cannot run either way
// makes runJoined roll everything back and return ErrUnjoined.
func (e *Env) runJoined(ctx context.Context, name string, key, index []byte, rec onceRecord, pending []byte, run func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	// Requests this one runs in turn share its key (RunOnce), and have
	// no pending mark to write: the result is written with them.
	shared := &onceMark{}
	shared.committed.Store(true)
	// An Update that escapes the transaction marks the request pending
	// with its commit.
	m := &onceMark{key: key, pending: pending, index: index}
	p := e.beginPurge()
	var out json.RawMessage
	var escaped bool
	var runErr error
	err := e.Update(context.WithValue(ctx, onceKey{}, shared), func(tx *Txn) error {
		joined, joint := JoinStrict(context.WithValue(ctx, onceKey{}, m), tx)
		res, err := run(joined)
		broken := joint.Close()
		switch {
		case joint.Refused():
			return ErrUnjoined
		case joint.Escaped():
			// What it wrote on its own stays; what is in tx is what
			// failed. It ends as a request run unjoined does.
			out, runErr, escaped = res, err, true
			return errEscaped
		case err != nil:
			return err
		case broken:
			// It succeeded after an Update that failed, whose writes
			// so far are in tx: run it again unjoined.
			return ErrUnjoined
		}
		rec.State, rec.Result = onceDone, string(res)
		if err := p.write(tx.Tx, key, index, rec); err != nil {
			return err
		}
		out = res
		return nil
	})
	e.endPurge(p, err == nil)
	if escaped {
		return e.finishMarked(ctx, name, rec, m, out, runErr)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errEscaped rolls back runJoined's transaction after an Update of the
// request escaped it.
var errEscaped = errors.New("kit: a write of the request committed on its own")

// recordOnce writes a request's result under its key (p.write).
func (e *Env) recordOnce(ctx context.Context, key, index []byte, rec onceRecord) error {
	p := e.beginPurge()
	err := e.Store.Update(context.WithoutCancel(ctx), func(tx *storage.Tx) error {
		return p.write(tx, key, index, rec)
	})
	e.endPurge(p, err == nil)
	return err
}

// oncePurge is one recording's share of dropping expired records: whether
// it purges (one recording at a time does: two would only collide on the
// same oldest records and retry), and where its sweep of records from
// before the time index starts and ended.
type oncePurge struct {
	purge, swept bool
	from, next   []byte
	done         bool
	// base is the engine's own time (the clock's base, not a request's
	// at), when its clock has one: no purge goes past it (judge).
	base time.Time
	// kept bounds the result the record keeps (keptResult).
	kept int
}

// baseClock is the engine clock's base (clock.Pinnable).
type baseClock interface{ Base() time.Time }

func (e *Env) beginPurge() *oncePurge {
	var base time.Time
	if b, ok := e.Clock.(baseClock); ok {
		base = b.Base()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := &oncePurge{purge: !e.oncePurging, swept: e.onceSwept, from: e.onceSweepFrom, base: base, kept: keptResult(e.Store)}
	e.oncePurging = true
	return p
}

// endPurge keeps where the sweep got to, if its transaction committed.
func (e *Env) endPurge(p *oncePurge, committed bool) {
	if !p.purge {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.oncePurging = false
	if committed && !p.swept {
		e.onceSweepFrom, e.onceSwept = p.next, p.done
	}
}

// write writes a request's result under its key and its time index entry,
// and drops up to idempotencyPurgeBatch expired records in the same
// transaction.
func (p *oncePurge) write(tx *storage.Tx, key, index []byte, rec onceRecord) error {
	if len(rec.Result) > p.kept {
		rec.Result, rec.Unkept = "", len(rec.Result)
	}
	if err := tx.SetJSON(key, rec); err != nil {
		return err
	}
	if err := tx.Set(index, nil); err != nil {
		return err
	}
	if !p.purge {
		return nil
	}
	now := p.judge(rec.At)
	if err := purgeOnce(tx, now); err != nil {
		return err
	}
	if p.swept {
		return nil
	}
	var err error
	p.next, p.done, err = sweepOnce(tx, p.from, now)
	return err
}

// judge is the time by which a recording at "at" finds records expired:
// at, but never later than the engine's own time. A request pinned to a
// later at (a script's step, or any client's, over TCP too) would
// otherwise drop the records of every principal that requests on the
// engine's time still find live, and their retries would run again.
func (p *oncePurge) judge(at time.Time) time.Time {
	if !p.base.IsZero() && p.base.Before(at) {
		return p.base
	}
	return at
}

// purgeOnce drops up to idempotencyPurgeBatch records that expired by now,
// oldest first, with their time index entries. An entry left by a key
// used afresh after it expired goes without its (newer) record.
func purgeOnce(tx *storage.Tx, now time.Time) error {
	cutoff := now.Add(-IdempotencyWindow)
	var expired [][]byte
	err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, onceIndexSpace, "at")), func(k []byte) error {
		parts := storage.SplitKey(storage.PrefixIndex, k)
		if len(parts) == 5 {
			if at, err := storage.ParseTime(parts[2]); err == nil && at.After(cutoff) {
				return storage.ErrStop // this one and every later one are live
			}
		}
		expired = append(expired, k)
		if len(expired) == idempotencyPurgeBatch {
			return storage.ErrStop // the rest with the next record
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range expired {
		if err := tx.Delete(k); err != nil {
			return err
		}
		parts := storage.SplitKey(storage.PrefixIndex, k)
		if len(parts) != 5 {
			continue
		}
		if err := dropExpired(tx, storage.Key(storage.PrefixIdempotency, parts[3], parts[4]), now); err != nil {
			return err
		}
	}
	return nil
}

// dropExpired deletes the record at key if it expired by now, or cannot be
// read.
func dropExpired(tx *storage.Tx, key []byte, now time.Time) error {
	var r onceRecord
	err := tx.GetJSON(key, &r)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err == nil && now.Sub(r.At) < IdempotencyWindow:
		return nil
	}
	return tx.Delete(key)
}

// sweepOnce gives up to idempotencyPurgeBatch records from the key from
// on, written before the time index existed, their entry in it, and drops
// those that expired by now. It returns where the next sweep starts, and
// whether it reached the last record: then it marks the store as indexed.
func sweepOnce(tx *storage.Tx, from []byte, now time.Time) (next []byte, done bool, err error) {
	if ok, err := tx.Has(onceIndexedKey); err != nil || ok {
		return nil, ok, err
	}
	type seen struct {
		key []byte
		rec onceRecord
		bad bool
	}
	var batch []seen
	err = tx.Scan(storage.Range{Prefix: []byte(storage.PrefixIdempotency), Start: from}, func(k, v []byte) error {
		if len(batch) == idempotencyPurgeBatch {
			next = k
			return storage.ErrStop
		}
		s := seen{key: k}
		s.bad = json.Unmarshal(v, &s.rec) != nil
		batch = append(batch, s)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	for _, s := range batch {
		parts := storage.SplitKey(storage.PrefixIdempotency, s.key)
		switch {
		case s.bad || len(parts) != 2 || now.Sub(s.rec.At) >= IdempotencyWindow:
			if err := tx.Delete(s.key); err != nil {
				return nil, false, err
			}
			if len(parts) == 2 && !s.bad {
				if err := tx.Delete(onceIndexKey(s.rec.At, parts[0], parts[1])); err != nil {
					return nil, false, err
				}
			}
		default:
			if err := tx.Set(onceIndexKey(s.rec.At, parts[0], parts[1]), nil); err != nil {
				return nil, false, err
			}
		}
	}
	if next != nil {
		return next, false, nil
	}
	return nil, true, tx.Set(onceIndexedKey, []byte("1"))
}

// dropPending removes a pending record of a request that failed, and its
// time index entry.
func (e *Env) dropPending(ctx context.Context, key, index []byte) error {
	return e.Store.Update(context.WithoutCancel(ctx), func(tx *storage.Tx) error {
		var r onceRecord
		err := tx.GetJSON(key, &r)
		if errors.Is(err, storage.ErrNotFound) || err == nil && r.State != oncePending {
			return nil
		}
		if err != nil {
			return err
		}
		if err := tx.Delete(index); err != nil {
			return err
		}
		return tx.Delete(key)
	})
}
