package episodic

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// JudgingEvent is the payload of EventJudging.
type JudgingEvent struct {
	// Candidates are the ids of the threads the model is judging.
	Candidates []string `json:"candidates"`
	// Message is the new thread's first message.
	Message string `json:"message"`
}

// JudgedEvent is the payload of EventJudged.
type JudgedEvent struct {
	// Candidates is how many threads the model judged.
	Candidates int `json:"candidates"`
}

// CompactFailedEvent is the payload of EventCompactFailed.
type CompactFailedEvent struct {
	// EpisodeID is the episode whose compaction failed.
	EpisodeID string `json:"episode_id"`
	// Error says why.
	Error string `json:"error"`
}

// Events the episodic layer publishes (after each commit, except the
// judging pair, which brackets the model's judgement).
var (
	EventConfigured      = events.Define[Thread]("thread.configured", "after thread.configure changes a thread's settings")
	EventThreadCreated   = events.Define[Thread]("thread.created", "after a message starts a new thread")
	EventTurnAdded       = events.Define[MessageResult]("thread.turn", "after a message is added to a thread")
	EventJudging         = events.Define[JudgingEvent]("link.judging", "when the model starts judging a new thread's links to earlier threads")
	EventJudged          = events.Define[JudgedEvent]("link.judged", "when the model's judging is over (decided or not)")
	EventLinkDecided     = events.Define[Decision]("link.decided", "after a linking decision for a new thread and one candidate is recorded")
	EventCompacted       = events.Define[Episode]("episode.compacted", "after a closed episode is compacted into summaries and skills")
	EventOutcome         = events.Define[Decision]("episode.outcome", "after episode.outcome marks a linking decision right or wrong")
	EventOutcomeInferred = events.Define[Decision]("episode.outcome_inferred", "after a user's next message lets engram infer a linking decision's outcome (the decision, with its inferred outcomes)")
	EventTuned           = events.Define[TuningRecord]("episode.tuned", "after episode.tune records a tuning (whether or not it moved the threshold)")
	EventCompactFailed   = events.Define[CompactFailedEvent]("episode.compact_failed", "when a background compaction fails (it is retried on the next start)")
)

// Options configure the episodic layer.
type Options struct {
	// JudgeTimeout bounds the model's linking judgement (default 20 s):
	// past it the algorithmic decision stands.
	JudgeTimeout time.Duration
	// MaxCandidates: how many of the most recently active threads a new
	// thread is scored against (default 50).
	MaxCandidates int
	// MaxSearched: how many threads older than the MaxCandidates most
	// recent a search of the new message adds to the candidates, best
	// first, among those sharing a word of it (older.go). Zero is
	// DefaultMaxSearched when MaxCandidates is left to its default, and
	// none when MaxCandidates is given: a caller that narrows the
	// candidates (to the previous thread, say) means those alone.
	// Negative: none.
	MaxSearched int
	// MaxJudged: how many of those the model judges, most recent first
	// (default 3): each is one model call, made in parallel.
	MaxJudged int
	// compactHook, when set (tests), runs at each stage of a compaction; an
	// error it returns fails the compaction there.
	compactHook func(stage string) error
	// scorer, when set (tests), replaces Score.
	scorer func(message string, cand CandidateText, now time.Time) (float64, Signals)
}

// Episodic is the episodic memory layer.
type Episodic struct {
	env  *kit.Env
	opts Options
	// mu serializes messages: deciding which thread a message belongs to
	// reads every recent thread, and two messages deciding at once could
	// both start a thread.
	mu        sync.Mutex
	compactor *kit.Worker
	// older is the search index of the threads older than the
	// MaxCandidates most recent (older.go).
	older *olderIndex
}

// Register adds the thread.* and episode.* actions, the episodic context
// provider and counter to env, and starts the background compactor (which
// first picks up compactions a crash interrupted).
func Register(env *kit.Env, opts Options) (*Episodic, error) {
	if opts.JudgeTimeout <= 0 {
		opts.JudgeTimeout = 20 * time.Second
	}
	if opts.MaxCandidates <= 0 {
		opts.MaxCandidates = 50
		if opts.MaxSearched == 0 {
			opts.MaxSearched = DefaultMaxSearched
		}
	}
	if opts.MaxJudged <= 0 {
		opts.MaxJudged = 3
	}
	e := &Episodic{env: env, opts: opts, older: newOlderIndex()}
	e.compactor = newCompactor(e)
	env.OnClose(func() error { e.compactor.Stop(); return nil })
	env.AddWorker(e.compactor)
	if err := e.resumeCompactions(); err != nil {
		return nil, fmt.Errorf("resuming interrupted compactions: %w", err)
	}
	e.register()
	e.registerAccess()
	env.AddProvider(&provider{e: e})
	env.AddCounter("episodic", e.counts)
	env.AddHolder(func() (bool, error) { return kit.Holds(env.Store, threadPrefix()) })
	env.AddChecker("episodic", e.checkStored)
	return e, nil
}

