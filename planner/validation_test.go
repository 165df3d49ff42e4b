//go:build !noplanning

package planner_test

// Plans as data: construction, validation (missing dependencies, cycles reported
// with their path) and the execution order. Seed 002, scenarios
// 001.3R-UNIT-001..008.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/planner"
)

// Seed scenario 001.3R-UNIT-001 (PlanConstruction).
func TestCreateKeepsThePlanAsWritten(t *testing.T) {
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

// Seed scenario 001.3R-UNIT-002 (PlanRejectsEmptySubtaskList).
func TestPlanNeedsAtLeastOneSubtask(t *testing.T) {
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

// Seed scenario 001.3R-UNIT-003 (DependenciesReferenceExistingSubtasks).
func TestDependencyOnAMissingSubtaskIsRejected(t *testing.T) {
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

// Seed scenario 001.3R-UNIT-004 (DirectCycleDetected).
func TestDirectCycleIsReportedWithItsPath(t *testing.T) {
	e := cycleError(t, []string{"A", "B"}, []string{"B", "A"})
	if !strings.Contains(e.Message, "A → B → A") {
		t.Errorf("message %q does not include the cycle path A → B → A", e.Message)
	}
	if !reflect.DeepEqual(e.Details["cycle"], []string{"A", "B", "A"}) {
		t.Errorf("details %v", e.Details)
	}
}

// Seed scenario 001.3R-UNIT-005 (IndirectCycleDetected).
func TestIndirectCycleIsReportedWithItsPath(t *testing.T) {
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

// Seed scenario 001.3R-UNIT-006 (SelfReferenceDetected).
func TestSelfDependencyIsACycle(t *testing.T) {
	e := cycleError(t, []string{"X"}, []string{"A", "X", "A"})
	if !strings.Contains(e.Message, "A → A") || !reflect.DeepEqual(e.Details["cycle"], []string{"A", "A"}) {
		t.Errorf("%q %v", e.Message, e.Details)
	}
}

// Seed scenario 001.3R-UNIT-007 (TopologicalSortOrder).
func TestOrderPutsDependenciesFirst(t *testing.T) {
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

// Seed scenario 001.3R-UNIT-008 (TopologicalSortHandlesMultipleValidOrderings).
func TestOrderAmongReadySubtasksFollowsThePlan(t *testing.T) {
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
