package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

func convKey(c string) []byte  { return storage.Key(storage.PrefixHistory, "conv", c) }
func whereKey(c string) []byte { return storage.Key(storage.PrefixHistory, "where", c) }
func wherePrefix() []byte      { return storage.PrefixKey(storage.PrefixHistory, "where") }
func uttKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "utt", c, storage.Uint64(uint64(i)))
}
func uttPrefix(c string) []byte  { return storage.PrefixKey(storage.PrefixHistory, "utt", c) }
func sumKey(c string) []byte     { return storage.Key(storage.PrefixHistory, "sum", c) }
func foldPrefix(c string) []byte { return storage.PrefixKey(storage.PrefixHistory, "fold", c) }
func foldKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "fold", c, storage.Uint64(uint64(i)))
}
func vecKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "vec", c, storage.Uint64(uint64(i)))
}
func vecPrefix(c string) []byte { return storage.PrefixKey(storage.PrefixHistory, "vec", c) }

// nearestWhere is the n utterances of conversation c whose vectors are
// the most similar to q, best first, and their cosines: the vector
// ranking a fusion by rank needs (reading n keys, not a score for every
// vector, as similarities does), among the utterances keep accepts (all
// when keep is nil; it is asked from several goroutines at once).
// Vectors of another dimension or model are skipped and told of in
// engine.info.
func nearestWhere(tx *storage.Tx, c string, q []float32, n int, keep func(i int) bool) ([]int, map[int]float64, error) {
	var keepKey func([]byte) bool
	if keep != nil {
		keepKey = func(k []byte) bool {
			i, err := storage.ParseUint64(storage.LastPart(k))
			return err == nil && keep(int(i))
		}
	}
	near, _, err := embed.NearestWhere(tx, vecPrefix(c), q, n, keepKey)
	if err != nil {
		return nil, nil, err
	}
	order := make([]int, 0, len(near))
	cos := make(map[int]float64, len(near))
	for _, h := range near {
		i, err := storage.ParseUint64(storage.LastPart(h.Key))
		if err != nil {
			continue // not an utterance's vector
		}
		order = append(order, int(i))
		cos[int(i)] = h.Cosine
	}
	return order, cos, nil
}

// cosines adds to cos the cosine similarity of q to the vectors of the
// utterances at indexes of conversation c that have one (of q's
// dimension).
func cosines(tx *storage.Tx, c string, q []float32, indexes []int, cos map[int]float64) error {
	keys := make([][]byte, len(indexes))
	for j, i := range indexes {
		keys[j] = vecKey(c, i)
	}
	found, err := embed.Cosines(tx, vecPrefix(c), q, keys)
	for _, h := range found {
		if i, err := storage.ParseUint64(storage.LastPart(h.Key)); err == nil {
			cos[int(i)] = h.Cosine
		}
	}
	return err
}

// embqKey marks utterance i as waiting for its vector (package embed).
func embqKey(c string, i int) []byte {
	return storage.Key(storage.PrefixHistory, "embq", c, storage.Uint64(uint64(i)))
}
func embqPrefix(c string) []byte { return storage.PrefixKey(storage.PrefixHistory, "embq", c) }
func postingPrefix(c, term string) []byte {
	return storage.PrefixKey(storage.PrefixIndex, "history", "t", c, term)
}

// postingKey is a term's entry for utterance i: everything search needs is
// in the key (idx/history/t/<conv>/<term>/<index>.<speaker><tf>.<length>,
// empty value), so that it answers from key-only scans.
func postingKey(c, term string, i int, p posting) []byte {
	last := storage.Uint64(uint64(i)) + "." + string(p.speaker) + strconv.Itoa(p.tf) + "." + strconv.Itoa(p.dl)
	return storage.Key(storage.PrefixIndex, "history", "t", c, term, last)
}

// scanConversation calls fn with every key (and, if values, value) of
// conversation c in a store: its two single keys, read exactly — as prefixes
// they would also match the keys of a conversation whose name starts with
// c's ("default" and "default2") — and the keys under its own prefixes.
// fn may return storage.ErrStop to end the scan.
func scanConversation(tx *storage.Tx, c string, values bool, fn func(k, v []byte) error) error {
	stopped := false
	visit := func(k, v []byte) error {
		if err := fn(k, v); errors.Is(err, storage.ErrStop) {
			stopped = true
			return err
		} else if err != nil {
			return err
		}
		return nil
	}
	for _, k := range [][]byte{convKey(c), sumKey(c)} {
		v, err := tx.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if err := visit(k, v); err != nil {
			return ignoreStop(err)
		}
	}
	for _, p := range [][]byte{uttPrefix(c), vecPrefix(c), embqPrefix(c), foldPrefix(c), storage.PrefixKey(storage.PrefixIndex, "history", "t", c)} {
		var err error
		if values {
			err = tx.Scan(storage.Prefix(p), visit)
		} else {
			err = tx.Keys(storage.Prefix(p), func(k []byte) error { return visit(k, nil) })
		}
		if err != nil || stopped {
			return err
		}
	}
	return nil
}

