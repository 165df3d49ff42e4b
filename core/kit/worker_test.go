package kit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestWorkerRunsJobsInOrderOnce: jobs run one at a time in the order
// queued, a job queued again while it waits runs once, failures are
// reported, and Settle returns once all have run.
func TestWorkerRunsJobsInOrderOnce(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var ran, failed []string
	w := NewWorker(func(ctx context.Context, job string) error {
		if job == "first" {
			<-gate // hold the worker while the rest is queued
		}
		mu.Lock()
		ran = append(ran, job)
		mu.Unlock()
		if job == "bad" {
			return errors.New("no")
		}
		return nil
	}, func(job string, err error) {
		mu.Lock()
		failed = append(failed, job+": "+err.Error())
		mu.Unlock()
	})
	w.Enqueue("first")
	w.Enqueue("a", "bad", "a", "b") // "a" twice while waiting: once
	close(gate)
	w.Settle(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []string{"first", "a", "bad", "b"}) {
		t.Errorf("ran %v", ran)
	}
	if !slices.Equal(failed, []string{"bad: no"}) {
		t.Errorf("failed %v", failed)
	}
}

// TestWorkerStopDropsTheQueue: Stop returns only once the running job has
// finished, and the worker takes no new jobs after it; Settle on a stopped
// worker returns. (Whether a job waiting at the moment of Stop still ran
// depends on timing; subsystems keep their jobs in the store for that.)
func TestWorkerStopDropsTheQueue(t *testing.T) {
	started, gate := make(chan struct{}), make(chan struct{})
	var ran []string
	w := NewWorker(func(ctx context.Context, job string) error {
		if job == "running" {
			close(started)
			<-gate
		}
		ran = append(ran, job) // only the worker goroutine writes; read after Stop
		return nil
	}, nil)
	w.Enqueue("running", "waiting")
	<-started
	stopped := make(chan struct{})
	go func() { w.Stop(); close(stopped) }()
	close(gate)
	<-stopped
	w.Enqueue("late")
	w.Settle(context.Background())
	if len(ran) == 0 || ran[0] != "running" || slices.Contains(ran, "late") {
		t.Errorf("ran %v; want the running job finished before Stop returned, and nothing queued after", ran)
	}
}

// TestSettleHonoursItsContext: a cancelled context ends the wait.
func TestSettleHonoursItsContext(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	w := NewWorker(func(ctx context.Context, job string) error { <-gate; return nil }, nil)
	w.Enqueue("slow")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Settle(ctx) // returns although the job still runs
}
