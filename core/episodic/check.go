package episodic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/storage"
)

// checkStored compares what the episodic layer keeps beside its records
// with the records themselves (engram check), in one read transaction:
//
//   - every thread has its one activity index entry, at its last activity,
//     and every entry names a thread active then;
//   - a thread's turns are 1..turn_count, each once, live or archived;
//   - each turn lies in an episode of its thread, archived exactly when that
//     episode is compacted, and an episode's turn_count is its turns;
//   - a thread lists its episodes, links and cross-thread episodes, and each
//     names it back;
//   - a closed episode waits in the compaction queue, and the queue holds
//     closed episodes only;
//   - decisions, ACLs and the tuning name what exists and decode.
//
// A problem names the record and what is wrong; an error only means the
// store could not be read.
func (e *Episodic) checkStored(ctx context.Context) ([]string, error) {
	var c checker
	err := e.env.Store.View(func(tx *storage.Tx) error {
		c.tx, c.ctx = tx, ctx
		return c.run()
	})
	return c.problems, err
}

// checker holds what one check has read so far. Threads and episodes are
// kept whole (they are few next to turns); turns are only counted, with one
// byte per turn number to find a gap or a turn stored twice.
type checker struct {
	ctx      context.Context
	tx       *storage.Tx
	problems []string
	threads  map[string]*Thread
	episodes map[string]*episodeSeen
	turnsOf  map[string][]byte // thread → times each turn number was seen
	orphans  map[string]int    // thread that does not exist → its turns stored
	bad      map[string]bool   // keys of the records that do not decode
	// cross holds each cross-thread episode's threads (nil: unreadable).
	cross map[string]map[string]bool
}

// episodeSeen is an episode and how many of its turns the scans found.
type episodeSeen struct {
	*Episode
	turns   int
	pending bool
}

// gone says why a thread named by another record is missing: its record
// is either not there or unreadable (named once, by its key).
func (c *checker) gone(id string) string {
	if c.bad[string(threadKey(id))] {
		return "whose record is unreadable"
	}
	return "which does not exist"
}

func (c *checker) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// scan decodes every record under prefix into a T and hands it to fn; a
// record that does not decode is a problem naming its key.
func scan[T any](c *checker, prefix []byte, what string, fn func(key []byte, v *T) error) error {
	return c.tx.Scan(storage.Prefix(prefix), func(key, value []byte) error {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		var v T
		if err := json.Unmarshal(value, &v); err != nil {
			c.problem("episodic %s at key %q: unreadable: %v", what, key, err)
			c.bad[string(key)] = true
			return nil
		}
		return fn(key, &v)
	})
}

func (c *checker) run() error {
	c.threads = map[string]*Thread{}
	c.episodes = map[string]*episodeSeen{}
	c.turnsOf = map[string][]byte{}
	c.cross = map[string]map[string]bool{}
	c.orphans = map[string]int{}
	c.bad = map[string]bool{}
	steps := []func() error{c.readThreads, c.readEpisodes, c.checkTurns, c.checkPending, c.checkCross,
		c.checkThreads, c.checkEpisodes, c.checkActivity, c.checkDecisions, c.checkACLs, c.checkTuning}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) readThreads() error {
	return scan(c, threadPrefix(), "thread", func(key []byte, t *Thread) error {
		if id := storage.LastPart(key); t.ID != id {
			c.problem("episodic thread %s: its record says id %q", id, t.ID)
			return nil
		}
		c.threads[t.ID] = t
		c.turnsOf[t.ID] = make([]byte, max(t.TurnCount, 0)+1)
		return nil
	})
}

func (c *checker) readEpisodes() error {
	return scan(c, storage.PrefixKey(storage.PrefixEpisodic, "ep"), "episode", func(key []byte, ep *Episode) error {
		if id := storage.LastPart(key); ep.ID != id {
			c.problem("episodic episode %s: its record says id %q", id, ep.ID)
			return nil
		}
		c.episodes[ep.ID] = &episodeSeen{Episode: ep}
		return nil
	})
}

