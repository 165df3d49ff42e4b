package cortex

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/storage"
)

// The audit trail is hash-chained: tampering with the stored bytes is
// detected by cortex.history, which names the version where the chain
// breaks.

func chained(t *testing.T) *testEnv {
	e := newEnv(t)
	fiveMutations(e, "goal_1")
	if h := e.history(agentA, "goal_1"); !h.Verified || len(h.Mutations) != 5 || h.Problem != "" || h.BrokenAt != 0 {
		t.Fatalf("untouched chain: %+v", h.ChainCheck)
	}
	return e
}

func (e *testEnv) rawUpdate(fn func(tx *storage.Tx) error) {
	e.T.Helper()
	if err := e.env.Store.Update(context.Background(), fn); err != nil {
		e.T.Fatal(err)
	}
}

func expectBroken(t *testing.T, e *testEnv, at int, fragment string) {
	t.Helper()
	h := e.history(agentA, "goal_1")
	if h.Verified || h.BrokenAt != at || !strings.Contains(h.Problem, fragment) {
		t.Fatalf("chain_verified=%v broken_at=%d problem=%q; want false, %d, %q", h.Verified, h.BrokenAt, h.Problem, at, fragment)
	}
}

func TestChainDetectsChangedByte(t *testing.T) {
	for _, target := range []string{`"mutated_by":"agent_a`, `"new":80`, `"mutation_timestamp":"2025`} {
		t.Run(target, func(t *testing.T) {
			e := chained(t)
			raw := e.auditRaw("goal_1", 4)
			i := bytes.Index(raw, []byte(target))
			if i < 0 {
				t.Fatalf("entry v4 has no %s: %s", target, raw)
			}
			changed := bytes.Clone(raw)
			changed[i+len(target)-1]++ // one byte: agent_b, 81, 2035
			e.rawUpdate(func(tx *storage.Tx) error { return tx.Set(auditKey("goal_1", 4), changed) })
			expectBroken(t, e, 4, "v4 was altered")
		})
	}
}

func TestChainDetectsDeletedEntry(t *testing.T) {
	e := chained(t)
	e.rawUpdate(func(tx *storage.Tx) error { return tx.Delete(auditKey("goal_1", 3)) })
	expectBroken(t, e, 3, "v3 is missing")

	// The last entry too: the item says how many there are.
	e = chained(t)
	e.rawUpdate(func(tx *storage.Tx) error { return tx.Delete(auditKey("goal_1", 5)) })
	expectBroken(t, e, 5, "v5 is missing")
}

func TestChainDetectsSwappedEntries(t *testing.T) {
	e := chained(t)
	v2, v3 := e.auditRaw("goal_1", 2), e.auditRaw("goal_1", 3)
	e.rawUpdate(func(tx *storage.Tx) error {
		if err := tx.Set(auditKey("goal_1", 2), v3); err != nil {
			return err
		}
		return tx.Set(auditKey("goal_1", 3), v2)
	})
	expectBroken(t, e, 2, "swapped")

	// Renumbered to fit their keys, the swapped entries still break the links.
	e = chained(t)
	v2, v3 = e.auditRaw("goal_1", 2), e.auditRaw("goal_1", 3)
	renumber := func(raw []byte, from, to int) []byte {
		s := strings.Replace(string(raw), `"new_version":`+string(rune('0'+from)), `"new_version":`+string(rune('0'+to)), 1)
		s = strings.Replace(s, `"previous_version":`+string(rune('0'+from-1)), `"previous_version":`+string(rune('0'+to-1)), 1)
		return []byte(s)
	}
	e.rawUpdate(func(tx *storage.Tx) error {
		if err := tx.Set(auditKey("goal_1", 2), renumber(v3, 3, 2)); err != nil {
			return err
		}
		return tx.Set(auditKey("goal_1", 3), renumber(v2, 2, 3))
	})
	expectBroken(t, e, 2, "altered")
}

func TestChainDetectsReplacedEntry(t *testing.T) {
	// An entry from another item's trail, put in place of one of this one's.
	e := chained(t)
	e.clock.Advance(time.Hour)
	fiveMutations(e, "goal_2")
	other := e.auditRaw("goal_2", 3)
	e.rawUpdate(func(tx *storage.Tx) error { return tx.Set(auditKey("goal_1", 3), other) })
	expectBroken(t, e, 3, "belongs to goal_2")
}

// TestChainDetectsRewrittenEnd: an altered last entry whose hash was
// recomputed to match its new contents still breaks the chain, because the
// item's head records the hash the trail must end with.
func TestChainDetectsRewrittenEnd(t *testing.T) {
	e := chained(t)
	raw := e.auditRaw("goal_1", 5)
	var m Mutation
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.MutatedBy = "someone_else"
	forged, err := sealAndEncode(&m, m.PrevHash)
	if err != nil {
		t.Fatal(err)
	}
	e.rawUpdate(func(tx *storage.Tx) error { return tx.Set(auditKey("goal_1", 5), forged) })
	if sum, _ := entryHash(forged); sum != m.Hash {
		t.Fatal("the forged entry's own hash does not verify: the test forges badly")
	}
	expectBroken(t, e, 5, "end of the trail was rewritten")
}
