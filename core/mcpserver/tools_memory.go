package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/memory"
)

// MemoryStatsInput is memory_stats's input: none.
type MemoryStatsInput struct{}

// MemoryStatsOutput is memory_stats's output.
type MemoryStatsOutput struct {
	Stores []StoreStats `json:"stores" jsonschema:"every memory store the agent may read, by name"`
}

// StoreStats is one memory store's size and limits.
type StoreStats struct {
	Store     string `json:"store" jsonschema:"the store's name"`
	Type      string `json:"type" jsonschema:"its kind: working, episodic, semantic or procedural"`
	Items     int    `json:"items" jsonschema:"how many items it holds"`
	Tokens    int    `json:"tokens" jsonschema:"how many tokens its items take"`
	MaxItems  int    `json:"max_items" jsonschema:"its item limit (0: none)"`
	MaxTokens int    `json:"max_tokens" jsonschema:"its token limit (0: none)"`
	OnFull    string `json:"on_full" jsonschema:"what a write does when the store is full: evict the least important item, or reject the write"`
	Forgotten int    `json:"forgotten" jsonschema:"items forgotten but kept for audit (memory.unforget brings them back)"`
}

// addMemoryTools registers remember, recall, forget and memory_stats.
func (s *Server) addMemoryTools() {
	s.addMemoryWriteTools()
	addTool(s, toolSpec{name: "memory_stats", title: "Memory stats",
		description: "How many items and tokens each of your memory stores holds, and its limits.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, _ MemoryStatsInput) (MemoryStatsOutput, error) {
			res, err := call(ctx, cl, memory.ActionStores, action.None{})
			if err != nil {
				return MemoryStatsOutput{}, err
			}
			out := MemoryStatsOutput{Stores: []StoreStats{}}
			for _, c := range res.Stores {
				out.Stores = append(out.Stores, StoreStats{Store: c.Store, Type: c.Type, Items: c.ItemCount, Tokens: c.TokenUsage,
					MaxItems: c.MaxItems, MaxTokens: c.MaxTokens, OnFull: c.OnFull, Forgotten: c.Deleted})
			}
			return out, nil
		})
}

// agentStore is the agent's working store, where remember, recall and
// forget go when no store is named: the built-in "working" store for the
// default agent (who owns it), "working-NAME" for any other, which
// remember creates on first use (owned by the agent, with the built-in
// store's limits). Another agent's store is not written without a share.
func agentStore(agent string) string {
	if agent == "" || agent == access.LegacyOwner {
		return memory.TypeWorking
	}
	return memory.TypeWorking + "-" + strings.ReplaceAll(agent, "/", "_")
}

// storeOr is the store named, or the agent's working store.
func (cl *caller) storeOr(store string) string {
	if strings.TrimSpace(store) == "" {
		return agentStore(cl.agent)
	}
	return store
}

// ownStoreMissing says whether the store a memory tool goes to is the
// agent's own working store and does not exist yet. It asks memory.stores,
// which does not fail, and only until it has seen the store: trying the
// store and failing would count in the Agents view as a failed call of a
// call that succeeds.
func (cl *caller) ownStoreMissing(ctx context.Context, named string) (bool, error) {
	if strings.TrimSpace(named) != "" || agentStore(cl.agent) == memory.TypeWorking || cl.ownStore.Load() {
		return false, nil
	}
	res, err := call(ctx, cl, memory.ActionStores, action.None{})
	if err != nil {
		return false, err
	}
	for _, st := range res.Stores {
		if st.Store == agentStore(cl.agent) {
			cl.ownStore.Store(true)
			return false, nil
		}
	}
	return true, nil
}

// missingOwnStore says whether err is the agent's own working store not
// existing yet (nothing remembered): recall and forget then find nothing.
// Only a missing store: an unknown item in it stays a NotFoundError.
func (cl *caller) missingOwnStore(named string, err error) bool {
	e := errs.As(err)
	return strings.TrimSpace(named) == "" && e != nil && e.Kind == errs.NotFound && e.Details["field"] == "store" &&
		agentStore(cl.agent) != memory.TypeWorking
}

// RememberInput is remember's input.
type RememberInput struct {
	Text       string         `json:"text" jsonschema:"the fact, preference or event to keep, in one or two sentences"`
	Store      string         `json:"store,omitempty" jsonschema:"the memory store (default: your working store: working for the default agent, working-NAME for agent NAME; memory_stats lists the stores)"`
	Type       string         `json:"type,omitempty" jsonschema:"what kind of memory: fact (default), preference, event, observation..."`
	Tags       []string       `json:"tags,omitempty" jsonschema:"tags to find it by later (recall's tags filter, forget's 'items tagged <tag>')"`
	Importance *float64       `json:"importance,omitempty" jsonschema:"from 0 to 1 (default 0.5): working memory keeps the most important items when it is full"`
	ID         string         `json:"id,omitempty" jsonschema:"the item's id (default: a new one); an id the store already holds is a ConflictError (forget it with hard true first)"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"any JSON object kept with the item (recall can filter on its members)"`
}

