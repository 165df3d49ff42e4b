//go:build !noplanning

package planner_test

// Seed 002 (TEA-AGENT-001.3-rust, translated to Go), the unit scenarios
// 001.3R-UNIT-001..032, one test each, named after its ID.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// ---- AC1: the plan data structure ----

func Test001_3R_UNIT_001_PlanConstruction(t *testing.T) {
	r := newRig(t)
	p := r.create("house",
		st("A", "noop", nil),
		map[string]any{"id": "B", "description": "Raise the walls", "dependencies": []string{"A"}},
		st("C", "state.set", map[string]any{"key": "k", "value": 1}, "A", "B"))
	if p.ID != "house" || p.Goal != "Goal of house" || p.Strategy != "manual" || p.Status != "pending" ||
		p.MaxReplans != 3 || p.ReplanCount != 0 || !p.CreatedAt.Equal(t0) || len(p.Subtasks) != 3 {
		t.Fatalf("plan %+v", p)
	}
	want := []planner.Subtask{
		{ID: "A", Description: "A", Dependencies: []string{}, Action: &planner.ActionSpec{Name: "noop"}, Status: planner.Pending, Depth: 1},
		{ID: "B", Description: "Raise the walls", Dependencies: []string{"A"}, Status: planner.Pending, Depth: 1},
		{ID: "C", Description: "C", Dependencies: []string{"A", "B"},
			Action: &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key":"k","value":1}`)}, Status: planner.Pending, Depth: 1},
	}
	for i, s := range p.Subtasks {
		if !jsonEqual(*s, want[i]) {
			t.Errorf("subtask %d:\n got %+v\nwant %+v", i, *s, want[i])
		}
	}
	// It is stored as built.
	if got := decodePlan(t, r.do("plan.get", map[string]any{"plan_id": "house"})); planJSON(t, got) != planJSON(t, p) {
		t.Errorf("plan.get:\n%s\nplan.create:\n%s", planJSON(t, got), planJSON(t, p))
	}
	if order, err := p.Validate(); err != nil || !slices.Equal(order, []string{"A", "B", "C"}) {
		t.Errorf("Validate: %v, %v", order, err)
	}
}

func Test001_3R_UNIT_002_PlanRejectsEmptySubtaskList(t *testing.T) {
	var empty planner.Plan
	if _, err := empty.Validate(); errs.KindOf(err) != errs.Validation || !strings.Contains(err.Error(), "at least one subtask") {
		t.Errorf("Validate of an empty plan: %v", err)
	}
	r := newRig(t)
	for _, subtasks := range []string{`[]`, `null`} {
		e := r.fail(errs.Validation, "plan.create", `{"id": "p", "goal": "Nothing", "subtasks": `+subtasks+`}`)
		if e.Details["field"] != "subtasks" || !strings.Contains(e.Message, "at least one subtask") {
			t.Errorf("subtasks %s: %q %v", subtasks, e.Message, e.Details)
		}
	}
	r.fail(errs.Validation, "plan.validate", `{"subtasks": []}`)
	if out := r.do("plan.list", `{}`); string(out) != `{"plans":[]}` {
		t.Errorf("a rejected plan was stored: %s", out)
	}
}

func Test001_3R_UNIT_003_DependenciesReferenceExistingSubtasks(t *testing.T) {
	r := newRig(t)
	e := r.fail(errs.Validation, "plan.create", map[string]any{"id": "p", "goal": "g", "subtasks": []any{
		st("A", "noop", nil), st("B", "noop", nil, "A", "Z")}})
	if !strings.Contains(e.Message, `"Z"`) || !strings.Contains(e.Message, "(B)") || e.Details["field"] != "subtasks[1].dependencies" {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	r.fail(errs.NotFound, "plan.get", `{"plan_id": "p"}`)
	// Existing references are fine, in any order of listing.
	r.create("ok", st("B", "noop", nil, "A"), st("A", "noop", nil))
}

// cycleError validates subtasks (id → dependencies) both ways — Plan.Validate
// and the plan.validate action — and returns the CyclicDependency.
func cycleError(t *testing.T, subtasks ...[]string) *errs.Error {
	t.Helper()
	p := &planner.Plan{}
	var in []map[string]any
	for _, s := range subtasks {
		p.Subtasks = append(p.Subtasks, &planner.Subtask{ID: s[0], Dependencies: s[1:]})
		in = append(in, map[string]any{"id": s[0], "dependencies": s[1:]})
	}
	_, err := p.Validate()
	if !errors.Is(err, errs.ErrCyclicDependency) {
		t.Fatalf("Validate: %v, want a CyclicDependency", err)
	}
	r := newRig(t)
	viaAction := r.fail(errs.CyclicDependency, "plan.validate", map[string]any{"subtasks": in})
	if viaAction.Message != err.Error() {
		t.Errorf("plan.validate says %q, Validate %q", viaAction.Message, err)
	}
	r.fail(errs.CyclicDependency, "plan.create", map[string]any{"goal": "g", "subtasks": in})
	return errs.As(err)
}

func Test001_3R_UNIT_004_DirectCycleDetected(t *testing.T) {
	e := cycleError(t, []string{"A", "B"}, []string{"B", "A"})
	if !strings.Contains(e.Message, "A → B → A") {
		t.Errorf("message %q does not include the cycle path A → B → A", e.Message)
	}
	if !reflect.DeepEqual(e.Details["cycle"], []string{"A", "B", "A"}) {
		t.Errorf("details %v", e.Details)
	}
}

func Test001_3R_UNIT_005_IndirectCycleDetected(t *testing.T) {
	e := cycleError(t, []string{"A", "B"}, []string{"B", "C"}, []string{"C", "A"})
	if !strings.Contains(e.Message, "A → B → C → A") || !reflect.DeepEqual(e.Details["cycle"], []string{"A", "B", "C", "A"}) {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	// Among the subtasks of a plan that is otherwise fine, listed in any
	// order: the cycle is reported from its earliest-listed member.
	e = cycleError(t, []string{"start"}, []string{"C", "B", "start"}, []string{"A", "C"}, []string{"B", "A"}, []string{"end", "C"})
	if !strings.Contains(e.Message, "C → B → A → C") {
		t.Errorf("%q", e.Message)
	}
}

func Test001_3R_UNIT_006_SelfReferenceDetected(t *testing.T) {
	e := cycleError(t, []string{"X"}, []string{"A", "X", "A"})
	if !strings.Contains(e.Message, "A → A") || !reflect.DeepEqual(e.Details["cycle"], []string{"A", "A"}) {
		t.Errorf("%q %v", e.Message, e.Details)
	}
}

// TestCyclePathIsDeterministic: when a component has several equally short
// ways back, the same one is reported every time (it used to depend on map
// order).
func TestCyclePathIsDeterministic(t *testing.T) {
	p := &planner.Plan{Subtasks: []*planner.Subtask{
		{ID: "A", Dependencies: []string{"B"}}, {ID: "B", Dependencies: []string{"C", "D"}},
		{ID: "C", Dependencies: []string{"A"}}, {ID: "D", Dependencies: []string{"A"}}}}
	for i := range 300 {
		_, err := p.Validate()
		if e := errs.As(err); !reflect.DeepEqual(e.Details["cycle"], []string{"A", "B", "C", "A"}) {
			t.Fatalf("run %d: %v", i, e.Details["cycle"])
		}
	}
}

func Test001_3R_UNIT_007_TopologicalSortOrder(t *testing.T) {
	p := &planner.Plan{Subtasks: []*planner.Subtask{
		{ID: "A"}, {ID: "B", Dependencies: []string{"A"}}, {ID: "C", Dependencies: []string{"A"}}, {ID: "D", Dependencies: []string{"B", "C"}}}}
	first, err := p.Validate()
	if err != nil {
		t.Fatal(err)
	}
	at := func(id string) int { return slices.Index(first, id) }
	if at("A") > at("B") || at("A") > at("C") || at("A") > at("D") || at("B") > at("D") || at("C") > at("D") {
		t.Errorf("order %v", first)
	}
	if !slices.Equal(first, []string{"A", "B", "C", "D"}) {
		t.Errorf("order %v, want A B C D (ties by plan position)", first)
	}
	for range 200 {
		if again, _ := p.Validate(); !slices.Equal(again, first) {
			t.Fatalf("order %v, then %v", first, again)
		}
	}
	r := newRig(t)
	out := r.do("plan.validate", `{"subtasks": [{"id": "A"}, {"id": "B", "dependencies": ["A"]}, {"id": "C", "dependencies": ["A"]}, {"id": "D", "dependencies": ["B", "C"]}]}`)
	if string(out) != `{"order":["A","B","C","D"]}` {
		t.Errorf("plan.validate: %s", out)
	}
}

// checkOrder verifies that order is the topological order of p in which,
// at every step, the ready subtask listed first is taken.
func checkOrder(t *testing.T, p *planner.Plan, order []string) {
	t.Helper()
	if len(order) != len(p.Subtasks) {
		t.Fatalf("order has %d of %d subtasks", len(order), len(p.Subtasks))
	}
	done := map[string]bool{}
	for step, id := range order {
		var want string
		for _, s := range p.Subtasks {
			if done[s.ID] {
				continue
			}
			ready := true
			for _, d := range s.Dependencies {
				ready = ready && done[d]
			}
			if ready {
				want = s.ID
				break
			}
		}
		if id != want {
			t.Fatalf("step %d: %s, want %s (the first ready one)", step, id, want)
		}
		done[id] = true
	}
}

func Test001_3R_UNIT_008_TopologicalSortHandlesMultipleValidOrderings(t *testing.T) {
	// The same DAG listed two ways: both orders are valid; each follows
	// the listing among subtasks ready together.
	diamond := func(names ...string) *planner.Plan {
		deps := map[string][]string{"A": nil, "B": {"A"}, "C": {"A"}, "D": {"B", "C"}}
		p := &planner.Plan{}
		for _, n := range names {
			p.Subtasks = append(p.Subtasks, &planner.Subtask{ID: n, Dependencies: deps[n]})
		}
		return p
	}
	for _, tc := range []struct {
		listing, want []string
	}{
		{[]string{"A", "B", "C", "D"}, []string{"A", "B", "C", "D"}},
		{[]string{"D", "C", "B", "A"}, []string{"A", "C", "B", "D"}},
		{[]string{"C", "A", "D", "B"}, []string{"A", "C", "B", "D"}},
	} {
		order, err := diamond(tc.listing...).Validate()
		if err != nil || !slices.Equal(order, tc.want) {
			t.Errorf("listing %v: %v %v, want %v", tc.listing, order, err, tc.want)
		}
	}
	// Random DAGs (edges only to earlier-numbered subtasks, listed in a
	// shuffled order): always the first-ready-by-listing order.
	rng := rand.New(rand.NewPCG(7, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(40)
		p := &planner.Plan{}
		for i := range n {
			s := &planner.Subtask{ID: fmt.Sprint("s", i)}
			for j := range i {
				if rng.IntN(5) == 0 {
					s.Dependencies = append(s.Dependencies, fmt.Sprint("s", j))
				}
			}
			p.Subtasks = append(p.Subtasks, s)
		}
		rng.Shuffle(n, func(i, j int) { p.Subtasks[i], p.Subtasks[j] = p.Subtasks[j], p.Subtasks[i] })
		order, err := p.Validate()
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkOrder(t, p, order)
	}
}

// fullPlan is a plan with every field set, as a run leaves it.
func fullPlan() *planner.Plan {
	at := t0.Add(90 * time.Second)
	later := at.Add(time.Second)
	return &planner.Plan{
		ID: "p-1", Goal: "Prepare breakfast — ünïcode too", Strategy: "hierarchical", Status: "running",
		ReplanCount: 1, MaxReplans: 3, OriginalPlanID: "p-0", Provider: "ollama",
		State:     json.RawMessage(`{"guests":2,"menu":{"drink":"coffee"}}`),
		Settings:  &planner.Settings{MaxConcurrent: 2, OnSubtaskFailure: "retry", Fallback: "skip", MaxRetries: 3, Checkpoint: true, CheckpointPath: "/tmp/x.ckpt"},
		CreatedAt: t0, UpdatedAt: later,
		Subtasks: []*planner.Subtask{
			{ID: "toast", Description: "Make toast", Dependencies: []string{}, Action: &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key":"toast","value":"golden"}`)},
				Status: planner.Completed, Result: json.RawMessage(`{"key":"toast","value":"golden"}`),
				Delta:    map[string]any{"toast": "golden", "results": map[string]any{"toast": map[string]any{"key": "toast", "value": "golden"}}},
				Attempts: 1, Depth: 1, StartedAt: &at, FinishedAt: &later},
			{ID: "eggs", Description: "Fry eggs", Dependencies: []string{}, Status: planner.Failed, Error: "no eggs", Attempts: 4, Depth: 2, Parent: "toast", StartedAt: &at, FinishedAt: &later},
			{ID: "coffee", Description: "Brew coffee", Dependencies: []string{"toast"}, Status: planner.Pending, Depth: 1},
		},
	}
}

func Test001_3R_UNIT_009_SerializationRoundTripPreservesPlan(t *testing.T) {
	p := fullPlan()
	b, err := planner.EncodeCheckpoint(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := planner.DecodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if planJSON(t, back) != planJSON(t, p) {
		t.Errorf("round trip:\n got %s\nwant %s", planJSON(t, back), planJSON(t, p))
	}
	// Field by field, beyond JSON: times, nesting, nil vs empty.
	if !back.Subtasks[0].StartedAt.Equal(*p.Subtasks[0].StartedAt) || back.Subtasks[2].StartedAt != nil ||
		back.Subtasks[1].Parent != "toast" || !reflect.DeepEqual(back.Subtasks[0].Delta, p.Subtasks[0].Delta) ||
		*back.Settings != *p.Settings || !back.UpdatedAt.Equal(p.UpdatedAt) {
		t.Errorf("round trip lost a field: %+v", back)
	}
	// Encoding is deterministic: the same plan, the same bytes.
	again, _ := planner.EncodeCheckpoint(back)
	if !bytes.Equal(again, b) {
		t.Error("encoding the decoded plan gives other bytes")
	}
}

func Test001_3R_UNIT_010_CheckpointEncodingIsCompact(t *testing.T) {
	for _, n := range []int{10, 100} {
		p := runPlanOf(n)
		plain, _ := json.Marshal(p)
		encoded, err := planner.EncodeCheckpoint(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d subtasks: checkpoint %d bytes, plain JSON %d bytes (%.1f×)", n, len(encoded), len(plain), float64(len(plain))/float64(len(encoded)))
		if len(encoded)*3 > len(plain) {
			t.Errorf("%d subtasks: checkpoint %d bytes, not a third of the plain JSON's %d", n, len(encoded), len(plain))
		}
	}
}

// runPlanOf is an n-subtask plan as a finished run leaves it: a chain in
// fives (each subtask depending on the one five before), short results.
func runPlanOf(n int) *planner.Plan {
	p := fullPlan()
	p.Subtasks = nil
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second)
		s := &planner.Subtask{ID: fmt.Sprintf("step-%03d", i), Description: fmt.Sprintf("Do step %d of the plan", i),
			Dependencies: []string{}, Action: &planner.ActionSpec{Name: "state.incr", Args: json.RawMessage(fmt.Sprintf(`{"key":"n%d"}`, i))},
			Status: planner.Completed, Result: json.RawMessage(fmt.Sprintf(`{"key":"n%d","value":1}`, i)),
			Delta:    map[string]any{fmt.Sprint("n", i): 1.0, "results": map[string]any{fmt.Sprintf("step-%03d", i): map[string]any{"key": fmt.Sprint("n", i), "value": 1.0}}},
			Attempts: 1, Depth: 1, StartedAt: &at, FinishedAt: &at}
		if i >= 5 {
			s.Dependencies = []string{fmt.Sprintf("step-%03d", i-5)}
		}
		p.Subtasks = append(p.Subtasks, s)
	}
	return p
}

func Test001_3R_UNIT_011_CorruptedCheckpointIsCheckpointError(t *testing.T) {
	good, err := planner.EncodeCheckpoint(fullPlan())
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		return b
	}
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:7],
		"truncated":      good[:len(good)-1],
		"extended":       append(bytes.Clone(good), 0),
		"magic":          flip(0),
		"version":        flip(4),
		"length":         flip(6),
		"checksum":       flip(10),
		"payload":        flip(len(good) / 2),
		"last byte":      flip(len(good) - 1),
		"not compressed": withHeader([]byte(`{"id":"p"}`)),
		"not JSON":       withHeader(zstdOf(t, []byte(`{ broken`))),
		"not a plan":     withHeader(zstdOf(t, []byte(`{"id": 5}`))),
		"no id":          withHeader(zstdOf(t, []byte(`{"goal": "g"}`))),
		"null subtask":   withHeader(zstdOf(t, []byte(`{"id": "p", "subtasks": [null]}`))),
		"huge claim":     append(append([]byte("EPLN\x01"), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0), good[13:]...),
	}
	for name, b := range cases {
		p, err := planner.DecodeCheckpoint(b)
		if !errors.Is(err, errs.ErrCheckpoint) || p != nil {
			t.Errorf("%s: (%v, %v), want a CheckpointError", name, p, err)
			continue
		}
		if strings.Contains(err.Error(), "planner.") || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: the message shows internals: %q", name, err)
		}
	}

	// A damaged plan in the store: reading it is a CheckpointError too.
	r := newRig(t)
	r.create("p", st("A", "noop", nil))
	err = r.e.Env().Store.Update(t.Context(), func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixPlan, "p"), flip(len(good)/2))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"plan.get", "plan.status", "plan.execute", "plan.resume", "plan.replan"} {
		r.fail(errs.Checkpoint, action, `{"plan_id": "p"}`)
	}
	r.fail(errs.Checkpoint, "plan.list", `{}`)
}

