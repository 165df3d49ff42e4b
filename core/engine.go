// Package core is the engram engine: the Engine facade that opens the store,
// wires the shared services (clock, ids, events, trace, action registry,
// context providers, language model) and runs actions. The TUI, the batch
// runner and tests all drive engram through Engine.Do.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/ids"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/tokens"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Version is engram's version, reported by engine.info and --version.
var Version = "0.1.0-dev"

// DefaultAgent is the principal acting when none is given. It also owns
// what was stored before objects had owners.
const DefaultAgent = access.LegacyOwner

// Options configure Open.
type Options struct {
	// DataDir is the durable store's directory (ignored when InMemory).
	DataDir string
	// InMemory keeps the store in RAM only.
	InMemory bool
	// SyncWrites fsyncs every commit (survives power loss, slower).
	SyncWrites bool
	// Agent is the default principal (DefaultAgent when empty).
	Agent string
	// Clock is the base clock (the real one when nil). The engine wraps it in
	// a Pinnable clock so that a batch step's `at` can pin the time.
	Clock clock.Clock
	// IDSeed seeds the id generator. Empty: derived from the store's id epoch,
	// which a durable store bumps on every open (so ids never repeat across
	// runs) and an in-memory store always starts at 1 (so runs repeat).
	IDSeed string
	// LLM is the language model provider (offline when nil).
	LLM llm.Provider
	// Logger receives the engine's and Badger's log lines (discarded when nil).
	Logger *slog.Logger
	// HistoryBackend is where new conversations live: "durable" or
	// "in-memory" (default: durable unless the store is in memory).
	HistoryBackend string
	// Subsystems register their actions and providers on the engine; nil
	// means DefaultSubsystems(opts), an empty list a bare engine (the
	// built-in engine.*, actions.list, trace.list, turn.* and llm.complete
	// only).
	Subsystems []Subsystem
	// Random is where bearer tokens' ids and secrets come from
	// (crypto/rand when nil); only tests give another, to repeat.
	Random io.Reader
}

// Subsystem adds a part of engram (its actions, context provider, counters)
// to an engine's services.
type Subsystem func(env *kit.Env) error

// DefaultSubsystems are the parts every engram has.
func DefaultSubsystems(opts Options) []Subsystem {
	return []Subsystem{
		func(env *kit.Env) error { cortex.Register(env); return nil },
		func(env *kit.Env) error {
			_, err := history.Register(env, history.Options{DefaultBackend: opts.HistoryBackend})
			return err
		},
		func(env *kit.Env) error { _, err := memory.Register(env); return err },
		func(env *kit.Env) error { _, err := episodic.Register(env, episodic.Options{}); return err },
		tokens.Subsystem(tokens.Options{Random: opts.Random}),
	}
}

// Engine is one open engram.
type Engine struct {
	env   *kit.Env
	clock *clock.Pinnable
	agent string
	sync  bool

	// mu guards closing; inflight counts the actions running, so that
	// Close waits for them rather than closing the store under them.
	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup

	// turnstile lets requests run side by side (read-locked) unless one
	// must run alone (write-locked): a step that pins the clock or wants
	// its own events.
	turnstile sync.RWMutex
	ids       *ids.Switch
	sessions  sessions
	// clients are the agent clients (MCP sessions) requests were made for.
	clients *clients.Registry
}

// Open opens the store and builds the engine with its built-in actions.
func Open(opts Options) (*Engine, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	store, err := storage.Open(storage.Options{
		Dir: opts.DataDir, InMemory: opts.InMemory, SyncWrites: opts.SyncWrites, Logger: logger,
		// A full disk still shows what is stored; writes say why not.
		ReadOnlyWhenFull: true,
	})
	if err != nil {
		return nil, err
	}
	e, err := build(store, opts, logger)
	if err != nil {
		// The build error says what went wrong; a failure to close as well
		// is joined to it rather than lost.
		return nil, errors.Join(err, store.Close())
	}
	return e, nil
}

