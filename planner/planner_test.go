//go:build !noplanning

package planner_test

// Beyond the seed's scenarios: plans from YAML files, validation errors,
// argument checks, cancellation, and concurrency under the race detector.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

func TestCreateFromYAMLFile(t *testing.T) {
	r := newRig(t)
	file, err := filepath.Abs("../testdata/plans/breakfast.plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := decodePlan(t, r.do("plan.create", map[string]any{"file": file, "id": "breakfast"}))
	if p.ID != "breakfast" || p.Goal != "Prepare breakfast" || p.MaxReplans != 1 || string(p.State) != `{"guests":2}` ||
		ids(p) != "toast:Pending, eggs:Pending, coffee:Pending" || subtaskOf(t, p, "coffee").Description != "Brew coffee once the toast is done" {
		t.Fatalf("plan %s", planJSON(t, p))
	}
	res := r.execute("breakfast", nil)
	if res.State["toast"] != "golden" || res.State["eggs"] != 2.0 || res.State["coffee"] != "hot" || res.State["guests"] != 2.0 {
		t.Errorf("state %v", res.State)
	}

	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		args any
		kind errs.Kind
		says string
	}{
		{map[string]any{"file": file, "goal": "x"}, errs.Validation, "not both"},
		{map[string]any{"file": filepath.Join(dir, "missing.yaml")}, errs.Validation, "cannot read"},
		{map[string]any{"file": write("bad.yaml", "goal: [unclosed\n")}, errs.Parse, "not valid YAML"},
		{map[string]any{"file": write("unknown.yaml", "goal: g\nsubtask: []\n")}, errs.Validation, `unknown field "subtask"`},
		{map[string]any{"file": write("nested.yaml", "file: other.yaml\n")}, errs.Validation, "names another file"},
		{map[string]any{"file": write("cycle.yaml", "goal: g\nsubtasks: [{id: a, dependencies: [a]}]\n")}, errs.CyclicDependency, "a → a"},
		{map[string]any{"file": write("nogoal.yaml", "subtasks: [{id: a}]\n")}, errs.Validation, "needs a goal"},
	} {
		e := r.fail(tc.kind, "plan.create", tc.args)
		if !strings.Contains(e.Message, tc.says) {
			t.Errorf("%v: %q, want it to say %q", tc.args, e.Message, tc.says)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		subtasks string
		kind     errs.Kind
		says     string
	}{
		{`[]`, errs.Validation, "at least one subtask"},
		{`[{"id": "a"}, {"id": "b"}, {"id": "a"}]`, errs.Validation, `subtasks[2].id: "a" is also the id of subtasks[0]`},
		{`[{"id": "a", "dependencies": ["nope"]}]`, errs.Validation, `depends on "nope", which is not a subtask`},
		{`[{"id": "a", "dependencies": ["a"]}]`, errs.CyclicDependency, "a → a"},
		{`[{"id": ""}]`, errs.Validation, "subtasks[0].id: every subtask needs an id"},
		{`[{"id": "a/b"}]`, errs.Validation, "without '/'"},
		{`[{"id": "` + strings.Repeat("x", 129) + `"}]`, errs.Validation, "at most 128"},
	} {
		e := r.fail(tc.kind, "plan.validate", `{"subtasks": `+tc.subtasks+`}`)
		if !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %q, want it to say %q", tc.subtasks, e.Message, tc.says)
		}
		// plan.create refuses the same, and stores nothing.
		r.fail(tc.kind, "plan.create", `{"goal": "g", "subtasks": `+tc.subtasks+`}`)
	}
	if out := r.do("plan.list", `{}`); string(out) != `{"plans":[]}` {
		t.Errorf("stored: %s", out)
	}
	// A duplicate dependency is harmless.
	if out := r.do("plan.validate", `{"subtasks": [{"id": "a"}, {"id": "b", "dependencies": ["a", "a"]}]}`); string(out) != `{"order":["a","b"]}` {
		t.Errorf("%s", out)
	}
	r.create("p", st("a", "noop", nil))
	if out := r.do("plan.validate", `{"plan_id": "p"}`); string(out) != `{"order":["a"]}` {
		t.Errorf("stored plan: %s", out)
	}
	r.fail(errs.Validation, "plan.validate", `{"plan_id": "p", "subtasks": [{"id": "a"}]}`)
	r.fail(errs.NotFound, "plan.validate", `{"plan_id": "nope"}`)
	r.fail(errs.Conflict, "plan.create", `{"id": "p", "goal": "again", "subtasks": [{"id": "a"}]}`)
	r.fail(errs.Validation, "plan.create", `{"id": "a/b", "goal": "g", "subtasks": [{"id": "a"}]}`)
	r.fail(errs.Validation, "plan.create", `{"goal": "g", "state": [1], "subtasks": [{"id": "a"}]}`)
	r.fail(errs.Validation, "plan.create", `{"goal": "g", "subtasks": [{"id": "a", "action": {"name": ""}}]}`)
}

