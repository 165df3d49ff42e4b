package cortex

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/storage"
)

// Issue 17: the in-memory query index never drifts from the store. Random
// creates, updates, deletes, shares, revokes and reverts (by three agents,
// some ids out of id order), and after every few of them random queries:
// each query, paged to its end through its cursors, must give exactly a
// brute-force filter over every stored item, in active order, with the
// same count, checksum and counts by type on every page.
func TestQueryIndexAgreesWithABruteForceFilterAfterRandomChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(17, 1))
	agents := []call{agentA, agentB, {As: "agent_c"}}
	vocab := []string{"login", "migration", "security", "review", "deploy", "billing", "migrate", "secure", "alpha", "beta"}
	var ids []string
	randomFields := func() obj {
		f := obj{}
		if rng.IntN(2) == 0 {
			f["title"] = fmt.Sprintf("%s %s %d", vocab[rng.IntN(len(vocab))], vocab[rng.IntN(len(vocab))], rng.IntN(100))
		}
		if rng.IntN(2) == 0 {
			f["description"] = "about " + vocab[rng.IntN(len(vocab))]
		}
		if rng.IntN(2) == 0 {
			f["priority"] = Priorities[rng.IntN(len(Priorities))]
		}
		if rng.IntN(2) == 0 {
			f["status"] = Statuses[rng.IntN(len(Statuses))]
		}
		if rng.IntN(3) == 0 {
			f["blocking"] = rng.IntN(2) == 0
		}
		switch rng.IntN(4) {
		case 0:
			f["due_at"] = t0.Add(time.Duration(rng.IntN(100)) * time.Hour).Format(time.RFC3339)
		case 1:
			f["due_at"] = nil
		}
		if rng.IntN(3) == 0 {
			var tags []string
			for range rng.IntN(3) {
				tags = append(tags, fmt.Sprintf("t%d", rng.IntN(5)))
			}
			f["tags"] = tags
		}
		if rng.IntN(6) == 0 {
			f["org"] = []string{"", "acme", "globex"}[rng.IntN(3)]
		}
		if rng.IntN(8) == 0 && len(ids) > 0 {
			f["parent"] = ids[rng.IntN(len(ids))]
		}
		return f
	}
	for step := range 700 {
		who := agents[rng.IntN(len(agents))]
		e.clock.Advance(time.Duration(rng.IntN(3)) * time.Millisecond)
		var id string
		if len(ids) > 0 {
			id = ids[rng.IntN(len(ids))]
		}
		switch op := rng.IntN(10); {
		case op < 3 || len(ids) == 0:
			f := randomFields()
			if _, ok := f["title"]; !ok {
				f["title"] = vocab[rng.IntN(len(vocab))]
			}
			newID := ""
			if rng.IntN(3) == 0 { // ids of its own, in no particular order
				newID = fmt.Sprintf("%c-%d", 'a'+rune(rng.IntN(26)), step)
			}
			raw, err := e.Try(who, "cortex.create", obj{"type": Types[rng.IntN(3)], "id": newID, "fields": f})
			if err == nil {
				var res ItemResult
				if err := json.Unmarshal(raw, &res); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.Item.ID)
			}
		case op < 6:
			_, _ = e.Try(who, "cortex.update", obj{"id": id, "updates": randomFields()})
		case op < 7:
			_, _ = e.Try(who, "cortex.delete", obj{"id": id})
		case op < 8:
			_, _ = e.Try(who, "cortex.share", obj{"id": id, "principal": agents[rng.IntN(3)].As, "permissions": []string{"read"}})
		case op < 9:
			_, _ = e.Try(who, "cortex.revoke", obj{"id": id, "principal": agents[rng.IntN(3)].As})
		default:
			_, _ = e.Try(who, "cortex.revert", obj{"id": id, "version": 1 + rng.IntN(3)})
		}
		if step%50 == 49 {
			all := e.allItems()
			for range 12 {
				q := randomQuery(rng, vocab)
				checkAgainstBruteForce(t, e, agents[rng.IntN(3)], q, all)
			}
		}
	}
	// Field for field, too: what check compares.
	if problems, err := e.c.checkMemoryIndex(); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", err, problems)
	}
}

