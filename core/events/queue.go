package events

import (
	"context"
	"slices"
	"sync"
)

// Queue holds one subscriber's events between who delivers them and who
// reads them: unbounded for final events, at most limit progress events
// (a later progress event supersedes an earlier one, so the oldest waiting
// is dropped and the newest always gets through). The broker keeps one per
// subscriber; a remote connection keeps one between its event stream and
// its reader. Safe for concurrent use.
type Queue struct {
	limit    int // the most progress events that may wait
	mu       sync.Mutex
	events   []Event
	progress int           // how many of events are progress events
	done     bool          // Finish was called: no more events will come
	ready    chan struct{} // signalled (capacity 1) on Push and Finish
}

// NewQueue returns an empty queue keeping at most limit progress events.
func NewQueue(limit int) *Queue { return &Queue{limit: limit, ready: make(chan struct{}, 1)} }

// Push adds an event. It never blocks.
func (q *Queue) Push(ev Event) {
	q.mu.Lock()
	if ev.Progress {
		if q.progress >= q.limit {
			i := slices.IndexFunc(q.events, func(e Event) bool { return e.Progress })
			q.events = slices.Delete(q.events, i, i+1)
			q.progress--
		}
		q.progress++
	}
	q.events = append(q.events, ev)
	q.mu.Unlock()
	q.signal()
}

// Finish says no more events will come: Pop returns false once the queue
// is empty.
func (q *Queue) Finish() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Pop waits for the oldest event and removes it; false once ctx ends, or
// the queue is finished and empty.
func (q *Queue) Pop(ctx context.Context) (Event, bool) {
	for {
		q.mu.Lock()
		if len(q.events) > 0 {
			ev := q.events[0]
			q.events[0] = Event{}
			q.events = q.events[1:]
			if ev.Progress {
				q.progress--
			}
			q.mu.Unlock()
			return ev, true
		}
		done := q.done
		q.mu.Unlock()
		if done {
			return Event{}, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return Event{}, false
		}
	}
}

// Forward sends the queue's events to out, in order, until ctx ends or
// the queue is finished and empty. It does not close out.
func (q *Queue) Forward(ctx context.Context, out chan<- Event) {
	for {
		ev, ok := q.Pop(ctx)
		if !ok {
			return
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}

// Drain removes and returns every event waiting, in order.
func (q *Queue) Drain() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.events
	q.events, q.progress = nil, 0
	return out
}
