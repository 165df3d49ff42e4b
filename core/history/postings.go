package history

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/engram-console/engram/storage"
)

// The search postings in memory: a cache of the posting keys in the store
// (idx/history/t/<conv>/<term>/..., which stay the truth), so that a
// search reads a term's postings from an array instead of scanning one key
// per utterance that holds it — a common word in a million utterances is
// hundreds of thousands of keys.
//
// Each conversation carries an index version (Conversation.IndexVersion),
// raised in the same transaction as every change to its postings. A cached
// index says which version it holds; a search uses it only when that is
// the version its own transaction reads, and otherwise scores from the
// store as before. A change is applied to the cache after it commits, and
// only on top of the version it was made on; any other change (a drop, a
// move, a change the cache missed) throws the conversation's index away,
// and the next search builds it again from the store. So the cache never
// answers for data it does not hold, whoever wrote the store.
//
// This layer only keeps postings; scoring (search.go) reads them through
// termPostings, as it reads the store's.

// postingIndex holds the cached indexes of conversations by name.
type postingIndex struct {
	mu    sync.RWMutex
	convs map[string]*convIndex
	// builds counts the indexes read from the store (for tests: a change
	// is applied, not rebuilt).
	builds atomic.Int64
	// inflight are the builds under way (catchup.go), under mu.
	inflight builds
	// afterSnapshot (tests) runs in a build once it has read the
	// postings, before it installs them.
	afterSnapshot func(c string)
}

func newPostingIndex() *postingIndex { return &postingIndex{convs: map[string]*convIndex{}} }

// convIndex is one conversation's postings at one index version.
type convIndex struct {
	version uint64
	// speaker and length are per utterance index (0 and 0 when it has no
	// postings): every posting of an utterance carries the same ones.
	speaker []byte
	length  []uint32
	terms   map[string]*postingList
}

// postingList is a term's postings, by ascending utterance index: ids[i]
// holds the term tf(i) times.
type postingList struct {
	ids []uint32
	tfs []uint8
	// big holds the term frequencies over 255, by utterance index (tfs
	// says 255 for them).
	big map[uint32]int
	// maxTF and minLength bound the list's scores (BM25 grows with the
	// term's count and falls with the utterance's length): at least the
	// highest count and at most the shortest length of any posting it ever
	// held, so that a search can skip what cannot reach its best.
	maxTF     int
	minLength uint32
	// blockTF and blockLength bound each block of blockSize postings
	// (ids[b*blockSize:(b+1)*blockSize]) the same way, so that a search
	// can skip a block at a time.
	blockTF     []uint32
	blockLength []uint32
}

// blockSize is how many postings a block's bounds cover.
const blockSize = 64

// appended extends the block bounds to the posting just appended.
func (l *postingList) appended(tf int, length uint32) {
	i := len(l.ids) - 1
	if b := i / blockSize; b == len(l.blockTF) {
		l.blockTF = append(l.blockTF, uint32(min(tf, math.MaxUint32)))
		l.blockLength = append(l.blockLength, length)
	} else {
		l.blockTF[b] = max(l.blockTF[b], uint32(min(tf, math.MaxUint32)))
		l.blockLength[b] = min(l.blockLength[b], length)
	}
}

// reblock works the block bounds out again, after postings moved
// (an insert or a delete in the middle).
func (ix *convIndex) reblock(l *postingList) {
	l.blockTF, l.blockLength = l.blockTF[:0], l.blockLength[:0]
	ids := l.ids
	l.ids = l.ids[:0]
	for i, id := range ids {
		l.ids = l.ids[:i+1]
		l.appended(l.tf(i), ix.length[id])
	}
}

// bound records a posting's count and length in the list's bounds.
func (l *postingList) bound(tf int, length uint32) {
	if len(l.ids) == 0 && l.maxTF == 0 {
		l.minLength = length
	}
	l.maxTF = max(l.maxTF, tf)
	l.minLength = min(l.minLength, length)
}

func (l *postingList) tf(i int) int {
	if l.tfs[i] == 255 && l.big != nil {
		if n, ok := l.big[l.ids[i]]; ok {
			return n
		}
	}
	return int(l.tfs[i])
}

