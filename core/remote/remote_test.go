package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

func dial(t testing.TB, opts Options) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wantKind fails unless err is an *errs.Error of kind k.
func wantKind(t *testing.T, err error, k errs.Kind) {
	t.Helper()
	_ = wantKindAs(t, err, k) // it has failed the test if need be
}

// wantKindAs is wantKind returning the *errs.Error.
func wantKindAs(t *testing.T, err error, k errs.Kind) *errs.Error {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) has no *errs.Error", err, err)
	}
	if e.Kind != k {
		t.Fatalf("error kind %s (%q), want %s", e.Kind, e.Message, k)
	}
	return e
}

func TestDoSendsTheRequestAndReturnsTheResult(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket, Agent: "alice"})
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	res, err := c.Do(context.Background(), conn.Request{Action: "cortex.get", Args: json.RawMessage(`{"id":"i1"}`),
		Turn: "t1", At: &at, Session: "alice/run1", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"id":"i1"}` {
		t.Fatalf("result %s", res)
	}
	got := f.lastRequest(t)
	if got.Action != "cortex.get" || got.Agent != "alice" || got.Turn != "t1" || got.At == nil || !got.At.Equal(at) ||
		got.Session != "alice/run1" || got.IdempotencyKey != "k1" || got.Events {
		t.Fatalf("the owner got %+v", got)
	}
	// A request's own principal wins over the connection's.
	if _, err := c.Do(context.Background(), conn.Request{Action: "cortex.get", Principal: "bob"}); err != nil {
		t.Fatal(err)
	}
	if got := f.lastRequest(t); got.Agent != "bob" || got.Args != nil {
		t.Fatalf("the owner got agent %q args %s, want bob and none", got.Agent, got.Args)
	}
	// Without an agent anywhere, the owner's acts.
	owners := dial(t, Options{Socket: f.socket})
	if _, err := owners.Do(context.Background(), conn.Request{Action: "cortex.get"}); err != nil {
		t.Fatal(err)
	}
	if got := f.lastRequest(t); got.Agent != "" {
		t.Fatalf("the owner got agent %q, want none", got.Agent)
	}
}

func TestDoReturnsTheOwnersErrorWithItsKindMessageAndDetails(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	cases := []error{
		errs.New(errs.Validation, "title: is empty; give the item a title").With("field", "title"),
		errs.New(errs.Conflict, `item "i1" changed`).With("current", map[string]any{"version": 6}),
		errs.New(errs.NotFound, `no item "i9"`),
	}
	for _, sent := range cases {
		f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
			writeJSON(w, http.StatusOK, wire.DoResponse{Action: req.Action, Error: wire.Body(sent)})
		})
		_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create"})
		want := errs.As(sent)
		e := wantKindAs(t, err, want.Kind)
		if e.Message != want.Message {
			t.Errorf("message %q, want %q", e.Message, want.Message)
		}
		if !errors.Is(err, sentinelOf(want.Kind)) {
			t.Errorf("errors.Is does not match %s", want.Kind)
		}
		wantJSON, _ := json.Marshal(want.Details)
		gotJSON, _ := json.Marshal(e.Details)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("details %s, want %s", gotJSON, wantJSON)
		}
	}
}

func sentinelOf(k errs.Kind) error {
	switch k {
	case errs.Validation:
		return errs.ErrValidation
	case errs.Conflict:
		return errs.ErrConflict
	case errs.NotFound:
		return errs.ErrNotFound
	}
	return errs.ErrInternal
}

func TestDoPassesTheRequestsEventsToOnEventBeforeReturning(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	sent := []events.Event{
		{Seq: 7, Name: cortex.EventItemMutated.Name(), At: at, Data: cortex.ItemEvent{ItemID: "i1", Type: "note", MutationType: "create", Version: 1, MutatedBy: "alice"}},
		{Seq: 8, Name: cortex.EventItemMutated.Name(), At: at, Data: cortex.ItemEvent{ItemID: "i1", Type: "note", MutationType: "update", Version: 2, MutatedBy: "alice"}},
	}
	for _, ok := range []bool{true, false} {
		f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
			if !req.Events {
				fail(w, http.StatusBadRequest, errs.New(errs.Parse, "events not asked for"))
				return
			}
			resp := wire.DoResponse{Action: req.Action, OK: ok, Events: sent}
			if ok {
				resp.Result = json.RawMessage(`{"id":"i1"}`)
			} else {
				resp.Error = wire.Body(errs.New(errs.Budget, "over budget"))
			}
			writeJSON(w, http.StatusOK, resp)
		})
		var got []events.Event
		_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create", OnEvent: func(ev events.Event) { got = append(got, ev) }})
		if ok && err != nil {
			t.Fatal(err)
		}
		if !ok {
			wantKind(t, err, errs.Budget)
		}
		// Do has returned: every event must have been passed already.
		if len(got) != len(sent) {
			t.Fatalf("ok=%v: OnEvent got %d events before Do returned, want %d", ok, len(got), len(sent))
		}
		for i := range sent {
			item, isItem := cortex.EventItemMutated.Of(got[i])
			if !isItem || item != sent[i].Data || got[i].Seq != sent[i].Seq || !got[i].At.Equal(at) {
				t.Fatalf("event %d is %+v, want %+v", i, got[i], sent[i])
			}
		}
	}
}

func TestDoRefusesArgsThatAreNotJSON(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create", Args: json.RawMessage(`{"title":`)})
	if e := wantKindAs(t, err, errs.Validation); e.Details["field"] != "args" {
		t.Fatalf("details %v", e.Details)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 0 {
		t.Fatal("the request was sent")
	}
}

func TestRefusalsBecomeErrorsOfTheirKinds(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	cases := []struct {
		status int
		err    error
		plain  string // a body that is not a Failure
		want   errs.Kind
	}{
		{status: http.StatusRequestEntityTooLarge, err: errs.New(errs.Budget, "the request is 9 MB; the limit is 8 MB").With("limit", wire.MaxBody), want: errs.Budget},
		{status: http.StatusUnauthorized, err: errs.New(errs.Permission, "no valid token"), want: errs.Permission},
		{status: http.StatusServiceUnavailable, err: errs.New(errs.Unavailable, "busy: try again"), want: errs.Unavailable},
		{status: http.StatusBadGateway, plain: "proxy trouble", want: errs.Internal},
		{status: http.StatusUnauthorized, plain: "who are you", want: errs.Permission},
	}
	for _, tc := range cases {
		f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
			if tc.err != nil {
				fail(w, tc.status, tc.err)
				return
			}
			http.Error(w, tc.plain, tc.status)
		})
		_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create"})
		e := wantKindAs(t, err, tc.want)
		if tc.err != nil && e.Message != tc.err.Error() {
			t.Errorf("%d: message %q, want %q", tc.status, e.Message, tc.err.Error())
		}
		if tc.err == nil && !strings.Contains(e.Message, tc.plain) {
			t.Errorf("%d: message %q does not say %q", tc.status, e.Message, tc.plain)
		}
	}
}

func TestOwnerGoneMidRequestIsUnavailable(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
		// The owner dies after reading the request, before answering.
		hj, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = hj.Close()
	})
	_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create", IdempotencyKey: "k1"})
	e := wantKindAs(t, err, errs.Unavailable)
	for _, want := range []string{"pid 4242", "cortex.create", "may or may not have committed", "idempotency_key"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not say %q", e.Message, want)
		}
	}
	if e.Details["pid"] != ownerPID || e.Details["action"] != "cortex.create" {
		t.Errorf("details %v", e.Details)
	}
	// The client never sends a request twice on its own: that is the
	// caller's call, with the idempotency key.
	f.mu.Lock()
	sent := len(f.requests)
	f.mu.Unlock()
	if sent != 1 {
		t.Fatalf("the owner got the request %d times", sent)
	}
	// Once the owner is gone for good, every request is Unavailable, and
	// says that it did not run: it never reached an owner.
	f.stop()
	_, err = c.Do(context.Background(), conn.Request{Action: "cortex.get"})
	if e := wantKindAs(t, err, errs.Unavailable); !strings.Contains(e.Message, "cortex.get did not run") {
		t.Errorf("message %q", e.Message)
	}
	_, err = c.Info(context.Background())
	wantKind(t, err, errs.Unavailable)
}

func TestOwnerCutOffMidAnswerIsUnavailable(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
		// Half an answer: the length promises more than comes.
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"ok":true,"res`))
		w.(http.Flusher).Flush()
		hj, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = hj.Close()
	})
	_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create"})
	e := wantKindAs(t, err, errs.Unavailable)
	if !strings.Contains(e.Message, "may or may not have committed") {
		t.Errorf("message %q", e.Message)
	}
}

