package episodic

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Compaction turns a closed episode into summaries at three tiers and the
// skills it taught, and archives its raw turns — all in one transaction, so
// a crash leaves the episode either untouched (and still queued: the queue
// entry is a key deleted by that same transaction) or fully compacted.
// Compacting an episode twice does nothing the second time.

// Token limits of the tiers.
const (
	microTurns  = 5   // turns per micro summary
	microTokens = 60  // per micro summary
	mesoTokens  = 200 // the episode
	macroTokens = 300 // across linked threads
)

var countTokens = text.Memo(llm.CountTokens)

// newCompactor returns the background worker that compacts closed
// episodes, one at a time, so that messages never wait for them. Readers
// that show compaction state settle it first (wait for the queue to
// empty), which makes what they show the same whatever the timing. A
// failed compaction stays pending in the store; the next start retries it.
func newCompactor(e *Episodic) *kit.Worker {
	return kit.NewWorker(func(ctx context.Context, id string) error {
		_, err := e.compact(ctx, id)
		return err
	}, func(id string, err error) {
		e.env.Log.Warn("compaction failed", "episode", id, "err", err)
		EventCompactFailed.Publish(e.env.Events, e.episodeAudience(id), CompactFailedEvent{EpisodeID: id, Error: err.Error()})
	})
}

// resumeCompactions queues the compactions a previous run left pending.
func (e *Episodic) resumeCompactions() error {
	var ids []string
	err := e.env.Store.View(func(tx *storage.Tx) error {
		return tx.Keys(storage.Prefix(pendingPrefix()), func(k []byte) error {
			ids = append(ids, storage.LastPart(k))
			return nil
		})
	})
	e.compactor.Enqueue(ids...)
	return err
}

// compact compacts one closed episode; it returns nil if there was nothing
// to do (not closed, already compacted).
func (e *Episodic) compact(ctx context.Context, id string) (*Episode, error) {
	var done *Episode
	hook := func(stage string) error {
		if e.opts.compactHook == nil {
			return nil
		}
		return e.opts.compactHook(stage)
	}
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		done = nil
		ep, err := loadEpisode(tx.Tx, id)
		if err != nil {
			if errs.KindOf(err) == errs.NotFound {
				return tx.Delete(pendingKey(id)) // a stale queue entry
			}
			return err
		}
		if ep.Status != EpisodeClosed {
			return tx.Delete(pendingKey(id))
		}
		t, err := loadThread(tx.Tx, ep.ThreadID)
		if err != nil {
			return err
		}
		var turns []*Turn
		for n := ep.FirstTurn; n <= ep.LastTurn && ep.TurnCount > 0; n++ {
			var u Turn
			if err := tx.GetJSON(turnKey(t.ID, n), &u); err != nil {
				return fmt.Errorf("episode %s: turn %d: %w", id, n, err)
			}
			turns = append(turns, &u)
		}
		ep.Summaries = &Summaries{Micro: microSummaries(turns), Meso: mesoSummary(turns)}
		ep.Skills = extractSkills(turns)
		if err := hook("summaries"); err != nil {
			return err
		}
		if ep.Summaries.Macro, err = macroSummary(tx.Tx, t, ep, turns); err != nil {
			return err
		}
		for i, u := range turns {
			u.Archived = true
			if err := tx.SetJSON(archKey(t.ID, u.Number), u); err != nil {
				return err
			}
			if err := tx.Delete(turnKey(t.ID, u.Number)); err != nil {
				return err
			}
			if i == len(turns)/2 {
				if err := hook("archive"); err != nil {
					return err
				}
			}
		}
		// Engine time when the compaction was asked for (the close), not
		// when the background worker got to it: a run with a fixed clock
		// (a batch script with "at") then prints the same every time.
		ep.Status, ep.CompactedAt = EpisodeCompacted, ep.ClosedAt
		if err := tx.SetJSON(episodeKey(id), ep); err != nil {
			return err
		}
		if err := tx.Delete(pendingKey(id)); err != nil {
			return err
		}
		if t.Status == StatusEnded && allCompacted(tx.Tx, t, ep.ID) {
			t.Status = StatusCompacted
			if err := tx.SetJSON(threadKey(t.ID), t); err != nil {
				return err
			}
		}
		if err := hook("commit"); err != nil {
			return err
		}
		if err := publishCompacted(tx, ep); err != nil {
			return err
		}
		done = ep
		return nil
	})
	return done, err
}