// indexChange is what a write (add) or a delete (!add) did to a
// conversation's postings: utterance index's terms and their counts.
type indexChange struct {
	add     bool
	index   int
	speaker byte
	length  int
	counts  map[string]int
	// u is the utterance written (add), for the hybrid index.
	u *Utterance
}

// lookup returns conversation c's index if it holds version v, with the
// read lock held (the caller calls done when it has read it), or nil.
func (p *postingIndex) lookup(c string, v uint64) (ix *convIndex, done func()) {
	p.mu.RLock()
	ix = p.convs[c]
	if ix == nil || ix.version != v {
		p.mu.RUnlock()
		return nil, nil
	}
	return ix, p.mu.RUnlock
}

// has says whether conversation c's index is cached at version v.
func (p *postingIndex) has(c string, v uint64) bool {
	ix, done := p.lookup(c, v)
	if ix != nil {
		done()
	}
	return ix != nil
}

// install keeps ix, read from a snapshot by run, as conversation c's
// index once it has caught up with the changes committed since (see
// catchup.go), unless one as new is there.
func (p *postingIndex) install(c string, run *buildRun, ix *convIndex) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.builds.Add(1)
	chain, ok := p.inflight.finish(c, run, ix.version)
	if !ok {
		return
	}
	for _, vc := range chain {
		if !ix.replay(vc.changes) {
			return
		}
		ix.version = vc.to
	}
	if old := p.convs[c]; old == nil || old.version < ix.version {
		p.convs[c] = ix
	}
}

// forget throws conversation c's index away, and any being built.
func (p *postingIndex) forget(c string) {
	p.mu.Lock()
	p.inflight.breakRun(c)
	delete(p.convs, c)
	p.mu.Unlock()
}

// apply brings conversation c's index from version from to version to
// with the changes a commit made. An index at another version is thrown
// away (the next search rebuilds it). Only the search of a conversation
// too large for a hybrid index (searchPlain) reads these postings, so a
// conversation created by the commit (fresh) starts none: a
// conversation's first plain search reads them from the store.
func (p *postingIndex) apply(c string, from, to uint64, _ bool, changes []indexChange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight.record(c, from, to, changes...)
	ix := p.convs[c]
	switch {
	case ix == nil:
		return
	case to <= ix.version:
		return // already in: a build read or replayed it first
	case ix.version != from:
		delete(p.convs, c)
		return
	}
	if !ix.replay(changes) {
		delete(p.convs, c)
		return
	}
	ix.version = to
}

// replay makes a commit's changes to the postings, unless one is past
// what the arrays hold (then searches read the store, and replay says
// false having changed nothing).
func (ix *convIndex) replay(changes []indexChange) bool {
	for _, ch := range changes {
		if uint64(ch.index) > math.MaxUint32 {
			return false
		}
	}
	for _, ch := range changes {
		if ch.add {
			ix.add(ch)
		} else {
			ix.remove(ch)
		}
	}
	return true
}

// add records an utterance's postings.
func (ix *convIndex) add(ch indexChange) {
	ix.setDoc(ch.index, ch.speaker, ch.length)
	for term, tf := range ch.counts {
		ix.addPosting(term, uint32(ch.index), tf, uint32(ch.length))
	}
}

func (ix *convIndex) setDoc(i int, speaker byte, length int) {
	if i >= len(ix.length) {
		n := max(i+1, 2*len(ix.length))
		ix.length = slices.Grow(ix.length, n-len(ix.length))[:n]
		ix.speaker = slices.Grow(ix.speaker, n-len(ix.speaker))[:n]
	}
	ix.speaker[i], ix.length[i] = speaker, uint32(length)
}

