//go:build !noplanning

// Package planner turns goals into plans and runs them (seed 002): a plan is
// a DAG of subtasks, validated (cycles reported with their path) and ordered
// deterministically; decomposed by a model or written by hand; executed with
// bounded parallelism, each subtask on its own copy of the accumulated state;
// failures aborted, skipped, retried with backoff or replanned; checkpointed
// after every subtask so that a crashed run resumes where it stopped.
//
// Built with -tags noplanning the package keeps only its data types (types.go,
// args.go, events.go), without all that and without its graph library: the
// plan.* actions then say how to get them back.
package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
	"github.com/engram-console/engram/core/errs"
)

// Validate checks the plan is a DAG of uniquely named subtasks whose
// dependencies exist, and returns its execution order: a topological order
// in which, among subtasks ready together, plan position decides.
func (p *Plan) Validate() ([]string, error) {
	if len(p.Subtasks) == 0 {
		return nil, errs.New(errs.Validation, "subtasks: a plan needs at least one subtask").With("field", "subtasks")
	}
	position := make(map[string]int, len(p.Subtasks))
	for i, s := range p.Subtasks {
		switch {
		case strings.TrimSpace(s.ID) == "":
			return nil, errs.New(errs.Validation, "subtasks[%d].id: every subtask needs an id", i).With("field", fmt.Sprintf("subtasks[%d].id", i))
		case strings.ContainsAny(s.ID, "/\n") || len(s.ID) > 128:
			return nil, errs.New(errs.Validation, "subtasks[%d].id: at most 128 characters, without '/' or line breaks", i).With("field", fmt.Sprintf("subtasks[%d].id", i))
		}
		if j, dup := position[s.ID]; dup {
			return nil, errs.New(errs.Validation, "subtasks[%d].id: %q is also the id of subtasks[%d]; ids must be unique", i, s.ID, j).
				With("field", fmt.Sprintf("subtasks[%d].id", i))
		}
		position[s.ID] = i
	}
	// The graph: an edge from each subtask to each of its dependencies;
	// deps holds the same by position, without repeats.
	g := graph.New(graph.StringHash, graph.Directed())
	for _, s := range p.Subtasks {
		if err := g.AddVertex(s.ID); err != nil {
			return nil, err
		}
	}
	deps := make([][]int, len(p.Subtasks))
	for i, s := range p.Subtasks {
		for _, d := range s.Dependencies {
			j, ok := position[d]
			if !ok {
				return nil, errs.New(errs.Validation, "subtasks[%d] (%s) depends on %q, which is not a subtask of the plan", i, s.ID, d).
					With("field", fmt.Sprintf("subtasks[%d].dependencies", i))
			}
			err := g.AddEdge(s.ID, d)
			switch {
			case err == graph.ErrEdgeAlreadyExists:
				continue
			case err != nil:
				return nil, err
			}
			deps[i] = append(deps[i], j)
		}
	}
	// Every subtask in order, unless there is a cycle: then the graph's
	// strongly connected components say where it is.
	order := stableOrder(p.Subtasks, deps)
	if len(order) == len(p.Subtasks) {
		return order, nil
	}
	cycle, err := findCycle(g, position)
	if err != nil {
		return nil, err
	}
	if cycle == nil {
		return nil, fmt.Errorf("planner: %d of %d subtasks could not be ordered, but the graph has no cycle", len(p.Subtasks)-len(order), len(p.Subtasks)) // cannot happen
	}
	path := strings.Join(cycle, " → ")
	return nil, errs.New(errs.CyclicDependency, "the dependencies form a cycle: %s (each depends on the next)", path).
		With("cycle", cycle)
}

// findCycle reports one cycle as a path that returns to its start ("A",
// "B", "A"), or nil. It looks in the strongly connected components, and
// picks deterministically: the component holding the earliest subtask,
// walked from it.
func findCycle(g graph.Graph[string, string], position map[string]int) ([]string, error) {
	components, err := graph.StronglyConnectedComponents(g)
	if err != nil {
		return nil, err
	}
	adjacency, err := g.AdjacencyMap()
	if err != nil {
		return nil, err
	}
	var best []string
	first := func(c []string) string {
		return slices.MinFunc(c, func(a, b string) int { return position[a] - position[b] })
	}
	for _, c := range components {
		cyclic := len(c) > 1
		if len(c) == 1 {
			_, cyclic = adjacency[c[0]][c[0]] // depends on itself
		}
		if cyclic && (best == nil || position[first(c)] < position[first(best)]) {
			best = c
		}
	}
	if best == nil {
		return nil, nil
	}
	start := first(best)
	if _, self := adjacency[start][start]; self {
		return []string{start, start}, nil
	}
	in := make(map[string]bool, len(best))
	for _, v := range best {
		in[v] = true
	}
	// The shortest way back to start within the component, by breadth-first
	// search visiting dependencies in plan order, so that the same plan
	// always reports the same cycle (the graph library's ShortestPath breaks
	// ties between equally short paths by map order).
	sorted := func(v string) []string {
		var next []string
		for d := range adjacency[v] {
			if in[d] {
				next = append(next, d)
			}
		}
		slices.SortFunc(next, func(a, b string) int { return position[a] - position[b] })
		return next
	}
	previous := map[string]string{}
	queue := sorted(start)
	for _, v := range queue {
		previous[v] = start
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if v == start {
			break
		}
		for _, d := range sorted(v) {
			if _, seen := previous[d]; !seen {
				previous[d] = v
				queue = append(queue, d)
			}
		}
	}
	if _, ok := previous[start]; !ok {
		return nil, fmt.Errorf("planner: no way back to %s in its own component", start) // cannot happen
	}
	path := []string{start}
	for v := previous[start]; v != start; v = previous[v] {
		path = append(path, v)
	}
	path = append(path, start)
	slices.Reverse(path[1 : len(path)-1])
	return path, nil
}

// stableOrder is Kahn's algorithm, dependencies first, taking among the
// ready subtasks the one earliest in the plan (O((V+E) log V): the graph
// library's stable sort is quadratic). deps[i] are the positions subtask i
// depends on. Subtasks on or behind a cycle are left out.
func stableOrder(subtasks []*Subtask, deps [][]int) []string {
	waiting := make([]int, len(subtasks))
	dependents := make([][]int, len(subtasks))
	var ready intHeap
	for i := range subtasks {
		waiting[i] = len(deps[i])
		for _, d := range deps[i] {
			dependents[d] = append(dependents[d], i)
		}
		if waiting[i] == 0 {
			ready.push(i)
		}
	}
	order := make([]string, 0, len(subtasks))
	for ready.len() > 0 {
		i := ready.pop()
		order = append(order, subtasks[i].ID)
		for _, d := range dependents[i] {
			if waiting[d]--; waiting[d] == 0 {
				ready.push(d)
			}
		}
	}
	return order
}
