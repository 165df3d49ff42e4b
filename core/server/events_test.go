package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// A stream with ?kind= carries only those kinds; each message has the id
// INSTANCE:SEQ, the event's name and its JSON line.
func TestEventStreamCarriesOnlyTheKindsAskedFor(t *testing.T) {
	e, _ := openEngine(t)
	s, ts := newServer(t, e, false, server.Options{})
	c := ts.Client()
	items := openStream(t, c, ts.URL, "?kind=item.mutated").read()
	both := openStream(t, c, ts.URL, "?kind=item.mutated&kind=test.blob").read()

	do(t, c, ts.URL, createGoal("g1"))
	do(t, c, ts.URL, `{"action": "test.blobs", "args": {"count": 1, "size": 3}}`)
	do(t, c, ts.URL, createGoal("g2"))

	for _, want := range []string{"g1", "g2"} {
		m := items.next()
		if m.Event != "item.mutated" || itemOf(t, m) != want {
			t.Fatalf("want item.mutated of %s, got %+v", want, m)
		}
		inst, seq, ok := wire.ParseEventID(m.ID)
		if !ok || inst != s.Instance() || event(t, m)["seq"] != float64(seq) || event(t, m)["event"] != "item.mutated" {
			t.Errorf("message %+v: id and data disagree", m)
		}
	}
	var names []string
	for range 3 {
		names = append(names, both.next().Event)
	}
	if strings.Join(names, " ") != "item.mutated test.blob item.mutated" {
		t.Errorf("two kinds: got %v", names)
	}

	a := send(t, c, http.MethodGet, ts.URL+wire.PathEvents+"?kind=item.mutate", "")
	failure(t, a, http.StatusBadRequest, "ValidationError", `"item.mutate"`, `did you mean "item.mutated"`)
}

// A stream resumed with Last-Event-ID (or ?after=) first replays exactly
// the events its reader missed, then goes on live.
func TestEventStreamResumesWithTheEventsMissed(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{})
	c := ts.Client()
	watch := openStream(t, c, ts.URL, "?kind=item.mutated").read()
	first := openStream(t, c, ts.URL, "?kind=item.mutated").read()

	do(t, c, ts.URL, createGoal("g1"))
	seen := first.next()
	if itemOf(t, seen) != "g1" {
		t.Fatalf("first stream: %+v", seen)
	}
	_ = first.resp.Body.Close()
	do(t, c, ts.URL, createGoal("g2"))
	do(t, c, ts.URL, createGoal("g3"))
	// Once another stream has them, the owner remembers them.
	for _, want := range []string{"g1", "g2", "g3"} {
		if got := itemOf(t, watch.next()); got != want {
			t.Fatalf("watcher: %s, want %s", got, want)
		}
	}

	byHeader := openStream(t, c, ts.URL, "?kind=item.mutated", "Last-Event-ID: "+seen.ID).read()
	byQuery := openStream(t, c, ts.URL, "?kind=item.mutated&after="+seen.ID).read()
	do(t, c, ts.URL, createGoal("g4"))
	for _, st := range []*stream{byHeader, byQuery} {
		for _, want := range []string{"g2", "g3", "g4"} {
			m := st.next()
			if m.Event != "item.mutated" || itemOf(t, m) != want {
				t.Fatalf("resumed: want %s, got %+v", want, m)
			}
		}
	}
}

// A stream resumed with another owner's id, or one older than the owner
// remembers, starts with engram.gap: its reader should reload.
func TestEventStreamResumedFromAnUnknownIDStartsWithAGap(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{Replay: 2}})
	c := ts.Client()

	foreign := openStream(t, c, ts.URL, "?kind=item.mutated", "Last-Event-ID: other:5").read()
	watch := openStream(t, c, ts.URL, "?kind=item.mutated").read()
	do(t, c, ts.URL, createGoal("g1"))
	m := foreign.next()
	if m.Event != wire.EventGap || m.ID != "" || m.Data != `{"from":"other:5"}` {
		t.Fatalf("want engram.gap from other:5 first, got %+v", m)
	}
	if m := foreign.next(); itemOf(t, m) != "g1" {
		t.Fatalf("after the gap: %+v", m)
	}

	old := watch.next()
	for i, id := range []string{"g2", "g3", "g4"} {
		do(t, c, ts.URL, createGoal(id))
		if got := itemOf(t, watch.next()); got != id {
			t.Fatalf("watcher %d: %s", i, got)
		}
	}
	// The owner remembers two events; g2's is gone, so is g1's.
	stale := openStream(t, c, ts.URL, "?kind=item.mutated", "Last-Event-ID: "+old.ID).read()
	if m := stale.next(); m.Event != wire.EventGap || m.Data != `{"from":"`+old.ID+`"}` {
		t.Fatalf("want engram.gap, got %+v", m)
	}
}