func build(store *storage.Store, opts Options, logger *slog.Logger) (*Engine, error) {
	clk := clock.NewPinnable(opts.Clock)
	seed := opts.IDSeed
	if seed == "" {
		epoch, err := bumpEpoch(store)
		if err != nil {
			return nil, fmt.Errorf("reading the store's id epoch: %w", err)
		}
		seed = "epoch " + strconv.FormatUint(epoch, 10)
	}
	tr, err := trace.Open(store)
	if err != nil {
		return nil, err
	}
	provider := opts.LLM
	if provider == nil {
		provider = llm.Offline{}
	}
	agent := opts.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	idSwitch := ids.NewSwitch(ids.New(clk, seed))
	env := &kit.Env{
		Store:   store,
		Clock:   clk,
		IDs:     idSwitch,
		Events:  events.NewBroker(clk),
		Trace:   tr,
		Actions: action.NewRegistry(),
		Access:  &access.Registry{},
		LLM:     provider,
		Log:     logger,
	}
	env.AddChecker("trace", tr.Check)
	e := &Engine{env: env, clock: clk, agent: agent, sync: opts.SyncWrites, ids: idSwitch,
		sessions: sessions{clock: clk, seed: seed}, clients: clients.New(os.Getpid(), clients.ProcessAlive)}
	env.Run = func(ctx context.Context, call action.Call, name string, args json.RawMessage) (json.RawMessage, error) {
		return e.Do(ctx, Request{Action: name, Args: args, Principal: call.Principal, Turn: call.Turn})
	}
	env.Do = e.Do
	e.registerBuiltins()
	subsystems := opts.Subsystems
	if subsystems == nil {
		subsystems = DefaultSubsystems(opts)
	}
	for _, register := range subsystems {
		if err := register(env); err != nil {
			// The subsystems registered so far may have started work (the
			// embedding queue recovers the last run's texts): it ends
			// before Open returns, so Open closes the store under nothing.
			env.Stop()
			return nil, errors.Join(err, env.Close())
		}
	}
	e.markComing()
	// The cache and version stamps the embedding queue keeps beside the
	// subsystems' vectors (each subsystem checks its own vectors and
	// pending markers).
	env.AddChecker("embeddings", env.Embeddings().Check)
	env.AddCounter("trace", func() (map[string]int, error) {
		entries, turns, err := tr.Count()
		return map[string]int{"entries": entries, "turns_traced": turns}, err
	})
	env.AddCounter("turns", e.countTurns)
	return e, nil
}

