// Package memory is the memory plugins of seed 004: named stores of memory
// items behind one interface (memorize, remember, forget, summarize,
// capacity), each of a type that gives the operations its own semantics —
// working memory is small and bounded and recalls the most important
// relevant items first; episodic memory is unbounded and recalls the most
// recent first.
package memory

import (
	"context"
	"encoding/json"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/retrieval"
)

// Plugin is a memory store. Every operation takes the call (who, when)
// and checks that its principal may do it (see access.go).
type Plugin interface {
	// Info names the store and its type and settings.
	Info() StoreConfig
	// Memorize stores an item.
	Memorize(ctx context.Context, call action.Call, item Item) (MemorizeResult, error)
	// Remember returns the items relevant to a prompt, in the store's order.
	Remember(ctx context.Context, call action.Call, req RememberRequest) ([]Recalled, error)
	// Forget removes (soft) or erases (hard) the items an instruction names.
	Forget(ctx context.Context, call action.Call, req ForgetRequest) (ForgetResult, error)
	// Summarize sums up the items of a scope within a token limit.
	Summarize(ctx context.Context, call action.Call, req SummarizeRequest) (Summary, error)
	// CapacityInfo reports how full the store is.
	CapacityInfo(ctx context.Context, call action.Call) (Capacity, error)
}

// Types of store.
const (
	TypeWorking  = "working"
	TypeEpisodic = "episodic"
)

// Item is a memory.
type Item struct {
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
	DeletedAt      *time.Time      `json:"deleted_at,omitempty"`
	// Evicted says a budget made room by forgetting this item.
	Evicted bool `json:"evicted,omitempty"`
}

// StoreConfig is a store's type and limits.
type StoreConfig struct {
	Name        string `json:"store"`
	Type        string `json:"type"`
	MaxItems    int    `json:"max_items"`    // 0: no limit
	TokenBudget int    `json:"token_budget"` // 0: no limit
	// OnFull is what memorize does when a limit would be passed: "evict"
	// the least important (then oldest) items, or "reject" with a
	// BudgetError.
	OnFull string `json:"on_full"`
}

// MemorizeResult confirms a memorize.
type MemorizeResult struct {
	Success bool `json:"success"`
	// Ref is the item's reference: "<store>/<id>".
	Ref  string `json:"ref"`
	Item *Item  `json:"item"`
	// Evicted lists the items forgotten to make room.
	Evicted []string `json:"evicted"`
}

// Filters narrow remember and summarize.
type Filters struct {
	AgentID  string          `json:"agent_id,omitempty" help:"items of this agent"`
	Tags     []string        `json:"tags,omitempty" help:"items with any of these tags"`
	Type     string          `json:"type,omitempty" help:"items of this type"`
	Since    *time.Time      `json:"since,omitempty" help:"items at or after this time"`
	Until    *time.Time      `json:"until,omitempty" help:"items before this time"`
	Metadata json.RawMessage `json:"metadata,omitempty" help:"an object: items whose metadata has each of these members with equal values"`
}

// RememberRequest asks for relevant items.
type RememberRequest struct {
	Prompt         string  `json:"prompt"`
	Filters        Filters `json:"filters"`
	Limit          int     `json:"limit"`
	Rank           string  `json:"rank"` // relevance|importance|recency ("": the store type's)
	IncludeDeleted bool    `json:"include_deleted"`
	// Explain asks for each item's Why.
	Explain bool `json:"explain"`
	// When is a time the items were stored ("last week", "in May 2025"),
	// read like a time expression in the prompt: the items inside it
	// score TimeBoost more. One that places no window is refused.
	When string `json:"when,omitempty"`
}

// Recalled is a remembered item with how relevant it is.
type Recalled struct {
	*Item
	// Score is the relevance (BM25, blended with embedding similarity when
	// a model is configured); Confidence is it relative to the best match,
	// from 0 to 1.
	Score      float64 `json:"score"`
	Confidence float64 `json:"confidence"`
	// Why says why the item was recalled; only when asked (explain), so
	// that results asked without it stay as they were.
	Why *Why `json:"why,omitempty"`
}

