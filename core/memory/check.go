package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// checkStored verifies every memory store against its items (engram
// check): each item's index entries and postings, each index entry's,
// posting's and embedding's item, the counters and the bottom of the imp
// index. It also reports the keys of a store that does not exist. A
// problem names the store and the key or item. It reads in one transaction.
func (m *Memory) checkStored(ctx context.Context) ([]string, error) {
	var problems []string
	err := m.env.Store.View(func(tx *storage.Tx) error {
		problems = nil
		states, err := checkStates(ctx, tx, &problems)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(states)) {
			if states[name] == nil {
				continue // unreadable, and reported
			}
			c := &storeCheck{ctx: ctx, tx: tx, s: &store{env: m.env, name: name}, st: states[name], seed: maphash.MakeSeed()}
			if err := c.run(); err != nil {
				return err
			}
			problems = append(problems, c.problems...)
		}
		return checkOrphans(tx, states, &problems)
	})
	return problems, err
}

// checkStates reads every store's state. One that cannot be decoded is a
// problem, and is in the map as nil: its items are not checked, nor
// reported as a missing store's.
func checkStates(ctx context.Context, tx *storage.Tx, problems *[]string) (map[string]*state, error) {
	states := map[string]*state{}
	err := tx.Scan(storage.Prefix(statePrefix()), func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var st state
		if err := json.Unmarshal(v, &st); err != nil {
			*problems = append(*problems, fmt.Sprintf("memory store at key %q: unreadable: %v", k, err))
			states[storage.LastPart(k)] = nil
			return nil
		}
		states[storage.LastPart(k)] = &st
		return nil
	})
	return states, err
}

// checkOrphans reports the stores that have items, embeddings, index
// entries or postings but no store record, one problem a store. It reads
// one key per store: each scan jumps from a store's keys to the next's.
func checkOrphans(tx *storage.Tx, states map[string]*state, problems *[]string) error {
	families := []struct {
		what   string
		prefix []byte
		// name is the store a key under prefix belongs to; under is the
		// prefix of all of a store's keys.
		name  func(k []byte) string
		under func(name string) []byte
	}{
		{"items", storage.PrefixKey(storage.PrefixMemory, "item"),
			func(k []byte) string { return keyPart(storage.PrefixMemory, k, 1) },
			itemPrefix},
		{"embeddings", storage.PrefixKey(storage.PrefixMemory, "vec"),
			func(k []byte) string { return keyPart(storage.PrefixMemory, k, 1) },
			func(n string) []byte { return storage.PrefixKey(storage.PrefixMemory, "vec", n) }},
		{"pending embeddings", storage.PrefixKey(storage.PrefixMemory, "embq"),
			func(k []byte) string { return keyPart(storage.PrefixMemory, k, 1) },
			func(n string) []byte { return storage.PrefixKey(storage.PrefixMemory, "embq", n) }},
		{"index entries", storage.PrefixKey(storage.PrefixIndex, "memory"),
			func(k []byte) string { return keyPart(storage.PrefixIndex, k, 1) },
			func(n string) []byte { return storage.PrefixKey(storage.PrefixIndex, "memory", n) }},
		{"postings", storage.Key(storage.PrefixIndex, "memory/"),
			func(k []byte) string {
				return strings.TrimPrefix(keyPart(storage.PrefixIndex, k, 0), "memory/")
			},
			func(n string) []byte { return storage.PrefixKey(storage.PrefixIndex, (&store{name: n}).index().Space) }},
	}
	orphans := map[string][]string{} // store → what it has
	for _, f := range families {
		start := f.prefix
		for {
			var key []byte
			err := tx.Keys(storage.Range{Prefix: f.prefix, Start: start}, func(k []byte) error {
				key = k
				return storage.ErrStop
			})
			if err != nil {
				return err
			}
			if key == nil {
				break
			}
			name := f.name(key)
			under := f.under(name)
			if !strings.HasPrefix(string(key), string(under)) {
				// Not a key of this layout at all: name it and step past it.
				*problems = append(*problems, fmt.Sprintf("memory: key %q is none of a store's %s", key, f.what))
				start = append(slices.Clone(key), 0)
				continue
			}
			if _, ok := states[name]; !ok {
				orphans[name] = append(orphans[name], f.what)
			}
			// Every key of the store is below under; under with its last
			// "/" made "0" is the first key past them.
			start = append(slices.Clone(under[:len(under)-1]), '/'+1)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(orphans)) {
		*problems = append(*problems, fmt.Sprintf("memory store %s: has %s but no store record", name, strings.Join(orphans[name], ", ")))
	}
	return nil
}

// keyPart is part i of a key after prefix ("" when it has fewer).
func keyPart(prefix string, k []byte, i int) string {
	if parts := storage.SplitKey(prefix, k); i < len(parts) {
		return parts[i]
	}
	return ""
}

// storeCheck checks one store. The first pass reads the items and sums a
// hash of the keys each one should have in the indexes; the second reads
// the index keys and sums the same hash of the keys that name each item.
// Only an item whose sums differ is looked at again, key by key, so the
// check holds no more than a few numbers per item.
type storeCheck struct {
	ctx   context.Context
	tx    *storage.Tx
	s     *store
	st    *state
	seed  maphash.Seed
	items map[string]*itemSums
	// unreadable are the ids of items that cannot be decoded (already
	// reported): their index entries are not reported again.
	unreadable map[string]bool
	// lost are, for each item that does not exist, the first key naming
	// it and how many do (not every key: a lost store would be large).
	lost map[string]*lostItem
	// What the items add up to, for the counters and the imp bottom.
	live, tokens, deleted, length int
	inLow                         map[string]bool
	n                             int // keys read, to look at ctx now and then
	problems                      []string
}

// lostItem is what names an item that does not exist.
type lostItem struct {
	first string
	keys  int
}

// lose notes that key k names item id, which does not exist.
func (c *storeCheck) lose(id string, k []byte) {
	if l := c.lost[id]; l != nil {
		l.keys++
		return
	}
	c.lost[id] = &lostItem{first: string(k), keys: 1}
}

// itemSums is what the check keeps of an item between its passes.
type itemSums struct {
	want, got uint64 // sums of the hashes of its index keys
}

// problem reports one inconsistency of the store.
func (c *storeCheck) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("memory store %s: ", c.s.name)+fmt.Sprintf(format, args...))
}