// ---- AC2: plan.decompose ----

// decomposeRig is a rig whose model answers answer.
func decomposeRig(t *testing.T, answers ...string) *rig {
	r := newRig(t)
	for _, a := range answers {
		r.model.Answers = append(r.model.Answers, llmtest.Text(a))
	}
	return r
}

func Test001_3R_UNIT_012_FlatStrategyProducesLinearList(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "flour", "description": "Buy flour"},
		{"id": "eggs", "description": "Buy eggs"},
		{"id": "bake", "description": "Bake the cake", "dependencies": ["flour", "eggs"],
		 "subtasks": [{"id": "oven", "description": "Heat the oven"}]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Bake a cake", "strategy": "flat", "id": "cake"}`))
	if p.Strategy != "flat" || p.Provider != "scripted" || len(p.Subtasks) != 4 {
		t.Fatalf("plan %s", planJSON(t, p))
	}
	for _, s := range p.Subtasks {
		if s.Depth != 1 || s.Parent != "" || s.Status != planner.Pending {
			t.Errorf("subtask %+v: a flat plan has one level", s)
		}
	}
	// A nested step the model gave anyway is flattened; its parent waits for it.
	if bake := subtaskOf(t, p, "bake"); !slices.Equal(bake.Dependencies, []string{"flour", "eggs", "oven"}) {
		t.Errorf("bake depends on %v", bake.Dependencies)
	}
	req := r.model.Requests()[0]
	if !req.JSON || len(req.Schema) == 0 || req.Temperature == nil || *req.Temperature != 0 ||
		!strings.Contains(req.Messages[0].Content, "Goal: Bake a cake") || !strings.Contains(req.Messages[0].Content, "flat list") {
		t.Errorf("request %+v", req)
	}
}