func (ix *convIndex) addPosting(term string, id uint32, tf int, length uint32) {
	l := ix.terms[term]
	if l == nil {
		l = &postingList{}
		ix.terms[term] = l
	}
	l.bound(tf, length)
	small := uint8(min(tf, 255))
	if tf >= 255 {
		if l.big == nil {
			l.big = map[uint32]int{}
		}
		l.big[id] = tf
	}
	if n := len(l.ids); n == 0 || l.ids[n-1] < id {
		// Writes add the newest utterance: an append.
		l.ids = append(l.ids, id)
		l.tfs = append(l.tfs, small)
		l.appended(tf, length)
		return
	}
	at, found := slices.BinarySearch(l.ids, id)
	if found {
		l.tfs[at] = small
	} else {
		l.ids = slices.Insert(l.ids, at, id)
		l.tfs = slices.Insert(l.tfs, at, small)
	}
	ix.reblock(l)
}

// remove takes an utterance's postings out.
func (ix *convIndex) remove(ch indexChange) {
	id := uint32(ch.index)
	for term := range ch.counts {
		l := ix.terms[term]
		if l == nil {
			continue
		}
		at, found := slices.BinarySearch(l.ids, id)
		if !found {
			continue
		}
		l.ids = slices.Delete(l.ids, at, at+1)
		l.tfs = slices.Delete(l.tfs, at, at+1)
		delete(l.big, id)
		if len(l.ids) == 0 {
			delete(ix.terms, term)
			continue
		}
		ix.reblock(l)
	}
	if ch.index < len(ix.length) {
		ix.speaker[ch.index], ix.length[ch.index] = 0, 0
	}
}

// errTooLarge stops building an index of utterance indexes past 2^32.
var errTooLarge = errors.New("utterance index past what the postings in memory hold")

// buildIndex reads conversation c's postings from the store into an index
// of version v (the version tx reads); nil when they cannot be held in
// memory (searches then read the store).
func buildIndex(tx *storage.Tx, c string, v uint64) (*convIndex, error) {
	ix := &convIndex{version: v, terms: map[string]*postingList{}}
	prefix := storage.PrefixKey(storage.PrefixIndex, "history", "t", c)
	var (
		lastTerm []byte
		list     *postingList
	)
	err := tx.Keys(storage.Prefix(prefix), func(k []byte) error {
		rest := k[len(prefix):]
		slash := bytes.LastIndexByte(rest, '/')
		if slash < 0 {
			return nil // not a posting (check reports it)
		}
		if list == nil || !bytes.Equal(rest[:slash], lastTerm) {
			lastTerm = append(lastTerm[:0], rest[:slash]...)
			term := string(lastTerm)
			if strings.Contains(term, "%") {
				term = storage.SplitKey("", []byte(term))[0]
			}
			list = ix.terms[term]
			if list == nil {
				list = &postingList{}
				ix.terms[term] = list
			}
		}
		i, p, err := parsePosting(string(rest[slash+1:]))
		if err != nil {
			return err
		}
		if uint64(i) > math.MaxUint32 {
			return errTooLarge
		}
		ix.setDoc(i, p.speaker, p.dl)
		list.bound(p.tf, uint32(p.dl))
		// Keys come in order of their index (16 hex digits).
		list.ids = append(list.ids, uint32(i))
		list.tfs = append(list.tfs, uint8(min(p.tf, 255)))
		if p.tf >= 255 {
			if list.big == nil {
				list.big = map[uint32]int{}
			}
			list.big[uint32(i)] = p.tf
		}
		return nil
	})
	if errors.Is(err, errTooLarge) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	for _, l := range ix.terms {
		if !sort.SliceIsSorted(l.ids, func(a, b int) bool { return l.ids[a] < l.ids[b] }) {
			// Never with keys as written; a store edited by hand is
			// still read right.
			sortList(l)
		}
		ix.reblock(l)
		if cap(l.ids) > len(l.ids)+len(l.ids)/4 {
			// Grown by appending: up to twice what it holds.
			l.ids, l.tfs = slices.Clone(l.ids), slices.Clone(l.tfs)
		}
	}
	return ix, nil
}

func sortList(l *postingList) {
	idx := make([]int, len(l.ids))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return l.ids[idx[a]] < l.ids[idx[b]] })
	ids, tfs := make([]uint32, len(idx)), make([]uint8, len(idx))
	for j, i := range idx {
		ids[j], tfs[j] = l.ids[i], l.tfs[i]
	}
	l.ids, l.tfs = ids, tfs
}
