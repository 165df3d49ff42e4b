// Package wire is engram's wire protocol (docs/protocol.md): the paths,
// headers, limits and JSON bodies that the owner of a data directory serves
// (core/server) and its clients speak (core/remote). HTTP/1.1 with JSON
// bodies, over the data directory's Unix socket or over TCP with a bearer
// token. Nothing here runs anything; both ends share these declarations so
// that they cannot drift apart.
package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// The endpoints.
const (
	// PathDo runs one action: POST a DoRequest, get a DoResponse.
	PathDo = "/v1/do"
	// PathEvents streams events as Server-Sent Events: GET, with optional
	// ?kind=NAME parameters (repeatable) and a Last-Event-ID header (or
	// ?after=ID) to resume after a reconnect.
	PathEvents = "/v1/events"
	// PathInfo returns an InfoResponse: GET.
	PathInfo = "/v1/info"
	// PathMCP serves the Model Context Protocol over streamable HTTP
	// (POST, GET and DELETE as MCP's transport says), on TCP only: every
	// request needs a bearer token and acts as its agent.
	PathMCP = "/mcp"
)

// SocketName is the owner's Unix socket, inside the data directory.
const SocketName = "engram.sock"

// Limits of the protocol.
const (
	// MaxBody is the largest request body the owner reads; a larger one
	// gets 413 and runs nothing.
	MaxBody = 8 << 20
	// MaxConcurrent is how many action requests the owner runs at once;
	// more wait for a slot, and one that waits longer than QueueWait gets
	// 503 with kind Unavailable ("busy") and runs nothing.
	MaxConcurrent = 64
	// QueueWait is how long a request may wait for a slot.
	QueueWait = 10 * time.Second
	// MaxSubscribers is how many event streams the owner serves at once;
	// one more gets 503.
	MaxSubscribers = 64
	// SubscriberQueue is how many events may wait for a slow subscriber:
	// past it the subscriber gets a final "engram.dropped" event and its
	// stream ends (it reconnects and resumes), so that it never holds up
	// a writer.
	SubscriberQueue = 4096
	// Replay is how many recent events the owner keeps for subscribers
	// that reconnect with Last-Event-ID.
	Replay = 4096
	// HeaderTimeout bounds how long a client may take to send a request's
	// headers (a slowloris client is cut off); IdleTimeout how long a kept-
	// alive connection may sit unused; BodyTimeout how long reading a
	// request's body may take.
	HeaderTimeout = 5 * time.Second
	IdleTimeout   = 2 * time.Minute
	BodyTimeout   = 30 * time.Second
	// Heartbeat is how often an idle event stream gets a comment line, so
	// that proxies and the client can tell a quiet stream from a dead one.
	Heartbeat = 15 * time.Second
)

// Stream event names the owner adds to the engine's own events.
const (
	// EventDropped ends a stream whose reader fell too far behind.
	EventDropped = "engram.dropped"
	// EventGap starts a resumed stream whose Last-Event-ID is older than
	// the owner remembers, or from another owner: the reader missed events
	// and should reload what it shows.
	EventGap = "engram.gap"
)

// DoRequest is the body of POST /v1/do.
type DoRequest struct {
	// Action is the action's name, e.g. "cortex.get".
	Action string `json:"action"`
	// Args is the action's arguments (a JSON object; absent for none).
	Args json.RawMessage `json:"args,omitempty"`
	// Agent is the principal acting. Over the Unix socket: absent means the
	// owner's agent. Over TCP: absent or the token's agent.
	Agent string `json:"agent,omitempty"`
	// Turn the action belongs to; may be absent.
	Turn string `json:"turn,omitempty"`
	// At pins the engine clock for this request only (RFC 3339).
	At *time.Time `json:"at,omitempty"`
	// Session names the script this request is a step of (conn.Request).
	Session string `json:"session,omitempty"`
	// IdempotencyKey makes the request safe to send again (conn.Request).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Events asks for the events the request caused, in the response.
	// The request then runs alone.
	Events bool `json:"events,omitempty"`
	// Client is the agent client (an MCP session) the request is made
	// for (conn.Request.Client): the owner counts and traces its calls.
	Client *conn.ClientCall `json:"client,omitempty"`
}

