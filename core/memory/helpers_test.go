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
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// t0 is the seed's date.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// rig is an engine with the memory plugins registered, the *Memory at hand
// for the Go API, and a fixed clock.
type rig struct {
	t     testing.TB
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
	r := &rig{t: t, clock: clock.NewFixed(t0)}
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
	r.e = e
	t.Cleanup(func() { e.Close() })
	return r
}

func (r *rig) call() action.Call {
	return action.Call{Principal: "tester", Clock: r.e.Clock()}
}

// try runs an action through engine.Do (args: a JSON string or a Go value).
func (r *rig) try(name string, args any) (json.RawMessage, error) {
	return r.tryAs("", "", name, args)
}

func (r *rig) tryAs(as, turn, name string, args any) (json.RawMessage, error) {
	r.t.Helper()
	return r.e.Do(context.Background(), core.Request{Action: name, Args: enginetest.Args(r.t, args), Principal: as, Turn: turn})
}

// do runs an action that must succeed, decoding its result into out (if not nil).
func (r *rig) do(name string, args any, out any) json.RawMessage {
	r.t.Helper()
	res, err := r.try(name, args)
	if err != nil {
		r.t.Fatalf("%s %s: %v", name, short(args), err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			r.t.Fatalf("%s: decoding %s: %v", name, short(string(res)), err)
		}
	}
	return res
}

// fail runs an action that must fail with kind, its message holding every
// fragment, and returns the error.
func (r *rig) fail(name string, args any, kind errs.Kind, fragments ...string) *errs.Error {
	r.t.Helper()
	res, err := r.try(name, args)
	return checkErr(r.t, name, args, res, err, kind, fragments...)
}

var (
	checkErr = enginetest.CheckErr
	short    = enginetest.Short
)

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

type summary struct {
	Text        string   `json:"text"`
	TokenCount  int      `json:"token_count"`
	SourceItems []string `json:"source_items"`
	Writer      string   `json:"writer"`
}

type capacity struct {
	Store      string `json:"store"`
	Type       string `json:"type"`
	ItemCount  int    `json:"item_count"`
	TokenUsage int    `json:"token_usage"`
	MaxItems   int    `json:"max_items"`
	MaxTokens  int    `json:"max_tokens"`
	Available  struct {
		Items  int `json:"items"`
		Tokens int `json:"tokens"`
	} `json:"available"`
	OnFull  string `json:"on_full"`
	Deleted int    `json:"deleted"`
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
	r.t.Helper()
	var res memorized
	r.do("memory.memorize", map[string]any{"store": store, "item": item}, &res)
	if !res.Success || res.Ref == "" {
		r.t.Fatalf("memorize %v: %+v", item, res)
	}
	return res
}

// remember runs memory.remember with store and prompt and more arguments
// as key/value pairs.
func (r *rig) remember(store, prompt string, kv ...any) []item {
	r.t.Helper()
	args := map[string]any{"store": store, "prompt": prompt}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	var res struct {
		Items []item `json:"items"`
	}
	raw := r.do("memory.remember", args, &res)
	if res.Items == nil {
		r.t.Fatalf("remember %v: items is not a list: %s", args, raw)
	}
	return res.Items
}

func (r *rig) forget(store, instruction, mode string, kv ...any) forgotten {
	r.t.Helper()
	args := map[string]any{"store": store, "instruction": instruction, "mode": mode}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	var res forgotten
	r.do("memory.forget", args, &res)
	if !res.Success {
		r.t.Fatalf("forget %v: %+v", args, res)
	}
	return res
}

func (r *rig) capacity(store string) capacity {
	r.t.Helper()
	var c capacity
	r.do("memory.capacity", map[string]any{"store": store}, &c)
	return c
}

func (r *rig) configure(args map[string]any) capacity {
	r.t.Helper()
	var c capacity
	r.do("memory.configure", args, &c)
	return c
}

func (r *rig) summarize(store, scope string, limit int) summary {
	r.t.Helper()
	var res struct {
		Summary summary `json:"summary"`
	}
	r.do("memory.summarize", map[string]any{"store": store, "scope": scope, "token_limit": limit}, &res)
	return res.Summary
}

// get is memory.get's item (forgotten ones included).
func (r *rig) get(store, id string) item {
	r.t.Helper()
	var res struct {
		Item item `json:"item"`
	}
	r.do("memory.get", map[string]any{"store": store, "id": id}, &res)
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
	r.t.Helper()
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
		r.t.Fatal(err)
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
	r.t.Helper()
	var out []string
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix([]byte(prefix)), func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// recount counts a store's live and soft-forgotten items and their tokens
// from the items themselves.
func (r *rig) recount(store string) (live, tokens, deleted int) {
	r.t.Helper()
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
		r.t.Fatal(err)
	}
	return live, tokens, deleted
}

// checkCounters compares a store's capacity with a recount of its items.
func (r *rig) checkCounters(store string) capacity {
	r.t.Helper()
	c := r.capacity(store)
	live, tokens, deleted := r.recount(store)
	if c.ItemCount != live || c.TokenUsage != tokens || c.Deleted != deleted {
		r.t.Errorf("store %s: capacity says %d items, %d tokens, %d deleted; a recount %d, %d, %d",
			store, c.ItemCount, c.TokenUsage, c.Deleted, live, tokens, deleted)
	}
	if err := r.m.Check(store); err != nil {
		r.t.Error(err)
	}
	if c.MaxItems > 0 && c.ItemCount > c.MaxItems {
		r.t.Errorf("store %s: %d items > max_items %d", store, c.ItemCount, c.MaxItems)
	}
	if c.MaxTokens > 0 && c.TokenUsage > c.MaxTokens {
		r.t.Errorf("store %s: %d tokens > max_tokens %d", store, c.TokenUsage, c.MaxTokens)
	}
	return c
}

// at returns t0 plus d, for item timestamps.
func at(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