// MessageRequest is a message to route into a thread.
type MessageRequest struct {
	Channel  string `json:"channel" arg:"required" help:"web or app (explicit: the thread you select), or sms, whatsapp, voice (implicit: engram infers the thread)"`
	ThreadID string `json:"thread_id,omitempty" help:"the thread the user selected; without it, an explicit channel starts a new thread (with conversation: continues the conversation's thread there) and an implicit one continues the most recent thread unless it has been inactive too long"`
	Text     string `json:"text" arg:"required" help:"what was said"`
	Speaker  string `json:"speaker,omitempty" help:"user (default) or assistant; an assistant's message never starts a thread"`
	Title    string `json:"title,omitempty" help:"a new thread's title (default: from its first message with content; a greeting alone leaves it Untitled until one comes)"`
	// Conversation makes the web or app thread a conversation's own, so
	// that it is continued across restarts (issue 14, bug 6).
	Conversation string `json:"conversation,omitempty" help:"the conversation the message belongs to (chat.send gives it): on web or app without thread_id, the message continues the thread the conversation's latest message on that channel went to, and starts one if there is none"`
	NewThread    bool   `json:"new_thread,omitempty" help:"with conversation, on web or app: start a new thread even though the conversation has one there (the messages after it continue the new one)"`
}

// MessageResult is where a message went.
type MessageResult struct {
	ThreadID       string    `json:"thread_id"`
	NewThread      bool      `json:"new_thread"`
	TurnCount      int       `json:"turn_count"`
	LastActivityAt time.Time `json:"last_activity_at"`
	Turn           *Turn     `json:"turn"`
	// EndedThread is the thread this one took over from (implicit channels).
	EndedThread string `json:"ended_thread,omitempty"`
	// Decision is the strongest linking decision of a new thread; Decisions
	// all of them, strongest first.
	Decision      *Decision   `json:"decision,omitempty"`
	Decisions     []*Decision `json:"decisions,omitempty"`
	LinkedThreads []string    `json:"linked_threads,omitempty"`
	// Compacting lists the episodes queued for compaction by this message.
	Compacting []string `json:"compacting,omitempty"`
}

// Speakers a message may have.
var Speakers = []string{"user", "assistant"}

func (r *MessageRequest) validate() error {
	if !slices.Contains(ExplicitChannels, r.Channel) && !slices.Contains(ImplicitChannels, r.Channel) {
		return kit.Validation("channel", "unknown channel %q; use web or app (explicit), or sms, whatsapp or voice (implicit)", r.Channel)
	}
	if strings.TrimSpace(r.Text) == "" {
		return kit.Validation("text", "a message needs text")
	}
	if r.Speaker == "" {
		r.Speaker = "user"
	}
	if !slices.Contains(Speakers, r.Speaker) {
		return kit.Validation("speaker", "unknown speaker %q; use user or assistant", r.Speaker)
	}
	if err := kit.CheckName("thread_id", r.ThreadID, ""); err != nil {
		return err
	}
	if err := kit.CheckName("conversation", r.Conversation, "/"); err != nil {
		return err
	}
	if r.NewThread && (r.ThreadID != "" || !IsExplicit(r.Channel) || r.Speaker != "user") {
		return kit.Validation("new_thread", "only a user's message on web or app without thread_id starts a new thread on request")
	}
	if utf8.RuneCountInString(r.Title) > 200 || strings.IndexFunc(r.Title, unicode.IsControl) >= 0 || !utf8.ValidString(r.Title) {
		return kit.Validation("title", "a title is one line of at most 200 characters, without control characters")
	}
	return nil
}

// route is where a message goes, decided before anything is written.
type route struct {
	thread *Thread   // nil: a new thread
	ended  []*Thread // active threads this message ends (implicit channels keep one going)
	cands  []*Thread
	// previous is the thread the conversation was last on, on this kind of
	// channel: what a follow-up's "Oh, and…" refers to.
	previous string
}

// newIDs are the ids a message may need, drawn before its transaction so
// that a retried transaction (on a conflict with the compactor) reuses them
// and later ids come out the same on every run.
type newIDs struct {
	thread, episode, cross string
	decisions              []string
}