func Test001_3R_UNIT_013_HierarchicalRespectsMaxDepth(t *testing.T) {
	// Nested three levels deep; max_depth 2.
	r := decomposeRig(t, `{"subtasks": [
		{"id": "structure", "description": "Build the structure", "subtasks": [
			{"id": "walls", "description": "Raise the walls", "subtasks": [
				{"id": "frame", "description": "Frame the walls"},
				{"id": "drywall", "description": "Hang drywall", "dependencies": ["frame"]}]},
			{"id": "roof", "description": "Put on the roof", "dependencies": ["walls"]}]},
		{"id": "paint", "description": "Paint", "dependencies": ["structure"]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "strategy": "hierarchical", "max_depth": 2, "id": "house"}`))
	type shape struct {
		depth  int
		parent string
		deps   []string
	}
	want := map[string]shape{
		"structure": {1, "", []string{"walls", "roof"}},
		"walls":     {2, "structure", []string{"frame", "drywall"}},
		"frame":     {2, "structure", []string{}}, // level 3, flattened to 2
		"drywall":   {2, "structure", []string{"frame"}},
		"roof":      {2, "structure", []string{"walls"}},
		"paint":     {1, "", []string{"structure"}},
	}
	if len(p.Subtasks) != len(want) {
		t.Fatalf("subtasks: %s", ids(p))
	}
	for _, s := range p.Subtasks {
		w := want[s.ID]
		if s.Depth > 2 {
			t.Errorf("%s is %d levels deep; max_depth is 2", s.ID, s.Depth)
		}
		if s.Depth != w.depth || s.Parent != w.parent || !slices.Equal(s.Dependencies, w.deps) {
			t.Errorf("%s: depth %d parent %q deps %v, want %+v", s.ID, s.Depth, s.Parent, s.Dependencies, w)
		}
	}
	// Parents only group: they do nothing but wait for their children.
	for _, id := range []string{"structure", "walls"} {
		if a := subtaskOf(t, p, id).Action; a == nil || a.Name != "task.noop" {
			t.Errorf("%s runs %+v", id, a)
		}
	}
	order, _ := p.Validate()
	if !slices.Equal(order, []string{"frame", "drywall", "walls", "roof", "structure", "paint"}) {
		t.Errorf("order %v", order)
	}
	if !strings.Contains(r.model.Requests()[0].Messages[0].Content, "at most 2 levels deep") {
		t.Errorf("the prompt does not state max_depth: %q", r.model.Requests()[0].Messages[0].Content)
	}
	// max_depth 1 flattens everything to one level.
	r = decomposeRig(t, r.model.Answers[0].Text)
	p = decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "strategy": "hierarchical", "max_depth": 1}`))
	for _, s := range p.Subtasks {
		if s.Depth != 1 || s.Parent != "" {
			t.Errorf("max_depth 1: %+v", s)
		}
	}
}

func Test001_3R_UNIT_014_IterativeStrategyProducesSteps(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "draft", "description": "Write a draft"},
		{"id": "review", "description": "Review it"},
		{"id": "publish", "description": "Publish", "dependencies": ["draft"]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Write a post", "strategy": "iterative"}`))
	deps := map[string][]string{"draft": {}, "review": {"draft"}, "publish": {"draft", "review"}}
	for _, s := range p.Subtasks {
		if !slices.Equal(s.Dependencies, deps[s.ID]) {
			t.Errorf("%s depends on %v, want %v", s.ID, s.Dependencies, deps[s.ID])
		}
	}
	if order, _ := p.Validate(); !slices.Equal(order, []string{"draft", "review", "publish"}) {
		t.Errorf("order %v", order)
	}
	if !strings.Contains(r.model.Requests()[0].Messages[0].Content, "one after the other") {
		t.Errorf("prompt %q", r.model.Requests()[0].Messages[0].Content)
	}
}

