// Package trace is the turn trace: an append-only log of what the engine did
// and why, entry by entry, grouped by turn. Subsystems append entries inside
// the transaction that makes the change they describe, so the trace never
// claims a change that did not commit. Nothing edits or deletes an entry.
package trace

import (
	"encoding/json"
	"slices"
	"time"

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

// Filter selects entries. Zero fields match everything.
type Filter struct {
	TurnID string
	Kind   string
	// Limit keeps the most recent Limit entries (0: all).
	Limit int
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

// Log is the trace over a store.
type Log struct {
	store *storage.Store
	seq   *storage.Sequence
}

// Open returns the trace kept in store.
func Open(store *storage.Store) (*Log, error) {
	seq, err := store.Sequence("trace")
	if err != nil {
		return nil, err
	}
	return &Log{store: store, seq: seq}, nil
}

// Append adds e inside tx, assigning its sequence number, and returns it as
// stored. The caller commits tx (and publishes the entry once it has).
func (l *Log) Append(tx *storage.Tx, e Entry) (Entry, error) {
	n, err := l.seq.Next()
	if err != nil {
		return Entry{}, err
	}
	e.Seq = n
	key := storage.Uint64(n)
	if err := tx.SetJSON(storage.Key(storage.PrefixTrace, key), e); err != nil {
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
	return e, nil
}

// List returns the entries matching f, oldest first, and whether older
// matching entries were left out by f.Limit.
func (l *Log) List(f Filter) (entries []Entry, more bool, err error) {
	err = l.store.View(func(tx *storage.Tx) error {
		var seqs []string
		var err error
		seqs, more, err = l.matching(tx, f)
		if err != nil {
			return err
		}
		entries = make([]Entry, 0, len(seqs))
		for _, s := range seqs {
			var e Entry
			if err := tx.GetJSON(storage.Key(storage.PrefixTrace, s), &e); err != nil {
				return err
			}
			entries = append(entries, e)
		}
		return nil
	})
	return entries, more, err
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