// Request is the conn.Request this body asks for (OnEvent aside).
func (d DoRequest) Request() conn.Request {
	return conn.Request{Action: d.Action, Args: d.Args, Principal: d.Agent, Turn: d.Turn, At: d.At,
		Session: d.Session, IdempotencyKey: d.IdempotencyKey, Client: d.Client}
}

// DoResponse is the answer to POST /v1/do: the result object of a batch
// step (docs/batch.md), with the events the request caused when asked.
type DoResponse struct {
	Action    string          `json:"action,omitempty"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *ErrorBody      `json:"error,omitempty"`
	ElapsedUS int64           `json:"elapsed_us"`
	Events    []events.Event  `json:"events,omitempty"`
}

// ErrorBody is an error as the batch contract prints it.
type ErrorBody struct {
	Kind    errs.Kind      `json:"kind"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Body is err's ErrorBody.
func Body(err error) *ErrorBody {
	e := errs.As(err)
	return &ErrorBody{Kind: e.Kind, Message: e.Message, Details: e.Details}
}

// Err is the error an ErrorBody stands for.
func (b *ErrorBody) Err() error {
	e := errs.New(b.Kind, "%s", b.Message)
	for k, v := range b.Details {
		e = e.With(k, v)
	}
	return e
}

// Failure is the body of every answer that is not 200: a request the
// owner refused before running anything (401, 403, 404, 405, 413, 400,
// 503).
type Failure struct {
	OK    bool       `json:"ok"` // always false
	Error *ErrorBody `json:"error"`
}

// InfoResponse is the body of GET /v1/info: engine.info's result, and
// what a client needs to know about the owner.
type InfoResponse struct {
	conn.Info
	// PID is the owner's process id.
	PID int `json:"pid"`
	// Instance is a random id of this owner process: event ids carry it,
	// so a stream resumed at another owner knows it missed events.
	Instance string `json:"instance"`
	// Now is the owner's engine clock.
	Now time.Time `json:"now"`
	// ActionList is every action the owner has, so that a client can
	// answer CheckAction without asking. Absent when the request said
	// actions=false (a client that attached already knows them).
	ActionList []ActionSummary `json:"action_list,omitempty"`
}

// ActionSummary names an action and says how a client may send it again
// after its owner went away in the middle: a read freely; a write whose
// effect is one commit (Resend) with the same idempotency_key; any other
// write not at all (a plan run, a chat turn: it may have done part of its
// work). Secret: its result holds a secret, so it takes no key.
type ActionSummary struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"read_only"`
	Secret   bool   `json:"secret,omitempty"`
	Resend   bool   `json:"resend,omitempty"`
}

// HeaderAuthorization carries "Bearer TOKEN" on TCP.
const HeaderAuthorization = "Authorization"

// Details of an Unavailable error that say nothing ran, so the request
// may be sent again at once: DetailRan is false; DetailBusy is true when
// the owner is alive but had no slot free (send it again in a moment, to
// the same owner).
const (
	DetailRan  = "ran"
	DetailBusy = "busy"
)

// HeaderInstance is on every answer over the socket, and over TCP on
// those to a valid token: the owner's Instance.
const HeaderInstance = "Engram-Instance"

// HeaderPID is on the same answers as HeaderInstance: the owner's process
// id (InfoResponse.PID),
// so that a client whose request reached a new owner on the same socket
// path can say which process answered.
const HeaderPID = "Engram-Pid"

// EventID is an event's SSE id: the owner's Instance and the event's Seq,
// "INSTANCE:SEQ". A stream resumed with the id of another instance (an
// owner that has since died) starts with EventGap.
func EventID(instance string, seq uint64) string {
	return instance + ":" + strconv.FormatUint(seq, 10)
}

// ParseEventID splits an EventID; ok is false for anything else.
func ParseEventID(id string) (instance string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	return id[:i], seq, err == nil
}
