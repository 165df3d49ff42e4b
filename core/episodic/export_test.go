package episodic

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Test hooks, for the external tests of this package.

// CompactHook returns opts with a hook that runs at each stage of every
// compaction ("summaries", "archive" midway through archiving the turns,
// "commit" just before the commit); an error it returns fails the
// compaction there.
func CompactHook(opts Options, hook func(stage string) error) Options {
	opts.compactHook = hook
	return opts
}

// FixedScores returns opts whose algorithmic scorer answers score(message,
// candidate title) instead of Score (for scenarios that give the scores).
func FixedScores(opts Options, score func(message, CandidateText string) float64) Options {
	opts.scorer = func(message string, cand CandidateText, now time.Time) (float64, Signals) {
		_, sig := Score(message, cand, now)
		return score(message, cand.Text), sig
	}
	return opts
}

// Settle waits for background compactions to finish.
func (e *Episodic) Settle() { e.compactor.Settle(context.Background()) }

// DropACL deletes a thread's ACL, as if it had been stored before threads
// had owners.
func DropACL(t testing.TB, env *kit.Env, thread string) {
	t.Helper()
	err := env.Store.Update(context.Background(), func(tx *storage.Tx) error { return tx.Delete(aclKey(thread)) })
	if err != nil {
		t.Fatal(err)
	}
}

// DropDecision deletes a linking decision, as a damaged store might have.
func DropDecision(t testing.TB, env *kit.Env, id string) {
	t.Helper()
	err := env.Store.Update(context.Background(), func(tx *storage.Tx) error { return tx.Delete(decisionKey(id)) })
	if err != nil {
		t.Fatal(err)
	}
}

// OlderFound is a thread a search added to a new thread's candidates.
type OlderFound struct {
	ID    string
	Found *Found
}

// OlderCandidates are the threads older than the recent candidates that a
// search of message adds for principal now, best first (as a new thread's
// first message would).
func (e *Episodic) OlderCandidates(t testing.TB, principal, message string) []OlderFound {
	t.Helper()
	var out []OlderFound
	gen := e.older.generation()
	err := e.env.Store.View(func(tx *storage.Tx) error {
		recent, err := recentThreadsFor(tx, principal, e.opts.MaxCandidates)
		if err != nil {
			return err
		}
		found, err := e.searchOlder(tx, gen, principal, message, recent, e.env.Clock.Now())
		for _, c := range found {
			out = append(out, OlderFound{ID: c.thread.ID, Found: c.found})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// OlderBuilds is how many times the older threads' index was built from
// scratch (appends do not count).
func (e *Episodic) OlderBuilds() int {
	e.older.mu.Lock()
	defer e.older.mu.Unlock()
	return e.older.builds
}

// DropOlderIndex forgets the older threads' index and cached texts, as a
// restart would: the next search builds it from the store.
func (e *Episodic) DropOlderIndex() {
	e.older.mu.Lock()
	defer e.older.mu.Unlock()
	e.older.ix, e.older.keys, e.older.docs, e.older.all = nil, nil, map[string]olderDoc{}, nil
}

// CheckOlderActivity fails t unless the activity index kept in memory is
// kept (up to date with every commit) and is the store's.
func (e *Episodic) CheckOlderActivity(t testing.TB) {
	t.Helper()
	o := e.older
	o.mu.Lock()
	all, kept := slices.Clone(o.all), o.all != nil && o.allAt == o.writes
	o.mu.Unlock()
	if !kept {
		t.Fatal("the activity index is not kept in memory")
	}
	var stored []olderKey
	err := e.env.Store.View(func(tx *storage.Tx) error {
		var err error
		stored, err = activityKeys(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(all, stored, func(a, b olderKey) bool { return compareKeys(a, b) == 0 }) {
		t.Errorf("the activity index in memory differs from the store's:\n%v\n%v", all, stored)
	}
}
