package cortex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Seed 000, section 6: edge cases and stress tests.

// Seed 000, scenario 6.1.
func TestRapidSequentialUpdatesKeepEveryVersion(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "rapid"})
	turn := inTurn(agentA, "turn_rapid")
	for i := 1; i <= 10; i++ {
		r := e.update(turn, "goal_1", obj{"progress": i * 10}, i) // each based on the version just written
		if r.Item.GlobalVersion != i+1 {
			t.Fatalf("update %d: v%d, want v%d", i, r.Item.GlobalVersion, i+1)
		}
	}
	h := e.history(agentA, "goal_1")
	// The creation is the first mutation (previous_version null); the 10
	// updates follow it: v1 → v2 → ... → v11.
	if len(h.Mutations) != 11 || !h.Verified {
		t.Fatalf("%d entries verified=%v", len(h.Mutations), h.Verified)
	}
	if h.Mutations[0].PreviousVersion != nil {
		t.Fatal("the first mutation has a previous version")
	}
	for i, m := range h.Mutations[1:] {
		if *m.PreviousVersion != h.Mutations[i].NewVersion || m.NewVersion != i+2 || m.MutatedBy != "turn_rapid" {
			t.Errorf("update %d: v%d→v%d by %s", i+1, *m.PreviousVersion, m.NewVersion, m.MutatedBy)
		}
	}
}

// Seed 000, scenario 6.2.
func TestConcurrentTurnsLoseNoUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "contended", "progress": 0})
	const n = 10
	var (
		read      sync.WaitGroup // every turn has read v1
		done      sync.WaitGroup
		mu        sync.Mutex
		conflicts int
		failures  []error
	)
	read.Add(n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			turn := inTurn(agentA, fmt.Sprintf("turn_%02d", i))
			fail := func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() }
			expected, err := e.version(turn, "goal_1")
			read.Done()
			if err != nil {
				fail(err)
				return
			}
			read.Wait() // all read v1 before any writes
			for {
				_, err := e.Try(turn, "cortex.update", obj{"id": "goal_1", "updates": obj{"progress": i + 1}, "expected_version": expected})
				if err == nil {
					return
				}
				if !errors.Is(err, errs.ErrConflict) {
					fail(err)
					return
				}
				if expected == 1 {
					mu.Lock()
					conflicts++
					mu.Unlock()
				}
				if expected, err = e.version(turn, "goal_1"); err != nil { // re-read, retry
					fail(err)
					return
				}
			}
		}()
	}
	done.Wait()
	if len(failures) > 0 {
		t.Fatal(failures)
	}
	if conflicts != n-1 {
		t.Fatalf("%d turns conflicted on their first attempt; want %d", conflicts, n-1)
	}
	it := e.get(agentA, "goal_1")
	if it.GlobalVersion != 11 {
		t.Fatalf("final v%d, want v11", it.GlobalVersion)
	}
	h := e.history(agentA, "goal_1")
	if len(h.Mutations) != 11 || !h.Verified {
		t.Fatalf("%d entries verified=%v (%s)", len(h.Mutations), h.Verified, h.Problem)
	}
	by := map[string]bool{}
	for i, m := range h.Mutations[1:] {
		if m.NewVersion != i+2 || *m.PreviousVersion != i+1 || !strings.HasPrefix(m.MutatedBy, "turn_") {
			t.Errorf("mutation %d: v%d→v%d by %s", i, *m.PreviousVersion, m.NewVersion, m.MutatedBy)
		}
		by[m.MutatedBy] = true
	}
	if len(by) != n {
		t.Fatalf("%d distinct mutated_by, want %d", len(by), n)
	}
}

// version reads an item's version through the Go API (from any goroutine).
func (e *testEnv) version(who call, id string) (int, error) {
	it, err := e.c.Get(context.Background(), e.actionCall(who), id, false)
	if err != nil {
		return 0, err
	}
	return it.GlobalVersion, nil
}

