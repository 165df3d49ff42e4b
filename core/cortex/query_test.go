package cortex

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Seed 000, section 4: query patterns and retrieval.

// Seed 000, scenario 4.1.
func TestActiveItemsInPriorityOrder(t *testing.T) {
	e := newEnv(t)
	day := func(n int) string { return t0.Add(time.Duration(n)*24*time.Hour + 7*time.Hour).Format(time.RFC3339) }
	e.create(agentA, "goal", "goal_1", obj{"title": "Goal 1", "priority": "low", "due_at": day(1)})
	e.clock.Advance(time.Millisecond)
	e.create(agentA, "goal", "goal_2", obj{"title": "Goal 2", "priority": "critical", "due_at": day(7)})
	e.clock.Advance(time.Millisecond)
	e.create(agentA, "goal", "goal_3", obj{"title": "Goal 3", "priority": "high", "due_at": day(0)})
	e.clock.Advance(time.Millisecond)
	e.create(agentA, "goal", "goal_4", obj{"title": "Goal 4", "priority": "medium", "due_at": day(0)})

	res := e.query(agentA, "cortex.active", obj{"limit": 10})
	if got, want := ids0(res.Items), []string{"goal_2", "goal_3", "goal_4", "goal_1"}; !slices.Equal(got, want) {
		t.Fatalf("order %v; want %v", got, want)
	}
	if res.Count != 4 || res.NextCursor != "" {
		t.Fatalf("count %d cursor %q", res.Count, res.NextCursor)
	}
}

// The whole active order: priority, then due date ascending with none last,
// then blocking first, then oldest first.
func TestActiveOrderTieBreaks(t *testing.T) {
	e := newEnv(t)
	due := func(h int) string { return t0.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }
	make := func(id string, fields obj) {
		fields["title"] = id
		e.create(agentA, "action", id, fields)
		e.clock.Advance(time.Second)
	}
	make("h_nodue_old", obj{"priority": "high"})
	make("h_due5", obj{"priority": "high", "due_at": due(5)})
	make("h_nodue_blocking", obj{"priority": "high", "blocking": true})
	make("h_due2_new", obj{"priority": "high", "due_at": due(2)})
	make("h_due2_blocking", obj{"priority": "high", "due_at": due(2), "blocking": true})
	make("l_due1", obj{"priority": "low", "due_at": due(1)})
	make("c_nodue", obj{"priority": "critical"})
	make("m_due1", obj{"priority": "medium", "due_at": due(1)})
	make("h_nodue_new", obj{"priority": "high"})
	make("h_due2_old_after", obj{"priority": "high", "due_at": due(2)}) // newer than h_due2_new
	make("done", obj{"priority": "critical", "status": "completed"})    // not active

	want := []string{"c_nodue", "h_due2_blocking", "h_due2_new", "h_due2_old_after", "h_due5",
		"h_nodue_blocking", "h_nodue_old", "h_nodue_new", "m_due1", "l_due1"}
	if got := ids0(e.query(agentA, "cortex.active", obj{}).Items); !slices.Equal(got, want) {
		t.Fatalf("order\n %v\nwant\n %v", got, want)
	}
	// Changing the priority moves an item (its index key is rewritten).
	e.update(agentA, "l_due1", obj{"priority": "critical"}, -1)
	if got := ids0(e.query(agentA, "cortex.active", obj{"limit": 2}).Items); !slices.Equal(got, []string{"l_due1", "c_nodue"}) {
		t.Fatalf("after the change: %v", got)
	}
}

// Seed 000, scenario 4.2.
func TestQueryFiltersByStatus(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_a", obj{"title": "A", "status": "active"})
	e.create(agentA, "goal", "goal_b", obj{"title": "B", "status": "completed"})
	e.create(agentA, "goal", "goal_c", obj{"title": "C", "status": "in_progress"})
	res := e.query(agentA, "cortex.query", obj{"status": []string{"active", "in_progress"}})
	got := ids0(res.Items)
	slices.Sort(got)
	if !slices.Equal(got, []string{"goal_a", "goal_c"}) || res.Count != 2 {
		t.Fatalf("%v (count %d); want [goal_a goal_c]", got, res.Count)
	}
	if res.Checksum != Checksum([]string{"goal_c", "goal_a"}) {
		t.Fatalf("checksum %s", res.Checksum)
	}
}