// tick returns ctx's error every so many keys: a check of a large store
// stops soon after it is cancelled.
func (c *storeCheck) tick() error {
	c.n++
	if c.n%1024 == 0 {
		return c.ctx.Err()
	}
	return nil
}

// run checks the store: items, then the keys naming them, then the totals,
// then, only for the items whose sums differ, which keys are wrong.
func (c *storeCheck) run() error {
	c.items, c.unreadable, c.lost, c.inLow = map[string]*itemSums{}, map[string]bool{}, map[string]*lostItem{}, map[string]bool{}
	if err := c.readItems(); err != nil {
		return err
	}
	err := c.readIndexes(func(k []byte, id string, ok bool) {
		switch sums := c.items[id]; {
		case !ok:
			c.problem("posting %q is malformed", k)
		case c.unreadable[id]:
			// Already reported: the item cannot be read.
		case sums == nil:
			c.lose(id, k)
		default:
			sums.got += maphash.Bytes(c.seed, k)
		}
	})
	if err != nil {
		return err
	}
	if err := c.readEmbeddings(); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(c.lost)) {
		l, more := c.lost[id], ""
		if l.keys > 1 {
			more = fmt.Sprintf(" (and %d more keys)", l.keys-1)
		}
		c.problem("item %s does not exist, but %q names it%s", id, l.first, more)
	}
	c.checkTotals()
	var stale []string
	for id, sums := range c.items {
		if sums.want != sums.got {
			stale = append(stale, id)
		}
	}
	return c.explain(stale)
}

// wantKeys are every index key and posting an item should have, and its
// length in terms (for total_length).
func (c *storeCheck) wantKeys(it *Item) ([][]byte, int) {
	keys := c.s.itemIndexKeys(it)
	counts, length := text.TermCounts(it.Text)
	for term, tf := range counts {
		keys = append(keys, c.postingKey(term, it.ID, attrOf(it), tf, length))
	}
	return keys, length
}

// postingKey is the key search.Index.Add writes for a term of a document
// (idx/<space>/t/<term>/<doc>.<attr><tf>.<length>); search keeps it to
// itself, and the check of a healthy store proves the two agree.
func (c *storeCheck) postingKey(term, doc string, attr byte, tf, length int) []byte {
	if attr == attrLive {
		attr = '-'
	}
	return storage.Key(storage.PrefixIndex, c.s.index().Space, "t", term, doc+"."+string(attr)+strconv.Itoa(tf)+"."+strconv.Itoa(length))
}

// postingDoc is the document a posting's last part names
// ("<doc>.<attr><tf>.<length>"; the doc may hold dots).
func postingDoc(last string) (string, bool) {
	j := strings.LastIndexByte(last, '.')
	if j < 0 {
		return "", false
	}
	i := strings.LastIndexByte(last[:j], '.')
	if i < 0 || j-i < 3 {
		return "", false
	}
	return last[:i], true
}