func TestCancelledRequestIsInterruptedNotUnavailable(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	started := make(chan struct{})
	f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
		close(started)
		<-r.Context().Done() // runs until the client goes
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.Do(ctx, conn.Request{Action: "cortex.create"})
	e := wantKindAs(t, err, errs.Internal)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(e.Message, "interrupted") {
		t.Fatalf("error %q does not say it was interrupted by the context", e.Message)
	}
}

func TestDialWithNobodyListeningIsUnavailableAtOnce(t *testing.T) {
	dir := shortDir(t)
	// No socket at all, and a stale one left by a killed owner.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close()
	for _, socket := range []string{filepath.Join(dir, wire.SocketName), stale} {
		start := time.Now()
		_, err := Dial(context.Background(), Options{Socket: socket})
		e := wantKindAs(t, err, errs.Unavailable)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: Dial took %v", socket, took)
		}
		if !strings.Contains(e.Message, socket) {
			t.Errorf("message %q does not name the socket", e.Message)
		}
	}
}

func TestDialGivesUpOnAnOwnerThatDoesNotAnswer(t *testing.T) {
	f := startUnix(t)
	release := make(chan struct{})
	defer close(release)
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	_, err := Dial(context.Background(), Options{Socket: f.socket, Timeout: 50 * time.Millisecond})
	wantKind(t, err, errs.Unavailable)
}

