package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// EvictedEvent is the payload of EventEvicted.
type EvictedEvent struct {
	Conversation string `json:"conversation"`
	// Indexes are the utterances that left the buffer, oldest first.
	Indexes []int `json:"indexes"`
	// Reason is the budget that was exceeded: "buffer_size" or "max_tokens".
	Reason string `json:"reason"`
}

// SummaryEvent is the payload of EventSummary.
type SummaryEvent struct {
	Conversation string `json:"conversation"`
	// Covered is how many utterances the summary covers.
	Covered    int `json:"covered"`
	TokenCount int `json:"token_count"`
	// Writer is "extractive" or "model".
	Writer string `json:"writer"`
}

// DeletedEvent is the payload of EventDeleted.
type DeletedEvent struct {
	Conversation   string `json:"conversation"`
	UtteranceIndex int    `json:"utterance_index"`
	// Evicted: the utterance was in the archive, not the buffer.
	Evicted bool `json:"evicted"`
}

// DroppedEvent is the payload of EventDropped.
type DroppedEvent struct {
	Conversation string `json:"conversation"`
	// Keys is how many records went (settings, utterances, summary,
	// embeddings, pending folds, search postings).
	Keys int `json:"keys"`
}

// MovedEvent is the payload of EventMoved.
type MovedEvent struct {
	Conversation string `json:"conversation"`
	// From and To are the backends, "in-memory" or "durable".
	From string `json:"from"`
	To   string `json:"to"`
}

// ConfiguredEvent is the payload of EventConfigured: a conversation's
// settings as history.configure left them.
type ConfiguredEvent struct {
	Conversation      string `json:"conversation"`
	BufferSize        int    `json:"buffer_size"`
	MaxTokens         int    `json:"max_tokens"`
	SummaryTokenLimit int    `json:"summary_token_limit"`
	Backend           string `json:"backend"`
}

// AccessEvent is the payload of EventAccess: who was given or lost access
// to a conversation.
type AccessEvent struct {
	Conversation string `json:"conversation"`
	// Principal is the agent whose access changed.
	Principal string `json:"principal"`
	// Change is "shared" or "revoked".
	Change string `json:"change"`
	// Permissions are what the agent may do now (empty once revoked).
	Permissions []string `json:"permissions"`
}

// Events the history publishes after each commit. A view of a conversation
// (the console's Chat tab) reloads on any of them that names it.
var (
	EventWritten = events.Define[Utterance]("utterance.written", "after an utterance is written to a conversation")
	EventEvicted = events.Define[EvictedEvent]("utterance.evicted", "after a write pushes utterances out of a conversation's buffer")
	EventSummary = events.Define[SummaryEvent]("summary.updated", "after evicted utterances are folded into a conversation's running summary (extractive, then the model's)")
	EventDeleted = events.Define[DeletedEvent]("utterance.deleted", "after an utterance is deleted from a conversation (history.delete): from its buffer, or from the archive of evicted ones")
	// EventConfigured lets a view refresh a conversation's figures and
	// summary when its settings change, evicted or not (issue 14, bug 8).
	EventConfigured = events.Define[ConfiguredEvent]("conversation.configured", "after history.configure changes a conversation's settings (buffer size, token budget, summary limit, backend)")
	// EventAccess lets a view follow a conversation shared with or taken
	// from an agent.
	EventAccess = events.Define[AccessEvent]("conversation.access", "after history.share or history.revoke changes who may use a conversation")
	// EventDropped lets a view of a conversation let go of it.
	EventDropped = events.Define[DroppedEvent]("conversation.dropped", "after history.drop deleted a conversation and everything in it")
	EventMoved   = events.Define[MovedEvent]("conversation.moved", "after a conversation is moved to the other backend (history.backend, or history.configure with a backend), once the new backend holds all of it")
)

// countTokens is llm.CountTokens, remembering the counts of the chunks of
// text it has seen (see text.Memo): utterances and summaries repeat their
// words, and counting is most of the cost of a write.
var countTokens = text.Memo(llm.CountTokens)

// History is the conversation history daemon.
type History struct {
	env            *kit.Env
	stores         *stores
	defaultBackend string
	// folder folds evicted utterances into the summary in the background
	// (see fold.go); readers of the summary settle it first.
	folder    *kit.Worker
	holdFolds bool
	// bulkChunk is how many writes BulkLoad commits to one transaction.
	bulkChunk int
	// locks holds a *sync.Mutex per conversation: writes to one
	// conversation take turns in this process instead of conflicting in
	// the store (Badger's directory lock keeps other processes out).
	locks sync.Map
	// postings are the search postings in memory (postings.go).
	postings *postingIndex
	// hybrid are the conversations' hybrid retrieval indexes (hybrid.go).
	hybrid *hybridIndexes
}

