// Package kit bundles the engine services every subsystem is built from —
// store, clock, ids, events, trace, action registry, context providers,
// language model, log — so that subsystems depend on these basics rather than
// on the Engine facade (which wires them together and imports the
// subsystems).
package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/engram-console/engram/core/conn"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/access"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/ids"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// EventTraceRecorded is published for every trace entry after it commits.
var EventTraceRecorded = events.Define[trace.Entry]("trace.recorded", "after every trace entry commits")

// Env is what a subsystem gets to build on.
type Env struct {
	Store   *storage.Store
	Clock   clock.Clock
	IDs     ids.Source
	Events  *events.Broker
	Trace   *trace.Log
	Actions *action.Registry
	// Access holds each object type's read check, for questions about
	// a subject of any subsystem (the trace's, a plan's results).
	Access *access.Registry
	LLM    llm.Provider
	Log    *slog.Logger
	// Run runs an action the way every face does (validation, error kinds):
	// for subsystems that compose actions, such as plan subtasks.
	Run func(ctx context.Context, call action.Call, name string, args json.RawMessage) (json.RawMessage, error)
	// Do runs a whole request (its at, session and events too): for a
	// subsystem that runs a script of its own (the tour).
	Do func(ctx context.Context, req conn.Request) (json.RawMessage, error)

	mu sync.Mutex
	// stopping is cancelled by Stop: follow-up work gives up.
	stopping  context.Context
	stop      context.CancelFunc
	providers []ContextProvider
	counters  map[string]Counter
	holders   []Holder
	checkers  map[string]Checker // engram check's per-subsystem verifiers (check.go)
	closers   []func() error
	workers   []*Worker
	// embeddings is the engine's embedding queue, made on first use.
	embeddings *embed.Queue
	// onceRunning holds the idempotency keys (principal NUL key) of the
	// requests running now; oncePurging is set while one of them drops
	// expired records, onceSwept once every record has its time index
	// entry, and onceSweepFrom is where the sweep giving them one goes on
	// (idempotency.go).
	onceRunning   map[string]bool
	oncePurging   bool
	onceSwept     bool
	onceSweepFrom []byte
}

// AddWorker registers a subsystem's background worker, so that Settle
// waits for it too.
func (e *Env) AddWorker(w *Worker) {
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
}

// Settle waits until every registered background worker is idle (or ctx
// ends): the batch runner does, so that a step's background work (summary
// folds, compactions) and its events belong to that step.
func (e *Env) Settle(ctx context.Context) {
	e.mu.Lock()
	workers := append([]*Worker(nil), e.workers...)
	e.mu.Unlock()
	for _, w := range workers {
		w.Settle(ctx)
	}
	e.mu.Lock()
	q := e.embeddings
	e.mu.Unlock()
	q.Settle(ctx)
}

// OnClose registers fn to run when the engine closes, before its store does
// (a subsystem's own resources, such as an extra in-memory store).
func (e *Env) OnClose(fn func() error) {
	e.mu.Lock()
	e.closers = append(e.closers, fn)
	e.mu.Unlock()
}

// Stop tells follow-up work (AfterCommit functions: an embedding, a
// model's summary) to give up: the engine is closing and will not wait for
// a slow model. What such work would have written is best effort, or
// resumed on the next start.
func (e *Env) Stop() {
	e.stoppingContext()
	e.stop()
	e.mu.Lock()
	q := e.embeddings
	e.mu.Unlock()
	q.Stop()
}

// Embeddings is the engine's embedding queue (package embed): the one
// background worker that turns the texts writes marked into vectors.
func (e *Env) Embeddings() *embed.Queue {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.embeddings == nil {
		provider := e.LLM
		if provider == nil {
			provider = llm.Offline{}
		}
		e.embeddings = embed.New(provider, e.Clock, e.Log)
	}
	return e.embeddings
}

// stoppingContext is the context Stop cancels, made on first use (an Env
// is built as a struct literal).
func (e *Env) stoppingContext() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping == nil {
		e.stopping, e.stop = context.WithCancel(context.Background())
	}
	return e.stopping
}

// followUp is ctx, also cancelled when Stop is called.
func (e *Env) followUp(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(e.stoppingContext(), cancel)
	return ctx, func() { unhook(); cancel() }
}

