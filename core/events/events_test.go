package events

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func subscribers(b *Broker) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// TestPublishNeverBlocks publishes thousands of events, final and progress,
// to a channel subscriber and a tap that nobody reads. If Publish could block,
// this test would hang (and go test's timeout would fail it).
func TestPublishNeverBlocks(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Subscribe(ctx, 1)
	tap := b.Tap(1)
	defer tap.Close()
	const n = 5000
	for i := range n {
		b.Publish("item.mutated", Everyone(), i)
		b.PublishProgress("plan.progress", Everyone(), i)
	}
	// Every final event is still kept for the tap, in order; progress beyond
	// its limit was dropped rather than blocking.
	evs := tap.Drain()
	finals, progress := 0, 0
	for _, ev := range evs {
		if ev.Progress {
			progress++
			continue
		}
		if ev.Data != finals {
			t.Fatalf("final event %d carries %v", finals, ev.Data)
		}
		finals++
	}
	if finals != n {
		t.Fatalf("tap kept %d of %d final events", finals, n)
	}
	if progress > 1 {
		t.Fatalf("tap with limit 1 kept %d progress events while undrained", progress)
	}
	// The channel subscriber still gets every final event once it reads.
	got := 0
	for got < n {
		ev := <-ch
		if !ev.Progress {
			if ev.Data != got {
				t.Fatalf("subscriber: final event %d carries %v", got, ev.Data)
			}
			got++
		}
	}
}

func TestSlowSubscriberKeepsFinalsDropsProgress(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const buffer = 4
	ch := b.Subscribe(ctx, buffer)
	const finals, progressPerFinal = 50, 20
	for i := range finals {
		for j := range progressPerFinal {
			b.PublishProgress("plan.progress", Everyone(), fmt.Sprintf("%d/%d", i, j))
		}
		b.Publish("subtask.finished", Everyone(), i)
	}
	// Nobody read while publishing. Now read until the last final event: all
	// events before it have been delivered by then (delivery is in order).
	var lastSeq uint64
	var lastProgress any
	gotFinals, gotProgress := 0, 0
	for gotFinals < finals {
		ev := <-ch
		if ev.Seq <= lastSeq {
			t.Fatalf("seq %d after %d: out of order", ev.Seq, lastSeq)
		}
		lastSeq = ev.Seq
		if ev.Progress {
			gotProgress++
			lastProgress = ev.Data
			continue
		}
		if ev.Name != "subtask.finished" || ev.Data != gotFinals {
			t.Fatalf("final event %d is %s %v", gotFinals, ev.Name, ev.Data)
		}
		gotFinals++
	}
	// Progress gets in only while the subscriber's queue is short: at most the
	// channel buffer, one event in the hand of the forwarding goroutine, and
	// the queue's own limit. Everything else was dropped.
	if bound := 2*buffer + 1; gotProgress > bound || gotProgress == 0 {
		t.Fatalf("slow subscriber got %d of %d progress events; want 1..%d", gotProgress, finals*progressPerFinal, bound)
	}
	if lastSeq != finals*(progressPerFinal+1) {
		t.Fatalf("last seq %d, want %d", lastSeq, finals*(progressPerFinal+1))
	}
	// The newest progress supersedes the rest, so it always gets through.
	if want := fmt.Sprintf("%d/%d", finals-1, progressPerFinal-1); lastProgress != want {
		t.Fatalf("last progress delivered %v, want the newest %s", lastProgress, want)
	}
}

func TestFastSubscriberGetsProgress(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Subscribe(ctx, 1)
	// Publish one at a time, waiting for each: nothing is ever dropped.
	for i := range 100 {
		b.PublishProgress("plan.progress", Everyone(), i)
		ev := <-ch
		if !ev.Progress || ev.Data != i || ev.Seq != uint64(i+1) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
}

func TestSeqAndClock(t *testing.T) {
	c := clock.NewFixed(t0)
	b := NewBroker(c)
	tap := b.Tap(10)
	defer tap.Close()
	for i := range 5 {
		b.Publish("x", Everyone(), i)
		c.Advance(time.Second)
	}
	evs := tap.Drain()
	if len(evs) != 5 {
		t.Fatalf("drained %d events", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("event %d seq %d, want %d", i, ev.Seq, i+1)
		}
		if want := t0.Add(time.Duration(i) * time.Second); !ev.At.Equal(want) {
			t.Errorf("event %d at %v, want %v", i, ev.At, want)
		}
	}
}

func TestSubscriptionClosesOnCancel(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx, 2)
	other := b.Subscribe(context.Background(), 2)
	if n := subscribers(b); n != 2 {
		t.Fatalf("%d subscribers, want 2", n)
	}
	for i := range 10 {
		b.Publish("x", Everyone(), i) // some stay queued: the close must not wait for them
	}
	cancel()
	for range ch {
		// drain until closed
	}
	// The subscriber removes itself before closing its channel.
	if n := subscribers(b); n != 1 {
		t.Fatalf("%d subscribers after cancel, want 1", n)
	}
	// The broker goes on serving the others.
	b.Publish("after", Everyone(), nil)
	for {
		ev := <-other
		if ev.Name == "after" {
			break
		}
	}
	// Subscribing with an already-cancelled context closes at once.
	dead, cancelDead := context.WithCancel(context.Background())
	cancelDead()
	for range b.Subscribe(dead, 1) {
	}
	if n := subscribers(b); n != 1 {
		t.Fatalf("%d subscribers after a dead subscription, want 1", n)
	}
}

