//go:build !noplanning

package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// t0 is the seed's date; the engine clock stays there (fixed).
var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// waitLimit bounds every wait on another goroutine: a test that would
// hang fails instead. It is never slept: it only ends waits that went wrong.
const waitLimit = 10 * time.Second

// fakeSleep is the planner's injected sleeper: it sleeps not at all, and
// keeps a virtual time that advances by each wait, so that retry backoff is
// measured without waiting for it.
type fakeSleep struct {
	mu    sync.Mutex
	now   time.Duration
	waits []time.Duration
	// block, when set, makes every wait last until its context ends (a
	// backoff interrupted by cancellation); blocked is signalled then.
	block   atomic.Bool
	blocked chan struct{}
}

func newFakeSleep() *fakeSleep { return &fakeSleep{blocked: make(chan struct{}, 16)} }

func (f *fakeSleep) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.block.Load() {
		f.blocked <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	f.mu.Lock()
	f.now += d
	f.waits = append(f.waits, d)
	f.mu.Unlock()
	return nil
}

// Now is the virtual time: the sum of the waits so far.
func (f *fakeSleep) Now() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeSleep) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits)
}

// probes are test actions (namespace test.*) that plan subtasks run, to
// observe the executor from inside: call counts and order, concurrency,
// rendezvous between subtasks, gates the test opens, the virtual time of
// retries, and what the store holds while the plan runs.
type probes struct {
	env   *kit.Env
	sleep *fakeSleep

	mu      sync.Mutex
	calls   map[string]int
	order   []string
	times   map[string][]time.Duration // test.flaky: virtual time of each attempt
	started map[string]chan struct{}
	release map[string]chan struct{}
	seen    map[string]any // test.probe: what each probe saw

	active, maxActive atomic.Int32
}

func (p *probes) channel(m map[string]chan struct{}, name string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := m[name]
	if !ok {
		ch = make(chan struct{})
		m[name] = ch
	}
	return ch
}

// Started is closed when the test.meet or test.gate named name has begun.
func (p *probes) Started(name string) chan struct{} { return p.channel(p.started, name) }

// Release lets the test.gate named name finish.
func (p *probes) Release(name string) { close(p.channel(p.release, name)) }

func (p *probes) Calls(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[name]
}

func (p *probes) Order() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

func (p *probes) Seen(name string) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[name]
}

func (p *probes) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[name]++
	p.order = append(p.order, name)
	return p.calls[name]
}

func (p *probes) wait(ctx context.Context, ch chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	case <-time.After(waitLimit):
		return fmt.Errorf("waited %s for %s: the two subtasks never ran at the same time", waitLimit, what)
	}
}

type nameArgs struct {
	Name string `json:"name" arg:"required"`
}

