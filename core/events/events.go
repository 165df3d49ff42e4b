// Package events is the engine's event broker. Subsystems publish typed
// events after each committed change; the TUI and the batch runner's
// --events subscribe. Publishing never blocks: every subscriber has its own
// queue, drained into its buffered channel by its own goroutine. When a
// subscriber falls behind, its oldest waiting progress events are dropped
// (the newest always get through); every other event is kept and delivered
// in order, however far behind the subscriber is.
package events

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/engram-console/engram/core/clock"
)

// Event is something that happened in the engine.
type Event struct {
	Seq  uint64    // broker-wide publication order, from 1
	Name string    // e.g. "trace.recorded", "item.mutated"
	At   time.Time // engine clock at publication
	// Data is the payload: always the type its Kind was defined with.
	Data any
	// Progress marks an event a slow subscriber may miss (a later one
	// supersedes it).
	Progress bool
}

// MarshalJSON renders {"event": name, "seq": n, "at": ..., "data": ...}, the
// line format of the batch runner's --events.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Event    string    `json:"event"`
		Seq      uint64    `json:"seq"`
		At       time.Time `json:"at"`
		Progress bool      `json:"progress,omitempty"`
		Data     any       `json:"data,omitempty"`
	}{e.Name, e.Seq, e.At, e.Progress, e.Data})
}

// Broker fans events out to subscribers. The zero value is not usable; call
// NewBroker.
type Broker struct {
	clock clock.Clock

	mu   sync.Mutex
	seq  uint64
	subs map[*queue]struct{}
}

// NewBroker returns a broker stamping events with c.
func NewBroker(c clock.Clock) *Broker {
	return &Broker{clock: c, subs: map[*queue]struct{}{}}
}

// Publish delivers an event to every subscriber. It never blocks.
func (b *Broker) Publish(name string, data any) { b.publish(name, data, false) }

// PublishProgress delivers a progress event, which a subscriber whose buffer
// is full will miss. It never blocks.
func (b *Broker) PublishProgress(name string, data any) { b.publish(name, data, true) }

func (b *Broker) publish(name string, data any, progress bool) {
	checkPayload(name, data)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev := Event{Seq: b.seq, Name: name, At: b.clock.Now(), Data: data, Progress: progress}
	for q := range b.subs {
		q.push(ev)
	}
}

// Subscribe returns a channel of events (buffer of the given size, at least
// 1) that is closed when ctx is cancelled.
func (b *Broker) Subscribe(ctx context.Context, buffer int) <-chan Event {
	buffer = max(buffer, 1)
	q := newQueue(buffer)
	b.add(q)
	out := make(chan Event, buffer)
	go func() {
		defer close(out)
		defer b.remove(q)
		for {
			ev, ok := q.pop(ctx)
			if !ok {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Tap is a synchronous subscription: events wait in it until Drain. The batch
// runner uses it to print, after each step, exactly the events that step
// caused.
type Tap struct {
	b *Broker
	q *queue
}

// Tap starts a synchronous subscription keeping at most limit progress
// events between drains (other events are always kept).
func (b *Broker) Tap(limit int) *Tap {
	q := newQueue(max(limit, 1))
	b.add(q)
	return &Tap{b: b, q: q}
}

// Drain returns the events published since the last Drain, in order.
func (t *Tap) Drain() []Event { return t.q.drain() }

// Ready signals (at most one pending signal) that events are waiting to be
// drained: for a reader that wants them as they come.
func (t *Tap) Ready() <-chan struct{} { return t.q.ready }

// Close ends the subscription.
func (t *Tap) Close() { t.b.remove(t.q) }

func (b *Broker) add(q *queue) {
	b.mu.Lock()
	b.subs[q] = struct{}{}
	b.mu.Unlock()
}

func (b *Broker) remove(q *queue) {
	b.mu.Lock()
	delete(b.subs, q)
	b.mu.Unlock()
}

// queue is one subscriber's queue: unbounded for final events, bounded for
// progress events.
type queue struct {
	limit    int // the most progress events that may wait
	mu       sync.Mutex
	events   []Event
	progress int           // how many of events are progress events
	ready    chan struct{} // signalled (capacity 1) when events is non-empty
}

func newQueue(limit int) *queue { return &queue{limit: limit, ready: make(chan struct{}, 1)} }

func (q *queue) push(ev Event) {
	q.mu.Lock()
	if ev.Progress {
		if q.progress >= q.limit {
			// A later progress event supersedes an earlier one: drop the
			// oldest waiting, so the newest always gets through.
			i := slices.IndexFunc(q.events, func(e Event) bool { return e.Progress })
			q.events = slices.Delete(q.events, i, i+1)
			q.progress--
		}
		q.progress++
	}
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *queue) pop(ctx context.Context) (Event, bool) {
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
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return Event{}, false
		}
	}
}

func (q *queue) drain() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.events
	q.events, q.progress = nil, 0
	return out
}