func TestTapDrain(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	tap := b.Tap(2)
	if evs := tap.Drain(); len(evs) != 0 {
		t.Fatalf("fresh tap drained %d events", len(evs))
	}
	b.Publish("a", Everyone(), 1)
	b.Publish("b", Everyone(), 2)
	first := tap.Drain()
	b.Publish("c", Everyone(), 3)
	for i := range 5 {
		b.PublishProgress("p", Everyone(), i)
	}
	b.Publish("d", Everyone(), 4)
	second := tap.Drain()
	names := func(evs []Event) (s string) {
		for _, e := range evs {
			s += e.Name
		}
		return s
	}
	if got := names(first); got != "ab" {
		t.Fatalf("first drain %q, want ab", got)
	}
	// Limit 2: at most two progress events wait; each newer one pushes out
	// the oldest, so the last two (3 and 4) survive; finals are all kept.
	if got := names(second); got != "cppd" {
		t.Fatalf("second drain %q, want cppd", got)
	}
	if second[1].Data != 3 || second[2].Data != 4 {
		t.Fatalf("kept progress %v and %v, want the newest (3, 4)", second[1].Data, second[2].Data)
	}
	if evs := tap.Drain(); len(evs) != 0 {
		t.Fatalf("third drain got %d events", len(evs))
	}
	tap.Close()
	b.Publish("e", Everyone(), 5)
	if evs := tap.Drain(); len(evs) != 0 {
		t.Fatalf("closed tap got %d events", len(evs))
	}
	if n := subscribers(b); n != 0 {
		t.Fatalf("%d subscribers after Close", n)
	}
}

func TestEventJSON(t *testing.T) {
	ev := Event{Seq: 7, Name: "trace.recorded", At: t0, Data: map[string]int{"seq": 3}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"trace.recorded","seq":7,"at":"2025-11-05T10:00:00.01Z","data":{"seq":3}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// Progress events say so; events without data leave it out.
	b, _ = json.Marshal(Event{Seq: 1, Name: "plan.progress", At: t0, Progress: true})
	if want := `{"event":"plan.progress","seq":1,"at":"2025-11-05T10:00:00.01Z","progress":true}`; string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	// Pointer and value encode alike.
	pb, _ := json.Marshal(&ev)
	vb, _ := json.Marshal(ev)
	if string(pb) != string(vb) {
		t.Fatalf("pointer %s != value %s", pb, vb)
	}
}

// TestConcurrent (for -race): several publishers and subscribers at once.
// Each subscriber that was there from the start gets every final event, in
// seq order, exactly once.
func TestConcurrent(t *testing.T) {
	b := NewBroker(clock.NewFixed(t0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const publishers, each, subs = 4, 300, 3
	chans := make([]<-chan Event, subs)
	for i := range chans {
		chans[i] = b.Subscribe(ctx, 8)
	}
	var wg sync.WaitGroup
	errc := make(chan error, subs)
	for _, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			seen := map[string]bool{}
			for len(seen) < publishers*each {
				ev := <-ch
				if ev.Seq <= last {
					errc <- fmt.Errorf("seq %d after %d", ev.Seq, last)
					return
				}
				last = ev.Seq
				if ev.Progress {
					continue
				}
				key := ev.Data.(string)
				if seen[key] {
					errc <- fmt.Errorf("event %s delivered twice", key)
					return
				}
				seen[key] = true
			}
		}()
	}
	// Subscribers that come and go while publishing, and a tap drained
	// concurrently.
	tap := b.Tap(4)
	var churn sync.WaitGroup
	churn.Add(2)
	go func() {
		defer churn.Done()
		for range 50 {
			c, stop := context.WithCancel(ctx)
			ch := b.Subscribe(c, 1)
			stop()
			for range ch {
			}
		}
	}()
	tapped := 0
	done := make(chan struct{})
	go func() {
		defer churn.Done()
		for {
			select {
			case <-done:
				return
			default:
				for _, ev := range tap.Drain() {
					if !ev.Progress {
						tapped++
					}
				}
			}
		}
	}()
	var pub sync.WaitGroup
	for p := range publishers {
		pub.Add(1)
		go func() {
			defer pub.Done()
			for i := range each {
				b.Publish("item", Everyone(), fmt.Sprintf("%d-%d", p, i))
				b.PublishProgress("progress", Everyone(), nil)
			}
		}()
	}
	pub.Wait()
	wg.Wait()
	close(done)
	churn.Wait()
	for _, ev := range tap.Drain() {
		if !ev.Progress {
			tapped++
		}
	}
	tap.Close()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if tapped != publishers*each {
		t.Fatalf("tap got %d final events, want %d", tapped, publishers*each)
	}
	cancel()
	for _, ch := range chans {
		for range ch {
		}
	}
	if n := subscribers(b); n != 0 {
		t.Fatalf("%d subscribers left after cancelling all", n)
	}
}
