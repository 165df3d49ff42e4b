package trace

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/engram-console/engram/storage"
)

// Check verifies the stored trace against its indexes (engram check), in
// one read transaction:
//
//   - every entry decodes and is stored under its own sequence number;
//   - every entry is in the kind index, and in the turn index if it has a
//     turn; every entry of those indexes names an entry that exists, of
//     that kind or turn;
//   - every denial index names the newest entry of that denial (what
//     AppendDenial counts repeats on), and each denial of a kept entry
//     has its index;
//   - the retention record decodes, with no negative bound.
//
// It returns one problem per inconsistency, naming the entry or key. It
// reads each entry once and keeps what the indexes should say of it in
// memory (some 50 bytes an entry), so that checking an index key costs
// no read.
func (l *Log) Check(ctx context.Context) ([]string, error) {
	var problems []string
	err := l.store.View(func(tx *storage.Tx) error {
		ck := &check{newestDenial: map[string]uint64{}, unreadable: map[string]bool{}, names: map[string]string{}}
		err := tx.Scan(storage.Prefix([]byte(storage.PrefixTrace)), func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ck.entry(k, v)
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, indexSpace)), func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			ck.indexKey(k, v)
			return nil
		})
		if err != nil {
			return err
		}
		ck.unindexed()
		problems = ck.problems
		return nil
	})
	return problems, err
}

// check is the state of one trace check.
type check struct {
	problems []string
	// entries are the kept entries in sequence order, as the indexes
	// should name them.
	entries []kept
	// newestDenial: per denial key, the newest entry recording it; an
	// index found is removed, so what is left lacks its index.
	newestDenial map[string]uint64
	// unreadable entries' index entries are not reported again.
	unreadable map[string]bool
	// names interns kinds and turns: thousands of entries share a few.
	names map[string]string
}

// kept is what the indexes should say of one entry, and what they did.
type kept struct {
	seq            uint64
	kind, turn     string
	inKind, inTurn bool
}

func (ck *check) add(format string, args ...any) {
	ck.problems = append(ck.problems, fmt.Sprintf(format, args...))
}

func (ck *check) intern(s string) string {
	if n, ok := ck.names[s]; ok {
		return n
	}
	ck.names[s] = s
	return s
}

// entry checks one stored entry (key k, value v) and notes it.
func (ck *check) entry(k, v []byte) {
	seq := storage.LastPart(k)
	n, err := storage.ParseUint64(seq)
	if err != nil {
		ck.add("trace key %q is not a sequence number", k)
		return
	}
	var s stored
	if err := json.Unmarshal(v, &s); err != nil {
		ck.unreadable[seq] = true
		ck.add("trace entry %d: unreadable: %v", n, err)
		return
	}
	if s.Seq != n {
		ck.add("trace entry %d says it is entry %d", n, s.Seq)
	}
	ck.entries = append(ck.entries, kept{seq: n, kind: ck.intern(s.Kind), turn: ck.intern(s.TurnID)})
	if s.Denial != "" {
		ck.newestDenial[s.Denial] = max(ck.newestDenial[s.Denial], n)
	}
}

// find is the kept entry with sequence key seq (nil if there is none).
func (ck *check) find(seq string) *kept {
	n, err := storage.ParseUint64(seq)
	if err != nil {
		return nil
	}
	i, ok := slices.BinarySearchFunc(ck.entries, n, func(e kept, n uint64) int { return cmp.Compare(e.seq, n) })
	if !ok {
		return nil
	}
	return &ck.entries[i]
}

// indexKey checks one key under idx/trace/ (v its value).
func (ck *check) indexKey(k, v []byte) {
	parts := storage.SplitKey(storage.PrefixIndex, k)[1:] // after "trace"
	switch {
	case len(parts) == 1 && parts[0] == "retention":
		var r RetentionResult
		if err := json.Unmarshal(v, &r); err != nil {
			ck.add("trace retention record %q: unreadable: %v", k, err)
		} else if r.MaxEntries < 0 || r.MaxAgeDays < 0 || r.DenialWindowMinutes < 0 {
			ck.add("trace retention record %q has a negative bound: %s", k, v)
		}
	case len(parts) == 3 && (parts[0] == "kind" || parts[0] == "turn"):
		field, value, seq := parts[0], parts[1], parts[2]
		e := ck.find(seq)
		switch {
		case ck.unreadable[seq]:
		case e == nil:
			ck.add("trace index entry %q names entry %s, which does not exist", k, seq)
		case field == "kind" && e.kind != value:
			ck.add("trace index entry %q is stale: entry %d has kind %q", k, e.seq, e.kind)
		case field == "turn" && e.turn != value:
			ck.add("trace index entry %q is stale: entry %d has turn %q", k, e.seq, e.turn)
		case field == "kind":
			e.inKind = true
		default:
			e.inTurn = true
		}
	case len(parts) == 3 && parts[0] == "denial" && parts[2] == "last":
		same := parts[1]
		seq, err := storage.ParseUint64(string(v))
		if err != nil {
			ck.add("trace denial index %q does not hold a sequence number: %q", k, v)
			return
		}
		newest, ok := ck.newestDenial[same]
		delete(ck.newestDenial, same)
		switch {
		case !ok:
			ck.add("trace denial index %q names entry %d, which is not kept or does not record that denial", k, seq)
		case newest != seq:
			ck.add("trace denial index %q names entry %d, but the newest entry of that denial is %d", k, seq, newest)
		}
	default:
		ck.add("trace index key %q is of no index the trace keeps", k)
	}
}

// unindexed reports the entries an index lacks, and the denials without
// their index.
func (ck *check) unindexed() {
	for _, e := range ck.entries {
		if !e.inKind {
			ck.add("trace entry %d (kind %s) is missing its index entry %q", e.seq, e.kind, storage.IndexKey(indexSpace, "kind", e.kind, storage.Uint64(e.seq)))
		}
		if e.turn != "" && !e.inTurn {
			ck.add("trace entry %d (kind %s) is missing its index entry %q", e.seq, e.kind, storage.IndexKey(indexSpace, "turn", e.turn, storage.Uint64(e.seq)))
		}
	}
	for _, same := range slices.Sorted(maps.Keys(ck.newestDenial)) {
		ck.add("trace entry %d records denial %q, but the denial has no index entry (its repeats would not be counted on it)", ck.newestDenial[same], same)
	}
}