// Message routes a message into a thread: the selected one, the one it
// continues, or a new one linked to the earlier threads it continues.
//
// A new thread's linking may wait on a model for seconds, so it is done
// before taking the lock that serializes messages; under the lock the
// route is decided again, and only if it changed meanwhile (another
// message started a thread, or added to a candidate) is the linking done
// again, there.
func (e *Episodic) Message(ctx context.Context, call action.Call, req MessageRequest) (MessageResult, error) {
	if err := req.validate(); err != nil {
		return MessageResult{}, err
	}
	now := e.env.Clock.Now()
	first, err := e.plan(ctx, call.Principal, req, now, nil)
	if err != nil {
		return MessageResult{}, e.failed(ctx, call, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.plan(ctx, call.Principal, req, now, &first)
	if err != nil {
		return MessageResult{}, e.failed(ctx, call, err)
	}
	r, decisions := p.route, p.decisions
	ids := newIDs{episode: e.env.IDs.New()}
	if r.thread == nil {
		ids.thread = e.env.IDs.New()
	}
	for _, d := range decisions {
		ids.decisions = append(ids.decisions, e.env.IDs.New())
		if d.Decision == Link && ids.cross == "" {
			ids.cross = e.env.IDs.New()
		}
	}
	var res MessageResult
	err = e.env.Update(ctx, func(tx *kit.Txn) error {
		var err error
		res, err = e.commit(tx, call, req, r, decisions, ids, now)
		return err
	})
	if err != nil {
		return MessageResult{}, e.failed(ctx, call, err)
	}
	e.older.written(res.ThreadID, res.LastActivityAt, r.thread != nil)
	e.compactor.Enqueue(res.Compacting...)
	return res, nil
}

// planned is a message's route and, for a new thread, its decisions.
type planned struct {
	route     route
	decisions []*Decision
	// seen: each candidate's turn count when it was assessed.
	seen map[string]int
}

// plan routes req and, for a new thread, assesses its links — unless
// earlier (a plan made before the lock) chose the same route over the same
// candidates, whose decisions then stand.
func (e *Episodic) plan(ctx context.Context, principal string, req MessageRequest, now time.Time, earlier *planned) (planned, error) {
	var p planned
	var cands []candidate
	var tuning *Tuning
	gen := e.older.generation()
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		if p.route, err = e.route(tx, principal, req, now); err != nil {
			return err
		}
		if p.route.thread == nil {
			if cands, err = e.candidates(tx, p.route.cands); err != nil {
				return err
			}
			var found []candidate
			if found, err = e.searchOlder(tx, gen, principal, req.Text, p.route.cands, now); err != nil {
				return err
			}
			cands = append(cands, found...)
			tuning, err = loadTuning(tx)
		}
		return err
	})
	if err != nil || p.route.thread != nil || len(cands) == 0 {
		return p, err
	}
	p.seen = map[string]int{}
	for _, c := range cands {
		p.seen[c.thread.ID] = c.thread.TurnCount
	}
	if earlier != nil && earlier.route.thread == nil && earlier.route.previous == p.route.previous && maps.Equal(earlier.seen, p.seen) {
		p.decisions = earlier.decisions
		return p, nil
	}
	p.decisions = e.assess(ctx, principal, req.Text, cands, p.route.previous, now, tuning.Threshold, tuning.prompt())
	return p, nil
}

// route decides where principal's req goes, reading only. On an implicit
// channel one thread at a time is active: a user's message there ends
// every other active thread used on an implicit channel (the one that
// timed out, or the one a reopened thread takes over from). Only threads
// principal may read are candidates to link to, and only its own threads
// are continued or ended by an implicit channel.
func (e *Episodic) route(tx *storage.Tx, principal string, req MessageRequest, now time.Time) (route, error) {
	var r route
	var recent []*Thread
	var err error
	if req.ThreadID != "" {
		if r.thread, err = loadThread(tx, req.ThreadID); err != nil {
			return route{}, err
		}
		if err := e.authorize(tx, principal, req.ThreadID, access.Write); err != nil {
			return route{}, err
		}
	}
	// A message to a selected thread on the web reads nothing else.
	if req.ThreadID == "" || isImplicit(req.Channel) && req.Speaker == "user" {
		if recent, err = recentThreadsFor(tx, principal, e.opts.MaxCandidates); err != nil {
			return route{}, err
		}
	}
	// The threads an implicit channel continues or ends: principal's own.
	var own []*Thread
	for _, t := range recent {
		if ok, err := owns(tx, principal, t.ID); err != nil {
			return route{}, err
		} else if ok {
			own = append(own, t)
		}
	}
	if req.ThreadID == "" {
		// An implicit channel continues the latest thread used on an
		// implicit channel: a thread the user opened on the web, with
		// nothing to select it by, is not one a text message continues.
		var latest *Thread
		for _, t := range own {
			if slices.ContainsFunc(t.Channels, isImplicit) {
				latest = t
				break
			}
		}
		switch {
		case req.Speaker != "user" && IsExplicit(req.Channel):
			return route{}, kit.Validation("thread_id", "an answer on %s goes to the thread it answers: give its thread_id", req.Channel)
		case req.Speaker != "user":
			// An answer belongs to the thread of the question it answers.
			if latest == nil {
				return route{}, kit.Validation("speaker", "an assistant's message answers one in a thread, and there is no thread on an implicit channel yet; send the user's message first, or give thread_id")
			}
			return route{thread: latest}, nil
		case IsExplicit(req.Channel):
			if t, err := e.conversationThread(tx, principal, req); err != nil || t != nil {
				return route{thread: t}, err
			}
			r := route{cands: recent}
			if len(recent) > 0 {
				r.previous = recent[0].ID
			}
			return r, nil
		case latest != nil && now.Sub(latest.LastActivityAt) < latest.timeout():
			// Within the timeout: the same thread. A gap of the whole
			// timeout (30 min of inactivity, seed 2.1, 3.1, 4.3) starts a
			// new one.
			r.thread = latest
		default:
			r.cands = recent
			if latest != nil {
				r.previous = latest.ID
			}
		}
	}
	if isImplicit(req.Channel) && req.Speaker == "user" {
		for _, t := range own {
			if t.Status == StatusActive && slices.ContainsFunc(t.Channels, isImplicit) && (r.thread == nil || t.ID != r.thread.ID) {
				r.ended = append(r.ended, t)
			}
		}
	}
	return r, nil
}

