//go:build !noplanning

package tour_test

import (
	"context"

	"encoding/json"
	"github.com/engram-console/engram/core/conn"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/tour"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

var me = enginetest.Who{}

// open is engram as it runs: every subsystem, the planner and the tour,
// in memory, on a fixed clock.
func open(t *testing.T) (enginetest.Rig, *clock.Fixed) {
	t.Helper()
	clk := clock.NewFixed(t0)
	opts := core.Options{InMemory: true, Clock: clk, IDSeed: "tour tests"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}), tour.Subsystem())
	e, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return enginetest.ForConn(t, e), clk
}

// mine is the user's own data, some of it tagged like the tour's, in the
// places the tour writes to.
func mine(r enginetest.Rig) {
	r.Do(me, "cortex.create", `{"type":"goal","id":"my-goal","fields":{"title":"My own goal","tags":["tour"]}}`, nil)
	r.Do(me, "memory.memorize", `{"store":"working","item":{"id":"my-fact","type":"fact","text":"I like the tour.","tags":["tour"]}}`, nil)
	r.Do(me, "memory.memorize", `{"store":"episodic","item":{"id":"my-event","type":"event","text":"I went on a tour."}}`, nil)
	r.Do(me, "plan.create", `{"id":"my-plan","goal":"Mine","subtasks":[{"id":"a","action":{"name":"noop"}}]}`, nil)
	r.Do(me, "history.write", `{"speaker":"user","text":"My own words."}`, nil)
}

// snapshot is what the user sees of goals, plans, memories and
// conversations, as text to compare.
func snapshot(r enginetest.Rig) string {
	var b strings.Builder
	q := enginetest.Call[cortex.QueryResult](r, me, "cortex.query", `{"limit":100}`)
	for _, it := range q.Items {
		b.WriteString("item " + it.ID + " " + it.Title + "\n")
	}
	for _, p := range enginetest.Call[planner.ListResult](r, me, "plan.list", `{}`).Plans {
		b.WriteString("plan " + p.ID + " " + p.Status + "\n")
	}
	for _, s := range enginetest.Call[memory.StoresResult](r, me, "memory.stores", `{}`).Stores {
		raw, _ := json.Marshal(s)
		b.WriteString("store " + string(raw) + "\n")
	}
	for _, u := range enginetest.Call[history.Utterances](r, me, "history.read", `{}`).Utterances {
		b.WriteString("said " + u.Text + "\n")
	}
	return b.String()
}

