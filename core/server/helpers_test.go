package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// t0 is the engine clock of every test engine.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// blob is the payload of test.blob: big, so that a few fill a socket.
type blob struct {
	N    int    `json:"n"`
	Fill string `json:"fill"`
}

var blobEvent = events.Define[blob]("test.blob", "when the test action test.blobs publishes one (tests only)")

// gate is the test actions' hold on a test: test.wait says it entered,
// then waits for release.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

// blobsArgs is test.blobs' arguments.
type blobsArgs struct {
	Count int `json:"count"`
	Size  int `json:"size"`
}

// testSubsystem adds test.wait (blocks until released) and test.blobs
// (publishes big events) to an engine.
func testSubsystem(g *gate) core.Subsystem {
	return func(env *kit.Env) error {
		action.Register(env.Actions, action.Spec{Name: "test.wait", Summary: "waits until the test releases it", ReadOnly: true},
			func(ctx context.Context, call action.Call, args action.None) (action.None, error) {
				g.entered <- struct{}{}
				select {
				case <-g.release:
				case <-ctx.Done():
				}
				return action.None{}, nil
			})
		// test.read stands for an action whose arguments name a file
		// (eval.retrieval): it must never run over TCP.
		action.Register(env.Actions, action.Spec{Name: "test.read", Summary: "names a file", ReadOnly: true, NamesFiles: true},
			func(ctx context.Context, call action.Call, args action.None) (action.None, error) {
				panic("test.read ran")
			})
		action.Register(env.Actions, action.Spec{Name: "test.blobs", Summary: "publishes count events of size bytes"},
			func(ctx context.Context, call action.Call, args blobsArgs) (action.None, error) {
				fill := strings.Repeat("x", args.Size)
				for i := range args.Count {
					blobEvent.Publish(env.Events, events.Everyone(), blob{N: i, Fill: fill})
				}
				return action.None{}, nil
			})
		return nil
	}
}

// openEngine opens an in-memory engine at t0 with the test actions.
func openEngine(t testing.TB) (*core.Engine, *gate) {
	t.Helper()
	g := &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	opts := core.Options{InMemory: true, Clock: clock.NewFixed(t0), IDSeed: "test"}
	opts.Subsystems = append(core.DefaultSubsystems(opts), testSubsystem(g))
	e, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e, g
}

// newServer serves e (or a wrapper of it) over httptest, and shuts both
// down at the end of the test.
func newServer(t *testing.T, e server.Engine, tcp bool, opts server.Options) (*server.Server, *httptest.Server) {
	t.Helper()
	s := server.New(e, opts)
	ts := httptest.NewServer(s.Handler(tcp))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	return s, ts
}

// unixServer serves s on a real Unix socket in a temporary directory and
// returns a client that dials it.
func unixServer(t testing.TB, s *server.Server) (sock string, c *http.Client) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), wire.SocketName)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeUnix(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Errorf("ServeUnix: %v", err)
		}
	})
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return sock, &http.Client{Transport: tr}
}

// answer is one HTTP answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Close: the answer said "Connection: close" (Go's client takes the
	// header out and says so here).
	Close bool
}

// request is a request with header lines "Name: value".
func request(t *testing.T, ctx context.Context, method, url, body string, header ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return req
}

// send makes one request; header is "Name: value" lines.
func send(t *testing.T, c *http.Client, method, url, body string, header ...string) answer {
	t.Helper()
	resp, err := c.Do(request(t, context.Background(), method, url, body, header...))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return answer{resp.StatusCode, resp.Header, b, resp.Close}
}

// do posts a DoRequest (a JSON string or a value) and decodes a 200 answer.
func do(t *testing.T, c *http.Client, base string, req any, header ...string) wire.DoResponse {
	t.Helper()
	a := send(t, c, http.MethodPost, base+wire.PathDo, jsonOf(t, req), header...)
	if a.Status != http.StatusOK {
		t.Fatalf("POST %s %s: status %d: %s", wire.PathDo, jsonOf(t, req), a.Status, a.Body)
	}
	var resp wire.DoResponse
	if err := json.Unmarshal(a.Body, &resp); err != nil {
		t.Fatalf("decoding %s: %v", a.Body, err)
	}
	return resp
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failure checks a refusal: its status, JSON content type, "Connection:
// close" (docs/protocol.md promises all three of every answer but a 200),
// ok:false and kind, and message fragments; it returns the body.
func failure(t *testing.T, a answer, status int, kind string, fragments ...string) wire.Failure {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status %d, want %d: %s", a.Status, status, a.Body)
	}
	if ct := a.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !a.Close {
		t.Errorf("a %d answer without \"Connection: close\"", a.Status)
	}
	var f wire.Failure
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("the body is not a Failure: %v: %s", err, a.Body)
	}
	if f.OK || f.Error == nil || string(f.Error.Kind) != kind {
		t.Fatalf("want ok:false and kind %s, got %s", kind, a.Body)
	}
	for _, frag := range fragments {
		if !strings.Contains(f.Error.Message, frag) {
			t.Errorf("message %q lacks %q", f.Error.Message, frag)
		}
	}
	return f
}

// cortexCounts is what engine.info counts of the cortex (items,
// mutations): the store changed if they did.
func cortexCounts(t *testing.T, c conn.Conn) map[string]int {
	t.Helper()
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.Counts["cortex"]
}

// sse is one Server-Sent Event.
type sse struct {
	ID, Event, Data string
}

// stream is an open event stream.
type stream struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
	msgs chan sse
	errc chan error
}

// openStream GETs an event stream; query is "" or "?kind=...", header
// lines as for send.
func openStream(t *testing.T, c *http.Client, base, query string, header ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.Do(request(t, ctx, http.MethodGet, base+wire.PathEvents+query, "", header...))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: status %d: %s", wire.PathEvents+query, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	s := &stream{t: t, resp: resp, br: bufio.NewReader(resp.Body), msgs: make(chan sse, 1<<16), errc: make(chan error, 1)}
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close()
	})
	return s
}

// read starts reading messages in the background (comments skipped).
func (s *stream) read() *stream {
	go func() {
		var m sse
		for {
			line, err := s.br.ReadString('\n')
			if err != nil {
				s.errc <- err
				close(s.msgs)
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if m != (sse{}) {
					s.msgs <- m
				}
				m = sse{}
			case strings.HasPrefix(line, ":"):
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					m.ID = v
				case "event":
					m.Event = v
				case "data":
					m.Data = v
				default:
					s.errc <- errors.New("unexpected line " + line)
				}
			}
		}
	}()
	return s
}

// next returns the next message, failing the test if none comes soon.
func (s *stream) next() sse {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatalf("the stream ended: %v", <-s.errc)
		}
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no event within 10s")
	}
	return sse{}
}

// event decodes a message's data as an event line.
func event(t *testing.T, m sse) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(m.Data), &v); err != nil {
		t.Fatalf("data %q: %v", m.Data, err)
	}
	return v
}

// itemOf is the item id of an item.mutated message.
func itemOf(t *testing.T, m sse) string {
	t.Helper()
	data, _ := event(t, m)["data"].(map[string]any)
	id, _ := data["item_id"].(string)
	return id
}

// createGoal is cortex.create of a goal with the given id.
func createGoal(id string) map[string]any {
	return map[string]any{"action": "cortex.create", "args": map[string]any{"type": "goal", "id": id, "fields": map[string]any{"title": "Goal " + id}}}
}