// commit writes the message and everything it decided, in one transaction.
func (e *Episodic) commit(tx *kit.Txn, call action.Call, req MessageRequest, r route, decisions []*Decision, ids newIDs, now time.Time) (MessageResult, error) {
	var res MessageResult
	var t *Thread
	var was time.Time
	if r.thread != nil {
		// Re-read: the compactor may have changed it since.
		var err error
		if t, err = loadThread(tx.Tx, r.thread.ID); err != nil {
			return res, err
		}
		// Again: its access may have changed since the route was planned.
		if err := e.authorize(tx.Tx, call.Principal, t.ID, access.Write); err != nil {
			return res, err
		}
		was = t.LastActivityAt
		if t.Status != StatusActive {
			// A message to an ended thread (selected again on an explicit
			// channel) reopens it, in a new episode.
			t.Status, t.EndedAt = StatusActive, nil
			if err := openEpisode(tx, t, ids.episode, now); err != nil {
				return res, err
			}
		}
	}
	for _, old := range r.ended {
		ended, err := e.endThread(tx, old.ID, now)
		if err != nil {
			return res, err
		}
		if res.EndedThread == "" {
			res.EndedThread = old.ID
		}
		res.Compacting = append(res.Compacting, ended...)
	}
	if r.thread == nil {
		t = &Thread{ID: ids.thread, Title: req.Title, Status: StatusActive, CreatedAt: now, LastActivityAt: now,
			InactivityTimeoutMinutes: DefaultInactivityTimeout, Channels: []string{}, Episodes: []string{},
			LinkedThreads: []string{}, CrossThreadEpisodes: []string{}}
		t.titled = t.Title != ""
		if !t.titled {
			t.Title = titleFrom(req.Text)
		}
		if t.Title == "" {
			// A greeting says nothing to title a thread by: the first
			// message with content will.
			t.Title = Untitled
			if err := tx.Set(untitledKey(t.ID), nil); err != nil {
				return res, err
			}
		}
		owner := call.Principal
		if owner == "" {
			owner = access.LegacyOwner
		}
		if err := tx.SetJSON(aclKey(t.ID), access.New(owner)); err != nil {
			return res, err
		}
		if err := openEpisode(tx, t, ids.episode, now); err != nil {
			return res, err
		}
		res.NewThread = true
		if err := e.link(tx, call, t, decisions, ids, &res); err != nil {
			return res, err
		}
	}
	ep, err := loadEpisode(tx.Tx, t.currentEpisode())
	if err != nil {
		return res, err
	}
	if ep.TurnCount >= EpisodeMaxTurns {
		if err := closeEpisode(tx.Tx, ep, "size", now); err != nil {
			return res, err
		}
		res.Compacting = append(res.Compacting, ep.ID)
		if err := openEpisode(tx, t, ids.episode, now); err != nil {
			return res, err
		}
		if ep, err = loadEpisode(tx.Tx, t.currentEpisode()); err != nil {
			return res, err
		}
	}
	if r.thread != nil && req.Speaker == "user" && t.Title == Untitled {
		if err := retitle(tx.Tx, t, req.Text); err != nil {
			return res, err
		}
	}
	t.TurnCount++
	t.LastActivityAt = now
	if !slices.Contains(t.Channels, req.Channel) {
		t.Channels = append(t.Channels, req.Channel)
	}
	turn := &Turn{ThreadID: t.ID, Number: t.TurnCount, Speaker: req.Speaker, Text: req.Text, Channel: req.Channel, At: now, EpisodeID: ep.ID}
	if ep.TurnCount == 0 {
		ep.FirstTurn = turn.Number
	}
	ep.LastTurn, ep.TurnCount = turn.Number, ep.TurnCount+1
	if err := tx.SetJSON(turnKey(t.ID, turn.Number), turn); err != nil {
		return res, err
	}
	if err := tx.SetJSON(episodeKey(ep.ID), ep); err != nil {
		return res, err
	}
	if err := saveThread(tx.Tx, t, was); err != nil {
		return res, err
	}
	if req.Conversation != "" && IsExplicit(req.Channel) && req.Speaker == "user" {
		// The conversation's messages on this channel continue this thread
		// from now on, in this run and the next.
		if err := tx.SetJSON(conversationKey(req.Conversation, req.Channel, call.Principal), conversationThread{ThreadID: t.ID}); err != nil {
			return res, err
		}
	}
	if res.NewThread {
		// Published once the thread has its first turn: the payload is a
		// copy, and says what the thread is after this message.
		if err := publishThread(tx, EventThreadCreated, t); err != nil {
			return res, err
		}
	}
	res.ThreadID, res.TurnCount, res.LastActivityAt, res.Turn = t.ID, t.TurnCount, t.LastActivityAt, turn
	msg := fmt.Sprintf("%s message on %s → thread %s (turn %d)", req.Speaker, req.Channel, t.ID, t.TurnCount)
	if res.NewThread {
		msg = fmt.Sprintf("%s message on %s started thread %s", req.Speaker, req.Channel, t.ID)
	}
	if _, err := tx.TraceAbout(call, about(t.ID), "thread.message", msg, messageTrace{Channel: req.Channel, NewThread: res.NewThread, ThreadID: t.ID, Turn: t.TurnCount}); err != nil {
		return res, err
	}
	if err := e.inferOutcomes(tx, call, req, t, turn, &res); err != nil {
		return res, err
	}
	EventTurnAdded.Publish(tx, audience(tx.Tx, t.ID), res)
	return res, nil
}