func Test001_3R_UNIT_015_ModelJSONParsedIntoSubtasks(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "1", "description": "First", "dependencies": []},
		{"id": "2", "description": "  Second  ", "dependencies": ["1"], "action": {"name": "state.set", "args": {"key": "x", "value": 2}}},
		{"description": "Third, without an id", "dependencies": ["2"]}]}`,
		// The seed's mock answers a bare list: the same thing.
		`[{"id": "1", "description": "First", "dependencies": []}]`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Count"}`))
	want := []planner.Subtask{
		{ID: "1", Description: "First", Dependencies: []string{}, Status: planner.Pending, Depth: 1},
		{ID: "2", Description: "Second", Dependencies: []string{"1"}, Status: planner.Pending, Depth: 1,
			Action: &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key":"x","value":2}`)}},
		{ID: "step-3", Description: "Third, without an id", Dependencies: []string{"2"}, Status: planner.Pending, Depth: 1},
	}
	if len(p.Subtasks) != len(want) {
		t.Fatalf("subtasks %s", ids(p))
	}
	for i := range want {
		if !jsonEqual(*p.Subtasks[i], want[i]) {
			t.Errorf("subtask %d:\n got %s\nwant %s", i, planJSON(t, &planner.Plan{Subtasks: p.Subtasks[i : i+1]}), planJSON(t, &planner.Plan{Subtasks: []*planner.Subtask{&want[i]}}))
		}
	}
	p = decodePlan(t, r.do("plan.decompose", `{"goal": "Count"}`))
	if len(p.Subtasks) != 1 || p.Subtasks[0].ID != "1" || p.Subtasks[0].Description != "First" {
		t.Errorf("bare list: %s", ids(p))
	}
	// Fields the shape does not have are refused, with the field named.
	for answer, field := range map[string]string{
		`{"subtasks": [{"id": "1", "description": "x", "deps": []}]}`:  `unknown field "deps"`,
		`{"subtasks": [{"id": "1"}]}`:                                  "description is required",
		`{"subtasks": [{"id": 1, "description": "x"}]}`:                "subtasks.id: expected string",
		`{"subtasks": []}`:                                             "no subtasks",
		`{"steps": [{"description": "x"}]}`:                            `unknown field "steps"`,
		`{"subtasks": [{"description": "x", "dependencies": "none"}]}`: "expected array of string",
	} {
		r := decomposeRig(t, answer)
		e := r.fail(errs.Parse, "plan.decompose", `{"goal": "g"}`)
		if !strings.Contains(e.Message, field) || e.Details["raw"] != answer {
			t.Errorf("answer %s: %q (raw %v), want it to say %s", answer, e.Message, e.Details["raw"], field)
		}
	}
}