func TestExecuteArgumentErrors(t *testing.T) {
	r := newRig(t)
	r.create("p", st("a", "noop", nil))
	for args, says := range map[string]string{
		`{"plan_id": "p", "max_concurrent": -1}`:                                  "max_concurrent",
		`{"plan_id": "p", "max_retries": -1}`:                                     "max_retries",
		`{"plan_id": "p", "on_subtask_failure": "panic"}`:                         `unknown policy "panic"`,
		`{"plan_id": "p", "on_subtask_failure": "retry", "fallback": "retry"}`:    "fallback",
		`{"plan_id": "p", "on_subtask_failure": "retry", "fallback": "continue"}`: "fallback",
	} {
		if e := r.fail(errs.Validation, "plan.execute", args); !strings.Contains(e.Message, says) {
			t.Errorf("%s: %q", args, e.Message)
		}
	}
	r.fail(errs.NotFound, "plan.execute", `{"plan_id": "nope"}`)
	r.fail(errs.NotFound, "plan.resume", `{"plan_id": "nope"}`)
	r.fail(errs.NotFound, "plan.cancel", `{"plan_id": "nope"}`)
	r.fail(errs.NotFound, "plan.status", `{"plan_id": "nope"}`)
	if e := r.fail(errs.Validation, "plan.resume", `{"plan_id": "p"}`); !strings.Contains(e.Message, "never ran") {
		t.Errorf("resume before a run: %q", e.Message)
	}
	r.fail(errs.Validation, "plan.decompose", `{"goal": " "}`)
	r.fail(errs.Validation, "plan.decompose", `{"goal": "g", "strategy": "spiral"}`)
	r.fail(errs.Validation, "plan.decompose", `{"goal": "g", "max_depth": -1}`)
	for name, args := range map[string]string{"state.set": `{"key": "k", "value": 1}`, "state.incr": `{"key": "k"}`, "state.get": `{}`} {
		if e := r.fail(errs.Validation, name, args); !strings.Contains(e.Message, "only works inside a plan subtask") {
			t.Errorf("%s outside a plan: %q", name, e.Message)
		}
	}
	r.create("n", st("a", "state.set", map[string]any{"key": "s", "value": "text"}), st("b", "state.incr", map[string]any{"key": "s"}, "a"))
	if b := subtaskOf(t, r.execute("n", nil).Plan, "b"); b.Status != planner.Failed || !strings.Contains(b.Error, "not a number") {
		t.Errorf("incr of a string: %+v", b)
	}
}

// TestRunningPlanConflicts: one run of a plan at a time; no replan during it.
func TestRunningPlanConflicts(t *testing.T) {
	r := newRig(t)
	r.create("p", st("a", "test.gate", map[string]any{"name": "a"}))
	done := r.executeAsync("p", nil)
	waitFor(t, r.probes.Started("a"), "a")
	r.fail(errs.Conflict, "plan.execute", `{"plan_id": "p"}`)
	r.fail(errs.Conflict, "plan.resume", `{"plan_id": "p"}`)
	r.fail(errs.Conflict, "plan.replan", `{"plan_id": "p"}`)
	// While it runs, readers see it live.
	if p := decodePlan(t, r.do("plan.get", `{"plan_id": "p"}`)); p.Status != "running" || p.Subtasks[0].Status != planner.InProgress {
		t.Errorf("live plan: %s %s", p.Status, ids(p))
	}
	var list struct{ Plans []struct{ Status string } }
	if err := json.Unmarshal(r.do("plan.list", `{}`), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Plans) != 1 || list.Plans[0].Status != "running" {
		t.Errorf("plan.list %+v", list)
	}
	r.probes.Release("a")
	if res := decodeResult(t, await(t, done)); res.Plan.Status != "completed" {
		t.Errorf("%s", res.Plan.Status)
	}
	if out := r.do("plan.cancel", `{"plan_id": "p"}`); string(out) != `{"cancelled":false}` {
		t.Errorf("cancel of a finished plan: %s", out)
	}

	// A replan holds the plan while it asks the model: no run starts meanwhile.
	r = newRig(t)
	asked, answer := make(chan struct{}), make(chan struct{})
	r.model.Func = func(req llm.Request) llmtest.Answer {
		close(asked)
		<-answer
		return llmtest.Text(`{"subtasks": [{"id": "b", "description": "B", "action": {"name": "noop"}}]}`)
	}
	r.create("q", st("a", "fail", nil))
	r.execute("q", nil)
	replanned := r.async("plan.replan", `{"plan_id": "q"}`)
	waitFor(t, asked, "the replan to ask the model")
	r.fail(errs.Conflict, "plan.execute", `{"plan_id": "q"}`)
	close(answer)
	if p := decodePlan(t, await(t, replanned)); ids(p) != "b:Pending" {
		t.Errorf("replanned: %s", ids(p))
	}
	if res := r.execute("q", nil); res.Plan.Status != "completed" {
		t.Errorf("after the replan: %s", res.Plan.Status)
	}
}