// RememberOutput is remember's output.
type RememberOutput struct {
	Item    MemoryItem `json:"item" jsonschema:"the item as stored"`
	Ref     string     `json:"ref" jsonschema:"the item's reference, store/id"`
	Evicted []string   `json:"evicted" jsonschema:"the ids of the items forgotten to make room (the store was full)"`
}

// MemoryItem is a memory item as the memory tools show it.
type MemoryItem struct {
	ID         string         `json:"id" jsonschema:"the item's id"`
	Type       string         `json:"type" jsonschema:"what kind of memory: fact, preference, event..."`
	Text       string         `json:"text" jsonschema:"the memory"`
	Tags       []string       `json:"tags" jsonschema:"its tags"`
	Importance float64        `json:"importance" jsonschema:"from 0 to 1"`
	Timestamp  string         `json:"timestamp" jsonschema:"when it was stored or happened (RFC 3339)"`
	Agent      string         `json:"agent" jsonschema:"the agent it belongs to"`
	Tokens     int            `json:"tokens" jsonschema:"its size in tokens"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"the JSON object kept with it"`
	Forgotten  bool           `json:"forgotten,omitempty" jsonschema:"soft-forgotten: kept for audit, not recalled"`
}

// memoryItem turns an engine item into the tools' shape.
func memoryItem(it *memory.Item) MemoryItem {
	if it == nil {
		return MemoryItem{Tags: []string{}}
	}
	out := MemoryItem{ID: it.ID, Type: it.Type, Text: it.Text, Tags: it.Tags, Importance: it.Importance,
		Timestamp: it.Timestamp.UTC().Format(time.RFC3339Nano), Agent: it.AgentID, Tokens: it.TokensEstimate, Forgotten: it.Deleted}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	var meta map[string]any
	if json.Unmarshal(it.Metadata, &meta) == nil && len(meta) > 0 {
		out.Metadata = meta
	}
	return out
}

// RecallInput is recall's input.
type RecallInput struct {
	Query string   `json:"query,omitempty" jsonschema:"what to recall, in words (empty: every item, in the store's order)"`
	Store string   `json:"store,omitempty" jsonschema:"the memory store (default: your working store)"`
	Limit int      `json:"limit,omitempty" jsonschema:"at most this many items (default 10, at most 1000)"`
	Rank  string   `json:"rank,omitempty" jsonschema:"the order: relevance, importance or recency (default: the store's: importance for working, recency for episodic)"`
	Tags  []string `json:"tags,omitempty" jsonschema:"only items with any of these tags"`
	Type  string   `json:"type,omitempty" jsonschema:"only items of this type"`
}

// RecallOutput is recall's output.
type RecallOutput struct {
	Items []RecalledItem `json:"items" jsonschema:"the relevant items in the order asked, best first ([] when nothing matches)"`
}

// RecalledItem is one item recall found, with how and why.
type RecalledItem struct {
	MemoryItem
	Score      float64 `json:"score" jsonschema:"its relevance: BM25, blended with embedding similarity when a model is configured"`
	Confidence float64 `json:"confidence" jsonschema:"its score relative to the best match, 0 to 1"`
	Why        Why     `json:"why" jsonschema:"why it was recalled"`
}

// Why is why recall returned an item.
type Why struct {
	Rank       string    `json:"rank" jsonschema:"the order applied: relevance, importance or recency"`
	Terms      []string  `json:"terms" jsonschema:"the query's words the item contains (matched as stems: deploying matches deployed)"`
	Literal    bool      `json:"literal,omitempty" jsonschema:"the query was only stop words, found as written"`
	Lexical    float64   `json:"lexical" jsonschema:"its lexical score for the query (0 without one): BM25 of the query's words, of the thesaurus words standing for them and of its tags among them"`
	Vector     *float64  `json:"vector,omitempty" jsonschema:"the cosine similarity of its embedding to the query's (only with a model)"`
	Importance float64   `json:"importance" jsonschema:"its importance, 0 to 1"`
	AgeSeconds int64     `json:"age_seconds" jsonschema:"how long ago it was stored, in seconds"`
	Text       string    `json:"text" jsonschema:"all of this in one line"`
	Parts      []WhyPart `json:"parts,omitempty" jsonschema:"what the score is the sum of, each with its value, weight and contribution: lexical, synonyms (thesaurus words), tags (its tags the query says), vector (with a model), time (inside a time the query names), importance and recency (weight 0: they order rather than score)"`
	Windows    []string  `json:"windows,omitempty" jsonschema:"the query's time expressions (last week, in May) whose window holds the item"`
}