func TestLoadMakesSampleDataInEveryPlaceAndRemoveTakesExactlyItBack(t *testing.T) {
	r, _ := open(t)
	mine(r)
	before := snapshot(r)

	st := enginetest.Call[tour.Status](r, me, "tour.load", `{}`)
	if !st.Loaded || st.LoadedAt == nil || !st.LoadedAt.Equal(t0) {
		t.Fatalf("tour.load = %+v, want loaded at %v", st, t0)
	}
	kinds := map[string]int{}
	for _, o := range st.Objects {
		kinds[o.Kind]++
	}
	want := map[string]int{"conversation": 1, "utterance": 10, "thread": 2, "cortex_item": 3, "plan": 1, "memory_item": 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("the tour made %d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	// What each tab shows: a conversation past its buffer with a summary,
	// two linked threads, a goal with versions, an aborted plan, memories.
	stats := enginetest.Call[history.Stats](r, me, "history.stats", `{"conversation":"tour"}`)
	if stats.EvictedCount != 6 || len(stats.Summary.Covers) == 0 {
		t.Errorf("the tour's conversation: %d evicted, summary covering %v; want 6 and a summary", stats.EvictedCount, stats.Summary.Covers)
	}
	threads := enginetest.Call[episodic.ListResult](r, me, "thread.list", `{}`).Threads
	if len(threads) != 2 || len(threads[0].LinkedThreads) != 1 || threads[0].LinkedThreads[0] != threads[1].ID {
		t.Errorf("the tour's threads: %s; want two, the newer linked to the older", enginetest.Short(threads))
	}
	goals := enginetest.Call[cortex.QueryResult](r, me, "cortex.query", `{"tags":["tour"],"type":"goal"}`)
	var sample *cortex.Item
	for _, it := range goals.Items {
		if it.ID != "my-goal" {
			sample = it
		}
	}
	if sample == nil || sample.GlobalVersion != 3 {
		t.Errorf("the tour's goal: %s; want one with 3 versions", enginetest.Short(goals.Items))
	}
	plan := enginetest.Call[planner.PlanResult](r, me, "plan.get", `{"plan_id":"tour"}`)
	if plan.Plan.Status != "aborted" {
		t.Errorf("the tour's plan is %q, want aborted (a subtask failed)", plan.Plan.Status)
	}

	rm := enginetest.Call[tour.RemoveResult](r, me, "tour.remove", `{}`)
	if got := len(rm.Removed) + len(rm.Kept); got != len(st.Objects) {
		t.Errorf("tour.remove accounted for %d objects, the tour made %d", got, len(st.Objects))
	}
	var kept []string
	for _, k := range rm.Kept {
		kept = append(kept, k.Kind)
	}
	slices.Sort(kept)
	if !slices.Equal(kept, []string{"thread", "thread"}) {
		t.Errorf("tour.remove kept %v, want the two threads (no action deletes them)", rm.Kept)
	}
	if after := snapshot(r); after != before {
		t.Errorf("after load and remove, the user's data differs:\nbefore\n%s\nafter\n%s", before, after)
	}
	if st := enginetest.Call[history.Stats](r, me, "history.stats", `{"conversation":"tour"}`); st.Exists {
		t.Errorf("the tour's conversation is still there: %+v", st)
	}
	r.Fail(me, "plan.get", `{"plan_id":"tour"}`, errs.NotFound)
	for _, o := range st.Objects {
		switch o.Kind {
		case tour.KindCortexItem:
			r.Fail(me, "cortex.get", map[string]any{"id": o.ID}, errs.NotFound)
		case tour.KindMemoryItem:
			r.Fail(me, "memory.get", map[string]any{"store": o.In, "id": o.ID}, errs.NotFound)
		}
	}
	if st := enginetest.Call[tour.Status](r, me, "tour.status", `{}`); st.Loaded || len(st.Kept) != 2 {
		t.Errorf("tour.status after removal = %+v, want not loaded, 2 kept", st)
	}
}

func TestLoadingTheTourTwiceIsRefusedAndChangesNothing(t *testing.T) {
	r, clk := open(t)
	first := enginetest.Call[tour.Status](r, me, "tour.load", `{}`)
	before := snapshot(r)
	clk.Advance(time.Minute)
	r.Fail(me, "tour.load", `{}`, errs.Conflict, "loaded already", "tour.remove")
	if after := snapshot(r); after != before {
		t.Errorf("a refused second load changed things:\nbefore\n%s\nafter\n%s", before, after)
	}
	if st := enginetest.Call[tour.Status](r, me, "tour.status", `{}`); !st.LoadedAt.Equal(*first.LoadedAt) || len(st.Objects) != len(first.Objects) {
		t.Errorf("tour.status after the refused load = %+v, want the first load's", st)
	}
	// Removed, it loads again.
	r.Do(me, "tour.remove", `{}`, nil)
	r.Do(me, "tour.load", `{}`, nil)
}

func TestRemovingWithoutATourSaysHowToLoadOne(t *testing.T) {
	r, _ := open(t)
	r.Fail(me, "tour.remove", `{}`, errs.NotFound, "tour.load")
}

func TestALoadThatFailsTakesBackWhatItMade(t *testing.T) {
	r, _ := open(t)
	mine(r)
	r.Do(me, "plan.create", `{"id":"tour","goal":"My plan called tour","subtasks":[{"id":"a","action":{"name":"noop"}}]}`, nil)
	before := snapshot(r)
	r.Fail(me, "tour.load", `{}`, errs.Conflict, "step plan (plan.create)", "nothing of it was kept")
	if after := snapshot(r); after != before {
		t.Errorf("a failed load left data behind:\nbefore\n%s\nafter\n%s", before, after)
	}
	if st := enginetest.Call[tour.Status](r, me, "tour.status", `{}`); st.Loaded {
		t.Errorf("tour.status after a failed load = %+v, want not loaded", st)
	}
	if p := enginetest.Call[planner.PlanResult](r, me, "plan.get", `{"plan_id":"tour"}`); p.Plan.Goal != "My plan called tour" {
		t.Errorf("the user's plan tour became %q", p.Plan.Goal)
	}
}

func TestTheTourRefusesToWriteIntoAConversationOfYours(t *testing.T) {
	r, _ := open(t)
	r.Do(me, "history.write", `{"conversation":"tour","speaker":"user","text":"My tour notes."}`, nil)
	before := snapshot(r)
	r.Fail(me, "tour.load", `{}`, errs.Conflict, `a conversation named "tour" exists already`)
	if after := snapshot(r); after != before {
		t.Errorf("a refused load changed things:\nbefore\n%s\nafter\n%s", before, after)
	}
	if u := enginetest.Call[history.Utterances](r, me, "history.read", `{"conversation":"tour"}`).Utterances; len(u) != 1 || u[0].Text != "My tour notes." {
		t.Errorf("the user's conversation tour now holds %s", enginetest.Short(u))
	}
}

func TestTheTourIsTheSameOnTheSameClock(t *testing.T) {
	a, _ := open(t)
	b, _ := open(t)
	ra := a.Do(me, "tour.load", `{}`, nil)
	rb := b.Do(me, "tour.load", `{}`, nil)
	if string(ra) != string(rb) {
		t.Errorf("two loads on the same clock differ:\n%s\n%s", ra, rb)
	}
	// The data ends at the engine's now: the last memory is made then.
	var st tour.Status
	enginetest.Decode(t, ra, &st)
	last := st.Objects[len(st.Objects)-1]
	m := enginetest.Call[memory.GetResult](a, me, "memory.get", map[string]any{"store": last.In, "id": last.ID})
	if !m.Item.Timestamp.Equal(t0) {
		t.Errorf("the tour's last memory is at %v, want the engine's now %v", m.Item.Timestamp, t0)
	}
}

// A load whose caller gives up (a console quitting) still finishes, and is
// recorded: half a tour, which tour.remove would not know, is never left.
func TestALoadWhoseCallerGivesUpStillFinishes(t *testing.T) {
	r, _ := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Run(ctx, conn.Request{Action: "tour.load"}); err != nil {
		t.Fatalf("tour.load on a cancelled context: %v, want it to finish", err)
	}
	if st := enginetest.Call[tour.Status](r, me, "tour.status", `{}`); !st.Loaded || len(st.Objects) != 19 {
		t.Fatalf("after the load: %+v, want all 19 objects recorded", st)
	}
}