// Seed 000, scenario 4.3.
func TestQueryFiltersByTags(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_a", obj{"title": "A", "tags": []string{"urgent", "security"}})
	e.create(agentA, "goal", "goal_b", obj{"title": "B", "tags": []string{"security"}})
	e.create(agentA, "goal", "goal_c", obj{"title": "C", "tags": []string{"feature"}})
	for _, tags := range [][]string{{"security"}, {"Security "}} { // tags are case- and space-insensitive
		got := ids0(e.query(agentA, "cortex.query", obj{"tags": tags}).Items)
		slices.Sort(got)
		if !slices.Equal(got, []string{"goal_a", "goal_b"}) {
			t.Fatalf("tags %q: %v; want [goal_a goal_b]", tags, got)
		}
	}
	// Any of the tags.
	if got := e.query(agentA, "cortex.query", obj{"tags": []string{"urgent", "feature"}}); got.Count != 2 {
		t.Fatalf("urgent|feature: %v", ids0(got.Items))
	}
	// A tag removed by an update leaves the index.
	e.update(agentA, "goal_b", obj{"tags": []string{"feature"}}, -1)
	if got := ids0(e.query(agentA, "cortex.query", obj{"tags": []string{"security"}}).Items); !slices.Equal(got, []string{"goal_a"}) {
		t.Fatalf("after untagging: %v", got)
	}
}

