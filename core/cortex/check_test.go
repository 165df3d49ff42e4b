package cortex

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-console/engram/storage"
)

// Issue 13 item 2: engram check verifies index vs records. These tests
// build a cortex through its actions, damage it directly, and expect the
// checker to name exactly the damage.

// healthyCortex is a store with items created, updated (status, tags,
// title: index keys rewritten), shared, revoked, reverted and deleted.
func healthyCortex(t *testing.T) *testEnv {
	t.Helper()
	e := newEnv(t)
	e.create(agentA, "goal", "g1", obj{"title": "Ship the login page", "tags": []string{"web", "q4"}, "priority": "high"})
	e.create(agentA, "action", "a1", obj{"title": "Review migration", "parent": "g1", "org": "acme"})
	e.create(agentA, "question", "q1", obj{"title": "Which cache?", "due_at": ms(5000).Format("2006-01-02T15:04:05Z07:00")})
	e.create(agentB, "goal", "g2", obj{"title": "Plan the offsite"})
	e.update(agentA, "g1", obj{"status": "in_progress", "tags": []string{"web"}, "title": "Ship the login and signup pages"}, -1)
	e.update(agentA, "a1", obj{"blocking": true, "priority": "critical"}, -1)
	e.Do(agentA, "cortex.share", obj{"id": "g1", "principal": "agent_b", "permissions": []string{"read", "write"}}, nil)
	e.Do(agentA, "cortex.share", obj{"id": "q1", "principal": "agent_b", "permissions": []string{"read"}}, nil)
	e.Do(agentA, "cortex.revoke", obj{"id": "q1", "principal": "agent_b"}, nil)
	e.Do(agentA, "cortex.revert", obj{"id": "g1", "version": 1}, nil)
	e.Do(agentA, "cortex.delete", obj{"id": "q1"}, nil)
	return e
}

func (e *testEnv) check() []string {
	e.T.Helper()
	problems, err := e.c.checkStored(context.Background())
	if err != nil {
		e.T.Fatalf("check: %v", err)
	}
	return problems
}

// damage changes the store directly, as a bad disk or a bug would, and
// then builds the query index again, as the fresh engram that `engram
// check` opens does.
func (e *testEnv) damage(fn func(tx *storage.Tx) error) {
	e.T.Helper()
	e.damageBehindTheIndex(fn)
	// An item it cannot read fails the build, as at a real open: queries
	// then read the store's key index.
	_ = e.c.index.build(context.Background())
}

// damageBehindTheIndex changes the store directly while the query index
// keeps what it had.
func (e *testEnv) damageBehindTheIndex(fn func(tx *storage.Tx) error) {
	e.T.Helper()
	if err := e.env.Store.Update(context.Background(), fn); err != nil {
		e.T.Fatal(err)
	}
}

// Issue 17: check finds a query index in memory that disagrees with the
// stored items (here: an item whose status changed behind its back).
func TestCheckFindsAQueryIndexThatDriftedFromTheStore(t *testing.T) {
	e := healthyCortex(t)
	e.damageBehindTheIndex(func(tx *storage.Tx) error {
		var it Item
		if err := tx.GetJSON(itemKey("a1"), &it); err != nil {
			return err
		}
		it.Status = "completed"
		return tx.SetJSON(itemKey("a1"), &it)
	})
	var drift []string
	for _, p := range e.check() {
		if strings.Contains(p, "query index in memory") {
			drift = append(drift, p)
		}
	}
	onlyProblem(t, drift, "not up to date with item a1", "restart engram")
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

func TestCheckFindsNothingInAHealthyCortex(t *testing.T) {
	e := healthyCortex(t)
	if p := e.check(); len(p) != 0 {
		t.Fatalf("problems in a healthy store:\n%s", strings.Join(p, "\n"))
	}
}

func TestCheckFindsIndexEntriesWithoutTheirItem(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error {
		// The item goes, with what else is kept of it; its index stays.
		for _, p := range []string{"audit", "ver"} {
			var keys [][]byte
			if err := tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixCortex, p, "a1")), func(k []byte) error { keys = append(keys, k); return nil }); err != nil {
				return err
			}
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
		}
		if err := tx.Delete(headKey("a1")); err != nil {
			return err
		}
		return tx.Delete(itemKey("a1"))
	})
	onlyProblem(t, e.check(), "for item a1, which does not exist", "idx/cortex/")
}