// makeGoals creates goal_0000... with realistic fields, many per transaction.
func makeGoals(e *testEnv, n int) []spec {
	var specs []spec
	for i := range n {
		specs = append(specs, spec{typ: "goal", id: fmt.Sprintf("goal_%04d", i), owner: "agent_a",
			fields: obj{"title": fmt.Sprintf("Goal %d: harden the login flow", i), "description": "rate limits and alerting",
				"tags": []string{"security", "auth"}, "due_at": t0.Add(time.Duration(i) * time.Hour).Format(time.RFC3339), "org": "acme"}})
	}
	e.bulkCreate(specs, 200)
	return specs
}

// Seed 000, scenario 6.3.
func TestLargeBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	makeGoals(e, 100)
	audits := e.count(auditCountPrefix())
	var ups []obj
	for i := range 100 {
		ups = append(ups, obj{"id": fmt.Sprintf("goal_%04d", i), "updates": obj{"progress": 50, "status": "in_progress"}, "expected_version": 1})
	}

	// One bad update among them: nothing is applied.
	bad := slices.Clone(ups)
	bad[57] = obj{"id": "goal_9999", "updates": obj{"progress": 50}}
	before := e.dump()
	err := e.Fail(inTurn(agentA, "turn_batch"), "cortex.batch_update", obj{"updates": bad}, errs.NotFound, "rolled back", "goal_9999")
	d := err.Details
	if d["committed"] != false || d["succeeded"] != 0 || d["failed"] != 1 || d["rolled_back"] != 99 {
		t.Fatalf("details %v", d)
	}
	if errors := d["errors"].([]ItemError); len(errors) != 1 || errors[0].Index != 57 || errors[0].ID != "goal_9999" || errors[0].Kind != errs.NotFound {
		t.Fatalf("errors %+v", errors)
	}
	if diff := sameDump(before, e.dump()); diff != "" {
		t.Fatalf("the rolled-back batch wrote:\n%.2000s", diff)
	}
	if got := e.count(auditCountPrefix()); got != audits {
		t.Fatalf("%d audit entries after the rollback, want %d", got, audits)
	}
	// A bad value is refused before the transaction, with the same details.
	bad[57] = obj{"id": "goal_0057", "updates": obj{"progress": 500}}
	err = e.Fail(agentA, "cortex.batch_update", obj{"updates": bad}, errs.Validation, "updates[57]", "progress")
	if d := err.Details; d["succeeded"] != 0 || d["failed"] != 1 || d["rolled_back"] != 99 {
		t.Fatalf("details %v", d)
	}
	if diff := sameDump(before, e.dump()); diff != "" {
		t.Fatalf("the refused batch wrote:\n%.2000s", diff)
	}

	// All good: 100 updates, one transaction.
	var res BatchResult
	e.Do(inTurn(agentA, "turn_batch"), "cortex.batch_update", obj{"updates": ups}, &res)
	if !res.Committed || res.Succeeded != 100 || res.Failed != 0 || len(res.Items) != 100 || !isUUID(res.TransactionID) {
		t.Fatalf("result: committed %v succeeded %d failed %d items %d tx %q", res.Committed, res.Succeeded, res.Failed, len(res.Items), res.TransactionID)
	}
	if got := e.count(auditCountPrefix()); got != audits+100 {
		t.Fatalf("%d new audit entries, want 100", got-audits)
	}
	for i := range 100 {
		h := e.history(agentA, fmt.Sprintf("goal_%04d", i))
		m := h.Mutations[len(h.Mutations)-1]
		if len(h.Mutations) != 2 || m.TransactionID != res.TransactionID || m.MutationType != "update" || *m.PreviousVersion != 1 ||
			m.NewVersion != 2 || !slices.Equal(m.ChangedFields, []string{"progress", "status"}) || m.MutatedBy != "turn_batch" || !isUUID(m.MutationID) {
			t.Fatalf("goal %d: %+v", i, m)
		}
	}
}

