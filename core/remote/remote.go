// Package remote is a conn.Conn that talks to the engram process owning a
// data directory, over the wire protocol of core/wire: HTTP/1.1 with JSON
// bodies on the owner's Unix socket, or on TCP with a bearer token. Every
// face that works over conn.Conn (the console, the batch runner) works the
// same over a remote connection as in process.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/wire"
)

// Options says where the owner is and who acts.
type Options struct {
	// Socket is the path of the owner's Unix socket (DATA/engram.sock).
	Socket string
	// Addr is host:port of an owner serving TCP; Token is then required.
	Addr string
	// Token is the bearer token sent on every TCP request. It never
	// appears in an error message or a log.
	Token string
	// Agent is the default principal, sent as DoRequest.Agent when a
	// request names none; empty means the owner's agent.
	Agent string
	// Timeout bounds dialling the owner and Dial's first request (default
	// 2s); the requests themselves are bounded only by their ctx.
	Timeout time.Duration
}

// infoAction is the action Info stands for, as errors name it.
const infoAction = "engine.info"

// String shows the options with the token left out, so that printing
// them (%v, %+v) never shows it.
func (o Options) String() string {
	token := ""
	if o.Token != "" {
		token = "(set)"
	}
	return fmt.Sprintf("{Socket:%s Addr:%s Token:%s Agent:%s Timeout:%v}", o.Socket, o.Addr, token, o.Agent, o.Timeout)
}

// GoString is String, for %#v.
func (o Options) GoString() string { return "remote.Options" + o.String() }

// DefaultTimeout is Options.Timeout when it is zero.
const DefaultTimeout = 2 * time.Second

// Conn is a connection to the owner of a data directory. It is safe for
// concurrent use; requests share a pool of kept-alive connections.
type Conn struct {
	opts      Options
	transport *http.Transport
	client    *http.Client
	base      string // scheme and host of every request's URL
	where     string // how messages name the data directory

	info    wire.InfoResponse
	actions map[string]bool
	names   []string
	offset  time.Duration // owner's clock minus ours, estimated at Dial

	// answeredBy is the pid of the owner that sent the last answer, and
	// replaced is set once an owner other than the dialed one answered
	// (noteAnswer).
	answeredBy atomic.Int64
	replaced   atomic.Bool

	// done is cancelled by Close: subscriptions end and later calls fail.
	done   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool           // set by Close, under mu: no new subscriptions
	subs   sync.WaitGroup // the subscriptions' goroutines
	// summaries are the owner's actions by name (read-only, secret).
	summaries map[string]wire.ActionSummary
}

var _ conn.Conn = (*Conn)(nil)

// Dial connects to the owner and fetches its info (pid, instance, clock,
// actions). If nothing answers, the error is of kind errs.Unavailable.
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	c := &Conn{opts: opts}
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}
	switch {
	case opts.Socket != "" && opts.Addr != "":
		return nil, errs.New(errs.Validation, "remote: give either a socket or an address, not both").With("field", "addr")
	case opts.Socket != "":
		socket := opts.Socket
		c.base = "http://engram"
		c.where = "this data directory"
		c.transport = newTransport(func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socket)
		})
	case opts.Addr != "":
		if opts.Token == "" {
			return nil, errs.New(errs.Validation, "remote: a token is required to reach %s over TCP (engram token create --agent NAME prints one)", opts.Addr).With("field", "token")
		}
		addr := opts.Addr
		c.base = "http://" + addr
		c.where = "the data directory served at " + addr
		c.transport = newTransport(func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", addr)
		})
	default:
		return nil, errs.New(errs.Validation, "remote: no socket and no address to reach the owner at").With("field", "socket")
	}
	c.client = &http.Client{Transport: c.transport}
	c.done, c.cancel = context.WithCancel(context.Background())

	dctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	sent := time.Now()
	info, err := c.fetchInfo(dctx, false, true)
	if err != nil {
		c.transport.CloseIdleConnections()
		c.cancel()
		// A timeout of our own means nothing answered in time; only the
		// caller's ctx ending is an interruption.
		return nil, c.transportError(ctx, err, func() *errs.Error {
			return errs.New(errs.Unavailable, "no engram answers at %s: %v", c.endpoint(), err).
				With("endpoint", c.endpoint())
		})
	}
	got := time.Now()
	// The owner read its clock about halfway through the round trip.
	c.offset = info.Now.Sub(sent.Add(got.Sub(sent) / 2))
	c.info = info
	c.answeredBy.Store(int64(info.PID))
	c.actions = make(map[string]bool, len(info.ActionList))
	c.summaries = make(map[string]wire.ActionSummary, len(info.ActionList))
	for _, a := range info.ActionList {
		c.actions[a.Name] = true
		c.summaries[a.Name] = a
		c.names = append(c.names, a.Name)
	}
	sort.Strings(c.names)
	return c, nil
}

func newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		// Never a proxy from the environment: the token would go to it.
		Proxy:       nil,
		DialContext: dial,
		// Bodies are small and the link is local or trusted; compression
		// would cost time and hold back the event stream.
		DisableCompression:  true,
		MaxIdleConns:        wire.MaxConcurrent,
		MaxIdleConnsPerHost: wire.MaxConcurrent,
		IdleConnTimeout:     wire.IdleTimeout / 2, // before the owner closes them
	}
}

// fetchInfo gets /v1/info, with engine.info's counts or not (they read
// every key of the owner's store); its errors are roundTrip's.
func (c *Conn) fetchInfo(ctx context.Context, counts, actions bool) (wire.InfoResponse, error) {
	var info wire.InfoResponse
	q := url.Values{}
	if !counts {
		q.Set("counts", "false")
	}
	if !actions {
		q.Set("actions", "false")
	}
	if c.opts.Agent != "" {
		q.Set("agent", c.opts.Agent) // the counts are the operator's alone
	}
	path := wire.PathInfo
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	body, err := c.roundTrip(ctx, http.MethodGet, path, nil)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return info, errs.New(errs.Internal, "the owner's %s does not decode: %v", wire.PathInfo, err)
	}
	return info, nil
}

// endpoint names where the owner was looked for, for error messages.
func (c *Conn) endpoint() string {
	if c.opts.Socket != "" {
		return c.opts.Socket
	}
	return c.opts.Addr
}

// statusError is a non-200 answer.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// errClosed is the failure of a request made after Close: it was never
// sent.
var errClosed = errors.New("the connection is closed")

// transportFailure marks an error of the transport: nothing or only part
// of an answer arrived.
type transportFailure struct{ err error }

func (e *transportFailure) Error() string { return e.err.Error() }
func (e *transportFailure) Unwrap() error { return e.err }

// roundTrip sends one request and reads the whole answer. A non-200
// answer is a *statusError carrying the owner's error; a failure of the
// transport is a *transportFailure.
func (c *Conn) roundTrip(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	if c.done.Err() != nil {
		return nil, &transportFailure{errClosed}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, errs.New(errs.Internal, "remote: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, &transportFailure{err}
	}
	defer func() { _ = resp.Body.Close() }()
	c.noteAnswer(resp.Header)
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &transportFailure{err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{resp.StatusCode, failure(resp.StatusCode, data)}
	}
	return data, nil
}

// noteAnswer notes which owner sent an answer (wire.HeaderInstance and
// wire.HeaderPID). A new owner that serves the same socket path answers
// the requests sent after the old one died: the process that answered is
// then another than the one dialed. Answers during Dial, before the
// dialed owner is known, say nothing.
func (c *Conn) noteAnswer(h http.Header) {
	inst := h.Get(wire.HeaderInstance)
	if inst == "" || c.info.Instance == "" || inst == c.info.Instance {
		return
	}
	c.replaced.Store(true)
	if pid, err := strconv.Atoi(h.Get(wire.HeaderPID)); err == nil && pid > 0 {
		c.answeredBy.Store(int64(pid))
	}
}

// AnsweredBy is the process id of the owner that sent the last answer:
// OwnerPID, until another owner serves the same socket path and answers
// in the dialed one's place.
func (c *Conn) AnsweredBy() int { return int(c.answeredBy.Load()) }

// Replaced reports whether another owner than the dialed one has
// answered: the dialed one is gone, and a client should move to the new
// one (core/attach does) to follow its events.
func (c *Conn) Replaced() bool { return c.replaced.Load() }

func (c *Conn) authorize(req *http.Request) {
	if c.opts.Addr != "" {
		req.Header.Set(wire.HeaderAuthorization, "Bearer "+c.opts.Token)
	}
}

// failure is the error a non-200 answer carries: its wire.Failure, or one
// made from the status when the body is not one.
func failure(status int, body []byte) error {
	var f wire.Failure
	if err := json.Unmarshal(body, &f); err == nil && f.Error != nil && f.Error.Kind != "" {
		return f.Error.Err()
	}
	kind := errs.Internal
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		kind = errs.Permission
	case http.StatusRequestEntityTooLarge:
		kind = errs.Budget
	case http.StatusBadRequest:
		kind = errs.Parse
	case http.StatusServiceUnavailable:
		kind = errs.Unavailable
	}
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	return errs.New(kind, "the owner answered %d %s: %s", status, http.StatusText(status), snippet).With("status", status)
}