func TestCancelMidRunAndResume(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	r.create("p", st("a", "test.record", map[string]any{"name": "a"}),
		st("b", "test.gate", map[string]any{"name": "b"}, "a"),
		st("c", "test.record", map[string]any{"name": "c"}),
		st("d", "test.record", map[string]any{"name": "d"}, "b", "c"))
	done := r.executeAsync("p", map[string]any{"max_concurrent": 2})
	waitFor(t, r.probes.Started("b"), "b")
	rec.waitEvent(t, planner.EventSubtaskFinished.Name(), "c")
	if out := r.do("plan.cancel", `{"plan_id": "p"}`); string(out) != `{"cancelled":true}` {
		t.Fatalf("%s", out)
	}
	res := decodeResult(t, await(t, done))
	if res.Plan.Status != "cancelled" || ids(res.Plan) != "a:Completed, b:Pending, c:Completed, d:Pending" {
		t.Fatalf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	if b := subtaskOf(t, res.Plan, "b"); b.StartedAt != nil || b.Error != "" {
		t.Errorf("the interrupted subtask keeps traces of its run: %+v", b)
	}
	if stored, _ := planner.StoredPlan(r.e.Env(), "p"); stored.Status != "cancelled" || ids(stored) != ids(res.Plan) {
		t.Errorf("stored %s %s", stored.Status, ids(stored))
	}
	r.probes.Release("b")
	res = decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`))
	if res.Plan.Status != "completed" || r.probes.Calls("a") != 1 || r.probes.Calls("c") != 1 || r.probes.Calls("b") != 2 || r.probes.Calls("d") != 1 {
		t.Errorf("resumed: %s; calls a %d b %d c %d d %d", res.Plan.Status, r.probes.Calls("a"), r.probes.Calls("b"), r.probes.Calls("c"), r.probes.Calls("d"))
	}
}

// TestCancelByContext: the caller's context ending interrupts the run the
// same way (ctrl+c in batch mode).
func TestCancelByContext(t *testing.T) {
	r := newRig(t)
	r.create("p", st("a", "test.gate", map[string]any{"name": "a"}), st("b", "noop", nil, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan asyncResult, 1)
	go func() {
		out, err := r.e.Do(ctx, core.Request{Action: "plan.execute", Args: json.RawMessage(`{"plan_id": "p"}`)})
		done <- asyncResult{out, err}
	}()
	waitFor(t, r.probes.Started("a"), "a")
	cancel()
	res := decodeResult(t, await(t, done))
	if res.Plan.Status != "cancelled" || ids(res.Plan) != "a:Pending, b:Pending" {
		t.Errorf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	r.probes.Release("a")
	if res := decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`)); res.Plan.Status != "completed" {
		t.Errorf("resumed: %s", res.Plan.Status)
	}
}