// Seed 000, scenario 6.3.
func TestTwoThousandUpdatesInOneBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	makeGoals(e, 2000)
	var ups []obj
	for i := range 2000 {
		ups = append(ups, obj{"id": fmt.Sprintf("goal_%04d", i), "updates": obj{"progress": 75}})
	}
	audits := e.count(auditCountPrefix())
	var res BatchResult
	raw, err := e.Try(agentA, "cortex.batch_update", obj{"updates": ups})
	if errs.KindOf(err) == errs.Budget {
		// One update of these goals writes ~2.8 KB (item 0.9, version
		// snapshot 0.9, audit entry 0.65, trace entry 0.33); Badger refuses a
		// transaction over 15% of its memtable, and storage.Open sets 16 MB
		// (2.4 MB: ~850 such updates). Badger's default 64 MB allows ~3,500.
		t.Fatalf("2,000 updates do not fit in one Badger transaction with storage's memtable size: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 2000 || e.count(auditCountPrefix()) != audits+2000 {
		t.Fatalf("succeeded %d", res.Succeeded)
	}
	if got := e.query(agentA, "cortex.query", obj{"limit": 1}).Count; got != 2000 {
		t.Fatalf("count %d", got)
	}
}

// itemSpecs is the data set of 6.4 and the benchmarks: varied types,
// statuses, priorities, due dates, blocking flags, owners and tags (20).
func itemSpecs(n int, seed uint64) []spec {
	rng := rand.New(rand.NewPCG(seed, 1))
	words := []string{"login", "migration", "security", "review", "deploy", "billing", "search", "cache", "latency", "report",
		"onboarding", "backup", "audit", "alerting", "pricing", "mobile", "export", "import", "quota", "roadmap"}
	specs := make([]spec, n)
	for i := range specs {
		fields := obj{
			"title":       fmt.Sprintf("%s %s item %d", words[rng.IntN(20)], words[rng.IntN(20)], i),
			"description": fmt.Sprintf("about %s and %s", words[rng.IntN(20)], words[rng.IntN(20)]),
			"priority":    Priorities[rng.IntN(4)],
			"status":      Statuses[rng.IntN(5)],
			"progress":    rng.IntN(101),
			"blocking":    rng.IntN(4) == 0,
		}
		if rng.IntN(5) > 0 {
			fields["due_at"] = t0.Add(time.Duration(rng.IntN(24*60)) * time.Hour).Format(time.RFC3339)
		}
		var tags []string
		for range rng.IntN(4) {
			tags = append(tags, fmt.Sprintf("tag%02d", rng.IntN(20)))
		}
		if rng.IntN(6) == 0 {
			tags = append(tags, "security")
		}
		fields["tags"] = tags
		owner := "agent_a"
		if rng.IntN(10) == 0 {
			owner = "agent_b"
		}
		specs[i] = spec{typ: Types[rng.IntN(3)], id: fmt.Sprintf("item_%06d", i), owner: owner, fields: fields}
	}
	return specs
}

// matches is the brute-force filter of 6.4.
func matches(s spec, principal string, q Query) bool {
	f := s.fields
	if s.owner != principal {
		return false
	}
	if q.Type != "" && s.typ != q.Type {
		return false
	}
	if len(q.Status) > 0 && !slices.Contains(q.Status, f["status"].(string)) {
		return false
	}
	if len(q.Priority) > 0 && !slices.Contains(q.Priority, f["priority"].(string)) {
		return false
	}
	if len(q.Tags) > 0 {
		tags, _ := f["tags"].([]string)
		if !slices.ContainsFunc(q.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
			return false
		}
	}
	if q.DueBefore != nil || q.DueAfter != nil {
		due, ok := f["due_at"].(string)
		if !ok {
			return false
		}
		at, _ := time.Parse(time.RFC3339, due)
		if q.DueBefore != nil && !at.Before(*q.DueBefore) || q.DueAfter != nil && at.Before(*q.DueAfter) {
			return false
		}
	}
	text := strings.Fields(strings.ToLower(f["title"].(string) + " " + f["description"].(string)))
	for _, w := range strings.Fields(strings.ToLower(q.Text)) {
		if !slices.ContainsFunc(text, func(x string) bool { return strings.HasPrefix(x, w) }) {
			return false
		}
	}
	return true
}

