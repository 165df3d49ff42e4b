package cortex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/ids"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
	"github.com/google/uuid"
)

// t0 is the seed's t=0 (2025-11-05, the seed's date).
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// ms is t0 plus n milliseconds: the seed's "t=10ms".
func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// testEnv is a cortex over its own in-memory store, built the way core.Open
// builds it (this package cannot import core: core imports it).
type testEnv struct {
	t     testing.TB
	env   *kit.Env
	c     *Cortex
	clock *clock.Fixed
}

func newEnv(t testing.TB) *testEnv {
	t.Helper()
	store, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newEnvOn(t, store)
}

func newEnvOn(t testing.TB, store *storage.Store) *testEnv {
	t.Helper()
	clk := clock.NewFixed(t0)
	tr, err := trace.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	env := &kit.Env{
		Store:   store,
		Clock:   clk,
		IDs:     ids.New(clk, "cortex test"),
		Events:  events.NewBroker(clk),
		Trace:   tr,
		Actions: action.NewRegistry(),
		LLM:     llm.Offline{},
		Log:     slog.New(slog.DiscardHandler),
	}
	return &testEnv{t: t, env: env, c: Register(env), clock: clk}
}

// call is who acts: a principal, and a turn when the action belongs to one.
type call struct{ as, turn string }

var (
	agentA = call{as: "agent_a"}
	agentB = call{as: "agent_b"}
)

func (c call) inTurn(turn string) call { c.turn = turn; return c }

func (e *testEnv) actionCall(who call) action.Call {
	return action.Call{Principal: who.as, Turn: who.turn, Clock: e.clock}
}

// try runs an action through the registry (the path engine.Do and the batch
// runner take), args given as a Go value or a JSON string.
func (e *testEnv) try(who call, name string, args any) (json.RawMessage, error) {
	e.t.Helper()
	raw := enginetest.Args(e.t, args)
	a, err := e.env.Actions.Lookup(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.Invoke(context.Background(), e.actionCall(who), raw)
}

// do runs an action that must succeed and decodes its result into out (if
// not nil).
func (e *testEnv) do(who call, name string, args any, out any) json.RawMessage {
	e.t.Helper()
	res, err := e.try(who, name, args)
	if err != nil {
		e.t.Fatalf("%s %s by %s: %s", name, short(args), who.as, short(err))
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			e.t.Fatalf("%s: decoding %s: %v", name, res, err)
		}
	}
	return res
}

// fail runs an action that must fail with kind, its message containing every
// fragment.
func (e *testEnv) fail(who call, name string, args any, kind errs.Kind, fragments ...string) *errs.Error {
	e.t.Helper()
	res, err := e.try(who, name, args)
	if err == nil {
		e.t.Fatalf("%s %s by %s: succeeded with %s; want %s", name, short(args), who.as, short(string(res)), kind)
	}
	var ee *errs.Error
	if !errors.As(err, &ee) {
		e.t.Fatalf("%s: error %q (%T) has no *errs.Error", name, err, err)
	}
	got := errs.As(err)
	if got.Kind != kind {
		e.t.Fatalf("%s %s: %s (%s), want %s", name, short(args), got.Kind, short(got.Message), kind)
	}
	for _, f := range fragments {
		if !strings.Contains(got.Message, f) {
			e.t.Errorf("%s: message %q lacks %q", name, got.Message, f)
		}
	}
	return got
}

// short is v printed, cut to a readable length.
func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

// obj is a JSON object literal.
type obj = map[string]any

func (e *testEnv) create(who call, typ, id string, fields obj) *Item {
	e.t.Helper()
	var out struct{ Item *Item }
	e.do(who, "cortex.create", obj{"type": typ, "id": id, "fields": fields}, &out)
	return out.Item
}

func (e *testEnv) get(who call, id string) *Item {
	e.t.Helper()
	var out struct{ Item *Item }
	e.do(who, "cortex.get", obj{"id": id, "include_deleted": true}, &out)
	return out.Item
}

// update runs cortex.update; expected < 0 leaves expected_version out.
func (e *testEnv) update(who call, id string, updates obj, expected int) UpdateResult {
	e.t.Helper()
	args := obj{"id": id, "updates": updates}
	if expected >= 0 {
		args["expected_version"] = expected
	}
	var out UpdateResult
	e.do(who, "cortex.update", args, &out)
	return out
}

type history struct {
	Mutations []Mutation `json:"mutations"`
	ChainCheck
}

func (e *testEnv) history(who call, id string) history {
	e.t.Helper()
	var h history
	e.do(who, "cortex.history", obj{"id": id}, &h)
	return h
}

func (e *testEnv) query(who call, name string, q any) QueryResult {
	e.t.Helper()
	var res QueryResult
	e.do(who, name, q, &res)
	return res
}