func TestInfoAgentCheckActionAndNowComeFromTheOwner(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "test" || info.Agent != "owner-agent" {
		t.Fatalf("info %+v", info)
	}
	if c.OwnerPID() != ownerPID || c.Instance() != "inst1" {
		t.Fatalf("pid %d instance %q", c.OwnerPID(), c.Instance())
	}
	if c.Agent() != "owner-agent" {
		t.Fatalf("Agent() = %q, want the owner's", c.Agent())
	}
	if a := dial(t, Options{Socket: f.socket, Agent: "alice"}).Agent(); a != "alice" {
		t.Fatalf("Agent() = %q, want alice", a)
	}
	if err := c.CheckAction("cortex.get"); err != nil {
		t.Fatal(err)
	}
	e := wantKindAs(t, c.CheckAction("cortex.gte"), errs.UnknownAction)
	if e.Message != `unknown action "cortex.gte"; did you mean "cortex.get"? (actions.list lists them all)` || e.Details["nearest"] != "cortex.get" {
		t.Fatalf("message %q details %v", e.Message, e.Details)
	}
	e = wantKindAs(t, c.CheckAction("zzzzz.qqqqq"), errs.UnknownAction)
	if e.Message != `unknown action "zzzzz.qqqqq" (actions.list lists them all)` {
		t.Fatalf("message %q", e.Message)
	}
	// The owner's clock runs an hour ahead of ours.
	if d := time.Until(c.Now()) - ownerAhead; d < -time.Minute || d > time.Minute {
		t.Fatalf("Now() is %v off the owner's clock", d)
	}
}

