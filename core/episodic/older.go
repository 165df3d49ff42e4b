package episodic

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/storage"
)

// Threads older than the MaxCandidates most recent are candidates too when
// a search of the new message finds them (issue 18: linking shares the
// hybrid retrieval): "Remember when we talked about the Lisbon flat?" can
// link to a thread from months ago, however many threads came since.
//
// The search runs over one in-memory retrieval.Index of every thread
// beyond the MaxCandidates most recently active ones of all principals (a
// principal's older threads are among them: at least MaxCandidates
// threads it may read, and so at least as many of all, are more recent).
// Its documents are the candidates' text (title and last turns, as
// candidates reads them), cached by thread and last activity, so that a
// thread's turns are read once, not on every new thread. A search keeps
// only the threads the principal may read that are not already
// candidates. (The index's term statistics count every older thread,
// those the principal may not read too: they weigh which threads come
// first, and a decision records the terms matched, never the scores.)
//
// The index is always what retrieval.Build would make of those threads,
// oldest first — whatever ran before — so decisions depend on the store
// alone (a script with `at` prints the same bytes on every run, and after
// a restart). Most new threads push one thread out of the most recent,
// the newest of the older ones: it is appended (Index.Add ranks exactly
// as Build). Anything else (an old thread continued, or a message that
// left its last activity where it was) builds the index again from the
// cached documents.

// DefaultMaxSearched is how many older threads a search adds to a new
// thread's candidates by default (Options.MaxSearched).
const DefaultMaxSearched = 5

// Found says why a thread older than the most recent ones was a linking
// candidate: a search of the new message over the older threads found it.
type Found struct {
	// By is how it was found: "search".
	By string `json:"by"`
	// Rank is its place among the older threads found, from 1.
	Rank int `json:"rank"`
	// Terms are the words of the message (stems, as the search matched
	// them) the thread holds, or thesaurus words standing for them.
	Terms []FoundTerm `json:"terms"`
	// Windows are the message's time expressions the thread's last
	// activity is inside ("last summer").
	Windows []string `json:"windows,omitempty"`
}

// FoundTerm is a term a search matched in an older thread.
type FoundTerm struct {
	Term string `json:"term"`
	// SynonymOf is, for a thesaurus word, the message's term it stands
	// for.
	SynonymOf string `json:"synonym_of,omitempty"`
}

// FoundBySearch is Found.By for a thread a search found.
const FoundBySearch = "search"

// olderDoc is a cached candidate document of an older thread.
type olderDoc struct {
	at            time.Time // the thread's last activity it was read at
	text, summary string    // as candidates reads them
}

// olderKey names an older thread in the activity index.
type olderKey struct {
	id string
	at time.Time
}

// olderIndex is the searchable index of the older threads and the cache of
// their documents.
type olderIndex struct {
	mu   sync.Mutex
	docs map[string]olderDoc
	// ix holds keys' documents, in this order (oldest first); nil when
	// none is built.
	ix   *retrieval.Index
	keys []olderKey
	// stale: a thread of the index changed without its last activity
	// moving (two messages at one instant): build again.
	stale bool
	// builds counts the indexes built from scratch (for tests and the
	// benchmark: appends do not count).
	builds int
	// writes counts the messages committed (Message notes each, under
	// its lock): only they move threads in the activity index. all is
	// that index (every thread's last activity, oldest first) as of
	// allAt committed messages: scanned once, then moved by each commit
	// (written), so that a new thread does not scan it again (a
	// key-only read of the whole index: ~7 ms at 2,000 threads whose
	// keys moved 20,000 times, BenchmarkNewThreadLinkingOlder2000). nil
	// until the first search.
	writes, allAt uint64
	all           []olderKey
}

func newOlderIndex() *olderIndex { return &olderIndex{docs: map[string]olderDoc{}} }

// written notes a committed message: thread id is now last active at at.
// When it continued a thread (continued), the thread's cached text no
// longer holds its last turns, even when its last activity stayed where
// it was.
func (o *olderIndex) written(id string, at time.Time, continued bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.all != nil && o.allAt == o.writes {
		// Moved where the commit put it; removing any entry of id first
		// makes this right even when a scan already saw the commit.
		o.all = slices.DeleteFunc(o.all, func(k olderKey) bool { return k.id == id })
		k := olderKey{id: id, at: at.Round(0).UTC()}
		i, _ := slices.BinarySearchFunc(o.all, k, compareKeys)
		o.all = slices.Insert(o.all, i, k)
		o.allAt++
	}
	o.writes++
	if _, ok := o.docs[id]; ok && continued {
		delete(o.docs, id)
		o.stale = true
	}
}

// compareKeys orders keys as the activity index does: by time, then id.
func compareKeys(a, b olderKey) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// generation is the count of messages committed, read before a plan's
// transaction starts: that transaction sees at least those writes.
func (o *olderIndex) generation() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.writes
}