// transportError classifies a failed round trip: a status error is the
// owner's own; a cancelled ctx is "interrupted" (as in process); anything
// else means the owner went away, described by gone.
func (c *Conn) transportError(ctx context.Context, err error, gone func() *errs.Error) error {
	var se *statusError
	if errors.As(err, &se) {
		return se.err
	}
	var tf *transportFailure
	if !errors.As(err, &tf) {
		return err
	}
	if ctx.Err() != nil {
		return interrupted(ctx.Err())
	}
	return gone()
}

func interrupted(err error) error { return errs.New(errs.Internal, "interrupted: %w", err) }

// Do runs one action at the owner and returns its result. The request's
// events, when asked for with OnEvent, arrive with the answer and are
// passed to OnEvent, in order, before Do returns.
func (c *Conn) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	dr := wire.DoRequest{Action: req.Action, Args: req.Args, Agent: req.Principal, Turn: req.Turn, At: req.At,
		Session: req.Session, IdempotencyKey: req.IdempotencyKey, Events: req.OnEvent != nil, Client: req.Client}
	if dr.Agent == "" {
		dr.Agent = c.opts.Agent
	}
	if len(bytes.TrimSpace(dr.Args)) == 0 {
		dr.Args = nil
	}
	body, err := json.Marshal(dr)
	if err != nil {
		return nil, errs.New(errs.Validation, "args: %s's arguments are not valid JSON (%v); give a JSON object", req.Action, err).
			With("field", "args")
	}
	data, err := c.roundTrip(ctx, http.MethodPost, wire.PathDo, body)
	if err != nil {
		return nil, c.transportError(ctx, err, func() *errs.Error { return c.gone(req.Action, err) })
	}
	var resp wire.DoResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, errs.New(errs.Internal, "%s: the owner's answer does not decode: %v", req.Action, err)
	}
	if req.OnEvent != nil {
		for _, ev := range resp.Events {
			req.OnEvent(ev)
		}
	}
	if !resp.OK {
		if resp.Error == nil {
			return nil, errs.New(errs.Internal, "%s: the owner answered ok:false without an error", req.Action)
		}
		return nil, resp.Error.Err()
	}
	return resp.Result, nil
}

// detailRan is the detail that says a request never reached the owner.
const detailRan = wire.DetailRan

// Busy says whether err is an owner's answer that it was too busy to run
// the request: nothing ran, and the owner is alive.
func Busy(err error) bool {
	e := errs.As(err)
	busy, _ := e.Details[wire.DetailBusy].(bool)
	return e.Kind == errs.Unavailable && busy
}

// DidNotRun says whether err is the Unavailable error of a request that
// never reached the owner, or that it refused: it is safe to send again.
func DidNotRun(err error) bool {
	e := errs.As(err)
	ran, ok := e.Details[detailRan].(bool)
	return e.Kind == errs.Unavailable && ok && !ran
}