func ignoreStop(err error) error {
	if errors.Is(err, storage.ErrStop) {
		return nil
	}
	return err
}

// stores hands out the store each backend lives in: the engine's own store
// for "durable" (unless the engine runs in memory), and for "in-memory" an
// in-memory store opened on first use (or the engine's, when that is in
// memory too).
type stores struct {
	env *kit.Env

	mu     sync.Mutex
	memory *storage.Store
}

func (s *stores) get(backend string) (*storage.Store, error) {
	switch backend {
	case BackendDurable:
		if s.env.Store.InMemory() {
			return nil, errs.New(errs.Validation, "backend: the durable backend needs a data directory; engram is running with --in-memory").
				With("field", "backend")
		}
		return s.env.Store, nil
	case BackendInMemory:
		if s.env.Store.InMemory() {
			return s.env.Store, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.memory == nil {
			m, err := storage.Open(storage.Options{InMemory: true, Logger: s.env.Log})
			if err != nil {
				return nil, fmt.Errorf("opening the in-memory history store: %w", err)
			}
			s.memory = m
		}
		return s.memory, nil
	}
	return nil, errs.New(errs.Validation, "backend: unknown backend %q; use %s or %s", backend, BackendInMemory, BackendDurable).
		With("field", "backend")
}

// open lists the stores opened so far: the engine's, and the in-memory
// one once used.
func (s *stores) open() []*storage.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*storage.Store{s.env.Store}
	if s.memory != nil {
		out = append(out, s.memory)
	}
	return out
}

func (s *stores) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memory == nil {
		return nil
	}
	return s.memory.Close()
}

// posting is one utterance's entry in a term's list: who said it, how often
// the term occurs, and the utterance's length in terms.
type posting struct {
	speaker byte
	tf, dl  int
}

var speakerCodes = map[string]byte{"user": 'u', "assistant": 'a', "system": 's'}

// parsePosting reads the utterance index and posting from the last part of
// a posting key.
func parsePosting(last string) (int, posting, error) {
	index, rest, ok := strings.Cut(last, ".")
	sp, dl, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(sp) < 2 {
		return 0, posting{}, fmt.Errorf("bad posting key part %q", last)
	}
	i, err := storage.ParseUint64(index)
	if err != nil {
		return 0, posting{}, err
	}
	tf, err1 := strconv.Atoi(sp[1:])
	n, err2 := strconv.Atoi(dl)
	if err1 != nil || err2 != nil {
		return 0, posting{}, fmt.Errorf("bad posting key part %q", last)
	}
	return int(i), posting{speaker: sp[0], tf: tf, dl: n}, nil
}

// loadConversation reads a conversation's state (nil when it has none).
func loadConversation(tx *storage.Tx, c string) (*Conversation, error) {
	var conv Conversation
	err := tx.GetJSON(convKey(c), &conv)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return &conv, err
}

// where names the backend a conversation lives in ("" if it has none yet).
func (h *History) where(c string) (string, error) {
	var backend string
	err := h.env.Store.View(func(tx *storage.Tx) error {
		b, err := tx.Get(whereKey(c))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		backend = string(b)
		return err
	})
	return backend, err
}

// storeOf is the store a conversation lives in (or will, when new).
func (h *History) storeOf(c string) (*storage.Store, string, error) {
	backend, err := h.where(c)
	if err != nil {
		return nil, "", err
	}
	if backend == "" {
		backend = h.defaultBackend
	}
	st, err := h.stores.get(backend)
	return st, backend, err
}

// authorize returns a PermissionError unless call's principal may do op
// (access.Read, Write or Delete) on conv. A conversation with no state yet
// holds nothing: whoever writes or configures it first becomes its owner.
// An empty op checks nothing: for the history's own work (the engine's
// counts, a share or revoke, which the ACL checks itself).
func (h *History) authorize(call action.Call, conv *Conversation, op string) error {
	if conv == nil || op == "" {
		return nil
	}
	return access.Check(call.Principal, conv.acl(), op, object(conv.Conversation), h.env.Clock.Now())
}