// Why is why an item was recalled: what of the prompt matched, and what
// ordered it.
type Why struct {
	// Rank is the order applied: relevance, importance or recency.
	Rank string `json:"rank"`
	// Terms are the prompt's words the item contains (as search terms:
	// "deploying" matches "deployed"); [] without a prompt.
	Terms []string `json:"terms"`
	// Literal: the prompt was only stop words, found as written.
	Literal bool `json:"literal,omitempty"`
	// Lexical is the item's lexical score for the prompt (0 without
	// one): the BM25 of the prompt's words, of the thesaurus words
	// standing for them, and of its tags among them, each at its weight.
	Lexical float64 `json:"lexical"`
	// Vector is the cosine similarity of the item's embedding to the
	// prompt's, when a model is configured and the item has one.
	Vector *float64 `json:"vector,omitempty"`
	// Importance is the item's importance, 0 to 1.
	Importance float64 `json:"importance"`
	// AgeSeconds is how long before the call the item was stored (its
	// timestamp), by the engine clock.
	AgeSeconds int64 `json:"age_seconds"`
	// Text says the same in one line.
	Text string `json:"text"`
	// Score is the item's score, the sum of the parts' contributions.
	Score float64 `json:"score"`
	// Parts are what the score is made of, each with its value, weight
	// and contribution: lexical (the BM25 of the prompt's own words; with
	// a model scaled by the best match), synonyms (the thesaurus words'
	// BM25, each at its relation's weight; only when the item holds one),
	// tags (the BM25 of its tags that are words of the prompt, weighed as
	// retrieval's tags field; only when it has one), vector (the cosine,
	// with a model), time (TimeBoost inside a window), importance and
	// recency (weight 0: they order, per rank, rather than score).
	Parts []Part `json:"parts"`
	// Matched are the prompt's words the item holds, by field: "text"
	// or "tags"; and the thesaurus words its text holds, each with the
	// prompt's word it stood for (synonym_of) and how they relate.
	Matched []MatchedTerm `json:"matched"`
	// Synonyms are the thesaurus words (stems) the prompt was expanded
	// with, each with the prompt's word it stands for (the same for every
	// item of a recall).
	Synonyms []retrieval.Synonym `json:"synonyms,omitempty"`
	// Tagged are the item's tags that are words of the prompt: each
	// added to its score (the tags part).
	Tagged []string `json:"tagged,omitempty"`
	// Windows are the time expressions (of the prompt or when) whose
	// window the item was stored in.
	Windows []string `json:"windows,omitempty"`
}

// ForgetRequest says what to forget and how.
type ForgetRequest struct {
	Instruction string `json:"instruction"`
	Mode        string `json:"mode"` // soft|hard
	DryRun      bool   `json:"dry_run"`
}

// ForgetResult says what was (or, in a dry run, would be) forgotten.
type ForgetResult struct {
	Success   bool    `json:"success"`
	DryRun    bool    `json:"dry_run"`
	Mode      string  `json:"mode"`
	Forgotten []*Item `json:"forgotten"`
	Matched   string  `json:"matched"` // the form of instruction understood
}

// SummarizeRequest asks for a summary of a scope.
type SummarizeRequest struct {
	Scope      string `json:"scope"` // all | tag:<t> | agent:<id> | since:<time>
	TokenLimit int    `json:"token_limit"`
}

// Summary sums up items.
type Summary struct {
	Text        string   `json:"text"`
	TokenCount  int      `json:"token_count"`
	SourceItems []string `json:"source_items"`
	Writer      string   `json:"writer"` // extractive or model
}

// Capacity is how full a store is.
type Capacity struct {
	Store      string `json:"store"`
	Type       string `json:"type"`
	ItemCount  int    `json:"item_count"`
	TokenUsage int    `json:"token_usage"`
	MaxItems   int    `json:"max_items"`
	MaxTokens  int    `json:"max_tokens"`
	// Available is what still fits.
	Available Room   `json:"available"`
	OnFull    string `json:"on_full"`
	Deleted   int    `json:"deleted"` // soft-forgotten items kept for audit
}

// Room is how many more items and tokens fit in a store; -1 where there is
// no limit.
type Room struct {
	Items  int `json:"items"`
	Tokens int `json:"tokens"`
}
