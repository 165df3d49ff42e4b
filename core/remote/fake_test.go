package remote

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/wire"
)

// fake is a minimal owner speaking the wire protocol as core/wire
// declares it: enough to test the client against, not a server.
type fake struct {
	srv    *httptest.Server
	socket string // set when served on a Unix socket
	token  string // required as a bearer token when set

	info wire.InfoResponse

	quit     chan struct{} // closed by stop
	stopOnce sync.Once

	mu       sync.Mutex
	requests []wire.DoRequest // every decoded /v1/do body
	// do answers a /v1/do request; the default echoes the request's
	// args as its result.
	do func(w http.ResponseWriter, r *http.Request, req wire.DoRequest)
	// events serves one /v1/events stream; nil answers 404.
	events func(w http.ResponseWriter, r *http.Request)
}

// ownerPID is the fake owner's pid, as its info reports it.
const ownerPID = 4242

// ownerAhead is how far the fake owner's clock runs ahead of ours.
const ownerAhead = time.Hour

func newFakeInfo() wire.InfoResponse {
	return wire.InfoResponse{
		Info:     conn.Info{Version: "test", Store: "badger", Agent: "owner-agent", Actions: 4},
		PID:      ownerPID,
		Instance: "inst1",
		Now:      time.Now().Add(ownerAhead),
		ActionList: []wire.ActionSummary{
			{Name: "cortex.get", ReadOnly: true},
			{Name: "cortex.create", Resend: true},
			{Name: "engine.info", ReadOnly: true},
			{Name: "plan.execute"},
		},
	}
}

func (f *fake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(wire.PathInfo, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		info := f.info
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, info)
	})
	mux.HandleFunc(wire.PathDo, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fail(w, http.StatusMethodNotAllowed, errs.New(errs.Validation, "POST only"))
			return
		}
		var req wire.DoRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, wire.MaxBody)).Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, errs.New(errs.Parse, "bad body: %v", err))
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		do := f.do
		f.mu.Unlock()
		if do == nil {
			result := req.Args
			if result == nil {
				result = json.RawMessage(`{}`)
			}
			writeJSON(w, http.StatusOK, wire.DoResponse{Action: req.Action, OK: true, Result: result})
			return
		}
		do(w, r, req)
	})
	mux.HandleFunc(wire.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		events := f.events
		f.mu.Unlock()
		if events == nil {
			http.NotFound(w, r)
			return
		}
		events(w, r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-f.quit:
			// Stopped: a gone owner answers nothing, not even on a
			// connection kept alive from before (a resumed stream would
			// otherwise get the handler's events again).
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		default:
		}
		if f.token != "" && r.Header.Get(wire.HeaderAuthorization) != "Bearer "+f.token {
			fail(w, http.StatusUnauthorized, errs.New(errs.Permission, "no valid token: engram token create --agent NAME prints one"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers with a wire.Failure.
func fail(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, wire.Failure{Error: wire.Body(err)})
}

// lastRequest is the last /v1/do body the fake decoded.
func (f *fake) lastRequest(t *testing.T) wire.DoRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("the owner got no request")
	}
	return f.requests[len(f.requests)-1]
}

func (f *fake) setDo(do func(w http.ResponseWriter, r *http.Request, req wire.DoRequest)) {
	f.mu.Lock()
	f.do = do
	f.mu.Unlock()
}

func (f *fake) setEvents(h func(w http.ResponseWriter, r *http.Request)) {
	f.mu.Lock()
	f.events = h
	f.mu.Unlock()
}

// shortDir is a temporary directory with a path short enough for a Unix
// socket (t.TempDir's may pass the 108-byte limit).
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "engram-remote")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startUnix serves a fake owner on a Unix socket in a new directory.
func startUnix(t testing.TB) *fake {
	t.Helper()
	f := &fake{info: newFakeInfo(), quit: make(chan struct{})}
	f.socket = filepath.Join(shortDir(t), wire.SocketName)
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewUnstartedServer(f.handler())
	_ = f.srv.Listener.Close()
	f.srv.Listener = ln
	f.srv.Start()
	t.Cleanup(f.stop)
	return f
}

// startTCP serves a fake owner over TCP that requires token.
func startTCP(t testing.TB, token string) *fake {
	t.Helper()
	f := &fake{info: newFakeInfo(), token: token, quit: make(chan struct{})}
	f.srv = httptest.NewServer(f.handler())
	t.Cleanup(f.stop)
	return f
}

// stop ends the owner: it takes no more connections, and every one it has
// is cut, streams included (their handlers return on hold).
func (f *fake) stop() {
	f.stopOnce.Do(func() {
		_ = f.srv.Listener.Close() // first: a client reconnecting finds nobody
		// Then no request is served, even on a connection kept alive: the
		// streams held open end without a new one taking their place.
		close(f.quit)
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
}

// hold keeps a stream open until its client goes or the owner stops.
func (f *fake) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.quit:
	}
}

func (f *fake) addr() string { return f.srv.Listener.Addr().String() }

// sse writes one Server-Sent Events message and flushes it.
func sse(w http.ResponseWriter, id, name string, data any) {
	if id != "" {
		_, _ = fmt.Fprintf(w, "id: %s\n", id)
	}
	_, _ = fmt.Fprintf(w, "event: %s\n", name)
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		_, _ = fmt.Fprintf(w, "data: %s\n", b)
	}
	_, _ = fmt.Fprint(w, "\n")
	w.(http.Flusher).Flush()
}

// startStream writes the headers of an event stream.
func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}