func TestCheckFindsADanglingIndexEntry(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error { return tx.Set(storage.IndexKey(space, "tag", "web", "ghost"), nil) })
	onlyProblem(t, e.check(), `index entry "idx/cortex/tag/web/ghost" for item ghost, which does not exist`)
}

func TestCheckFindsAnItemMissingFromItsIndex(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error { return tx.Delete(storage.IndexKey(space, "owner", "agent_b", "g2")) })
	onlyProblem(t, e.check(), "cortex item g2: its index does not match it: missing", "idx/cortex/owner/agent_b/g2")
}

func TestCheckFindsAStaleStatusInTheIndex(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error {
		// The record changes status; the index still says the old one.
		var it Item
		if err := tx.GetJSON(itemKey("g2"), &it); err != nil {
			return err
		}
		it.Status = "completed"
		return tx.SetJSON(itemKey("g2"), &it)
	})
	onlyProblem(t, e.check(), "cortex item g2: its index does not match it: missing", "/completed/", "stale", "/active/")
}

func TestCheckFindsAnUnreadableItem(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error { return tx.Set(itemKey("a1"), []byte("{not json")) })
	onlyProblem(t, e.check(), `cortex item at key "cortex/item/a1": unreadable`)
}

func TestCheckFindsAMissingVersionSnapshot(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error { return tx.Delete(versionKey("a1", 1)) })
	onlyProblem(t, e.check(), "cortex item a1: version snapshot v1 is missing")
}

func TestCheckFindsAnItemWithNoSnapshotAtAll(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error { return tx.Delete(versionKey("g2", 1)) })
	onlyProblem(t, e.check(), "cortex item g2: version snapshot v1 is missing (the item is at v1)")
}

func TestCheckFindsTheTrailOfALostItem(t *testing.T) {
	e := healthyCortex(t)
	e.damage(func(tx *storage.Tx) error {
		// The item and its index go; its audit trail stays.
		var it Item
		if err := tx.GetJSON(itemKey("g2"), &it); err != nil {
			return err
		}
		for _, k := range indexKeys(&it) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return tx.Delete(itemKey("g2"))
	})
	onlyProblem(t, e.check(), "cortex item g2 does not exist, but its audit entries, version snapshots, chain head remain")
}

func TestCheckStopsWhenCancelled(t *testing.T) {
	e := healthyCortex(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.c.checkStored(ctx); err == nil {
		t.Fatal("a cancelled check returned no error")
	}
}

// BenchmarkCheckCortex10k checks a store of 10,000 items (each with its
// audit entry, snapshot and some 12 index keys); the 40k one shows the
// growth (linear: every item is read once, its index keys hashed).
//
//	go test ./core/cortex -run '^$' -bench CheckCortex -benchtime 3x
func BenchmarkCheckCortex10k(b *testing.B) { benchmarkCheck(b, 10_000) }

// BenchmarkCheckCortex40k is BenchmarkCheckCortex10k at four times the size.
func BenchmarkCheckCortex40k(b *testing.B) { benchmarkCheck(b, 40_000) }

func benchmarkCheck(b *testing.B, n int) {
	e := newEnv(b)
	e.bulkCreate(itemSpecs(n, 7), 250)
	for b.Loop() {
		problems, err := e.c.checkStored(context.Background())
		if err != nil || len(problems) > 0 {
			b.Fatalf("check: %v %v", err, problems)
		}
	}
}