// Close runs the OnClose functions, newest first, once.
func (e *Env) Close() error {
	e.mu.Lock()
	closers := e.closers
	e.closers = nil
	e.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Counter reports a subsystem's counts for engine.info (e.g. {"items": 3}).
type Counter func() (map[string]int, error)

// AddCounter registers a subsystem's counter under its name.
func (e *Env) AddCounter(subsystem string, c Counter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counters == nil {
		e.counters = map[string]Counter{}
	}
	e.counters[subsystem] = c
}

// Holder says whether a subsystem holds anything a person made (a goal,
// a conversation, a thread, a memory, a plan): for engine.info's empty,
// which one key answers where counting reads every key.
type Holder func() (bool, error)

// AddHolder registers a subsystem's Holder.
func (e *Env) AddHolder(h Holder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holders = append(e.holders, h)
}

// HoldsAnything asks the Holders until one says yes.
func (e *Env) HoldsAnything() (bool, error) {
	e.mu.Lock()
	holders := slices.Clone(e.holders)
	e.mu.Unlock()
	for _, h := range holders {
		if holds, err := h(); holds || err != nil {
			return holds, err
		}
	}
	return false, nil
}

// Holds reports whether st has a key starting with prefix: a Holder's
// usual answer.
func Holds(st *storage.Store, prefix []byte) (bool, error) {
	var found bool
	err := st.View(func(tx *storage.Tx) error {
		var err error
		found, err = tx.Any(prefix)
		return err
	})
	return found, err
}

// Counts runs every counter.
func (e *Env) Counts() (map[string]map[string]int, error) {
	e.mu.Lock()
	counters := make(map[string]Counter, len(e.counters))
	for k, v := range e.counters {
		counters[k] = v
	}
	e.mu.Unlock()
	out := map[string]map[string]int{}
	for name, c := range counters {
		m, err := c()
		if err != nil {
			return nil, fmt.Errorf("counting %s: %w", name, err)
		}
		out[name] = m
	}
	return out, nil
}

// Update runs fn in one read-write transaction of the engine's store
// (retried on storage conflicts; fn must have no effects outside tx). Events
// and trace entries fn queues are published only once the transaction has
// committed, and then its AfterCommit functions run.
func (e *Env) Update(ctx context.Context, fn func(tx *Txn) error) error {
	return e.UpdateOn(ctx, e.Store, fn)
}

// Joint makes the Updates on the engine's store made under a context (Join)
// run in one transaction that is already open, instead of each in its own:
// so that a plan subtask's writes and its checkpoint commit together or not
// at all (issue 13, item 8).
type Joint struct {
	tx                   *Txn
	mu                   sync.Mutex
	busy, closed, broken bool
	// strict (JoinStrict): ok says a joined fn succeeded (its writes are
	// in tx), escaped that an Update ran in a transaction of its own,
	// refused that one was refused with ErrUnjoined.
	strict, ok, escaped, refused bool
}

type jointKey struct{}

// ErrUnjoined is what an Update under a strict joint (JoinStrict) fails
// with when it can neither run in the joint transaction nor in one of
// its own.
var ErrUnjoined = errors.New("kit: this write cannot join the request's transaction")

// Join returns ctx in which e.Update (and UpdateOn the engine's store) runs
// fn inside tx rather than in a transaction of its own: fn's events, trace
// entries and AfterCommit work then wait for tx's commit, and its writes
// roll back with tx. After an fn that fails (its writes so far stay in tx),
// or from another goroutine while one runs, Updates open their own
// transactions again, as they do once Close is called; so a failed
// action's access-denied trace entry is still committed.
func Join(ctx context.Context, tx *Txn) (context.Context, *Joint) {
	j := &Joint{tx: tx}
	return context.WithValue(ctx, jointKey{}, j), j
}

// JoinStrict is Join for a caller that commits tx only if the action run
// in it wrote nothing outside it: an Update that committed on its own
// could not roll back with tx, and would run twice when a storage
// conflict runs tx's fn again. After an fn that failed, an Update runs in
// its own transaction (Escaped) only if no joined fn had succeeded, so
// that rolling tx back loses nothing: the caller then rolls tx back and
// takes the action's outcome as that of an action run on its own (a
// failure's access-denied entry, cortex.update's re-application after a
// conflict). Otherwise, and inside another Update, from another
// goroutine or on another store, the Update fails with ErrUnjoined
// (Refused), and the caller rolls tx back and runs the action again on
// its own.
func JoinStrict(ctx context.Context, tx *Txn) (context.Context, *Joint) {
	ctx, j := Join(ctx, tx)
	j.strict = true
	return ctx, j
}

// Close ends the joining (tx is about to commit or roll back). It reports
// whether a joined fn failed.
func (j *Joint) Close() (broken bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return j.broken
}

// Refused reports whether an Update under a strict joint (JoinStrict)
// was refused with ErrUnjoined.
func (j *Joint) Refused() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refused
}

