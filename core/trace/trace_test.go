package trace

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func openLog(t testing.TB) (*Log, *storage.Store) {
	t.Helper()
	st, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	l, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	return l, st
}

func appendAll(t testing.TB, l *Log, st *storage.Store, entries ...Entry) []Entry {
	t.Helper()
	var out []Entry
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		out = out[:0]
		for _, e := range entries {
			got, err := l.Append(tx, e)
			if err != nil {
				return err
			}
			out = append(out, got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func seqs(es []Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func TestAppendAssignsIncreasingSeqs(t *testing.T) {
	l, st := openLog(t)
	var all []Entry
	for i := range 5 {
		all = append(all, appendAll(t, l, st,
			Entry{TurnID: "t", Kind: "k", Message: fmt.Sprint(i), At: t0},
			Entry{Kind: "k", Message: fmt.Sprint(i), At: t0, Seq: 999}, // a caller's seq is ignored
		)...)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("seq %d after %d", all[i].Seq, all[i-1].Seq)
		}
	}
	if all[0].Seq != 1 {
		t.Fatalf("first seq %d, want 1", all[0].Seq)
	}
	got, more, err := l.List(Filter{})
	if err != nil || more {
		t.Fatalf("List: %v, more=%v", err, more)
	}
	if fmt.Sprint(seqs(got)) != fmt.Sprint(seqs(all)) {
		t.Fatalf("List seqs %v, want %v", seqs(got), seqs(all))
	}
	// Entries come back as stored, data and time included.
	if got[0].Message != "0" || got[0].TurnID != "t" || !got[0].At.Equal(t0) {
		t.Fatalf("stored entry %+v", got[0])
	}
}

func TestAppendRolledBackLeavesNothing(t *testing.T) {
	l, st := openLog(t)
	boom := errors.New("boom")
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		if _, err := l.Append(tx, Entry{TurnID: "t", Kind: "k"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update: %v", err)
	}
	entries, turns, err := l.Count()
	if err != nil || entries != 0 || turns != 0 {
		t.Fatalf("after rollback: %d entries, %d turns, %v", entries, turns, err)
	}
	if got, _, _ := l.List(Filter{TurnID: "t"}); len(got) != 0 {
		t.Fatalf("rolled-back entry listed by turn: %+v", got)
	}
	// The next entry still gets a fresh, larger seq than any before.
	e := appendAll(t, l, st, Entry{Kind: "k"})
	if e[0].Seq < 2 {
		t.Fatalf("seq after a rolled-back append: %d", e[0].Seq)
	}
}

func fixture(t *testing.T) (*Log, []Entry) {
	l, st := openLog(t)
	es := appendAll(t, l, st,
		Entry{TurnID: "A", Kind: "turn.start", Message: "1"},
		Entry{TurnID: "B", Kind: "turn.start", Message: "2"},
		Entry{TurnID: "A", Kind: "item.mutated", Message: "3"},
		Entry{Kind: "item.mutated", Message: "4"}, // outside any turn
		Entry{TurnID: "A", Kind: "turn.end", Message: "5"},
		Entry{TurnID: "A/x", Kind: "turn.start", Message: "6"}, // a "/" in a turn id
		Entry{TurnID: "B", Kind: "item.mutated", Message: "7"},
		Entry{TurnID: "A", Kind: "item.mutated", Message: "8"},
	)
	return l, es
}

func messages(es []Entry) string {
	s := ""
	for _, e := range es {
		s += e.Message
	}
	return s
}

func TestListFilters(t *testing.T) {
	l, _ := fixture(t)
	cases := []struct {
		f    Filter
		want string
		more bool
	}{
		{Filter{}, "12345678", false},
		{Filter{TurnID: "A"}, "1358", false},
		{Filter{TurnID: "A/x"}, "6", false},
		{Filter{TurnID: "B"}, "27", false},
		{Filter{TurnID: "nope"}, "", false},
		{Filter{Kind: "item.mutated"}, "3478", false},
		{Filter{Kind: "turn.start"}, "126", false},
		{Filter{TurnID: "A", Kind: "item.mutated"}, "38", false},
		{Filter{TurnID: "B", Kind: "turn.end"}, "", false},
		{Filter{Limit: 3}, "678", true},
		{Filter{Limit: 8}, "12345678", false},
		{Filter{Limit: 100}, "12345678", false},
		{Filter{TurnID: "A", Limit: 2}, "58", true},
		{Filter{TurnID: "A", Limit: 3}, "358", true},
		{Filter{TurnID: "A", Limit: 4}, "1358", false}, // exactly all: nothing left out
		{Filter{Kind: "item.mutated", Limit: 4}, "3478", false},
		{Filter{Limit: 7}, "2345678", true},
		{Filter{Kind: "item.mutated", Limit: 1}, "8", true},
		{Filter{TurnID: "A", Kind: "item.mutated", Limit: 1}, "8", true},
		{Filter{TurnID: "A", Kind: "item.mutated", Limit: 2}, "38", false},
	}
	for _, c := range cases {
		got, more, err := l.List(c.f)
		if err != nil {
			t.Fatalf("%+v: %v", c.f, err)
		}
		if messages(got) != c.want || more != c.more {
			t.Errorf("List(%+v) = %q more=%v, want %q more=%v", c.f, messages(got), more, c.want, c.more)
		}
		for _, e := range got {
			if c.f.TurnID != "" && e.TurnID != c.f.TurnID || c.f.Kind != "" && e.Kind != c.f.Kind {
				t.Errorf("List(%+v) returned %+v", c.f, e)
			}
		}
	}
}

func TestListEmpty(t *testing.T) {
	l, _ := openLog(t)
	got, more, err := l.List(Filter{Limit: 5})
	if err != nil || more || got == nil || len(got) != 0 {
		t.Fatalf("empty List = %v (nil=%v), %v, %v", got, got == nil, more, err)
	}
}

func TestCount(t *testing.T) {
	l, _ := fixture(t)
	entries, turns, err := l.Count()
	if err != nil {
		t.Fatal(err)
	}
	// 8 entries in turns A, B and A/x (one entry has no turn).
	if entries != 8 || turns != 3 {
		t.Fatalf("Count = %d entries, %d turns; want 8, 3", entries, turns)
	}
}

func TestIntersectSorted(t *testing.T) {
	cases := []struct {
		lists [][]string
		want  string
	}{
		{[][]string{{"1", "2", "3"}}, "[1 2 3]"},
		{[][]string{{"1", "2", "3"}, {"2", "3", "4"}}, "[2 3]"},
		{[][]string{{"1", "3", "5"}, {"2", "4"}}, "[]"},
		{[][]string{{}, {"1"}}, "[]"},
		{[][]string{{"1", "2", "3", "4"}, {"1", "3", "4"}, {"3", "4", "5"}}, "[3 4]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(intersectSorted(c.lists)); got != c.want {
			t.Errorf("intersectSorted(%v) = %s, want %s", c.lists, got, c.want)
		}
	}
}

// TestListLimitMatchesFullScan checks limited listings (which scan only the
// most recent keys) against filtering the whole trace by hand.
func TestListLimitMatchesFullScan(t *testing.T) {
	l, st := openLog(t)
	kinds := []string{"a", "b", "c"}
	for batch := range 30 {
		var es []Entry
		for i := range 10 {
			n := batch*10 + i
			es = append(es, Entry{TurnID: fmt.Sprint("turn", n%7), Kind: kinds[n%3], Message: fmt.Sprint(n)})
		}
		appendAll(t, l, st, es...)
	}
	all, more, err := l.List(Filter{})
	if err != nil || more || len(all) != 300 {
		t.Fatalf("full list: %d entries, more=%v, %v", len(all), more, err)
	}
	for _, f := range []Filter{
		{Limit: 1}, {Limit: 50}, {Limit: 299}, {Limit: 300}, {Limit: 301},
		{TurnID: "turn3", Limit: 5}, {TurnID: "turn3", Limit: 43}, {TurnID: "turn3", Limit: 42},
		{Kind: "b", Limit: 17}, {Kind: "b", Limit: 100}, {Kind: "b", Limit: 99},
		{TurnID: "turn2", Kind: "c", Limit: 4}, {TurnID: "turn2", Kind: "c"},
	} {
		var want []Entry
		for _, e := range all {
			if (f.TurnID == "" || e.TurnID == f.TurnID) && (f.Kind == "" || e.Kind == f.Kind) {
				want = append(want, e)
			}
		}
		wantMore := f.Limit > 0 && len(want) > f.Limit
		if wantMore {
			want = want[len(want)-f.Limit:]
		}
		got, more, err := l.List(f)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(seqs(got)) != fmt.Sprint(seqs(want)) || more != wantMore {
			t.Errorf("List(%+v): %d entries more=%v, want %d more=%v", f, len(got), more, len(want), wantMore)
		}
	}
}
