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
	"github.com/engram-console/engram/storage"
)

// MaxIdempotencyKey is the longest idempotency key engram accepts, in bytes.
const MaxIdempotencyKey = 128

// IdempotencyWindow is how long, on the engine clock, a request's record
// answers a retry with the same key; after it the key may be used afresh.
const IdempotencyWindow = 24 * time.Hour

// idempotencyPurgeEvery is how often, on the engine clock, recording a
// request also drops the records older than IdempotencyWindow.
const idempotencyPurgeEvery = time.Hour

// maxPurge bounds the expired records one purge drops, so that its
// transaction stays small.
const maxPurge = 1000

var errPurgeFull = errors.New("purge full")

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
}

// onceRecord is what the store keeps of a request under its key, at
// idem/<principal>/<key>. It is "pending" from the first transaction of
// the request that commits until its result is recorded ("done").
type onceRecord struct {
	State      string    `json:"state"`
	Action     string    `json:"action"`
	ArgsSHA256 string    `json:"args_sha256"`
	Principal  string    `json:"principal"`
	At         time.Time `json:"at"`
	// Result is the action's result JSON as a string, so that a replay
	// returns exactly its bytes.
	Result string `json:"result,omitempty"`
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
		case rec.State == onceDone:
			return json.RawMessage(rec.Result), nil
		default:
			return nil, errs.New(errs.Conflict, "this request already committed (idempotency_key %q, at %s) but its result was lost when the engine stopped; read the object to see its state",
				o.Key, rec.At.Format(time.RFC3339Nano)).With("idempotency_key", o.Key).With("committed_at", rec.At)
		}
	}

	rec = onceRecord{State: oncePending, Action: o.Action, ArgsSHA256: sum, Principal: o.Principal, At: now}
	pending, err := json.Marshal(rec)
	if err != nil {
		return nil, errs.New(errs.Internal, "encoding an idempotency record: %w", err)
	}
	m := &onceMark{key: key, pending: pending}
	out, err := run(context.WithValue(ctx, onceKey{}, m))
	if err != nil {
		if m.committed.Load() {
			// Something of the failed request committed (its access
			// denial's trace entry, say): it records nothing, so a retry
			// runs again.
			if derr := e.dropPending(ctx, key); derr != nil {
				e.Log.Warn("dropping an idempotency record failed", "key", o.Key, "err", derr)
			}
		}
		return nil, err
	}
	rec.State, rec.Result = onceDone, string(out)
	if werr := e.recordOnce(ctx, key, rec); werr != nil {
		// The action committed: its result stands. A retry will be told
		// that the result was lost.
		e.Log.Warn("recording an idempotent request's result failed", "key", o.Key, "err", werr)
	}
	return out, nil
}

// recordOnce writes a request's result under its key, and now and then
// drops the records that have expired.
func (e *Env) recordOnce(ctx context.Context, key []byte, rec onceRecord) error {
	e.mu.Lock()
	purge := rec.At.Sub(e.oncePurged) >= idempotencyPurgeEvery || rec.At.Before(e.oncePurged)
	if purge {
		e.oncePurged = rec.At
	}
	e.mu.Unlock()
	return e.Store.Update(context.WithoutCancel(ctx), func(tx *storage.Tx) error {
		if err := tx.SetJSON(key, rec); err != nil {
			return err
		}
		if !purge {
			return nil
		}
		var old [][]byte
		err := tx.Scan(storage.Prefix([]byte(storage.PrefixIdempotency)), func(k, v []byte) error {
			var r onceRecord
			if err := json.Unmarshal(v, &r); err != nil || rec.At.Sub(r.At) >= IdempotencyWindow {
				old = append(old, append([]byte(nil), k...))
			}
			if len(old) == maxPurge {
				return errPurgeFull // the rest at a later purge
			}
			return nil
		})
		if err != nil && !errors.Is(err, errPurgeFull) {
			return err
		}
		for _, k := range old {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropPending removes a pending record of a request that failed.
func (e *Env) dropPending(ctx context.Context, key []byte) error {
	return e.Store.Update(context.WithoutCancel(ctx), func(tx *storage.Tx) error {
		var r onceRecord
		err := tx.GetJSON(key, &r)
		if errors.Is(err, storage.ErrNotFound) || err == nil && r.State != oncePending {
			return nil
		}
		if err != nil {
			return err
		}
		return tx.Delete(key)
	})
}