// Seed 000, scenario 6.4.
func TestQueriesOverALargeDataSetMatchBruteForce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := 10_000
	if raceDetector {
		n = 5_000 // the race detector makes every write several times slower
	}
	specs := itemSpecs(n, 64)
	e.bulkCreate(specs, 250)
	dueBefore, dueAfter := t0.Add(40*24*time.Hour), t0.Add(10*24*time.Hour)
	queries := []Query{
		{Type: "goal", Status: []string{"active", "in_progress"}, Tags: []string{"security", "tag03"},
			Priority: []string{"critical", "high"}, DueBefore: &dueBefore, Limit: 10},
		{Type: "action", Status: []string{"blocked", "active"}, DueAfter: &dueAfter, Tags: []string{"tag07"}, Limit: 25},
		{Text: "secur migr", Priority: []string{"low", "medium"}, Limit: 40},
		{Status: []string{"completed"}, Tags: []string{"tag01", "tag02", "tag19"}, Limit: 200},
	}
	byID := map[string]spec{}
	order := map[string]int{}
	for i, s := range specs {
		byID[s.id] = s
		order[s.id] = i
	}
	for qi, q := range queries {
		q.Limit = q.Limit * n / 10_000 // as many pages as at 10,000 items
		// The expected result, brute force, in active order.
		var want []string
		for _, s := range specs {
			if matches(s, "agent_a", q) {
				want = append(want, s.id)
			}
		}
		if len(want) < 3*q.Limit/2 {
			t.Fatalf("query %d: only %d matches for pages of %d; make the test meaningful", qi, len(want), q.Limit)
		}
		slices.SortFunc(want, func(a, b string) int { return compareActive(byID[a], byID[b], order[a], order[b]) })

		start := time.Now()
		res := e.query(agentA, "cortex.query", q)
		t.Logf("query %d over %d items: %d matches, first page of %d in %s", qi, n, res.Count, q.Limit, time.Since(start))
		var got []string
		for page := 0; ; page++ {
			if res.Count != len(want) || res.Checksum != Checksum(want) {
				t.Fatalf("query %d page %d: count %d checksum %s; want %d %s", qi, page, res.Count, res.Checksum, len(want), Checksum(want))
			}
			for _, it := range res.Items {
				if !matches(byID[it.ID], "agent_a", q) || q.Type != "" && it.Type != q.Type || len(q.Status) > 0 && !slices.Contains(q.Status, it.Status) {
					t.Fatalf("query %d page %d: %s does not satisfy the filters", qi, page, it.ID)
				}
				got = append(got, it.ID)
			}
			if res.NextCursor == "" {
				break
			}
			next := q
			next.Cursor = res.NextCursor
			res = e.query(agentA, "cortex.query", next)
		}
		// Exactly the expected ids, in active order: none missing, none extra.
		if !slices.Equal(got, want) {
			t.Fatalf("query %d: paged %d ids, want %d:\n got %.300v\nwant %.300v", qi, len(got), len(want), got, want)
		}
	}
}

// compareActive is the active order of two specs created in the order of
// their indexes (bulkCreate makes each a millisecond after the one before).
func compareActive(a, b spec, ia, ib int) int {
	if c := priorityRank(a.fields["priority"].(string)) - priorityRank(b.fields["priority"].(string)); c != 0 {
		return c
	}
	da, oka := a.fields["due_at"].(string)
	db, okb := b.fields["due_at"].(string)
	switch {
	case oka && !okb:
		return -1
	case !oka && okb:
		return 1
	case oka && okb && da != db:
		ta, _ := time.Parse(time.RFC3339, da)
		tb, _ := time.Parse(time.RFC3339, db)
		return ta.Compare(tb)
	}
	if ba, bb := a.fields["blocking"].(bool), b.fields["blocking"].(bool); ba != bb {
		if ba {
			return -1
		}
		return 1
	}
	return ia - ib
}
