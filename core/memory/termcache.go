package memory

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/storage"
)

// The postings of recalled terms, kept in memory: a cache of the posting
// keys (idx/memory/<store>/t/<term>/..., which stay the truth), so that
// remembering reads a common term's list from an array instead of
// scanning one key per item that holds it — tens of thousands in a store
// of a million.
//
// Every change to a store's postings writes its state (counters) in the
// same transaction, so the state key's commit version (storage
// Tx.Version) names the postings a snapshot holds. A cached list is used
// only by a read-only transaction that reads the version the list was read
// at; any other reads the store, and keeps what it read if its version is
// the newest seen. So the cache never answers for data it does not hold,
// whoever wrote the store (another engram, a later backend).

// termCacheLimit bounds the postings cached per engine (about 64 bytes
// each): past it, the cache starts over.
const termCacheLimit = 4_000_000

// termCache holds the cached postings of an engine's stores.
type termCache struct {
	mu     sync.Mutex
	stores map[string]*storeTerms
	size   int // postings held, over every store
}

// storeTerms are one store's cached lists, all read at one version.
type storeTerms struct {
	version uint64
	terms   map[string][]search.Posting
}

// termCaches holds each engine's cache; Register adds it, and closing the
// engine drops it.
var termCaches sync.Map // *kit.Env → *termCache

// registerTermCache gives env a cache, dropped when env closes.
func registerTermCache(env *kit.Env) {
	termCaches.Store(env, &termCache{stores: map[string]*storeTerms{}})
	env.OnClose(func() error { termCaches.Delete(env); return nil })
}

// termCacheOff, set by tests, makes every read go to the store.
var termCacheOff atomic.Bool

// postings returns a function giving a term's postings in s as tx reads
// them, sorted by item (search.SortPostings): from the cache when it holds them at tx's version, else from the
// store (and then cached when that version is the newest).
func (s *store) postings(tx *storage.Tx) (func(term string) ([]search.Posting, error), error) {
	return s.cached(tx, "", func(term string) ([]search.Posting, error) { return s.index().Postings(tx, term) })
}

// tagPostings returns a function giving the items holding a tag (all of
// it, lower case), as postings of the tag field: each item holds it once,
// with no length (search.TermList.Flat) and no mark of deletion; sorted
// by item, and cached as postings are (the tag index changes only with
// the store's state).
func (s *store) tagPostings(tx *storage.Tx) (func(tag string) ([]search.Posting, error), error) {
	return s.cached(tx, "\x00tag\x00", func(tag string) ([]search.Posting, error) {
		var list []search.Posting
		err := tx.Keys(storage.Prefix(idxPrefix(s.name, "tag", tag)), func(k []byte) error {
			list = append(list, search.Posting{Doc: strings.Clone(storage.LastPart(k)), TF: 1})
			return nil
		})
		return list, err
	})
}

// forgottenScans counts the scans of a store's soft-forgotten items
// (tests: a recall reads them once per version of the store).
var forgottenScans atomic.Int64

// forgottenItems are the ids of s's soft-forgotten items as tx reads
// them, as postings sorted by item: cached as postings are (they change
// only with the store's state).
func (s *store) forgottenItems(tx *storage.Tx) ([]search.Posting, error) {
	read, err := s.cached(tx, "\x00del\x00", func(string) ([]search.Posting, error) {
		forgottenScans.Add(1)
		var list []search.Posting
		err := tx.Keys(storage.Prefix(idxPrefix(s.name, "del", "time")), func(k []byte) error {
			list = append(list, search.Posting{Doc: storage.LastPart(k)})
			return nil
		})
		return list, err
	})
	if err != nil {
		return nil, err
	}
	return read("")
}

// cached is read (a list by key) sorted by item, through the cache under
// the keys prefixed with space.
func (s *store) cached(tx *storage.Tx, space string, read func(key string) ([]search.Posting, error)) (func(key string) ([]search.Posting, error), error) {
	fromStore := func(key string) ([]search.Posting, error) {
		list, err := read(key)
		search.SortPostings(list)
		return list, err
	}
	c, _ := termCaches.Load(s.env)
	cache, _ := c.(*termCache)
	if cache == nil || termCacheOff.Load() {
		return fromStore, nil
	}
	version, ok, err := tx.Version(stateKey(s.name))
	if err != nil || !ok {
		return fromStore, err
	}
	return func(key string) ([]search.Posting, error) {
		if list, ok := cache.get(s.name, version, space+key); ok {
			return list, nil
		}
		list, err := fromStore(key)
		if err == nil {
			cache.put(s.name, version, space+key, list)
		}
		return list, err
	}, nil
}

// get returns store's list of term at version, if cached.
func (c *termCache) get(store string, version uint64, term string) ([]search.Posting, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stores[store]
	if st == nil || st.version != version {
		return nil, false
	}
	list, ok := st.terms[term]
	return list, ok
}

// put caches store's list of term read at version, unless a newer
// version's lists are cached; an older version's lists go.
func (c *termCache) put(store string, version uint64, term string, list []search.Posting) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stores[store]
	switch {
	case st != nil && st.version > version:
		return
	case st == nil || st.version < version:
		if st != nil {
			for _, l := range st.terms {
				c.size -= len(l)
			}
		}
		st = &storeTerms{version: version, terms: map[string][]search.Posting{}}
		c.stores[store] = st
	}
	if _, ok := st.terms[term]; ok {
		return
	}
	if c.size+len(list) > termCacheLimit {
		c.stores, c.size = map[string]*storeTerms{store: st}, 0
		st.terms = map[string][]search.Posting{}
		if len(list) > termCacheLimit {
			return
		}
	}
	st.terms[term] = list
	c.size += len(list)
}
