// Package history is the conversation history daemon (seed 001): per
// conversation, a rolling buffer of the last utterances, evicted oldest
// first (by count and by token budget) into a running summary that keeps the
// names, numbers, dates and actions of what it covers, an archive of evicted
// utterances that search still finds, BM25 search with stemming (hybrid with
// embeddings when a model is configured), in-memory or durable backends
// switchable live, and its part in turns.
package history

import (
	"encoding/json"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// Speakers an utterance may have.
var Speakers = []string{"user", "assistant", "system"}

// Backends a conversation may live in.
const (
	BackendInMemory = "in-memory"
	BackendDurable  = "durable"
)

// Defaults of a new conversation.
const (
	DefaultConversation      = "default"
	DefaultBufferSize        = 50
	DefaultSummaryTokenLimit = 200
)

// Utterance is one thing said in a conversation.
type Utterance struct {
	Conversation   string          `json:"conversation"`
	UtteranceIndex int             `json:"utterance_index"`
	Speaker        string          `json:"speaker"`
	Text           string          `json:"text"`
	TurnNumber     int             `json:"turn_number"`
	Timestamp      time.Time       `json:"timestamp"`
	TokenCount     int             `json:"token_count"`
	Metadata       json.RawMessage `json:"metadata"`
	// Evicted: no longer in the buffer; folded into the summary and kept in
	// the archive, where search still finds it.
	Evicted   bool       `json:"evicted"`
	EvictedAt *time.Time `json:"evicted_at,omitempty"`
}

// Conversation is a conversation's settings and counters.
type Conversation struct {
	Conversation      string `json:"conversation"`
	BufferSize        int    `json:"buffer_size"`
	MaxTokens         int    `json:"max_tokens"` // 0: no token budget
	SummaryTokenLimit int    `json:"summary_token_limit"`
	Backend           string `json:"backend"`
	// NextIndex is the utterance_index the next utterance gets.
	NextIndex int `json:"next_index"`
	// FirstBuffered is the lowest index that may still be in the buffer:
	// everything below it was evicted (or deleted).
	FirstBuffered int `json:"first_buffered"`
	Size          int `json:"size"`         // utterances in the buffer
	TotalTokens   int `json:"total_tokens"` // of the buffer
	EvictedCount  int `json:"evicted_count"`
	LastTurn      int `json:"last_turn"`
	// Docs and DocLength are the BM25 statistics of everything indexed
	// (buffer and archive).
	Docs      int `json:"docs"`
	DocLength int `json:"doc_length"`
	// IndexVersion goes up with every change to the search postings, in
	// the same transaction: the postings kept in memory say which version
	// they hold, and a search uses them only at the version it reads.
	IndexVersion uint64    `json:"index_version,omitempty"`
	LastEviction *Eviction `json:"last_eviction,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Owner is the principal whose write or configure created the
	// conversation ("" for one stored before conversations had owners:
	// access.LegacyOwner's); Grants are the other principals' access.
	Owner  string         `json:"owner,omitempty"`
	Grants []access.Entry `json:"grants,omitempty"`

	// fresh: the conversation is being created by this change.
	fresh bool
}

// acl is the conversation's owner and grants.
func (conv *Conversation) acl() access.ACL { return access.ACL{Owner: conv.Owner, Grants: conv.Grants} }

// audience is who sees an event about conv: whoever may read it (nobody
// for a conversation with nothing stored, nil).
func audience(conv *Conversation) events.Audience {
	if conv == nil {
		return events.Audience{}
	}
	return events.Only(conv.acl().Readers()...)
}

// audienceIn is audience for conversation c as tx holds it (nobody if it
// cannot be read: an event is never shown to more than may see it).
func audienceIn(tx *storage.Tx, c string) events.Audience {
	conv, err := loadConversation(tx, c)
	if err != nil {
		return events.Audience{}
	}
	return audience(conv)
}

// ObjectType is what access checks, errors and the trace call a
// conversation.
const ObjectType = "conversation"

// object names conversation c for access checks.
func object(c string) access.Object {
	return access.Object{Type: ObjectType, ID: c, ShareAction: "history.share"}
}

// Eviction says which utterances left the buffer, when, and why.
type Eviction struct {
	Indexes []int     `json:"indexes"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"` // "buffer_size" or "max_tokens"
}

// summaryRecord is what the store keeps of a conversation's summary.
type summaryRecord struct {
	// Extractive is always kept up to date; it serves without a model and
	// whenever the model's summary is behind or failed.
	Extractive text.Summary `json:"extractive"`
	// ModelText is the model's summary of the utterances in ModelSpans, if
	// a model wrote one.
	ModelText  string      `json:"model_text,omitempty"`
	ModelSpans []text.Span `json:"model_spans,omitempty"`
	UpdatedAt  time.Time   `json:"updated_at"`
	// NextFold is the index after the last utterance folded in: pending
	// folds are looked for from there (0 in a record stored before it was
	// kept, which looks from the start once).
	NextFold int `json:"next_fold,omitempty"`
}

// MaxCoversListed is how many covered indexes a Summary lists in Covers.
const MaxCoversListed = 1000

// CoveredCount is how many utterances the summary stands for.
func (s Summary) CoveredCount() int {
	if s.Covers != nil {
		return len(s.Covers)
	}
	n := 0
	for _, sp := range s.CoveredSpans {
		n += sp.To - sp.From + 1
	}
	return n
}

// Summary is a conversation's running summary as read.
type Summary struct {
	Text       string `json:"text"`
	TokenCount int    `json:"token_count"`
	// Covers lists the utterance indexes the summary stands for, while
	// they are at most MaxCoversListed; beyond, it is null and
	// CoveredSpans says the same as ranges (a list of every index grows
	// without bound: 25,000 evictions made 142 KB of it).
	Covers []int `json:"covers"`
	// CoveredSpans are the covered indexes as ranges [from, to], from the
	// oldest, when Covers does not list them (omitted while it does).
	CoveredSpans []text.Span `json:"covered_spans,omitempty"`
	// Writer is "extractive" or "model".
	Writer    string     `json:"writer"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}
