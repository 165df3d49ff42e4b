package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// Register adds the history.* actions, the history context provider and
// counter to env.
func Register(env *kit.Env, opts Options) (*History, error) {
	h, err := New(env, opts)
	if err != nil {
		return nil, err
	}
	reg := env.Actions
	ActionConfigure.Register(reg, action.Spec{Summary: "Set a conversation's buffer size, token budget, summary limit or backend"}, h.actConfigure)
	ActionWrite.Register(reg, action.Spec{Summary: "Record an utterance (evicting the oldest into the summary when full)"}, h.actWrite)
	ActionRead.Register(reg, action.Spec{Summary: "The buffer, oldest first (optionally one speaker's)", ReadOnly: true}, h.actRead)
	ActionLast.Register(reg, action.Spec{Summary: "The n most recent utterances, oldest first", ReadOnly: true}, h.actLast)
	ActionSearch.Register(reg, action.Spec{Summary: "Utterances ranked by relevance, evicted ones included", ReadOnly: true}, h.actSearch)
	ActionSummary.Register(reg, action.Spec{Summary: "The running summary of what was evicted", ReadOnly: true}, h.actSummary)
	ActionDelete.Register(reg, action.Spec{Summary: "Remove an utterance"}, h.actDelete)
	ActionDrop.Register(reg, action.Spec{Summary: "Delete a conversation and everything in it"}, h.actDrop)
	ActionStats.Register(reg, action.Spec{Summary: "A conversation's size, tokens, evictions and summary", ReadOnly: true}, h.actStats)
	ActionBackend.Register(reg, action.Spec{Summary: "Move a conversation to the in-memory or the durable backend"}, h.actBackend)
	ActionList.Register(reg, action.Spec{Summary: "Every conversation the caller may read, with its backend", ReadOnly: true}, h.actList)
	ActionQuery.Register(reg, action.Spec{Summary: "The free-form entry point: \"Get all utterances\", \"Get summary\", \"last 5\", \"search X\", \"add\""}, h.actQuery)
	ActionShare.Register(reg, action.Spec{Summary: "Give another agent read, write, delete or share access to a conversation"}, h.actShare)
	ActionRevoke.Register(reg, action.Spec{Summary: "Take back an agent's access to a conversation"}, h.actRevoke)
	env.AddProvider(&provider{h: h})
	if env.Access != nil {
		env.Access.Register(ObjectType, h.canRead)
		env.Access.RegisterWrite(ObjectType, h.checkWrite)
	}
	env.AddCounter("history", h.counts)
	env.AddHolder(func() (bool, error) { return kit.Holds(env.Store, wherePrefix()) })
	env.AddChecker("history", h.checkStored)
	return h, nil
}

// StatsArgs is history.stats's arguments.
type StatsArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
}

func (h *History) actConfigure(ctx context.Context, call action.Call, a ConfigureRequest) (Stats, error) {
	s, err := h.Configure(ctx, call, a)
	return s, h.afterFailure(ctx, call, err)
}

func (h *History) actWrite(ctx context.Context, call action.Call, a WriteRequest) (WriteResult, error) {
	res, err := h.Write(ctx, call, a)
	return res, h.afterFailure(ctx, call, err)
}

// ReadArgs is history.read's arguments.
type ReadArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Speaker      string `json:"speaker,omitempty" help:"only this speaker's utterances"`
}

// Utterances is the result of history.read and history.last: utterances,
// oldest first (never null: an empty buffer is an empty list).
type Utterances struct {
	Utterances []*Utterance `json:"utterances"`
}

func (h *History) actRead(ctx context.Context, call action.Call, a ReadArgs) (Utterances, error) {
	u, err := h.Read(call, a.Conversation, a.Speaker)
	return Utterances{u}, h.afterFailure(ctx, call, err)
}

// LastArgs is history.last's arguments.
type LastArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	N            int    `json:"n" arg:"required" help:"how many"`
}

func (h *History) actLast(ctx context.Context, call action.Call, a LastArgs) (Utterances, error) {
	u, err := h.Last(call, a.Conversation, a.N)
	return Utterances{u}, h.afterFailure(ctx, call, err)
}

// SearchResult is history.search's result: the hits, most relevant first
// (null when the conversation does not exist or nothing matches).
type SearchResult struct {
	Results []Hit `json:"results"`
}