// searchOlder finds up to e.opts.MaxSearched threads principal may read,
// beyond the recent ones (already candidates), that share a word of the
// message (or a thesaurus word), best first, each read as a candidate with
// why it was found.
//
// gen is the olderIndex's generation read before tx started.
func (e *Episodic) searchOlder(tx *storage.Tx, gen uint64, principal, message string, recent []*Thread, now time.Time) ([]candidate, error) {
	if e.opts.MaxSearched <= 0 || len(recent) < e.opts.MaxCandidates {
		return nil, nil // every thread principal may read is a candidate already
	}
	query := contentWords(message)
	if query == "" {
		return nil, nil
	}
	o := e.older
	o.mu.Lock()
	defer o.mu.Unlock()
	// The activity index as this transaction reads it: the one kept in
	// memory when no message committed since the transaction began,
	// else scanned (and kept when no commit came meanwhile).
	all := o.all
	if all == nil || o.allAt != o.writes || gen != o.writes {
		var err error
		if all, err = activityKeys(tx); err != nil {
			return nil, err
		}
		if gen == o.writes {
			o.all, o.allAt = all, gen
		}
	}
	keys := all[:max(len(all)-e.opts.MaxCandidates, 0)]
	if len(keys) == 0 {
		return nil, nil
	}
	if err := o.sync(tx, keys); err != nil {
		return nil, err
	}
	isRecent := map[string]bool{}
	for _, t := range recent {
		isRecent[t.ID] = true
	}
	readable := map[int]bool{}
	var readErr error
	keep := func(d int) bool {
		ok, seen := readable[d]
		if !seen {
			id := o.keys[d].id
			if !isRecent[id] {
				var err error
				if ok, err = canRead(tx, principal, id); err != nil && readErr == nil {
					readErr = err
				}
			}
			readable[d] = ok
		}
		return ok
	}
	results, err := o.ix.Search(retrieval.Query{Text: query, When: message, Now: now, Limit: e.opts.MaxSearched, Keep: keep, Matched: true})
	if err != nil || readErr != nil {
		// A message of more words than a search takes finds nothing
		// older; the recent threads are still its candidates.
		return nil, readErr
	}
	var out []candidate
	for i, res := range results {
		k := o.keys[res.Index]
		t, err := loadThread(tx, k.id)
		if errs.KindOf(err) == errs.NotFound {
			continue // a damaged store's stale entry (engram check reports it)
		} else if err != nil {
			return nil, err
		}
		doc := o.docs[k.id]
		f := &Found{By: FoundBySearch, Rank: i + 1, Terms: []FoundTerm{}, Windows: res.Why.Windows}
		for _, m := range res.Why.Terms {
			ft := FoundTerm{Term: m.Term, SynonymOf: m.SynonymOf}
			if !slices.Contains(f.Terms, ft) {
				f.Terms = append(f.Terms, ft)
			}
		}
		out = append(out, candidate{thread: t, text: doc.text, summary: doc.summary, found: f})
	}
	return out, nil
}

// activityKeys are every thread's key in the activity index, oldest
// first. The scan runs forwards, which Badger does several times faster
// than backwards.
func activityKeys(tx *storage.Tx) ([]olderKey, error) {
	var out []olderKey
	err := tx.Keys(storage.Prefix(activityPrefix()), func(k []byte) error {
		at, id, err := parseActivityKey(k)
		if err != nil {
			return err
		}
		out = append(out, olderKey{id: id, at: at})
		return nil
	})
	return out, err
}

// parseActivityKey reads a thread's last activity and id from its key in
// the activity index.
func parseActivityKey(k []byte) (time.Time, string, error) {
	rest := strings.TrimPrefix(string(k), string(activityPrefix()))
	stamp, _, _ := strings.Cut(rest, "/")
	at, err := storage.ParseTime(stamp)
	return at, storage.LastPart(k), err
}

// sync brings the index to keys (oldest first): appending the newest when
// that is all that changed, else building it again from the cached
// documents (reading those not cached).
func (o *olderIndex) sync(tx *storage.Tx, keys []olderKey) error {
	appendOnly := o.ix != nil && !o.stale && len(keys) >= len(o.keys) && slices.EqualFunc(keys[:len(o.keys)], o.keys, func(a, b olderKey) bool { return compareKeys(a, b) == 0 })
	if appendOnly && len(keys) == len(o.keys) {
		return nil
	}
	from := 0
	if appendOnly {
		from = len(o.keys)
	}
	docs := make([]retrieval.Doc, 0, len(keys)-from)
	for _, k := range keys[from:] {
		d, err := o.doc(tx, k)
		if err != nil {
			return err
		}
		docs = append(docs, retrieval.Doc{ID: k.id, Session: k.id, Time: k.at, Text: d.text})
	}
	if appendOnly {
		o.ix = o.ix.Add(docs...)
	} else {
		o.ix = retrieval.Build(docs, retrieval.DefaultParams)
		o.builds++
		// Keep only what the index holds: a thread continued since is
		// read again when it is older again.
		held := map[string]bool{}
		for _, k := range keys {
			held[k.id] = true
		}
		for id := range o.docs {
			if !held[id] {
				delete(o.docs, id)
			}
		}
	}
	o.keys, o.stale = slices.Clone(keys), false
	return nil
}

// doc is an older thread's candidate document: the cached one when it was
// read at this last activity, else read now (and cached).
func (o *olderIndex) doc(tx *storage.Tx, k olderKey) (olderDoc, error) {
	if d, ok := o.docs[k.id]; ok && d.at.Equal(k.at) {
		return d, nil
	}
	t, err := loadThread(tx, k.id)
	if errs.KindOf(err) == errs.NotFound {
		// A damaged store's stale entry (engram check reports it): an
		// empty document, which no search finds.
		return olderDoc{at: k.at}, nil
	} else if err != nil {
		return olderDoc{}, err
	}
	c, err := candidateOf(tx, t)
	if err != nil {
		return olderDoc{}, err
	}
	d := olderDoc{at: k.at, text: c.text, summary: c.summary}
	o.docs[k.id] = d
	return d, nil
}

// contentWords is the message without the words that say nothing of its
// subject (filler such as "remember" and "talked", and words about time),
// which the search looks for: an older thread must share a real word.
func contentWords(message string) string {
	words := strings.FieldsFunc(message, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’' && r != '-'
	})
	var keep []string
	for _, w := range words {
		lower := strings.ToLower(strings.Trim(w, "'’-"))
		if lower == "" || filler[lower] || isTimeWord(lower) {
			continue
		}
		keep = append(keep, w)
	}
	return strings.Join(keep, " ")
}