// WhyPart is one signal of a recalled item's score (memory.Part).
type WhyPart struct {
	Name         string  `json:"name" jsonschema:"the signal: lexical, synonyms, tags, vector, time, importance or recency"`
	Value        float64 `json:"value" jsonschema:"its raw value (BM25, cosine, the score before the time lift, importance, recency from 1 just stored down)"`
	Weight       float64 `json:"weight" jsonschema:"what the value is multiplied by"`
	Contribution float64 `json:"contribution" jsonschema:"value times weight: what it adds to the score"`
}

// ForgetInput is forget's input.
type ForgetInput struct {
	ID          string `json:"id,omitempty" jsonschema:"the item to forget (or several, comma-separated); give this or instruction"`
	Instruction string `json:"instruction,omitempty" jsonschema:"what to forget instead of an id: oldest [n], newest [n], least important [n], items tagged <tag>, older than <duration>, before <date>, from agent <id>, about <topic>; working stores also to fit <n> tokens"`
	Store       string `json:"store,omitempty" jsonschema:"the memory store (default: your working store)"`
	DryRun      *bool  `json:"dry_run,omitempty" jsonschema:"only list what would be forgotten (default TRUE: preview, then call again with dry_run false to forget)"`
	Hard        bool   `json:"hard,omitempty" jsonschema:"erase for good instead of the default soft forget (kept for audit; the console can bring it back)"`
}

// ForgetOutput is forget's output.
type ForgetOutput struct {
	DryRun    bool         `json:"dry_run" jsonschema:"true: nothing was forgotten, these are what would be"`
	Mode      string       `json:"mode" jsonschema:"soft (kept for audit) or hard (erased)"`
	Matched   string       `json:"matched" jsonschema:"the form of instruction engram understood"`
	Forgotten []MemoryItem `json:"forgotten" jsonschema:"the items forgotten (or, in a dry run, that would be)"`
}