func (h *History) actSearch(ctx context.Context, call action.Call, a SearchRequest) (SearchResult, error) {
	hits, err := h.Search(ctx, call, a)
	return SearchResult{hits}, h.afterFailure(ctx, call, err)
}

// SummaryArgs is history.summary's arguments.
type SummaryArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	TokenLimit   *int   `json:"token_limit,omitempty" help:"at most this many tokens (default: the conversation's summary_token_limit)"`
}

// SummaryResult is history.summary's result.
type SummaryResult struct {
	Summary Summary `json:"summary"`
}

func (h *History) actSummary(ctx context.Context, call action.Call, a SummaryArgs) (SummaryResult, error) {
	limit := 0
	if a.TokenLimit != nil {
		if *a.TokenLimit < 1 {
			return SummaryResult{}, kit.Validation("token_limit", "must be 1 or more, got %d", *a.TokenLimit)
		}
		limit = *a.TokenLimit
	}
	s, err := h.ReadSummary(call, a.Conversation, limit)
	return SummaryResult{s}, h.afterFailure(ctx, call, err)
}

// DeleteArgs is history.delete's arguments.
type DeleteArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	// UtteranceIndex is a pointer so that a missing index is an error, not
	// utterance 0.
	UtteranceIndex *int `json:"utterance_index" arg:"required" help:"the utterance to remove"`
}

// DeleteResult is history.delete's result: the utterance removed.
type DeleteResult struct {
	Deleted *Utterance `json:"deleted"`
}

func (h *History) actDelete(ctx context.Context, call action.Call, a DeleteArgs) (DeleteResult, error) {
	u, err := h.Delete(ctx, call, a.Conversation, *a.UtteranceIndex)
	return DeleteResult{u}, h.afterFailure(ctx, call, err)
}

// DropArgs is history.drop's arguments.
type DropArgs struct {
	Conversation string `json:"conversation" arg:"required" help:"the conversation to delete, with everything in it"`
}

// DropResult is history.drop's result.
type DropResult struct {
	Conversation string `json:"conversation"`
	// Records is how many stored records went.
	Records int `json:"records"`
}

func (h *History) actDrop(ctx context.Context, call action.Call, a DropArgs) (DropResult, error) {
	n, err := h.Drop(ctx, call, a.Conversation)
	if err != nil {
		return DropResult{}, h.afterFailure(ctx, call, err)
	}
	return DropResult{Conversation: a.Conversation, Records: n}, nil
}

func (h *History) actStats(ctx context.Context, call action.Call, a StatsArgs) (Stats, error) {
	s, err := h.StatsOf(call, a.Conversation)
	return s, h.afterFailure(ctx, call, err)
}

// BackendArgs is history.backend's arguments.
type BackendArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Backend      string `json:"backend" arg:"required" help:"in-memory or durable"`
}

func (h *History) actBackend(ctx context.Context, call action.Call, a BackendArgs) (Stats, error) {
	c, err := conversationName(a.Conversation)
	if err != nil {
		return Stats{}, err
	}
	if err := h.Move(ctx, call, c, a.Backend); err != nil {
		return Stats{}, h.afterFailure(ctx, call, err)
	}
	return h.StatsOf(call, c)
}

// ListArgs is history.list's arguments: none.
type ListArgs struct{}

// ConversationInfo is one conversation in history.list.
type ConversationInfo struct {
	Conversation string `json:"conversation"`
	Backend      string `json:"backend"`
}

// ListResult is history.list's result: every conversation the caller may
// read, by name.
type ListResult struct {
	Conversations []ConversationInfo `json:"conversations"`
}

func (h *History) actList(ctx context.Context, call action.Call, _ ListArgs) (ListResult, error) {
	convs, err := h.conversations()
	if err != nil {
		return ListResult{}, err
	}
	out := []ConversationInfo{}
	for _, c := range slices.Sorted(maps.Keys(convs)) {
		err := h.view(call, c, access.Read, func(*storage.Tx, *Conversation) error { return nil })
		if _, denied := access.DenialOf(err); denied {
			continue
		} else if err != nil {
			return ListResult{}, err
		}
		out = append(out, ConversationInfo{Conversation: c, Backend: convs[c]})
	}
	return ListResult{out}, nil
}

