package remote

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

// deadline bounds every wait for something that should happen at once.
const deadline = 5 * time.Second

func recv(t *testing.T, ch <-chan events.Event) events.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the subscription closed")
		}
		return ev
	case <-time.After(deadline):
		t.Fatal("no event came")
	}
	return events.Event{}
}

// waitClosed waits for ch to close, failing on any event.
func waitClosed(t *testing.T, ch <-chan events.Event) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			t.Fatalf("event %+v where the subscription should close", ev)
		case <-timeout:
			t.Fatal("the subscription did not close")
		}
	}
}

// waitGoroutines fails unless every subscription goroutine of c has
// ended.
func waitGoroutines(t *testing.T, c *Conn) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		c.subs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatal("a subscription's goroutines are still running")
	}
}

func item(seq uint64, id string) events.Event {
	return events.Event{Seq: seq, Name: cortex.EventItemMutated.Name(), At: time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC),
		Data: cortex.ItemEvent{ItemID: id, Type: "note", MutationType: "create", Version: 1, MutatedBy: "alice"}}
}

// sendItem writes item(seq) with its id.
func sendItem(w http.ResponseWriter, seq uint64) {
	sse(w, wire.EventID("inst1", seq), cortex.EventItemMutated.Name(), item(seq, fmt.Sprint("i", seq)))
}

// streams counts the streams a fake served and what each asked for.
type streams struct {
	mu     sync.Mutex
	lastID []string   // each stream's Last-Event-ID
	kinds  [][]string // each stream's ?kind=
}

func (s *streams) open(r *http.Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastID = append(s.lastID, r.Header.Get("Last-Event-ID"))
	s.kinds = append(s.kinds, r.URL.Query()["kind"])
	return len(s.lastID)
}

func (s *streams) seen() ([]string, [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lastID), slices.Clone(s.kinds)
}

func TestSubscribeAsksForItsKindsAndDecodesTypedPayloads(t *testing.T) {
	f := startUnix(t)
	var s streams
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		s.open(r)
		startStream(w)
		_, _ = fmt.Fprint(w, ": heartbeat\n\n")
		// A kind not asked for (an owner that ignored ?kind=) is not passed on.
		sse(w, "inst1:1", "plan.progress", events.Event{Seq: 1, Name: "plan.progress", Progress: true})
		sendItem(w, 2)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := recv(t, c.Subscribe(ctx, "item.mutated", "cortex.commit"))
	got, ok := cortex.EventItemMutated.Of(ev)
	if !ok || got != item(2, "i2").Data || ev.Seq != 2 || !ev.At.Equal(item(2, "").At) {
		t.Fatalf("event %+v, want item.mutated i2 with a cortex.ItemEvent", ev)
	}
	if _, kinds := s.seen(); !slices.Equal(kinds[0], []string{"item.mutated", "cortex.commit"}) {
		t.Fatalf("the owner was asked for kinds %v", kinds[0])
	}
}

func TestSubscribeResumesFromTheLastEventID(t *testing.T) {
	f := startUnix(t)
	var s streams
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		n := s.open(r)
		startStream(w)
		switch n {
		case 1: // two events, then the stream ends
			sendItem(w, 1)
			sendItem(w, 2)
		case 2: // one more, then the owner drops this slow stream
			sendItem(w, 3)
			sse(w, "", wire.EventDropped, map[string]any{"reason": "slow"})
			f.hold(r)
		default:
			sendItem(w, 4)
			f.hold(r)
		}
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.Subscribe(ctx)
	for want := uint64(1); want <= 4; want++ {
		if ev := recv(t, ch); ev.Seq != want || ev.Name != "item.mutated" {
			t.Fatalf("event %+v, want seq %d", ev, want)
		}
	}
	lastIDs, _ := s.seen()
	if want := []string{"", "inst1:2", "inst1:3"}; !slices.Equal(lastIDs, want) {
		t.Fatalf("streams resumed from %q, want %q", lastIDs, want)
	}
}