// addMemoryWriteTools registers remember, recall and forget.
func (s *Server) addMemoryWriteTools() {
	addTool(s, toolSpec{name: "remember", title: "Remember",
		description: "Keep a fact, preference or event in your long-term memory (default: your working store). " +
			"Recall finds it later by meaning; the person watching the console sees it arrive. A full store forgets its " +
			"least important items to make room (the answer's evicted lists them).",
		// Eviction forgets items: not only additive.
		destructive: true},
		func(ctx context.Context, cl *caller, in RememberInput) (RememberOutput, error) {
			item := memory.ItemInput{ID: in.ID, Type: in.Type, Text: in.Text, Tags: in.Tags, Importance: in.Importance}
			if item.Type == "" {
				item.Type = "fact"
			}
			if in.Metadata != nil {
				raw, err := json.Marshal(in.Metadata)
				if err != nil {
					return RememberOutput{}, kit.Validation("metadata", "is not JSON: %v", err)
				}
				item.Metadata = raw
			}
			store := cl.storeOr(in.Store)
			// The agent's own store may not exist yet: check the item first,
			// so that a refused item does not leave a new, empty store.
			if err := item.Check(cl.agent); err != nil {
				return RememberOutput{}, renameField(err, "item.", "")
			}
			missing, err := cl.ownStoreMissing(ctx, in.Store)
			if err != nil {
				return RememberOutput{}, err
			}
			makeStore := func() error {
				def := memory.DefaultWorking()
				_, err := call(ctx, cl, memory.ActionConfigure, memory.ConfigureArgs{Store: store, Type: memory.TypeWorking,
					MaxItems: &def.MaxItems, TokenBudget: &def.TokenBudget, OnFull: def.OnFull})
				return err
			}
			if missing {
				if err := item.FitsNew(store, memory.DefaultWorking()); err != nil {
					return RememberOutput{}, err
				}
				if err := makeStore(); err != nil {
					return RememberOutput{}, err
				}
				cl.ownStore.Store(true)
			}
			res, err := call(ctx, cl, memory.ActionMemorize, memory.MemorizeArgs{Store: store, Item: item})
			if cl.missingOwnStore(in.Store, err) { // dropped since it was seen
				if err = makeStore(); err == nil {
					res, err = call(ctx, cl, memory.ActionMemorize, memory.MemorizeArgs{Store: store, Item: item})
				}
			}
			if err != nil {
				return RememberOutput{}, renameField(err, "item.", "")
			}
			out := RememberOutput{Item: memoryItem(res.Item), Ref: res.Ref, Evicted: res.Evicted}
			if out.Evicted == nil {
				out.Evicted = []string{}
			}
			return out, nil
		})
	addTool(s, toolSpec{name: "recall", title: "Recall",
		description: "Recall what you remembered about a query: the relevant items ranked, each with its score and why " +
			"(the query's words it contains, its BM25 and vector scores, importance, age, the order applied).",
		readOnly: true, idempotent: true},
		func(ctx context.Context, cl *caller, in RecallInput) (RecallOutput, error) {
			validArgs := in.Limit >= 0 && (in.Rank == "" || slices.Contains(memory.Ranks, in.Rank))
			if missing, err := cl.ownStoreMissing(ctx, in.Store); err != nil {
				return RecallOutput{}, err
			} else if missing && validArgs {
				return RecallOutput{Items: []RecalledItem{}}, nil
			}
			res, err := call(ctx, cl, memory.ActionRemember, memory.RememberArgs{Store: cl.storeOr(in.Store), Prompt: in.Query,
				Limit: in.Limit, Rank: in.Rank, Filters: memory.Filters{Tags: in.Tags, Type: in.Type}, Explain: true})
			if cl.missingOwnStore(in.Store, err) && validArgs {
				return RecallOutput{Items: []RecalledItem{}}, nil
			}
			if err != nil {
				return RecallOutput{}, renameField(err, "prompt", "query")
			}
			out := RecallOutput{Items: []RecalledItem{}}
			for _, r := range res.Items {
				ri := RecalledItem{MemoryItem: memoryItem(r.Item), Score: r.Score, Confidence: r.Confidence}
				if w := r.Why; w != nil {
					ri.Why = Why{Rank: w.Rank, Terms: w.Terms, Literal: w.Literal, Lexical: w.Lexical, Vector: w.Vector,
						Importance: w.Importance, AgeSeconds: w.AgeSeconds, Text: w.Text, Windows: w.Windows}
					for _, p := range w.Parts {
						ri.Why.Parts = append(ri.Why.Parts, WhyPart(p))
					}
				}
				if ri.Why.Terms == nil {
					ri.Why.Terms = []string{}
				}
				out.Items = append(out.Items, ri)
			}
			return out, nil
		})
	addTool(s, toolSpec{name: "forget", title: "Forget",
		description: "Forget items by id or by instruction. dry_run defaults to true: the first call only lists what would " +
			"be forgotten; call again with dry_run false to forget them (soft by default: kept for audit).",
		destructive: true},
		func(ctx context.Context, cl *caller, in ForgetInput) (ForgetOutput, error) {
			instruction := strings.TrimSpace(in.Instruction)
			switch id := strings.TrimSpace(in.ID); {
			case id != "" && instruction != "":
				return ForgetOutput{}, kit.Validation("id", "give id or instruction, not both")
			case id != "":
				instruction = "item " + id
			case instruction == "":
				return ForgetOutput{}, kit.Validation("id", "name what to forget: an item's id, or an instruction such as \"items tagged draft\"")
			}
			dryRun := in.DryRun == nil || *in.DryRun
			mode := "soft"
			if in.Hard {
				mode = "hard"
			}
			if missing, err := cl.ownStoreMissing(ctx, in.Store); err != nil {
				return ForgetOutput{}, err
			} else if missing {
				return ForgetOutput{DryRun: dryRun, Mode: mode, Forgotten: []MemoryItem{}}, nil
			}
			res, err := call(ctx, cl, memory.ActionForget, memory.ForgetArgs{Store: cl.storeOr(in.Store), Instruction: instruction, Mode: mode, DryRun: dryRun})
			if cl.missingOwnStore(in.Store, err) {
				return ForgetOutput{DryRun: dryRun, Mode: mode, Forgotten: []MemoryItem{}}, nil
			}
			if err != nil {
				return ForgetOutput{}, err
			}
			out := ForgetOutput{DryRun: res.DryRun, Mode: res.Mode, Matched: res.Matched, Forgotten: []MemoryItem{}}
			for _, it := range res.Forgotten {
				out.Forgotten = append(out.Forgotten, memoryItem(it))
			}
			return out, nil
		})
}

// renameField gives a ValidationError about an action's field prefix+x the
// tool's own name for it, to+x, so that the agent is told which of its
// arguments to fix (memory.memorize's item.text is remember's text).
func renameField(err error, prefix, to string) error {
	e := errs.As(err)
	if e == nil || e.Kind != errs.Validation {
		return err
	}
	field, _ := e.Details["field"].(string)
	if !strings.HasPrefix(field, prefix) {
		return err
	}
	renamed := to + strings.TrimPrefix(field, prefix)
	details := maps.Clone(e.Details)
	details["field"] = renamed
	return &errs.Error{Kind: e.Kind, Message: renamed + strings.TrimPrefix(e.Message, field), Details: details, Err: e}
}