// lock takes conversation c's lock and returns its unlock.
func (h *History) lock(c string) func() {
	m, _ := h.locks.LoadOrStore(c, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Options configure the history.
type Options struct {
	// DefaultBackend is where new conversations live: "durable" or
	// "in-memory" (default: durable when the engine has a data directory).
	DefaultBackend string
	// holdFolds (tests) leaves every fold pending, as a crash right after
	// the write would.
	holdFolds bool
	// bulkChunk (tests) replaces bulkChunk when not 0, so that a test
	// crosses BulkLoad's transactions with hundreds of writes, not
	// thousands (slow under -race).
	bulkChunk int
}

// New returns the history over env.
func New(env *kit.Env, opts Options) (*History, error) {
	h := &History{env: env, stores: &stores{env: env}, defaultBackend: opts.DefaultBackend, holdFolds: opts.holdFolds,
		bulkChunk: bulkChunk, postings: newPostingIndex(), hybrid: newHybridIndexes()}
	if opts.bulkChunk > 0 {
		h.bulkChunk = opts.bulkChunk
	}
	if h.defaultBackend == "" {
		h.defaultBackend = BackendDurable
		if env.Store.InMemory() {
			h.defaultBackend = BackendInMemory
		}
	}
	if _, err := h.stores.get(h.defaultBackend); err != nil {
		return nil, fmt.Errorf("--history-backend: %w", err)
	}
	env.OnClose(h.stores.close)
	h.folder = kit.NewWorker(h.foldPending, func(c string, err error) {
		env.Log.Warn("folding evictions into the summary failed; the next write or start retries", "conversation", c, "err", err)
	})
	env.OnClose(func() error { h.folder.Stop(); return nil }) // runs before the stores close
	env.AddWorker(h.folder)
	// Finding the folds a previous run left is the folder's first job, not
	// part of opening: after a bulk load, the deleted fold keys Badger
	// has not compacted away yet take a second to step over.
	h.enqueueFolds(resumeJob)
	// The utterances a previous run left waiting for their vectors.
	if err := env.Embeddings().Register(h.embedSource()); err != nil {
		return nil, err
	}
	return h, nil
}

// WriteRequest is an utterance to record.
type WriteRequest struct {
	Conversation string          `json:"conversation,omitempty" help:"the conversation (default \"default\"; created on first write)"`
	Speaker      string          `json:"speaker" arg:"required" help:"user, assistant or system"`
	Text         string          `json:"text" arg:"required" help:"what was said (never truncated)"`
	TurnNumber   *int            `json:"turn_number,omitempty" help:"the turn (default: a user utterance starts the next turn, others stay in the current one)"`
	Metadata     json.RawMessage `json:"metadata,omitempty" help:"any JSON object, kept verbatim"`
	// DryRun lets a caller that must do something else first (the MCP
	// log_message routes the message to a thread) know the write will be
	// accepted before it does.
	DryRun bool `json:"dry_run,omitempty" help:"only check the write would be accepted (its fields, access, the token budget) and show the utterance it would write: nothing is stored"`
}

// WriteResult is what a write did.
type WriteResult struct {
	Utterance *Utterance `json:"utterance"`
	// Evicted lists the utterances the write pushed out of the buffer
	// (folded into the summary right after: history.summary shows them);
	// [] in a dry run.
	Evicted []int `json:"evicted"`
	// DryRun says nothing was written: Utterance is what would be.
	DryRun bool `json:"dry_run,omitempty"`
}

// ConversationName checks a conversation id as every history action does
// and returns it ("" means the default conversation).
func ConversationName(c string) (string, error) { return conversationName(c) }

func conversationName(c string) (string, error) {
	c = strings.TrimSpace(c)
	if c == "" {
		return DefaultConversation, nil
	}
	if strings.ContainsAny(c, "/\n") || len(c) > 200 {
		return "", kit.Validation("conversation", "a conversation id is at most 200 characters, without '/' or line breaks")
	}
	return c, nil
}

func (r *WriteRequest) validate() error {
	var err error
	if r.Conversation, err = conversationName(r.Conversation); err != nil {
		return err
	}
	if !slices.Contains(Speakers, r.Speaker) {
		return kit.Validation("speaker", "unknown speaker %q; use user, assistant or system", r.Speaker)
	}
	if strings.TrimSpace(r.Text) == "" {
		return kit.Validation("text", "an utterance needs text")
	}
	if r.TurnNumber != nil && (*r.TurnNumber < 0 || *r.TurnNumber > MaxTurnNumber) {
		// Past the limit, the next turn's number would overflow.
		return kit.Validation("turn_number", "must be from 0 to %d, not %d", MaxTurnNumber, *r.TurnNumber)
	}
	if len(r.Metadata) == 0 || string(r.Metadata) == "null" {
		r.Metadata = json.RawMessage("{}")
	} else if r.Metadata[0] != '{' {
		return kit.Validation("metadata", "must be a JSON object, not %s", action.JSONKind(r.Metadata))
	}
	return nil
}

// MaxTurnNumber is the highest turn_number an utterance may give.
const MaxTurnNumber = 1_000_000_000

// Write records an utterance, evicting what no longer fits into the summary.
func (h *History) Write(ctx context.Context, call action.Call, req WriteRequest) (WriteResult, error) {
	if err := req.validate(); err != nil {
		return WriteResult{}, err
	}
	if req.DryRun {
		var u *Utterance
		err := h.view(call, req.Conversation, access.Write, func(_ *storage.Tx, conv *Conversation) error {
			if conv == nil {
				conv = newConversation(call, req.Conversation, "", h.env.Clock.Now())
			}
			var err error
			u, err = nextUtterance(call, conv, req)
			return err
		})
		if err != nil {
			return WriteResult{}, err
		}
		return WriteResult{Utterance: u, Evicted: []int{}, DryRun: true}, nil
	}
	var res WriteResult
	err := h.update(ctx, call, req.Conversation, access.Write, func(tx *kit.Txn, conv *Conversation) error {
		var err error
		res, err = h.write(tx, call, conv, req)
		return err
	})
	return res, err
}

// write records req in conv inside tx (the caller saves conv).
func (h *History) write(tx *kit.Txn, call action.Call, conv *Conversation, req WriteRequest) (WriteResult, error) {
	u, err := nextUtterance(call, conv, req)
	if err != nil {
		return WriteResult{}, err
	}
	tokens, turn := u.TokenCount, u.TurnNumber
	if err := tx.SetJSON(uttKey(conv.Conversation, u.UtteranceIndex), u); err != nil {
		return WriteResult{}, err
	}
	counts, dl, err := indexUtterance(tx.Tx, u)
	if err != nil {
		return WriteResult{}, err
	}
	h.changedPostings(tx, conv, indexChange{add: true, index: u.UtteranceIndex, speaker: speakerCodes[u.Speaker], length: dl, counts: counts, u: u})
	conv.Docs++
	conv.DocLength += dl
	conv.NextIndex++
	conv.Size++
	conv.TotalTokens += tokens
	conv.LastTurn = max(conv.LastTurn, turn)
	EventWritten.Publish(tx, audience(conv), *u)
	res := WriteResult{Utterance: u, Evicted: []int{}}
	if err := h.evict(tx, call, conv, &res.Evicted); err != nil {
		return WriteResult{}, err
	}
	if err := h.embedLater(tx, u); err != nil {
		return WriteResult{}, err
	}
	return res, nil
}

// nextUtterance is the utterance req would add to conv: refused if it is
// larger than the conversation's whole token budget.
func nextUtterance(call action.Call, conv *Conversation, req WriteRequest) (*Utterance, error) {
	tokens := countTokens(req.Text)
	if conv.MaxTokens > 0 && tokens > conv.MaxTokens {
		return nil, errs.New(errs.Budget,
			"the utterance is %d tokens, more than the conversation's whole budget of max_tokens=%d; utterances are never truncated, so raise max_tokens (history.configure) or split the text",
			tokens, conv.MaxTokens).With("token_count", tokens).With("max_tokens", conv.MaxTokens)
	}
	turn := conv.LastTurn
	switch {
	case req.TurnNumber != nil:
		turn = *req.TurnNumber
	case req.Speaker == "user" || turn == 0:
		turn++
	}
	return &Utterance{
		Conversation: conv.Conversation, UtteranceIndex: conv.NextIndex, Speaker: req.Speaker, Text: req.Text,
		TurnNumber: turn, Timestamp: call.Clock.Now(), TokenCount: tokens, Metadata: req.Metadata,
	}, nil
}

// indexUtterance writes the search postings of u, and returns its terms'
// counts and its length in terms.
func indexUtterance(tx *storage.Tx, u *Utterance) (map[string]int, int, error) {
	counts, dl := text.TermCounts(u.Text)
	for term, tf := range counts {
		p := posting{speaker: speakerCodes[u.Speaker], tf: tf, dl: dl}
		if err := tx.Set(postingKey(u.Conversation, term, u.UtteranceIndex, p), nil); err != nil {
			return nil, 0, err
		}
	}
	return counts, dl, nil
}

// unindexUtterance removes them.
func unindexUtterance(tx *storage.Tx, u *Utterance) (map[string]int, int, error) {
	counts, dl := text.TermCounts(u.Text)
	for term, tf := range counts {
		p := posting{speaker: speakerCodes[u.Speaker], tf: tf, dl: dl}
		if err := tx.Delete(postingKey(u.Conversation, term, u.UtteranceIndex, p)); err != nil {
			return nil, 0, err
		}
	}
	if err := tx.Delete(embqKey(u.Conversation, u.UtteranceIndex)); err != nil {
		return nil, 0, err
	}
	if err := embed.Touch(tx, vecPrefix(u.Conversation)); err != nil {
		return nil, 0, err
	}
	return counts, dl, tx.Delete(vecKey(u.Conversation, u.UtteranceIndex))
}

// changedPostings records, in the transaction that changed conv's
// postings, a new index version for them, and brings the postings in
// memory to it once the transaction commits (see postings.go).
func (h *History) changedPostings(tx *kit.Txn, conv *Conversation, ch indexChange) {
	from := conv.IndexVersion
	conv.IndexVersion++
	to, c, fresh := conv.IndexVersion, conv.Conversation, conv.fresh && from == 0
	tx.AfterCommit(func(context.Context) {
		h.postings.apply(c, from, to, fresh, []indexChange{ch})
		h.hybrid.apply(c, from, to, fresh, ch)
	})
}

// evict moves the oldest utterances out of the buffer until it fits
// buffer_size and max_tokens, and queues them for folding into the summary.
func (h *History) evict(tx *kit.Txn, call action.Call, conv *Conversation, evicted *[]int) error {
	var out []*Utterance
	reason := ""
	for conv.Size > conv.BufferSize || (conv.MaxTokens > 0 && conv.TotalTokens > conv.MaxTokens) {
		if reason == "" {
			reason = "buffer_size"
			if conv.Size <= conv.BufferSize {
				reason = "max_tokens"
			}
		}
		oldest, err := oldestBuffered(tx.Tx, conv)
		if err != nil {
			return err
		}
		if oldest == nil {
			return fmt.Errorf("history %s: the buffer claims %d utterances but has none", conv.Conversation, conv.Size)
		}
		now := call.Clock.Now()
		oldest.Evicted, oldest.EvictedAt = true, &now
		if err := tx.SetJSON(uttKey(conv.Conversation, oldest.UtteranceIndex), oldest); err != nil {
			return err
		}
		conv.Size--
		conv.TotalTokens -= oldest.TokenCount
		conv.EvictedCount++
		conv.FirstBuffered = oldest.UtteranceIndex + 1
		out = append(out, oldest)
		*evicted = append(*evicted, oldest.UtteranceIndex)
	}
	if len(out) == 0 {
		return nil
	}
	conv.LastEviction = &Eviction{Indexes: slices.Clone(*evicted), At: call.Clock.Now(), Reason: reason}
	EventEvicted.Publish(tx, audience(conv), EvictedEvent{Conversation: conv.Conversation, Indexes: *evicted, Reason: reason})
	if err := markFold(tx, call, conv, out, conv.LastEviction.At); err != nil {
		return err
	}
	// Queued right after the commit, while the conversation's lock is
	// still held: a move (which takes the lock, then settles) cannot slip
	// in between.
	c := conv.Conversation
	tx.AfterCommit(func(context.Context) { h.enqueueFolds(c) })
	_, err := tx.Trace(call, "history.evicted", fmt.Sprintf("history %s: evicted [%s] (%s), folded into the summary", c, joinInts(*evicted), reason),
		EvictedEvent{Conversation: c, Indexes: *evicted, Reason: reason})
	return err
}

func loadSummary(tx *storage.Tx, c string) (*summaryRecord, error) {
	var rec summaryRecord
	if err := tx.GetJSON(sumKey(c), &rec); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	return &rec, nil
}

// current is the summary text as it stands (the model's if it is current).
func (r *summaryRecord) current() string {
	if r.modelCurrent() {
		return r.ModelText
	}
	return r.Extractive.Render()
}

func (r *summaryRecord) modelCurrent() bool {
	return r.ModelText != "" && slices.Equal(r.ModelSpans, r.Extractive.Spans())
}

// header is the summary's description without its text: what it covers and
// when it changed, written by the extractive summarizer.
func (r *summaryRecord) header() Summary {
	s := Summary{Covers: []int{}, Writer: "extractive"}
	if r.Extractive.Covered() > MaxCoversListed {
		s.Covers, s.CoveredSpans = nil, r.Extractive.Spans()
	} else if covers := r.Extractive.Covers(); covers != nil {
		s.Covers = covers
	}
	if !r.UpdatedAt.IsZero() {
		at := r.UpdatedAt
		s.UpdatedAt = &at
	}
	return s
}

// read renders the summary within limit tokens (0: as stored).
func (r *summaryRecord) read(limit int) Summary {
	s := r.header()
	switch {
	case r.modelCurrent():
		s.Text, s.Writer = r.ModelText, "model"
		s.TokenCount = countTokens(s.Text)
		if limit > 0 && s.TokenCount > limit {
			s.Text = cutWords(s.Text, limit)
			s.TokenCount = countTokens(s.Text)
		}
	case limit > 0:
		// Compress a copy: the stored summary keeps its own limit.
		clone := text.Summary{Parts: slices.Clone(r.Extractive.Parts)}
		s.Text, s.TokenCount = clone.Compress(limit, countTokens)
	default:
		s.Text = r.Extractive.Render()
		s.TokenCount = countTokens(s.Text)
	}
	return s
}

// cutWords is the longest prefix of s, ending at a word, within limit tokens.
func cutWords(s string, limit int) string {
	cut, _ := llm.TruncateTokens(s, limit)
	if i := strings.LastIndexAny(cut, " \n"); i > 0 && len(cut) < len(s) {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut)
}

// summaryPrompt asks a model to fold new utterances into a summary.
const summaryPrompt = `You maintain the running summary of a conversation whose oldest utterances are being removed from view. Fold the new utterances into the summary so far. Keep every name, number, amount, date, time, decision and action item; drop pleasantries. Write plain sentences, no preamble. At most %d tokens.`

// modelSummary asks the model for the summary after a fold; the extractive
// summary stays in service if it fails.
func (h *History) modelSummary(ctx context.Context, call action.Call, c, previous string, lines []text.Line, spans []text.Span, limit int) {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\n")
	}
	b.WriteString("New utterances:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "[%d] %s: %s\n", l.Index, l.Speaker, l.Text)
	}
	req := llm.Prompt(fmt.Sprintf(summaryPrompt, limit), b.String())
	zero := 0.0
	req.Temperature = &zero
	resp, err := h.env.LLM.Complete(ctx, req)
	if err != nil {
		h.traceAside(ctx, call, "history.summary", fmt.Sprintf("history %s: the model could not write the summary (%v); the extractive summary stays", c, err), nil)
		return
	}
	summaryText := strings.TrimSpace(resp.Text)
	if countTokens(summaryText) > limit {
		summaryText = cutWords(summaryText, limit)
	}
	st, _, err := h.storeOf(c)
	if err != nil {
		return
	}
	err = h.env.UpdateOn(ctx, st, func(tx *kit.Txn) error {
		rec, err := loadSummary(tx.Tx, c)
		if err != nil {
			return err
		}
		if !slices.Equal(rec.Extractive.Spans(), spans) {
			return nil // more was evicted meanwhile; a later fold brings the model up to date
		}
		rec.ModelText, rec.ModelSpans = summaryText, spans
		if err := tx.SetJSON(sumKey(c), rec); err != nil {
			return err
		}
		EventSummary.Publish(tx, audienceIn(tx.Tx, c), SummaryEvent{Conversation: c, Covered: rec.Extractive.Covered(), TokenCount: countTokens(summaryText), Writer: "model"})
		return nil
	})
	if err != nil {
		h.env.Log.Warn("storing the model's summary failed", "conversation", c, "err", err)
	}
}

// embedLater marks u, in the write's transaction, as waiting for its
// vector, when a model is configured (search works without it): the
// engine's embedding queue stores it in the background, retries a failed
// call, and finds the marker again after a restart.
func (h *History) embedLater(tx *kit.Txn, u *Utterance) error {
	c, i := u.Conversation, u.UtteranceIndex
	return h.env.Embeddings().Mark(tx.Tx, embqKey(c, i), embed.Marker{Text: u.Text, Item: uttKey(c, i), Vector: vecKey(c, i)})
}

// embedSource is the history's texts with vectors, for the queue.
func (h *History) embedSource() embed.Source {
	return embed.Source{
		Name:    "history",
		Markers: storage.PrefixKey(storage.PrefixHistory, "embq"),
		Stores:  h.stores.open,
		Items: func(tx *storage.Tx, fn func(embed.Item) error) error {
			return tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, "utt")), func(_, v []byte) error {
				var u Utterance
				if err := json.Unmarshal(v, &u); err != nil {
					return err
				}
				c, i := u.Conversation, u.UtteranceIndex
				return fn(embed.Item{Key: uttKey(c, i), Vector: vecKey(c, i), Marker: embqKey(c, i), Text: u.Text})
			})
		},
	}
}