// Escaped reports whether an Update under a strict joint (JoinStrict)
// ran in a transaction of its own, after a joined one failed.
func (j *Joint) Escaped() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.escaped
}

// enter returns the joint transaction if an Update of e on store may run
// in it, nil if it runs in its own, and ErrUnjoined if it may do neither.
func (j *Joint) enter(e *Env, store *storage.Store) (*Txn, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, nil
	}
	if j.strict {
		switch {
		case j.escaped:
			return nil, nil // on its own from here on, as it began to
		case j.refused || j.busy || store != e.Store || j.tx.env != e || j.broken && j.ok:
			j.refused = true
			return nil, ErrUnjoined
		case j.broken:
			j.escaped = true
			return nil, nil
		}
	} else if j.busy || j.broken || store != e.Store || j.tx.env != e {
		return nil, nil
	}
	j.busy = true
	return j.tx, nil
}

func (j *Joint) leave(failed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.busy, j.broken, j.ok = false, j.broken || failed, j.ok || !failed
}

// UpdateOn is Update on another store (e.g. a subsystem's in-memory one).
// Trace entries still go to the engine's trace, in a transaction of their
// own right after the commit.
func (e *Env) UpdateOn(ctx context.Context, store *storage.Store, fn func(tx *Txn) error) error {
	if j, _ := ctx.Value(jointKey{}).(*Joint); j != nil {
		tx, err := j.enter(e, store)
		if err != nil {
			return err
		}
		if tx != nil {
			err := fn(tx)
			j.leave(err != nil)
			return err
		}
	}
	if store != e.Store {
		// Such a write goes with entries in the engine's store (its trace,
		// where the object lives): if that one takes no writes (its disk
		// was full when it opened), neither does this one.
		if err := e.Store.RefuseWrite(); err != nil {
			return err
		}
	}
	var committed *Txn
	var once *onceMark
	err := store.Update(ctx, func(stx *storage.Tx) error {
		tx := &Txn{Tx: stx, env: e, foreign: store != e.Store}
		if err := fn(tx); err != nil {
			return err
		}
		if store == e.Store {
			// A request with an idempotency key: its first commit
			// records that it ran (idempotency.go).
			var err error
			if once, err = markOnce(ctx, stx); err != nil {
				return err
			}
		}
		committed = tx
		return nil
	})
	if err != nil {
		return err
	}
	if once != nil {
		once.committed.Store(true)
	}
	if len(committed.traces) > 0 {
		err := e.Update(ctx, func(tx *Txn) error {
			for _, t := range committed.traces {
				if _, err := tx.trace(t.call, t.subject, t.kind, t.message, t.data); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			e.Log.Warn("writing trace entries failed", "err", err)
		}
	}
	for _, ev := range committed.pending {
		if ev.progress {
			e.Events.PublishProgress(ev.name, ev.to, ev.data)
		} else {
			e.Events.Publish(ev.name, ev.to, ev.data)
		}
	}
	if len(committed.after) > 0 {
		follow, cancel := e.followUp(ctx)
		defer cancel()
		for _, fn := range committed.after {
			fn(follow)
		}
	}
	return nil
}

// Txn is a read-write transaction that also collects the events and trace
// entries of the change it makes.
type Txn struct {
	*storage.Tx
	env     *Env
	pending []pendingEvent
	after   []func(context.Context)
	// foreign: the transaction is not on the engine's store, so trace
	// entries wait for the commit.
	foreign bool
	traces  []queuedTrace
}

type queuedTrace struct {
	call          action.Call
	subject       *trace.Subject
	kind, message string
	data          any
}

// AfterCommit queues fn to run once the transaction has committed (not at
// all if it does not): slow follow-up work, such as asking a model, that
// must not hold the transaction open or run twice when it is retried. Its
// context is also cancelled when the engine starts closing (Env.Stop).
func (t *Txn) AfterCommit(fn func(ctx context.Context)) {
	t.after = append(t.after, fn)
}

type pendingEvent struct {
	name     string
	to       events.Audience
	data     any
	progress bool
}

// Publish queues an event, seen by to, for after the commit.
func (t *Txn) Publish(name string, to events.Audience, data any) {
	t.pending = append(t.pending, pendingEvent{name: name, to: to, data: data})
}

// PublishProgress queues a progress event (one a slow subscriber may miss).
func (t *Txn) PublishProgress(name string, to events.Audience, data any) {
	t.pending = append(t.pending, pendingEvent{name: name, to: to, data: data, progress: true})
}

// Trace appends a trace entry for call, of the given kind, in this
// transaction. data, if not nil, is stored as JSON. The entry has no
// subject: trace.list shows it to call's principal only (TraceAbout names
// the object it is about, for whoever may read that too).
func (t *Txn) Trace(call action.Call, kind, message string, data any) (trace.Entry, error) {
	return t.trace(call, nil, kind, message, data)
}

// TraceAbout is Trace for an entry about one object, subject (its type as
// registered on Env.Access, and its id): trace.list shows the entry to
// call's principal and to every principal who may read the object.
func (t *Txn) TraceAbout(call action.Call, subject trace.Subject, kind, message string, data any) (trace.Entry, error) {
	return t.trace(call, &subject, kind, message, data)
}

func (t *Txn) trace(call action.Call, subject *trace.Subject, kind, message string, data any) (trace.Entry, error) {
	if t.foreign {
		t.traces = append(t.traces, queuedTrace{call: call, subject: subject, kind: kind, message: message, data: data})
		return trace.Entry{TurnID: call.Turn, Kind: kind, Message: message, Principal: call.Principal}, nil
	}
	e, err := t.entry(call, kind, message, data)
	if err != nil {
		return trace.Entry{}, err
	}
	e, err = t.env.Trace.AppendAbout(t.Tx, e, subject)
	if err != nil {
		return trace.Entry{}, err
	}
	EventTraceRecorded.Publish(t, t.env.traceAudience(e, subject), e)
	return e, nil
}

// traceAudience is who sees entry e about subject live: whom trace.list
// would show it to (trace.Visible), asked when the event is delivered.
func (e *Env) traceAudience(entry trace.Entry, subject *trace.Subject) events.Audience {
	writer := entry.Principal
	if writer == "" {
		writer = access.LegacyOwner
	}
	switch {
	case subject == nil:
		return events.Only(writer)
	case subject.Owner != "":
		return events.Only(writer, subject.Owner)
	}
	return events.Only(writer).Or(e.Readable(func(tx *storage.Tx, viewer string) (bool, error) {
		return trace.Visible(tx, e.Access, viewer, entry, subject)
	}))
}

// Readable is an events.Audience check (Audience.Or) that asks may in a
// read transaction of the store when the event is delivered: for an object
// whose readers only its subsystem knows. A store it cannot read says no.
func (e *Env) Readable(may func(tx *storage.Tx, principal string) (bool, error)) func(principal string) bool {
	return func(principal string) bool {
		var ok bool
		err := e.Store.View(func(tx *storage.Tx) error {
			var err error
			ok, err = may(tx, principal)
			return err
		})
		return err == nil && ok
	}
}

// entry builds a trace entry for call, stamped with the engine clock.
func (t *Txn) entry(call action.Call, kind, message string, data any) (trace.Entry, error) {
	e := trace.Entry{TurnID: call.Turn, Kind: kind, Message: message, Principal: call.Principal, At: t.env.Clock.Now()}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return trace.Entry{}, fmt.Errorf("trace data: %w", err)
		}
		e.Data = b
	}
	return e, nil
}

