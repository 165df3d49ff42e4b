// Package conn is the one boundary between engram's faces (the console,
// the batch runner, and network clients) and an engine: a narrow Conn
// interface and a typed Call over it. The engine implements Conn in
// process; a remote implementation speaks the same interface over a wire,
// so nothing here assumes shared memory: requests, results and events are
// values that survive JSON.
package conn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// Request is one action to run.
type Request struct {
	// Action is the action's name, e.g. "cortex.get".
	Action string `json:"action"`
	// Args is the action's arguments as a JSON object (empty for none).
	Args json.RawMessage `json:"args,omitempty"`
	// Principal acting; the connection's agent when empty.
	Principal string `json:"principal,omitempty"`
	// Turn the action belongs to; may be empty.
	Turn string `json:"turn,omitempty"`
	// At, when set, pins the engine clock to this instant for this request
	// only: the request runs alone (no other request runs while it does),
	// so no other request sees the pinned time.
	At *time.Time `json:"at,omitempty"`
	// Session names the script this request is a step of, as
	// "NAME/RUN": NAME is usually the script's agent, RUN is unique to
	// one run of the script. A step with At draws ids from its session's
	// own generator, so that a script with `at` on every step prints the
	// same bytes whatever other clients do at the same time. (A step
	// without At reads the real clock: its ids cannot repeat anyway, and
	// it runs side by side with other requests.)
	Session string `json:"session,omitempty"`
	// IdempotencyKey, when set, makes the request safe to send again: the
	// engine records the key with the request's first write, and a second
	// request with the same key returns the first one's result instead of
	// running again.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// OnEvent, when set, receives every event the request causes (its
	// background work's too), in order, before Do returns. The request
	// then runs alone, so that the events are its own. Not sent over a
	// wire: a remote connection asks for the events and calls OnEvent
	// when the answer comes.
	OnEvent func(events.Event) `json:"-"`
	// Client, when set, is the agent client (an MCP session) the request
	// is made for: the engine counts the client's calls, traces the
	// request as made via the client's face, and lists the client in
	// clients.list. It describes; it grants nothing (Principal decides
	// what the request may do).
	Client *ClientCall `json:"client,omitempty"`
}

// ClientCall names the connected agent client a request is made for, and
// which of its calls: one call (an MCP tool call) may take more than one
// request. Every request carries the whole description, so an owner that
// took over from another learns the client from its next request.
type ClientCall struct {
	// Session is unique to one connection of the client (an MCP session).
	Session string `json:"session"`
	// Via is the face the client uses: "mcp".
	Via string `json:"via"`
	// Name and Version are what the client said of itself when it
	// connected (MCP's clientInfo).
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Transport is how the client is connected: "stdio" or "http".
	Transport string `json:"transport,omitempty"`
	// PID is the process serving the client's connection (an engram mcp
	// process), so that the owner can tell when it is gone; 0 when the
	// owner serves it itself.
	PID int `json:"pid,omitempty"`
	// Tool is what the client called: an MCP tool, resource or prompt.
	Tool string `json:"tool"`
	// Call is unique to one call of the session: requests with the same
	// Call are one call.
	Call string `json:"call"`
}

// Exclusive says whether the request must run alone: it pins the clock
// or wants its own events.
func (r Request) Exclusive() bool {
	return r.At != nil || r.OnEvent != nil
}

// Conn is a connection to an engine: everything a face may do with it.
type Conn interface {
	// Do runs one action and returns its JSON result. Every error it
	// returns has an *errs.Error in its chain.
	Do(ctx context.Context, req Request) (json.RawMessage, error)
	// Subscribe is SubscribeAs for Agent().
	Subscribe(ctx context.Context, kinds ...string) <-chan events.Event
	// SubscribeAs returns the engine's events of the given kinds (every
	// kind when none is given) that principal may see, until ctx is
	// cancelled, when the channel closes: an event about an object reaches
	// only those who may read it (events.Audience). Final events are never
	// dropped; a subscriber that falls behind may miss progress events,
	// never the newest.
	SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event
	// Info is what engine.info reports: version, store, model, counts.
	Info(ctx context.Context) (Info, error)
	// CheckAction returns nil if the engine has the named action, else an
	// UnknownAction error saying why (a build may leave a subsystem out).
	// It answers from what the connection knows (a remote connection
	// learns the engine's actions when it connects), so the console may ask
	// it while handling a key.
	CheckAction(name string) error
	// Agent is the principal acting when a request names none.
	Agent() string
	// Now is the engine clock's time, for showing how long ago things
	// happened; a remote connection estimates it from the server's offset.
	Now() time.Time
}

// Call runs the action ref names with args and decodes its result. The Ref
// ties the name to the action's args and result types, so a call with the
// wrong args, or reading the result as the wrong type, does not compile.
// Encoding and decoding happen here, at the edge, once: a result that is
// not the JSON of an R is a clear error naming the action and the type.
func Call[A, R any](ctx context.Context, c Conn, ref action.Ref[A, R], args A) (R, error) {
	return CallAs(ctx, c, Request{}, ref, args)
}

// CallAs is Call with the request's principal and turn taken from req (its
// Action and Args are ref's and args).
func CallAs[A, R any](ctx context.Context, c Conn, req Request, ref action.Ref[A, R], args A) (R, error) {
	var out R
	req.Action = ref.Name()
	raw, err := action.MarshalJSON(args)
	if err != nil {
		return out, errs.New(errs.Validation, "%s: encoding its arguments (%T): %v", req.Action, args, err)
	}
	req.Args = raw
	res, err := c.Do(ctx, req)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return out, errs.New(errs.Internal, "%s: its result does not decode as %T: %v", req.Action, out, err)
	}
	return out, nil
}