// bumpEpoch increments and returns the store's id epoch.
func bumpEpoch(store *storage.Store) (uint64, error) {
	var epoch uint64
	err := store.Update(context.Background(), func(tx *storage.Tx) error {
		key := storage.Key(storage.PrefixMeta, "id_epoch")
		epoch = 0
		if b, err := tx.Get(key); err == nil {
			if epoch, err = strconv.ParseUint(string(b), 10, 64); err != nil {
				// Restarting at 1 would repeat the ids of earlier runs.
				return fmt.Errorf("the id epoch %q is not a number: %w", b, err)
			}
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		epoch++
		return tx.Set(key, []byte(strconv.FormatUint(epoch, 10)))
	})
	if store.FullAtOpen() != nil && errors.Is(err, storage.ErrFull) {
		// Opened read-only for want of space: the ids of this run cannot
		// be stored, so repeating them later harms nothing.
		return epoch, nil
	}
	return epoch, err
}

// Env is the services subsystems register themselves with (the planner, from main).
func (e *Engine) Env() *kit.Env { return e.env }

// Clock is the engine clock; the batch runner pins it to a step's `at`.
func (e *Engine) Clock() *clock.Pinnable { return e.clock }

// Agent is the default principal.
func (e *Engine) Agent() string { return e.agent }

// Actions lists every registered action, sorted by name.
func (e *Engine) Actions() []*action.Action { return e.env.Actions.List() }

// subscribeBuffer is how many progress events may wait for a Subscribe
// reader before the oldest are dropped (final events never are).
const subscribeBuffer = 1024

// Subscribe returns the events of the given kinds (all when none is
// given) that the engine's agent may see, until ctx is cancelled.
func (e *Engine) Subscribe(ctx context.Context, kinds ...string) <-chan events.Event {
	return e.SubscribeAs(ctx, e.agent, kinds...)
}

// SubscribeAs returns the events of the given kinds (all when none is
// given) that principal may see, until ctx is cancelled.
func (e *Engine) SubscribeAs(ctx context.Context, principal string, kinds ...string) <-chan events.Event {
	if principal == "" {
		principal = e.agent
	}
	ch := e.env.Events.Subscribe(ctx, subscribeBuffer)
	var want map[string]bool
	if len(kinds) > 0 {
		want = make(map[string]bool, len(kinds))
		for _, k := range kinds {
			want[k] = true
		}
	}
	out := make(chan events.Event, subscribeBuffer)
	go func() {
		defer close(out)
		for ev := range ch {
			if (want != nil && !want[ev.Name]) || !ev.VisibleTo(principal) {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// SubscribeAll returns every event, whoever may see it, until ctx is
// cancelled: for a trusted face that serves each of its own subscribers
// only what that subscriber's principal may see (the owner's server).
func (e *Engine) SubscribeAll(ctx context.Context) <-chan events.Event {
	return e.env.Events.Subscribe(ctx, subscribeBuffer)
}

// SubscribeBuffer returns every event until ctx is cancelled, keeping up
// to buffer progress events for a slow reader: for tests that count them.
func (e *Engine) SubscribeBuffer(ctx context.Context, buffer int) <-chan events.Event {
	return e.env.Events.Subscribe(ctx, buffer)
}

// Info is what engine.info reports.
func (e *Engine) Info(ctx context.Context) (Info, error) { return e.InfoWith(ctx, conn.InfoArgs{}) }

// InfoWith is what engine.info reports with args (conn.InfoAsker).
func (e *Engine) InfoWith(ctx context.Context, args conn.InfoArgs) (Info, error) {
	if err := e.enter(ctx, ActionEngineInfo.Name()); err != nil {
		return Info{}, err
	}
	defer e.inflight.Done()
	return e.info(ctx, action.Call{Principal: e.agent, Clock: e.clock}, args)
}

// CheckAction returns nil if the named action is registered, else an
// UnknownAction error saying why.
func (e *Engine) CheckAction(name string) error {
	_, err := e.env.Actions.Lookup(name)
	return err
}

// Now is the engine's base clock: a request that pins the clock (a
// step's at) runs alone, and its time is for it only, never for a face
// asking what time it is meanwhile.
func (e *Engine) Now() time.Time { return e.clock.Base() }

// The engine is the in-process connection every face uses.
var _ conn.Conn = (*Engine)(nil)

// Close closes the subsystems' resources, then the store. Safe to call more
// than once.
//
// Actions already running finish first (a cancelled plan run still saves
// its checkpoint); an action asked for once Close has begun is refused.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	e.env.Stop() // slow follow-up work (an embedding) gives up
	e.inflight.Wait()
	return errors.Join(e.env.Close(), e.env.Store.Close())
}

// insideAction marks the context of a running action: an action it runs
// in turn (chat.send's turn.start, a plan's subtasks) is part of it.
type insideAction struct{}

// enter counts an action in, unless the engine is closing and the action
// is not part of one already running (which Close waits for, so its parts
// must run too).
func (e *Engine) enter(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closing && ctx.Value(insideAction{}) == nil {
		return errs.New(errs.Internal, "%s: the engine is closing; nothing was run", name)
	}
	e.inflight.Add(1)
	return nil
}

// Request is one action to run.
type Request = conn.Request

// Do runs one action and returns its JSON result. Every error it returns
// has an *errs.Error in its chain: errs.KindOf gives its kind, errs.As the
// kind, message and details together.
//
// Requests run side by side, except one that must run alone (see
// conn.Request.Exclusive, and actions marked Exclusive): it waits for the
// others, and for their background work, then runs with nothing else, so
// that the time it pins, the ids it draws and the events it sees are its
// own. Its background work finishes before Do returns.
func (e *Engine) Do(ctx context.Context, req Request) (json.RawMessage, error) {
	a, err := e.env.Actions.Lookup(req.Action)
	if err != nil {
		return nil, err
	}
	if err := e.enter(ctx, req.Action); err != nil {
		return nil, err
	}
	defer e.inflight.Done()
	if req.At == nil && ctx.Value(insideAction{}) == nil {
		// The engine runs on the wall's time again: embedding retries a
		// step with at scheduled must not wait for another such step.
		e.env.Embeddings().Unpinned()
	}
	if ctx.Value(insideAction{}) != nil {
		// A part of a running action (a plan's subtask, a tour's step)
		// runs under its locks. It may pin the clock only when that
		// action runs alone: others would see the pinned time.
		if req.At != nil && ctx.Value(runsAlone{}) == nil {
			return nil, errs.New(errs.Internal, "%s: a step with at may run inside an action only if that action runs alone (action.Spec.Exclusive)", req.Action)
		}
		if req.At == nil {
			return e.do(ctx, a, req)
		}
		// A script's step (the tour's): its background work happens at
		// its time too.
		at, pinned := e.clock.State()
		e.clock.Pin(*req.At)
		defer e.clock.Restore(at, pinned)
		out, err := e.do(ctx, a, req)
		e.env.Settle(ctx)
		return out, err
	}
	if !req.Exclusive() && !a.Exclusive {
		e.turnstile.RLock()
		defer e.turnstile.RUnlock()
		return e.do(context.WithValue(ctx, insideAction{}, true), a, req)
	}
	return e.doAlone(ctx, a, req)
}

// runsAlone marks the context of an action running alone.
type runsAlone struct{}

// doAlone runs a request with nothing else running: it pins the clock to
// the request's at, draws ids from its session's generator, and hands it
// the events it causes, then waits for the background work it started.
func (e *Engine) doAlone(ctx context.Context, a *action.Action, req Request) (json.RawMessage, error) {
	e.turnstile.Lock()
	defer e.turnstile.Unlock()
	// Background work of earlier requests finishes at its own time, with
	// its own ids, before this request changes either.
	e.env.Settle(ctx)
	if req.At != nil {
		at, pinned := e.clock.State()
		e.clock.Pin(*req.At)
		defer e.clock.Restore(at, pinned)
	}
	if req.Session != "" && req.At != nil {
		defer e.ids.Use(e.ids.Use(e.sessions.generator(req.Session)))
	}
	var tap *events.Tap
	if req.OnEvent != nil {
		// The events a request causes go to it only as far as its
		// principal may see them (a fold of a shared conversation is
		// every reader's; a trace entry about another's denial is not).
		principal := req.Principal
		if principal == "" {
			principal = e.agent
		}
		tap = e.env.Events.Tap(subscribeBuffer)
		defer tap.Close()
		// Events go out as they come, so a long step (a plan run) shows
		// its progress.
		done := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-tap.Ready():
					for _, ev := range tap.Drain() {
						if ev.VisibleTo(principal) {
							req.OnEvent(ev)
						}
					}
				case <-done:
					return
				}
			}
		}()
		defer func() {
			close(done)
			<-stopped
			for _, ev := range tap.Drain() {
				if ev.VisibleTo(principal) {
					req.OnEvent(ev)
				}
			}
		}()
	}
	ctx = context.WithValue(context.WithValue(ctx, insideAction{}, true), runsAlone{}, true)
	out, err := e.do(ctx, a, req)
	// The request's background work (summary folds, compactions) belongs
	// to it: it happens now, at the request's time, with its ids, and its
	// events are delivered with it.
	e.env.Settle(ctx)
	return out, err
}

// do checks a request's principal, turn and arguments and runs its action.
func (e *Engine) do(ctx context.Context, a *action.Action, req Request) (json.RawMessage, error) {
	call := action.Call{Principal: req.Principal, Turn: req.Turn, Clock: e.clock}
	if call.Principal == "" {
		call.Principal = e.agent
	}
	if err := kit.CheckName("as", call.Principal, ""); err != nil {
		return nil, err
	}
	if req.Client != nil {
		if err := clients.Check(req.Client); err != nil {
			return nil, err
		}
	}
	// Wall time, for the log only: how long the action really took, which
	// the engine clock (pinned by a step's at) cannot tell.
	start := time.Now()
	out, err := e.checkAndInvoke(ctx, a, call, req)
	if err != nil {
		err = classify(err)
	}
	if req.Client != nil {
		// Counted and traced whatever its outcome: a client's refused
		// calls are what its person most wants to see.
		clients.Note(ctx, e.env, e.clients, call, req, err)
	}
	if err != nil {
		e.env.Log.Debug("action failed", "action", req.Action, "turn", req.Turn, "kind", errs.KindOf(err), "err", err, "took", time.Since(start))
		return nil, err
	}
	e.env.Log.Debug("action", "action", req.Action, "turn", req.Turn, "took", time.Since(start))
	return out, nil
}

// checkAndInvoke checks a request's turn and arguments, then invokes it.
func (e *Engine) checkAndInvoke(ctx context.Context, a *action.Action, call action.Call, req Request) (json.RawMessage, error) {
	if err := kit.CheckName("turn", call.Turn, ""); err != nil {
		return nil, err
	}
	if err := checkArgs(req.Args); err != nil {
		return nil, err
	}
	return e.invokeOnce(ctx, a, call, req)
}

// invoke runs the action, turning a panic in it (a bug) into an Internal
// error of this action, so that one action's bug fails its step, whatever
// goroutine it runs on (a plan's subtasks have their own), instead of
// ending the process with the Go runtime's exit status 2, which says the
// person's input was wrong. The stack goes to the log.
func (e *Engine) invoke(ctx context.Context, a *action.Action, call action.Call, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.env.Log.Error("action panicked", "action", a.Name, "panic", p, "stack", string(debug.Stack()))
			out, err = nil, errs.New(errs.Internal, "%s failed with a bug (panic: %v); what it had not committed is unchanged; the log has the details", a.Name, p)
		}
	}()
	return a.Invoke(ctx, call, args)
}

