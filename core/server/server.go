package server

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/wire"
)

// Engine is what the server serves: *core.Engine satisfies it.
type Engine interface {
	conn.Conn
	// Actions lists every action, so that the server can tell which
	// ones only read (a read-only token may run only those).
	Actions() []*action.Action
	// SubscribeAll returns every event, whoever may see it: the server
	// serves each stream only what its principal may see.
	SubscribeAll(ctx context.Context) <-chan events.Event
}

// Principal is who a TCP token acts as.
type Principal struct {
	// Agent is the token's agent: every request made with the token acts
	// as it.
	Agent string
	// ReadOnly tokens may run only actions that change nothing stored.
	ReadOnly bool
}

// Authenticator checks a TCP bearer token; a non-nil error means 401.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// Options configure a Server.
type Options struct {
	// Instance is a random id of this owner process
	// (wire.InfoResponse.Instance, event ids); one is generated if empty.
	Instance string
	// PID is reported by /v1/info; os.Getpid() if 0.
	PID int
	// Tokens checks TCP bearer tokens; nil refuses every TCP request with 401.
	Tokens Authenticator
	// Logger receives refused requests and panics (discarded when nil).
	Logger *slog.Logger
	// Limits bound what clients may ask; zero fields take the wire.*
	// defaults (tests shrink them).
	Limits Limits
	// MCP, when set, serves the Model Context Protocol at wire.PathMCP on
	// TCP (nil: /mcp is not found).
	MCP MCP
}

// MCP serves the Model Context Protocol over streamable HTTP to the
// agents holding bearer tokens.
type MCP interface {
	// Handler serves the requests of p, whose token the server has
	// checked: each principal gets its own MCP server and sessions, so
	// that no token can use another agent's session.
	Handler(p Principal) http.Handler
	// Close ends every MCP session, so that their streams end; Shutdown
	// calls it before it waits for the requests in flight.
	Close()
}

// Limits bound what the server's clients may ask of it. A zero field takes
// the wire package's default of the same name.
type Limits struct {
	MaxBody         int64         // largest request body (413 beyond)
	MaxConcurrent   int           // actions running at once
	QueueWait       time.Duration // how long a request waits for a slot (503 beyond)
	MaxSubscribers  int           // event streams at once (503 beyond)
	SubscriberQueue int           // events waiting for one stream before it is dropped
	Replay          int           // recent events kept for resumed streams
	HeaderTimeout   time.Duration // to send a request's headers
	IdleTimeout     time.Duration // a kept-alive connection may sit unused
	BodyTimeout     time.Duration // to send a request's body
	Heartbeat       time.Duration // between comment lines on a quiet stream
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxBody <= 0 {
		l.MaxBody = wire.MaxBody
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = wire.MaxConcurrent
	}
	if l.MaxSubscribers <= 0 {
		l.MaxSubscribers = wire.MaxSubscribers
	}
	if l.SubscriberQueue <= 0 {
		l.SubscriberQueue = wire.SubscriberQueue
	}
	if l.Replay <= 0 {
		l.Replay = wire.Replay
	}
	def(&l.QueueWait, wire.QueueWait)
	def(&l.HeaderTimeout, wire.HeaderTimeout)
	def(&l.IdleTimeout, wire.IdleTimeout)
	def(&l.BodyTimeout, wire.BodyTimeout)
	def(&l.Heartbeat, wire.Heartbeat)
	return l
}

// Server serves one engine over HTTP. Make it with New; serve it with
// ServeUnix and ServeTCP (or mount Handler); stop it with Shutdown.
type Server struct {
	e    Engine
	inst string
	pid  int
	auth Authenticator
	log  *slog.Logger
	lim  Limits
	mcp  MCP

	// slots holds one token per action running (MaxConcurrent).
	slots chan struct{}
	// streams counts open event streams (MaxSubscribers).
	streams atomic.Int64
	hub     *hub
	// stopEvents ends the server's one subscription to the engine.
	stopEvents context.CancelFunc
	// done is closed by Shutdown: event streams end.
	done chan struct{}

	mu       sync.Mutex
	closed   bool
	servers  map[*http.Server]struct{}
	inflight sync.WaitGroup // requests being handled
}

// New returns a server of e. It subscribes to every event of the engine at
// once, so that a stream resumed later can replay what it missed.
func New(e Engine, opts Options) *Server {
	s := &Server{
		e:       e,
		inst:    opts.Instance,
		pid:     opts.PID,
		auth:    opts.Tokens,
		mcp:     opts.MCP,
		log:     opts.Logger,
		lim:     opts.Limits.withDefaults(),
		done:    make(chan struct{}),
		servers: map[*http.Server]struct{}{},
	}
	if s.inst == "" {
		s.inst = rand.Text()
	}
	if s.pid == 0 {
		s.pid = os.Getpid()
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.slots = make(chan struct{}, s.lim.MaxConcurrent)
	s.hub = newHub(s.lim.Replay, s.lim.SubscriberQueue)
	ctx, cancel := context.WithCancel(context.Background())
	s.stopEvents = cancel
	ch := e.SubscribeAll(ctx)
	go func() {
		for ev := range ch {
			s.hub.publish(ev)
		}
	}()
	return s
}

// Instance is this owner process's random id.
func (s *Server) Instance() string { return s.inst }

// Handler returns the server's routes. With tcp set every request needs a
// bearer token and acts as the token's agent; without, the caller is
// trusted (the Unix socket's file permissions admit only the local user)
// and the agent comes from the request.
func (s *Server) Handler(tcp bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer names the owner process, so that a client that
		// reconnects to a socket path can tell a new owner from the old,
		// and say which process it is. Over TCP only a caller with a
		// valid token is told (authenticate names it then).
		if !tcp {
			s.nameOwner(w)
		}
		s.serve(w, r, tcp)
	})
}