// Info is engine.info's result.
type Info struct {
	Version    string `json:"version"`
	Store      string `json:"store"`
	DataDir    string `json:"data_dir,omitempty"`
	SyncWrites bool   `json:"sync_writes"`
	Agent      string `json:"agent"`
	Provider   string `json:"provider"`
	Model      string `json:"model,omitempty"`
	EmbedModel string `json:"embed_model,omitempty"`
	Tokenizer  string `json:"tokenizer"`
	Actions    int    `json:"actions"`
	// Counts are absent when InfoArgs.Counts asked for none.
	Counts map[string]map[string]int `json:"counts,omitempty"`
	// Empty says the store holds nothing a person made: no goals,
	// conversations, threads, memories or plans (the console offers its
	// tour then). Unlike the counts it reads a key or two, not every key.
	// False when one of those records cannot be read.
	Empty bool `json:"empty"`
	// Embeddings, present when an embedding model is configured (or texts
	// still wait for vectors), tells of the background embedding queue.
	Embeddings *EmbeddingsInfo `json:"embeddings,omitempty"`
	// ReadOnly, when set, says why the store takes no writes: its file
	// system was too full when engram opened it. Reads work; every write
	// is refused with StorageFull until engram restarts with room.
	ReadOnly string `json:"read_only,omitempty"`
}

// EmbeddingsInfo is engine.info's view of the embedding queue: writes
// leave their texts to embed in the background, in batches; a failed call
// is retried with backoff, and the texts stay searchable by their words
// meanwhile.
type EmbeddingsInfo struct {
	// Model is the configured embedding model; Dimension its vectors'
	// dimension (0 until it made one in this run).
	Model     string `json:"model"`
	Dimension int    `json:"dimension"`
	// Pending counts the texts waiting for a vector; Failed those of them
	// whose last call failed; Retried the texts sent again after a
	// failure; Embedded the vectors stored in this run, Cached those of
	// them found in the cache by text hash, without a call. They, and the
	// fields below, are every agent's texts: only the operator (local) is
	// told them, and only when not zero.
	Pending  int `json:"pending,omitempty"`
	Failed   int `json:"failed,omitempty"`
	Retried  int `json:"retried,omitempty"`
	Embedded int `json:"embedded,omitempty"`
	Cached   int `json:"cached,omitempty"`
	// LastError is the last failure, while texts wait for a retry.
	LastError string `json:"last_error,omitempty"`
	// NextRetry is when the failed texts are tried again.
	NextRetry *time.Time `json:"next_retry,omitempty"`
	// Mismatched counts the stored vectors searches skipped because their
	// model or dimension differs from the query's; Mismatch says
	// the last such, and that embeddings.reembed replaces them.
	Mismatched int    `json:"mismatched,omitempty"`
	Mismatch   string `json:"mismatch,omitempty"`
}

// InfoAsker is a connection that asks engine.info with its arguments: the
// console's first frame asks without the counts. A connection without it
// is asked Info, counts and all.
type InfoAsker interface {
	InfoWith(ctx context.Context, args InfoArgs) (Info, error)
}

// InfoArgs are engine.info's arguments.
type InfoArgs struct {
	// Counts false leaves the counts out: they read every key of their
	// kinds, seconds at a million items, and the console's first frame
	// needs the rest only (issue 17: open to first frame ≤ 1 s).
	Counts *bool `json:"counts,omitempty" help:"false leaves out counts, which read every item, mutation and trace entry (slow on a large store); default true"`
}

// StoreLabel is "in-memory" or the data directory: how the console names
// the store.
func (i Info) StoreLabel() string {
	if i.Store == "in-memory" || i.DataDir == "" {
		return "in-memory"
	}
	return i.DataDir
}

// ActionInfo describes one action in actions.list.
type ActionInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	ReadOnly    bool           `json:"read_only"`
	Args        []action.Field `json:"args"`
}

// ListActionsArgs is actions.list's arguments.
type ListActionsArgs struct {
	Namespace string `json:"namespace,omitempty" help:"only actions whose name starts with this namespace, e.g. \"turn\""`
}

// ListActionsResult is actions.list's result.
type ListActionsResult struct {
	Actions []ActionInfo `json:"actions"`
}

// Where says which engram process serves a connection.
type Where struct {
	// Owner: the engine runs in this process, which owns the data
	// directory (and serves it to other engrams).
	Owner bool `json:"owner"`
	// PID is the owner's process id (this process's when Owner).
	PID int `json:"pid"`
}

// Locator is a connection that can say where it is served from. The
// console shows it in its header ("owner", "attached to pid N").
type Locator interface {
	Where() Where
}

// OwnerChange is the payload of EventOwnerChanged.
type OwnerChange struct {
	// Where the connection is served from now.
	Where
	// PreviousPID is the owner that went away.
	PreviousPID int `json:"previous_pid"`
	// Message says what happened, for a status line.
	Message string `json:"message"`
}

// EventOwnerChanged reaches the subscribers of a client connection (never
// the engine's own broker) when the owner of its data directory went away
// and the connection moved to the next one: this process, or another
// client that took ownership first. Events published while no owner ran
// are lost to the subscriber: it reloads what it shows.
var EventOwnerChanged = events.Define[OwnerChange]("engram.owner_changed",
	"on a client, after the owner of the data directory went away and another engram (maybe this one) took over")
