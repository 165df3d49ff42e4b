package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// MemorizedEvent is the payload of EventMemorized.
type MemorizedEvent struct {
	ID    string `json:"id"`
	Store string `json:"store"`
}

// ForgottenEvent is the payload of EventForgotten. Fields are in
// alphabetical order, the order the --events lines have always had.
type ForgottenEvent struct {
	IDs []string `json:"ids"`
	// Mode is "soft" or "hard".
	Mode string `json:"mode"`
	// Reason is set when the store evicted the items to make room.
	Reason string `json:"reason,omitempty"`
	Store  string `json:"store"`
}

// evictedTrace is the data of a memory.evicted trace entry (the
// memory.forgotten entry's is a ForgottenEvent, the event's own payload).
// Fields are in alphabetical order, the order trace.list has always shown.
type evictedTrace struct {
	IDs    []string `json:"ids"`
	Reason string   `json:"reason"`
	Store  string   `json:"store"`
}

// Events a store publishes after each commit.
var (
	EventMemorized = events.Define[MemorizedEvent]("memory.memorized", "after an item is memorized in a store")
	EventForgotten = events.Define[ForgottenEvent]("memory.forgotten", "after items are forgotten (by memory.forget, or evicted to make room)")
)

// state is what the store keeps about a store: its settings and counters.
type state struct {
	StoreConfig
	ItemCount   int       `json:"item_count"`  // live items
	TokenUsage  int       `json:"token_usage"` // of live items
	Deleted     int       `json:"deleted"`     // soft-forgotten items kept
	Docs        int       `json:"docs"`        // indexed items (live and deleted)
	TotalLength int       `json:"total_length"`
	CreatedAt   time.Time `json:"created_at"`
	// ImpFrom and ImpLow are the bottom of the imp index (see bottom.go).
	ImpFrom string   `json:"imp_from,omitempty"`
	ImpLow  []string `json:"imp_low,omitempty"`
	// Owner created the store ("" for a store made before stores had
	// owners: access.LegacyOwner's); Grants give other agents access.
	Owner  string         `json:"owner,omitempty"`
	Grants []access.Entry `json:"grants,omitempty"`
}

// acl is the store's access list.
func (st *state) acl() access.ACL { return access.ACL{Owner: st.Owner, Grants: st.Grants} }

// audience is who sees an event about the store: whoever may read it.
func (st *state) audience() events.Audience { return events.Only(st.acl().Readers()...) }

// setACL stores an access list changed by share or revoke.
func (st *state) setACL(a access.ACL) { st.Owner, st.Grants = a.Owner, a.Grants }

// objectType is what access errors and the trace call a store.
const objectType = "memory store"

// object names the store for access checks.
func (s *store) object() access.Object {
	return access.Object{Type: objectType, ID: s.name, ShareAction: "memory.share"}
}

// authorize returns a PermissionError unless call's principal may do op
// (access.Read, Write, Delete or Share) on the store.
func (s *store) authorize(call action.Call, st *state, op string) error {
	return access.Check(call.Principal, st.acl(), op, s.object(), call.Clock.Now())
}

// loadAs loads the store for call's principal to do op on it.
func (s *store) loadAs(tx *storage.Tx, call action.Call, op string) (*state, error) {
	st, err := s.load(tx)
	if err != nil {
		return nil, err
	}
	return st, s.authorize(call, st, op)
}

func stateKey(s string) []byte    { return storage.Key(storage.PrefixMemory, "store", s) }
func statePrefix() []byte         { return storage.PrefixKey(storage.PrefixMemory, "store") }
func itemKey(s, id string) []byte { return storage.Key(storage.PrefixMemory, "item", s, id) }
func itemPrefix(s string) []byte  { return storage.PrefixKey(storage.PrefixMemory, "item", s) }
func vecKey(s, id string) []byte  { return storage.Key(storage.PrefixMemory, "vec", s, id) }

// embqKey marks an item as waiting for its vector (package embed).
func embqKey(s, id string) []byte { return storage.Key(storage.PrefixMemory, "embq", s, id) }
func idxKey(s, kind string, parts ...string) []byte {
	return storage.Key(storage.PrefixIndex, append([]string{"memory", s, kind}, parts...)...)
}
func idxPrefix(s, kind string, parts ...string) []byte {
	return storage.PrefixKey(storage.PrefixIndex, append([]string{"memory", s, kind}, parts...)...)
}

// importanceKey sorts importance ascending with four decimals.
func importanceKey(v float64) string { return fmt.Sprintf("%05d", int(math.Round(v*10000))) }