// Seed 000, scenario 4.4.
func TestHistoryReturnsTheCompleteTrail(t *testing.T) {
	e := newEnv(t)
	e.create(inTurn(agentA, "turn_0"), "goal", "goal_1", obj{"title": "ten"})
	for i := 1; i < 10; i++ {
		e.clock.Advance(time.Millisecond)
		e.update(inTurn(agentA, "turn_"+string(rune('0'+i))), "goal_1", obj{"progress": i * 10}, -1)
	}
	raw := e.Do(agentA, "cortex.history", obj{"id": "goal_1"}, nil)
	var h struct {
		Mutations     []map[string]json.RawMessage `json:"mutations"`
		ChainVerified bool                         `json:"chain_verified"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Mutations) != 10 || !h.ChainVerified {
		t.Fatalf("%d mutations verified=%v; want 10", len(h.Mutations), h.ChainVerified)
	}
	var last time.Time
	for i, m := range h.Mutations {
		var (
			id, item, typ, by, tx, ts string
			prev                      *int
			next                      int
			fields                    []string
		)
		for k, dst := range map[string]any{"mutation_id": &id, "item_id": &item, "mutation_type": &typ, "mutated_by": &by,
			"transaction_id": &tx, "mutation_timestamp": &ts, "previous_version": &prev, "new_version": &next, "changed_fields": &fields} {
			if err := json.Unmarshal(m[k], dst); err != nil || m[k] == nil {
				t.Fatalf("mutation %d: %s = %s: %v", i, k, m[k], err)
			}
		}
		if !isUUID(id) || !isUUID(tx) || item != "goal_1" || len(fields) == 0 || next != i+1 {
			t.Errorf("mutation %d: id %q tx %q item %q fields %v v%d", i, id, tx, item, fields, next)
		}
		if !slices.Contains([]string{"create", "update", "delete", "revert", "share", "revoke"}, typ) {
			t.Errorf("mutation %d: type %q", i, typ)
		}
		if (i == 0) != (prev == nil) || prev != nil && *prev != i {
			t.Errorf("mutation %d: previous_version %v", i, prev)
		}
		if by != "turn_"+string(rune('0'+i)) {
			t.Errorf("mutation %d: mutated_by %q", i, by)
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || !at.After(last) {
			t.Errorf("mutation %d: timestamp %q not ISO 8601 or not in order", i, ts)
		}
		last = at
	}
}

// Seed 000, scenario 4.5.
func TestBatchQueryKeepsQueryOrder(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_x", obj{"title": "X", "priority": "critical"})
	e.create(agentA, "goal", "goal_y", obj{"title": "Y", "priority": "high"})
	e.create(agentA, "goal", "goal_z", obj{"title": "Z", "priority": "critical", "status": "in_progress"})
	e.create(agentA, "action", "act_1", obj{"title": "pending", "status": "active"})
	e.create(agentA, "action", "act_2", obj{"title": "done", "status": "completed"})
	e.create(agentA, "question", "q_1", obj{"title": "why?", "parent": "goal_x"})
	e.create(agentA, "question", "q_2", obj{"title": "how?", "parent": "goal_x"})
	e.create(agentA, "question", "q_3", obj{"title": "other", "parent": "goal_y"})

	var out BatchQueryResult
	e.Do(agentA, "cortex.batch_query", obj{"queries": []obj{
		{"type": "goal", "priority": []string{"critical"}},
		{"type": "action", "status": []string{"active"}},
		{"type": "question", "parent": "goal_x"},
	}}, &out)
	if len(out.Results) != 3 {
		t.Fatalf("%d results, want 3", len(out.Results))
	}
	want := [][]string{{"goal_x", "goal_z"}, {"act_1"}, {"q_1", "q_2"}}
	for i, w := range want {
		got := ids0(out.Results[i].Items)
		slices.Sort(got)
		if !slices.Equal(got, w) || out.Results[i].Count != len(w) {
			t.Errorf("results[%d] = %v; want %v", i, got, w)
		}
	}
	// A bad query names its index.
	e.Fail(agentA, "cortex.batch_query", obj{"queries": []obj{{}, {"status": []string{"open"}}}}, errs.Validation, "queries[1]")
}

// Every filter of cortex.query, one at a time and together.
func TestQueryFilters(t *testing.T) {
	e := newEnv(t)
	at := func(h int) string { return t0.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }
	e.create(agentA, "goal", "g_mig", obj{"title": "Database migration", "description": "move to Badger", "priority": "high", "org": "acme", "due_at": at(10), "tags": []string{"infra"}})
	e.create(agentA, "goal", "g_sec", obj{"title": "Security review", "priority": "critical", "org": "acme", "due_at": at(30), "tags": []string{"security"}})
	e.create(agentA, "action", "a_mig", obj{"title": "Run the migrations", "parent": "g_mig", "org": "other", "due_at": at(20)})
	e.create(agentA, "question", "q_mig", obj{"title": "Which database?", "parent": "g_mig", "status": "blocked"})
	e.create(agentB, "goal", "b_goal", obj{"title": "B's migration", "tags": []string{"infra"}})
	share2 := func(id string) {
		e.Do(agentB, "cortex.share", obj{"id": id, "principal": "agent_a", "permissions": []string{"read"}}, nil)
	}
	share2("b_goal")
	e.create(agentA, "goal", "g_gone", obj{"title": "Old migration"})
	e.Do(agentA, "cortex.delete", obj{"id": "g_gone"}, nil)

	cases := []struct {
		q    obj
		want []string
	}{
		{obj{}, []string{"a_mig", "b_goal", "g_mig", "g_sec", "q_mig"}},
		{obj{"type": "goal"}, []string{"b_goal", "g_mig", "g_sec"}},
		{obj{"status": []string{"blocked"}}, []string{"q_mig"}},
		{obj{"priority": []string{"high", "critical"}}, []string{"g_mig", "g_sec"}},
		{obj{"tags": []string{"infra", "security"}}, []string{"b_goal", "g_mig", "g_sec"}},
		{obj{"owner": "agent_b"}, []string{"b_goal"}},
		{obj{"org": "acme"}, []string{"g_mig", "g_sec"}},
		{obj{"parent": "g_mig"}, []string{"a_mig", "q_mig"}},
		{obj{"text": "migration"}, []string{"a_mig", "b_goal", "g_mig"}}, // "migrations" too
		{obj{"text": "migrations"}, []string{"a_mig"}},
		{obj{"text": "MIGR"}, []string{"a_mig", "b_goal", "g_mig"}}, // prefixes, any case
		{obj{"text": "database migr"}, []string{"g_mig"}},           // every word
		{obj{"text": "badger"}, []string{"g_mig"}},                  // the description too
		{obj{"text": "migration", "include_deleted": true}, []string{"a_mig", "b_goal", "g_gone", "g_mig"}},
		{obj{"due_before": at(20)}, []string{"g_mig"}},
		{obj{"due_after": at(20)}, []string{"a_mig", "g_sec"}},
		{obj{"due_after": at(15), "due_before": at(25)}, []string{"a_mig"}},
		{obj{"type": "goal", "tags": []string{"infra"}, "owner": "agent_a", "org": "acme", "text": "data", "priority": []string{"high"}, "status": []string{"active"}}, []string{"g_mig"}},
		{obj{"type": "question", "tags": []string{"infra"}}, []string{}},
	}
	for _, c := range cases {
		res := e.query(agentA, "cortex.query", c.q)
		got := ids0(res.Items)
		slices.Sort(got)
		if !slices.Equal(got, c.want) || res.Count != len(c.want) || res.Checksum != Checksum(c.want) {
			t.Errorf("query %v: %v (count %d); want %v", c.q, got, res.Count, c.want)
		}
	}

	// limit and cursor page through in active order.
	all := ids0(e.query(agentA, "cortex.query", obj{}).Items)
	var paged []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := obj{"limit": 2}
		if cursor != "" {
			q["cursor"] = cursor
		}
		res := e.query(agentA, "cortex.query", q)
		if res.Count != 5 || len(res.Items) > 2 {
			t.Fatalf("page %d: count %d, %d items", pages, res.Count, len(res.Items))
		}
		paged = append(paged, ids0(res.Items)...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("pages %v; one query %v", paged, all)
	}

	for _, bad := range []obj{{"type": "task"}, {"status": []string{"open"}}, {"priority": []string{"urgent"}},
		{"limit": -1}, {"limit": 1001}, {"cursor": "not a cursor!"}, {"colour": "red"}} {
		e.Fail(agentA, "cortex.query", bad, errs.Validation)
	}
}
