package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Memory is the registry of named stores.
type Memory struct {
	env *kit.Env
}

// Defaults of the two stores every engram has.
var defaultStores = []StoreConfig{
	{Name: TypeWorking, Type: TypeWorking, MaxItems: 100, TokenBudget: 4000, OnFull: "evict"},
	{Name: TypeEpisodic, Type: TypeEpisodic, OnFull: "reject"},
}

// DefaultWorking is the configuration of the built-in working store: the
// limits an agent's own working store starts with too (the MCP remember
// tool makes one for each agent other than the default one).
func DefaultWorking() StoreConfig { return defaultStores[0] }

// Register adds the memory.* actions, the memory context provider and
// counter to env, creating the default stores if they do not exist.
func Register(env *kit.Env) (*Memory, error) {
	m := &Memory{env: env}
	registerTermCache(env)
	err := env.Update(context.Background(), func(tx *kit.Txn) error {
		for _, cfg := range defaultStores {
			if ok, err := tx.Has(stateKey(cfg.Name)); err != nil || ok {
				if err != nil {
					return err
				}
				continue
			}
			if err := tx.SetJSON(stateKey(cfg.Name), &state{StoreConfig: cfg, CreatedAt: env.Clock.Now()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating the default memory stores: %w", err)
	}
	reg := env.Actions
	ActionConfigure.Register(reg, action.Spec{Summary: "Create a memory store or change its limits and policy"}, m.actConfigure)
	ActionMemorize.Register(reg, action.Spec{Summary: "Store a memory item (making room per the store's policy)", Joinable: true}, m.actMemorize)
	ActionRemember.Register(reg, action.Spec{Summary: "Items relevant to a prompt, in the store's order (importance or recency)", ReadOnly: true}, m.actRemember)
	ActionForget.Register(reg, action.Spec{Summary: "Forget what an instruction names (\"oldest\", \"items tagged x\"...), soft or hard"}, m.actForget)
	ActionSummarize.Register(reg, action.Spec{Summary: "A summary of a store's items within a token limit", ReadOnly: true}, m.actSummarize)
	ActionCapacity.Register(reg, action.Spec{Summary: "A store's items, tokens, limits and room left", ReadOnly: true}, m.actCapacity)
	ActionStores.Register(reg, action.Spec{Summary: "Every memory store with its capacity", ReadOnly: true}, m.actStores)
	ActionGet.Register(reg, action.Spec{Summary: "One memory item, forgotten ones included", ReadOnly: true}, m.actGet)
	ActionShare.Register(reg, action.Spec{Summary: "Grant an agent permissions on a memory store"}, m.actShare)
	ActionRevoke.Register(reg, action.Spec{Summary: "Remove an agent's access to a memory store"}, m.actRevoke)
	ActionUnforget.Register(reg, action.Spec{Summary: "Bring a soft-forgotten item back (making room per the store's policy)", Joinable: true}, m.actUnforget)
	if env.Access != nil {
		env.Access.Register(objectType, m.canRead)
	}
	env.AddProvider(&provider{m: m})
	env.AddCounter("memory", m.counts)
	env.AddHolder(m.holdsItems)
	env.AddChecker("memory", m.checkStored)
	// The items a previous run left waiting for their vectors.
	if err := env.Embeddings().Register(embedSource(env)); err != nil {
		return nil, err
	}
	return m, nil
}

// Store returns the named store (a NotFoundError if there is none).
func (m *Memory) Store(name string) (Plugin, error) {
	if name == "" {
		return nil, kit.Validation("store", "name the store, e.g. \"working\" or \"episodic\"")
	}
	s := &store{env: m.env, name: name}
	err := m.env.Store.View(func(tx *storage.Tx) error { _, err := s.load(tx); return err })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Names lists the stores.
func (m *Memory) Names() ([]string, error) {
	var names []string
	err := m.env.Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(statePrefix()), func(k []byte) error {
			names = append(names, storage.LastPart(k))
			return nil
		})
	})
	return names, err
}

// ConfigureArgs is memory.configure's arguments: a limit left out keeps
// its value (pointers tell 0, no limit, from absent).
type ConfigureArgs struct {
	Store       string `json:"store" arg:"required" help:"the store's name (created if new)"`
	Type        string `json:"type,omitempty" help:"working or episodic (required for a new store; cannot change)"`
	MaxItems    *int   `json:"max_items,omitempty" help:"most live items (0: no limit)"`
	TokenBudget *int   `json:"token_budget,omitempty" help:"most tokens of live items (0: no limit)"`
	OnFull      string `json:"on_full,omitempty" help:"evict (the least important, then oldest) or reject (BudgetError)"`
}

func (m *Memory) actConfigure(ctx context.Context, call action.Call, a ConfigureArgs) (Capacity, error) {
	if err := kit.CheckName("store", a.Store, "/"); err != nil {
		return Capacity{}, err
	}
	if a.Store == "" {
		return Capacity{}, kit.Validation("store", "name the store")
	}
	switch {
	case a.Type != "" && a.Type != TypeWorking && a.Type != TypeEpisodic:
		return Capacity{}, kit.Validation("type", "unknown type %q; use working or episodic", a.Type)
	case a.MaxItems != nil && *a.MaxItems < 0:
		return Capacity{}, kit.Validation("max_items", "must be 0 (no limit) or more")
	case a.TokenBudget != nil && *a.TokenBudget < 0:
		return Capacity{}, kit.Validation("token_budget", "must be 0 (no limit) or more")
	case a.OnFull != "" && a.OnFull != "evict" && a.OnFull != "reject":
		return Capacity{}, kit.Validation("on_full", "unknown policy %q; use evict or reject", a.OnFull)
	}
	s := &store{env: m.env, name: a.Store}
	err := m.env.Update(ctx, func(tx *kit.Txn) error {
		st, err := s.load(tx.Tx)
		if errs.KindOf(err) == errs.NotFound {
			if a.Type == "" {
				return kit.Validation("type", "a new store needs a type: working or episodic")
			}
			// Whoever creates a store owns it.
			st = &state{StoreConfig: StoreConfig{Name: a.Store, Type: a.Type, OnFull: "evict"}, CreatedAt: call.Clock.Now(), Owner: call.Principal}
			if a.Type == TypeEpisodic {
				st.OnFull = "reject"
			}
		} else if err != nil {
			return err
		} else if err := s.authorize(call, st, access.Write); err != nil {
			return err
		} else if a.Type != "" && a.Type != st.Type {
			return kit.Validation("type", "store %q is %s memory; a store's type cannot change", a.Store, st.Type)
		}
		if a.MaxItems != nil {
			st.MaxItems = *a.MaxItems
		}
		if a.TokenBudget != nil {
			st.TokenBudget = *a.TokenBudget
		}
		if a.OnFull != "" {
			st.OnFull = a.OnFull
		}
		if err := s.shrink(tx, call, st); err != nil {
			return err
		}
		EventStoreChanged.Publish(tx, st.audience(), StoreChangedEvent{Store: a.Store, Change: "configured"})
		return tx.SetJSON(stateKey(a.Store), st)
	})
	if err != nil {
		return Capacity{}, m.afterFailure(ctx, call, err)
	}
	return s.CapacityInfo(ctx, call)
}

// shrink brings a store within new, lower limits: evicting per the evict
// policy, refusing per reject.
func (s *store) shrink(tx *kit.Txn, call action.Call, st *state) error {
	over := (st.MaxItems > 0 && st.ItemCount > st.MaxItems) || (st.TokenBudget > 0 && st.TokenUsage > st.TokenBudget)
	if !over {
		return nil
	}
	if st.OnFull == "reject" {
		return errs.New(errs.Budget, "store %q holds %d items (%d tokens), more than the new limits; forget some first, or use on_full evict",
			s.name, st.ItemCount, st.TokenUsage).With("store", s.name)
	}
	_, err := s.evict(tx, call, st, func(count, tokens int) bool {
		return (st.MaxItems > 0 && count > st.MaxItems) || (st.TokenBudget > 0 && tokens > st.TokenBudget)
	}, "limits lowered")
	return err
}

// ItemInput is an item as given to memorize: what may be left out is
// filled in (id, tokens_estimate, timestamp, importance 0.5).
type ItemInput struct {
	ID             string          `json:"id,omitempty" help:"the item's id (default: a new UUID)"`
	Type           string          `json:"type" arg:"required" help:"what kind of memory: fact, preference, event..."`
	Text           string          `json:"text" arg:"required" help:"the memory"`
	TokensEstimate int             `json:"tokens_estimate,omitempty" help:"its size (default: counted)"`
	Timestamp      *time.Time      `json:"timestamp,omitempty" help:"when it happened (default: now)"`
	AgentID        string          `json:"agent_id,omitempty" help:"the agent it is about (default: the agent acting)"`
	Tags           []string        `json:"tags,omitempty" help:"tags"`
	Metadata       json.RawMessage `json:"metadata,omitempty" help:"any JSON object (metadata.episode groups an episode)"`
	Importance     *float64        `json:"importance,omitempty" help:"from 0 to 1 (default 0.5)"`
}

// Item is the input as an item.
func (in ItemInput) Item() Item {
	it := Item{ID: in.ID, Type: in.Type, Text: in.Text, TokensEstimate: in.TokensEstimate, AgentID: in.AgentID,
		Tags: in.Tags, Metadata: in.Metadata, Importance: 0.5}
	if in.Timestamp != nil {
		it.Timestamp = *in.Timestamp
	}
	if in.Importance != nil {
		it.Importance = *in.Importance
	}
	return it
}

// MemorizeArgs is memory.memorize's arguments, and one entry of a turn's
// updates.memory.
type MemorizeArgs struct {
	Store string    `json:"store" arg:"required" help:"the store"`
	Item  ItemInput `json:"item" arg:"required" help:"{id?, type, text, tokens_estimate?, timestamp?, agent_id?, tags?, metadata?, importance?}"`
}

func (m *Memory) actMemorize(ctx context.Context, call action.Call, a MemorizeArgs) (MemorizeResult, error) {
	p, err := m.Store(a.Store)
	if err != nil {
		return MemorizeResult{}, err
	}
	res, err := p.Memorize(ctx, call, a.Item.Item())
	return res, m.afterFailure(ctx, call, err)
}

// RememberArgs is memory.remember's arguments.
type RememberArgs struct {
	Store          string  `json:"store" arg:"required" help:"the store"`
	Prompt         string  `json:"prompt" help:"what to remember about (empty: everything)"`
	Filters        Filters `json:"filters,omitempty" help:"{agent_id?, tags?, type?, since?, until?, metadata?}"`
	Limit          int     `json:"limit,omitempty" help:"at most this many (default 10)"`
	Rank           string  `json:"rank,omitempty" help:"relevance, importance or recency (default: the store type's)"`
	IncludeDeleted bool    `json:"include_deleted,omitempty" help:"also soft-forgotten items"`
	Explain        bool    `json:"explain,omitempty" help:"add each item's why: the prompt's words it contains, its BM25 and vector scores, importance, age, the order applied and the parts of its score with their weights"`
	When           string  `json:"when,omitempty" help:"a time the items were stored (\"last week\", \"in May 2025\", \"3 weeks ago\"): those inside it rank higher; one that names no time is refused"`
}

// RememberResult is memory.remember's result.
type RememberResult struct {
	// Items are the relevant items in the order asked: never null, [] when
	// nothing matches.
	Items []Recalled `json:"items"`
}

func (m *Memory) actRemember(ctx context.Context, call action.Call, a RememberArgs) (RememberResult, error) {
	p, err := m.Store(a.Store)
	if err != nil {
		return RememberResult{}, err
	}
	items, err := p.Remember(ctx, call, RememberRequest{Prompt: a.Prompt, Filters: a.Filters, Limit: a.Limit, Rank: a.Rank, IncludeDeleted: a.IncludeDeleted, Explain: a.Explain, When: a.When})
	return RememberResult{Items: items}, m.afterFailure(ctx, call, err)
}

// ForgetArgs is memory.forget's arguments.
type ForgetArgs struct {
	Store       string `json:"store" arg:"required" help:"the store"`
	Instruction string `json:"instruction" arg:"required" help:"what to forget: oldest, newest, least important, item <id>, items tagged <t>, older than <duration>, before <date>, from agent <id>, about <topic>, and per type: to fit <n> tokens (working), episode <id> (episodic)"`
	Mode        string `json:"mode,omitempty" help:"soft (marked deleted, kept for audit; default) or hard (erased)"`
	DryRun      bool   `json:"dry_run,omitempty" help:"only say what would be forgotten"`
}

func (m *Memory) actForget(ctx context.Context, call action.Call, a ForgetArgs) (ForgetResult, error) {
	p, err := m.Store(a.Store)
	if err != nil {
		return ForgetResult{}, err
	}
	res, err := p.Forget(ctx, call, ForgetRequest{Instruction: a.Instruction, Mode: a.Mode, DryRun: a.DryRun})
	return res, m.afterFailure(ctx, call, err)
}

// SummarizeArgs is memory.summarize's arguments.
type SummarizeArgs struct {
	Store      string `json:"store" arg:"required" help:"the store"`
	Scope      string `json:"scope,omitempty" help:"all (default), tag:<tag>, agent:<id> or since:<time>"`
	TokenLimit int    `json:"token_limit" arg:"required" help:"at most this many tokens"`
}

// SummarizeResult is memory.summarize's result.
type SummarizeResult struct {
	Summary Summary `json:"summary"`
}

func (m *Memory) actSummarize(ctx context.Context, call action.Call, a SummarizeArgs) (SummarizeResult, error) {
	p, err := m.Store(a.Store)
	if err != nil {
		return SummarizeResult{}, err
	}
	s, err := p.Summarize(ctx, call, SummarizeRequest{Scope: a.Scope, TokenLimit: a.TokenLimit})
	return SummarizeResult{Summary: s}, m.afterFailure(ctx, call, err)
}

// CapacityArgs is memory.capacity's arguments.
type CapacityArgs struct {
	Store string `json:"store" arg:"required" help:"the store"`
}

func (m *Memory) actCapacity(ctx context.Context, call action.Call, a CapacityArgs) (Capacity, error) {
	p, err := m.Store(a.Store)
	if err != nil {
		return Capacity{}, err
	}
	c, err := p.CapacityInfo(ctx, call)
	return c, m.afterFailure(ctx, call, err)
}

// StoresResult is memory.stores's result.
type StoresResult struct {
	// Stores is the capacity of every store the caller may read, by
	// name: never null.
	Stores []Capacity `json:"stores"`
}

func (m *Memory) actStores(ctx context.Context, call action.Call, _ action.None) (StoresResult, error) {
	names, err := m.Names()
	if err != nil {
		return StoresResult{}, err
	}
	out := []Capacity{}
	for _, n := range names {
		c, err := (&store{env: m.env, name: n}).CapacityInfo(ctx, call)
		if errs.KindOf(err) == errs.Permission {
			continue // another agent's store: not listed, not traced
		} else if err != nil {
			return StoresResult{}, err
		}
		out = append(out, c)
	}
	return StoresResult{Stores: out}, nil
}

// GetArgs is memory.get's arguments.
type GetArgs struct {
	Store string `json:"store" arg:"required" help:"the store"`
	ID    string `json:"id" arg:"required" help:"the item"`
}

// GetResult is memory.get's result.
type GetResult struct {
	Item *Item `json:"item"`
}

func (m *Memory) actGet(ctx context.Context, call action.Call, a GetArgs) (GetResult, error) {
	if _, err := m.Store(a.Store); err != nil {
		return GetResult{}, err
	}
	s := &store{env: m.env, name: a.Store}
	var it *Item
	err := m.env.Store.View(func(tx *storage.Tx) error {
		if _, err := s.loadAs(tx, call, access.Read); err != nil {
			return err
		}
		var err error
		it, err = s.get(tx, a.ID)
		return err
	})
	if err != nil {
		return GetResult{}, m.afterFailure(ctx, call, err)
	}
	return GetResult{Item: it}, nil
}

// holdsItems says whether a memory store holds an item (stores are few:
// their states are read, not their items).
func (m *Memory) holdsItems() (bool, error) {
	found := false
	err := m.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(statePrefix()), func(_, v []byte) error {
			var st state
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
			if found = st.ItemCount > 0; found {
				return storage.ErrStop
			}
			return nil
		})
	})
	return found, err
}

