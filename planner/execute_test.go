//go:build !noplanning

package planner_test

// Execution: dependency order, parallel branches (each on its own copy of
// the state, merged in execution order), nested actions, progress events.
// Seed 002, scenarios 001.3R-UNIT-018..020 and 001.3R-INT-005..009.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/planner"
)

// Seed scenario 001.3R-UNIT-018 (ExecuteRespectsTopologicalOrder).
func TestExecuteRunsInDependencyOrder(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	rec4 := func(id string, deps ...string) map[string]any {
		return st(id, "test.record", map[string]any{"name": id}, deps...)
	}
	// Listed dependents first, so that listing order alone would be wrong.
	r.create("p", rec4("D", "B", "C"), rec4("C", "A"), rec4("B", "A"), rec4("A"), rec4("E", "D"))
	res := r.execute("p", map[string]any{"max_concurrent": 4})
	if res.Plan.Status != "completed" || res.Progress.Completed != 5 {
		t.Fatalf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	rec.runs(t, 1)
	order := r.probes.Order()
	at := func(id string) int { return slices.Index(order, id) }
	if at("A") != 0 || at("D") < at("B") || at("D") < at("C") || at("E") != 4 {
		t.Errorf("ran in order %v", order)
	}
	// Every subtask started only after each of its dependencies finished.
	for _, s := range res.Plan.Subtasks {
		started := rec.seq(planner.EventSubtaskStarted.Name(), s.ID)
		for _, d := range s.Dependencies {
			if finished := rec.seq(planner.EventSubtaskFinished.Name(), d); finished == 0 || finished > started {
				t.Errorf("%s started (event %d) before %s finished (event %d)", s.ID, started, d, finished)
			}
		}
	}
}

// Seed scenario 001.3R-UNIT-019 (ExecuteAccumulatesState).
func TestExecuteAccumulatesState(t *testing.T) {
	r := newRig(t)
	r.do("plan.create", map[string]any{"id": "p", "goal": "Count", "state": map[string]any{"base": "kept"}, "subtasks": []any{
		st("set", "state.set", map[string]any{"key": "n", "value": 1}),
		st("incr", "state.incr", map[string]any{"key": "n"}, "set"),
		st("add", "state.incr", map[string]any{"key": "n", "by": 10}, "incr"),
		st("copy", "state.set", map[string]any{"key": "copy", "value": "${state.n}"}, "add"),
		st("read", "state.get", nil, "copy"),
	}})
	res := r.execute("p", map[string]any{"max_concurrent": 4})
	if res.State["n"] != 12.0 || res.State["copy"] != 12.0 || res.State["base"] != "kept" {
		t.Errorf("state %v", res.State)
	}
	// Each step saw what the ones before it wrote.
	var read struct{ State map[string]any }
	if err := json.Unmarshal(subtaskOf(t, res.Plan, "read").Result, &read); err != nil {
		t.Fatal(err)
	}
	if read.State["n"] != 12.0 || read.State["copy"] != 12.0 || read.State["base"] != "kept" {
		t.Errorf("read saw %v", read.State)
	}
	results, _ := res.State["results"].(map[string]any)
	if len(results) != 5 || !jsonEqual(results["incr"], map[string]any{"key": "n", "value": 2}) {
		t.Errorf("results %v", results)
	}
}

// Seed scenario 001.3R-UNIT-020 (ProgressUpdatesAfterEachSubtask).
func TestProgressEventFollowsEachSubtask(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	ch := r.e.SubscribeBuffer(ctx, 4096)
	r.create("p", st("a", "noop", nil), st("b", "noop", nil, "a"), st("c", "noop", nil, "b"), st("d", "noop", nil))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	var completed []int
	var finishedBefore []int // subtask.finished events seen before each progress event
	finished := 0
	for ev := range ch {
		switch d := ev.Data.(type) {
		case planner.SubtaskFinishedEvent:
			finished++
		case planner.ProgressEvent:
			completed = append(completed, d.Completed)
			finishedBefore = append(finishedBefore, finished)
			if d.Total != 4 {
				t.Errorf("progress %+v", d)
			}
		}
		if ev.Name == planner.EventPlanFinished.Name() {
			// Stop at the run's last event, whatever its payload, so that a
			// payload of another type fails the test rather than hanging it.
			if d, ok := planner.EventPlanFinished.Of(ev); !ok || d.Counts.Completed != 4 || d.Counts.Total != 4 {
				t.Errorf("plan.finished %+v", ev.Data)
			}
			break
		}
	}
	if !slices.Equal(completed, []int{1, 2, 3, 4}) || !slices.Equal(finishedBefore, []int{0, 1, 2, 3}) {
		t.Errorf("progress completed %v (after %v subtask.finished)", completed, finishedBefore)
	}
	if res.Progress != (planner.Counts{Completed: 4, Total: 4}) {
		t.Errorf("progress %+v", res.Progress)
	}
}

// Seed scenario 001.3R-INT-005 (ParallelExecutionOfIndependentSubtasks).
func TestIndependentSubtasksRunInParallel(t *testing.T) {
	// B and C each wait until the other has started: they complete only
	// if they run at the same time.
	r := newRig(t)
	r.create("p", st("A", "noop", nil),
		st("B", "test.meet", map[string]any{"me": "B", "other": "C"}, "A"),
		st("C", "test.meet", map[string]any{"me": "C", "other": "B"}, "A"),
		st("D", "noop", nil, "B", "C"))
	res := r.execute("p", map[string]any{"max_concurrent": 2})
	if res.Plan.Status != "completed" {
		t.Fatalf("%s: %s (B: %q)", res.Plan.Status, ids(res.Plan), subtaskOf(t, res.Plan, "B").Error)
	}
	// Many at once: eight subtasks pairwise meeting, eight at a time.
	r = newRig(t)
	var subtasks []map[string]any
	for i := range 8 {
		subtasks = append(subtasks, st(fmt.Sprint("s", i), "test.meet", map[string]any{"me": fmt.Sprint("s", i), "other": fmt.Sprint("s", i^1)}))
	}
	r.create("wide", subtasks...)
	if res := r.execute("wide", map[string]any{"max_concurrent": 8}); res.Progress.Completed != 8 {
		t.Errorf("%s", ids(res.Plan))
	}
}

// Seed scenario 001.3R-INT-006 (MaxConcurrentOneIsSequential).
func TestMaxConcurrentOneRunsOneAtATime(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	var subtasks []map[string]any
	var names []string
	for i := range 12 {
		name := fmt.Sprint("s", i)
		names = append(names, name)
		subtasks = append(subtasks, st(name, "test.record", map[string]any{"name": name}))
	}
	r.create("p", subtasks...)
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	if res.Progress.Completed != 12 {
		t.Fatal(ids(res.Plan))
	}
	rec.runs(t, 1)
	if m := r.probes.maxActive.Load(); m != 1 {
		t.Errorf("%d subtasks ran at once with max_concurrent 1", m)
	}
	if !slices.Equal(r.probes.Order(), names) {
		t.Errorf("order %v", r.probes.Order())
	}
	// Strictly one after the other: started, finished, started, finished...
	var seq []string
	for _, ev := range rec.plan() {
		seq = append(seq, strings.TrimPrefix(ev.Name, "plan.subtask.")+" "+ev.Subtask)
	}
	for i, name := range names {
		if seq[2*i] != "started "+name || seq[2*i+1] != "finished "+name {
			t.Fatalf("events %v", seq)
		}
	}
	// And the bound holds at any width: 40 independent subtasks, 3 at a time.
	r = newRig(t)
	subtasks = nil
	for i := range 40 {
		subtasks = append(subtasks, st(fmt.Sprint("s", i), "test.record", map[string]any{"name": "x"}))
	}
	r.create("p", subtasks...)
	r.execute("p", map[string]any{"max_concurrent": 3})
	if m := r.probes.maxActive.Load(); m > 3 {
		t.Errorf("%d at once with max_concurrent 3", m)
	}
}

// Seed scenario 001.3R-INT-007 (StateDeepCopiedForParallelBranches).
func TestParallelBranchesGetTheirOwnStateCopy(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "state.set", map[string]any{"key": "counter", "value": 1}),
		st("B", "test.incr_meet", map[string]any{"me": "B", "other": "C", "key": "counter"}, "A"),
		st("C", "test.incr_meet", map[string]any{"me": "C", "other": "B", "key": "counter"}, "A"))
	res := r.execute("p", nil)
	for _, id := range []string{"B", "C"} {
		var seen struct{ Before, After float64 }
		if err := json.Unmarshal(subtaskOf(t, res.Plan, id).Result, &seen); err != nil {
			t.Fatal(err)
		}
		// Each received its own copy with counter = 1, and after both had
		// incremented it saw only its own increment.
		if seen.Before != 1 || seen.After != 2 {
			t.Errorf("%s saw counter %v, then %v (want 1, then 2)", id, seen.Before, seen.After)
		}
		if d := subtaskOf(t, res.Plan, id).Delta["counter"]; d != 2.0 {
			t.Errorf("%s wrote %v", id, d)
		}
	}
	if res.State["counter"] != 2.0 {
		t.Errorf("final counter %v: the branches' increments must not add up", res.State["counter"])
	}
}