func TestSubscribePassesAGapOn(t *testing.T) {
	f := startUnix(t)
	var s streams
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		n := s.open(r)
		startStream(w)
		if n == 1 {
			sendItem(w, 1)
			return
		}
		// A new owner: it does not know the id resumed from.
		sse(w, "", wire.EventGap, events.Event{Name: wire.EventGap, Data: map[string]any{"after": r.Header.Get("Last-Event-ID")}})
		sse(w, "inst2:1", "item.mutated", item(1, "i9"))
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.Subscribe(ctx, "item.mutated")
	recv(t, ch)
	gap := recv(t, ch)
	if gap.Name != wire.EventGap {
		t.Fatalf("event %+v, want %s", gap, wire.EventGap)
	}
	if m, ok := gap.Data.(map[string]any); !ok || m["after"] != "inst1:1" {
		t.Fatalf("gap data %#v", gap.Data)
	}
	if ev := recv(t, ch); ev.Data.(cortex.ItemEvent).ItemID != "i9" {
		t.Fatalf("event %+v after the gap", ev)
	}
}

func TestSubscribeClosesWhenTheOwnerIsGone(t *testing.T) {
	f := startUnix(t)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		startStream(w)
		sendItem(w, 1)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.Subscribe(ctx)
	recv(t, ch)
	f.stop() // the socket goes with it
	waitClosed(t, ch)
	if ctx.Err() != nil {
		t.Fatal("the context ended: the test proves nothing")
	}
	waitGoroutines(t, c)
}

// TestSubscribeGetsNothingFromAStoppingOwner is the race of
// TestSubscribeClosesWhenTheOwnerIsGone on a loaded machine, made to
// happen every time: the owner has stopped (its held stream ends) while
// its connections still take requests. A stopped owner serves no new
// stream, so nothing arrives before the subscription closes.
func TestSubscribeGetsNothingFromAStoppingOwner(t *testing.T) {
	f := startUnix(t)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		startStream(w)
		sendItem(w, 1)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.Subscribe(ctx)
	recv(t, ch)
	f.stopOnce.Do(func() { close(f.quit) }) // stopped; the socket still answers
	waitClosed(t, ch)
	_ = f.srv.Listener.Close()
	f.srv.CloseClientConnections()
	f.srv.Close()
	waitGoroutines(t, c)
}

func TestSubscribeClosesOnCancel(t *testing.T) {
	f := startUnix(t)
	opened := make(chan struct{}, 4)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		startStream(w)
		opened <- struct{}{}
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.Subscribe(ctx)
	<-opened
	cancel()
	waitClosed(t, ch)
	waitGoroutines(t, c)

	// So does a subscription whose owner cannot be reached while it retries.
	ctx, cancel = context.WithCancel(context.Background())
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		opened <- struct{}{}
		fail(w, http.StatusServiceUnavailable, fmt.Errorf("busy"))
	})
	ch = c.Subscribe(ctx)
	<-opened
	cancel()
	waitClosed(t, ch)
	waitGoroutines(t, c)
}

func TestCloseEndsSubscriptions(t *testing.T) {
	f := startUnix(t)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		startStream(w)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ch := c.Subscribe(context.Background())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ch)
}

func TestSubscribeRefusedForGoodCloses(t *testing.T) {
	f := startUnix(t)
	f.setEvents(nil) // 404
	c := dial(t, Options{Socket: f.socket})
	start := time.Now()
	waitClosed(t, c.Subscribe(context.Background()))
	if took := time.Since(start); took >= giveUpAfter {
		t.Fatalf("a refused subscription retried for %v", took)
	}
}

func TestSubscribeStartsBeforeItReturns(t *testing.T) {
	f := startUnix(t)
	registered := make(chan struct{}, 1)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		registered <- struct{}{} // the owner registers the stream before it answers
		startStream(w)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Subscribe(ctx)
	select {
	case <-registered:
	default:
		t.Fatal("Subscribe returned before the owner had the stream: events of an action run next could be missed")
	}
}

func TestSubscribeWaitsForABusyOwner(t *testing.T) {
	old := giveUpAfter
	giveUpAfter = 50 * time.Millisecond
	t.Cleanup(func() { giveUpAfter = old })
	f := startUnix(t)
	var s streams
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		// Busy for several times as long as an unreachable owner is given.
		if n := s.open(r); n < 6 {
			fail(w, http.StatusServiceUnavailable, fmt.Errorf("busy"))
			return
		}
		startStream(w)
		sendItem(w, 1)
		f.hold(r)
	})
	c := dial(t, Options{Socket: f.socket})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ev := recv(t, c.Subscribe(ctx)); ev.Seq != 1 {
		t.Fatalf("event %+v", ev)
	}
}