// store is a Plugin over the engine's store; its type decides the default
// ranking and the type-specific forget instructions.
type store struct {
	env  *kit.Env
	name string
}

func (s *store) index() search.Index { return search.Index{Space: "memory/" + s.name} }

func (s *store) load(tx *storage.Tx) (*state, error) {
	var st state
	err := tx.GetJSON(stateKey(s.name), &st)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errs.New(errs.NotFound, "no memory store %q (memory.configure creates one; memory.stores lists them)", s.name).With("field", "store")
	}
	return &st, err
}

// Info is the store's configuration.
func (s *store) Info() StoreConfig {
	var cfg StoreConfig
	// A store that cannot be read reports the zero config; the actions that
	// need the reason load the store themselves.
	_ = s.env.Store.View(func(tx *storage.Tx) error {
		st, err := s.load(tx)
		if err == nil {
			cfg = st.StoreConfig
		}
		return err
	})
	return cfg
}

// Postings carry whether their item is soft-forgotten (search's attr byte),
// so that remember leaves forgotten items out from key scans alone.
const (
	attrLive    byte = 0 // search.Index stores it as '-'
	attrDeleted byte = 'd'
)

func attrOf(it *Item) byte {
	if it.Deleted {
		return attrDeleted
	}
	return attrLive
}

// orderKeys are an item's entries in the two ordering indexes: time
// (oldest first) and imp (least important, then oldest, first). Live items
// are under time/ and imp/, soft-forgotten ones under del/time/ and
// del/imp/, so that walking the live items (to evict, to forget the oldest,
// to summarize) never steps over forgotten ones.
func (s *store) orderKeys(it *Item) [][]byte {
	t := storage.Time(it.Timestamp)
	imp := importanceKey(it.Importance)
	if it.Deleted {
		return [][]byte{idxKey(s.name, "del", "time", t, it.ID), idxKey(s.name, "del", "imp", imp, t, it.ID)}
	}
	return [][]byte{idxKey(s.name, "time", t, it.ID), idxKey(s.name, "imp", imp, t, it.ID)}
}

// itemIndexKeys are every key-only index entry of an item but its postings.
func (s *store) itemIndexKeys(it *Item) [][]byte {
	keys := append(s.orderKeys(it),
		idxKey(s.name, "agent", it.AgentID, it.ID),
		idxKey(s.name, "type", it.Type, it.ID),
	)
	for _, tag := range it.Tags {
		keys = append(keys, idxKey(s.name, "tag", tag, it.ID))
	}
	if ep := episodeOf(it); ep != "" {
		keys = append(keys, idxKey(s.name, "episode", ep, it.ID))
	}
	return keys
}

// episodeOf is an item's metadata.episode, if it has one.
func episodeOf(it *Item) string {
	var m struct {
		Episode any `json:"episode"`
	}
	_ = json.Unmarshal(it.Metadata, &m) // metadata that is not an object has no episode
	switch v := m.Episode.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	}
	return ""
}

// Memorize stores an item, making room per the store's policy.
func (s *store) Memorize(ctx context.Context, call action.Call, item Item) (MemorizeResult, error) {
	if err := s.prepare(call, &item); err != nil {
		return MemorizeResult{}, err
	}
	var res MemorizeResult
	err := s.env.Update(ctx, func(tx *kit.Txn) error {
		var err error
		res, err = s.memorizeIn(tx, call, item)
		return err
	})
	return res, err
}

// memorizeIn stores a prepared item inside tx.
func (s *store) memorizeIn(tx *kit.Txn, call action.Call, item Item) (MemorizeResult, error) {
	var res MemorizeResult
	err := func() error {
		st, err := s.loadAs(tx.Tx, call, access.Write)
		if err != nil {
			return err
		}
		if old, err := s.get(tx.Tx, item.ID); err == nil {
			how := "forget it first (mode hard)"
			if old.Deleted {
				how = "it is forgotten but kept for audit: erase it first (forget \"item " + item.ID + "\", mode hard)"
			}
			return errs.New(errs.Conflict, "store %q already holds an item %q; %s, or give another id", s.name, item.ID, how).
				With("field", "item.id").With("current", old)
		} else if errs.KindOf(err) != errs.NotFound {
			return err
		}
		evicted, err := s.makeRoom(tx, call, st, &item)
		if err != nil {
			return err
		}
		if err := tx.SetJSON(itemKey(s.name, item.ID), &item); err != nil {
			return err
		}
		for _, k := range s.itemIndexKeys(&item) {
			if err := tx.Set(k, nil); err != nil {
				return err
			}
		}
		length, err := s.index().Add(tx.Tx, item.ID, item.Text, attrLive)
		if err != nil {
			return err
		}
		st.ItemCount++
		st.TokenUsage += item.TokensEstimate
		st.bottomAdd(s.impSortKey(&item))
		st.Docs++
		st.TotalLength += length
		if err := tx.SetJSON(stateKey(s.name), st); err != nil {
			return err
		}
		EventMemorized.Publish(tx, st.audience(), MemorizedEvent{Store: s.name, ID: item.ID})
		if err := s.embedAfterCommit(tx, &item); err != nil {
			return err
		}
		res = MemorizeResult{Success: true, Ref: s.name + "/" + item.ID, Item: &item, Evicted: evicted}
		return nil
	}()
	return res, err
}