// A stream whose reader reads nothing is dropped once its queue is full:
// the writers are not held up, other streams go on, and the stream ends
// with engram.dropped.
func TestSlowEventReaderIsDroppedAndHoldsUpNobody(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{SubscriberQueue: 4}})
	c := ts.Client()
	stuck := openStream(t, c, ts.URL, "") // never read until the end
	other := openStream(t, c, ts.URL, "?kind=item.mutated").read()

	// 400 events of 64 KiB: far more than the socket buffers hold.
	const count = 400
	got := do(t, c, ts.URL, `{"action": "test.blobs", "args": {"count": 400, "size": 65536}}`)
	if !got.OK {
		t.Fatalf("test.blobs: %+v", got)
	}
	do(t, c, ts.URL, createGoal("g1"))
	if m := other.next(); itemOf(t, m) != "g1" {
		t.Fatalf("the other stream: %+v", m)
	}

	stuck.read()
	var blobs int
	var last sse
	for m := range stuck.msgs {
		if m.Event == "test.blob" {
			blobs++
		}
		last = m
	}
	if last.Event != wire.EventDropped || !strings.Contains(last.Data, "Last-Event-ID") {
		t.Errorf("the stream ended with %+v, want %s", last.Event, wire.EventDropped)
	}
	t.Logf("the stuck reader got %d of %d events", blobs, count)
	if blobs >= count {
		t.Errorf("the stuck reader got all %d events: it was never dropped", blobs)
	}
}

// At most MaxSubscribers streams at once; one more gets 503.
func TestEventStreamsBeyondTheLimitAre503(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{MaxSubscribers: 1}})
	first := openStream(t, ts.Client(), ts.URL, "")
	a := send(t, ts.Client(), http.MethodGet, ts.URL+wire.PathEvents, "")
	failure(t, a, http.StatusServiceUnavailable, "Unavailable", "1 event streams")
	_ = first.resp.Body.Close()
}

// A quiet stream gets a comment every Heartbeat.
func TestQuietEventStreamGetsHeartbeats(t *testing.T) {
	e, _ := openEngine(t)
	_, ts := newServer(t, e, false, server.Options{Limits: server.Limits{Heartbeat: 10 * time.Millisecond}})
	st := openStream(t, ts.Client(), ts.URL, "")
	for {
		line, err := st.br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == ": ping\n" {
			return
		}
	}
}

// Shutdown ends the event streams and waits for the requests in flight;
// afterwards requests get 503.
func TestShutdownEndsStreamsAndWaitsForRequests(t *testing.T) {
	e, g := openEngine(t)
	s, ts := newServer(t, e, false, server.Options{})
	c := ts.Client()
	st := openStream(t, c, ts.URL, "").read()
	inFlight := make(chan answer, 1)
	go func() { inFlight <- send(t, c, http.MethodPost, ts.URL+wire.PathDo, `{"action": "test.wait"}`) }()
	<-g.entered

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- s.Shutdown(ctx)
	}()
	for range st.msgs {
	} // the stream ends
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	default:
	}
	close(g.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if a := <-inFlight; a.Status != http.StatusOK {
		t.Errorf("the request in flight: %d %s", a.Status, a.Body)
	}
	a := send(t, c, http.MethodGet, ts.URL+wire.PathInfo, "")
	failure(t, a, http.StatusServiceUnavailable, "Unavailable", "shutting down")
}