type gateArgs struct {
	Name  string          `json:"name" arg:"required"`
	Key   string          `json:"key,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

type meetArgs struct {
	Me    string `json:"me" arg:"required"`
	Other string `json:"other" arg:"required"`
	Key   string `json:"key,omitempty"`
}

type flakyArgs struct {
	Name      string `json:"name" arg:"required"`
	FailTimes int    `json:"fail_times"`
}

type probeArgs struct {
	Name   string `json:"name" arg:"required"`
	PlanID string `json:"plan_id" arg:"required"`
	File   string `json:"file,omitempty"`
}

// bumpedKey holds test.bump_after_conflict's count.
var bumpedKey = storage.Key(storage.PrefixMeta, "planner-test-bumped")

func (p *probes) register(env *kit.Env) {
	p.env = env
	reg := env.Actions
	// test.record counts its calls per name, in order, and the subtasks
	// running it at once (yielding meanwhile, so that overlapping ones
	// would be seen).
	// test.bump_after_conflict writes as cortex.update with max_retries
	// does after a conflict: one Update reads the count and fails, the
	// next adds one to it.
	action.Register(reg, action.Spec{Name: "test.bump_after_conflict", Summary: "add one to a count after a conflict", Joinable: true},
		func(ctx context.Context, call action.Call, _ action.None) (map[string]any, error) {
			count := func(tx *kit.Txn) (int, error) {
				v, err := tx.Get(bumpedKey)
				if errors.Is(err, storage.ErrNotFound) {
					return 0, nil
				}
				n, _ := strconv.Atoi(string(v))
				return n, err
			}
			err := env.Update(ctx, func(tx *kit.Txn) error {
				if _, err := count(tx); err != nil {
					return err
				}
				return errs.New(errs.Conflict, "moved on")
			})
			if errs.KindOf(err) != errs.Conflict {
				return nil, err
			}
			var n int
			err = env.Update(ctx, func(tx *kit.Txn) error {
				var err error
				if n, err = count(tx); err != nil {
					return err
				}
				n++
				return tx.Set(bumpedKey, []byte(strconv.Itoa(n)))
			})
			return map[string]any{"count": n}, err
		})
	action.Register(reg, action.Spec{Name: "test.record", Summary: "count a call", ReadOnly: true},
		func(ctx context.Context, call action.Call, a nameArgs) (map[string]any, error) {
			now := p.active.Add(1)
			defer p.active.Add(-1)
			for {
				m := p.maxActive.Load()
				if now <= m || p.maxActive.CompareAndSwap(m, now) {
					break
				}
			}
			for range 50 {
				runtime.Gosched()
			}
			return map[string]any{"name": a.Name, "call": p.count(a.Name)}, nil
		})
	// test.meet: announces it started, then waits until other has.
	action.Register(reg, action.Spec{Name: "test.meet", Summary: "wait for another subtask to be running", ReadOnly: true},
		func(ctx context.Context, call action.Call, a meetArgs) (map[string]any, error) {
			close(p.Started(a.Me))
			if err := p.wait(ctx, p.Started(a.Other), a.Other); err != nil {
				return nil, err
			}
			return map[string]any{"met": a.Other}, nil
		})
	// test.gate: announces it started, then waits for the test to release
	// it; then sets key to value in the state, if given.
	action.Register(reg, action.Spec{Name: "test.gate", Summary: "wait for the test", ReadOnly: true},
		func(ctx context.Context, call action.Call, a gateArgs) (map[string]any, error) {
			if p.count(a.Name) == 1 {
				close(p.Started(a.Name))
			}
			select {
			case <-p.channel(p.release, a.Name):
			case <-ctx.Done():
				return nil, errs.New(errs.Internal, "gate %s interrupted: %w", a.Name, ctx.Err())
			}
			if a.Key != "" {
				args, _ := json.Marshal(map[string]any{"key": a.Key, "value": a.Value})
				if _, err := env.Run(ctx, call, "state.set", args); err != nil {
					return nil, err
				}
			}
			return map[string]any{"gate": a.Name}, nil
		})
	// test.incr_meet: reads key, meets other (so both branches are
	// mid-flight), increments key, meets again (so both have incremented),
	// and reads key again: it must see only its own increment.
	action.Register(reg, action.Spec{Name: "test.incr_meet", Summary: "increment while another branch does", ReadOnly: true},
		func(ctx context.Context, call action.Call, a meetArgs) (map[string]any, error) {
			get := func() (any, error) {
				out, err := env.Run(ctx, call, "state.get", json.RawMessage(fmt.Sprintf(`{"key": %q}`, a.Key)))
				if err != nil {
					return nil, err
				}
				var v struct{ Value any }
				return v.Value, json.Unmarshal(out, &v)
			}
			before, err := get()
			if err != nil {
				return nil, err
			}
			close(p.Started(a.Me + "/1"))
			if err := p.wait(ctx, p.Started(a.Other+"/1"), a.Other); err != nil {
				return nil, err
			}
			if _, err := env.Run(ctx, call, "state.incr", json.RawMessage(fmt.Sprintf(`{"key": %q}`, a.Key))); err != nil {
				return nil, err
			}
			close(p.Started(a.Me + "/2"))
			if err := p.wait(ctx, p.Started(a.Other+"/2"), a.Other); err != nil {
				return nil, err
			}
			after, err := get()
			if err != nil {
				return nil, err
			}
			return map[string]any{"before": before, "after": after}, nil
		})
	// test.flaky fails its first fail_times attempts, noting the virtual
	// time of each.
	action.Register(reg, action.Spec{Name: "test.flaky", Summary: "fail transiently", ReadOnly: true},
		func(ctx context.Context, call action.Call, a flakyArgs) (map[string]any, error) {
			n := p.count(a.Name)
			p.mu.Lock()
			p.times[a.Name] = append(p.times[a.Name], p.sleep.Now())
			p.mu.Unlock()
			if n <= a.FailTimes {
				return nil, errs.New(errs.Internal, "%s: transient failure %d", a.Name, n)
			}
			return map[string]any{"attempt": n}, nil
		})
	// test.probe notes which subtasks the store (or a checkpoint file)
	// holds as Completed while the plan runs.
	action.Register(reg, action.Spec{Name: "test.probe", Summary: "look at the checkpoint", ReadOnly: true},
		func(ctx context.Context, call action.Call, a probeArgs) (map[string]any, error) {
			var plan *planner.Plan
			var err error
			if a.File != "" {
				plan, err = planner.ReadCheckpointFile(a.File)
			} else {
				plan, err = planner.StoredPlan(env, a.PlanID)
			}
			if err != nil {
				return nil, err
			}
			var done []string
			for _, s := range plan.Subtasks {
				if s.Status == planner.Completed {
					done = append(done, s.ID)
				}
			}
			p.mu.Lock()
			p.seen[a.Name] = done
			p.mu.Unlock()
			p.count(a.Name)
			return map[string]any{"completed": done}, nil
		})
}

// rig is an engine as engram builds it (default subsystems and the
// planner), in memory unless dir is set, on a fixed clock, with a scripted
// model, the fake sleeper and the test probes. It runs actions through the
// shared enginetest.Rig (Try, Do, Fail), as the engine's agent.
type rig struct {
	enginetest.Rig
	e      *core.Engine
	pl     *planner.Planner
	model  *llmtest.Scripted
	sleep  *fakeSleep
	probes *probes
	clock  *clock.Fixed
}

type rigOptions struct {
	dir   string       // durable store there ("": in memory)
	llm   llm.Provider // default: r.model, a scripted model
	pOpts planner.Options
}

func newRig(t testing.TB) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{model: &llmtest.Scripted{}, sleep: newFakeSleep(), clock: clock.NewFixed(t0)}
	r.probes = &probes{sleep: r.sleep, calls: map[string]int{}, times: map[string][]time.Duration{},
		started: map[string]chan struct{}{}, release: map[string]chan struct{}{}, seen: map[string]any{}}
	provider := o.llm
	if provider == nil {
		provider = r.model
	}
	opts := core.Options{InMemory: o.dir == "", DataDir: o.dir, Clock: r.clock, IDSeed: "plan test", LLM: provider}
	popts := o.pOpts
	if popts.Sleep == nil {
		popts.Sleep = r.sleep.Sleep
	}
	opts.Subsystems = append(core.DefaultSubsystems(opts), func(env *kit.Env) error {
		r.pl = planner.Register(env, popts)
		r.probes.register(env)
		return nil
	})
	e, err := core.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	r.Rig = enginetest.ForConn(t, e)
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return r
}

// try runs an action as the engine's agent; args is a JSON string or a
// value. It fails no test, so goroutines may call it.
func (r *rig) try(name string, args any) (json.RawMessage, error) {
	return r.Run(context.Background(), conn.Request{Action: name, Args: enginetest.Args(r.T, args)})
}

// do runs an action that must succeed.
func (r *rig) do(name string, args any) json.RawMessage {
	r.T.Helper()
	return r.Do(enginetest.Who{}, name, args, nil)
}

// fail runs an action that must fail with kind, and returns its error.
func (r *rig) fail(kind errs.Kind, name string, args any) *errs.Error {
	r.T.Helper()
	return r.Fail(enginetest.Who{}, name, args, kind)
}

// st is a subtask as plan.create takes it: st("B", "noop", nil, "A").
func st(id, action string, args any, deps ...string) map[string]any {
	s := map[string]any{"id": id, "dependencies": append([]string{}, deps...)}
	if action != "" {
		spec := map[string]any{"name": action}
		if args != nil {
			spec["args"] = args
		}
		s["action"] = spec
	}
	return s
}

// create stores a plan by hand.
func (r *rig) create(id string, subtasks ...map[string]any) *planner.Plan {
	r.T.Helper()
	return decodePlan(r.T, r.do("plan.create", map[string]any{"id": id, "goal": "Goal of " + id, "subtasks": subtasks}))
}

func decodePlan(t testing.TB, raw json.RawMessage) *planner.Plan {
	t.Helper()
	var out struct{ Plan *planner.Plan }
	if err := json.Unmarshal(raw, &out); err != nil || out.Plan == nil {
		t.Fatalf("not a plan: %s (%v)", raw, err)
	}
	return out.Plan
}

// result is plan.execute's and plan.resume's answer.
type result struct {
	Plan     *planner.Plan  `json:"plan"`
	State    map[string]any `json:"state"`
	Progress planner.Counts `json:"progress"`
}

func decodeResult(t testing.TB, raw json.RawMessage) result {
	t.Helper()
	var res result
	if err := json.Unmarshal(raw, &res); err != nil || res.Plan == nil {
		t.Fatalf("not a run's result: %s (%v)", raw, err)
	}
	return res
}

// execute runs plan.execute with extra args (max_concurrent, ...).
func (r *rig) execute(id string, extra map[string]any) result {
	r.T.Helper()
	args := map[string]any{"plan_id": id}
	for k, v := range extra {
		args[k] = v
	}
	return decodeResult(r.T, r.do("plan.execute", args))
}

// executeAsync runs plan.execute in a goroutine; the channel gets its result.
func (r *rig) executeAsync(id string, extra map[string]any) <-chan asyncResult {
	args := map[string]any{"plan_id": id}
	for k, v := range extra {
		args[k] = v
	}
	return r.async("plan.execute", args)
}

type asyncResult struct {
	raw json.RawMessage
	err error
}

func (r *rig) async(name string, args any) <-chan asyncResult {
	done := make(chan asyncResult, 1)
	go func() {
		raw, err := r.try(name, args)
		done <- asyncResult{raw, err}
	}()
	return done
}

// await waits for an async action.
func await(t testing.TB, ch <-chan asyncResult) json.RawMessage {
	t.Helper()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("async action: %v", res.err)
		}
		return res.raw
	case <-time.After(waitLimit):
		t.Fatalf("the action did not finish within %s", waitLimit)
	}
	return nil
}

// waitFor waits until ch is closed.
func waitFor(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("waited %s for %s", waitLimit, what)
	}
}

// subtaskOf returns a plan's subtask by id.
func subtaskOf(t testing.TB, p *planner.Plan, id string) *planner.Subtask {
	t.Helper()
	for _, s := range p.Subtasks {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("plan %s has no subtask %s (has %s)", p.ID, id, ids(p))
	return nil
}

func ids(p *planner.Plan) string {
	var out []string
	for _, s := range p.Subtasks {
		out = append(out, s.ID+":"+s.Status)
	}
	return strings.Join(out, ", ")
}

// recorder collects the engine's events.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
	signal chan struct{}
}

// record subscribes to every event until the test ends.
func (r *rig) record() *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r.T.Cleanup(cancel)
	ch := r.e.SubscribeBuffer(ctx, 4096)
	rec := &recorder{signal: make(chan struct{}, 1)}
	go func() {
		for ev := range ch {
			rec.mu.Lock()
			rec.events = append(rec.events, ev)
			rec.mu.Unlock()
			select {
			case rec.signal <- struct{}{}:
			default:
			}
		}
	}()
	return rec
}

// planEvent is one plan.subtask.* event's data.
type planEvent struct {
	Seq      uint64
	Name     string
	Subtask  string
	Status   string
	Attempt  int
	Attempts int
}

func (rec *recorder) plan() []planEvent {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []planEvent
	for _, ev := range rec.events {
		pe := planEvent{Seq: ev.Seq, Name: ev.Name}
		switch d := ev.Data.(type) {
		case planner.SubtaskStartedEvent:
			pe.Subtask, pe.Attempt = d.Subtask, d.Attempt
		case planner.SubtaskFinishedEvent:
			pe.Subtask, pe.Status, pe.Attempts = d.Subtask, d.Status, d.Attempts
		default:
			continue
		}
		out = append(out, pe)
	}
	return out
}

// changes lists the plan.changed events' changes ("created", "replanned").
func (rec *recorder) changes() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, ev := range rec.events {
		if d, ok := planner.EventPlanChanged.Of(ev); ok {
			out = append(out, d.Change)
		}
	}
	return out
}

// waitEvent waits for an event (name, subtask) and returns its seq.
func (rec *recorder) waitEvent(t testing.TB, name, subtask string) uint64 {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		for _, ev := range rec.plan() {
			if ev.Name == name && ev.Subtask == subtask {
				return ev.Seq
			}
		}
		select {
		case <-rec.signal:
		case <-deadline:
			t.Fatalf("no %s event for %s within %s; events: %+v", name, subtask, waitLimit, rec.plan())
		}
	}
}

// runs waits until n runs have finished (n plan.finished events): every
// event of those runs has then been recorded (plan.finished comes last).
func (rec *recorder) runs(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		rec.mu.Lock()
		got := 0
		for _, ev := range rec.events {
			if ev.Name == planner.EventPlanFinished.Name() {
				got++
			}
		}
		rec.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-rec.signal:
		case <-deadline:
			t.Fatalf("%d of %d runs finished within %s", got, n, waitLimit)
		}
	}
}

// seq is the seq of the first event (name, subtask); 0 if none.
func (rec *recorder) seq(name, subtask string) uint64 {
	for _, ev := range rec.plan() {
		if ev.Name == name && ev.Subtask == subtask {
			return ev.Seq
		}
	}
	return 0
}

// started lists the subtasks started (first attempts), in order.
func (rec *recorder) started() []string {
	var out []string
	for _, ev := range rec.plan() {
		if ev.Name == planner.EventSubtaskStarted.Name() && ev.Attempt == 1 {
			out = append(out, ev.Subtask)
		}
	}
	return out
}

// jsonEqual compares two values as JSON.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// planJSON is a plan as JSON, for comparing before and after.
func planJSON(t testing.TB, p *planner.Plan) string {
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// callOf is the call the engine would make for the default agent.
func callOf(r *rig) action.Call { return action.Call{Principal: "local", Clock: r.e.Clock()} }

// internals are words that would show Go's implementation in a message.
var internals = []string{"planner.", "proposal", "proposed", "Go value", "Go struct", "json:", "*errs", "args", "reflect", "goroutine", "panic"}