// ServeUnix serves the trusted routes on l until Shutdown (then it returns
// nil). It blocks.
func (s *Server) ServeUnix(l net.Listener) error { return s.serveOn(l, false) }

// ServeTCP serves the token routes on l until Shutdown (then it returns
// nil). It blocks.
func (s *Server) ServeTCP(l net.Listener) error { return s.serveOn(l, true) }

func (s *Server) serveOn(l net.Listener, tcp bool) error {
	srv := &http.Server{
		Handler:           s.Handler(tcp),
		ReadHeaderTimeout: s.lim.HeaderTimeout,
		IdleTimeout:       s.lim.IdleTimeout,
		// No WriteTimeout: event streams and long actions (a plan run)
		// write for as long as they last.
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelInfo),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.servers[srv] = struct{}{}
	s.mu.Unlock()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, ends the event streams and waits
// for the requests in flight (until ctx ends).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	servers := make([]*http.Server, 0, len(s.servers))
	for srv := range s.servers {
		servers = append(servers, srv)
	}
	s.mu.Unlock()
	if first {
		close(s.done)
		s.hub.close()
		s.stopEvents()
		if s.mcp != nil {
			s.mcp.Close()
		}
	}
	var all []error
	for _, srv := range servers {
		all = append(all, srv.Shutdown(ctx))
	}
	// Requests served through Handler alone (httptest, another mux) are
	// not any http.Server's of ours: wait for them here.
	idle := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
		all = append(all, ctx.Err())
	}
	return errors.Join(all...)
}

// enter counts a request in, unless the server is shutting down.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// serve routes one request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, tcp bool) {
	if !s.enter() {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, r, http.StatusServiceUnavailable, "", errs.New(errs.Unavailable,
			"the owner of the data directory is shutting down; nothing was run; retry in a moment").With(wire.DetailRan, false))
		return
	}
	defer s.inflight.Done()
	tw := &trackingWriter{ResponseWriter: w}
	defer s.recoverPanic(tw, r)
	var method string
	var handle func(http.ResponseWriter, *http.Request, Principal, bool)
	switch r.URL.Path {
	case wire.PathDo:
		method, handle = http.MethodPost, s.handleDo
	case wire.PathInfo:
		method, handle = http.MethodGet, s.handleInfo
	case wire.PathEvents:
		method, handle = http.MethodGet, s.handleEvents
	case wire.PathMCP:
		s.serveMCP(tw, r, tcp)
		return
	default:
		s.refuse(tw, r, http.StatusNotFound, "", errs.New(errs.NotFound,
			"no endpoint %s; the endpoints are POST %s, GET %s and GET %s", r.URL.Path, wire.PathDo, wire.PathInfo, wire.PathEvents).
			With("path", r.URL.Path))
		return
	}
	if r.Method != method {
		tw.Header().Set("Allow", method)
		s.refuse(tw, r, http.StatusMethodNotAllowed, "", errs.New(errs.Validation,
			"%s %s: this endpoint takes %s", r.Method, r.URL.Path, method).With("allow", method))
		return
	}
	p, ok := s.authenticate(tw, r, tcp)
	if !ok {
		return
	}
	handle(tw, r, p, tcp)
}

// serveMCP hands a request of wire.PathMCP to the MCP server of its
// token's agent. Only over TCP: the Unix socket has no tokens to say which
// agent an MCP session acts as, and a local agent runs engram mcp (stdio)
// instead.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, tcp bool) {
	if !tcp || s.mcp == nil {
		s.refuse(w, r, http.StatusNotFound, "", errs.New(errs.NotFound,
			"no endpoint %s here: MCP over HTTP is served on TCP only (engram serve --listen HOST:PORT); a local agent runs engram mcp, which speaks MCP on its standard input and output", r.URL.Path).
			With("path", r.URL.Path))
		return
	}
	p, ok := s.authenticate(w, r, tcp)
	if !ok {
		return
	}
	// A session's stream (a GET) may last hours: as an event stream
	// does, it ends once its token is revoked, asked every heartbeat.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		tick := time.NewTicker(s.lim.Heartbeat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if !s.stillValid(r, p.Agent) {
					cancel()
					return
				}
			}
		}
	}()
	s.mcp.Handler(p).ServeHTTP(w, r.WithContext(ctx))
}