// messageTrace is the data of a thread.message trace entry (fields in
// alphabetical order, as the map it replaced marshalled).
type messageTrace struct {
	Channel   string `json:"channel"`
	NewThread bool   `json:"new_thread"`
	ThreadID  string `json:"thread_id"`
	Turn      int    `json:"turn"`
}

// openEpisode starts t's next episode, with id.
func openEpisode(tx *kit.Txn, t *Thread, id string, now time.Time) error {
	ep := &Episode{ID: id, ThreadID: t.ID, Number: len(t.Episodes) + 1, Status: EpisodeOpen, StartedAt: now}
	t.Episodes = append(t.Episodes, ep.ID)
	return tx.SetJSON(episodeKey(ep.ID), ep)
}

// closeEpisode closes ep and queues it for compaction (durably: the queue
// entry is written with the close).
func closeEpisode(tx *storage.Tx, ep *Episode, reason string, now time.Time) error {
	ep.Status, ep.Reason, ep.ClosedAt = EpisodeClosed, reason, &now
	if err := tx.SetJSON(episodeKey(ep.ID), ep); err != nil {
		return err
	}
	return tx.Set(pendingKey(ep.ID), nil)
}

// endThread ends a thread a newer one took over from, closing its open
// episode; it returns the episodes to compact.
func (e *Episodic) endThread(tx *kit.Txn, id string, now time.Time) ([]string, error) {
	t, err := loadThread(tx.Tx, id)
	if err != nil || t.Status != StatusActive {
		return nil, err
	}
	t.Status, t.EndedAt = StatusEnded, &now
	var queued []string
	if cur := t.currentEpisode(); cur != "" {
		ep, err := loadEpisode(tx.Tx, cur)
		if err != nil {
			return nil, err
		}
		if ep.Status == EpisodeOpen {
			if ep.TurnCount == 0 {
				ep.Status = EpisodeCompacted // nothing to compact
				if err := tx.SetJSON(episodeKey(ep.ID), ep); err != nil {
					return nil, err
				}
			} else {
				if err := closeEpisode(tx.Tx, ep, "thread_end", now); err != nil {
					return nil, err
				}
				queued = append(queued, ep.ID)
			}
		}
	}
	if len(queued) == 0 {
		t.Status = StatusCompacted
	}
	return queued, tx.SetJSON(threadKey(t.ID), t)
}

// link records a new thread's decisions, and links it to every candidate
// decided LINK, creating or extending their cross-thread episode.
func (e *Episodic) link(tx *kit.Txn, call action.Call, t *Thread, decisions []*Decision, ids newIDs, res *MessageResult) error {
	var linked []*Thread
	for i, d := range decisions {
		d.ID, d.ThreadID = ids.decisions[i], t.ID
		if d.Decision == Link {
			c, err := loadThread(tx.Tx, d.Candidate)
			if err != nil {
				return err
			}
			linked = append(linked, c)
		}
	}
	if len(linked) > 0 {
		x, err := e.crossEpisode(tx, t, linked, decisions, ids.cross)
		if err != nil {
			return err
		}
		for _, d := range decisions {
			if d.Decision == Link {
				d.CrossThreadEpisode = x.ID
			}
		}
	}
	for _, d := range decisions {
		if err := tx.SetJSON(decisionKey(d.ID), d); err != nil {
			return err
		}
		EventLinkDecided.Publish(tx, decisionAudience(tx.Tx, d), *d)
		llmPart := "no model"
		if d.LLM != nil {
			llmPart = fmt.Sprintf("model %.2f", *d.LLM)
		}
		msg := fmt.Sprintf("%s thread %s with %s (algorithmic %.2f, %s; %s)", d.Decision, t.ID, d.Candidate, d.Algorithmic, llmPart, d.Confidence)
		if _, err := tx.TraceAbout(call, aboutDecision(d.ID), "episode.link", msg, d); err != nil {
			return err
		}
	}
	if len(linked) > 0 && weakTitle(t.Title) && !t.titled {
		// "It on Thursday" says little; the thread it continues says more.
		t.Title = strings.TrimSuffix(linked[0].Title, " (cont.)") + " (cont.)"
	}
	res.Decisions = decisions
	if len(decisions) > 0 {
		res.Decision = decisions[0]
	}
	res.LinkedThreads = t.LinkedThreads
	return nil
}