// TraceFailure records what a failed call must leave behind although its
// transaction rolled back, and returns err unchanged: if err is a refusal
// by access.Check, an "access_denied" entry (its data the access.Denial),
// which trace.list shows only to the refused principal and the object's
// owner. The same denial repeated (same principal, operation and object)
// within the trace's denial window is counted on one entry ("count",
// "first_at", "last_at" in its data) instead of adding one per attempt.
// Call it on the error of every action that checks access.
func (e *Env) TraceFailure(ctx context.Context, call action.Call, err error) error {
	if d, ok := access.DenialOf(err); ok {
		e.TraceDenial(ctx, call, d)
	}
	return err
}

// TraceDenial writes the access_denied entry of d, as TraceFailure does,
// for a subsystem whose refusals carry their denial some other way.
func (e *Env) TraceDenial(ctx context.Context, call action.Call, d *access.Denial) {
	owner := d.Owner
	if owner == "" {
		owner = access.LegacyOwner
	}
	subject := &trace.Subject{Type: d.ResourceType, ID: d.ResourceID, Owner: owner}
	same := strings.Join([]string{d.PrincipalID, d.AttemptedOperation, d.ResourceType, d.ResourceID}, "\x00")
	terr := e.Update(context.WithoutCancel(ctx), func(tx *Txn) error {
		entry, err := tx.entry(call, "access_denied", d.Message(), d)
		if err != nil {
			return err
		}
		entry, repeated, err := e.Trace.AppendDenial(tx.Tx, entry, subject, same)
		if err == nil && !repeated {
			EventTraceRecorded.Publish(tx, e.traceAudience(entry, subject), entry)
		}
		return err
	})
	if terr != nil && !errors.Is(terr, ErrUnjoined) { // its caller runs the action again on its own
		e.Log.Warn("writing an access denial to the trace failed", "err", terr)
	}
}