// Seed scenario 001.3R-INT-008 (ParallelResultsMergedAtConvergence).
func TestConvergingBranchesMergeInExecutionOrder(t *testing.T) {
	// B and C both write x; D, after both, reads it. The rule (state.go):
	// the later in execution order wins — C, listed after B — whichever
	// finished first.
	for _, firstDone := range []string{"B", "C"} {
		t.Run(firstDone+" finishes first", func(t *testing.T) {
			r := newRig(t)
			rec := r.record()
			r.create("p", st("A", "state.set", map[string]any{"key": "x", "value": "from A"}),
				st("B", "test.gate", map[string]any{"name": "B", "key": "x", "value": "from B"}, "A"),
				st("C", "test.gate", map[string]any{"name": "C", "key": "x", "value": "from C"}, "A"),
				st("B2", "state.set", map[string]any{"key": "only_b", "value": true}, "B"),
				st("D", "state.get", nil, "B2", "C"))
			done := r.executeAsync("p", nil)
			second := map[string]string{"B": "C", "C": "B"}[firstDone]
			waitFor(t, r.probes.Started("B"), "B")
			waitFor(t, r.probes.Started("C"), "C")
			r.probes.Release(firstDone)
			rec.waitEvent(t, planner.EventSubtaskFinished.Name(), firstDone)
			r.probes.Release(second)
			res := decodeResult(t, await(t, done))
			rec.runs(t, 1)
			if rec.seq(planner.EventSubtaskFinished.Name(), firstDone) > rec.seq(planner.EventSubtaskFinished.Name(), second) {
				t.Fatalf("%s did not finish first", firstDone)
			}
			var d struct{ State map[string]any }
			if err := json.Unmarshal(subtaskOf(t, res.Plan, "D").Result, &d); err != nil {
				t.Fatal(err)
			}
			if d.State["x"] != "from C" || d.State["only_b"] != true || res.State["x"] != "from C" {
				t.Errorf("D saw x=%v, final x=%v; want from C", d.State["x"], res.State["x"])
			}
			results, _ := d.State["results"].(map[string]any)
			if len(results) != 4 {
				t.Errorf("D saw the results of %v", results)
			}
		})
	}
}