// prepare validates an item and fills in what it may leave out. An item
// without agent_id is about the agent acting (issue 14: it failed, though
// the engine always knows who acts: --agent, a step's `as`, the console's).
func (s *store) prepare(call action.Call, it *Item) error {
	if it.AgentID == "" {
		it.AgentID = call.Principal
	}
	switch {
	case strings.TrimSpace(it.Text) == "":
		return kit.Validation("item.text", "a memory needs text")
	case it.Type == "":
		return kit.Validation("item.type", "a memory needs a type, e.g. \"fact\", \"preference\", \"event\"")
	case it.AgentID == "":
		return kit.Validation("item.agent_id", "a memory needs the agent it belongs to")
	case !(it.Importance >= 0 && it.Importance <= 1): // NaN too
		return kit.Validation("item.importance", "must be from 0 to 1, got %v", it.Importance)
	case it.TokensEstimate < 0:
		return kit.Validation("item.tokens_estimate", "must be positive")
	case len(it.Text) > maxText:
		return kit.Validation("item.text", "is %d bytes; at most %d", len(it.Text), maxText)
	}
	for _, f := range []struct{ field, value string }{{"item.id", it.ID}, {"item.type", it.Type}, {"item.agent_id", it.AgentID}} {
		if err := kit.CheckName(f.field, f.value, "/"); err != nil {
			return err
		}
	}
	tags := []string{}
	for _, t := range it.Tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			return kit.Validation("item.tags", "a tag must not be empty")
		}
		if err := kit.CheckName("item.tags", t, "/"); err != nil {
			return err
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	it.Tags = tags
	if len(it.Metadata) == 0 || string(it.Metadata) == "null" {
		it.Metadata = json.RawMessage("{}")
	} else if !json.Valid(it.Metadata) {
		return kit.Validation("item.metadata", "is not valid JSON")
	} else if it.Metadata = bytes.TrimSpace(it.Metadata); it.Metadata[0] != '{' {
		return kit.Validation("item.metadata", "must be a JSON object, not %s", action.JSONKind(it.Metadata))
	}
	if it.ID == "" {
		it.ID = s.env.IDs.New()
	}
	if it.Timestamp.IsZero() {
		it.Timestamp = call.Clock.Now()
	}
	it.Timestamp = it.Timestamp.UTC()
	if it.TokensEstimate == 0 {
		it.TokensEstimate = llm.CountTokens(it.Text)
	}
	it.Deleted, it.DeletedAt, it.Evicted = false, nil, false
	return nil
}

// Check says whether memory.memorize would accept the item from agent:
// the same checks, nothing stored. A caller that must do something first
// (create the store) checks before it does.
func (in ItemInput) Check(agent string) error {
	it := in.Item()
	if it.ID == "" {
		it.ID = "check" // prepare would draw one from the engine's generator
	}
	if it.Timestamp.IsZero() {
		it.Timestamp = time.Unix(0, 0)
	}
	return (&store{}).prepare(action.Call{Principal: agent}, &it)
}

// FitsNew says whether memory.memorize would take the item into a new,
// empty store named store configured as cfg: not if it is larger than
// the store's whole token budget. A caller that makes the store first
// checks before it does, so that a refused item leaves no store.
func (in ItemInput) FitsNew(store string, cfg StoreConfig) error {
	it := in.Item()
	if it.TokensEstimate == 0 {
		it.TokensEstimate = llm.CountTokens(it.Text)
	}
	return tooLarge(&it, store, cfg.TokenBudget)
}

// tooLarge refuses an item larger than a store's whole token budget: no
// eviction can make room for it.
func tooLarge(it *Item, store string, budget int) error {
	if budget > 0 && it.TokensEstimate > budget {
		return errs.New(errs.Budget, "the item is %d tokens, more than store %q's whole token_budget of %d", it.TokensEstimate, store, budget).
			With("token_budget", budget).With("tokens_estimate", it.TokensEstimate)
	}
	return nil
}

