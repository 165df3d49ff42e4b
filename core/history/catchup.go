package history

import (
	"cmp"
	"slices"
	"sync"
)

// Building an index without the conversation's lock. A conversation's
// first search builds its index from the utterances stored: seconds at
// 100,000 utterances (hybrid) or a million (postings). Held under the
// conversation's lock, that build made every write to the conversation
// wait for it. Instead the build reads a snapshot of the store, and the
// changes committed meanwhile are kept here; the build replays them
// before it installs the index, so the index it installs is as new as
// the store. A change it cannot replay (a delete, for the hybrid index),
// or a conversation dropped or moved meanwhile, means it installs
// nothing, and the next search builds again.

// builds tracks the builds in flight of one kind of index, by
// conversation. Its owner's mutex guards it.
type builds struct {
	runs map[string]*buildRun
}

// buildRun is one build in flight: the changes committed since it began.
type buildRun struct {
	// done is closed when the build ends, for searches waiting on it.
	done    chan struct{}
	changes []versionedChange
	// broken: the conversation was dropped or moved meanwhile; the
	// index built must not be installed.
	broken bool
}

// versionedChange is what one commit did, taking a conversation's index
// from version from to version to.
type versionedChange struct {
	from, to uint64
	changes  []indexChange
}

// start begins conversation c's build, unless one is in flight: then it
// returns that build's done channel to wait on instead.
func (b *builds) start(c string) (run *buildRun, wait <-chan struct{}) {
	if r := b.runs[c]; r != nil {
		return nil, r.done
	}
	if b.runs == nil {
		b.runs = map[string]*buildRun{}
	}
	r := &buildRun{done: make(chan struct{})}
	b.runs[c] = r
	return r, nil
}

// record keeps a commit's changes for conversation c's build in flight,
// if there is one.
func (b *builds) record(c string, from, to uint64, changes ...indexChange) {
	if r := b.runs[c]; r != nil {
		r.changes = append(r.changes, versionedChange{from: from, to: to, changes: changes})
	}
}

// breakRun marks conversation c's build in flight, if any, as not to be
// installed (the conversation was dropped or moved).
func (b *builds) breakRun(c string) {
	if r := b.runs[c]; r != nil {
		r.broken = true
	}
}

// finish ends run, conversation c's build of an index at version v, and
// returns the changes to replay on it, in order: those committed after
// v, as far as they follow on from each other. ok is false when the
// build must not be installed: broken, or a change is missing from the
// chain (its commit's report has not come yet). Changes at or below v
// are in the snapshot already.
func (b *builds) finish(c string, run *buildRun, v uint64) (chain []versionedChange, ok bool) {
	if b.runs[c] == run {
		delete(b.runs, c)
	}
	close(run.done)
	if run.broken {
		return nil, false
	}
	changes := slices.SortedFunc(slices.Values(run.changes), func(a, b versionedChange) int { return cmp.Compare(a.from, b.from) })
	at := v
	for _, ch := range changes {
		switch {
		case ch.to <= at:
			continue
		case ch.from != at:
			return nil, false
		}
		chain = append(chain, ch)
		at = ch.to
	}
	return chain, true
}

// joinBuild begins conversation c's build in b (guarded by mu), or waits
// for the one under way and returns nil: the caller then builds nothing.
// It takes the conversation's lock first, for a moment: a write that has
// committed but not yet brought the indexes up to date holds it until it
// has, and the caller's search may then find the index it needs.
func (h *History) joinBuild(c string, mu sync.Locker, b *builds) *buildRun {
	unlock := h.lock(c)
	mu.Lock()
	run, wait := b.start(c)
	mu.Unlock()
	unlock()
	if wait != nil {
		<-wait
		return nil
	}
	return run
}

// abandon ends run, conversation c's build, with nothing installed.
func (b *builds) abandon(mu sync.Locker, c string, run *buildRun) {
	mu.Lock()
	defer mu.Unlock()
	b.finish(c, run, 0)
}