// TurnStart describes a turn that is starting.
type TurnStart struct {
	TurnID       string
	Principal    string
	Input        string
	Channel      string
	ThreadID     string
	Conversation string
	At           time.Time
}

// TurnEnd describes a turn that is ending.
type TurnEnd struct {
	TurnID    string
	Principal string
	// Updates is what the turn asks this provider to commit (turn.end's
	// updates[provider name]); nil when it sent none.
	Updates json.RawMessage
	At      time.Time
}

// ContextProvider is a subsystem's part in turns: it contributes a section
// to the working memory assembled by turn.start, and commits a turn's updates
// at turn.end.
type ContextProvider interface {
	// Name keys the provider's section in the context and its updates in turn.end.
	Name() string
	// Context returns the provider's section of working memory for a turn
	// that is starting (a Section with nil Data contributes nothing).
	Context(ctx context.Context, start TurnStart) (Section, error)
	// Commit applies end.Updates inside tx: every provider commits in the
	// same transaction, so a turn's updates land together or not at all.
	// It returns what it committed.
	Commit(ctx context.Context, tx *Txn, end TurnEnd) (any, error)
}

// FailureReporter is implemented by a context provider that records
// something when a turn's commit fails: turn.end's transaction rolled back,
// so the provider's own notes went with it, and CommitFailed runs after.
type FailureReporter interface {
	CommitFailed(ctx context.Context, end TurnEnd, err error)
}

// Section is a provider's part of a turn's working memory, and what it
// wants the turn trace to say about it (written in the same transaction as
// the turn's start, so a turn that fails to start leaves no notes).
type Section struct {
	Data  any
	Notes []Note
}

// Note is a trace entry a provider asks for.
type Note struct {
	Kind    string
	Message string
	Data    any
}

// AddProvider registers a context provider. Names must be unique.
func (e *Env) AddProvider(p ContextProvider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, q := range e.providers {
		if q.Name() == p.Name() {
			panic("context provider registered twice: " + p.Name())
		}
	}
	e.providers = append(e.providers, p)
	sort.Slice(e.providers, func(i, j int) bool { return e.providers[i].Name() < e.providers[j].Name() })
}

// Providers returns the context providers, sorted by name.
func (e *Env) Providers() []ContextProvider {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ContextProvider(nil), e.providers...)
}

// MaxName is the longest id, name or tag engram accepts, in bytes.
const MaxName = 256

// CheckName validates an identifier-like value (an id, a principal, a turn,
// a tag): at most MaxName bytes, valid UTF-8, no control characters (which
// could, shown in a terminal, take it over) and none of forbidden.
func CheckName(field, value, forbidden string) error {
	switch {
	case len(value) > MaxName:
		return Validation(field, "is %d bytes; at most %d", len(value), MaxName)
	case !utf8.ValidString(value):
		return Validation(field, "is not valid UTF-8")
	case strings.IndexFunc(value, unicode.IsControl) >= 0:
		return Validation(field, "must not contain control characters")
	case forbidden != "" && strings.ContainsAny(value, forbidden):
		return Validation(field, "must not contain any of %q", forbidden)
	}
	return nil
}

// Validation is shorthand for a ValidationError about one field: its message
// is "field: " and the formatted message.
func Validation(field, format string, args ...any) *errs.Error {
	// The field name is not part of the format: it may come from the user
	// (turn.end's updates keys) and contain verbs like %s.
	e := errs.New(errs.Validation, format, args...)
	e.Message = field + ": " + e.Message
	return e.With("field", field)
}

// FromLLM gives a language model failure its error kind: a *llm.ParseError
// (an answer that should have been JSON) becomes a ParseError carrying the
// raw answer, cut for display; an *llm.Error becomes an LLMError whose
// details say whether it was transient and how many attempts were made.
// Other errors come back unchanged.
func FromLLM(err error) error {
	var pe *llm.ParseError
	var le *llm.Error
	switch {
	case errors.As(err, &pe):
		return errs.New(errs.Parse, "%s", pe.Error()).With("raw", pe.Display()).With("reason", pe.Reason)
	case errors.As(err, &le):
		e := errs.New(errs.LLM, "%w", err).With("transient", le.Transient).With("attempts", le.Attempts).With("provider", le.Provider)
		if le.Status != 0 {
			e = e.With("status", le.Status)
		}
		return e
	}
	return err
}