func TestTCPSendsTheTokenOnEveryRequest(t *testing.T) {
	const token = "s3cret-t0ken"
	f := startTCP(t, token)
	f.setEvents(func(w http.ResponseWriter, r *http.Request) {
		startStream(w)
		sse(w, "inst1:1", "item.mutated", events.Event{Seq: 1, Name: "item.mutated", Data: cortex.ItemEvent{ItemID: "i1"}})
		f.hold(r)
	})
	c := dial(t, Options{Addr: f.addr(), Token: token})
	if _, err := c.Do(context.Background(), conn.Request{Action: "cortex.get"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ev := recv(t, c.Subscribe(ctx)); ev.Name != "item.mutated" {
		t.Fatalf("event %+v", ev)
	}
	// A wrong token is refused, and no message repeats a token.
	_, err := Dial(context.Background(), Options{Addr: f.addr(), Token: "wrong-t0ken"})
	e := wantKindAs(t, err, errs.Permission)
	if strings.Contains(e.Message, "t0ken") {
		t.Fatalf("message %q shows the token", e.Message)
	}
	_, err = Dial(context.Background(), Options{Addr: f.addr()})
	wantKind(t, err, errs.Validation)
	opts := Options{Addr: f.addr(), Token: token}
	for _, shown := range []string{fmt.Sprint(opts), fmt.Sprintf("%+v", opts), fmt.Sprintf("%#v", opts), fmt.Sprint(c)} {
		if strings.Contains(shown, token) {
			t.Fatalf("%s shows the token", shown)
		}
	}
	f.stop()
	_, err = c.Do(context.Background(), conn.Request{Action: "cortex.get"})
	if e := wantKindAs(t, err, errs.Unavailable); strings.Contains(e.Message, token) {
		t.Fatalf("message %q shows the token", e.Message)
	}
}

func TestClosedConnRefusesLaterCalls(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Do(context.Background(), conn.Request{Action: "cortex.get"})
	wantKind(t, err, errs.Unavailable)
	_, err = c.Info(context.Background())
	wantKind(t, err, errs.Unavailable)
	waitClosed(t, c.Subscribe(context.Background()))
	f.mu.Lock()
	n := len(f.requests)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("the owner got %d requests after Close", n)
	}
}

func TestConcurrentRequestsEachGetTheirOwnAnswer(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				args := fmt.Sprintf(`{"id":"w%d-%d"}`, w, i)
				res, err := c.Do(context.Background(), conn.Request{Action: "cortex.get", Args: json.RawMessage(args)})
				if err != nil || string(res) != args {
					errc <- fmt.Errorf("%s: got %s, %v", args, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func BenchmarkDoRoundTrip(b *testing.B) {
	f := startUnix(b)
	c := dial(b, Options{Socket: f.socket})
	req := conn.Request{Action: "cortex.get", Args: json.RawMessage(`{"id":"i1"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// An owner's "busy" and "shutting down" answers say nothing ran: the
// caller may send the request again (to the same owner when busy).
func TestRefusalsThatRanNothingSaySo(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	for _, tc := range []struct {
		err       *errs.Error
		busy, ran bool
	}{
		{errs.New(errs.Unavailable, "busy").With(wire.DetailRan, false).With(wire.DetailBusy, true), true, false},
		{errs.New(errs.Unavailable, "shutting down").With(wire.DetailRan, false), false, false},
		{errs.New(errs.Unavailable, "in flight"), false, true},
	} {
		f.setDo(func(w http.ResponseWriter, r *http.Request, req wire.DoRequest) {
			fail(w, http.StatusServiceUnavailable, tc.err)
		})
		_, err := c.Do(context.Background(), conn.Request{Action: "cortex.create"})
		if Busy(err) != tc.busy || DidNotRun(err) == tc.ran {
			t.Errorf("%q: Busy %v DidNotRun %v; want busy %v, ran %v", tc.err.Message, Busy(err), DidNotRun(err), tc.busy, tc.ran)
		}
	}
}

// What may be sent again after the owner went away mid-request comes
// from the owner's action list: reads, and writes that are one commit.
func TestRetryFollowsTheOwnersActionList(t *testing.T) {
	f := startUnix(t)
	c := dial(t, Options{Socket: f.socket})
	for _, tc := range []struct {
		action      string
		read, keyed bool
	}{
		{"cortex.get", true, false},
		{"cortex.create", false, true},
		{"plan.execute", false, false}, // may have done part of its work
		{"no.such", false, false},
	} {
		if read, keyed := c.Retry(tc.action); read != tc.read || keyed != tc.keyed {
			t.Errorf("%s: read %v keyed %v, want %v %v", tc.action, read, keyed, tc.read, tc.keyed)
		}
	}
}