// nameOwner sets the headers that name this owner process on an answer.
func (s *Server) nameOwner(w http.ResponseWriter) {
	w.Header().Set(wire.HeaderInstance, s.Instance())
	w.Header().Set(wire.HeaderPID, strconv.Itoa(s.pid))
}

// authenticate returns who a TCP request acts as, or refuses it with 401.
// Over the socket every request is trusted: the principal is empty and
// the request names its agent.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, tcp bool) (Principal, bool) {
	if !tcp {
		return Principal{}, true
	}
	unauthorized := func(msg string) (Principal, bool) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
		s.refuse(w, r, http.StatusUnauthorized, "", errs.New(errs.Permission, "%s; nothing was run", msg))
		return Principal{}, false
	}
	token, ok := bearer(r.Header.Get(wire.HeaderAuthorization))
	if !ok {
		return unauthorized("no bearer token: over TCP every request needs the header \"Authorization: Bearer TOKEN\" (engram token create --agent NAME prints one)")
	}
	if s.auth == nil {
		return unauthorized("this owner accepts no tokens over TCP")
	}
	p, err := s.auth.Authenticate(r.Context(), token)
	if err != nil || p.Agent == "" {
		// The error may say which of unknown or revoked; the client
		// learns only that the token does not work, and never the token
		// is echoed or logged.
		return unauthorized("the bearer token is not valid (unknown or revoked); ask the owner's user for a new one (engram token create)")
	}
	s.nameOwner(w)
	return p, true
}

// bearer takes the token out of an Authorization header.
func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	token := strings.TrimSpace(h[len(prefix):])
	return token, token != ""
}

// refuse answers a request the server will not run: status, a Failure
// body, and a log line (never with the token). It closes the connection:
// net/http would otherwise drain the body left unread, with no deadline,
// for as long as a slow client cares to send it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, agent string, err *errs.Error) {
	w.Header().Set("Connection", "close")
	s.log.Info("request refused", "method", r.Method, "path", r.URL.Path, "status", status,
		"kind", err.Kind, "error", err.Message, "remote", r.RemoteAddr, "agent", agent)
	writeJSON(w, status, wire.Failure{OK: false, Error: wire.Body(err)})
}

// writeJSON writes v as a JSON answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := action.MarshalJSON(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = action.MarshalJSON(wire.Failure{Error: wire.Body(errs.New(errs.Internal, "encoding the answer: %v", err))})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A failed write means the client went away; there is nobody to tell.
	_, _ = w.Write(append(b, '\n'))
}

// recoverPanic turns a handler's panic into a 500 Internal answer (when
// nothing was written yet), so that one bad request neither kills the
// owner nor leaves its client without an answer.
func (s *Server) recoverPanic(tw *trackingWriter, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	s.log.Error("request handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
	if tw.wrote {
		// Half an answer went out: cut the connection so that the client
		// sees it broken rather than a truncated answer.
		panic(http.ErrAbortHandler)
	}
	// As every refusal: what is left of the request is not read.
	tw.Header().Set("Connection", "close")
	writeJSON(tw, http.StatusInternalServerError, wire.Failure{Error: wire.Body(errs.New(errs.Internal,
		"the owner failed with a bug (panic: %v); the request may or may not have run; the owner's log has the details", p))})
}

// trackingWriter notes whether anything was written, for recoverPanic.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushing).
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// handleInfo answers GET /v1/info.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request, p Principal, tcp bool) {
	var info conn.Info
	var err error
	// Who asks: a token's agent over TCP; over the socket the agent the
	// request names, else the owner's.
	asker := r.URL.Query().Get("agent")
	switch {
	case tcp:
		asker = p.Agent
	case asker == "":
		asker = s.e.Agent()
	}
	if a, ok := s.e.(conn.InfoAsker); ok && (r.URL.Query().Get("counts") == "false" || asker != access.LegacyOwner) {
		// A client attaching needs the rest: the counts read every key
		// (seconds, and much of the store paged in, at a million items).
		// Only the operator is told them: they count every agent's
		// objects (engine.info's rule).
		no := false
		info, err = a.InfoWith(r.Context(), conn.InfoArgs{Counts: &no})
	} else {
		info, err = s.e.Info(r.Context())
	}
	if err != nil {
		e := errs.As(err)
		s.refuse(w, r, http.StatusInternalServerError, p.Agent, e)
		return
	}
	var list []wire.ActionSummary
	// A client that attached already knows them (more than half of the
	// answer's bytes, to encode and to decode).
	if r.URL.Query().Get("actions") != "false" {
		acts := s.e.Actions()
		list = make([]wire.ActionSummary, 0, len(acts))
		for _, a := range acts {
			list = append(list, wire.ActionSummary{Name: a.Name, ReadOnly: a.ReadOnly, Secret: a.Secret,
				Resend: a.Joinable && !a.ReadOnly && !a.Secret})
		}
		sortSummaries(list)
	}
	writeJSON(w, http.StatusOK, wire.InfoResponse{Info: info, PID: s.pid, Instance: s.inst, Now: s.e.Now(), ActionList: list})
}