func (h *History) traceAside(ctx context.Context, call action.Call, kind, msg string, data any) {
	err := h.env.Update(ctx, func(tx *kit.Txn) error {
		_, err := tx.Trace(call, kind, msg, data)
		return err
	})
	if err != nil {
		h.env.Log.Warn("writing a trace entry failed", "kind", kind, "err", err)
	}
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// Read returns the buffer, oldest first, optionally of one speaker: call's
// principal needs read.
func (h *History) Read(call action.Call, c, speaker string) ([]*Utterance, error) {
	c, err := conversationName(c)
	if err != nil {
		return nil, err
	}
	if speaker != "" && !slices.Contains(Speakers, speaker) {
		return nil, kit.Validation("speaker", "unknown speaker %q; use user, assistant or system", speaker)
	}
	out := []*Utterance{}
	err = h.view(call, c, access.Read, func(tx *storage.Tx, conv *Conversation) error {
		if conv == nil {
			return nil
		}
		return buffered(tx, conv, func(u *Utterance) error {
			if speaker == "" || u.Speaker == speaker {
				out = append(out, u)
			}
			return nil
		})
	})
	return out, err
}

// Last returns the n most recent utterances of the buffer, oldest first.
func (h *History) Last(call action.Call, c string, n int) ([]*Utterance, error) {
	if n < 0 {
		return nil, kit.Validation("n", "must be 0 or more, got %d", n)
	}
	all, err := h.Read(call, c, "")
	if err != nil {
		return nil, err
	}
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all, nil
}

// Settle waits until every eviction so far is folded into the summary
// (and, with a model, its summary asked for) and the queue has embedded
// what it can now: reads of the summary settle
// by themselves; tests of what is stored call it.
func (h *History) Settle() {
	h.folder.Settle(context.Background())
	h.env.Embeddings().Settle(context.Background())
}

// ReadSummary returns the running summary within tokenLimit tokens (0: the
// conversation's summary_token_limit): call's principal needs read.
func (h *History) ReadSummary(call action.Call, c string, tokenLimit int) (Summary, error) {
	h.settleFolds(c)
	c, err := conversationName(c)
	if err != nil {
		return Summary{}, err
	}
	if tokenLimit < 0 {
		return Summary{}, kit.Validation("token_limit", "must be 1 or more")
	}
	s := Summary{Covers: []int{}, Writer: "extractive"}
	err = h.view(call, c, access.Read, func(tx *storage.Tx, conv *Conversation) error {
		if conv == nil {
			return nil
		}
		rec, err := loadSummary(tx, c)
		if err != nil {
			return err
		}
		limit := conv.SummaryTokenLimit
		if tokenLimit > 0 {
			limit = min(limit, tokenLimit)
		}
		s = rec.read(limit)
		return nil
	})
	return s, err
}

// Delete removes an utterance (from the buffer, or from the archive of
// evicted ones; a summary it was folded into keeps what it said).
func (h *History) Delete(ctx context.Context, call action.Call, c string, index int) (*Utterance, error) {
	c, err := conversationName(c)
	if err != nil {
		return nil, err
	}
	if index < 0 {
		return nil, kit.Validation("utterance_index", "must be 0 or more")
	}
	if backend, err := h.where(c); err != nil {
		return nil, err
	} else if backend == "" {
		return nil, errs.New(errs.NotFound, "no conversation %q", c).With("field", "conversation")
	}
	var out *Utterance
	var in *storage.Store
	err = h.update(ctx, call, c, access.Delete, func(tx *kit.Txn, conv *Conversation) error {
		in = tx.Store()
		u, err := readUtterance(tx.Tx, c, index)
		if errors.Is(err, storage.ErrNotFound) {
			return errs.New(errs.NotFound, "conversation %q has no utterance %d (its indexes run to %d)", c, index, conv.NextIndex-1).
				With("field", "utterance_index")
		} else if err != nil {
			return err
		}
		if err := tx.Delete(uttKey(c, index)); err != nil {
			return err
		}
		counts, dl, err := unindexUtterance(tx.Tx, u)
		if err != nil {
			return err
		}
		if err := h.env.Embeddings().Uncache(tx.Tx, u.Text); err != nil {
			return err
		}
		h.changedPostings(tx, conv, indexChange{index: index, counts: counts})
		conv.Docs--
		conv.DocLength -= dl
		if !u.Evicted {
			conv.Size--
			conv.TotalTokens -= u.TokenCount
		}
		out = u
		EventDeleted.Publish(tx, audience(conv), DeletedEvent{Conversation: c, UtteranceIndex: index, Evicted: u.Evicted})
		_, err = tx.Trace(call, "history.deleted", fmt.Sprintf("history %s: utterance %d deleted", c, index), nil)
		return err
	})
	if err != nil {
		return out, err
	}
	// The cache is in the store the vector was made in: a conversation
	// moved since left its texts' entries in the other store.
	for _, st := range h.stores.open() {
		if st != in {
			if err := st.Update(ctx, func(tx *storage.Tx) error { return h.env.Embeddings().Uncache(tx, out.Text) }); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Drop deletes conversation c and everything in it: its settings and
// grants, its utterances (buffer and archive), its summary, embeddings,
// pending folds and search postings, and the record of where it lives.
// It needs delete. It returns how many records went. Its name is free
// again afterwards.
func (h *History) Drop(ctx context.Context, call action.Call, c string) (int, error) {
	c, err := conversationName(c)
	if err != nil {
		return 0, err
	}
	defer h.lock(c)()
	// No fold may write to the conversation after its keys are read: with
	// the lock held no write queues another, so once settled none runs.
	h.folder.Settle(ctx)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	backend, err := h.where(c)
	if err != nil {
		return 0, err
	}
	if backend == "" {
		return 0, errs.New(errs.NotFound, "no conversation %q", c).With("field", "conversation")
	}
	st, err := h.stores.get(backend)
	if err != nil {
		return 0, err
	}
	var keys [][]byte
	var readers events.Audience
	err = st.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil {
			return err
		}
		if err := h.authorize(call, conv, access.Delete); err != nil {
			return err
		}
		readers = audience(conv)
		return scanConversation(tx, c, false, func(k, _ []byte) error {
			keys = append(keys, k)
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	// The texts' cached vectors go too (package embed keys them by the
	// text's hash; no conversation of that name holds them any more).
	texts, err := conversationTexts(st, c)
	if err != nil {
		return 0, err
	}
	// Whatever becomes of the drop, the postings in memory go: a new
	// conversation of the same name counts its index versions afresh.
	defer h.postings.forget(c)
	defer h.hybrid.forget(c)
	finish := func(tx *kit.Txn) error {
		if err := tx.Delete(whereKey(c)); err != nil {
			return err
		}
		EventDropped.Publish(tx, readers, DroppedEvent{Conversation: c, Keys: len(keys)})
		_, err := tx.Trace(call, "history.dropped", fmt.Sprintf("history %s: dropped (%d records)", c, len(keys)), nil)
		return err
	}
	if st == h.env.Store && len(keys) <= moveChunk {
		// One transaction: a kill leaves all of it or none.
		// The keys are listed again inside the transaction: the embedding
		// worker (which takes no conversation lock) may have stored a
		// vector since the View, and reading what is deleted makes its
		// commit and this one conflict, so the loser retries and sees the
		// other's result.
		err := h.env.Update(ctx, func(tx *kit.Txn) error {
			keys = keys[:0]
			err := scanConversation(tx.Tx, c, false, func(k, _ []byte) error {
				keys = append(keys, slices.Clone(k))
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			if err := h.env.Embeddings().Uncache(tx.Tx, texts...); err != nil {
				return err
			}
			if err := embed.Forget(tx.Tx, vecPrefix(c)); err != nil {
				return err
			}
			return finish(tx)
		})
		return len(keys), err
	}
	// Too big for one transaction, or in the other store: the records
	// first, in chunks, then where it lives. A kill in between leaves an
	// empty conversation of that name, which drops again.
	if err := clearConversation(ctx, st, c); err != nil {
		return 0, err
	}
	// The cache is in the store the vectors were made in: this one, or
	// the engine's before a move.
	for _, cache := range []*storage.Store{st, h.env.Store} {
		for start := 0; start < len(texts); start += moveChunk {
			chunk := texts[start:min(start+moveChunk, len(texts))]
			if err := cache.Update(ctx, func(tx *storage.Tx) error { return h.env.Embeddings().Uncache(tx, chunk...) }); err != nil {
				return 0, err
			}
		}
		if st == h.env.Store {
			break
		}
	}
	return len(keys), h.env.Update(ctx, finish)
}

// conversationTexts are the texts of c's utterances in st.
func conversationTexts(st *storage.Store, c string) ([]string, error) {
	var texts []string
	err := st.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(uttPrefix(c)), func(_, v []byte) error {
			var u Utterance
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			texts = append(texts, u.Text)
			return nil
		})
	})
	return texts, err
}

// Stats sums a conversation up.
type Stats struct {
	Conversation      string    `json:"conversation"`
	Exists            bool      `json:"exists"`
	Backend           string    `json:"backend"`
	Size              int       `json:"size"`
	BufferSize        int       `json:"buffer_size"`
	TotalTokens       int       `json:"total_tokens"`
	MaxTokens         int       `json:"max_tokens"`
	EvictedCount      int       `json:"evicted_count"`
	Archived          int       `json:"archived"`
	NextIndex         int       `json:"next_index"`
	SummaryTokenLimit int       `json:"summary_token_limit"`
	Summary           Summary   `json:"summary"`
	LastEviction      *Eviction `json:"last_eviction,omitempty"`
}

// StatsOf returns a conversation's figures (an unknown one: empty, with
// the settings it would get): call's principal needs read.
func (h *History) StatsOf(call action.Call, c string) (Stats, error) {
	return h.stats(call, c, access.Read)
}

// stats is StatsOf, checking op ("": no check, for the engine's counts).
func (h *History) stats(call action.Call, c, op string) (Stats, error) {
	h.settleFolds(c)
	c, err := conversationName(c)
	if err != nil {
		return Stats{}, err
	}
	_, backend, err := h.storeOf(c)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Conversation: c, Backend: backend, BufferSize: DefaultBufferSize, SummaryTokenLimit: DefaultSummaryTokenLimit,
		Summary: Summary{Covers: []int{}, Writer: "extractive"}}
	err = h.view(call, c, op, func(tx *storage.Tx, conv *Conversation) error {
		if conv == nil {
			return nil
		}
		rec, err := loadSummary(tx, c)
		if err != nil {
			return err
		}
		st = Stats{Conversation: c, Exists: true, Backend: conv.Backend, Size: conv.Size, BufferSize: conv.BufferSize,
			TotalTokens: conv.TotalTokens, MaxTokens: conv.MaxTokens, EvictedCount: conv.EvictedCount,
			Archived: conv.Docs - conv.Size, NextIndex: conv.NextIndex, SummaryTokenLimit: conv.SummaryTokenLimit,
			Summary: rec.read(0), LastEviction: conv.LastEviction}
		return nil
	})
	return st, err
}

// ConfigureRequest changes a conversation's settings.
type ConfigureRequest struct {
	Conversation      string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	BufferSize        *int   `json:"buffer_size,omitempty" help:"utterances the buffer keeps (default 50)"`
	MaxTokens         *int   `json:"max_tokens,omitempty" help:"token budget of the buffer (0: none)"`
	SummaryTokenLimit *int   `json:"summary_token_limit,omitempty" help:"the running summary's token limit (default 200)"`
	Backend           string `json:"backend,omitempty" help:"in-memory or durable: moves the conversation if it lives in the other"`
}

// Configure applies settings; a smaller buffer or budget evicts at once.
func (h *History) Configure(ctx context.Context, call action.Call, req ConfigureRequest) (Stats, error) {
	c, err := conversationName(req.Conversation)
	if err != nil {
		return Stats{}, err
	}
	switch {
	case req.BufferSize != nil && *req.BufferSize < 1:
		return Stats{}, kit.Validation("buffer_size", "must be 1 or more, got %d", *req.BufferSize)
	case req.MaxTokens != nil && *req.MaxTokens < 0:
		return Stats{}, kit.Validation("max_tokens", "must be 0 (no budget) or more, got %d", *req.MaxTokens)
	case req.SummaryTokenLimit != nil && *req.SummaryTokenLimit < 1:
		return Stats{}, kit.Validation("summary_token_limit", "must be 1 or more, got %d", *req.SummaryTokenLimit)
	}
	if req.Backend != "" {
		if _, err := h.stores.get(req.Backend); err != nil {
			return Stats{}, err
		}
		// Refuse a budget the buffer does not fit before moving anything:
		// a failed configure changes nothing (the update below checks again).
		if req.MaxTokens != nil && *req.MaxTokens > 0 {
			err := h.view(call, c, access.Write, func(tx *storage.Tx, conv *Conversation) error {
				if conv == nil {
					return nil
				}
				return checkBudget(tx, conv, *req.MaxTokens)
			})
			if err != nil {
				return Stats{}, err
			}
		}
		if err := h.Move(ctx, call, c, req.Backend); err != nil {
			return Stats{}, err
		}
	}
	err = h.update(ctx, call, c, access.Write, func(tx *kit.Txn, conv *Conversation) error {
		if req.BufferSize != nil {
			conv.BufferSize = *req.BufferSize
		}
		if req.MaxTokens != nil {
			if *req.MaxTokens > 0 {
				if err := checkBudget(tx.Tx, conv, *req.MaxTokens); err != nil {
					return err
				}
			}
			conv.MaxTokens = *req.MaxTokens
		}
		if req.SummaryTokenLimit != nil {
			conv.SummaryTokenLimit = *req.SummaryTokenLimit
		}
		var evicted []int
		if err := h.evict(tx, call, conv, &evicted); err != nil {
			return err
		}
		EventConfigured.Publish(tx, audience(conv), ConfiguredEvent{Conversation: c, BufferSize: conv.BufferSize, MaxTokens: conv.MaxTokens,
			SummaryTokenLimit: conv.SummaryTokenLimit, Backend: conv.Backend})
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	return h.StatsOf(call, c)
}

// checkBudget refuses a max_tokens smaller than an utterance in the buffer.
func checkBudget(tx *storage.Tx, conv *Conversation, maxTokens int) error {
	big := 0
	if err := buffered(tx, conv, func(u *Utterance) error { big = max(big, u.TokenCount); return nil }); err != nil {
		return err
	}
	if big > maxTokens {
		return errs.New(errs.Budget, "max_tokens=%d is smaller than an utterance in the buffer (%d tokens); utterances are never truncated", maxTokens, big).
			With("field", "max_tokens")
	}
	return nil
}

// Move moves a conversation, everything in it, to another backend. Writes
// to the conversation wait until it has moved.
func (h *History) Move(ctx context.Context, call action.Call, c, backend string) error {
	target, err := h.stores.get(backend)
	if err != nil {
		return err
	}
	defer h.lock(c)()
	// No fold may write to the old store after the copy: with the lock held
	// no write queues another, so once settled none runs.
	h.folder.Settle(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	source, current, err := h.storeOf(c)
	if err != nil {
		return err
	}
	var readers events.Audience
	err = source.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil {
			return err
		}
		// A conversation with nothing stored yet is its mover's to be.
		readers = events.Only(call.Principal).And(audience(conv))
		// Moving to memory loses the conversation at the next restart:
		// a move needs the right to delete it, not only to write.
		return h.authorize(call, conv, access.Delete)
	})
	if err != nil {
		return err
	}
	if current == backend || source == target {
		return h.env.Update(ctx, func(tx *kit.Txn) error { return tx.Set(whereKey(c), []byte(backend)) })
	}
	// Copy in chunks (a conversation may not fit one transaction), then
	// switch the pointer, then clear the source: a crash in between leaves
	// a complete copy where the pointer says.
	if err := clearConversation(ctx, target, c); err != nil {
		return err
	}
	var pairs [][2][]byte
	err = source.View(func(tx *storage.Tx) error {
		return scanConversation(tx, c, true, func(k, v []byte) error {
			pairs = append(pairs, [2][]byte{k, v})
			return nil
		})
	})
	if err != nil {
		return err
	}
	for start := 0; start < len(pairs); start += moveChunk {
		chunk := pairs[start:min(start+moveChunk, len(pairs))]
		err := target.Update(ctx, func(tx *storage.Tx) error {
			// The vectors in memory are read afresh (package embed).
			if err := embed.Touch(tx, vecPrefix(c)); err != nil {
				return err
			}
			for _, kv := range chunk {
				k, v := kv[0], kv[1]
				if string(k) == string(convKey(c)) {
					var conv Conversation
					if err := json.Unmarshal(v, &conv); err != nil {
						return err
					}
					conv.Backend = backend
					if v, err = json.Marshal(conv); err != nil {
						return err
					}
				}
				if err := tx.Set(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	err = h.env.Update(ctx, func(tx *kit.Txn) error {
		if err := tx.Set(whereKey(c), []byte(backend)); err != nil {
			return err
		}
		// Published once the pointer commits: the conversation reads from
		// its new backend from then on.
		EventMoved.Publish(tx, readers, MovedEvent{Conversation: c, From: current, To: backend})
		_, err := tx.Trace(call, "history.backend", fmt.Sprintf("history %s: moved from %s to %s (%d keys)", c, current, backend, len(pairs)), nil)
		return err
	})
	if err != nil {
		return err
	}
	if err := clearConversation(ctx, source, c); err != nil {
		return err
	}
	h.enqueueFolds(c) // folds that failed before came along as keys: run them here
	// Texts waiting for a vector came along as markers: the queue knew
	// them in the old store only.
	if err := h.env.Embeddings().Recover(target, embqPrefix(c)); err != nil {
		return err
	}
	// The copy holds the same postings at the same index version, but the
	// next search reads them afresh from where they now live.
	h.postings.forget(c)
	h.hybrid.forget(c)
	return nil
}

const moveChunk = 2000

func clearConversation(ctx context.Context, st *storage.Store, c string) error {
	for {
		var keys [][]byte
		err := st.View(func(tx *storage.Tx) error {
			return scanConversation(tx, c, false, func(k, _ []byte) error {
				keys = append(keys, k)
				if len(keys) >= moveChunk {
					return storage.ErrStop
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			// No vector is left under its prefix: its stamp goes too.
			return st.Update(ctx, func(tx *storage.Tx) error { return embed.Forget(tx, vecPrefix(c)) })
		}
		if err := st.Update(ctx, func(tx *storage.Tx) error {
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return embed.Touch(tx, vecPrefix(c))
		}); err != nil {
			return err
		}
	}
}
