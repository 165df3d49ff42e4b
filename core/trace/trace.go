// Package trace is the turn trace: an append-only log of what the engine did
// and why, entry by entry, grouped by turn. Subsystems append entries inside
// the transaction that makes the change they describe, so the trace never
// claims a change that did not commit.
//
// Two things change a stored entry, and nothing else does: retention
// deletes the oldest entries (at most Retention.MaxEntries, none older than
// Retention.MaxAge, pruned a bounded batch at a time as entries are
// written), and a repeated access denial is counted on the entry of the
// first instead of adding one per attempt (AppendDenial).
//
// An entry may name its subject (the object it is about); List shows an
// entry to a viewer only if the viewer wrote it or may read its subject.
package trace

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/storage"
)

// Entry is one line of the trace.
type Entry struct {
	Seq       uint64          `json:"seq"`
	TurnID    string          `json:"turn_id,omitempty"`
	Kind      string          `json:"kind"`
	Message   string          `json:"message"`
	Principal string          `json:"principal,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	At        time.Time       `json:"at"`
}

// Subject names the object a trace entry is about, as an access.Registry
// knows it: its type ("cortex item", "thread", "memory store", …) and id.
type Subject struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Owner, when set, narrows who sees the entry to the principal who
	// wrote it and this owner: an access denial is the refused
	// principal's and the object owner's business, not every reader's.
	Owner string `json:"owner,omitempty"`
}

// stored is an entry as the store keeps it: with its subject (not shown:
// it decides who sees the entry).
type stored struct {
	Entry
	Subject *Subject `json:"subject,omitempty"`
	// Denial is an access denial's key (AppendDenial's same), so that
	// pruning the entry also drops the index of its repeats.
	Denial string `json:"denial,omitempty"`
}

// Filter selects entries. Zero fields match everything.
type Filter struct {
	TurnID string
	Kind   string
	// Limit keeps the most recent Limit entries (0: all).
	Limit int
	// Viewer, when Access is set, is the principal listing: only entries
	// it may see are returned (see Visible).
	Viewer string
	// Access answers whether Viewer may read an entry's subject; nil
	// lists every entry (the engine's own use, tests).
	Access *access.Registry
}

// Visible reports whether viewer may see e, whose subject is subject (nil:
// none): it wrote e (an entry without a principal is the default agent's,
// access.LegacyOwner), or viewer may read the subject (or, for a subject
// with an Owner, viewer is that owner). An entry with neither is its
// writer's alone.
func Visible(tx *storage.Tx, reg *access.Registry, viewer string, e Entry, subject *Subject) (bool, error) {
	writer := e.Principal
	if writer == "" {
		writer = access.LegacyOwner
	}
	if viewer == writer {
		return true, nil
	}
	if subject == nil {
		return false, nil
	}
	if subject.Owner != "" {
		return viewer == subject.Owner, nil
	}
	return reg.CanRead(tx, subject.Type, viewer, subject.ID)
}

// ListArgs is the trace.list action's arguments.
type ListArgs struct {
	Turn  string `json:"turn,omitempty" help:"only this turn's entries"`
	Kind  string `json:"kind,omitempty" help:"only entries of this kind, e.g. \"turn.start\""`
	Limit int    `json:"limit,omitempty" help:"at most this many, the most recent (default 100, 0 for the default)"`
}

// ListResult is the trace.list action's result.
type ListResult struct {
	// Entries are the matching entries, oldest first.
	Entries []Entry `json:"entries"`
	Count   int     `json:"count"`
	// More says older matching entries were left out by the limit.
	More bool `json:"more"`
}

const indexSpace = "trace"

// Retention bounds the trace. Entries beyond it are deleted oldest first,
// a bounded batch at a time while entries are written, so no write pays
// for a sweep of the whole trace.
type Retention struct {
	// MaxEntries: at most this many entries are kept (by sequence number:
	// an entry more than MaxEntries older than the newest goes). 0: no
	// limit by count.
	MaxEntries uint64
	// MaxAge: entries older than this, by the engine clock of the entry
	// being written, go. 0: no limit by age.
	MaxAge time.Duration
	// DenialWindow: a denial repeating one (same principal, operation and
	// object) whose last occurrence is at most this old is counted on that
	// entry instead of adding one. 0: every denial is its own entry.
	DenialWindow time.Duration
}

// DefaultRetention is the trace's retention unless configured otherwise:
// 100,000 entries, 30 days, and repeated denials within an hour counted
// on one entry.
var DefaultRetention = Retention{MaxEntries: 100_000, MaxAge: 30 * 24 * time.Hour, DenialWindow: time.Hour}

// Pruning: every pruneEvery-th entry written deletes up to pruneBatch of
// the oldest entries beyond retention, in the writer's transaction. More
// are deleted than written between prunes, so the trace converges to its
// bound however fast it grows, and most writes read nothing extra (two
// writers pruning at once would conflict, and one would retry).
const (
	pruneEvery = 32
	pruneBatch = 128
)

// Log is the trace over a store.
type Log struct {
	store *storage.Store
	seq   *storage.Sequence

	mu        sync.Mutex
	retention Retention
	// floor is where pruning starts its scan: the oldest entry a prune
	// last saw (committed: it read it). Scanning from the start of the
	// trace instead would wade through every entry deleted so far, which
	// the store keeps as tombstones for a while.
	floor uint64
}

// Open returns the trace kept in store, with the retention configured
// there by trace.configure (DefaultRetention if none was).
func Open(store *storage.Store) (*Log, error) {
	seq, err := store.Sequence("trace")
	if err != nil {
		return nil, err
	}
	l := &Log{store: store, seq: seq, retention: DefaultRetention}
	if err := l.loadRetention(); err != nil {
		return nil, err
	}
	return l, nil
}

// SetRetention replaces the retention; it applies from the next write.
func (l *Log) SetRetention(r Retention) {
	l.mu.Lock()
	l.retention = r
	l.mu.Unlock()
}

// Retention returns the retention in force.
func (l *Log) Retention() Retention {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retention
}

// Append adds e inside tx, assigning its sequence number, and returns it as
// stored. The caller commits tx (and publishes the entry once it has).
func (l *Log) Append(tx *storage.Tx, e Entry) (Entry, error) { return l.add(tx, e, nil, "") }

// AppendAbout is Append for an entry about subject: trace.list shows it to
// its writer and to every principal who may read the subject.
func (l *Log) AppendAbout(tx *storage.Tx, e Entry, subject *Subject) (Entry, error) {
	return l.add(tx, e, subject, "")
}

// add is Append, with a subject and an access denial's key.
func (l *Log) add(tx *storage.Tx, e Entry, subject *Subject, denial string) (Entry, error) {
	n, err := l.seq.Next()
	if err != nil {
		return Entry{}, err
	}
	e.Seq = n
	key := storage.Uint64(n)
	if err := tx.SetJSON(storage.Key(storage.PrefixTrace, key), stored{Entry: e, Subject: subject, Denial: denial}); err != nil {
		return Entry{}, err
	}
	if e.TurnID != "" {
		if err := tx.Set(storage.IndexKey(indexSpace, "turn", e.TurnID, key), nil); err != nil {
			return Entry{}, err
		}
	}
	if err := tx.Set(storage.IndexKey(indexSpace, "kind", e.Kind, key), nil); err != nil {
		return Entry{}, err
	}
	if n%pruneEvery == 0 {
		if _, err := l.prune(tx, n, e.At, pruneBatch); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

// AppendDenial is Append for an access denial, with the key saying which
// denials are the same (principal, operation, object). If the same denial
// was last recorded at most Retention.DenialWindow before e.At, that
// entry's data counts this one ("count", "first_at", "last_at") and is
// returned with repeated set; else e is appended as Append does.
func (l *Log) AppendDenial(tx *storage.Tx, e Entry, subject *Subject, same string) (out Entry, repeated bool, err error) {
	window := l.Retention().DenialWindow
	idx := storage.IndexKey(indexSpace, "denial", same, "last")
	if window > 0 {
		v, err := tx.Get(idx)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return Entry{}, false, err
		}
		if err == nil {
			prev, ok, err := l.repeat(tx, string(v), e.At, window)
			if err != nil || ok {
				return prev, ok, err
			}
		}
	}
	if out, err = l.add(tx, e, subject, same); err != nil {
		return Entry{}, false, err
	}
	return out, false, tx.Set(idx, []byte(storage.Uint64(out.Seq)))
}

// denialCount is what a repeated denial adds to its entry's data.
type denialCount struct {
	Count   int       `json:"count"`
	FirstAt time.Time `json:"first_at"`
	LastAt  time.Time `json:"last_at"`
}

// repeat counts a denial at now on the entry with sequence key seq, if it
// is still kept and its last occurrence is within window.
func (l *Log) repeat(tx *storage.Tx, seq string, now time.Time, window time.Duration) (Entry, bool, error) {
	var s stored
	if err := tx.GetJSON(storage.Key(storage.PrefixTrace, seq), &s); errors.Is(err, storage.ErrNotFound) {
		return Entry{}, false, nil // pruned meanwhile
	} else if err != nil {
		return Entry{}, false, err
	}
	data := map[string]json.RawMessage{}
	if len(s.Data) > 0 {
		if err := json.Unmarshal(s.Data, &data); err != nil {
			return Entry{}, false, nil // not an object: start afresh
		}
	}
	c := denialCount{Count: 1, FirstAt: s.At, LastAt: s.At}
	if raw, ok := data["count"]; ok {
		_ = json.Unmarshal(raw, &c.Count)
		_ = json.Unmarshal(data["last_at"], &c.LastAt)
	}
	if now.Sub(c.LastAt) > window || now.Before(c.FirstAt) {
		return Entry{}, false, nil
	}
	c.Count++
	c.LastAt = now
	for k, v := range map[string]any{"count": c.Count, "first_at": c.FirstAt, "last_at": c.LastAt} {
		b, err := json.Marshal(v)
		if err != nil {
			return Entry{}, false, err
		}
		data[k] = b
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Entry{}, false, err
	}
	s.Data = b
	return s.Entry, true, tx.SetJSON(storage.Key(storage.PrefixTrace, seq), s)
}

// prune deletes up to batch of the oldest entries beyond retention, as of
// the entry newest (its sequence number and time), and returns how many.
func (l *Log) prune(tx *storage.Tx, newest uint64, now time.Time, batch int) (int, error) {
	r := l.Retention()
	if r.MaxEntries == 0 && r.MaxAge == 0 {
		return 0, nil
	}
	var old []stored
	l.mu.Lock()
	floor := l.floor
	l.mu.Unlock()
	first := true
	from := storage.Range{Prefix: []byte(storage.PrefixTrace), Start: storage.Key(storage.PrefixTrace, storage.Uint64(floor))}
	err := tx.Scan(from, func(k, v []byte) error {
		var s stored
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		if first {
			first = false
			l.mu.Lock()
			l.floor = max(l.floor, s.Seq)
			l.mu.Unlock()
		}
		byCount := r.MaxEntries > 0 && newest >= r.MaxEntries && s.Seq <= newest-r.MaxEntries
		byAge := r.MaxAge > 0 && now.Sub(s.At) > r.MaxAge
		if !byCount && !byAge || len(old) == batch {
			return storage.ErrStop // oldest first: the rest are newer
		}
		old = append(old, s)
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, s := range old {
		key := storage.Uint64(s.Seq)
		keys := [][]byte{storage.Key(storage.PrefixTrace, key), storage.IndexKey(indexSpace, "kind", s.Kind, key)}
		if s.TurnID != "" {
			keys = append(keys, storage.IndexKey(indexSpace, "turn", s.TurnID, key))
		}
		if s.Denial != "" {
			idx := storage.IndexKey(indexSpace, "denial", s.Denial, "last")
			if v, err := tx.Get(idx); err == nil && string(v) == key {
				keys = append(keys, idx)
			}
		}
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return 0, err
			}
		}
	}
	return len(old), nil
}

// Prune deletes up to batch of the oldest entries beyond retention now
// (the trace prunes itself as it is written; this is for a caller that
// wants it done at once, in bounded transactions: call it until it
// returns 0).
func (l *Log) Prune(tx *storage.Tx, now time.Time, batch int) (int, error) {
	var newest uint64
	err := tx.Keys(storage.Range{Prefix: []byte(storage.PrefixTrace), Reverse: true}, func(k []byte) error {
		n, err := storage.ParseUint64(storage.LastPart(k))
		newest = n
		if err != nil {
			return err
		}
		return storage.ErrStop
	})
	if err != nil {
		return 0, err
	}
	return l.prune(tx, newest, now, batch)
}

// List returns the entries matching f, oldest first, and whether older
// matching entries were left out by f.Limit. With f.Access set, only the
// entries f.Viewer may see (Visible) count and are returned.
func (l *Log) List(f Filter) (entries []Entry, more bool, err error) {
	err = l.store.View(func(tx *storage.Tx) error {
		entries, more = nil, false
		if f.Access != nil {
			var err error
			entries, more, err = l.visible(tx, f)
			if entries == nil {
				entries = []Entry{} // a list, in JSON
			}
			return err
		}
		seqs, m, err := l.matching(tx, f)
		if err != nil {
			return err
		}
		more = m
		entries = make([]Entry, 0, len(seqs))
		for _, s := range seqs {
			e, err := load(tx, s)
			if err != nil {
				return err
			}
			entries = append(entries, e.Entry)
		}
		return nil
	})
	return entries, more, err
}

// load reads the entry with sequence key seq, with its subject.
func load(tx *storage.Tx, seq string) (stored, error) {
	var s stored
	err := tx.GetJSON(storage.Key(storage.PrefixTrace, seq), &s)
	return s, err
}

// visible is List for a viewer: matching entries newest first, each read
// and kept if f.Viewer may see it, until f.Limit are kept.
func (l *Log) visible(tx *storage.Tx, f Filter) (entries []Entry, more bool, err error) {
	all := f
	all.Limit = 0
	var seqs []string
	if f.TurnID == "" || f.Kind == "" {
		// One index (or none): scan it backwards, reading as we go.
		prefix := []byte(storage.PrefixTrace)
		switch {
		case f.TurnID != "":
			prefix = storage.PrefixKey(storage.PrefixIndex, indexSpace, "turn", f.TurnID)
		case f.Kind != "":
			prefix = storage.PrefixKey(storage.PrefixIndex, indexSpace, "kind", f.Kind)
		}
		err = tx.Keys(storage.Range{Prefix: prefix, Reverse: true}, func(k []byte) error {
			e, err := load(tx, storage.LastPart(k))
			if err != nil {
				return err
			}
			ok, err := Visible(tx, f.Access, f.Viewer, e.Entry, e.Subject)
			if err != nil || !ok {
				return err
			}
			if f.Limit > 0 && len(entries) == f.Limit {
				more = true
				return storage.ErrStop
			}
			entries = append(entries, e.Entry)
			return nil
		})
		slices.Reverse(entries)
		return entries, more, err
	}
	if seqs, _, err = l.matching(tx, all); err != nil {
		return nil, false, err
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		e, err := load(tx, seqs[i])
		if err != nil {
			return nil, false, err
		}
		ok, err := Visible(tx, f.Access, f.Viewer, e.Entry, e.Subject)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		if f.Limit > 0 && len(entries) == f.Limit {
			more = true
			break
		}
		entries = append(entries, e.Entry)
	}
	slices.Reverse(entries)
	return entries, more, nil
}

// matching returns the sequence keys of matching entries, ascending, from
// index scans alone, keeping the most recent f.Limit of them (more: some
// were left out). With at most one filter, only the keys kept are visited
// (a backwards scan), so a limited listing costs the same however long the
// trace is.
func (l *Log) matching(tx *storage.Tx, f Filter) (seqs []string, more bool, err error) {
	var prefixes [][]byte
	if f.TurnID != "" {
		prefixes = append(prefixes, storage.PrefixKey(storage.PrefixIndex, indexSpace, "turn", f.TurnID))
	}
	if f.Kind != "" {
		prefixes = append(prefixes, storage.PrefixKey(storage.PrefixIndex, indexSpace, "kind", f.Kind))
	}
	if len(prefixes) == 0 {
		prefixes = append(prefixes, []byte(storage.PrefixTrace))
	}
	if len(prefixes) == 1 && f.Limit > 0 {
		err := tx.Keys(storage.Range{Prefix: prefixes[0], Reverse: true}, func(k []byte) error {
			if len(seqs) == f.Limit {
				more = true
				return storage.ErrStop
			}
			seqs = append(seqs, storage.LastPart(k))
			return nil
		})
		slices.Reverse(seqs)
		return seqs, more, err
	}
	lists := make([][]string, 0, len(prefixes))
	for _, p := range prefixes {
		var list []string
		err := tx.Keys(storage.Prefix(p), func(k []byte) error {
			list = append(list, storage.LastPart(k))
			return nil
		})
		if err != nil {
			return nil, false, err
		}
		lists = append(lists, list)
	}
	seqs = intersectSorted(lists)
	if f.Limit > 0 && len(seqs) > f.Limit {
		seqs, more = seqs[len(seqs)-f.Limit:], true
	}
	return seqs, more, nil
}

// intersectSorted intersects ascending lists.
func intersectSorted(lists [][]string) []string {
	out := lists[0]
	for _, other := range lists[1:] {
		var merged []string
		i, j := 0, 0
		for i < len(out) && j < len(other) {
			switch {
			case out[i] == other[j]:
				merged = append(merged, out[i])
				i++
				j++
			case out[i] < other[j]:
				i++
			default:
				j++
			}
		}
		out = merged
	}
	return out
}

// Count returns how many entries the trace holds, and for how many turns.
func (l *Log) Count() (entries, turns int, err error) {
	err = l.store.View(func(tx *storage.Tx) error {
		if entries, err = tx.Count([]byte(storage.PrefixTrace)); err != nil {
			return err
		}
		last := ""
		return tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, indexSpace, "turn")), func(k []byte) error {
			parts := storage.SplitKey(storage.PrefixIndex, k)
			if turn := parts[2]; turn != last {
				turns++
				last = turn
			}
			return nil
		})
	})
	return entries, turns, err
}