// readItems reads every item, sums the hashes of its keys and adds it to
// the totals.
func (c *storeCheck) readItems() error {
	return c.tx.Scan(storage.Prefix(itemPrefix(c.s.name)), func(k, v []byte) error {
		if err := c.tick(); err != nil {
			return err
		}
		var it Item
		id := storage.LastPart(k)
		if err := json.Unmarshal(v, &it); err != nil {
			c.problem("item at key %q: unreadable: %v", k, err)
			c.unreadable[id] = true
			return nil
		}
		if it.ID != id {
			c.problem("item at key %q says its id is %q", k, it.ID)
			c.unreadable[id] = true
			return nil
		}
		keys, n := c.wantKeys(&it)
		sums := &itemSums{}
		for _, key := range keys {
			sums.want += maphash.Bytes(c.seed, key)
		}
		c.items[it.ID] = sums
		c.length += n
		if it.Deleted {
			c.deleted++
			return nil
		}
		c.live++
		c.tokens += it.TokensEstimate
		sk := c.s.impSortKey(&it)
		if _, ok := slices.BinarySearch(c.st.ImpLow, sk); ok {
			c.inLow[sk] = true
		} else if sk < c.st.ImpFrom {
			c.problem("item %s is below imp_from but not in imp_low: eviction would never reach it", it.ID)
		}
		return nil
	})
}

// checkTotals compares the store's counters and the bottom of its imp
// index (bottom.go) with its items.
func (c *storeCheck) checkTotals() {
	// An item that cannot be read, or that is gone, cannot be counted:
	// the problem already reported explains the difference, so the
	// counters are only compared when every item could be read.
	if len(c.unreadable) == 0 && len(c.lost) == 0 {
		for _, f := range []struct {
			what        string
			said, found int
		}{
			{"live items", c.st.ItemCount, c.live},
			{"tokens of live items", c.st.TokenUsage, c.tokens},
			{"forgotten items", c.st.Deleted, c.deleted},
			{"indexed items", c.st.Docs, len(c.items)},
			{"terms of indexed items", c.st.TotalLength, c.length},
		} {
			if f.said != f.found {
				c.problem("counts %d %s, holds %d", f.said, f.what, f.found)
			}
		}
	}
	if !slices.IsSorted(c.st.ImpLow) || len(c.st.ImpLow) > maxImpLow {
		c.problem("imp_low is out of order or longer than %d", maxImpLow)
	}
	for _, sk := range c.st.ImpLow {
		id := storage.LastPart([]byte(sk))
		switch {
		case c.unreadable[id] || c.lost[id] != nil:
			// Already reported.
		case !c.inLow[sk]:
			c.problem("imp_low names %q, which is not a live item", sk)
		case sk >= c.st.ImpFrom:
			c.problem("imp_low names %q, which is not below imp_from %q", sk, c.st.ImpFrom)
		}
	}
}

// readIndexes calls fn with every index key and posting of the store and
// the id of the item it names; ok is false for a posting that names none.
func (c *storeCheck) readIndexes(fn func(k []byte, id string, ok bool)) error {
	err := c.tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "memory", c.s.name)), func(k []byte) error {
		fn(k, storage.LastPart(k), true)
		return c.tick()
	})
	if err != nil {
		return err
	}
	return c.tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, c.s.index().Space, "t")), func(k []byte) error {
		id, ok := postingDoc(storage.LastPart(k))
		fn(k, id, ok)
		return c.tick()
	})
}

// explain says which keys of the items whose sums differ are missing or
// stale: it reads those items again and, in one more pass, the index keys
// naming them. A healthy store never gets here.
func (c *storeCheck) explain(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	want := map[string]map[string]bool{}
	for _, id := range ids {
		it, err := c.s.get(c.tx, id)
		if err != nil {
			return err
		}
		keys, _ := c.wantKeys(it)
		want[id] = map[string]bool{}
		for _, k := range keys {
			want[id][string(k)] = true
		}
	}
	extra := map[string][]string{}
	err := c.readIndexes(func(k []byte, id string, ok bool) {
		if w := want[id]; ok && w != nil {
			if w[string(k)] {
				delete(w, string(k))
			} else {
				extra[id] = append(extra[id], string(k))
			}
		}
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		for _, k := range slices.Sorted(maps.Keys(want[id])) {
			c.problem("item %s is missing its index entry %q", id, k)
		}
		for _, k := range extra[id] {
			c.problem("index entry %q names item %s but does not match it (stale)", k, id)
		}
	}
	return nil
}

// readEmbeddings finds the embeddings of items that do not exist, and
// those that do not read whole; then the pending embeddings (markers of
// texts waiting for their vector) of items that do not exist, and those
// that do not read or name another item's keys.
func (c *storeCheck) readEmbeddings() error {
	for _, kind := range []struct {
		part  string
		check func(id string, v []byte) error
		what  string
	}{
		{"vec", func(_ string, v []byte) error { return embed.CheckRecord(v) }, "embedding %q of item %s is unreadable: %v"},
		{"embq", func(id string, v []byte) error {
			return embed.CheckMarker(v, itemKey(c.s.name, id), vecKey(c.s.name, id))
		}, "pending embedding %q of item %s: %v"},
	} {
		err := c.tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixMemory, kind.part, c.s.name)), func(k, v []byte) error {
			if err := c.tick(); err != nil {
				return err
			}
			switch id := storage.LastPart(k); {
			case c.unreadable[id]:
			case c.items[id] == nil:
				c.lose(id, k)
			default:
				if err := kind.check(id, v); err != nil {
					c.problem(kind.what, k, id, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