// counts reports stores, items and tokens for engine.info.
func (m *Memory) counts() (map[string]int, error) {
	out := map[string]int{"stores": 0, "items": 0, "tokens": 0, "deleted": 0}
	err := m.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(statePrefix()), func(_, v []byte) error {
			var st state
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
			out["stores"]++
			out["items"] += st.ItemCount
			out["tokens"] += st.TokenUsage
			out["deleted"] += st.Deleted
			return nil
		})
	})
	return out, err
}

// provider adds the items relevant to a turn's input to its working memory.
type provider struct{ m *Memory }

// contextLimit is how many items per store a turn gets.
const contextLimit = 5

func (p *provider) Name() string { return "memory" }

func (p *provider) Context(ctx context.Context, start kit.TurnStart) (kit.Section, error) {
	if strings.TrimSpace(start.Input) == "" {
		return kit.Section{}, nil
	}
	names, err := p.m.Names()
	if err != nil {
		return kit.Section{}, err
	}
	slices.Sort(names)
	call := action.Call{Principal: start.Principal, Turn: start.TurnID, Clock: p.m.env.Clock}
	section := map[string][]Recalled{}
	var parts []string
	for _, n := range names {
		// A turn gets memories only from the stores its principal may read;
		// the others are left out without a trace, as memory.stores does.
		items, err := (&store{env: p.m.env, name: n}).rememberForTurn(ctx, call, start.Input, contextLimit)
		if errs.KindOf(err) == errs.Permission {
			continue
		} else if err != nil {
			return kit.Section{}, err
		}
		if len(items) > 0 {
			section[n] = items
			parts = append(parts, fmt.Sprintf("%d from %s", len(items), n))
		}
	}
	if len(section) == 0 {
		return kit.Section{}, nil
	}
	return kit.Section{Data: section, Notes: []kit.Note{{Kind: "memory.remembered", Message: "memory: remembered " + strings.Join(parts, ", ")}}}, nil
}