// internals are words that would show Go's implementation in a message.
var internals = []string{"planner.", "proposal", "proposed", "Go value", "Go struct", "json:", "*errs", "args", "reflect", "goroutine", "panic"}

func Test001_3R_UNIT_016_MalformedModelJSONIsParseError(t *testing.T) {
	r := decomposeRig(t, "{ broken json")
	e := r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if !strings.Contains(e.Message, "{ broken json") || e.Details["raw"] != "{ broken json" {
		t.Errorf("the error does not include the model's answer: %q %v", e.Message, e.Details)
	}
	for _, word := range internals {
		if strings.Contains(e.Message, word) {
			t.Errorf("the message shows internals (%q): %q", word, e.Message)
		}
	}
	if out := r.do("plan.list", `{}`); string(out) != `{"plans":[]}` {
		t.Errorf("stored anyway: %s", out)
	}
	// Through a real provider stack (llm.New's JSON check), the same kind.
	srv := openAIServer(t, func(int) (int, string) { return 200, chatCompletion("{ broken json") })
	r = newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 0)})
	e = r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if !strings.Contains(e.Message, "{ broken json") {
		t.Errorf("via openai: %q", e.Message)
	}
	for _, word := range internals {
		if strings.Contains(e.Message, word) {
			t.Errorf("via openai: the message shows internals (%q): %q", word, e.Message)
		}
	}
	// A long answer is cut for display, in the message and the details.
	long := "{ " + strings.Repeat("broken ", 200)
	r = decomposeRig(t, long)
	e = r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if raw, _ := e.Details["raw"].(string); !strings.HasPrefix(raw, "{ broken broken") || len(raw) > 400 || len(e.Message) > 700 {
		t.Errorf("long answer: %d-byte message, raw %q", len(e.Message), raw)
	}
}