// stuckStream fills the ring with 400 events of 64 KiB and opens a stream
// that replays them all to a reader that reads nothing: the owner's write
// to it blocks.
func stuckStream(t *testing.T, s *server.Server, c *http.Client, base string) {
	t.Helper()
	watch := openStream(t, c, base, "?kind=item.mutated").read()
	if got := do(t, c, base, `{"action": "test.blobs", "args": {"count": 400, "size": 65536}}`); !got.OK {
		t.Fatalf("test.blobs: %+v", got)
	}
	do(t, c, base, createGoal("g1"))
	watch.next() // the owner has every blob before g1
	openStream(t, c, base, "?after="+s.Instance()+":0")
}

// A dropped stream whose reader reads nothing at all is cut off after
// the grace, so it holds neither a goroutine nor a subscriber slot.
func TestDroppedStreamWhoseReaderReadsNothingIsCutOff(t *testing.T) {
	server.SetDropGrace(t, 50*time.Millisecond)
	e, _ := openEngine(t)
	s, ts := newServer(t, e, false, server.Options{Limits: server.Limits{SubscriberQueue: 4, MaxSubscribers: 2}})
	c := ts.Client()
	stuckStream(t, s, c, ts.URL)
	// Live events overflow the stuck stream's queue: it is dropped.
	if got := do(t, c, ts.URL, `{"action": "test.blobs", "args": {"count": 10, "size": 1}}`); !got.OK {
		t.Fatalf("writes beside the stuck stream: %+v", got)
	}
	// Its slot comes free once the owner has cut it off.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+wire.PathEvents, nil)
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		status := resp.StatusCode
		cancel()
		_ = resp.Body.Close()
		if status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stuck stream still holds its slot after 10s (status %d)", status)
		}
	}
}

// Shutdown does not wait for a stream whose reader reads nothing.
func TestShutdownCutsOffAStreamWhoseReaderReadsNothing(t *testing.T) {
	e, _ := openEngine(t)
	s, ts := newServer(t, e, false, server.Options{})
	stuckStream(t, s, ts.Client(), ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// A stream carries only the events its reader may see: over TCP the
// token's agent, over the socket the agent it names (else the owner's).
// Bob hears of Alice's goal only once she shares it, and of nothing the
// owner's agent keeps to itself.
func TestEventStreamsCarryOnlyWhatTheirReaderMaySee(t *testing.T) {
	e, _ := openEngine(t)
	s, tcp := newServer(t, e, true, server.Options{Tokens: testTokens})
	sock := httptest.NewServer(s.Handler(false))
	t.Cleanup(sock.Close)
	bobOverTCP := openStream(t, tcp.Client(), tcp.URL, "?kind=item.mutated", "Authorization: Bearer bob-ro").read()
	bobOverSocket := openStream(t, sock.Client(), sock.URL, "?kind=item.mutated&agent=bob").read()
	owners := openStream(t, sock.Client(), sock.URL, "?kind=item.mutated").read()

	alice := "Authorization: Bearer alice-rw"
	do(t, tcp.Client(), tcp.URL, createGoal("alices"), alice)
	do(t, sock.Client(), sock.URL, createGoal("owners"))
	do(t, tcp.Client(), tcp.URL, map[string]any{"action": "cortex.share",
		"args": map[string]any{"id": "alices", "principal": "bob", "permissions": []string{"read"}}}, alice)
	do(t, tcp.Client(), tcp.URL, map[string]any{"action": "cortex.update",
		"args": map[string]any{"id": "alices", "updates": map[string]any{"progress": 50}}}, alice)

	for name, st := range map[string]*stream{"over TCP": bobOverTCP, "over the socket": bobOverSocket} {
		// Bob's first event is the share that let him in, then the update.
		for _, want := range []string{"share", "update"} {
			m := st.next()
			data, _ := event(t, m)["data"].(map[string]any)
			if itemOf(t, m) != "alices" || data["mutation_type"] != want {
				t.Fatalf("bob's stream %s: got %s, want alices's %s (the create and the owner's goal are not his to see)", name, m.Data, want)
			}
		}
	}
	if m := owners.next(); itemOf(t, m) != "owners" {
		t.Errorf("the owner's agent's stream: first %s, want its own goal only", m.Data)
	}

	a := send(t, tcp.Client(), http.MethodGet, tcp.URL+wire.PathEvents+"?agent=alice", "", "Authorization: Bearer bob-ro")
	failure(t, a, http.StatusForbidden, "PermissionError", `acts as "bob", not "alice"`)
}