// CommitResult is what the memory provider adds to turn.end's result.
type CommitResult struct {
	// Memorized are the references ("<store>/<id>") of the items stored.
	Memorized []string `json:"memorized"`
}

// Commit memorizes what a turn learnt: updates.memory is a list of
// {store, item}, stored inside turn.end's transaction.
func (p *provider) Commit(ctx context.Context, tx *kit.Txn, end kit.TurnEnd) (any, error) {
	if len(end.Updates) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(end.Updates, &raws); err != nil || len(raws) == 0 {
		return nil, errs.New(errs.Validation, "updates.memory must be a non-empty list of {store, item}").With("field", "updates.memory")
	}
	call := action.Call{Principal: end.Principal, Turn: end.TurnID, Clock: p.m.env.Clock}
	var refs []string
	for i, raw := range raws {
		var a MemorizeArgs
		if err := action.DecodeStrict(raw, &a); err != nil {
			return nil, errs.New(errs.Validation, "updates.memory[%d]: %w", i, err)
		}
		if _, err := p.m.Store(a.Store); err != nil {
			return nil, fmt.Errorf("updates.memory[%d]: %w", i, err)
		}
		s := &store{env: p.m.env, name: a.Store}
		item := a.Item.Item()
		if err := s.prepare(call, &item); err != nil {
			return nil, fmt.Errorf("updates.memory[%d]: %w", i, err)
		}
		res, err := s.memorizeIn(tx, call, item)
		if err != nil {
			return nil, fmt.Errorf("updates.memory[%d]: %w", i, err)
		}
		refs = append(refs, res.Ref)
	}
	return CommitResult{Memorized: refs}, nil
}