// Seed scenario 001.3R-INT-009 (SubtaskRunsNestedRegisteredAction).
func TestSubtasksRunRegisteredActions(t *testing.T) {
	r := newRig(t)
	r.do("plan.create", `{"id": "p", "goal": "Mixed", "state": {"goal_id": "g-ada"}, "subtasks": [
		{"id": "set", "action": {"name": "state.set", "args": {"key": "n", "value": 40}}},
		{"id": "incr", "dependencies": ["set"], "action": {"name": "state.incr", "args": {"key": "n", "by": 2}}},
		{"id": "nap", "action": {"name": "sleep", "args": {"ms": 250}}},
		{"id": "flaky", "action": {"name": "fail", "args": {"times": 1}}},
		{"id": "custom", "dependencies": ["incr"], "action": {"name": "test.record", "args": {"name": "custom"}}},
		{"id": "goal", "dependencies": ["incr"], "action": {"name": "cortex.create", "args": {"type": "goal", "id": "${state.goal_id}", "fields": {"title": "Answer", "progress": "${state.n}"}}}}]}`)
	res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 1})
	if res.Plan.Status != "completed" {
		t.Fatalf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	if res.State["n"] != 42.0 || r.probes.Calls("custom") != 1 {
		t.Errorf("state %v", res.State)
	}
	if !slices.Contains(r.sleep.Waits(), 250*time.Millisecond) {
		t.Errorf("sleep did not go through the injected sleeper: %v", r.sleep.Waits())
	}
	if f := subtaskOf(t, res.Plan, "flaky"); f.Attempts != 2 || !jsonEqual(f.Result, map[string]any{"attempt": 2}) {
		t.Errorf("flaky: %+v", f)
	}
	// The state reference was substituted, and the other subsystem's
	// action took effect.
	var got struct {
		Item struct {
			ID       string `json:"id"`
			Progress int    `json:"progress"`
		} `json:"item"`
	}
	if err := json.Unmarshal(r.do("cortex.get", `{"id": "g-ada"}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Item.Progress != 42 {
		t.Errorf("cortex item %+v", got.Item)
	}
	// An unknown action fails the subtask as any failure does.
	r.create("bad", st("x", "no.such", nil))
	res = r.execute("bad", nil)
	if x := subtaskOf(t, res.Plan, "x"); x.Status != planner.Failed || !strings.Contains(x.Error, "unknown action") {
		t.Errorf("x: %+v", x)
	}
	// A reference to a state key that is not there: the subtask fails, saying so.
	r.create("ref", st("x", "state.set", map[string]any{"key": "y", "value": "${state.missing}"}))
	if x := subtaskOf(t, r.execute("ref", nil).Plan, "x"); !strings.Contains(x.Error, `the state has no "missing"`) {
		t.Errorf("x: %+v", x)
	}
}

// TestStateActionResultShapes: what the state.* actions answer, byte for
// byte, as batch scripts print it: state.get without a key the whole state
// (even when empty), with a missing key "value": null; state.set and
// state.incr the key and its value now.
func TestStateActionResultShapes(t *testing.T) {
	r := newRig(t)
	r.create("p", st("all", "state.get", nil), st("miss", "state.get", map[string]any{"key": "nope"}, "all"),
		st("set", "state.set", map[string]any{"key": "k", "value": "<v>"}, "miss"), st("inc", "state.incr", map[string]any{"key": "n"}, "set"))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	for id, want := range map[string]string{
		"all":  `{"state":{}}`,
		"miss": `{"key":"nope","value":null}`,
		"set":  `{"key":"k","value":"<v>"}`,
		"inc":  `{"key":"n","value":1}`,
	} {
		if got := string(subtaskOf(t, res.Plan, id).Result); got != want {
			t.Errorf("%s answered %s, want %s", id, got, want)
		}
	}
}