// randomQuery draws filters over the values the random changes use.
func randomQuery(rng *rand.Rand, vocab []string) Query {
	q := Query{Limit: 1 + rng.IntN(7), IncludeDeleted: rng.IntN(4) == 0}
	pick := func(from []string) []string {
		var out []string
		for _, v := range from {
			if rng.IntN(3) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	if rng.IntN(2) == 0 {
		q.Type = Types[rng.IntN(3)]
	}
	q.Status = pick(Statuses)
	q.Priority = pick(Priorities)
	if rng.IntN(3) == 0 {
		q.Tags = pick([]string{"t0", "t1", "t2", "t3", "t4"})
	}
	if rng.IntN(4) == 0 {
		w := vocab[rng.IntN(len(vocab))]
		q.Text = w[:2+rng.IntN(len(w)-1)]
	}
	if rng.IntN(5) == 0 {
		q.Owner = []string{"agent_a", "agent_b", "agent_c"}[rng.IntN(3)]
	}
	if rng.IntN(6) == 0 {
		q.Org = "acme"
	}
	if rng.IntN(4) == 0 {
		d := t0.Add(time.Duration(rng.IntN(100)) * time.Hour)
		if rng.IntN(2) == 0 {
			q.DueBefore = &d
		} else {
			q.DueAfter = &d
		}
	}
	return q
}

// allItems reads every stored item.
func (e *testEnv) allItems() []*Item {
	e.T.Helper()
	var all []*Item
	err := e.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(itemPrefix()), func(_, v []byte) error {
			var it Item
			all = append(all, &it)
			return json.Unmarshal(v, &it)
		})
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return all
}

// bruteForce is q over all, by reading every item: the ids in active order.
func bruteForce(all []*Item, principal string, q Query) []string {
	anyOf := func(set []string, v string) bool { return len(set) == 0 || slices.Contains(set, v) }
	var hits []*Item
	for _, it := range all {
		itemWords := words(it.Title + " " + it.Description)
		switch {
		case !slices.Contains(it.readers(), principal), it.DeletedAt != nil && !q.IncludeDeleted,
			q.Type != "" && it.Type != q.Type, !anyOf(q.Status, it.Status), !anyOf(q.Priority, it.Priority),
			len(q.Tags) > 0 && !slices.ContainsFunc(it.Tags, func(t string) bool { return slices.Contains(q.Tags, t) }),
			q.Owner != "" && it.Owner != q.Owner, q.Org != "" && it.Org != q.Org, q.Parent != "" && it.Parent != q.Parent,
			(q.DueBefore != nil || q.DueAfter != nil) && it.DueAt == nil,
			q.DueBefore != nil && it.DueAt != nil && !it.DueAt.Before(*q.DueBefore),
			q.DueAfter != nil && it.DueAt != nil && it.DueAt.Before(*q.DueAfter):
			continue
		}
		ok := true
		for _, w := range words(q.Text) {
			ok = ok && slices.ContainsFunc(itemWords, func(iw string) bool { return strings.HasPrefix(iw, w) })
		}
		if ok {
			hits = append(hits, it)
		}
	}
	slices.SortFunc(hits, func(a, b *Item) int {
		if c := strings.Compare(orderKey(a), orderKey(b)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(hits))
	for i, it := range hits {
		ids[i] = it.ID
	}
	return ids
}

// checkAgainstBruteForce pages through q and compares every page with
// the brute-force answer.
func checkAgainstBruteForce(t *testing.T, e *testEnv, who call, q Query, all []*Item) {
	t.Helper()
	want := bruteForce(all, who.As, q)
	byType := map[string]int{}
	types := map[string]string{}
	for _, it := range all {
		types[it.ID] = it.Type
	}
	for _, id := range want {
		byType[types[id]]++
	}
	var got []string
	res := e.query(who, "cortex.query", q)
	for page := 0; ; page++ {
		if res.Count != len(want) || res.Checksum != Checksum(want) || !mapsEqual(res.CountsByType, byType) {
			t.Fatalf("query %+v by %s, page %d: count %d %v, want %d %v (checksums equal: %v)",
				q, who.As, page, res.Count, res.CountsByType, len(want), byType, res.Checksum == Checksum(want))
		}
		for _, it := range res.Items {
			got = append(got, it.ID)
		}
		if res.NextCursor == "" {
			break
		}
		q.Cursor = res.NextCursor
		res = e.query(who, "cortex.query", q)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("query %+v by %s: paged\n %v\nwant\n %v", q, who.As, got, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Issue 17: with writers committing all the while, every query that uses
// the index answers exactly what the store's index keys answer in the same
// snapshot (liveIndex's rule), and the writers' changes all reach it.
// Run with -race.
func TestQueryIndexIsExactWhileWritersCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			call := e.actionCall(agentA)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%04d", w, i)
				if _, err := e.c.Create(ctx, call, "goal", id, map[string]json.RawMessage{"title": json.RawMessage(`"race item"`)}); err != nil {
					t.Error(err)
					return
				}
				status := json.RawMessage(`"` + Statuses[i%len(Statuses)] + `"`)
				if _, err := e.c.Update(ctx, call, id, map[string]json.RawMessage{"status": status}, nil, 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	compared := 0
	for compared < 200 {
		q := Query{Status: []string{"active", "blocked"}, Limit: 5}
		if err := q.validate(); err != nil {
			t.Fatal(err)
		}
		err := e.c.index.read(context.Background(), func(idx *memindex.Index) error {
			return e.env.Store.View(func(tx *storage.Tx) error {
				fast, err := q.fromIndex(idx, tx, "agent_a")
				if err != nil {
					return err
				}
				slow, err := q.scan(tx, "agent_a")
				if err != nil {
					return err
				}
				if fast.Count != slow.Count || fast.Checksum != slow.Checksum || !slices.Equal(ids0(fast.Items), ids0(slow.Items)) || fast.NextCursor != slow.NextCursor {
					return fmt.Errorf("index %d %v, store %d %v", fast.Count, ids0(fast.Items), slow.Count, ids0(slow.Items))
				}
				compared++
				return nil
			})
		}, func() error { return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	// Quiet again: the index holds every committed change.
	q := Query{Status: Statuses, Limit: 1000, IncludeDeleted: true}
	checkAgainstBruteForce(t, e, agentA, q, e.allItems())
}

// The same query asked again after a change answers for the change: its
// reused matches (matchCache) go with the index generation they came from.
func TestTheSameQueryAfterAChangeSeesTheChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 5 {
		e.create(agentA, "goal", fmt.Sprintf("g%d", i), obj{"title": "alpha", "status": "active"})
	}
	q := Query{Status: []string{"active"}, Limit: 2}
	first := e.query(agentA, "cortex.query", q)
	if again := e.query(agentA, "cortex.query", q); again.Checksum != first.Checksum || again.Count != 5 {
		t.Fatalf("asked twice: %d %s, then %d %s", first.Count, first.Checksum, again.Count, again.Checksum)
	}
	e.update(agentA, "g3", obj{"status": "completed"}, -1)
	after := e.query(agentA, "cortex.query", q)
	if after.Count != 4 || after.Checksum != Checksum([]string{"g0", "g1", "g2", "g4"}) {
		t.Fatalf("after g3 completed: %d items, checksum %s", after.Count, after.Checksum)
	}
	checkAgainstBruteForce(t, e, agentA, q, e.allItems())
}
