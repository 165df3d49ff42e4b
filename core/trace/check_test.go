package trace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/storage"
)

// Issue 13 item 2: engram check verifies index vs records. These tests
// write a trace through its own paths (entries, denials and their repeats,
// retention configured and pruning), damage it directly, and expect the
// checker to name exactly the damage.

// deny appends one access denial, as the engine does.
func deny(t testing.TB, l *Log, st *storage.Store, principal, op, id string, at time.Time) Entry {
	t.Helper()
	var out Entry
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		e, subject, same := denial(principal, op, id, at)
		var err error
		out, _, err = l.AppendDenial(tx, e, subject, same)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// healthyTrace is a trace of 200 entries in 7 turns, kept to the newest 60
// by trace.configure (so pruning deleted entries and their index keys),
// with denials: a repeated one, one repeated after its window (a second
// entry), and one whose entry was pruned.
func healthyTrace(t *testing.T) (*Log, *storage.Store) {
	t.Helper()
	l, st := openLog(t)
	reg := action.NewRegistry()
	l.Register(reg)
	r := enginetest.ForRegistry(t, reg, clock.NewFixed(t0))
	enginetest.Call[RetentionResult](r, enginetest.Who{As: access.LegacyOwner}, "trace.configure",
		map[string]int{"max_entries": 60, "denial_window_minutes": 1})
	deny(t, l, st, "bob", "read", "gone", t0) // pruned below
	write(t, l, st, 150, t0)
	deny(t, l, st, "bob", "read", "a", t0)
	deny(t, l, st, "bob", "read", "a", t0.Add(30*time.Second))           // counted on the first
	deny(t, l, st, "bob", "write", "a", t0.Add(time.Minute))             // another operation
	deny(t, l, st, "bob", "write", "a", t0.Add(10*time.Minute))          // after the window: an entry
	appendAll(t, l, st, Entry{Kind: "note", Message: "no turn", At: t0}) // no turn index
	write(t, l, st, 45, t0)
	return l, st
}

func checkTrace(t *testing.T, l *Log) []string {
	t.Helper()
	problems, err := l.Check(context.Background())
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return problems
}

// damage changes the store directly, as a bad disk or a bug would.
func damage(t *testing.T, st *storage.Store, fn func(tx *storage.Tx) error) {
	t.Helper()
	if err := st.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// onlyProblem asserts exactly one problem, containing every fragment.
func onlyProblem(t *testing.T, problems []string, fragments ...string) {
	t.Helper()
	if len(problems) != 1 {
		t.Fatalf("want one problem, got %d:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	for _, f := range fragments {
		if !strings.Contains(problems[0], f) {
			t.Fatalf("problem %q does not say %q", problems[0], f)
		}
	}
}

// newest is the sequence key of the newest entry of kind.
func newest(t *testing.T, l *Log, kind string) (string, Entry) {
	t.Helper()
	es, _, err := l.List(Filter{Kind: kind, Limit: 1})
	if err != nil || len(es) != 1 {
		t.Fatalf("no entry of kind %s: %v", kind, err)
	}
	return storage.Uint64(es[0].Seq), es[0]
}

func TestCheckFindsNothingInAHealthyTrace(t *testing.T) {
	l, st := healthyTrace(t)
	if n, _ := keys(t, st); n > 100 {
		t.Fatalf("%d entries kept: pruning did not run", n)
	}
	if p := checkTrace(t, l); len(p) != 0 {
		t.Fatalf("problems in a healthy trace:\n%s", strings.Join(p, "\n"))
	}
}

func TestCheckFindsAnIndexEntryWithoutItsEntry(t *testing.T) {
	l, st := healthyTrace(t)
	seq, _ := newest(t, l, "note")
	damage(t, st, func(tx *storage.Tx) error { return tx.Delete(storage.Key(storage.PrefixTrace, seq)) })
	onlyProblem(t, checkTrace(t, l), fmt.Sprintf("idx/trace/kind/note/%s", seq), fmt.Sprintf("names entry %s, which does not exist", seq))
}

func TestCheckFindsADanglingTurnIndexEntry(t *testing.T) {
	l, st := healthyTrace(t)
	damage(t, st, func(tx *storage.Tx) error {
		return tx.Set(storage.IndexKey(indexSpace, "turn", "t1", storage.Uint64(3)), nil)
	})
	onlyProblem(t, checkTrace(t, l), "idx/trace/turn/t1/0000000000000003", "which does not exist")
}

func TestCheckFindsAnEntryMissingFromItsTurnIndex(t *testing.T) {
	l, st := healthyTrace(t)
	seq, e := newest(t, l, "k")
	damage(t, st, func(tx *storage.Tx) error { return tx.Delete(storage.IndexKey(indexSpace, "turn", e.TurnID, seq)) })
	onlyProblem(t, checkTrace(t, l), fmt.Sprintf("trace entry %d (kind k) is missing its index entry", e.Seq), "idx/trace/turn/")
}

func TestCheckFindsAStaleKindIndexEntry(t *testing.T) {
	l, st := healthyTrace(t)
	seq, _ := newest(t, l, "note")
	damage(t, st, func(tx *storage.Tx) error {
		// The entry's kind changes; its index still says "note" (and the
		// new kind's index entry is there, so only the old one is wrong).
		s, err := load(tx, seq)
		if err != nil {
			return err
		}
		s.Kind = "other"
		if err := tx.SetJSON(storage.Key(storage.PrefixTrace, seq), s); err != nil {
			return err
		}
		return tx.Set(storage.IndexKey(indexSpace, "kind", "other", seq), nil)
	})
	onlyProblem(t, checkTrace(t, l), fmt.Sprintf("idx/trace/kind/note/%s", seq), "is stale", `kind "other"`)
}

func TestCheckFindsAnUnreadableEntry(t *testing.T) {
	l, st := healthyTrace(t)
	seq, e := newest(t, l, "k")
	damage(t, st, func(tx *storage.Tx) error { return tx.Set(storage.Key(storage.PrefixTrace, seq), []byte("{not json")) })
	onlyProblem(t, checkTrace(t, l), fmt.Sprintf("trace entry %d: unreadable", e.Seq))
}

func TestCheckFindsADenialIndexNamingAnOlderEntry(t *testing.T) {
	l, st := healthyTrace(t)
	_, _, same := denial("bob", "write", "a", t0)
	idx := storage.IndexKey(indexSpace, "denial", same, "last")
	var older Entry
	es, _, err := l.List(Filter{Kind: "access_denied"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.Contains(e.Message, "write") {
			older = e // the first: the older of the two
			break
		}
	}
	damage(t, st, func(tx *storage.Tx) error { return tx.Set(idx, []byte(storage.Uint64(older.Seq))) })
	onlyProblem(t, checkTrace(t, l), fmt.Sprintf("names entry %d, but the newest entry of that denial is", older.Seq))
}

func TestCheckFindsADenialWithoutItsIndex(t *testing.T) {
	l, st := healthyTrace(t)
	_, _, same := denial("bob", "read", "a", t0)
	damage(t, st, func(tx *storage.Tx) error { return tx.Delete(storage.IndexKey(indexSpace, "denial", same, "last")) })
	onlyProblem(t, checkTrace(t, l), "records denial", "has no index entry")
}

func TestCheckFindsAnUnreadableRetentionRecord(t *testing.T) {
	l, st := healthyTrace(t)
	damage(t, st, func(tx *storage.Tx) error { return tx.Set(retentionKey(), []byte("sixty")) })
	onlyProblem(t, checkTrace(t, l), `trace retention record "idx/trace/retention": unreadable`)
}

func TestCheckFindsAnUnknownTraceIndexKey(t *testing.T) {
	l, st := healthyTrace(t)
	damage(t, st, func(tx *storage.Tx) error { return tx.Set(storage.IndexKey(indexSpace, "colour", "red", "1"), nil) })
	onlyProblem(t, checkTrace(t, l), `trace index key "idx/trace/colour/red/1" is of no index the trace keeps`)
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	l, _ := healthyTrace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Check(ctx); err == nil {
		t.Fatal("a cancelled check returned no error")
	}
}

// BenchmarkCheckTrace10k checks a trace of 10,000 entries in 7 turns.
//
//	go test ./core/trace -run '^$' -bench CheckTrace
func BenchmarkCheckTrace10k(b *testing.B) {
	l, st := openLog(b)
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range 10_000 {
			if _, err := l.Append(tx, Entry{TurnID: fmt.Sprintf("t%d", i%7), Kind: "k", Message: "m", At: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		problems, err := l.Check(context.Background())
		if err != nil || len(problems) > 0 {
			b.Fatalf("check: %v %v", err, problems)
		}
	}
}