// traces are the trace entries of a turn (all entries when turn is "").
func (e *testEnv) traces(turn string) []trace.Entry {
	e.t.Helper()
	entries, _, err := e.env.Trace.List(trace.Filter{TurnID: turn})
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

func (e *testEnv) traceKind(kind string) []trace.Entry {
	e.t.Helper()
	entries, _, err := e.env.Trace.List(trace.Filter{Kind: kind})
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

func messages(entries []trace.Entry) []string {
	out := make([]string, len(entries))
	for i, en := range entries {
		out[i] = en.Message
	}
	return out
}

// mustTrace fails unless some entry of turn has exactly message msg.
func (e *testEnv) mustTrace(turn, msg string) trace.Entry {
	e.t.Helper()
	entries := e.traces(turn)
	for _, en := range entries {
		if en.Message == msg {
			return en
		}
	}
	e.t.Fatalf("trace of turn %q lacks %q; it has:\n  %s", turn, msg, strings.Join(messages(entries), "\n  "))
	return trace.Entry{}
}

// dump is every key and value of the store except the turn trace and
// Badger's sequence leases: a failed call changes nothing else, but must
// leave an access_denied (seed 3.2) or "FC ... failed" (1.4, 5.3) entry in
// the trace by design, and appending one may lease sequence numbers.
func (e *testEnv) dump() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	err := e.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Range{}, func(k, v []byte) error {
			key := string(k)
			if strings.HasPrefix(key, storage.PrefixTrace) || strings.HasPrefix(key, storage.PrefixIndex+"trace/") ||
				strings.HasPrefix(key, storage.PrefixSeq) {
				return nil
			}
			out[key] = string(v)
			return nil
		})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// sameDump reports how two dumps differ ("" when they do not).
func sameDump(before, after map[string]string) string {
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if w != v {
			diffs = append(diffs, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added "+k)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

// auditRaw is the stored bytes of an item's audit entry at version v.
func (e *testEnv) auditRaw(id string, v int) []byte {
	e.t.Helper()
	var b []byte
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		b, err = tx.Get(auditKey(id, v))
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// count is how many keys start with prefix.
func (e *testEnv) count(prefix []byte) int {
	e.t.Helper()
	var n int
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(prefix)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// goal123 builds the seed's goal_123 through the API: global_version 5 with
// progress 50 (progress_version 3), priority high (priority_version 2),
// status active (status_version 1), ending at t=0.
func (e *testEnv) goal123(id string) *Item {
	e.t.Helper()
	e.clock.Set(t0.Add(-5 * time.Second))
	owner := call{as: "agent_a", turn: "turn_setup"}
	e.create(owner, "goal", id, obj{"title": "Ship the persistence layer", "progress": 10, "priority": "medium"}) // v1
	e.clock.Advance(time.Second)
	e.update(owner, id, obj{"progress": 25}, 1) // v2: progress_version 2
	e.clock.Advance(time.Second)
	e.update(owner, id, obj{"progress": 50}, 2) // v3: progress_version 3
	e.clock.Advance(time.Second)
	e.update(owner, id, obj{"priority": "high"}, 3) // v4: priority_version 2
	e.clock.Advance(time.Second)
	e.update(owner, id, obj{"description": "field-level versions"}, 4) // v5
	e.clock.Set(t0)
	it := e.get(agentA, id)
	want := map[string]int{"progress": 3, "priority": 2, "status": 1}
	if it.GlobalVersion != 5 || it.Progress != 50 || it.Priority != "high" || it.Status != "active" {
		e.t.Fatalf("setup: goal is v%d %d%% %s %s, want v5 50%% high active", it.GlobalVersion, it.Progress, it.Priority, it.Status)
	}
	for f, v := range want {
		if it.FieldVersions[f] != v {
			e.t.Fatalf("setup: %s_version %d, want %d", f, it.FieldVersions[f], v)
		}
	}
	return it
}

// versions is the field versions the seed talks about.
func versions(it *Item, fields ...string) string {
	var parts []string
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s_version=%d", f, it.FieldVersions[f]))
	}
	return strings.Join(parts, " ")
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// jsonEq compares two values as JSON.
func jsonEq(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func ids0(items []*Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// spec describes an item for bulkCreate.
type spec struct {
	typ, id string
	owner   string
	fields  obj
}

// bulkCreate creates items through the create path (newItem and insert, as
// cortex.create does) but many per transaction, for large data sets; each a
// millisecond after the one before.
func (e *testEnv) bulkCreate(specs []spec, perTx int) {
	e.t.Helper()
	for start := 0; start < len(specs); start += perTx {
		chunk := specs[start:min(start+perTx, len(specs))]
		err := e.env.Update(context.Background(), func(tx *kit.Txn) error {
			for _, s := range chunk {
				fields := map[string]json.RawMessage{}
				for k, v := range s.fields {
					b, err := json.Marshal(v)
					if err != nil {
						return err
					}
					fields[k] = b
				}
				e.clock.Advance(time.Millisecond)
				who := e.actionCall(call{as: s.owner})
				it, err := e.c.newItem(who, s.typ, s.id, fields)
				if err != nil {
					return err
				}
				if err := e.c.insert(tx, who, it); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			e.t.Fatalf("bulk create of items %d..: %v", start, err)
		}
	}
}