// ShareArgs is history.share's arguments.
type ShareArgs struct {
	Conversation string   `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Principal    string   `json:"principal" arg:"required" help:"the agent to give access"`
	Permissions  []string `json:"permissions" arg:"required" help:"any of read, write, delete, share (replacing what the agent had)"`
}

// RevokeArgs is history.revoke's arguments.
type RevokeArgs struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Principal    string `json:"principal" arg:"required" help:"the agent whose access to take back"`
}

func (h *History) actShare(ctx context.Context, call action.Call, a ShareArgs) (access.ACL, error) {
	acl, err := h.changeACL(ctx, call, a.Conversation, "shared with "+a.Principal, func(acl *access.ACL, obj access.Object) error {
		return acl.Grant(call.Principal, a.Principal, a.Permissions, obj, h.env.Clock.Now())
	}, AccessEvent{Principal: a.Principal, Change: "shared"})
	return acl, h.afterFailure(ctx, call, err)
}

func (h *History) actRevoke(ctx context.Context, call action.Call, a RevokeArgs) (access.ACL, error) {
	acl, err := h.changeACL(ctx, call, a.Conversation, "access of "+a.Principal+" revoked", func(acl *access.ACL, obj access.Object) error {
		return acl.Revoke(call.Principal, a.Principal, obj, h.env.Clock.Now())
	}, AccessEvent{Principal: a.Principal, Change: "revoked"})
	return acl, h.afterFailure(ctx, call, err)
}

// changeACL changes an existing conversation's grants with fn (which
// checks who may), and returns its ACL; ev, completed with the
// conversation and the agent's permissions, is published after the commit.
func (h *History) changeACL(ctx context.Context, call action.Call, c, what string, fn func(acl *access.ACL, obj access.Object) error, ev AccessEvent) (access.ACL, error) {
	c, err := conversationName(c)
	if err != nil {
		return access.ACL{}, err
	}
	var out access.ACL
	err = h.update(ctx, call, c, "", func(tx *kit.Txn, conv *Conversation) error {
		if conv.fresh {
			return errs.New(errs.NotFound, "no conversation %q", c).With("field", "conversation")
		}
		before := audience(conv)
		acl := conv.acl().Clone()
		if err := fn(&acl, object(c)); err != nil {
			return err
		}
		conv.Grants = acl.Grants
		out = acl
		if out.Owner == "" {
			out.Owner = acl.OwnerOf()
		}
		ev.Conversation, ev.Permissions = c, []string{}
		for _, g := range acl.Grants {
			if g.PrincipalID == ev.Principal {
				ev.Permissions = append(ev.Permissions, g.Permissions...)
			}
		}
		// The principal whose access changed hears of it, whichever way.
		EventAccess.Publish(tx, before.And(events.Only(acl.Readers()...)).And(events.Only(ev.Principal)), ev)
		_, err := tx.Trace(call, "history.access", fmt.Sprintf("history %s: %s", c, what), out)
		return err
	})
	return out, err
}

// canRead is the conversation read check of env.Access: whether principal
// may read conversation id (one with nothing stored: no).
func (h *History) canRead(tx *storage.Tx, principal, id string) (bool, error) {
	var ok bool
	err := h.withConversation(tx, id, func(conv *Conversation) error {
		ok = conv != nil && conv.acl().Can(principal, access.Read)
		return nil
	})
	return ok, err
}

// checkWrite is the conversation write check of env.Access: nil when
// principal may write conversation id (one with nothing stored: anyone,
// who then owns it), else the PermissionError.
func (h *History) checkWrite(tx *storage.Tx, principal, id string, now time.Time) error {
	return h.withConversation(tx, id, func(conv *Conversation) error {
		if conv == nil {
			return nil
		}
		return access.Check(principal, conv.acl(), access.Write, object(id), now)
	})
}

// withConversation calls fn with conversation id's state (nil when it has
// none), read from the store it lives in (as storeOf finds it: without a
// where record, the default backend's); tx is the engine store's.
func (h *History) withConversation(tx *storage.Tx, id string, fn func(conv *Conversation) error) error {
	backend := h.defaultBackend
	b, err := tx.Get(whereKey(id))
	if err == nil {
		backend = string(b)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	st, err := h.stores.get(backend)
	if err != nil {
		return err
	}
	read := func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, id)
		if err != nil {
			return err
		}
		return fn(conv)
	}
	if st == h.env.Store {
		return read(tx)
	}
	return st.View(read)
}

// QueryArgs is history.query's arguments.
type QueryArgs struct {
	Query string         `json:"query" arg:"required" help:"the instruction, e.g. \"Get all utterances\", \"Get summary\", \"Get last 5 utterances\", \"Search for budget\", \"Add utterance\""`
	Data  map[string]any `json:"data,omitempty" help:"what the instruction needs: {speaker, text, turn_number, metadata} to add, {token_limit} for the summary, {conversation, speaker, limit, n}"`
}

// queryForms are the instructions history.query understands.
var queryForms = []string{
	`"Add utterance" with data {speaker, text, turn_number?, metadata?}`,
	`"Get all utterances" (data.speaker to filter)`,
	`"Get summary" (data.token_limit)`,
	`"Get last N utterances" / "last N"`,
	`"Search for WORDS" / "search WORDS" (data.speaker, data.limit)`,
	`"Get stats"`,
	`"Delete utterance N"`,
}

var (
	lastForm   = regexp.MustCompile(`^(?:get\s+)?(?:the\s+)?last\s+(\d+)(?:\s+utterances?)?$|^get_last_n$`)
	searchForm = regexp.MustCompile(`^(?:search|find)(?:\s+for)?\s+(.+)$`)
	deleteForm = regexp.MustCompile(`^delete(?:\s+utterance)?\s+(\d+)$`)
	// searchWords finds the words of a search form in the query as written.
	searchWords = regexp.MustCompile(`(?is)^\s*(?:search|find)(?:\s+for)?\s+(.+?)[\s.!?]*$`)
)

// QueryResult says what history.query understood, and the outcome: the
// result of the action it stands for (WriteResult, Utterances,
// SummaryResult, Stats, SearchResult or DeleteResult, as Understood names).
type QueryResult struct {
	Understood string `json:"understood"`
	Result     any    `json:"result"`
}

// actQuery is the seed's free-form entry point.
func (h *History) actQuery(ctx context.Context, call action.Call, a QueryArgs) (QueryResult, error) {
	q := strings.ToLower(strings.Join(strings.Fields(strings.TrimSpace(a.Query)), " "))
	q = strings.TrimRight(q, ".!?")
	conv, _ := a.Data["conversation"].(string)
	speaker, _ := a.Data["speaker"].(string)
	switch {
	case q == "add" || q == "add utterance" || q == "write" || q == "write utterance" || q == "record utterance" || strings.HasPrefix(q, "add utterance"):
		var req WriteRequest
		if err := decodeData(a.Data, &req); err != nil {
			return QueryResult{}, err
		}
		res, err := h.Write(ctx, call, req)
		return QueryResult{"history.write", res}, h.afterFailure(ctx, call, err)
	case q == "get all utterances" || q == "get utterances" || q == "read" || q == "all utterances" || q == "get all":
		u, err := h.Read(call, conv, speaker)
		return QueryResult{"history.read", Utterances{u}}, h.afterFailure(ctx, call, err)
	case q == "get summary" || q == "summary" || q == "get the summary":
		limit := 0
		if v, ok := a.Data["token_limit"]; ok {
			n, ok := v.(float64)
			if !ok || n < 1 || n != float64(int(n)) {
				return QueryResult{}, kit.Validation("data.token_limit", "must be a whole number, 1 or more")
			}
			limit = int(n)
		}
		s, err := h.ReadSummary(call, conv, limit)
		return QueryResult{"history.summary", SummaryResult{s}}, h.afterFailure(ctx, call, err)
	case q == "get stats" || q == "stats":
		s, err := h.StatsOf(call, conv)
		return QueryResult{"history.stats", s}, h.afterFailure(ctx, call, err)
	}
	if m := lastForm.FindStringSubmatch(q); m != nil {
		n, _ := strconv.Atoi(m[1])
		if m[1] == "" {
			v, _ := a.Data["n"].(float64)
			n = int(v)
		}
		u, err := h.Last(call, conv, n)
		return QueryResult{"history.last", Utterances{u}}, h.afterFailure(ctx, call, err)
	}
	if m := searchForm.FindStringSubmatch(q); m != nil {
		limit := 0
		if v, ok := a.Data["limit"].(float64); ok {
			limit = int(v)
		}
		// Search with the words as the caller wrote them (case and inner
		// spacing kept; the trailing punctuation q dropped, dropped too).
		words := m[1]
		if o := searchWords.FindStringSubmatch(a.Query); o != nil {
			words = o[1]
		}
		hits, err := h.Search(ctx, call, SearchRequest{Conversation: conv, Query: words, Speaker: speaker, Limit: limit})
		return QueryResult{"history.search", SearchResult{hits}}, h.afterFailure(ctx, call, err)
	}
	if m := deleteForm.FindStringSubmatch(q); m != nil {
		n, _ := strconv.Atoi(m[1])
		u, err := h.Delete(ctx, call, conv, n)
		return QueryResult{"history.delete", DeleteResult{u}}, h.afterFailure(ctx, call, err)
	}
	return QueryResult{}, errs.New(errs.UnsupportedInstruction, "history.query does not understand %q; it understands: %s", a.Query, strings.Join(queryForms, "; ")).
		With("understood", queryForms)
}

// decodeData reads an instruction's data strictly, like an action's args.
func decodeData(data map[string]any, v *WriteRequest) error {
	raw, _ := json.Marshal(data)
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields) // cannot fail: raw was just marshalled from a map
	known := []string{"conversation", "speaker", "text", "turn_number", "metadata"}
	for k := range fields {
		if !slices.Contains(known, k) {
			return kit.Validation("data."+k, "unknown field; adding an utterance takes %s", strings.Join(known, ", "))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return kit.Validation("data", "%v", err)
	}
	return nil
}

// counts reports conversations and utterances for engine.info.
func (h *History) counts() (map[string]int, error) {
	convs, err := h.conversations()
	if err != nil {
		return nil, err
	}
	out := map[string]int{"conversations": len(convs), "buffered": 0, "archived": 0}
	for c := range convs {
		s, err := h.stats(action.Call{}, c, "")
		if err != nil {
			return nil, err
		}
		out["buffered"] += s.Size
		out["archived"] += s.Archived
	}
	return out, nil
}

// ContextData is the history's section of a turn's working memory: the
// conversation's buffer and running summary, and the evicted utterances
// that best answer the turn's input (found by history.search, each with
// its why).
type ContextData struct {
	Conversation string       `json:"conversation"`
	Summary      Summary      `json:"summary"`
	Utterances   []*Utterance `json:"utterances"`
	Recalled     []Hit        `json:"recalled,omitempty"`
}

// ContextRecallLimit is how many evicted utterances a turn's context
// recalls for its input at most: the few that best answer it, beside the
// buffer and the summary (which say what is recent, not what is relevant).
const ContextRecallLimit = 3

// provider is the history's part in turns.
type provider struct{ h *History }

func (p *provider) Name() string { return "history" }

// Context adds the conversation's buffer and summary to a turn's working
// memory, if the turn's principal may read the conversation (else
// nothing: the turn sees no more than its principal could read).
func (p *provider) Context(ctx context.Context, start kit.TurnStart) (kit.Section, error) {
	c := start.Conversation
	call := action.Call{Principal: start.Principal, Turn: start.TurnID, Clock: p.h.env.Clock}
	utts, err := p.h.Read(call, c, "")
	if _, denied := access.DenialOf(err); denied {
		name, _ := conversationName(c)
		return kit.Section{
			Data:  ContextData{Conversation: name, Summary: Summary{Covers: []int{}, Writer: "extractive"}, Utterances: []*Utterance{}},
			Notes: []kit.Note{{Kind: "history.retrieved", Message: fmt.Sprintf("history %s: not readable by %s; nothing retrieved", name, start.Principal)}},
		}, nil
	} else if err != nil {
		return kit.Section{}, err
	}
	summary, err := p.h.ReadSummary(call, c, 0)
	if err != nil {
		return kit.Section{}, err
	}
	tokens := 0
	for _, u := range utts {
		tokens += u.TokenCount
	}
	msg := fmt.Sprintf("history %s: %d utterance(s), %d tokens", c, len(utts), tokens)
	if n := summary.CoveredCount(); n > 0 {
		msg += fmt.Sprintf(", and a summary of %d earlier ones (%d tokens)", n, summary.TokenCount)
	}
	stats, err := p.h.stats(call, c, "")
	if err != nil {
		return kit.Section{}, err
	}
	recalled, err := p.recall(ctx, call, c, start.Input, stats.Archived > 0, len(utts))
	if err != nil {
		return kit.Section{}, err
	}
	if len(recalled) > 0 {
		msg += fmt.Sprintf("; %d evicted utterance(s) recalled for the input", len(recalled))
	}
	return kit.Section{
		Data:  ContextData{Conversation: c, Summary: summary, Utterances: utts, Recalled: recalled},
		Notes: []kit.Note{{Kind: "history.retrieved", Message: msg}},
	}, nil
}

// recall finds the evicted utterances that best answer a turn's input
// (at most ContextRecallLimit), when the conversation has evicted some.
// An input of stop words only ("what is it?") recalls nothing: search
// would look for its words as written, reading every utterance, and they
// say nothing of what the turn is about. A long input is searched by its
// first words (queryWithin).
// The search asks for as many hits as the buffer holds and
// ContextRecallLimit more, so that buffered utterances ranking first
// cannot crowd out the evicted ones.
func (p *provider) recall(ctx context.Context, call action.Call, c, input string, evicted bool, buffered int) ([]Hit, error) {
	q := queryWithin(input)
	if !evicted || len(text.Terms(q)) == 0 {
		return nil, nil
	}
	hits, err := p.h.Search(ctx, call, SearchRequest{Conversation: c, Query: q, Limit: buffered + ContextRecallLimit})
	if errs.KindOf(err) == errs.Validation {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []Hit
	for _, h := range hits {
		if h.Evicted && len(out) < ContextRecallLimit {
			out = append(out, h)
		}
	}
	return out, nil
}

// queryWithin is the longest start of s (word by word) that history.search
// accepts as a query: at most MaxQueryBytes and MaxQueryTerms.
func queryWithin(s string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, w := range strings.Fields(s) {
		terms := 0
		for _, t := range text.Terms(w) {
			if !seen[t] {
				terms++
			}
		}
		if b.Len()+1+len(w) > MaxQueryBytes || len(seen)+terms > MaxQueryTerms {
			break
		}
		for _, t := range text.Terms(w) {
			seen[t] = true
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return strings.TrimSpace(b.String())
}

// Commit records the utterances a turn produced: updates.history is a list
// of {speaker, text, turn_number?, metadata?, conversation?}.
func (p *provider) Commit(ctx context.Context, tx *kit.Txn, end kit.TurnEnd) (any, error) {
	if len(end.Updates) == 0 {
		return nil, nil
	}
	var reqs []WriteRequest
	if err := json.Unmarshal(end.Updates, &reqs); err != nil {
		return nil, errs.New(errs.Validation, "updates.history must be a list of {speaker, text, turn_number?, metadata?, conversation?}").With("field", "updates.history")
	}
	call := action.Call{Principal: end.Principal, Turn: end.TurnID, Clock: p.h.env.Clock}
	var written []*Utterance
	for i, req := range reqs {
		if err := req.validate(); err != nil {
			return nil, fmt.Errorf("updates.history[%d]: %w", i, err)
		}
		if req.DryRun {
			// A turn commits what it is given: a check has no place in it.
			return nil, kit.Validation(fmt.Sprintf("updates.history[%d].dry_run", i), "a turn's updates are written; check a write with history.write's dry_run")
		}
		st, backend, err := p.h.storeOf(req.Conversation)
		if err != nil {
			return nil, err
		}
		if st != p.h.env.Store {
			// A conversation in another store cannot share the turn's
			// transaction: it is written on its own.
			res, err := p.h.Write(ctx, call, req)
			if err != nil {
				return nil, fmt.Errorf("updates.history[%d]: %w", i, err)
			}
			written = append(written, res.Utterance)
			continue
		}
		conv, err := loadConversation(tx.Tx, req.Conversation)
		if err != nil {
			return nil, err
		}
		if err := p.h.authorize(call, conv, access.Write); err != nil {
			return nil, fmt.Errorf("updates.history[%d]: %w", i, err)
		}
		if conv == nil {
			conv = newConversation(call, req.Conversation, backend, call.Clock.Now())
		}
		res, err := p.h.write(tx, call, conv, req)
		if err != nil {
			return nil, fmt.Errorf("updates.history[%d]: %w", i, err)
		}
		conv.UpdatedAt = call.Clock.Now()
		if err := tx.SetJSON(convKey(conv.Conversation), conv); err != nil {
			return nil, err
		}
		if err := tx.Set(whereKey(conv.Conversation), []byte(backend)); err != nil {
			return nil, err
		}
		written = append(written, res.Utterance)
	}
	return Utterances{written}, nil
}
