package memory_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// t0 is the seed's date.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// rig is the shared test rig (enginetest.Rig: Try, Do, Fail) over an
// engine with the memory plugins registered, the *Memory at hand for the
// Go API, and a fixed clock.
type rig struct {
	enginetest.Rig
	e     *core.Engine
	m     *memory.Memory
	clock *clock.Fixed
}

type rigOptions struct {
	dir string // a durable store there ("": in memory)
	llm llm.Provider
}

func newRig(t testing.TB) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{clock: clock.NewFixed(t0)}
	e, err := core.Open(core.Options{
		InMemory: o.dir == "", DataDir: o.dir, Clock: r.clock, IDSeed: "memory test", LLM: o.llm,
		Subsystems: []core.Subsystem{func(env *kit.Env) error {
			var err error
			r.m, err = memory.Register(env)
			return err
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.e, r.Rig = e, enginetest.ForConn(t, e)
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return r
}

func (r *rig) call() action.Call {
	return action.Call{Principal: core.DefaultAgent, Clock: r.e.Clock()}
}

// agent runs an action as the engine's agent, outside any turn.
var agent = enginetest.Who{}

// inTurn runs an action as the engine's agent, in turn id.
func inTurn(id string) enginetest.Who { return enginetest.Who{Turn: id} }

// item is a memory item as the actions return it (and, in remember
// results, with its score and confidence).
type item struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	Text           string          `json:"text"`
	TokensEstimate int             `json:"tokens_estimate"`
	Timestamp      time.Time       `json:"timestamp"`
	AgentID        string          `json:"agent_id"`
	Tags           []string        `json:"tags"`
	Metadata       json.RawMessage `json:"metadata"`
	Importance     float64         `json:"importance"`
	Deleted        bool            `json:"deleted"`
	DeletedAt      *time.Time      `json:"deleted_at"`
	Evicted        bool            `json:"evicted"`
	Score          *float64        `json:"score"`
	Confidence     *float64        `json:"confidence"`
}

type memorized struct {
	Success bool     `json:"success"`
	Ref     string   `json:"ref"`
	Item    item     `json:"item"`
	Evicted []string `json:"evicted"`
}

type forgotten struct {
	Success   bool   `json:"success"`
	DryRun    bool   `json:"dry_run"`
	Mode      string `json:"mode"`
	Forgotten []item `json:"forgotten"`
	Matched   string `json:"matched"`
}

// it is an item to memorize: id, text and the fields every item needs
// (type fact, agent agent_a); more fields come as key/value pairs.
func it(id, text string, kv ...any) map[string]any {
	m := map[string]any{"type": "fact", "text": text, "agent_id": "agent_a"}
	if id != "" {
		m["id"] = id
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// memorize stores an item that must be accepted.
func (r *rig) memorize(store string, item map[string]any) memorized {
	r.T.Helper()
	var res memorized
	r.Do(agent, "memory.memorize", map[string]any{"store": store, "item": item}, &res)
	// Its vector follows in the background: tests look once it is stored.
	r.e.Env().Embeddings().Settle(context.Background())
	if !res.Success || res.Ref == "" {
		r.T.Fatalf("memorize %v: %+v", item, res)
	}
	return res
}

// remember runs memory.remember with store and prompt and more arguments
// as key/value pairs.
func (r *rig) remember(store, prompt string, kv ...any) []item {
	r.T.Helper()
	args := map[string]any{"store": store, "prompt": prompt}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	var res struct {
		Items []item `json:"items"`
	}
	raw := r.Do(agent, "memory.remember", args, &res)
	if res.Items == nil {
		r.T.Fatalf("remember %v: items is not a list: %s", args, raw)
	}
	return res.Items
}

func (r *rig) forget(store, instruction, mode string, kv ...any) forgotten {
	r.T.Helper()
	args := map[string]any{"store": store, "instruction": instruction, "mode": mode}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	var res forgotten
	r.Do(agent, "memory.forget", args, &res)
	if !res.Success {
		r.T.Fatalf("forget %v: %+v", args, res)
	}
	return res
}

// capacity is memory.capacity's answer for store.
func (r *rig) capacity(store string) memory.Capacity {
	r.T.Helper()
	return enginetest.Call[memory.Capacity](r.Rig, agent, "memory.capacity", memory.CapacityArgs{Store: store})
}

// configure runs memory.configure, which must succeed (args: a map, to
// leave out what the test leaves out).
func (r *rig) configure(args map[string]any) memory.Capacity {
	r.T.Helper()
	return enginetest.Call[memory.Capacity](r.Rig, agent, "memory.configure", args)
}

// summarize is memory.summarize's summary of scope in store.
func (r *rig) summarize(store, scope string, limit int) memory.Summary {
	r.T.Helper()
	res := enginetest.Call[memory.SummarizeResult](r.Rig, agent, "memory.summarize",
		memory.SummarizeArgs{Store: store, Scope: scope, TokenLimit: limit})
	return res.Summary
}

// get is memory.get's item (forgotten ones included).
func (r *rig) get(store, id string) item {
	r.T.Helper()
	var res struct {
		Item item `json:"item"`
	}
	r.Do(agent, "memory.get", map[string]any{"store": store, "id": id}, &res)
	return res.Item
}

func ids(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func forgottenIDs(f forgotten) []string { return ids(f.Forgotten) }

// sorted is a sorted copy.
func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// dump is every key and value of the store but the trace and sequences
// (which record failures too).
func (r *rig) dump() map[string]string {
	r.T.Helper()
	out := map[string]string{}
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Range{}, func(k, v []byte) error {
			key := string(k)
			for _, skip := range []string{storage.PrefixTrace, storage.PrefixIndex + "trace/", storage.PrefixSeq} {
				if strings.HasPrefix(key, skip) {
					return nil
				}
			}
			out[key] = string(v)
			return nil
		})
	})
	if err != nil {
		r.T.Fatal(err)
	}
	return out
}

// sameDump fails the test when the store changed.
func sameDump(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	var diff []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diff = append(diff, "- "+k)
		} else if w != v {
			diff = append(diff, "~ "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diff = append(diff, "+ "+k)
		}
	}
	slices.Sort(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], "...")
	}
	t.Errorf("%s changed the store:\n%s", what, strings.Join(diff, "\n"))
}