// gone is the error of a request that failed because the owner went
// away (err says how). A request that never reached the owner did not
// run; one in flight may or may not have committed.
func (c *Conn) gone(act string, err error) *errs.Error {
	// Only a request refused before it was sent did not run: one in
	// flight when another caller closed the connection may have.
	if errors.Is(err, errClosed) {
		return errs.New(errs.Unavailable, "the connection to the engram that owns %s is closed; %s did not run", c.where, act).
			With("action", act).With(detailRan, false)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return errs.New(errs.Unavailable, "the engram that owns %s (pid %d) is gone; %s did not run: run it again once an engram owns it",
			c.where, c.info.PID, act).With("pid", c.info.PID).With("action", act).With(detailRan, false)
	}
	return errs.New(errs.Unavailable, "the engram that owns %s (pid %d) went away while running %s; it may or may not have committed: run it again with the same idempotency_key",
		c.where, c.info.PID, act).With("pid", c.info.PID).With("action", act)
}

// Info asks the owner for engine.info's report (not its action list,
// which the connection learnt when it connected).
func (c *Conn) Info(ctx context.Context) (conn.Info, error) {
	info, err := c.fetchInfo(ctx, true, false)
	if err != nil {
		return conn.Info{}, c.transportError(ctx, err, func() *errs.Error { return c.gone(infoAction, err) })
	}
	return info.Info, nil
}

// InfoWith asks the owner for engine.info with args (conn.InfoAsker), as
// an action: the console's first frame asks without the counts.
func (c *Conn) InfoWith(ctx context.Context, args conn.InfoArgs) (conn.Info, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return conn.Info{}, errs.New(errs.Internal, "engine.info's arguments do not encode: %v", err)
	}
	res, err := c.Do(ctx, conn.Request{Action: infoAction, Args: raw})
	if err != nil {
		return conn.Info{}, err
	}
	var info conn.Info
	if err := json.Unmarshal(res, &info); err != nil {
		return conn.Info{}, errs.New(errs.Internal, "the owner's engine.info does not decode: %v", err)
	}
	return info, nil
}

// Retry says how a request for the named action may be sent again after
// its owner went away in the middle (wire.ActionSummary): a read freely;
// a write whose effect is one commit (keyed) with an idempotency key.
// Other writes and unknown actions: not at all.
func (c *Conn) Retry(name string) (read, keyed bool) {
	a := c.summaries[name]
	return a.ReadOnly, a.Resend
}

// CheckAction answers from the owner's action list fetched at Dial, with
// the message the engine gives for a name it does not have.
func (c *Conn) CheckAction(name string) error {
	if c.actions[name] {
		return nil
	}
	if near := action.Nearest(name, c.names); near != "" {
		return errs.New(errs.UnknownAction, "unknown action %q; did you mean %q? (actions.list lists them all)", name, near).
			With("nearest", near)
	}
	return errs.New(errs.UnknownAction, "unknown action %q (actions.list lists them all)", name)
}

// Agent is the principal acting when a request names none: Options.Agent,
// else the owner's agent.
func (c *Conn) Agent() string {
	if c.opts.Agent != "" {
		return c.opts.Agent
	}
	return c.info.Agent
}

// Now estimates the owner's engine clock: our clock plus the offset seen
// at Dial.
func (c *Conn) Now() time.Time { return time.Now().Add(c.offset) }

// OwnerPID is the owner's process id.
func (c *Conn) OwnerPID() int { return c.info.PID }

// Instance is the owner process's random id (event ids carry it).
func (c *Conn) Instance() string { return c.info.Instance }

// Close ends every subscription and closes idle connections; later calls
// fail with Unavailable. Safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.subs.Wait()
	c.transport.CloseIdleConnections()
	return nil
}

// String names the owner without the token.
func (c *Conn) String() string {
	return fmt.Sprintf("remote(%s, pid %d)", c.endpoint(), c.info.PID)
}