// MaxEpisodeThreads bounds the threads of one cross-thread episode. Alike
// threads (an agent asking the same kind of thing every day) link to each
// other, and links to older threads found by search join their episodes:
// unbounded, one episode came to hold nearly every thread, its record
// grew past the store's value limit, and every new thread's message
// failed. A link that would take an episode past the bound starts a new
// episode instead (the threads linked are in both).
const MaxEpisodeThreads = 200

// crossEpisode puts t and the threads it links to in one cross-thread
// episode: the earliest one any of them is in that has room for them
// (MaxEpisodeThreads), or a new one.
func (e *Episodic) crossEpisode(tx *kit.Txn, t *Thread, linked []*Thread, decisions []*Decision, newID string) (*CrossEpisode, error) {
	now := e.env.Clock.Now()
	var x *CrossEpisode
	loaded := map[string]bool{} // linked threads mostly share their episodes: read each once
	for _, c := range linked {
		for _, id := range c.CrossThreadEpisodes {
			if loaded[id] {
				continue
			}
			loaded[id] = true
			cand, err := loadCross(tx.Tx, id)
			if err != nil {
				return nil, err
			}
			if !roomFor(cand, t, linked) {
				continue
			}
			if x == nil || cand.CreatedAt.Before(x.CreatedAt) {
				x = cand
			}
		}
	}
	if x == nil {
		x = &CrossEpisode{ID: newID, LinkedThreads: []string{}, Decisions: []string{}, CreatedAt: now}
	}
	x.UpdatedAt = now
	members := append(slices.Clone(linked), t)
	// Earliest thread first, as the conversation went.
	sort.SliceStable(members, func(i, j int) bool { return members[i].CreatedAt.Before(members[j].CreatedAt) })
	for _, m := range members {
		if !slices.Contains(x.LinkedThreads, m.ID) {
			x.LinkedThreads = append(x.LinkedThreads, m.ID)
		}
	}
	for _, d := range decisions {
		if d.Decision == Link {
			x.Decisions = append(x.Decisions, d.ID)
		}
	}
	for _, c := range linked {
		fresh, err := loadThread(tx.Tx, c.ID) // the compactor may have moved it on
		if err != nil {
			return nil, err
		}
		fresh.LinkedThreads = appendNew(fresh.LinkedThreads, t.ID)
		fresh.CrossThreadEpisodes = appendNew(fresh.CrossThreadEpisodes, x.ID)
		if err := tx.SetJSON(threadKey(fresh.ID), fresh); err != nil {
			return nil, err
		}
		t.LinkedThreads = appendNew(t.LinkedThreads, c.ID)
	}
	t.CrossThreadEpisodes = appendNew(t.CrossThreadEpisodes, x.ID)
	return x, tx.SetJSON(crossKey(x.ID), x)
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// weakTitle: a title that leans on another thread for its subject.
func weakTitle(title string) bool {
	first, _, _ := strings.Cut(strings.ToLower(title), " ")
	return pronounReference.MatchString(first) || first == "untitled"
}

// questionOpening: the words a question opens with before its subject.
var questionOpening = regexp.MustCompile(`(?i)^(what's|what is|what are|what was|how's|how is|how are|tell me about|do you know|can you tell me|could you tell me|any news on)\s+(the\s+)?`)

// Untitled is the title of a thread whose messages have said nothing to
// title it by yet (greetings only).
const Untitled = "Untitled"

// helloOpening: a greeting a message opens with before what it says
// ("Hello there, book a table").
var helloOpening = regexp.MustCompile(`(?i)^(hi|hello|hey|hiya|good (morning|afternoon|evening))( there| again| all| team)?\b[\s,!.:;—-]*`)

// titleFrom makes a thread's title from a message: the subject of its
// first sentence that says something ("Hi! What's the weather in New
// York?" → "Weather in New York"), cut to a few words; "" when the
// message says nothing (a greeting, thanks).
func titleFrom(msg string) string {
	var line string
	for _, sentence := range text.Sentences(strings.Join(strings.Fields(msg), " ")) {
		if !saysNothing(sentence) {
			line = sentence
			break
		}
	}
	if line == "" {
		return ""
	}
	if rest := helloOpening.ReplaceAllString(line, ""); rest != "" {
		line = upperFirst(rest)
	}
	if i := strings.IndexAny(line, "?!."); i > 0 {
		line = line[:i]
	}
	line = question(line) // without a follow-up's opening ("Oh, and")
	if rest := questionOpening.ReplaceAllString(line, ""); rest != "" {
		line = upperFirst(rest)
	}
	words := strings.Fields(line)
	if len(words) > 8 {
		line = strings.Join(words[:8], " ") + "…"
	}
	if line == "" {
		return Untitled
	}
	return line
}

// saysNothing reports whether a sentence is a greeting and thanks only
// ("Good morning!", "Thanks.").
func saysNothing(sentence string) bool {
	return text.SaysNothing(helloOpening.ReplaceAllString(sentence, ""))
}

// retitle titles t, made Untitled by a greeting, from a later user message
// with content, unless a title was given.
func retitle(tx *storage.Tx, t *Thread, msg string) error {
	title := titleFrom(msg)
	if title == "" {
		return nil
	}
	if ok, err := tx.Has(untitledKey(t.ID)); err != nil || !ok {
		return err
	}
	t.Title = title
	return tx.Delete(untitledKey(t.ID))
}

// ThreadView is a thread with its turns and decisions, as thread.get shows it.
type ThreadView struct {
	*Thread
	Turns     []*Turn     `json:"turns"`
	Decisions []*Decision `json:"decisions"`
}

// Get returns a thread with its live turns (and archived ones if asked)
// and the linking decisions made about it.
func (e *Episodic) Get(ctx context.Context, principal, id string, archived bool) (ThreadView, error) {
	e.compactor.Settle(ctx)
	var v ThreadView
	err := e.env.Store.View(func(tx *storage.Tx) error {
		t, err := loadThread(tx, id)
		if err != nil {
			return err
		}
		if err := e.authorize(tx, principal, id, access.Read); err != nil {
			return err
		}
		if err := newLinkFilter(tx, principal).apply(t); err != nil {
			return err
		}
		v.Thread = t
		if v.Turns, err = turnsOf(tx, id, archived); err != nil {
			return err
		}
		v.Decisions, err = decisionsFor(tx, principal, func(d *Decision) bool { return d.ThreadID == id || d.Candidate == id })
		return err
	})
	return v, err
}

// Threads lists every thread principal may read, most recently active
// first.
func (e *Episodic) Threads(ctx context.Context, principal string) ([]*Thread, error) {
	e.compactor.Settle(ctx)
	var out []*Thread
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		if out, err = recentThreadsFor(tx, principal, 0); err != nil {
			return err
		}
		f := newLinkFilter(tx, principal)
		for _, t := range out {
			if err := f.apply(t); err != nil {
				return err
			}
		}
		return nil
	})
	if out == nil {
		out = []*Thread{}
	}
	return out, err
}