// keysUnder lists the keys with a prefix.
func (r *rig) keysUnder(prefix string) []string {
	r.T.Helper()
	var out []string
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix([]byte(prefix)), func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		r.T.Fatal(err)
	}
	return out
}

// recount counts a store's live and soft-forgotten items and their tokens
// from the items themselves.
func (r *rig) recount(store string) (live, tokens, deleted int) {
	r.T.Helper()
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixMemory, "item", store)), func(_, v []byte) error {
			var it memory.Item
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			if it.Deleted {
				deleted++
			} else {
				live++
				tokens += it.TokensEstimate
			}
			return nil
		})
	})
	if err != nil {
		r.T.Fatal(err)
	}
	return live, tokens, deleted
}

// checkCounters compares a store's capacity with a recount of its items.
func (r *rig) checkCounters(store string) memory.Capacity {
	r.T.Helper()
	c := r.capacity(store)
	live, tokens, deleted := r.recount(store)
	if c.ItemCount != live || c.TokenUsage != tokens || c.Deleted != deleted {
		r.T.Errorf("store %s: capacity says %d items, %d tokens, %d deleted; a recount %d, %d, %d",
			store, c.ItemCount, c.TokenUsage, c.Deleted, live, tokens, deleted)
	}
	if err := r.m.Check(store); err != nil {
		r.T.Error(err)
	}
	if c.MaxItems > 0 && c.ItemCount > c.MaxItems {
		r.T.Errorf("store %s: %d items > max_items %d", store, c.ItemCount, c.MaxItems)
	}
	if c.MaxTokens > 0 && c.TokenUsage > c.MaxTokens {
		r.T.Errorf("store %s: %d tokens > max_tokens %d", store, c.TokenUsage, c.MaxTokens)
	}
	return c
}

// at returns t0 plus d, for item timestamps.
func at(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

func jsonEq(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