// TestCancelDuringRetryBackoff: a subtask waiting to retry is interrupted,
// not failed (it used to be marked Failed and the plan aborted).
func TestCancelDuringRetryBackoff(t *testing.T) {
	r := newRig(t)
	r.create("p", st("a", "test.flaky", map[string]any{"name": "a", "fail_times": 1}), st("b", "noop", nil, "a"))
	r.sleep.block.Store(true)
	done := r.executeAsync("p", map[string]any{"on_subtask_failure": "retry"})
	waitFor(t, chanOf(r.sleep.blocked), "the retry backoff")
	r.do("plan.cancel", `{"plan_id": "p"}`)
	res := decodeResult(t, await(t, done))
	if a := subtaskOf(t, res.Plan, "a"); res.Plan.Status != "cancelled" || a.Status != planner.Pending || a.Error != "" || a.Attempts != 1 {
		t.Fatalf("%s: %+v", res.Plan.Status, a)
	}
	r.sleep.block.Store(false)
	res = decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`))
	if a := subtaskOf(t, res.Plan, "a"); res.Plan.Status != "completed" || a.Attempts != 2 {
		t.Errorf("resumed: %s %+v", res.Plan.Status, a)
	}
}

// chanOf turns one signal into a closed channel.
func chanOf(signal chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		<-signal
		close(out)
	}()
	return out
}

// TestResumeDoesNotHideFailures: resuming an aborted plan does not run its
// failed subtask again, and does not call the plan completed (it did).
func TestResumeDoesNotHideFailures(t *testing.T) {
	r := newRig(t)
	r.create("p", st("a", "noop", nil), st("b", "fail", nil, "a"), st("c", "noop", nil, "b"))
	if res := r.execute("p", nil); res.Plan.Status != "aborted" {
		t.Fatalf("%s", res.Plan.Status)
	}
	for _, action := range []string{"plan.resume", "plan.execute"} {
		res := decodeResult(t, r.do(action, `{"plan_id": "p"}`))
		if res.Plan.Status != "aborted" || ids(res.Plan) != "a:Completed, b:Failed, c:Pending" {
			t.Errorf("%s: %s %s", action, res.Plan.Status, ids(res.Plan))
		}
	}
}

// TestWideDAGUnderRace: 8 at a time over a wide, layered DAG, with readers
// polling the live plan meanwhile (go test -race).
func TestWideDAGUnderRace(t *testing.T) {
	r := newRig(t)
	const width, depth = 24, 6
	var subtasks []map[string]any
	for layer := range depth {
		for i := range width {
			id := fmt.Sprintf("L%d-%02d", layer, i)
			var deps []string
			if layer > 0 {
				// Fan in from three of the layer before.
				for _, j := range []int{i, (i + 1) % width, (i + 7) % width} {
					deps = append(deps, fmt.Sprintf("L%d-%02d", layer-1, j))
				}
			}
			action := st(id, "test.record", map[string]any{"name": "x"}, deps...)
			if i%2 == 0 {
				action = st(id, "state.incr", map[string]any{"key": id}, deps...)
			}
			subtasks = append(subtasks, action)
		}
	}
	r.create("wide", subtasks...)
	// One reader cycling through the live views while the plan runs.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			call := [][2]string{{"plan.get", `{"plan_id": "wide"}`}, {"plan.status", `{"plan_id": "wide", "include_details": true}`}, {"plan.list", `{}`}}[i%3]
			if _, err := r.try(call[0], call[1]); err != nil {
				t.Errorf("%s during the run: %v", call[0], err)
				return
			}
		}
	}()
	res := r.execute("wide", map[string]any{"max_concurrent": 8})
	close(stop)
	readers.Wait()
	if res.Progress.Completed != width*depth || res.Plan.Status != "completed" {
		t.Fatalf("%+v", res.Progress)
	}
	if m := r.probes.maxActive.Load(); m > 8 {
		t.Errorf("%d at once with max_concurrent 8", m)
	}
	results, _ := res.State["results"].(map[string]any)
	if len(results) != width*depth || res.State["L5-00"] != 1.0 {
		t.Errorf("state: %d results, L5-00 = %v", len(results), res.State["L5-00"])
	}
	// The run is deterministic: the same plan again gives the same state.
	r.do("plan.create", map[string]any{"id": "wide2", "goal": "Goal of wide", "subtasks": subtasks})
	again := r.execute("wide2", map[string]any{"max_concurrent": 8})
	for k, v := range res.State {
		if k != "results" && !jsonEqual(v, again.State[k]) {
			t.Errorf("state %s: %v, then %v", k, v, again.State[k])
		}
	}
	order, _ := res.Plan.Validate()
	if !slices.Equal(order[:3], []string{"L0-00", "L0-01", "L0-02"}) {
		t.Errorf("order %v", order[:3])
	}
}