// roomFor says whether episode x can take t and the threads it links to
// within MaxEpisodeThreads.
func roomFor(x *CrossEpisode, t *Thread, linked []*Thread) bool {
	n := len(x.LinkedThreads)
	for _, m := range append(slices.Clone(linked), t) {
		if !slices.Contains(x.LinkedThreads, m.ID) {
			n++
		}
	}
	return n <= MaxEpisodeThreads
}

// linkFilter keeps of threads' links what principal may see (issue 14,
// bug 8): a thread another agent linked to a shared one (its own,
// unshared) is not this agent's to see, not even by id, nor a cross-thread
// episode it is in (shown whole or not at all, as episode.list does). It
// remembers its answers, so that thread.list reads each ACL and
// cross-thread episode once.
type linkFilter struct {
	tx        *storage.Tx
	principal string
	readable  map[string]bool
	cross     map[string]bool
}

func newLinkFilter(tx *storage.Tx, principal string) *linkFilter {
	return &linkFilter{tx: tx, principal: principal, readable: map[string]bool{}, cross: map[string]bool{}}
}

func (f *linkFilter) canRead(id string) (bool, error) {
	ok, seen := f.readable[id]
	if !seen {
		var err error
		if ok, err = canRead(f.tx, f.principal, id); err != nil {
			return false, err
		}
		f.readable[id] = ok
	}
	return ok, nil
}

func (f *linkFilter) canSeeCross(id string) (bool, error) {
	ok, seen := f.cross[id]
	if seen {
		return ok, nil
	}
	x, err := loadCross(f.tx, id)
	if err != nil {
		return false, err
	}
	ok = true
	for _, tid := range x.LinkedThreads {
		if ok, err = f.canRead(tid); err != nil || !ok {
			break
		}
	}
	f.cross[id] = ok
	return ok, err
}

// apply removes from t the links principal may not see.
func (f *linkFilter) apply(t *Thread) error {
	keep := func(ids []string, visible func(string) (bool, error)) ([]string, error) {
		out := []string{}
		for _, id := range ids {
			if ok, err := visible(id); err != nil {
				return nil, err
			} else if ok {
				out = append(out, id)
			}
		}
		return out, nil
	}
	var err error
	if t.LinkedThreads, err = keep(t.LinkedThreads, f.canRead); err != nil {
		return err
	}
	t.CrossThreadEpisodes, err = keep(t.CrossThreadEpisodes, f.canSeeCross)
	return err
}