func Test001_3R_UNIT_017_CyclicModelOutputRejected(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "a", "description": "A", "dependencies": ["c"]},
		{"id": "b", "description": "B", "dependencies": ["a"]},
		{"id": "c", "description": "C", "dependencies": ["b"]}]}`)
	e := r.fail(errs.CyclicDependency, "plan.decompose", `{"goal": "Go round", "id": "round"}`)
	if !strings.Contains(e.Message, "a → c → b → a") || !reflect.DeepEqual(e.Details["cycle"], []string{"a", "c", "b", "a"}) {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	r.fail(errs.NotFound, "plan.get", `{"plan_id": "round"}`)
	// A dependency on a subtask the answer does not have: rejected too.
	r = decomposeRig(t, `{"subtasks": [{"id": "a", "description": "A", "dependencies": ["ghost"]}]}`)
	r.fail(errs.Validation, "plan.decompose", `{"goal": "g"}`)
	// And a hierarchical answer whose steps wait for their own parent
	// (which waits for them) is not a cycle: that dependency is implied.
	r = decomposeRig(t, `{"subtasks": [{"id": "p", "description": "P", "subtasks": [{"id": "c", "description": "C", "dependencies": ["p"]}]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "g", "strategy": "hierarchical"}`))
	if c := subtaskOf(t, p, "c"); len(c.Dependencies) != 0 || c.Parent != "p" {
		t.Errorf("c: %+v", c)
	}
}

// ---- AC3: plan.execute ----

func Test001_3R_UNIT_018_ExecuteRespectsTopologicalOrder(t *testing.T) {
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
		started := rec.seq(planner.EventSubtaskStarted, s.ID)
		for _, d := range s.Dependencies {
			if finished := rec.seq(planner.EventSubtaskFinished, d); finished == 0 || finished > started {
				t.Errorf("%s started (event %d) before %s finished (event %d)", s.ID, started, d, finished)
			}
		}
	}
}

func Test001_3R_UNIT_019_ExecuteAccumulatesState(t *testing.T) {
	r := newRig(t)
	out := r.do("plan.create", map[string]any{"id": "p", "goal": "Count", "state": map[string]any{"base": "kept"}, "subtasks": []any{
		st("set", "state.set", map[string]any{"key": "n", "value": 1}),
		st("incr", "state.incr", map[string]any{"key": "n"}, "set"),
		st("add", "state.incr", map[string]any{"key": "n", "by": 10}, "incr"),
		st("copy", "state.set", map[string]any{"key": "copy", "value": "${state.n}"}, "add"),
		st("read", "state.get", nil, "copy"),
	}})
	_ = out
	res := r.execute("p", map[string]any{"max_concurrent": 4})
	if res.State["n"] != 12.0 || res.State["copy"] != 12.0 || res.State["base"] != "kept" {
		t.Errorf("state %v", res.State)
	}
	// Each step saw what the ones before it wrote.
	var read struct{ State map[string]any }
	json.Unmarshal(subtaskOf(t, res.Plan, "read").Result, &read)
	if read.State["n"] != 12.0 || read.State["copy"] != 12.0 || read.State["base"] != "kept" {
		t.Errorf("read saw %v", read.State)
	}
	results, _ := res.State["results"].(map[string]any)
	if len(results) != 5 || !jsonEqual(results["incr"], map[string]any{"key": "n", "value": 2}) {
		t.Errorf("results %v", results)
	}
}

func Test001_3R_UNIT_020_ProgressUpdatesAfterEachSubtask(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	ch := r.e.Subscribe(ctx, 4096)
	r.create("p", st("a", "noop", nil), st("b", "noop", nil, "a"), st("c", "noop", nil, "b"), st("d", "noop", nil))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	var completed []int
	var finishedBefore []int // subtask.finished events seen before each progress event
	finished := 0
	for ev := range ch {
		m, _ := ev.Data.(map[string]any)
		switch ev.Name {
		case planner.EventSubtaskFinished:
			finished++
		case planner.EventProgress:
			completed = append(completed, m["completed"].(int))
			finishedBefore = append(finishedBefore, finished)
			if m["total"] != 4 {
				t.Errorf("progress %v", m)
			}
		}
		if ev.Name == planner.EventPlanFinished {
			if counts := m["counts"].(planner.Counts); counts.Completed != 4 || counts.Total != 4 {
				t.Errorf("plan.finished %v", m)
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

// ---- AC4: failure handling ----

func Test001_3R_UNIT_021_AbortStopsOnFirstFailure(t *testing.T) {
	r := newRig(t)
	r.create("p",
		st("A", "test.record", map[string]any{"name": "A"}),
		st("B", "fail", map[string]any{"message": "the oven is broken"}, "A"),
		st("C", "test.record", map[string]any{"name": "C"}, "B"),
		st("D", "test.record", map[string]any{"name": "D"}))
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "abort"})
	if res.Plan.Status != "aborted" {
		t.Errorf("status %s", res.Plan.Status)
	}
	status := map[string]string{"A": planner.Completed, "B": planner.Failed, "C": planner.Pending, "D": planner.Pending}
	for id, want := range status {
		if s := subtaskOf(t, res.Plan, id); s.Status != want {
			t.Errorf("%s is %s, want %s", id, s.Status, want)
		}
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Error != "task.fail: the oven is broken (attempt 1)" || b.Attempts != 1 {
		t.Errorf("B: %+v", b)
	}
	if r.probes.Calls("C")+r.probes.Calls("D") != 0 {
		t.Errorf("ran after the failure: %v", r.probes.Order())
	}
	if res.Progress != (planner.Counts{Completed: 1, Failed: 1, Pending: 2, Total: 4}) {
		t.Errorf("progress %+v", res.Progress)
	}
}

func Test001_3R_UNIT_022_SkipMarksSkippedAndContinues(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "fail", nil), st("B", "test.record", map[string]any{"name": "B"}), st("C", "test.record", map[string]any{"name": "C"}, "B"))
	res := r.execute("p", map[string]any{"max_concurrent": 1, "on_subtask_failure": "skip"})
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Skipped || !strings.Contains(a.Error, "failing as asked") {
		t.Errorf("A: %+v", a)
	}
	if res.Plan.Status != "partial" || res.Progress != (planner.Counts{Completed: 2, Skipped: 1, Total: 3}) {
		t.Errorf("%s %+v", res.Plan.Status, res.Progress)
	}
	if !slices.Equal(r.probes.Order(), []string{"B", "C"}) {
		t.Errorf("ran %v", r.probes.Order())
	}
}

func Test001_3R_UNIT_023_SkipPropagatesToDependents(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	r.create("p", st("A", "fail", nil), st("B", "test.record", map[string]any{"name": "B"}, "A"), st("C", "test.record", map[string]any{"name": "C"}, "B"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "skip"})
	rec.runs(t, 1)
	for _, id := range []string{"A", "B", "C"} {
		if s := subtaskOf(t, res.Plan, id); s.Status != planner.Skipped {
			t.Errorf("%s is %s", id, s.Status)
		}
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Error != "a dependency (A) was skipped" || b.Attempts != 0 {
		t.Errorf("B: %+v", b)
	}
	if c := subtaskOf(t, res.Plan, "C"); c.Error != "a dependency (B) was skipped" {
		t.Errorf("C: %+v", c)
	}
	// "0 completed, 3 skipped".
	if res.Progress.Completed != 0 || res.Progress.Skipped != 3 || res.Progress.Total != 3 {
		t.Errorf("progress %+v", res.Progress)
	}
	if r.probes.Calls("B")+r.probes.Calls("C") != 0 {
		t.Errorf("skipped subtasks ran: %v", r.probes.Order())
	}
	if rec.seq(planner.EventSubtaskStarted, "B") != 0 || rec.seq(planner.EventSubtaskFinished, "C") == 0 {
		t.Errorf("events %+v", rec.plan())
	}
	st := decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`))
	if st.Completed != 0 || st.Skipped != 3 || st.Status != "partial" {
		t.Errorf("status %+v", st)
	}
}

func Test001_3R_UNIT_024_RetryWithExponentialBackoff(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 99}), st("B", "noop", nil, "A"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 3, "fallback": "skip"})
	ms := time.Millisecond
	if times := r.probes.times["A"]; !slices.Equal(times, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms}) {
		t.Errorf("A attempted at %v, want t=0, 100ms, 300ms, 700ms", times)
	}
	if waits := r.sleep.Waits(); !slices.Equal(waits, []time.Duration{100 * ms, 200 * ms, 400 * ms}) {
		t.Errorf("backoffs %v", waits)
	}
	// Still failing: the fallback (skip) takes over.
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Skipped || a.Attempts != 4 || !strings.Contains(a.Error, "transient failure 4") {
		t.Errorf("A: %+v", a)
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Status != planner.Skipped {
		t.Errorf("B: %+v", b)
	}

	// A transient failure that clears: completed on the third attempt, at ≈300ms.
	r = newRig(t)
	r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 2}))
	res = r.execute("p", map[string]any{"on_subtask_failure": "retry"})
	if a := subtaskOf(t, res.Plan, "A"); a.Status != planner.Completed || a.Attempts != 3 || res.Plan.Settings.MaxRetries != 3 {
		t.Errorf("A: %+v (settings %+v)", a, res.Plan.Settings)
	}
	if times := r.probes.times["A"]; !slices.Equal(times, []time.Duration{0, 100 * ms, 300 * ms}) {
		t.Errorf("attempts at %v", times)
	}
}

