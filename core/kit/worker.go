package kit

import (
	"context"
	"sync"
)

// Worker runs a subsystem's slow follow-up work in the background, one job
// at a time, in the order queued (a job queued again while it waits runs
// once), so that the action that queued it does not wait. Readers that
// show the work's results call Settle first, which makes what they show
// the same whatever the timing. Jobs must be durable by themselves (a key
// written with the change that queued them), since Stop drops the queue.
type Worker struct {
	do    func(ctx context.Context, job string) error
	onErr func(job string, err error)

	mu      sync.Mutex
	idle    *sync.Cond
	queue   []string
	queued  map[string]bool
	running bool
	closed  bool
}

// NewWorker returns a worker running do for each job; onErr hears of the
// jobs that fail (they are not retried: the next start, or the next
// Enqueue, runs them again).
func NewWorker(do func(ctx context.Context, job string) error, onErr func(job string, err error)) *Worker {
	w := &Worker{do: do, onErr: onErr, queued: map[string]bool{}}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// Enqueue queues jobs, starting the worker if it is idle.
func (w *Worker) Enqueue(jobs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for _, j := range jobs {
		if !w.queued[j] {
			w.queued[j] = true
			w.queue = append(w.queue, j)
		}
	}
	if len(w.queue) > 0 && !w.running {
		w.running = true
		go w.run()
	}
}

func (w *Worker) run() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || w.closed {
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		job := w.queue[0]
		w.queue = w.queue[1:]
		delete(w.queued, job)
		w.mu.Unlock()
		if err := w.do(context.Background(), job); err != nil && w.onErr != nil {
			w.onErr(job, err)
		}
	}
}

// Settle waits until no job is queued or running (or ctx ends).
func (w *Worker) Settle(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		w.mu.Lock()
		for w.running {
			w.idle.Wait()
		}
		w.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Stop lets the running job finish and drops the queue.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.closed = true
	for w.running {
		w.idle.Wait()
	}
	w.mu.Unlock()
}