// Configure sets a thread's inactivity timeout.
func (e *Episodic) Configure(ctx context.Context, call action.Call, id string, minutes int) (*Thread, error) {
	if minutes < 1 || minutes > 60*24*365 {
		return nil, kit.Validation("inactivity_timeout_minutes", "must be from 1 to 525600 (a year), not %d", minutes)
	}
	var t *Thread
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		var err error
		if t, err = loadThread(tx.Tx, id); err != nil {
			return err
		}
		if err := e.authorize(tx.Tx, call.Principal, id, access.Write); err != nil {
			return err
		}
		old := t.InactivityTimeoutMinutes
		t.InactivityTimeoutMinutes = minutes
		if err := tx.SetJSON(threadKey(id), t); err != nil {
			return err
		}
		if err := publishThread(tx, EventConfigured, t); err != nil {
			return err
		}
		if _, err := tx.TraceAbout(call, about(id), "thread.configure", fmt.Sprintf("thread %s: inactivity timeout %d → %d min", id, old, minutes), nil); err != nil {
			return err
		}
		// The caller, too, sees only the links it may read (thread.get's
		// rule): a writer Alice shared one thread with does not learn of
		// her others.
		return newLinkFilter(tx.Tx, call.Principal).apply(t)
	})
	if err != nil {
		return nil, e.failed(ctx, call, err)
	}
	return t, nil
}

// publishThread publishes an event of kind about t to each of its readers
// with only the links that reader may read, as thread.get shows them: one
// event for each view of t, seen by the readers who share that view.
func publishThread(tx *kit.Txn, kind events.Kind[Thread], t *Thread) error {
	a, err := loadACL(tx.Tx, t.ID)
	if err != nil {
		return err
	}
	type view struct {
		thread  Thread
		readers []string
	}
	var views []*view
	for _, p := range a.Readers() {
		v := *t
		if err := newLinkFilter(tx.Tx, p).apply(&v); err != nil {
			return err
		}
		i := slices.IndexFunc(views, func(o *view) bool {
			return slices.Equal(o.thread.LinkedThreads, v.LinkedThreads) && slices.Equal(o.thread.CrossThreadEpisodes, v.CrossThreadEpisodes)
		})
		if i < 0 {
			views = append(views, &view{thread: v})
			i = len(views) - 1
		}
		views[i].readers = append(views[i].readers, p)
	}
	for _, v := range views {
		kind.Publish(tx, events.Only(v.readers...), v.thread)
	}
	return nil
}

func decodeDecision(v []byte) (*Decision, error) {
	var d Decision
	return &d, json.Unmarshal(v, &d)
}

// decisions returns the decisions keep accepts, oldest first.
func decisions(tx *storage.Tx, keep func(*Decision) bool) ([]*Decision, error) {
	out := []*Decision{}
	err := tx.Scan(storage.Prefix(decisionPrefix()), func(_, v []byte) error {
		d, err := decodeDecision(v)
		if err == nil && (keep == nil || keep(d)) {
			out = append(out, d)
		}
		return err
	})
	return out, err
}

// decisionsFor is decisions, of those principal may read.
func decisionsFor(tx *storage.Tx, principal string, keep func(*Decision) bool) ([]*Decision, error) {
	all, err := decisions(tx, keep)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, d := range all {
		if ok, err := decisionReadable(tx, principal, d); err != nil {
			return nil, err
		} else if ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// Decisions lists the linking decisions principal may read (both of
// their threads), oldest first.
func (e *Episodic) Decisions(principal, threadID string) ([]*Decision, error) {
	var out []*Decision
	err := e.env.Store.View(func(tx *storage.Tx) error {
		if threadID != "" {
			if _, err := loadThread(tx, threadID); err != nil {
				return err
			}
			if err := e.authorize(tx, principal, threadID, access.Read); err != nil {
				return err
			}
		}
		var err error
		out, err = decisionsFor(tx, principal, func(d *Decision) bool { return threadID == "" || d.ThreadID == threadID || d.Candidate == threadID })
		return err
	})
	return out, err
}

// TuningState returns the current threshold, prompt versions and tuning history.
func (e *Episodic) TuningState() (*Tuning, error) {
	var t *Tuning
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		t, err = loadTuning(tx)
		return err
	})
	return t, err
}

func (e *Episodic) counts() (map[string]int, error) {
	e.compactor.Settle(context.Background()) // so that pending counts are settled
	out := map[string]int{}
	err := e.env.Store.View(func(tx *storage.Tx) error {
		for name, prefix := range map[string][]byte{"threads": threadPrefix(), "cross_thread_episodes": crossPrefix(), "decisions": decisionPrefix(), "compactions_pending": pendingPrefix()} {
			n, err := tx.Count(prefix)
			if err != nil {
				return err
			}
			out[name] = n
		}
		return nil
	})
	return out, err
}

// errNoThread is the error for an empty thread id where one is needed.
func errNoThread() error {
	return errs.New(errs.Validation, "thread_id: name the thread (thread.list shows them)").With("field", "thread_id")
}