func Test001_3R_UNIT_025_RetryExhaustionTriggersFallback(t *testing.T) {
	for _, tc := range []struct {
		fallback, status, aStatus string
	}{
		{"", "aborted", planner.Failed},
		{"abort", "aborted", planner.Failed},
		{"skip", "partial", planner.Skipped},
		{"replan", "completed", ""},
	} {
		t.Run("fallback="+tc.fallback, func(t *testing.T) {
			r := decomposeRig(t, `{"subtasks": [{"id": "A2", "description": "Another way", "action": {"name": "noop"}}]}`)
			r.create("p", st("A", "test.flaky", map[string]any{"name": "A", "fail_times": 99}), st("B", "test.record", map[string]any{"name": "B"}))
			res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 2, "fallback": tc.fallback, "max_concurrent": 1})
			if n := r.probes.Calls("A"); n != 3 {
				t.Errorf("A tried %d times; max_retries 2 is 3 attempts", n)
			}
			if res.Plan.Status != tc.status {
				t.Errorf("plan %s, want %s (%s)", res.Plan.Status, tc.status, ids(res.Plan))
			}
			if tc.fallback == "replan" {
				if r.model.Calls() != 1 || res.Plan.ReplanCount != 1 || subtaskOf(t, res.Plan, "A2").Status != planner.Completed {
					t.Errorf("replan: %d calls, %s", r.model.Calls(), ids(res.Plan))
				}
				return
			}
			if a := subtaskOf(t, res.Plan, "A"); a.Status != tc.aStatus || a.Attempts != 3 {
				t.Errorf("A: %+v", a)
			}
			if r.model.Calls() != 0 {
				t.Errorf("the model was asked")
			}
		})
	}
}

// ---- AC5: plan.replan ----

// replanRig has plan p with A Completed, B Failed, C Pending (an aborted run).
func replanRig(t *testing.T, answers ...string) (*rig, *planner.Plan) {
	r := decomposeRig(t, answers...)
	r.create("p",
		st("A", "state.set", map[string]any{"key": "flour", "value": "500g"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"),
		st("C", "noop", nil, "B"))
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	if got := []string{res.Plan.Subtasks[0].Status, res.Plan.Subtasks[1].Status, res.Plan.Subtasks[2].Status}; !slices.Equal(got, []string{planner.Completed, planner.Failed, planner.Pending}) {
		t.Fatalf("setup: %s", ids(res.Plan))
	}
	return r, res.Plan
}

func Test001_3R_UNIT_026_ReplanPreservesCompletedSubtasks(t *testing.T) {
	r, before := replanRig(t, `{"subtasks": [
		{"id": "B2", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "noop"}},
		{"id": "C2", "description": "Bake", "dependencies": ["B2"], "action": {"name": "noop"}}]}`)
	p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, B2:Pending, C2:Pending" {
		t.Fatalf("after replan: %s", got)
	}
	// A is exactly as it was: status, result, delta, times, attempts.
	if a, was := subtaskOf(t, p, "A"), subtaskOf(t, before, "A"); !jsonEqual(a, was) {
		t.Errorf("A changed:\n%+v\n%+v", a, was)
	}
	if p.ReplanCount != 1 || p.Status != "aborted" {
		t.Errorf("plan %+v", p)
	}
	// Stored so; and running it now runs only the new subtasks, on A's result.
	res := r.execute("p", nil)
	if res.Plan.Status != "completed" || subtaskOf(t, res.Plan, "A").Attempts != 1 || res.State["flour"] != "500g" {
		t.Errorf("after replan, run: %s %s %v", res.Plan.Status, ids(res.Plan), res.State)
	}
}

func Test001_3R_UNIT_027_ReplanRemovesFailedAndPendingSubtasks(t *testing.T) {
	// The model reuses the ids B and C: they are new subtasks, with nothing
	// of the old ones (clean slate), and the old ones are gone.
	r, _ := replanRig(t, `{"subtasks": [
		{"id": "B", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "noop"}},
		{"id": "C", "description": "Bake", "dependencies": ["B"], "action": {"name": "noop"}}]}`)
	p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, B:Pending, C:Pending" {
		t.Fatalf("after replan: %s", got)
	}
	b := subtaskOf(t, p, "B")
	if b.Description != "Buy flour elsewhere" || b.Error != "" || b.Attempts != 0 || b.StartedAt != nil || b.FinishedAt != nil ||
		b.Action == nil || b.Action.Name != "noop" {
		t.Errorf("B kept something of the failed one: %+v", b)
	}
	// The model was told what failed and what was done, to plan the rest.
	prompt := r.model.Requests()[0].Messages[0].Content
	for _, want := range []string{"REMAINING work only", "- A: A → {\"key\":\"flour\",\"value\":\"500g\"}", "- B: B (failed: task.fail: the shop is closed (attempt 1))", "- C: C\n"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the replan prompt lacks %q:\n%s", want, prompt)
		}
	}
	// If the model reuses a completed id, the new subtask is renamed.
	r, _ = replanRig(t, `{"subtasks": [{"id": "A", "description": "Again", "action": {"name": "noop"}}]}`)
	p = decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`))
	if got := ids(p); got != "A:Completed, A-2:Pending" {
		t.Errorf("after replan: %s", got)
	}
}

func Test001_3R_UNIT_028_MaxReplansExceeded(t *testing.T) {
	answer := `{"subtasks": [{"id": "B", "description": "Try again", "dependencies": ["A"], "action": {"name": "fail"}}]}`
	r, _ := replanRig(t, answer, answer, answer, answer)
	for i := 1; i <= 3; i++ {
		if p := decodePlan(t, r.do("plan.replan", `{"plan_id": "p"}`)); p.ReplanCount != i || p.MaxReplans != 3 {
			t.Fatalf("replan %d: count %d of %d", i, p.ReplanCount, p.MaxReplans)
		}
	}
	before := r.do("plan.get", `{"plan_id": "p"}`)
	e := r.fail(errs.MaxReplansExceeded, "plan.replan", `{"plan_id": "p"}`)
	if !strings.Contains(e.Message, "4 > 3") || !strings.Contains(e.Message, "replanned 3 times") {
		t.Errorf("message %q does not give the count (4 > 3)", e.Message)
	}
	if e.Details["replan_count"] != 3 || e.Details["max_replans"] != 3 || e.Details["attempted"] != 4 {
		t.Errorf("details %v", e.Details)
	}
	if after := r.do("plan.get", `{"plan_id": "p"}`); !bytes.Equal(after, before) {
		t.Errorf("the plan changed:\n%s\n%s", before, after)
	}
	if r.model.Calls() != 3 {
		t.Errorf("the model was asked %d times; the fourth replan must not ask", r.model.Calls())
	}
	// max_replans is the plan's own: 0 forbids any replan.
	r = newRig(t)
	r.do("plan.create", `{"id": "z", "goal": "g", "max_replans": 0, "subtasks": [{"id": "a"}]}`)
	if e := r.fail(errs.MaxReplansExceeded, "plan.replan", `{"plan_id": "z"}`); !strings.Contains(e.Message, "1 > 0") {
		t.Errorf("%q", e.Message)
	}
	r.fail(errs.Validation, "plan.create", `{"id": "y", "goal": "g", "max_replans": -1, "subtasks": [{"id": "a"}]}`)
}

// ---- AC6: plan.status ----

type statusResult struct {
	planner.Counts
	PlanID   string `json:"plan_id"`
	Status   string `json:"status"`
	Subtasks []struct {
		ID          string          `json:"id"`
		Status      string          `json:"status"`
		Attempts    int             `json:"attempts"`
		Description *string         `json:"description"`
		Result      json.RawMessage `json:"result"`
		Error       *string         `json:"error"`
	} `json:"subtasks"`
}

func decodeStatus(t testing.TB, raw json.RawMessage) statusResult {
	t.Helper()
	var s statusResult
	if err := json.Unmarshal(raw, &s); err != nil || s.Subtasks == nil {
		t.Fatalf("plan.status: %s (%v)", raw, err)
	}
	return s
}

// liveStatusRig runs plan p — A, B Completed; C InProgress (a gate); D
// Pending (waits for C); E Failed — and holds it there.
func liveStatusRig(t *testing.T) (*rig, <-chan asyncResult) {
	r := newRig(t)
	rec := r.record()
	r.do("plan.create", `{"id": "p", "goal": "Five", "subtasks": [
		{"id": "A", "description": "first", "action": {"name": "test.record", "args": {"name": "A"}}},
		{"id": "B", "description": "second", "action": {"name": "test.record", "args": {"name": "B"}}},
		{"id": "C", "description": "third", "action": {"name": "test.gate", "args": {"name": "C"}}},
		{"id": "D", "description": "fourth", "dependencies": ["C"], "action": {"name": "noop"}},
		{"id": "E", "description": "fifth", "action": {"name": "fail", "args": {"message": "no"}}}]}`)
	done := r.executeAsync("p", map[string]any{"max_concurrent": 4})
	for _, id := range []string{"A", "B", "E"} {
		rec.waitEvent(t, planner.EventSubtaskFinished, id)
	}
	waitFor(t, r.probes.Started("C"), "C to start")
	t.Cleanup(func() {
		r.probes.Release("C")
		<-done
	})
	return r, done
}

func Test001_3R_UNIT_029_StatusCountsEachStatus(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`))
	want := planner.Counts{Completed: 2, InProgress: 1, Pending: 1, Failed: 1, Total: 5}
	if s.Counts != want || s.Status != "running" || len(s.Subtasks) != 5 {
		t.Errorf("status %+v, want counts %+v", s, want)
	}
	// The same counts from the Go API, on a plan built by hand.
	p := &planner.Plan{}
	for id, status := range map[string]string{"A": planner.Completed, "B": planner.Completed, "C": planner.InProgress, "D": planner.Pending, "E": planner.Failed} {
		p.Subtasks = append(p.Subtasks, &planner.Subtask{ID: id, Status: status})
	}
	if c := p.Count(); c != want {
		t.Errorf("Count %+v", c)
	}
}

