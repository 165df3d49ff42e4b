package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/storage"
	"github.com/google/uuid"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func newEngine(t testing.TB) (*Engine, *clock.Fixed) {
	t.Helper()
	c := clock.NewFixed(t0)
	// A bare engine: these tests are about the engine's own mechanics.
	e, err := Open(Options{InMemory: true, Clock: c, Subsystems: []Subsystem{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e, c
}

// do runs an action that must succeed, through the shared test rig.
func do(t testing.TB, e *Engine, name, turn, args string) json.RawMessage {
	t.Helper()
	return enginetest.ForConn(t, e).Do(enginetest.Who{Turn: turn}, name, args, nil)
}

// doErr runs a request that must fail with kind, its message holding every
// fragment.
func doErr(t testing.TB, e *Engine, req Request, kind errs.Kind, fragments ...string) {
	t.Helper()
	_ = doErrAs(t, e, req, kind, fragments...) // it fails t itself; the error is for a closer look
}

// doErrAs is doErr that also returns the *errs.Error, for a closer look.
func doErrAs(t testing.TB, e *Engine, req Request, kind errs.Kind, fragments ...string) *errs.Error {
	t.Helper()
	out, err := e.Do(context.Background(), req)
	return enginetest.CheckErr(t, req.Action, string(req.Args), out, err, kind, fragments...)
}

func decode[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

func counts(t testing.TB, e *Engine) map[string]map[string]int {
	t.Helper()
	return decode[Info](t, do(t, e, "engine.info", "", "")).Counts
}

func TestEngineInfo(t *testing.T) {
	e, _ := newEngine(t)
	info := decode[Info](t, do(t, e, "engine.info", "", "{}"))
	if info.Store != "in-memory" || info.DataDir != "" || info.Provider != "offline" || info.Agent != DefaultAgent ||
		info.Version != Version || info.Actions != len(e.Actions()) || info.SyncWrites || info.Tokenizer != "cl100k_base" {
		t.Fatalf("info %+v", info)
	}
	want := map[string]map[string]int{"trace": {"entries": 0, "turns_traced": 0}, "turns": {"open": 0, "ended": 0}}
	if fmt.Sprint(info.Counts) != fmt.Sprint(want) {
		t.Fatalf("counts %v, want %v", info.Counts, want)
	}
	if e.StoreLabel() != "in-memory" || e.Agent() != "local" {
		t.Fatalf("StoreLabel %q Agent %q", e.StoreLabel(), e.Agent())
	}
	do(t, e, "turn.start", "t1", "")
	do(t, e, "turn.start", "t2", "")
	do(t, e, "turn.end", "t1", "")
	got := counts(t, e)
	want = map[string]map[string]int{"trace": {"entries": 3, "turns_traced": 2}, "turns": {"open": 1, "ended": 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts after turns %v, want %v", got, want)
	}
	// A subsystem's counter shows up.
	e.Env().AddCounter("cortex", func() (map[string]int, error) { return map[string]int{"items": 7}, nil })
	if got := counts(t, e); got["cortex"]["items"] != 7 {
		t.Fatalf("counts %v", got)
	}
	doErr(t, e, Request{Action: "engine.info", Args: json.RawMessage(`{"x":1}`)}, errs.Validation, `unknown field "x"`)
}

// engine.info without the counts (the console's first frame asks so: they
// read every item of a large store) says everything else, the same.
func TestEngineInfoWithoutCountsLeavesThemOut(t *testing.T) {
	e, _ := newEngine(t)
	raw := do(t, e, "engine.info", "", `{"counts": false}`)
	if strings.Contains(string(raw), `"counts"`) {
		t.Fatalf("counts in %s", raw)
	}
	fast, full := decode[Info](t, raw), decode[Info](t, do(t, e, "engine.info", "", `{"counts": true}`))
	if full.Counts == nil {
		t.Fatal("counts: true left them out")
	}
	full.Counts = nil
	if fmt.Sprint(fast) != fmt.Sprint(full) {
		t.Fatalf("without counts %+v, with them %+v", fast, full)
	}
}

func TestEngineOptions(t *testing.T) {
	e, err := Open(Options{InMemory: true, Agent: "agent_z", Clock: clock.NewFixed(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	}()
	info := decode[Info](t, do(t, e, "engine.info", "", ""))
	if info.Agent != "agent_z" {
		t.Fatalf("agent %q", info.Agent)
	}
	wc := decode[TurnStartResult](t, do(t, e, "turn.start", "t", "")).Context
	if wc.Principal != "agent_z" {
		t.Fatalf("default principal %q", wc.Principal)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestActionsList(t *testing.T) {
	e, _ := newEngine(t)
	all := decode[conn.ListActionsResult](t, do(t, e, "actions.list", "", ""))
	var names []string
	byName := map[string]conn.ActionInfo{}
	for _, a := range all.Actions {
		names = append(names, a.Name)
		byName[a.Name] = a
		if a.Description == "" || a.Args == nil {
			t.Errorf("%s: description %q args %v", a.Name, a.Description, a.Args)
		}
	}
	if got := strings.Join(names, " "); got != "actions.list chat.send clients.disconnect clients.list clients.refuse embeddings.reembed engine.info llm.complete trace.configure trace.list turn.end turn.start" {
		t.Fatalf("actions %q", got)
	}
	if !byName["engine.info"].ReadOnly || !byName["trace.list"].ReadOnly || byName["turn.start"].ReadOnly || byName["turn.end"].ReadOnly {
		t.Fatal("read_only flags wrong")
	}
	tl := byName["trace.list"].Args
	if len(tl) != 3 || tl[0].Name != "turn" || tl[0].Type != "string" || tl[2].Name != "limit" || tl[2].Type != "integer" || tl[2].Help == "" {
		t.Fatalf("trace.list args %+v", tl)
	}
	if a := byName["turn.end"].Args; len(a) != 1 || a[0].Name != "updates" || a[0].Type != "object" {
		t.Fatalf("turn.end args %+v", a)
	}
	if a := byName["engine.info"].Args; len(a) != 1 || a[0].Name != "counts" || a[0].Type != "boolean" || a[0].Required {
		t.Fatalf("engine.info args %+v", a)
	}
	// The raw JSON has "args": [] for an action without args (not null).
	// The raw JSON lists "args": [] for an action without args, never null.
	if bytes.Contains(do(t, e, "actions.list", "", ""), []byte(`"args":null`)) {
		t.Fatal(`an action lists "args" as null`)
	}
	for _, ns := range []string{"turn", "turn."} {
		got := decode[conn.ListActionsResult](t, do(t, e, "actions.list", "", `{"namespace":"`+ns+`"}`))
		if len(got.Actions) != 2 || got.Actions[0].Name != "turn.end" || got.Actions[1].Name != "turn.start" {
			t.Fatalf("namespace %q: %+v", ns, got.Actions)
		}
	}
	// "tur" is not a namespace, just a prefix of one.
	for _, ns := range []string{"cortex", "tur"} {
		ee := doErrAs(t, e, Request{Action: "actions.list", Args: json.RawMessage(`{"namespace":"` + ns + `"}`)}, errs.NotFound, ns)
		if ee.Details["field"] != "namespace" {
			t.Fatalf("details %v", ee.Details)
		}
	}
}

func TestTraceList(t *testing.T) {
	e, _ := newEngine(t)
	ee := doErrAs(t, e, Request{Action: "trace.list", Args: json.RawMessage(`{"limit": -1}`)}, errs.Validation, "limit", "-1")
	if ee.Details["field"] != "limit" {
		t.Fatalf("details %v", ee.Details)
	}
	doErr(t, e, Request{Action: "trace.list", Args: json.RawMessage(`{"limit": "3"}`)}, errs.Validation, "args.limit: expected integer, got string")
	doErr(t, e, Request{Action: "trace.list", Args: json.RawMessage(`{"turn_id": "a"}`)}, errs.Validation, `unknown field "turn_id"`)

	empty := decode[trace.ListResult](t, do(t, e, "trace.list", "", ""))
	if empty.Entries == nil || len(empty.Entries) != 0 || empty.Count != 0 || empty.More {
		t.Fatalf("empty trace %+v", empty)
	}
	for i := range 4 {
		do(t, e, "turn.start", fmt.Sprint("t", i), "")
	}
	do(t, e, "turn.end", "t1", "")
	all := decode[trace.ListResult](t, do(t, e, "trace.list", "", ""))
	if all.Count != 5 || len(all.Entries) != 5 || all.More {
		t.Fatalf("all %+v", all)
	}
	t1 := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"turn":"t1"}`))
	if t1.Count != 2 || t1.Entries[0].Kind != "turn.start" || t1.Entries[1].Kind != "turn.end" {
		t.Fatalf("turn t1 %+v", t1)
	}
	starts := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"kind":"turn.start","limit":2}`))
	if starts.Count != 2 || !starts.More || starts.Entries[0].TurnID != "t2" || starts.Entries[1].TurnID != "t3" {
		t.Fatalf("last two starts %+v", starts)
	}
	both := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"kind":"turn.end","turn":"t0"}`))
	if both.Count != 0 {
		t.Fatalf("t0 has no end: %+v", both)
	}
	// Default limit 100.
	for i := range 120 {
		do(t, e, "turn.start", fmt.Sprint("many", i), "")
	}
	def := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"limit":0}`))
	if def.Count != defaultTraceLimit || !def.More || def.Entries[len(def.Entries)-1].TurnID != "many119" {
		t.Fatalf("default limit: count %d more %v", def.Count, def.More)
	}
}

func TestTurnStart(t *testing.T) {
	e, c := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tap := e.Env().Events.Tap(10)
	defer tap.Close()

	out, err := e.Do(ctx, Request{Action: "turn.start", Turn: "turn_A_001", Principal: "agent_a",
		Args: json.RawMessage(`{"input":"hello","channel":"sms","thread_id":"th1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	wc := decode[TurnStartResult](t, out).Context
	if wc.TurnID != "turn_A_001" || wc.Principal != "agent_a" || !wc.StartedAt.Equal(t0) || wc.Input != "hello" ||
		wc.Channel != "sms" || wc.ThreadID != "th1" || wc.Conversation != "default" || wc.Providers == nil ||
		len(wc.Providers) != 0 || wc.Sections == nil || len(wc.Sections) != 0 {
		t.Fatalf("context %+v", wc)
	}
	// Traced, in the turn, and announced.
	// (As agent_a: trace.list shows an agent its own entries and those about what it may read.)
	tl := decode[trace.ListResult](t, enginetest.ForConn(t, e).Do(enginetest.Who{As: "agent_a"}, "trace.list", `{"turn":"turn_A_001"}`, nil))
	if tl.Count != 1 || tl.Entries[0].Kind != "turn.start" || tl.Entries[0].Principal != "agent_a" || !tl.Entries[0].At.Equal(t0) {
		t.Fatalf("trace %+v", tl)
	}
	evs := tap.Drain()
	if len(evs) != 1 || evs[0].Name != kit.EventTraceRecorded.Name() || evs[0].Data.(trace.Entry).TurnID != "turn_A_001" {
		t.Fatalf("events %+v", evs)
	}

	// Without a turn id, one is generated: a UUIDv7 of the engine clock.
	c.Advance(time.Minute)
	wc = decode[TurnStartResult](t, do(t, e, "turn.start", "", `{"conversation":"work"}`)).Context
	u, err := uuid.Parse(wc.TurnID)
	if err != nil || u.Version() != 7 || u.String() != wc.TurnID {
		t.Fatalf("generated turn id %q: %v", wc.TurnID, err)
	}
	if sec, nsec := u.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != t0.Add(time.Minute).UnixMilli() {
		t.Fatalf("generated id time %v", time.Unix(sec, nsec))
	}
	if wc.Conversation != "work" || wc.Principal != DefaultAgent || !wc.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("context %+v", wc)
	}
	// The generated id is the trace's turn.
	if tl := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"turn":"`+wc.TurnID+`"}`)); tl.Count != 1 {
		t.Fatalf("generated turn not traced: %+v", tl)
	}
	// A pinned engine clock decides the time.
	pin := time.Date(2024, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	e.Clock().Pin(pin)
	wc = decode[TurnStartResult](t, do(t, e, "turn.start", "pinned", "")).Context
	e.Clock().Unpin()
	if !wc.StartedAt.Equal(pin) {
		t.Fatalf("pinned start %v", wc.StartedAt)
	}
}

func TestTurnStartValidation(t *testing.T) {
	e, _ := newEngine(t)
	before := counts(t, e)
	ee := doErrAs(t, e, Request{Action: "turn.start", Turn: "t", Args: json.RawMessage(`{"channel":"fax"}`)},
		errs.Validation, `unknown channel "fax"`, "web, app, sms, whatsapp, voice")
	if ee.Details["field"] != "channel" {
		t.Fatalf("details %v", ee.Details)
	}
	doErr(t, e, Request{Action: "turn.start", Turn: "t", Args: json.RawMessage(`{"Channel":"sms"}`)}, errs.Validation, `unknown field "Channel"`)
	doErr(t, e, Request{Action: "turn.start", Turn: "t", Args: json.RawMessage(`{"input": 5}`)}, errs.Validation, "args.input: expected string")
	if after := counts(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("failed turn.start changed counts: %v → %v", before, after)
	}
	// The turn was not stored: starting it properly now works.
	do(t, e, "turn.start", "t", `{"channel":"web"}`)
}

func TestTurnStartDuplicate(t *testing.T) {
	e, c := newEngine(t)
	do(t, e, "turn.start", "dup", `{"input":"first"}`)
	c.Advance(time.Second)
	ee := doErrAs(t, e, Request{Action: "turn.start", Turn: "dup", Args: json.RawMessage(`{"input":"second"}`)},
		errs.Conflict, `turn "dup" already started`, t0.Format(time.RFC3339Nano))
	cur, ok := ee.Details["current"].(TurnRecord)
	if !ok || cur.TurnID != "dup" || cur.Input != "first" || !cur.StartedAt.Equal(t0) || cur.EndedAt != nil {
		t.Fatalf("details.current %#v", ee.Details["current"])
	}
	if got := counts(t, e); got["trace"]["entries"] != 1 || got["turns"]["open"] != 1 {
		t.Fatalf("counts after the conflict %v", got)
	}
}

// TestTurnStartConcurrentSameID: of many concurrent starts of one turn,
// exactly one wins; the others get ConflictError.
func TestTurnStartConcurrentSameID(t *testing.T) {
	e, _ := newEngine(t)
	const n = 8
	errsCh := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.Do(context.Background(), Request{Action: "turn.start", Turn: "race"})
			errsCh <- err
		}()
	}
	wg.Wait()
	close(errsCh)
	ok := 0
	for err := range errsCh {
		switch errs.KindOf(err) {
		case "":
			ok++
		case errs.Conflict:
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent starts succeeded, want 1", ok)
	}
	if got := counts(t, e); got["trace"]["entries"] != 1 || got["turns"]["open"] != 1 {
		t.Fatalf("counts %v", got)
	}
}

func TestTurnEnd(t *testing.T) {
	e, c := newEngine(t)
	ee := doErrAs(t, e, Request{Action: "turn.end"}, errs.Validation, "turn.end needs the turn")
	if ee.Details["field"] != "turn" {
		t.Fatalf("details %v", ee.Details)
	}
	ee = doErrAs(t, e, Request{Action: "turn.end", Turn: "ghost"}, errs.NotFound, `turn "ghost" was never started`)
	if ee.Details["field"] != "turn" {
		t.Fatalf("details %v", ee.Details)
	}
	do(t, e, "turn.start", "t1", "")
	ee = doErrAs(t, e, Request{Action: "turn.end", Turn: "t1", Args: json.RawMessage(`{"updates":{"cortex":{}}}`)},
		errs.Validation, `no context provider named "cortex"`, "no context providers are registered")
	if ee.Details["field"] != "updates.cortex" {
		t.Fatalf("details %v", ee.Details)
	}
	// A key that looks like a format string is reported as it is.
	doErr(t, e, Request{Action: "turn.end", Turn: "t1", Args: json.RawMessage(`{"updates":{"%s%d":1}}`)},
		errs.Validation, `updates.%s%d: no context provider named "%s%d"`)
	doErr(t, e, Request{Action: "turn.end", Turn: "t1", Args: json.RawMessage(`{"updates":[]}`)}, errs.Validation, "args.updates: expected object")

	c.Advance(3 * time.Second)
	res := decode[TurnEndResult](t, do(t, e, "turn.end", "t1", ""))
	if res.TurnID != "t1" || !res.StartedAt.Equal(t0) || !res.EndedAt.Equal(t0.Add(3*time.Second)) || res.Committed == nil || len(res.Committed) != 0 {
		t.Fatalf("turn.end %+v", res)
	}
	if got := counts(t, e); got["turns"]["ended"] != 1 || got["turns"]["open"] != 0 || got["trace"]["entries"] != 2 {
		t.Fatalf("counts %v", got)
	}
	ee = doErrAs(t, e, Request{Action: "turn.end", Turn: "t1"}, errs.Conflict, `turn "t1" already ended`)
	if cur, ok := ee.Details["current"].(TurnRecord); !ok || cur.EndedAt == nil || !cur.EndedAt.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("details.current %#v", ee.Details["current"])
	}
	// An ended turn cannot be started again either.
	doErr(t, e, Request{Action: "turn.start", Turn: "t1"}, errs.Conflict)
	if got := counts(t, e); got["trace"]["entries"] != 2 {
		t.Fatalf("failed actions were traced: %v", got)
	}
}

// fakeProvider is a context provider that contributes a section and commits
// its updates under meta/fake/<turn>.
type fakeProvider struct {
	name string

	mu       sync.Mutex
	starts   []kit.TurnStart
	ends     []kit.TurnEnd
	failWith error
}

func (p *fakeProvider) Name() string { return p.name }

func (p *fakeProvider) Context(_ context.Context, s kit.TurnStart) (kit.Section, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts = append(p.starts, s)
	return kit.Section{Data: map[string]string{"hint": p.name + " saw " + s.Input}}, nil
}

func fakeKey(name, turn string) []byte { return storage.Key(storage.PrefixMeta, "fake", name, turn) }

func (p *fakeProvider) Commit(_ context.Context, tx *kit.Txn, end kit.TurnEnd) (any, error) {
	p.mu.Lock()
	p.ends = append(p.ends, end)
	fail := p.failWith
	p.mu.Unlock()
	// Write first, then maybe fail: the write must be rolled back.
	if err := tx.Set(fakeKey(p.name, end.TurnID), append([]byte("v:"), end.Updates...)); err != nil {
		return nil, err
	}
	if fail != nil {
		return nil, fail
	}
	if end.Updates == nil {
		return nil, nil
	}
	return map[string]json.RawMessage{"saved": end.Updates}, nil
}

func storedKey(t *testing.T, e *Engine, k []byte) (string, bool) {
	t.Helper()
	var v []byte
	err := e.Env().Store.View(func(tx *storage.Tx) error {
		var err error
		v, err = tx.Get(k)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v), true
}

func TestContextProviders(t *testing.T) {
	e, _ := newEngine(t)
	mem := &fakeProvider{name: "memory"}
	cor := &fakeProvider{name: "cortex"}
	e.Env().AddProvider(mem)
	e.Env().AddProvider(cor)

	out, err := e.Do(context.Background(), Request{Action: "turn.start", Turn: "t1", Principal: "agent_a", Args: json.RawMessage(`{"input":"hi","channel":"web"}`)})
	if err != nil {
		t.Fatal(err)
	}
	wc := decode[TurnStartResult](t, out).Context
	if strings.Join(wc.Providers, ",") != "cortex,memory" {
		t.Fatalf("providers %v", wc.Providers)
	}
	if got := string(wc.Sections["cortex"]) + " " + string(wc.Sections["memory"]); got != `{"hint":"cortex saw hi"} {"hint":"memory saw hi"}` || len(wc.Sections) != 2 {
		t.Fatalf("sections %s", got)
	}
	if len(mem.starts) != 1 || mem.starts[0] != (kit.TurnStart{TurnID: "t1", Principal: "agent_a", Input: "hi", Channel: "web", Conversation: "default", At: t0}) {
		t.Fatalf("provider saw %+v", mem.starts)
	}
	if tl := decode[trace.ListResult](t, enginetest.ForConn(t, e).Do(enginetest.Who{As: "agent_a", Turn: "t1"}, "trace.list", "", nil)); !strings.Contains(tl.Entries[0].Message, "2 context section(s) from 2 provider(s)") {
		t.Fatalf("trace %+v", tl.Entries)
	}

	// Unknown provider key: names the known ones.
	doErr(t, e, Request{Action: "turn.end", Turn: "t1", Principal: "agent_a", Args: json.RawMessage(`{"updates":{"history":{}}}`)},
		errs.Validation, "the providers are cortex, memory")

	// A failing provider rolls back the whole turn.end.
	cor.failWith = errs.New(errs.Conflict, "goal g1 changed")
	before := counts(t, e)
	doErr(t, e, Request{Action: "turn.end", Turn: "t1", Principal: "agent_a", Args: json.RawMessage(`{"updates":{"memory":{"note":"x"},"cortex":[1]}}`)},
		errs.Conflict, "context provider cortex", "goal g1 changed")
	if len(cor.ends) != 1 {
		t.Fatalf("cortex Commit called %d times", len(cor.ends))
	}
	if _, ok := storedKey(t, e, fakeKey("cortex", "t1")); ok {
		t.Fatal("the failing provider's write survived")
	}
	if _, ok := storedKey(t, e, fakeKey("memory", "t1")); ok {
		t.Fatal("another provider's write survived a failed turn.end")
	}
	if after := counts(t, e); fmt.Sprint(after) != fmt.Sprint(before) || after["turns"]["open"] != 1 {
		t.Fatalf("failed turn.end changed counts: %v → %v", before, after)
	}
	if tl := decode[trace.ListResult](t, do(t, e, "trace.list", "", `{"kind":"turn.end"}`)); tl.Count != 0 {
		t.Fatalf("failed turn.end traced: %+v", tl)
	}
	// A plain error from a provider is Internal.
	cor.failWith = errors.New("disk full")
	doErr(t, e, Request{Action: "turn.end", Turn: "t1", Principal: "agent_a"}, errs.Internal, "context provider cortex: disk full")

	// Once the provider recovers, the turn ends, with each provider getting
	// its own updates inside the transaction.
	cor.failWith = nil
	res, err := e.Do(context.Background(), Request{Action: "turn.end", Turn: "t1", Principal: "agent_a", Args: json.RawMessage(`{"updates":{"memory":{"note":"x"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var end struct {
		Committed map[string]map[string]json.RawMessage `json:"committed"`
	}
	if err := json.Unmarshal(res, &end); err != nil {
		t.Fatal(err)
	}
	if len(end.Committed) != 1 || string(end.Committed["memory"]["saved"]) != `{"note":"x"}` {
		t.Fatalf("committed %s", res)
	}
	if last := mem.ends[len(mem.ends)-1]; string(last.Updates) != `{"note":"x"}` || last.TurnID != "t1" || last.Principal != "agent_a" {
		t.Fatalf("memory got %+v", last)
	}
	if last := cor.ends[len(cor.ends)-1]; last.Updates != nil {
		t.Fatalf("cortex got updates %s it was not sent", last.Updates)
	}
	if v, ok := storedKey(t, e, fakeKey("memory", "t1")); !ok || v != `v:{"note":"x"}` {
		t.Fatalf("memory's write: %q %v", v, ok)
	}
	if _, ok := storedKey(t, e, fakeKey("cortex", "t1")); !ok {
		t.Fatal("cortex's write is missing")
	}
	tl := decode[trace.ListResult](t, enginetest.ForConn(t, e).Do(enginetest.Who{As: "agent_a"}, "trace.list", `{"kind":"turn.end"}`, nil))
	if tl.Count != 1 || !strings.Contains(tl.Entries[0].Message, "1 provider(s) committed") {
		t.Fatalf("trace %+v", tl)
	}
}

func TestProviderContextError(t *testing.T) {
	e, _ := newEngine(t)
	e.Env().AddProvider(failingContext{})
	doErr(t, e, Request{Action: "turn.start", Turn: "t"}, errs.Validation, "context provider bad: nope")
	if got := counts(t, e); got["turns"]["open"] != 0 || got["trace"]["entries"] != 0 {
		t.Fatalf("counts %v", got)
	}
}

type failingContext struct{}

func (failingContext) Name() string { return "bad" }
func (failingContext) Context(context.Context, kit.TurnStart) (kit.Section, error) {
	return kit.Section{}, errs.New(errs.Validation, "nope")
}
func (failingContext) Commit(context.Context, *kit.Txn, kit.TurnEnd) (any, error) { return nil, nil }

func TestDoClassifiesErrors(t *testing.T) {
	e, _ := newEngine(t)
	plain := errors.New("disk on fire")
	cases := []struct {
		name string
		err  error
		kind errs.Kind
		msg  string
	}{
		{"test.plain", plain, errs.Internal, "disk on fire"},
		{"test.wrapped", fmt.Errorf("saving: %w", plain), errs.Internal, "saving: disk on fire"},
		{"test.conflict", fmt.Errorf("x: %w", storage.ErrConflict), errs.Conflict, "try again"},
		{"test.toobig", storage.ErrTooBig, errs.Budget, "transaction too big"},
		{"test.cancelled", context.Canceled, errs.Internal, "interrupted"},
		{"test.deadline", fmt.Errorf("waiting: %w", context.DeadlineExceeded), errs.Internal, "interrupted"},
		{"test.kind", fmt.Errorf("ctx: %w", errs.New(errs.Permission, "not yours")), errs.Permission, "ctx: not yours"},
	}
	for _, c := range cases {
		action.Register(e.Env().Actions, action.Spec{Name: c.name, Summary: "fails"}, func(context.Context, action.Call, struct{}) (struct{}, error) {
			return struct{}{}, c.err
		})
		_, err := e.Do(context.Background(), Request{Action: c.name})
		if got := errs.KindOf(err); got != c.kind {
			t.Errorf("%s: kind %s, want %s", c.name, got, c.kind)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: the cause is lost: %v", c.name, err)
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: message %q lacks %q", c.name, err, c.msg)
		}
		var ee *errs.Error
		if !errors.As(err, &ee) {
			t.Errorf("%s: %T is not an *errs.Error", c.name, err)
		}
	}
	doErr(t, e, Request{Action: "turn.strat"}, errs.UnknownAction, `did you mean "turn.start"?`)
	doErr(t, e, Request{Action: "test.plain", Args: json.RawMessage(`{`)}, errs.Parse)
	// The call carries the principal and turn.
	var got action.Call
	action.Register(e.Env().Actions, action.Spec{Name: "test.call", Summary: "records its call"}, func(_ context.Context, c action.Call, _ struct{}) (struct{}, error) {
		got = c
		return struct{}{}, nil
	})
	do(t, e, "test.call", "turn_9", "")
	if got.Principal != DefaultAgent || got.Turn != "turn_9" || got.Clock != e.Clock() {
		t.Fatalf("call %+v", got)
	}
}

// script runs a fixed sequence of actions and returns every output (results
// and errors) as one byte string.
func script(t *testing.T, e *Engine, c *clock.Fixed) []byte {
	t.Helper()
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := e.SubscribeBuffer(ctx, 64)
	steps := []Request{
		{Action: "engine.info"},
		{Action: "turn.start", Args: json.RawMessage(`{"input":"a"}`)},
		{Action: "turn.start", Args: json.RawMessage(`{"input":"b"}`)},
		{Action: "turn.start", Turn: "fixed", Principal: "agent_b"},
		{Action: "turn.end", Turn: "fixed", Principal: "agent_b"},
		{Action: "turn.end", Turn: "fixed", Principal: "agent_b"},
		{Action: "turn.start", Args: json.RawMessage(`{"channel":"fax"}`)},
		{Action: "trace.list"},
		{Action: "engine.info"},
	}
	for i, s := range steps {
		out, err := e.Do(context.Background(), s)
		fmt.Fprintf(&buf, "%d %s %v\n", i, out, errs.As(err))
		c.Advance(1500 * time.Microsecond)
	}
	// The events too: the 4 successful turn steps were traced.
	for range 4 {
		select {
		case ev := <-evs:
			b, _ := json.Marshal(ev)
			fmt.Fprintf(&buf, "%s\n", b)
		case <-time.After(10 * time.Second):
			t.Fatalf("fewer than 4 events arrived:\n%s", buf.Bytes())
		}
	}
	return buf.Bytes()
}

func TestDeterministicOutput(t *testing.T) {
	e1, c1 := newEngine(t)
	e2, c2 := newEngine(t)
	a, b := script(t, e1, c1), script(t, e2, c2)
	t.Logf("script output:\n%s", a)
	if !bytes.Equal(a, b) {
		t.Fatalf("same script, different output:\n%s\n---\n%s", a, b)
	}
	// The generated ids are there, and differ from each other.
	var ids []string
	for _, line := range strings.Split(string(a), "\n")[1:3] {
		line = strings.TrimSuffix(line[2:], " <nil>")
		ids = append(ids, decode[TurnStartResult](t, json.RawMessage(line)).Context.TurnID)
	}
	if ids[0] == "" || ids[0] == ids[1] {
		t.Fatalf("generated ids %q", ids)
	}
	// An explicit seed changes the ids (and nothing else about the run).
	c3 := clock.NewFixed(t0)
	e3, err := Open(Options{InMemory: true, Clock: c3, IDSeed: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e3.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	}()
	if got := script(t, e3, c3); bytes.Equal(got, a) || !strings.Contains(string(got), `"input":"a"`) {
		t.Fatal("a different id seed gave the same output")
	}
}

func TestDurableEpochChangesIDs(t *testing.T) {
	dir := t.TempDir()
	open := func() *Engine {
		e, err := Open(Options{DataDir: dir, Clock: clock.NewFixed(t0), Subsystems: []Subsystem{}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	startID := func(e *Engine) string {
		return decode[TurnStartResult](t, do(t, e, "turn.start", "", "")).Context.TurnID
	}
	e := open()
	info := decode[Info](t, do(t, e, "engine.info", "", ""))
	if info.Store != "durable" || info.DataDir == "" || e.StoreLabel() != info.DataDir {
		t.Fatalf("durable info %+v", info)
	}
	first := startID(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open()
	second := startID(e)
	if first == second {
		t.Fatalf("reopening the same store with the same clock repeated id %s", first)
	}
	// What the first run stored is still there, and its turn is known.
	if got := counts(t, e); got["turns"]["open"] != 2 || got["trace"]["entries"] != 2 {
		t.Fatalf("counts after reopening %v", got)
	}
	doErr(t, e, Request{Action: "turn.start", Turn: first}, errs.Conflict)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// In memory, every run starts at the same epoch: the same ids.
	m1, _ := newEngine(t)
	m2, _ := newEngine(t)
	if a, b := startID(m1), startID(m2); a != b {
		t.Fatalf("in-memory runs gave different ids %s, %s", a, b)
	}
}

func TestSubscribe(t *testing.T) {
	e, _ := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.SubscribeBuffer(ctx, 4)
	do(t, e, "turn.start", "t", "")
	ev := <-ch
	if ev.Name != kit.EventTraceRecorded.Name() || ev.Data.(trace.Entry).Kind != "turn.start" || !ev.At.Equal(t0) {
		t.Fatalf("event %+v", ev)
	}
	// Failed actions publish nothing.
	doErr(t, e, Request{Action: "turn.start", Turn: "t"}, errs.Conflict)
	do(t, e, "turn.end", "t", "")
	if ev := <-ch; ev.Data.(trace.Entry).Kind != "turn.end" {
		t.Fatalf("next event %+v", ev)
	}
	cancel()
	for range ch {
	}
}

func BenchmarkEngineDo(b *testing.B) {
	e, _ := newEngine(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := e.Do(ctx, Request{Action: "turn.start", Turn: "bench-" + strconv.Itoa(i), Args: json.RawMessage(`{"input":"hello","channel":"web"}`)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTraceList(b *testing.B) {
	e, _ := newEngine(b)
	ctx := context.Background()
	for i := range 2000 {
		do(b, e, "turn.start", "t"+strconv.Itoa(i), "")
		if i%2 == 0 {
			do(b, e, "turn.end", "t"+strconv.Itoa(i), "")
		}
	}
	for _, bc := range []struct{ name, args string }{
		{"all-limit100", `{}`},
		{"turn", `{"turn":"t1000"}`},
		{"kind-limit10", `{"kind":"turn.end","limit":10}`},
		{"kind+turn", `{"kind":"turn.end","turn":"t1000"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Do(ctx, Request{Action: "trace.list", Args: json.RawMessage(bc.args)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTurnEndByAnotherPrincipal: only the principal that started a turn may
// end it (and commit under it).
func TestTurnEndByAnotherPrincipal(t *testing.T) {
	e, _ := newEngine(t)
	if _, err := e.Do(context.Background(), Request{Action: "turn.start", Turn: "t", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	doErr(t, e, Request{Action: "turn.end", Turn: "t", Principal: "mallory"}, errs.Permission, "belongs to another agent")
	if _, err := e.Do(context.Background(), Request{Action: "turn.end", Turn: "t", Principal: "alice"}); err != nil {
		t.Fatalf("the owner ending its turn: %v", err)
	}
}

// TestPrincipalAndTurnAreChecked: an id too long or with control characters
// is refused before any action runs.
func TestPrincipalAndTurnAreChecked(t *testing.T) {
	e, _ := newEngine(t)
	doErr(t, e, Request{Action: "engine.info", Principal: "a\x1b[2Jb"}, errs.Validation, "as: must not contain control characters")
	doErr(t, e, Request{Action: "engine.info", Turn: strings.Repeat("t", 300)}, errs.Validation, "turn: is 300 bytes")
}

// engine.info's counts are every agent's objects: only the operator
// (local) is told them, even by an engine started as another agent, so
// that --batch prints the same whichever engram owns the directory.
func TestEngineInfoCountsAreForTheOperatorOnly(t *testing.T) {
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{}, Agent: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, who := range []string{"", "bob", "carol"} {
		raw, err := e.Do(context.Background(), Request{Action: "engine.info", Principal: who, Args: json.RawMessage(`{"counts": true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), `"counts"`) {
			t.Errorf("%q is told the counts: %s", who, raw)
		}
	}
	raw, err := e.Do(context.Background(), Request{Action: "engine.info", Principal: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if decode[Info](t, raw).Counts == nil {
		t.Error("local, the operator, is not told the counts")
	}
}
