package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
)

// HTTPOptions configure an HTTP.
type HTTPOptions struct {
	// Version is engram's version, for the initialize handshake.
	Version string
	// Logger gets what the go-sdk logs (nil: nothing).
	Logger *slog.Logger
	// SessionTimeout closes a session no request has used for this long
	// (its client is then listed as disconnected); 0: DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxBody is the largest request body read (0: the go-sdk's default).
	MaxBody int64
}

// DefaultSessionTimeout is how long an idle MCP session over HTTP lives:
// a client that went away without ending its session is listed as
// disconnected after it.
const DefaultSessionTimeout = 30 * time.Minute

// HTTP serves MCP over streamable HTTP to many agents: each principal (an
// agent, read-only or not) gets its own Server and its own sessions, made
// on its first request, so that a session can be used only by the agent
// whose token made it.
type HTTP struct {
	c    conn.Conn
	opts HTTPOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	servers map[principal]*httpServer
}

// principal is who a handler serves.
type principal struct {
	agent    string
	readOnly bool
}

// httpServer is one principal's server and handler.
type httpServer struct {
	s       *Server
	handler http.Handler
	ended   func()
}

// NewHTTP returns MCP over streamable HTTP for the engine c (the owner's).
func NewHTTP(c conn.Conn, opts HTTPOptions) *HTTP {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &HTTP{c: c, opts: opts, ctx: ctx, cancel: cancel, servers: map[principal]*httpServer{}}
}

// Handler returns the handler of agent's MCP server: every call through
// it acts as agent, and a read-only one exposes only the read tools. The
// caller has checked that the request may act as agent (its token).
func (h *HTTP) Handler(agent string, readOnly bool) http.Handler {
	p := principal{agent, readOnly}
	h.mu.Lock()
	defer h.mu.Unlock()
	if hs, ok := h.servers[p]; ok {
		return hs.handler
	}
	s := New(h.c, Options{Agent: agent, ReadOnly: readOnly, Transport: "http", Version: h.opts.Version})
	hs := &httpServer{s: s, ended: s.DisconnectWhenEnded()}
	hs.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP }, &mcp.StreamableHTTPOptions{
		Logger: h.opts.Logger, SessionTimeout: h.opts.SessionTimeout, MaxRequestBodyBytes: h.opts.MaxBody})
	h.servers[p] = hs
	h.wg.Go(func() { s.Watch(h.ctx) })
	return hs.handler
}

// Close ends every session (their clients are marked disconnected),
// stops the work their calls left running (plans run_plan started) and
// stops watching for resource changes. It waits up to ten seconds for the
// marking.
func (h *HTTP) Close() {
	h.cancel()
	h.mu.Lock()
	servers := make([]*httpServer, 0, len(h.servers))
	for _, hs := range h.servers {
		servers = append(servers, hs)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for _, hs := range servers {
			for ss := range hs.s.MCP.Sessions() {
				_ = ss.Close() // a session that fails to close is cut off with its connection
			}
			hs.ended()
			hs.s.Close()
		}
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
