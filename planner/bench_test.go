//go:build !noplanning

package planner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/engram-console/engram/planner"
)

// wideDAG is n task.noop subtasks in layers of 100, each depending on two
// of the layer before.
func wideDAG(n int) []map[string]any {
	const width = 100
	var subtasks []map[string]any
	for i := range n {
		var deps []string
		if i >= width {
			layer := i/width - 1
			deps = []string{fmt.Sprintf("s%04d", layer*width+i%width), fmt.Sprintf("s%04d", layer*width+(i*7+3)%width)}
		}
		subtasks = append(subtasks, st(fmt.Sprintf("s%04d", i), "task.noop", nil, deps...))
	}
	return subtasks
}

// BenchmarkExecute1000 measures the executor's overhead: 1,000 no-op
// subtasks in a wide DAG, 8 at a time, through the Go API (plan creation
// not timed). checkpoint=true checkpoints every subtask in the (in-memory)
// store, as plan.execute does by default.
func BenchmarkExecute1000(b *testing.B) {
	for _, checkpoint := range []bool{false, true} {
		b.Run(fmt.Sprintf("checkpoint=%v", checkpoint), func(b *testing.B) {
			r := newRig(b)
			subtasks := wideDAG(1000)
			call := callOf(r)
			n := 0
			for b.Loop() {
				b.StopTimer()
				n++
				id := fmt.Sprint("bench-", n)
				r.do("plan.create", map[string]any{"id": id, "goal": "Benchmark", "subtasks": subtasks})
				b.StartTimer()
				res, err := r.pl.Execute(context.Background(), call, id, planner.ExecuteRequest{MaxConcurrent: 8, Checkpoint: checkpoint})
				if err != nil || res.Progress.Completed != 1000 {
					b.Fatalf("%v %+v", err, res.Progress)
				}
			}
		})
	}
}

// BenchmarkExecute1000Action is the same through engine.Do (plan.execute),
// which adds encoding the 1,000-subtask result.
func BenchmarkExecute1000Action(b *testing.B) {
	r := newRig(b)
	subtasks := wideDAG(1000)
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		id := fmt.Sprint("bench-", n)
		r.do("plan.create", map[string]any{"id": id, "goal": "Benchmark", "subtasks": subtasks})
		b.StartTimer()
		r.do("plan.execute", map[string]any{"plan_id": id, "max_concurrent": 8})
	}
}

// plan10k is 10,000 subtasks, each depending on up to three earlier ones,
// listed in a shuffled order.
func plan10k() *planner.Plan {
	rng := rand.New(rand.NewPCG(1, 2))
	p := &planner.Plan{}
	for i := range 10_000 {
		s := &planner.Subtask{ID: fmt.Sprintf("subtask-%05d", i)}
		for range rng.IntN(4) {
			if i > 0 {
				s.Dependencies = append(s.Dependencies, fmt.Sprintf("subtask-%05d", rng.IntN(i)))
			}
		}
		p.Subtasks = append(p.Subtasks, s)
	}
	rng.Shuffle(len(p.Subtasks), func(i, j int) { p.Subtasks[i], p.Subtasks[j] = p.Subtasks[j], p.Subtasks[i] })
	return p
}

// BenchmarkValidate10k validates and orders 10,000 subtasks.
func BenchmarkValidate10k(b *testing.B) {
	p := plan10k()
	for b.Loop() {
		order, err := p.Validate()
		if err != nil || len(order) != 10_000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointEncode100 encodes a finished 100-subtask plan.
func BenchmarkCheckpointEncode100(b *testing.B) {
	p := runPlanOf(100)
	plain, _ := json.Marshal(p)
	enc, _ := planner.EncodeCheckpoint(p)
	b.ReportMetric(float64(len(enc)), "bytes")
	b.ReportMetric(float64(len(plain)), "json-bytes")
	for b.Loop() {
		if _, err := planner.EncodeCheckpoint(p); err != nil {
			b.Fatal(err)
		}
	}
}