func Test001_3R_UNIT_030_StatusIncludeCompletedFalseFilters(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_completed": false}`))
	var listed []string
	for _, st := range s.Subtasks {
		listed = append(listed, st.ID+":"+st.Status)
	}
	if !slices.Equal(listed, []string{"C:InProgress", "D:Pending", "E:Failed"}) {
		t.Errorf("listed %v", listed)
	}
	if s.Completed != 2 || s.Total != 5 {
		t.Errorf("the counts must still count completed ones: %+v", s.Counts)
	}
	if all := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_completed": true}`)); len(all.Subtasks) != 5 {
		t.Errorf("include_completed true lists %d", len(all.Subtasks))
	}
}

func Test001_3R_UNIT_031_StatusIncludeDetailsReturnsDescriptions(t *testing.T) {
	r, _ := liveStatusRig(t)
	s := decodeStatus(t, r.do("plan.status", `{"plan_id": "p", "include_details": true}`))
	want := map[string]string{"A": "first", "B": "second", "C": "third", "D": "fourth", "E": "fifth"}
	for _, st := range s.Subtasks {
		if st.Description == nil || *st.Description != want[st.ID] {
			t.Errorf("%s: description %v", st.ID, st.Description)
		}
		switch st.ID {
		case "A":
			if !jsonEqual(st.Result, map[string]any{"name": "A", "call": 1}) {
				t.Errorf("A's result %s", st.Result)
			}
		case "E":
			if st.Error == nil || *st.Error != "task.fail: no (attempt 1)" || st.Attempts != 1 {
				t.Errorf("E: %+v", st)
			}
		}
	}
	for _, st := range decodeStatus(t, r.do("plan.status", `{"plan_id": "p"}`)).Subtasks {
		if st.Description != nil || st.Result != nil || st.Error != nil {
			t.Errorf("without include_details: %+v", st)
		}
	}
}

func Test001_3R_UNIT_032_StatusOnEmptyPlanReturnsZeroCounts(t *testing.T) {
	if c := (&planner.Plan{}).Count(); c != (planner.Counts{}) {
		t.Errorf("Count %+v", c)
	}
	// plan.create refuses an empty plan (UNIT-002), but one can be stored
	// otherwise (an older engram, a hand-made checkpoint): its status is
	// all zeros, and an empty list.
	r := newRig(t)
	b, err := planner.EncodeCheckpoint(&planner.Plan{ID: "empty", Goal: "Nothing", Status: "pending", CreatedAt: t0, UpdatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	err = r.e.Env().Store.Update(t.Context(), func(tx *storage.Tx) error { return tx.Set(storage.Key(storage.PrefixPlan, "empty"), b) })
	if err != nil {
		t.Fatal(err)
	}
	out := r.do("plan.status", `{"plan_id": "empty", "include_details": true}`)
	if string(out) != `{"plan_id":"empty","status":"pending","completed":0,"in_progress":0,"pending":0,"failed":0,"skipped":0,"total":0,"subtasks":[]}` {
		t.Errorf("plan.status: %s", out)
	}
	// And running it fails validation rather than "completing" nothing.
	r.fail(errs.Validation, "plan.execute", `{"plan_id": "empty"}`)
}

// openAIProvider is llm.New's openai provider for srv (retries: transient ones).
func openAIProvider(t testing.TB, srv *modelServer, retries int) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Config{Provider: "openai", Model: "m", URL: srv.URL + "/v1", HTTPClient: srv.Client(),
		Timeout: 5 * time.Second, Retries: retries, Sleep: srv.sleep.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