// checkTurns reads the live turns, then the archived ones.
func (c *checker) checkTurns() error {
	for _, archived := range []bool{false, true} {
		family, keyOf := "turn", turnKey
		if archived {
			family, keyOf = "arch", archKey
		}
		err := scan(c, storage.PrefixKey(storage.PrefixEpisodic, family), "turn", func(key []byte, u *Turn) error {
			c.checkTurn(key, u, archived, keyOf)
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.orphans)) {
		c.problem("episodic: %d turn(s) are stored for thread %s, %s", c.orphans[id], id, c.gone(id))
	}
	return nil
}

func (c *checker) checkTurn(key []byte, u *Turn, archived bool, keyOf func(string, int) []byte) {
	where := "live"
	if archived {
		where = "archived"
	}
	if !slices.Equal(keyOf(u.ThreadID, u.Number), key) {
		c.problem("episodic turn at key %q: its record says thread %s turn %d", key, u.ThreadID, u.Number)
		return
	}
	name := fmt.Sprintf("episodic thread %s: %s turn %d", u.ThreadID, where, u.Number)
	t := c.threads[u.ThreadID]
	if t == nil {
		c.orphans[u.ThreadID]++ // said once per thread, after the scans
		return
	}
	if seen := c.turnsOf[t.ID]; u.Number < 1 || u.Number > t.TurnCount {
		c.problem("%s is beyond the thread's turn_count %d", name, t.TurnCount)
	} else if seen[u.Number]++; seen[u.Number] > 1 {
		// The copy is the one problem: its episode counted the first.
		c.problem("episodic thread %s: turn %d is stored both live and archived", t.ID, u.Number)
		return
	}
	if u.Archived != archived {
		c.problem("%s says archived=%t", name, u.Archived)
	}
	ep := c.episodes[u.EpisodeID]
	switch {
	case ep == nil:
		c.problem("%s names episode %s, which does not exist", name, u.EpisodeID)
		return
	case ep.ThreadID != t.ID:
		c.problem("%s names episode %s, which is thread %s's", name, ep.ID, ep.ThreadID)
		return
	case u.Number < ep.FirstTurn || u.Number > ep.LastTurn:
		c.problem("%s is outside its episode %s (turns %d..%d)", name, ep.ID, ep.FirstTurn, ep.LastTurn)
	case archived != (ep.Status == EpisodeCompacted):
		c.problem("%s is in episode %s, which is %s", name, ep.ID, ep.Status)
	}
	ep.turns++
}

// checkPending: the queue holds closed episodes only.
func (c *checker) checkPending() error {
	return c.tx.Keys(storage.Prefix(pendingPrefix()), func(key []byte) error {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		id := storage.LastPart(key)
		ep := c.episodes[id]
		switch {
		case ep == nil:
			c.problem("episodic compaction queue: entry names episode %s, which does not exist", id)
		case ep.Status != EpisodeClosed:
			c.problem("episodic compaction queue: entry names episode %s, which is %s", id, ep.Status)
		default:
			ep.pending = true
		}
		return nil
	})
}

func (c *checker) checkThreads() error {
	for _, id := range slices.Sorted(maps.Keys(c.threads)) {
		t := c.threads[id]
		for n, times := range c.turnsOf[id] {
			if n > 0 && times == 0 {
				c.problem("episodic thread %s: counts %d turns, turn %d is not stored", id, t.TurnCount, n)
			}
		}
		for i, epID := range t.Episodes {
			ep := c.episodes[epID]
			switch {
			case ep == nil:
				c.problem("episodic thread %s: lists episode %s, which does not exist", id, epID)
			case ep.ThreadID != id:
				c.problem("episodic thread %s: lists episode %s, which is thread %s's", id, epID, ep.ThreadID)
			case ep.Number != i+1:
				c.problem("episodic thread %s: lists episode %s at %d, which says it is number %d", id, epID, i+1, ep.Number)
			}
		}
		for _, other := range t.LinkedThreads {
			o := c.threads[other]
			switch {
			case o == nil:
				c.problem("episodic thread %s: linked to thread %s, %s", id, other, c.gone(other))
			case !slices.Contains(o.LinkedThreads, id):
				c.problem("episodic thread %s: linked to thread %s, which is not linked back", id, other)
			}
		}
		for _, xid := range t.CrossThreadEpisodes {
			members, ok := c.cross[xid]
			switch {
			case !ok:
				c.problem("episodic thread %s: lists cross-thread episode %s, which does not exist", id, xid)
			case members != nil && !members[id]:
				c.problem("episodic thread %s: lists cross-thread episode %s, which does not list it", id, xid)
			}
		}
	}
	return c.ctx.Err()
}

func (c *checker) checkEpisodes() error {
	for _, id := range slices.Sorted(maps.Keys(c.episodes)) {
		ep := c.episodes[id]
		name := "episodic episode " + id
		t := c.threads[ep.ThreadID]
		if t == nil {
			c.problem("%s: names thread %s, %s", name, ep.ThreadID, c.gone(ep.ThreadID))
			continue
		}
		if !slices.Contains(t.Episodes, id) {
			c.problem("%s: thread %s does not list it", name, ep.ThreadID)
		}
		if ep.turns != ep.TurnCount {
			c.problem("%s: counts %d turns, holds %d", name, ep.TurnCount, ep.turns)
		}
		if ep.Status == EpisodeClosed && !ep.pending {
			c.problem("%s: is closed but not in the compaction queue", name)
		}
	}
	return c.ctx.Err()
}

// checkActivity: each thread has exactly the entry at its last activity.
func (c *checker) checkActivity() error {
	indexed := map[string]bool{}
	err := c.tx.Keys(storage.Prefix(activityPrefix()), func(key []byte) error {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		id := storage.LastPart(key)
		t := c.threads[id]
		switch {
		case t == nil:
			c.problem("episodic activity index: entry %q names thread %s, %s", key, id, c.gone(id))
		case !slices.Equal(key, activityKey(t.LastActivityAt, id)):
			c.problem("episodic activity index: entry %q for thread %s is stale (the thread was last active %s)", key, id, t.LastActivityAt.Format(time.RFC3339Nano))
		default:
			indexed[id] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(c.threads)) {
		if !indexed[id] {
			c.problem("episodic thread %s: missing from the activity index", id)
		}
	}
	return nil
}

func (c *checker) checkCross() error {
	err := c.tx.Keys(storage.Prefix(crossPrefix()), func(key []byte) error {
		c.cross[storage.LastPart(key)] = nil // exists; its threads once read
		return nil
	})
	if err != nil {
		return err
	}
	return scan(c, crossPrefix(), "cross-thread episode", func(key []byte, x *CrossEpisode) error {
		id := storage.LastPart(key)
		if x.ID != id {
			c.problem("episodic cross-thread episode %s: its record says id %q", id, x.ID)
			return nil
		}
		members := make(map[string]bool, len(x.LinkedThreads))
		c.cross[id] = members
		for _, tid := range x.LinkedThreads {
			members[tid] = true
			t := c.threads[tid]
			switch {
			case t == nil:
				c.problem("episodic cross-thread episode %s: lists thread %s, %s", id, tid, c.gone(tid))
			case !slices.Contains(t.CrossThreadEpisodes, id):
				c.problem("episodic cross-thread episode %s: lists thread %s, which does not list it", id, tid)
			}
		}
		for _, did := range x.Decisions {
			ok, err := c.tx.Has(decisionKey(did))
			if err != nil {
				return err
			}
			if !ok {
				c.problem("episodic cross-thread episode %s: lists decision %s, which does not exist", id, did)
			}
		}
		return nil
	})
}

func (c *checker) checkDecisions() error {
	return scan(c, decisionPrefix(), "decision", func(key []byte, d *Decision) error {
		id := storage.LastPart(key)
		if d.ID != id {
			c.problem("episodic decision %s: its record says id %q", id, d.ID)
			return nil
		}
		for _, tid := range []string{d.ThreadID, d.Candidate} {
			if c.threads[tid] == nil {
				c.problem("episodic decision %s: names thread %s, %s", id, tid, c.gone(tid))
			}
		}
		if d.CrossThreadEpisode == "" {
			return nil
		}
		if _, ok := c.cross[d.CrossThreadEpisode]; !ok {
			c.problem("episodic decision %s: names cross-thread episode %s, which does not exist", id, d.CrossThreadEpisode)
		}
		return nil
	})
}

// checkACLs: an access list belongs to a thread. A thread without one is
// not a problem: it was stored before threads had owners.
func (c *checker) checkACLs() error {
	return scan(c, storage.PrefixKey(storage.PrefixEpisodic, "acl"), "access list", func(key []byte, _ *access.ACL) error {
		if id := storage.LastPart(key); c.threads[id] == nil {
			c.problem("episodic access list is stored for thread %s, %s", id, c.gone(id))
		}
		return nil
	})
}

func (c *checker) checkTuning() error {
	b, err := c.tx.Get(tuningKey())
	if errors.Is(err, storage.ErrNotFound) {
		return nil // never tuned
	} else if err != nil {
		return err
	}
	var t Tuning
	if err := json.Unmarshal(b, &t); err != nil {
		c.problem("episodic tuning at key %q: unreadable: %v", tuningKey(), err)
	}
	return nil
}
