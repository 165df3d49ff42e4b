package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// Issue 13, item 7: the trace never shrank. These fail before retention:
// every entry stayed, and every denial was an entry of its own.

// write appends n entries at the given time, one transaction each (as
// the engine's actions do).
func write(t testing.TB, l *Log, st *storage.Store, n int, at time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		appendAll(t, l, st, Entry{TurnID: fmt.Sprintf("t%d", i%7), Kind: "k", Message: "m", At: at})
	}
}

// keys counts the trace's entries and its index keys.
func keys(t testing.TB, st *storage.Store) (entries, indexed int) {
	t.Helper()
	err := st.View(func(tx *storage.Tx) error {
		var err error
		if entries, err = tx.Count([]byte(storage.PrefixTrace)); err != nil {
			return err
		}
		indexed, err = tx.Count(storage.PrefixKey(storage.PrefixIndex, indexSpace))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries, indexed
}

func TestTraceKeepsAtMostMaxEntries(t *testing.T) {
	l, st := openLog(t)
	l.SetRetention(Retention{MaxEntries: 100})
	write(t, l, st, 1000, t0)
	n, idx := keys(t, st)
	if n > 100+pruneEvery || n < 100 {
		t.Errorf("%d entries kept after 1000 writes, want 100 to %d", n, 100+pruneEvery)
	}
	if idx != 2*n {
		t.Errorf("%d index keys for %d entries: pruning left index keys behind", idx, n)
	}
	all, _, err := l.List(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if all[len(all)-1].Seq-all[0].Seq >= 100+pruneEvery {
		t.Errorf("kept seq %d to %d: not the newest", all[0].Seq, all[len(all)-1].Seq)
	}
}

func TestTraceForgetsEntriesOlderThanMaxAge(t *testing.T) {
	l, st := openLog(t)
	l.SetRetention(Retention{MaxAge: time.Hour})
	write(t, l, st, 50, t0)
	write(t, l, st, 10, t0.Add(30*time.Minute))
	write(t, l, st, pruneEvery, t0.Add(2*time.Hour)) // a prune runs among these
	all, _, err := l.List(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if !e.At.Equal(t0.Add(2 * time.Hour)) {
			t.Fatalf("an entry from %s is kept at %s with a retention of 1h", e.At, t0.Add(2*time.Hour))
		}
	}
	if len(all) != pruneEvery {
		t.Errorf("%d entries kept, want the %d young ones", len(all), pruneEvery)
	}
}

// TestPruningIsBounded: a write never deletes more than one batch, however
// far behind retention the trace is (e.g. after lowering it).
func TestPruningIsBounded(t *testing.T) {
	l, st := openLog(t)
	l.SetRetention(Retention{})
	write(t, l, st, 600, t0)
	l.SetRetention(Retention{MaxEntries: 10})
	var deleted []int
	for {
		var n int
		err := st.Update(context.Background(), func(tx *storage.Tx) error {
			var err error
			n, err = l.Prune(tx, t0, pruneBatch)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		deleted = append(deleted, n)
	}
	for _, n := range deleted {
		if n > pruneBatch {
			t.Errorf("one prune deleted %d entries, more than a batch (%d)", n, pruneBatch)
		}
	}
	if n, _ := keys(t, st); n != 10 {
		t.Errorf("%d entries after pruning to 10 (batches %v)", n, deleted)
	}
}

func denial(principal, op, id string, at time.Time) (Entry, *Subject, string) {
	d := access.Denial{Event: "access_denied", PrincipalID: principal, ResourceType: "thread", ResourceID: id, AttemptedOperation: op, Timestamp: at, ACLChecked: true}
	b, _ := json.Marshal(d)
	return Entry{Kind: "access_denied", Principal: principal, Message: d.Message(), Data: b, At: at},
		&Subject{Type: "thread", ID: id, Owner: "alice"}, principal + "\x00" + op + "\x00" + id
}

func TestRepeatedDenialsAreCountedOnOneEntry(t *testing.T) {
	l, st := openLog(t)
	l.SetRetention(Retention{DenialWindow: time.Minute})
	deny := func(principal, op, id string, at time.Time) (Entry, bool) {
		var out Entry
		var repeated bool
		err := st.Update(context.Background(), func(tx *storage.Tx) error {
			e, subject, same := denial(principal, op, id, at)
			var err error
			out, repeated, err = l.AppendDenial(tx, e, subject, same)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, repeated
	}
	first, _ := deny("bob", "read", "a", t0)
	for i := 1; i < 1000; i++ {
		// One every 10 s: each within a minute of the last.
		if _, repeated := deny("bob", "read", "a", t0.Add(time.Duration(i)*10*time.Second)); !repeated {
			t.Fatalf("denial %d was not counted on the first", i)
		}
	}
	if _, repeated := deny("bob", "write", "a", t0); repeated {
		t.Error("a denial of another operation was counted on the read's entry")
	}
	if _, repeated := deny("carol", "read", "a", t0); repeated {
		t.Error("another principal's denial was counted on bob's entry")
	}
	all, _, err := l.List(Filter{Kind: "access_denied"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Seq != first.Seq {
		t.Fatalf("%d denial entries, want 3", len(all))
	}
	var got struct {
		Count   int       `json:"count"`
		FirstAt time.Time `json:"first_at"`
		LastAt  time.Time `json:"last_at"`
		Event   string    `json:"event"`
	}
	if err := json.Unmarshal(all[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != 1000 || !got.FirstAt.Equal(t0) || !got.LastAt.Equal(t0.Add(9990*time.Second)) || got.Event != "access_denied" {
		t.Errorf("aggregated denial: %+v", got)
	}
	// After a quiet minute, the next one is an entry of its own.
	if _, repeated := deny("bob", "read", "a", t0.Add(9990*time.Second+2*time.Minute)); repeated {
		t.Error("a denial after the window was counted on the old entry")
	}
}

func TestListShowsOnlyWhatTheViewerMaySee(t *testing.T) {
	l, st := openLog(t)
	reg := &access.Registry{}
	shared := map[string]bool{"bob/a1": true}
	reg.Register("thread", func(tx *storage.Tx, principal, id string) (bool, error) {
		return principal == "alice" || shared[principal+"/"+id], nil
	})
	denied, deniedAbout, _ := denial("bob", "read", "a2", t0)
	err := st.Update(context.Background(), func(tx *storage.Tx) error {
		for _, e := range []struct {
			Entry
			about *Subject
		}{
			{Entry{Kind: "k", Principal: "alice", Message: "about a1", At: t0}, &Subject{Type: "thread", ID: "a1"}},
			{Entry{Kind: "k", Principal: "alice", Message: "about a2", At: t0}, &Subject{Type: "thread", ID: "a2"}},
			{Entry{Kind: "k", Principal: "alice", Message: "alice's, no subject", At: t0}, nil},
			{Entry{Kind: "k", Message: "the default agent's", At: t0}, nil},
			{Entry{Kind: "k", Principal: "bob", Message: "bob's", At: t0}, nil},
			{denied, deniedAbout},
		} {
			if _, err := l.AppendAbout(tx, e.Entry, e.about); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := func(viewer string, limit int) []string {
		es, _, err := l.List(Filter{Viewer: viewer, Access: reg, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Message)
		}
		return out
	}
	want := map[string]string{
		"alice": "[about a1 about a2 alice's, no subject access denied: bob may not read thread a2]",
		"bob":   "[about a1 bob's access denied: bob may not read thread a2]",
		"carol": "[]",
		"local": "[the default agent's]",
	}
	for viewer, w := range want {
		if got := fmt.Sprint(seen(viewer, 0)); got != w {
			t.Errorf("%s sees %s, want %s", viewer, got, w)
		}
	}
	if got := fmt.Sprint(seen("bob", 2)); got != "[bob's access denied: bob may not read thread a2]" {
		t.Errorf("bob's last 2: %s", got)
	}
	// The subject is kept, not shown.
	all, _, _ := l.List(Filter{})
	if b, _ := json.Marshal(all[0]); string(b) != `{"seq":1,"kind":"k","message":"about a1","principal":"alice","at":"2025-11-05T10:00:00.01Z"}` {
		t.Errorf("an entry's JSON: %s", b)
	}
}

func TestTraceConfigureSetsAndKeepsTheRetention(t *testing.T) {
	l, st := openLog(t)
	reg := action.NewRegistry()
	l.Register(reg)
	r := enginetest.ForRegistry(t, reg, clock.NewFixed(t0))
	local := enginetest.Who{As: access.LegacyOwner}
	if got := enginetest.Call[RetentionResult](r, local, "trace.configure", struct{}{}); got != (RetentionResult{MaxEntries: 100000, MaxAgeDays: 30, DenialWindowMinutes: 60}) {
		t.Errorf("default retention: %+v", got)
	}
	r.Fail(enginetest.Who{As: "bob"}, "trace.configure", map[string]int{"max_entries": 1}, errs.Permission, "only the default agent (local)")
	r.Fail(local, "trace.configure", map[string]int{"max_age_days": -1}, errs.Validation, "max_age_days: must be from 0")
	got := enginetest.Call[RetentionResult](r, local, "trace.configure", map[string]int{"max_entries": 500, "denial_window_minutes": 0})
	if got != (RetentionResult{MaxEntries: 500, MaxAgeDays: 30}) {
		t.Errorf("after trace.configure: %+v", got)
	}
	again, err := Open(st) // as the next start does
	if err != nil {
		t.Fatal(err)
	}
	if r := again.Retention(); r.MaxEntries != 500 || r.DenialWindow != 0 || r.MaxAge != 30*24*time.Hour {
		t.Errorf("retention after reopening: %+v", r)
	}
	if es, _, _ := l.List(Filter{Kind: "trace.configure"}); len(es) != 1 || es[0].Principal != "local" {
		t.Errorf("the change is not traced once: %+v", es)
	}
}

// BenchmarkAppendAtTheBound: a write when the trace is full (every 32nd
// prunes a batch) costs about what a write costs in a fresh trace.
//
//	go test ./core/trace -run '^$' -bench Append -benchtime 20000x
func BenchmarkAppendAtTheBound(b *testing.B) {
	for _, bound := range []uint64{0, 1000} {
		b.Run(fmt.Sprintf("max_entries=%d", bound), func(b *testing.B) {
			l, st := openLog(b)
			l.SetRetention(Retention{MaxEntries: bound})
			write(b, l, st, 2000, t0)
			b.ResetTimer()
			write(b, l, st, b.N, t0)
		})
	}
}

// TestConcurrentWritersPruneSafely: writers pruning at once conflict and
// retry; none fails, and the bound holds.
func TestConcurrentWritersPruneSafely(t *testing.T) {
	l, st := openLog(t)
	l.SetRetention(Retention{MaxEntries: 50})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				err := st.Update(context.Background(), func(tx *storage.Tx) error {
					_, err := l.Append(tx, Entry{Kind: "k", Message: "m", At: t0})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, idx := keys(t, st); n > 50+4*pruneEvery || idx != n {
		t.Errorf("%d entries (%d index keys) after 800 concurrent writes, bound 50", n, idx)
	}
}
