package cortex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
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
// builds it (this package cannot import core: core imports it). Its Rig
// runs actions through the registry, the path engine.Do and the batch
// runner take: e.Try, e.Do and e.Fail, args given as a Go value or a JSON
// string.
type testEnv struct {
	enginetest.Rig
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
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return newEnvOn(t, store)
}

func newEnvOn(t testing.TB, store *storage.Store) *testEnv {
	t.Helper()
	env, clk := newKitEnv(t, store)
	c := Register(env)
	<-c.Indexed() // the index path, not the scan path, answers queries
	return &testEnv{Rig: enginetest.ForRegistry(t, env.Actions, clk), env: env, c: c, clock: clk}
}

// newKitEnv is the services a cortex registers on, over store, on a fixed
// clock.
func newKitEnv(t testing.TB, store *storage.Store) (*kit.Env, *clock.Fixed) {
	t.Helper()
	clk := clock.NewFixed(t0)
	tr, err := trace.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	return &kit.Env{
		Store:   store,
		Clock:   clk,
		IDs:     ids.New(clk, "cortex test"),
		Events:  events.NewBroker(clk),
		Trace:   tr,
		Actions: action.NewRegistry(),
		LLM:     llm.Offline{},
		Log:     slog.New(slog.DiscardHandler),
	}, clk
}

// call is who acts: a principal, and a turn when the action belongs to one.
type call = enginetest.Who

var (
	agentA = call{As: "agent_a"}
	agentB = call{As: "agent_b"}
)

// inTurn is who acting in turn.
func inTurn(who call, turn string) call { who.Turn = turn; return who }

func (e *testEnv) actionCall(who call) action.Call {
	return action.Call{Principal: who.As, Turn: who.Turn, Clock: e.clock}
}

// obj is a JSON object literal.
type obj = map[string]any

func (e *testEnv) create(who call, typ, id string, fields obj) *Item {
	e.T.Helper()
	return enginetest.Call[ItemResult](e.Rig, who, "cortex.create", obj{"type": typ, "id": id, "fields": fields}).Item
}

func (e *testEnv) get(who call, id string) *Item {
	e.T.Helper()
	return enginetest.Call[ItemResult](e.Rig, who, "cortex.get", GetArgs{ID: id, IncludeDeleted: true}).Item
}

// update runs cortex.update; expected < 0 leaves expected_version out.
func (e *testEnv) update(who call, id string, updates obj, expected int) UpdateResult {
	e.T.Helper()
	args := obj{"id": id, "updates": updates}
	if expected >= 0 {
		args["expected_version"] = expected
	}
	var out UpdateResult
	e.Do(who, "cortex.update", args, &out)
	return out
}

func (e *testEnv) history(who call, id string) HistoryResult {
	e.T.Helper()
	return enginetest.Call[HistoryResult](e.Rig, who, "cortex.history", IDArgs{ID: id})
}

func (e *testEnv) query(who call, name string, q any) QueryResult {
	e.T.Helper()
	var res QueryResult
	e.Do(who, name, q, &res)
	return res
}

// traces are the trace entries of a turn (all entries when turn is "").
func (e *testEnv) traces(turn string) []trace.Entry {
	e.T.Helper()
	entries, _, err := e.env.Trace.List(trace.Filter{TurnID: turn})
	if err != nil {
		e.T.Fatal(err)
	}
	return entries
}

func (e *testEnv) traceKind(kind string) []trace.Entry {
	e.T.Helper()
	entries, _, err := e.env.Trace.List(trace.Filter{Kind: kind})
	if err != nil {
		e.T.Fatal(err)
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
	e.T.Helper()
	entries := e.traces(turn)
	for _, en := range entries {
		if en.Message == msg {
			return en
		}
	}
	e.T.Fatalf("trace of turn %q lacks %q; it has:\n  %s", turn, msg, strings.Join(messages(entries), "\n  "))
	return trace.Entry{}
}

// dump is every key and value of the store except the turn trace and
// Badger's sequence leases: a failed call changes nothing else, but must
// leave an access_denied (seed 3.2) or "FC ... failed" (1.4, 5.3) entry in
// the trace by design, and appending one may lease sequence numbers.
func (e *testEnv) dump() map[string]string {
	e.T.Helper()
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
		e.T.Fatal(err)
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
	e.T.Helper()
	var b []byte
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		b, err = tx.Get(auditKey(id, v))
		return err
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return b
}

// count is how many keys start with prefix.
func (e *testEnv) count(prefix []byte) int {
	e.T.Helper()
	var n int
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		n, err = tx.Count(prefix)
		return err
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return n
}

// goal123 builds the seed's goal_123 through the API: global_version 5 with
// progress 50 (progress_version 3), priority high (priority_version 2),
// status active (status_version 1), ending at t=0.
func (e *testEnv) goal123(id string) *Item {
	e.T.Helper()
	e.clock.Set(t0.Add(-5 * time.Second))
	owner := call{As: "agent_a", Turn: "turn_setup"}
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
		e.T.Fatalf("setup: goal is v%d %d%% %s %s, want v5 50%% high active", it.GlobalVersion, it.Progress, it.Priority, it.Status)
	}
	for f, v := range want {
		if it.FieldVersions[f] != v {
			e.T.Fatalf("setup: %s_version %d, want %d", f, it.FieldVersions[f], v)
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

// bulkCreate writes specs with Cortex.BulkCreate, as cortex.create would
// one after another a millisecond apart from the test clock's time, perTx
// to a transaction, and leaves the clock at the last item's time.
func (e *testEnv) bulkCreate(specs []spec, perTx int) {
	e.T.Helper()
	items, err := bulkItems(specs)
	if err != nil {
		e.T.Fatal(err)
	}
	_, err = e.c.BulkCreate(context.Background(), items, BulkOptions{Start: e.clock.Now(), SetClock: e.clock.Set, PerTx: perTx})
	if err != nil {
		e.T.Fatal(err)
	}
}

// bulkItems are specs as BulkCreate takes them.
func bulkItems(specs []spec) ([]BulkItem, error) {
	items := make([]BulkItem, len(specs))
	for i, s := range specs {
		fields := map[string]json.RawMessage{}
		for k, v := range s.fields {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			fields[k] = b
		}
		items[i] = BulkItem{Type: s.typ, ID: s.id, Owner: s.owner, Fields: fields}
	}
	return items, nil
}
