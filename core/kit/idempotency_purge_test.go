package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/storage"
)

// writeKeyed runs n keyed requests that each commit one write, with keys
// prefix-0 to prefix-(n-1), all as alice.
func writeKeyed(t *testing.T, env *Env, prefix string, n int) {
	t.Helper()
	run := func(ctx context.Context) (json.RawMessage, error) {
		return json.RawMessage(`{}`), env.Update(ctx, func(tx *Txn) error { return tx.Set(key, []byte(prefix)) })
	}
	for i := range n {
		o := Once{Key: fmt.Sprintf("%s-%d", prefix, i), Principal: "alice", Action: "x.do"}
		if _, err := env.RunOnce(context.Background(), o, run); err != nil {
			t.Fatal(err)
		}
	}
}

// keysUnder returns the keys of the store that start with prefix.
func keysUnder(t *testing.T, env *Env, prefix []byte) []string {
	t.Helper()
	var out []string
	err := env.Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(prefix), func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// onceIndexPrefix is where the records' time index lives.
var onceIndexPrefix = storage.PrefixKey(storage.PrefixIndex, onceIndexSpace)

func TestIdempotencyRecordsStayBoundedByADaysWrites(t *testing.T) {
	env := newEnv(t)
	clk := env.Clock.(*clock.Fixed)
	// A busy day: more keyed writes than one hourly purge of 1,000 used
	// to drop. They are put in the store in one transaction, as engram
	// records them, since writing them one by one is slow under -race.
	const busy = 1200
	writeKeyed(t, env, "first", 1)
	err := env.Store.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range busy {
			k := fmt.Sprint("day1-", i)
			rec := onceRecord{State: onceDone, Action: "x.do", Principal: "alice", At: t0, Result: `{}`}
			if err := tx.SetJSON(storage.Key(storage.PrefixIdempotency, "alice", k), rec); err != nil {
				return err
			}
			if err := tx.Set(onceIndexKey(t0, "alice", k), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A day later, every record written drops a batch of expired ones, so
	// that a few writes drop the whole day before.
	clk.Advance(IdempotencyWindow)
	const writes = (busy+1)/idempotencyPurgeBatch + 1
	writeKeyed(t, env, "day2", writes)
	records := keysUnder(t, env, []byte(storage.PrefixIdempotency))
	if len(records) != writes {
		t.Fatalf("%d records after %d writes a day later, want only those %d", len(records), writes, writes)
	}
	for _, k := range records {
		if !strings.HasPrefix(storage.LastPart([]byte(k)), "day2-") {
			t.Fatalf("%s outlived its day", k)
		}
	}
	if n := len(keysUnder(t, env, onceIndexPrefix)); n != writes {
		t.Fatalf("%d time index entries, want %d", n, writes)
	}
}

func TestIdempotencyRecordsFromBeforeTheTimeIndexExpireToo(t *testing.T) {
	env := newEnv(t)
	clk := env.Clock.(*clock.Fixed)
	// Records as engram wrote them before the time index: no entry in it.
	const old = 150
	err := env.Store.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range old {
			at := t0.Add(-IdempotencyWindow) // expired already
			if i == 0 {
				at = t0 // live for a day yet
			}
			rec := onceRecord{State: onceDone, Action: "x.do", Principal: "bob", At: at, Result: `{}`}
			if err := tx.SetJSON(storage.Key(storage.PrefixIdempotency, "bob", fmt.Sprint("old-", i)), rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writeKeyed(t, env, "new", 5)
	records := keysUnder(t, env, []byte(storage.PrefixIdempotency))
	if len(records) != 6 || records[5] != string(storage.Key(storage.PrefixIdempotency, "bob", "old-0")) {
		t.Fatalf("%d records after 5 writes, want 6: alice's 5 and bob's live old-0", len(records))
	}
	clk.Advance(IdempotencyWindow)
	writeKeyed(t, env, "later", 1)
	if records := keysUnder(t, env, []byte(storage.PrefixIdempotency)); len(records) != 1 {
		t.Fatalf("a day later: %v, want only alice's later-0", records)
	}
}

// A request pinned to a later time (a step's at, which any client may
// send) purges only records that expired by the engine's own time: a
// record another request made an hour ago still answers its retry.
func TestAPinnedLaterRequestLeavesLiveRecords(t *testing.T) {
	env := newEnv(t)
	base := clock.NewFixed(t0)
	clk := clock.NewPinnable(base)
	env.Clock = clk
	run, runs := counter(env)
	o := Once{Key: "k1", Principal: "alice", Action: "x.do"}
	first, err := env.RunOnce(context.Background(), o, run)
	if err != nil {
		t.Fatal(err)
	}
	// Bob's script step, pinned two days ahead, records a request (and
	// purges what has expired).
	clk.Pin(t0.Add(48 * time.Hour))
	writeKeyed(t, env, "bob-later", 1)
	clk.Unpin()
	base.Advance(time.Hour)
	again, err := env.RunOnce(context.Background(), o, run)
	if err != nil || string(again) != string(first) || runs.Load() != 1 {
		t.Errorf("alice's retry an hour later: %s, %v after %d runs; want her first answer %s, run once", again, err, runs.Load(), first)
	}
}
