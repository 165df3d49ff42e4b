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
	// Audience is who may see it. It stays in the process that published
	// the event: a stream serves each subscriber only what its principal
	// may see, so what crosses a wire is already filtered.
	Audience Audience
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
	subs map[*Queue]struct{}
}

// NewBroker returns a broker stamping events with c.
func NewBroker(c clock.Clock) *Broker {
	return &Broker{clock: c, subs: map[*Queue]struct{}{}}
}

// Publish delivers an event, seen by to, to every subscriber. It never
// blocks.
func (b *Broker) Publish(name string, to Audience, data any) { b.publish(name, to, data, false) }

// PublishProgress delivers a progress event, which a subscriber whose buffer
// is full will miss. It never blocks.
func (b *Broker) PublishProgress(name string, to Audience, data any) {
	b.publish(name, to, data, true)
}

func (b *Broker) publish(name string, to Audience, data any, progress bool) {
	checkPayload(name, data)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev := Event{Seq: b.seq, Name: name, At: b.clock.Now(), Data: data, Progress: progress, Audience: to}
	for q := range b.subs {
		q.Push(ev)
	}
}

// Subscribe returns a channel of every event, whoever may see it (buffer
// of the given size, at least 1), closed when ctx is cancelled. It is for
// the engine's trusted faces, which filter by Event.VisibleTo before a
// principal sees anything.
func (b *Broker) Subscribe(ctx context.Context, buffer int) <-chan Event {
	buffer = max(buffer, 1)
	q := NewQueue(buffer)
	b.add(q)
	out := make(chan Event, buffer)
	go func() {
		defer close(out)
		defer b.remove(q)
		q.Forward(ctx, out)
	}()
	return out
}

// Tap is a synchronous subscription: events wait in it until Drain. The batch
// runner uses it to print, after each step, exactly the events that step
// caused.
type Tap struct {
	b *Broker
	q *Queue
}

// Tap starts a synchronous subscription keeping at most limit progress
// events between drains (other events are always kept).
func (b *Broker) Tap(limit int) *Tap {
	q := NewQueue(max(limit, 1))
	b.add(q)
	return &Tap{b: b, q: q}
}

// Drain returns the events published since the last Drain, in order.
func (t *Tap) Drain() []Event { return t.q.Drain() }

// Ready signals (at most one pending signal) that events are waiting to be
// drained: for a reader that wants them as they come.
func (t *Tap) Ready() <-chan struct{} { return t.q.ready }

// Close ends the subscription.
func (t *Tap) Close() { t.b.remove(t.q) }

func (b *Broker) add(q *Queue) {
	b.mu.Lock()
	b.subs[q] = struct{}{}
	b.mu.Unlock()
}

func (b *Broker) remove(q *Queue) {
	b.mu.Lock()
	delete(b.subs, q)
	b.mu.Unlock()
}