// invokeOnce invokes a write request that carries an idempotency key at
// most once (kit.Env.RunOnce): a retry gets the first run's result. Other
// requests, and read-only actions, are invoked as they are.
func (e *Engine) invokeOnce(ctx context.Context, a *action.Action, call action.Call, req Request) (json.RawMessage, error) {
	if req.IdempotencyKey == "" || a.ReadOnly {
		return e.invoke(ctx, a, call, req.Args)
	}
	if a.Secret {
		return nil, kit.Validation("idempotency_key", "%s takes none: its result holds a secret, which engram never stores; send it without one", a.Name)
	}
	once := kit.Once{Key: req.IdempotencyKey, Principal: call.Principal, Action: a.Name, Args: req.Args, Joinable: a.Joinable}
	return e.env.RunOnce(ctx, once, func(ctx context.Context) (json.RawMessage, error) {
		return e.invoke(ctx, a, call, req.Args)
	})
}

// checkArgs holds every action's arguments, from every face, to the limits
// of docs/batch.md before anything reads them: at most input.MaxArgs bytes,
// objects and arrays at most input.MaxDepth deep (the args object is the
// first level). A value past them could be stored and then never be read
// back, or take the memory of everything that reads it.
func checkArgs(args json.RawMessage) error {
	if len(args) > input.MaxArgs {
		return kit.Validation("args", "are %s; the limit is %s per action; split the work into several actions",
			input.Size(int64(len(args))), input.Size(input.MaxArgs)).With("limit", input.MaxArgs)
	}
	if where, err := input.CheckDepth(args, input.MaxDepth); err != nil {
		field := "args"
		if where != "" {
			field = where
		}
		return kit.Validation(field, "is nested more than %d levels deep (counting the args object); flatten it", input.MaxDepth).
			With("limit", input.MaxDepth)
	}
	return nil
}

// classify gives every error an error kind.
func classify(err error) error {
	var ee *errs.Error
	switch {
	case errors.Is(err, storage.ErrDamaged): // before errs.Error: a subsystem may have wrapped it as Internal
		return errs.New(errs.StorageDamaged, "%w", err)
	case errors.Is(err, storage.ErrFull):
		return errs.New(errs.StorageFull, "%w", err)
	case errors.As(err, &ee):
		return err
	case errors.As(err, new(*llm.Error)), errors.As(err, new(*llm.ParseError)):
		return kit.FromLLM(err)
	case errors.Is(err, storage.ErrConflict):
		return errs.New(errs.Conflict, "%w; try again", err)
	case errors.Is(err, storage.ErrTooBig):
		return errs.New(errs.Budget, "%w", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errs.New(errs.Internal, "interrupted: %w", err)
	}
	return errs.New(errs.Internal, "%w", err)
}
