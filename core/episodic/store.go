package episodic

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Key layout (see storage/keys.go):
//
//	episodic/thread/<id>            Thread
//	episodic/turn/<thread>/<n>      Turn, live (n as 16 hex digits)
//	episodic/arch/<thread>/<n>      Turn, archived by compaction
//	episodic/ep/<id>                Episode
//	episodic/xep/<id>               CrossEpisode
//	episodic/dec/<id>               Decision (ids sort by time)
//	episodic/pending/<episode id>   an episode waiting for compaction (empty)
//	episodic/tuning                 Tuning
//	episodic/conv/<conversation>/<channel>/<principal>  a principal's thread of the conversation on an explicit channel
//	episodic/untitled/<thread>     a thread titled Untitled by a greeting, until a message with content titles it (empty)
//	episodic/await/<principal>      the decisions of its latest new thread, awaiting its next message (infer.go)
//	idx/episodic/act/<time>/<id>    threads by last activity (key only)

func threadKey(id string) []byte { return storage.Key(storage.PrefixEpisodic, "thread", id) }
func threadPrefix() []byte       { return storage.PrefixKey(storage.PrefixEpisodic, "thread") }
func turnPrefix(thread string) []byte {
	return storage.PrefixKey(storage.PrefixEpisodic, "turn", thread)
}
func archPrefix(thread string) []byte {
	return storage.PrefixKey(storage.PrefixEpisodic, "arch", thread)
}
func episodeKey(id string) []byte  { return storage.Key(storage.PrefixEpisodic, "ep", id) }
func crossKey(id string) []byte    { return storage.Key(storage.PrefixEpisodic, "xep", id) }
func crossPrefix() []byte          { return storage.PrefixKey(storage.PrefixEpisodic, "xep") }
func decisionKey(id string) []byte { return storage.Key(storage.PrefixEpisodic, "dec", id) }
func decisionPrefix() []byte       { return storage.PrefixKey(storage.PrefixEpisodic, "dec") }
func pendingKey(episode string) []byte {
	return storage.Key(storage.PrefixEpisodic, "pending", episode)
}
func pendingPrefix() []byte { return storage.PrefixKey(storage.PrefixEpisodic, "pending") }
func untitledKey(thread string) []byte {
	return storage.Key(storage.PrefixEpisodic, "untitled", thread)
}
func tuningKey() []byte      { return storage.Key(storage.PrefixEpisodic, "tuning") }
func activityPrefix() []byte { return storage.PrefixKey(storage.PrefixIndex, "episodic", "act") }
func turnKey(thread string, n int) []byte {
	return storage.Key(storage.PrefixEpisodic, "turn", thread, storage.Uint64(uint64(n)))
}
func archKey(thread string, n int) []byte {
	return storage.Key(storage.PrefixEpisodic, "arch", thread, storage.Uint64(uint64(n)))
}

// conversationKey holds the thread a principal's messages of a
// conversation on an explicit channel continue: each agent of a shared
// conversation keeps its own (one alternating with another would
// otherwise start a thread at every message).
func conversationKey(conversation, channel, principal string) []byte {
	return storage.Key(storage.PrefixEpisodic, "conv", conversation, channel, principal)
}
func activityKey(t time.Time, id string) []byte {
	return storage.IndexKey("episodic", "act", storage.Time(t), id)
}

func getJSON[T any](tx *storage.Tx, key []byte, what, id string) (*T, error) {
	var v T
	if err := tx.GetJSON(key, &v); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, errs.New(errs.NotFound, "no %s %q", what, id).With("id", id)
		}
		return nil, err
	}
	return &v, nil
}

func loadThread(tx *storage.Tx, id string) (*Thread, error) {
	if err := kit.CheckName("thread_id", id, ""); err != nil {
		return nil, err
	}
	t, err := getJSON[Thread](tx, threadKey(id), "thread", id)
	if err != nil && errs.KindOf(err) == errs.NotFound {
		return nil, errs.New(errs.NotFound, "no thread %q; thread.list shows the threads, and a message without thread_id starts one", id).
			With("field", "thread_id").With("id", id)
	}
	return t, err
}