// afterFailure records in the trace what a failed call must leave behind
// even though its transaction rolled back: an access denial.
func (h *History) afterFailure(ctx context.Context, call action.Call, err error) error {
	// The engine's one way: counted, and shown to the owner too.
	return h.env.TraceFailure(ctx, call, err)
}

// view runs fn on a conversation's store (its state nil if it has none),
// once call's principal is found to hold op on it.
func (h *History) view(call action.Call, c, op string, fn func(tx *storage.Tx, conv *Conversation) error) error {
	st, _, err := h.storeOf(c)
	if err != nil {
		return err
	}
	return st.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil {
			return err
		}
		if err := h.authorize(call, conv, op); err != nil {
			return err
		}
		return fn(tx, conv)
	})
}

// update runs fn on a conversation's store in a read-write transaction,
// once call's principal is found to hold op on it, creating the
// conversation (with defaults, owned by that principal) if it does not
// exist yet, and saves its state afterwards.
func (h *History) update(ctx context.Context, call action.Call, c, op string, fn func(tx *kit.Txn, conv *Conversation) error) error {
	unlock := h.lock(c)
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	recorded, err := h.where(c)
	if err != nil {
		return err
	}
	backend := recorded
	if backend == "" {
		backend = h.defaultBackend
	}
	st, err := h.stores.get(backend)
	if err != nil {
		return err
	}
	err = h.env.UpdateOn(ctx, st, func(tx *kit.Txn) error {
		conv, err := loadConversation(tx.Tx, c)
		if err != nil {
			return err
		}
		if err := h.authorize(call, conv, op); err != nil {
			return err
		}
		if conv == nil {
			conv = newConversation(call, c, backend, h.env.Clock.Now())
		}
		if err := fn(tx, conv); err != nil {
			return err
		}
		conv.UpdatedAt = h.env.Clock.Now()
		if recorded != backend && st == h.env.Store {
			// Where it lives, the first time, with it: a kill between two
			// transactions would leave a conversation no where record
			// names.
			if err := tx.Set(whereKey(c), []byte(backend)); err != nil {
				return err
			}
		}
		return tx.SetJSON(convKey(c), conv)
	})
	if err != nil {
		return err
	}
	// A conversation in another store (in memory) is listed in the
	// engine's store after it commits: a kill in between loses both, as
	// it loses everything in memory. Moves happen under the lock, so what
	// was read above still holds.
	if recorded != backend && st != h.env.Store {
		err = h.env.Update(ctx, func(tx *kit.Txn) error { return tx.Set(whereKey(c), []byte(backend)) })
	}
	unlock()
	locked = false
	return err
}

// newConversation is the state of a conversation call's principal is
// about to create: the defaults, and that principal as its owner.
func newConversation(call action.Call, c, backend string, now time.Time) *Conversation {
	return &Conversation{Conversation: c, BufferSize: DefaultBufferSize, SummaryTokenLimit: DefaultSummaryTokenLimit,
		Backend: backend, CreatedAt: now, Owner: call.Principal, fresh: true}
}

// conversations lists every conversation with its backend.
func (h *History) conversations() (map[string]string, error) {
	out := map[string]string{}
	err := h.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(wherePrefix()), func(k, v []byte) error {
			out[storage.LastPart(k)] = string(v)
			return nil
		})
	})
	return out, err
}

func readUtterance(tx *storage.Tx, c string, i int) (*Utterance, error) {
	var u Utterance
	if err := tx.GetJSON(uttKey(c, i), &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// oldestBuffered is the oldest utterance in the buffer (nil if none): the
// one at FirstBuffered, unless that one was deleted.
func oldestBuffered(tx *storage.Tx, conv *Conversation) (*Utterance, error) {
	u, err := readUtterance(tx, conv.Conversation, conv.FirstBuffered)
	if err == nil && !u.Evicted {
		return u, nil
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	var oldest *Utterance
	err = buffered(tx, conv, func(u *Utterance) error { oldest = u; return storage.ErrStop })
	return oldest, err
}

// buffered calls fn with each utterance in the buffer, oldest first.
func buffered(tx *storage.Tx, conv *Conversation, fn func(u *Utterance) error) error {
	r := storage.Range{Prefix: uttPrefix(conv.Conversation), Start: uttKey(conv.Conversation, conv.FirstBuffered)}
	return tx.Scan(r, func(_, v []byte) error {
		var u Utterance
		if err := json.Unmarshal(v, &u); err != nil {
			return err
		}
		if u.Evicted {
			return nil
		}
		return fn(&u)
	})
}