// allCompacted reports whether every episode of t but except is compacted.
func allCompacted(tx *storage.Tx, t *Thread, except string) bool {
	for _, id := range t.Episodes {
		if id == except {
			continue
		}
		ep, err := loadEpisode(tx, id)
		if err != nil || ep.Status != EpisodeCompacted {
			return false
		}
	}
	return true
}

// Compact closes a thread's open episode (if it has turns) and compacts
// every closed episode of the thread now; it returns the episodes compacted.
func (e *Episodic) Compact(ctx context.Context, call action.Call, threadID string) ([]*Episode, error) {
	if threadID == "" {
		return nil, errNoThread()
	}
	e.mu.Lock() // no message may add to the episode being closed meanwhile
	defer e.mu.Unlock()
	// Whatever is queued goes first, in order: what this call compacts, and
	// what it returns, must not depend on how far the background got.
	e.compactor.Settle(ctx)
	next := e.env.IDs.New() // drawn outside the transaction, which may retry
	var closed []string
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		closed = nil
		t, err := loadThread(tx.Tx, threadID)
		if err != nil {
			return err
		}
		if err := e.authorize(tx.Tx, call.Principal, threadID, access.Write); err != nil {
			return err
		}
		closedOpen := false
		for _, id := range t.Episodes {
			ep, err := loadEpisode(tx.Tx, id)
			if err != nil {
				return err
			}
			switch {
			case ep.Status == EpisodeOpen && ep.TurnCount > 0:
				if err := closeEpisode(tx.Tx, ep, "manual", e.env.Clock.Now()); err != nil {
					return err
				}
				closed, closedOpen = append(closed, id), true
			case ep.Status == EpisodeClosed: // a compaction that failed before
				closed = append(closed, id)
			}
		}
		if t.Status == StatusActive && closedOpen {
			// The next message starts a new episode.
			if err := openEpisode(tx, t, next, e.env.Clock.Now()); err != nil {
				return err
			}
			if err := tx.SetJSON(threadKey(t.ID), t); err != nil {
				return err
			}
		}
		_, err = tx.TraceAbout(call, about(threadID), "episode.compact", fmt.Sprintf("compacting %d episode(s) of thread %s", len(closed), threadID), compactTrace{Episodes: closed})
		return err
	})
	if err != nil {
		return nil, e.failed(ctx, call, err)
	}
	out := []*Episode{}
	for _, id := range closed {
		ep, err := e.compact(ctx, id)
		if err != nil {
			// Not queued again here, where it would race the caller's next
			// step: it stays pending in the store, for the next
			// episode.compact or the next start.
			return out, fmt.Errorf("compacting episode %s failed (it stays closed and pending: episode.compact or the next start retries it): %w", id, err)
		}
		if ep != nil {
			out = append(out, ep)
		}
	}
	err = e.env.Store.View(func(tx *storage.Tx) error {
		for _, ep := range out {
			if err := macroFor(tx, call.Principal, ep); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// macroReadable reports whether principal may read every thread a macro
// summary of thread id draws on: the threads linked to it that its owner
// owns (macroSummary's choice), all of them readable to the owner but not
// to a grantee of this thread alone.
func macroReadable(tx *storage.Tx, principal, id string) (bool, error) {
	t, err := loadThread(tx, id)
	if err != nil {
		return false, err
	}
	mine, err := loadACL(tx, id)
	if err != nil {
		return false, err
	}
	for _, other := range t.LinkedThreads {
		theirs, err := loadACL(tx, other)
		if err != nil {
			return false, err
		}
		if theirs.OwnerOf() == mine.OwnerOf() && !theirs.Can(principal, access.Read) {
			return false, nil
		}
	}
	return true, nil
}

// macroFor leaves out ep's macro summary unless principal may read what
// it draws on (macroReadable): a grantee of one thread does not read its
// owner's other threads through it.
func macroFor(tx *storage.Tx, principal string, ep *Episode) error {
	if ep == nil || ep.Summaries == nil || ep.Summaries.Macro == "" {
		return nil
	}
	ok, err := macroReadable(tx, principal, ep.ThreadID)
	if err != nil || ok {
		return err
	}
	withoutMacro(ep)
	return nil
}

// withoutMacro leaves out ep's macro summary (its summaries are copied,
// not changed).
func withoutMacro(ep *Episode) {
	s := *ep.Summaries
	s.Macro = ""
	ep.Summaries = &s
}

// publishCompacted publishes episode.compacted about ep to the readers of
// its thread: whole to those who may read what its macro summary draws
// on, without the macro summary to the others.
func publishCompacted(tx *kit.Txn, ep *Episode) error {
	a, err := loadACL(tx.Tx, ep.ThreadID)
	if err != nil {
		return err
	}
	var whole, without []string
	for _, p := range a.Readers() {
		ok, err := macroReadable(tx.Tx, p, ep.ThreadID)
		if err != nil {
			return err
		}
		if ok {
			whole = append(whole, p)
		} else {
			without = append(without, p)
		}
	}
	if len(whole) > 0 {
		EventCompacted.Publish(tx, events.Only(whole...), *ep)
	}
	if len(without) > 0 {
		cut := *ep
		if err := macroFor(tx.Tx, without[0], &cut); err != nil {
			return err
		}
		EventCompacted.Publish(tx, events.Only(without...), cut)
	}
	return nil
}

// compactTrace is the data of an episode.compact trace entry.
type compactTrace struct {
	Episodes []string `json:"episodes"`
}

func lines(turns []*Turn) []text.Line {
	out := make([]text.Line, len(turns))
	for i, u := range turns {
		out[i] = text.Line{Index: u.Number, Speaker: u.Speaker, Text: u.Text}
	}
	return out
}

func microSummaries(turns []*Turn) []Micro {
	out := []Micro{}
	for i := 0; i < len(turns); i += microTurns {
		group := turns[i:min(i+microTurns, len(turns))]
		var s text.Summary
		s.Add(lines(group)...)
		summary, _ := s.Compress(microTokens, countTokens)
		out = append(out, Micro{Turns: [2]int{group[0].Number, group[len(group)-1].Number}, Text: summary})
	}
	return out
}

func mesoSummary(turns []*Turn) string {
	var s text.Summary
	s.Add(lines(turns)...)
	summary, _ := s.Compress(mesoTokens, countTokens)
	return summary
}

// macroSummary sums up the episode's thread and the linked threads of the
// same owner (another owner's text must not reach whoever reads this
// thread), earliest first, each line labelled with its thread's title: the episode's
// own turns, and the last turns of the others as they stood when the
// episode closed (archived or not), so that the summary is the same
// whenever the background compaction runs, and its cost stays bounded
// however long the history grows.
func macroSummary(tx *storage.Tx, t *Thread, ep *Episode, turns []*Turn) (string, error) {
	var s text.Summary
	mine, err := loadACL(tx, t.ID)
	if err != nil {
		return "", err
	}
	threads := []*Thread{t}
	for _, id := range t.LinkedThreads {
		theirs, err := loadACL(tx, id)
		if err != nil {
			return "", err
		}
		if theirs.OwnerOf() != mine.OwnerOf() {
			continue
		}
		other, err := loadThread(tx, id)
		if err != nil {
			return "", err
		}
		threads = append(threads, other)
	}
	sortByCreation(threads)
	for _, other := range threads {
		own := turns
		if other.ID != t.ID {
			var err error
			if own, err = lastTurns(tx, other, candidateTurns, *ep.ClosedAt); err != nil {
				return "", err
			}
		}
		for _, l := range lines(own) {
			l.Speaker = other.Title + " · " + l.Speaker
			s.Add(l)
		}
	}
	summary, _ := s.Compress(macroTokens, countTokens)
	return summary, nil
}

var (
	preferenceCue = regexp.MustCompile(`(?i)\b(i|we) (prefer|like|love|enjoy|hate|dislike|don't like|do not like|want|always|never|usually|'d rather|would rather)\b|\bmy favou?rite\b`)
	procedureCue  = regexp.MustCompile(`(?i)^(first|then|next|finally|step \d+|\d+[.)])\b|\b(to do that|here's how|you (need|have) to|make sure to)\b`)
	factCue       = regexp.MustCompile(`(?i)\b(my|our) [a-z]+ (is|are|was|were)\b|\b(i am|i'm|we are|we're) (a|an|from|based|allergic|in)\b|\b(i|we) (live|work|have|own)\b`)
)

// extractSkills finds what an episode taught that is worth keeping beyond
// it: the user's preferences, facts about them, procedures given, and the
// answers the assistant gave with concrete details (numbers, names).
func extractSkills(turns []*Turn) []Skill {
	out := []Skill{}
	seen := map[string]bool{}
	add := func(kind, s string, turn int, from string) {
		s = strings.TrimSpace(s)
		key := kind + strings.ToLower(s)
		if s == "" || seen[key] {
			return
		}
		seen[key] = true
		out = append(out, Skill{Kind: kind, Text: s, Turn: turn, From: from})
	}
	for i, u := range turns {
		for _, sentence := range sentences(u.Text) {
			switch {
			case u.Speaker == "user" && preferenceCue.MatchString(sentence):
				add(SkillPreference, sentence, u.Number, u.Speaker)
			case procedureCue.MatchString(sentence):
				add(SkillProcedure, sentence, u.Number, u.Speaker)
			case u.Speaker == "user" && factCue.MatchString(sentence):
				add(SkillFact, sentence, u.Number, u.Speaker)
			}
		}
		// An answer with concrete details to a question: a fact learned.
		if u.Speaker == "assistant" && i > 0 && turns[i-1].Speaker == "user" && strings.HasSuffix(strings.TrimSpace(turns[i-1].Text), "?") &&
			len(text.Entities(u.Text)) > 0 {
			add(SkillFact, strings.TrimSuffix(strings.TrimSpace(turns[i-1].Text), "?")+": "+firstSentence(u.Text), u.Number, "answer")
		}
	}
	return out
}

var sentenceEnd = regexp.MustCompile(`[.!?]+(\s+|$)`)

func sentences(s string) []string {
	var out []string
	for _, part := range sentenceEnd.Split(strings.TrimSpace(s), -1) {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func firstSentence(s string) string {
	all := sentences(s)
	if len(all) == 0 {
		return ""
	}
	return llm.Truncate(all[0], 120)
}

// Episodes lists every episode of threadID ("" for all threads), with the
// cross-thread episodes.
func (e *Episodic) Episodes(ctx context.Context, principal, threadID string) ([]*Episode, []*CrossEpisode, error) {
	e.compactor.Settle(ctx)
	eps, xs := []*Episode{}, []*CrossEpisode{}
	err := e.env.Store.View(func(tx *storage.Tx) error {
		if threadID != "" {
			if _, err := loadThread(tx, threadID); err != nil {
				return err
			}
			if err := e.authorize(tx, principal, threadID, access.Read); err != nil {
				return err
			}
		}
		threads, err := recentThreadsFor(tx, principal, 0)
		if err != nil {
			return err
		}
		slices.Reverse(threads) // oldest first
		for _, t := range threads {
			if threadID != "" && t.ID != threadID {
				continue
			}
			// Whether principal may read t's macro summaries, asked once
			// per thread and only if one has a macro summary.
			var asked, readable bool
			for _, id := range t.Episodes {
				ep, err := loadEpisode(tx, id)
				if err != nil {
					return err
				}
				if ep.Summaries != nil && ep.Summaries.Macro != "" {
					if !asked {
						if readable, err = macroReadable(tx, principal, t.ID); err != nil {
							return err
						}
						asked = true
					}
					if !readable {
						withoutMacro(ep)
					}
				}
				eps = append(eps, ep)
			}
		}
		return tx.Scan(storage.Prefix(crossPrefix()), func(_, v []byte) error {
			var x CrossEpisode
			if err := json.Unmarshal(v, &x); err != nil {
				return err
			}
			if threadID != "" && !slices.Contains(x.LinkedThreads, threadID) {
				return nil
			}
			// Shown whole or not at all: to a principal who may read
			// every thread in it.
			for _, id := range x.LinkedThreads {
				if ok, err := canRead(tx, principal, id); err != nil || !ok {
					return err
				}
			}
			xs = append(xs, &x)
			return nil
		})
	})
	if threadID != "" && err == nil && len(eps) == 0 {
		err = e.env.Store.View(func(tx *storage.Tx) error { _, err := loadThread(tx, threadID); return err })
	}
	return eps, xs, err
}

// EpisodeView is an episode with its turns (archived ones, once compacted).
type EpisodeView struct {
	*Episode
	Turns []*Turn `json:"turns"`
}

// Episode returns one episode with its raw turns, archived or not.
func (e *Episodic) Episode(ctx context.Context, principal, id string) (EpisodeView, error) {
	if err := kit.CheckName("episode_id", id, ""); err != nil {
		return EpisodeView{}, err
	}
	e.compactor.Settle(ctx)
	var v EpisodeView
	err := e.env.Store.View(func(tx *storage.Tx) error {
		ep, err := loadEpisode(tx, id)
		if errs.KindOf(err) == errs.NotFound {
			return errs.New(errs.NotFound, "episode_id: no episode %q; episode.list shows the episodes", id).With("field", "episode_id").With("id", id)
		}
		if err != nil {
			return err
		}
		if err := e.authorize(tx, principal, ep.ThreadID, access.Read); err != nil {
			return err
		}
		if err := macroFor(tx, principal, ep); err != nil {
			return err
		}
		v.Episode = ep
		all, err := turnsOf(tx, ep.ThreadID, true)
		v.Turns = []*Turn{}
		for _, u := range all {
			if u.EpisodeID == id {
				v.Turns = append(v.Turns, u)
			}
		}
		return err
	})
	return v, err
}
