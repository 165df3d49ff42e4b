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
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
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
	IDs     *ids.Generator
	Events  *events.Broker
	Trace   *trace.Log
	Actions *action.Registry
	LLM     llm.Provider
	Log     *slog.Logger
	// Run runs an action the way every face does (validation, error kinds):
	// for subsystems that compose actions, such as plan subtasks.
	Run func(ctx context.Context, call action.Call, name string, args json.RawMessage) (json.RawMessage, error)

	mu sync.Mutex
	// stopping is cancelled by Stop: follow-up work gives up.
	stopping  context.Context
	stop      context.CancelFunc
	providers []ContextProvider
	counters  map[string]Counter
	closers   []func() error
	workers   []*Worker
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

// UpdateOn is Update on another store (e.g. a subsystem's in-memory one).
// Trace entries still go to the engine's trace, in a transaction of their
// own right after the commit.
func (e *Env) UpdateOn(ctx context.Context, store *storage.Store, fn func(tx *Txn) error) error {
	var committed *Txn
	err := store.Update(ctx, func(stx *storage.Tx) error {
		tx := &Txn{Tx: stx, env: e, foreign: store != e.Store}
		if err := fn(tx); err != nil {
			return err
		}
		committed = tx
		return nil
	})
	if err != nil {
		return err
	}
	if len(committed.traces) > 0 {
		err := e.Update(ctx, func(tx *Txn) error {
			for _, t := range committed.traces {
				if _, err := tx.Trace(t.call, t.kind, t.message, t.data); err != nil {
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
			e.Events.PublishProgress(ev.name, ev.data)
		} else {
			e.Events.Publish(ev.name, ev.data)
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
	data     any
	progress bool
}

// Publish queues an event for after the commit.
func (t *Txn) Publish(name string, data any) {
	t.pending = append(t.pending, pendingEvent{name: name, data: data})
}

// PublishProgress queues a progress event (one a slow subscriber may miss).
func (t *Txn) PublishProgress(name string, data any) {
	t.pending = append(t.pending, pendingEvent{name: name, data: data, progress: true})
}

// Trace appends a trace entry for call, of the given kind, in this
// transaction. data, if not nil, is stored as JSON.
func (t *Txn) Trace(call action.Call, kind, message string, data any) (trace.Entry, error) {
	if t.foreign {
		t.traces = append(t.traces, queuedTrace{call: call, kind: kind, message: message, data: data})
		return trace.Entry{TurnID: call.Turn, Kind: kind, Message: message, Principal: call.Principal}, nil
	}
	e := trace.Entry{TurnID: call.Turn, Kind: kind, Message: message, Principal: call.Principal, At: t.env.Clock.Now()}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return trace.Entry{}, fmt.Errorf("trace data: %w", err)
		}
		e.Data = b
	}
	e, err := t.env.Trace.Append(t.Tx, e)
	if err != nil {
		return trace.Entry{}, err
	}
	EventTraceRecorded.Publish(t, e)
	return e, nil
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