func loadEpisode(tx *storage.Tx, id string) (*Episode, error) {
	return getJSON[Episode](tx, episodeKey(id), "episode", id)
}

func loadCross(tx *storage.Tx, id string) (*CrossEpisode, error) {
	return getJSON[CrossEpisode](tx, crossKey(id), "cross-thread episode", id)
}

func loadDecision(tx *storage.Tx, id string) (*Decision, error) {
	if err := kit.CheckName("decision_id", id, ""); err != nil {
		return nil, err
	}
	d, err := getJSON[Decision](tx, decisionKey(id), "decision", id)
	if err != nil && errs.KindOf(err) == errs.NotFound {
		return nil, errs.New(errs.NotFound, "decision_id: no decision %q; episode.decisions lists them", id).With("field", "decision_id").With("id", id)
	}
	return d, err
}

// saveThread writes t, moving its activity index entry from was (the last
// activity it was indexed under; zero for a new thread).
func saveThread(tx *storage.Tx, t *Thread, was time.Time) error {
	if !was.IsZero() && !was.Equal(t.LastActivityAt) {
		if err := tx.Delete(activityKey(was, t.ID)); err != nil {
			return err
		}
	}
	if err := tx.Set(activityKey(t.LastActivityAt, t.ID), nil); err != nil {
		return err
	}
	return tx.SetJSON(threadKey(t.ID), t)
}

// recentThreadsFor returns up to limit threads (0: all) that principal
// may read, most recently active first.
func recentThreadsFor(tx *storage.Tx, principal string, limit int) ([]*Thread, error) {
	var out []*Thread
	err := tx.Keys(storage.Range{Prefix: activityPrefix(), Reverse: true}, func(k []byte) error {
		id := storage.LastPart(k)
		if ok, err := canRead(tx, principal, id); err != nil || !ok {
			return err
		}
		t, err := loadThread(tx, id)
		if err != nil {
			return err
		}
		out = append(out, t)
		if limit > 0 && len(out) >= limit {
			return storage.ErrStop
		}
		return nil
	})
	return out, err
}

// turnsOf returns a thread's turns: live ones, and archived ones too when
// archived is set, in order.
func turnsOf(tx *storage.Tx, thread string, archived bool) ([]*Turn, error) {
	var out []*Turn
	read := func(prefix []byte) error {
		return tx.Scan(storage.Prefix(prefix), func(_, v []byte) error {
			var t Turn
			if err := json.Unmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, &t)
			return nil
		})
	}
	if archived {
		if err := read(archPrefix(thread)); err != nil {
			return nil, err
		}
	}
	if err := read(turnPrefix(thread)); err != nil {
		return nil, err
	}
	return out, nil
}

// lastTurns returns a thread's last n turns, in order, live or archived
// alike — so that what is read does not depend on whether a compaction has
// run yet — skipping those after until (when not zero). Every turn number
// is under one of the two keys, so this is at most two point reads a turn.
func lastTurns(tx *storage.Tx, t *Thread, n int, until time.Time) ([]*Turn, error) {
	var out []*Turn
	for k := t.TurnCount; k >= 1 && len(out) < n; k-- {
		var u Turn
		err := tx.GetJSON(turnKey(t.ID, k), &u)
		if errors.Is(err, storage.ErrNotFound) {
			err = tx.GetJSON(archKey(t.ID, k), &u)
		}
		if errors.Is(err, storage.ErrNotFound) {
			continue // not written: cannot happen, but nothing to read
		}
		if err != nil {
			return nil, err
		}
		if !until.IsZero() && u.At.After(until) {
			continue
		}
		out = append(out, &u)
	}
	slices.Reverse(out)
	return out, nil
}

func loadTuning(tx *storage.Tx) (*Tuning, error) {
	var t Tuning
	err := tx.GetJSON(tuningKey(), &t)
	if errors.Is(err, storage.ErrNotFound) {
		return &Tuning{Threshold: DefaultThreshold, Prompts: []PromptVersion{{Version: 1, Guidance: []string{}, Reason: "initial prompt"}}, History: []TuningRecord{}}, nil
	}
	return &t, err
}