// maxText bounds one memory's text, in bytes.
const maxText = 256 << 10

// makeRoom applies the store's limits before an item is added: evict the
// least important (then oldest) live items, or refuse.
func (s *store) makeRoom(tx *kit.Txn, call action.Call, st *state, it *Item) ([]string, error) {
	if err := tooLarge(it, s.name, st.TokenBudget); err != nil {
		return nil, err
	}
	over := func(count, tokens int) bool {
		return (st.MaxItems > 0 && count+1 > st.MaxItems) || (st.TokenBudget > 0 && tokens+it.TokensEstimate > st.TokenBudget)
	}
	if !over(st.ItemCount, st.TokenUsage) {
		return []string{}, nil
	}
	if st.OnFull == "reject" {
		return nil, errs.New(errs.Budget, "store %q is full (%d/%d items, %d/%d tokens) and its policy is to reject; forget something or raise its limits with memory.configure",
			s.name, st.ItemCount, st.MaxItems, st.TokenUsage, st.TokenBudget).With("store", s.name)
	}
	return s.evict(tx, call, st, over, "full")
}

// evict soft-forgets live items, least important (then oldest) first,
// while over(live items, their tokens) holds, and says so in an event and
// the trace. The first item it keeps becomes the bottom of the imp index
// (see bottom.go).
func (s *store) evict(tx *kit.Txn, call action.Call, st *state, over func(count, tokens int) bool, reason string) ([]string, error) {
	var victims []*Item
	count, tokens := st.ItemCount, st.TokenUsage
	kept, stopped := "", false
	err := s.walkImp(tx.Tx, st, func(k string, v *Item) error {
		if !over(count, tokens) {
			kept, stopped = k, true
			return storage.ErrStop
		}
		victims = append(victims, v)
		count--
		tokens -= v.TokensEstimate
		return nil
	})
	if err != nil {
		return nil, err
	}
	if over(count, tokens) {
		// The counters disagree with the items: refuse rather than pass a limit.
		return nil, errs.New(errs.Internal, "store %q: evicting every item does not make room (%d items, %d tokens counted); its counters are wrong", s.name, st.ItemCount, st.TokenUsage)
	}
	ids := []string{}
	for _, v := range victims {
		v.Evicted = true
		if err := s.forgetOne(tx, call, st, v, "soft"); err != nil {
			return nil, err
		}
		ids = append(ids, v.ID)
	}
	// The victims left ImpLow as they went; once it is empty, the walk went
	// on from ImpFrom, and what it kept is the new bottom.
	if len(st.ImpLow) == 0 && len(victims) > 0 {
		if !stopped {
			kept = "" // nothing left
		}
		st.ImpFrom = kept
		if err := tx.SetJSON(stateKey(s.name), st); err != nil {
			return nil, err
		}
	}
	if len(ids) > 0 {
		EventForgotten.Publish(tx, st.audience(), ForgottenEvent{Store: s.name, IDs: ids, Mode: "soft", Reason: reason})
		if _, err := tx.Trace(call, "memory.evicted", fmt.Sprintf("memory %s: evicted %d item(s) to make room (least important first): %s",
			s.name, len(ids), strings.Join(ids, ", ")), evictedTrace{IDs: ids, Reason: reason, Store: s.name}); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// walk calls fn with the live items in the order of an index: "time"
// (oldest first) or "imp" (least important first, then oldest); desc
// reverses it. skip, if not nil, leaves out ids without reading their items.
// fn may return storage.ErrStop.
func (s *store) walk(tx *storage.Tx, kind string, desc bool, skip func(id string) bool, fn func(*Item) error) error {
	return s.walkPrefix(tx, idxPrefix(s.name, kind), desc, skip, func(_ []byte, it *Item) error { return fn(it) })
}

// walkPrefix reads the items of the index keys under prefix, in order;
// fn gets each key's part after the prefix (its sort key) too.
func (s *store) walkPrefix(tx *storage.Tx, prefix []byte, desc bool, skip func(id string) bool, fn func(sortKey []byte, it *Item) error) error {
	return tx.Keys(storage.Range{Prefix: prefix, Reverse: desc}, func(k []byte) error {
		id := storage.LastPart(k)
		if skip != nil && skip(id) {
			return nil
		}
		it, err := s.get(tx, id)
		if err != nil {
			return err
		}
		return fn(k[len(prefix):], it)
	})
}

func (s *store) get(tx *storage.Tx, id string) (*Item, error) {
	var it Item
	if err := tx.GetJSON(itemKey(s.name, id), &it); errors.Is(err, storage.ErrNotFound) {
		return nil, errs.New(errs.NotFound, "store %q has no item %q", s.name, id).With("field", "id")
	} else if err != nil {
		return nil, err
	}
	return &it, nil
}

// forgetOne soft-forgets (marks deleted, keeps for audit) or hard-forgets
// (erases with every index entry) one item, inside tx.
func (s *store) forgetOne(tx *kit.Txn, call action.Call, st *state, it *Item, mode string) error {
	wasLive := !it.Deleted
	if mode == "hard" {
		for _, k := range s.itemIndexKeys(it) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		length, err := s.index().Remove(tx.Tx, it.ID, it.Text, attrOf(it))
		if err != nil {
			return err
		}
		if err := tx.Delete(itemKey(s.name, it.ID)); err != nil {
			return err
		}
		if err := tx.Delete(vecKey(s.name, it.ID)); err != nil {
			return err
		}
		if err := tx.Delete(embqKey(s.name, it.ID)); err != nil {
			return err
		}
		if err := s.env.Embeddings().Uncache(tx.Tx, it.Text); err != nil {
			return err
		}
		if err := embed.Touch(tx.Tx, storage.PrefixKey(storage.PrefixMemory, "vec", s.name)); err != nil {
			return err
		}
		st.Docs--
		st.TotalLength -= length
		if !wasLive {
			st.Deleted--
		}
	} else {
		if !wasLive {
			return nil // already soft-forgotten
		}
		// Out of the live ordering indexes and postings, into the deleted ones.
		for _, k := range s.orderKeys(it) {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		if _, err := s.index().Remove(tx.Tx, it.ID, it.Text, attrLive); err != nil {
			return err
		}
		now := call.Clock.Now()
		it.Deleted, it.DeletedAt = true, &now
		if err := tx.SetJSON(itemKey(s.name, it.ID), it); err != nil {
			return err
		}
		for _, k := range s.orderKeys(it) {
			if err := tx.Set(k, nil); err != nil {
				return err
			}
		}
		if _, err := s.index().Add(tx.Tx, it.ID, it.Text, attrDeleted); err != nil {
			return err
		}
		st.Deleted++
	}
	if wasLive {
		st.ItemCount--
		st.TokenUsage -= it.TokensEstimate
		st.bottomRemove(s.impSortKey(it))
	}
	return tx.SetJSON(stateKey(s.name), st)
}

// embedAfterCommit marks the item, in tx, as waiting for its vector, when
// a model is configured (remember works without it): the engine's
// embedding queue stores it in the background, retries a failed call, and
// finds the marker again after a restart.
func (s *store) embedAfterCommit(tx *kit.Txn, it *Item) error {
	return s.env.Embeddings().Mark(tx.Tx, embqKey(s.name, it.ID), embed.Marker{Text: it.Text, Item: itemKey(s.name, it.ID), Vector: vecKey(s.name, it.ID)})
}

// embedSource is the memory's texts with vectors, for the queue.
func embedSource(env *kit.Env) embed.Source {
	return embed.Source{
		Name:    "memory",
		Markers: storage.PrefixKey(storage.PrefixMemory, "embq"),
		Stores:  func() []*storage.Store { return []*storage.Store{env.Store} },
		Items: func(tx *storage.Tx, fn func(embed.Item) error) error {
			return tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixMemory, "item")), func(k, v []byte) error {
				var it Item
				if err := json.Unmarshal(v, &it); err != nil {
					return err
				}
				name := storage.SplitKey(storage.PrefixMemory, k)[1]
				return fn(embed.Item{Key: itemKey(name, it.ID), Vector: vecKey(name, it.ID), Marker: embqKey(name, it.ID), Text: it.Text})
			})
		},
	}
}

// CapacityInfo reports how full the store is.
func (s *store) CapacityInfo(ctx context.Context, call action.Call) (Capacity, error) {
	var c Capacity
	err := s.env.Store.View(func(tx *storage.Tx) error {
		st, err := s.loadAs(tx, call, access.Read)
		if err != nil {
			return err
		}
		c = Capacity{Store: s.name, Type: st.Type, ItemCount: st.ItemCount, TokenUsage: st.TokenUsage,
			MaxItems: st.MaxItems, MaxTokens: st.TokenBudget, OnFull: st.OnFull, Deleted: st.Deleted}
		c.Available.Items, c.Available.Tokens = -1, -1
		if st.MaxItems > 0 {
			c.Available.Items = st.MaxItems - st.ItemCount
		}
		if st.TokenBudget > 0 {
			c.Available.Tokens = st.TokenBudget - st.TokenUsage
		}
		return nil
	})
	return c, err
}
