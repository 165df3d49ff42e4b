package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// checkStored verifies what the history stored (engram check): each
// conversation's where record against its state, its counters against its
// utterances, its summary and pending folds against its evictions, and its
// search postings and vectors against its utterances, both ways. It also
// reports keys of a conversation that has no state. A problem names the
// conversation and the record.
func (h *History) checkStored(ctx context.Context) ([]string, error) {
	ck := &checker{ctx: ctx}
	engine := h.env.Store
	var wheres map[string]string
	err := engine.View(func(tx *storage.Tx) error {
		var err error
		if wheres, err = ck.readWheres(tx); err != nil {
			return err
		}
		// The engine's store holds the durable backend, and the in-memory
		// one too when engram runs in memory.
		holds := func(backend string) bool {
			return backend == BackendDurable || (backend == BackendInMemory && engine.InMemory())
		}
		for _, c := range slices.Sorted(maps.Keys(wheres)) {
			if backend := wheres[c]; !holds(backend) {
				continue
			}
			if ok, err := tx.Has(convKey(c)); err != nil {
				return err
			} else if !ok {
				ck.problem(c, "its where record names the %s backend, which holds no conversation %s", wheres[c], c)
			}
		}
		return ck.checkStore(tx, engine.InMemory(), wheres)
	})
	if err != nil {
		return ck.problems, err
	}
	// A separate in-memory store exists only once this process used it;
	// a conversation missing from it was lost at a restart, as that
	// backend says, so only what it holds is checked.
	h.stores.mu.Lock()
	memory := h.stores.memory
	h.stores.mu.Unlock()
	if memory != nil && memory != engine {
		err = memory.View(func(tx *storage.Tx) error { return ck.checkStore(tx, true, wheres) })
	}
	return ck.problems, err
}

// checker gathers the problems of one check.
type checker struct {
	ctx      context.Context
	problems []string
}

func (ck *checker) problem(c, format string, args ...any) {
	ck.problems = append(ck.problems, fmt.Sprintf("conversation %s: ", c)+fmt.Sprintf(format, args...))
}

// readWheres reads every where record of the engine's store.
func (ck *checker) readWheres(tx *storage.Tx) (map[string]string, error) {
	wheres := map[string]string{}
	err := tx.Scan(storage.Prefix(wherePrefix()), func(k, v []byte) error {
		if err := ck.ctx.Err(); err != nil {
			return err
		}
		c, backend := storage.LastPart(k), string(v)
		if backend != BackendDurable && backend != BackendInMemory {
			// Kept, so that its conversation is not also reported as
			// having no where record.
			ck.problem(c, "its where record %q names no backend: %q", k, backend)
		}
		wheres[c] = backend
		return nil
	})
	return wheres, err
}

// checkStore checks every conversation stored in one store (inMemory: the
// store of the in-memory backend), and the keys of conversations it holds
// no state for.
func (ck *checker) checkStore(tx *storage.Tx, inMemory bool, wheres map[string]string) error {
	here := BackendDurable
	if inMemory {
		here = BackendInMemory
	}
	known := map[string]bool{}
	err := tx.Scan(storage.Prefix(storage.PrefixKey(storage.PrefixHistory, "conv")), func(k, v []byte) error {
		if err := ck.ctx.Err(); err != nil {
			return err
		}
		c := storage.LastPart(k)
		known[c] = true
		var conv Conversation
		if err := json.Unmarshal(v, &conv); err != nil {
			ck.problem(c, "its state %q is unreadable: %v", k, err)
			return nil
		}
		switch where, ok := wheres[c]; {
		case !ok && here == BackendDurable:
			// Written before a conversation's first write recorded its
			// backend in the same transaction (a kill could come between
			// the two): it reads from the durable backend, the default.
		case !ok:
			ck.problem(c, "stored in the %s backend, but no where record names its backend", here)
		case where != BackendDurable && where != BackendInMemory:
			// Reported with the where record.
		case where != here:
			// What an interrupted move leaves behind: a copy the history
			// never reads, and the next move into this backend clears
			// first. Dead data, not damage.
			return nil
		case conv.Backend != where:
			ck.problem(c, "its state says backend %s, its where record %s", conv.Backend, where)
		}
		return ck.checkConversation(tx, c, &conv)
	})
	if err != nil {
		return err
	}
	return ck.checkOrphans(tx, known)
}

// checkOrphans reports each conversation that has keys in a store but no
// state there (seeking past each conversation's keys, not reading them).
func (ck *checker) checkOrphans(tx *storage.Tx, known map[string]bool) error {
	families := []struct {
		what string
		root []byte
		name func(k []byte) string
		// past is a key after every key of conversation c in the family.
		past func(c string) []byte
	}{
		{"utterances", storage.PrefixKey(storage.PrefixHistory, "utt"), nth(storage.PrefixHistory, 1), pastAll(uttPrefix)},
		{"vectors", storage.PrefixKey(storage.PrefixHistory, "vec"), nth(storage.PrefixHistory, 1), pastAll(vecPrefix)},
		{"pending embeddings", storage.PrefixKey(storage.PrefixHistory, "embq"), nth(storage.PrefixHistory, 1), pastAll(embqPrefix)},
		{"pending folds", storage.PrefixKey(storage.PrefixHistory, "fold"), nth(storage.PrefixHistory, 1), pastAll(foldPrefix)},
		// The summary is one key: the next one may be another
		// conversation's ("default2" after "default").
		{"summary", storage.PrefixKey(storage.PrefixHistory, "sum"), storage.LastPart,
			func(c string) []byte { return append(sumKey(c), 0) }},
		{"search postings", storage.PrefixKey(storage.PrefixIndex, "history", "t"), nth(storage.PrefixIndex, 2),
			pastAll(func(c string) []byte { return storage.PrefixKey(storage.PrefixIndex, "history", "t", c) })},
	}
	for _, f := range families {
		start := f.root
		for {
			if err := ck.ctx.Err(); err != nil {
				return err
			}
			var first []byte
			err := tx.Keys(storage.Range{Prefix: f.root, Start: start}, func(k []byte) error {
				first = k
				return storage.ErrStop
			})
			if err != nil {
				return err
			}
			if first == nil {
				break
			}
			c := f.name(first)
			if !known[c] {
				ck.problem(c, "the store holds its %s (%q), but no state for it", f.what, first)
			}
			start = f.past(c)
			if bytes.Compare(start, first) <= 0 {
				// A key whose name does not read back as written: step
				// over it alone.
				start = append(first, 0)
			}
		}
	}
	return nil
}

// pastAll returns the function giving a key after every key under a
// conversation's prefix: 0xFF follows any byte a key part holds.
func pastAll(prefix func(c string) []byte) func(c string) []byte {
	return func(c string) []byte { return append(slices.Clone(prefix(c)), 0xFF) }
}

// nth returns the function that reads the i-th part of a key after prefix.
func nth(prefix string, i int) func(k []byte) string {
	return func(k []byte) string {
		if parts := storage.SplitKey(prefix, k); len(parts) > i {
			return parts[i]
		}
		return ""
	}
}

// stored is what the check keeps of one utterance to match its postings:
// how many distinct terms its text makes and a sum of their hashes (to
// compare with what the postings say without keeping the terms).
type stored struct {
	index      int
	speaker    byte
	dl, terms  int
	hash       uint64
	found      int
	foundHash  uint64
	unreadable bool
}

// termHash is a posting's contribution to an utterance's hash sum.
func termHash(term string, tf int) uint64 {
	f := fnv.New64a()
	f.Write([]byte(term))
	f.Write([]byte{0})
	f.Write([]byte(strconv.Itoa(tf)))
	return f.Sum64()
}

// checkConversation checks one conversation's records against its state.
func (ck *checker) checkConversation(tx *storage.Tx, c string, conv *Conversation) error {
	if conv.Conversation != c {
		ck.problem(c, "its state names conversation %q", conv.Conversation)
	}
	ck.checkACL(c, conv)
	if conv.FirstBuffered > conv.NextIndex {
		ck.problem(c, "first_buffered %d is past next_index %d", conv.FirstBuffered, conv.NextIndex)
	}
	if conv.Size > conv.BufferSize {
		ck.problem(c, "counts %d utterances in a buffer of %d", conv.Size, conv.BufferSize)
	}
	if conv.MaxTokens > 0 && conv.TotalTokens > conv.MaxTokens {
		ck.problem(c, "counts %d tokens in a buffer of max_tokens %d", conv.TotalTokens, conv.MaxTokens)
	}

	// The summary and the pending folds: together they stand for every
	// eviction, each exactly once.
	var rec summaryRecord
	summaryOK := true
	if v, err := tx.Get(sumKey(c)); err == nil {
		if err := json.Unmarshal(v, &rec); err != nil {
			ck.problem(c, "its summary %q is unreadable: %v", sumKey(c), err)
			summaryOK = false // what it covers is unknown: not checked
		}
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	spans := rec.Extractive.Spans()
	covered := rec.Extractive.Covered()
	if n := len(spans); n > 0 && (spans[0].From < 0 || spans[n-1].To >= conv.FirstBuffered) {
		ck.problem(c, "its summary covers [%d, %d], beyond the evicted utterances (below %d)", spans[0].From, spans[n-1].To, conv.FirstBuffered)
	}
	folds := map[int]bool{}
	err := tx.Scan(storage.Prefix(foldPrefix(c)), func(k, v []byte) error {
		if err := ck.ctx.Err(); err != nil {
			return err
		}
		i, ok := ck.indexOf(c, k)
		if !ok {
			return nil
		}
		var e foldEntry
		switch err := json.Unmarshal(v, &e); {
		case err != nil:
			ck.problem(c, "pending fold %q is unreadable: %v", k, err)
		case i >= conv.FirstBuffered:
			ck.problem(c, "pending fold of utterance %d, which was not evicted (the buffer starts at %d)", i, conv.FirstBuffered)
		case coveredBy(spans, i):
			ck.problem(c, "pending fold of utterance %d, which the summary already covers", i)
		case i < rec.NextFold:
			ck.problem(c, "pending fold of utterance %d is below the summary's next fold %d: it would never be folded", i, rec.NextFold)
		default:
			// Only a fold that will fold counts towards the evictions: a
			// bad one is its own problem, not the count's too.
			folds[i] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if summaryOK && covered+len(folds) != conv.EvictedCount {
		ck.problem(c, "counts %d evictions, its summary covers %d and %d are pending", conv.EvictedCount, covered, len(folds))
	}

	// The utterances, in index order, against the counters.
	var utts []stored
	unreadable := false
	size, tokens, docs, docLength, lastTurn := 0, 0, 0, 0, 0
	err = tx.Scan(storage.Prefix(uttPrefix(c)), func(k, v []byte) error {
		if err := ck.ctx.Err(); err != nil {
			return err
		}
		i, ok := ck.indexOf(c, k)
		if !ok {
			return nil
		}
		var u Utterance
		if err := json.Unmarshal(v, &u); err != nil {
			ck.problem(c, "utterance %d (%q) is unreadable: %v", i, k, err)
			// Kept, so that its postings are not reported as well; the
			// counters cannot be checked without it.
			utts = append(utts, stored{index: i, unreadable: true})
			unreadable = true
			return nil
		}
		if u.UtteranceIndex != i || u.Conversation != c {
			ck.problem(c, "utterance at %q says it is utterance %d of conversation %q", k, u.UtteranceIndex, u.Conversation)
		}
		if i >= conv.NextIndex {
			ck.problem(c, "utterance %d is at or past next_index %d", i, conv.NextIndex)
		}
		counts, dl := text.TermCounts(u.Text)
		s := stored{index: i, speaker: speakerCodes[u.Speaker], dl: dl, terms: len(counts)}
		for term, tf := range counts {
			s.hash += termHash(term, tf)
		}
		utts = append(utts, s)
		docs++
		docLength += dl
		lastTurn = max(lastTurn, u.TurnNumber)
		if s.speaker == 0 {
			ck.problem(c, "utterance %d has an unknown speaker %q", i, u.Speaker)
		}
		// Where it is comes from first_buffered (as the buffer is read);
		// its evicted flag must agree.
		archived := i < conv.FirstBuffered
		switch {
		case u.Evicted && !archived:
			ck.problem(c, "utterance %d says it is evicted, but it is in the buffer (which starts at %d)", i, conv.FirstBuffered)
		case !u.Evicted && archived:
			ck.problem(c, "utterance %d says it is in the buffer, but the buffer starts at %d", i, conv.FirstBuffered)
		}
		if archived {
			if summaryOK && !folds[i] && !coveredBy(spans, i) {
				ck.problem(c, "utterance %d is evicted, but neither the summary nor a pending fold covers it", i)
			}
			return nil
		}
		size++
		tokens += u.TokenCount
		return nil
	})
	if err != nil {
		return err
	}
	if !unreadable {
		if size != conv.Size {
			ck.problem(c, "counts %d utterances in its buffer, holds %d", conv.Size, size)
		}
		if tokens != conv.TotalTokens {
			ck.problem(c, "counts %d tokens in its buffer, holds %d", conv.TotalTokens, tokens)
		}
		if docs != conv.Docs || docLength != conv.DocLength {
			ck.problem(c, "counts %d searchable utterances of %d terms, holds %d of %d", conv.Docs, conv.DocLength, docs, docLength)
		}
	}
	if lastTurn > conv.LastTurn {
		ck.problem(c, "its last turn is %d, but utterances say turn %d", conv.LastTurn, lastTurn)
	}
	find := func(i int) *stored {
		j, ok := slices.BinarySearchFunc(utts, i, func(s stored, i int) int { return s.index - i })
		if !ok {
			return nil
		}
		return &utts[j]
	}

	// Every search posting names a stored utterance, as its text makes it.
	// Those of a missing utterance are reported once per utterance.
	missing := map[int]int{}
	var missingOrder []int
	err = tx.Keys(storage.Prefix(storage.PrefixKey(storage.PrefixIndex, "history", "t", c)), func(k []byte) error {
		if err := ck.ctx.Err(); err != nil {
			return err
		}
		parts := storage.SplitKey(storage.PrefixIndex, k)
		if len(parts) != 5 {
			ck.problem(c, "search posting %q is unreadable", k)
			return nil
		}
		term := parts[3]
		i, p, err := parsePosting(parts[4])
		if err != nil {
			ck.problem(c, "search posting %q is unreadable: %v", k, err)
			return nil
		}
		s := find(i)
		switch {
		case s == nil:
			if missing[i] == 0 {
				missingOrder = append(missingOrder, i)
			}
			missing[i]++
		case s.unreadable:
		case p.speaker != s.speaker || p.dl != s.dl:
			ck.problem(c, "search posting %q does not match utterance %d (speaker %c, %d terms)", k, i, s.speaker, s.dl)
		default:
			s.found++
			s.foundHash += termHash(term, p.tf)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, i := range missingOrder {
		ck.problem(c, "%d search postings name utterance %d, which does not exist", missing[i], i)
	}
	for j := range utts {
		s := &utts[j]
		if s.unreadable || (s.found == s.terms && s.foundHash == s.hash) {
			continue
		}
		if err := ck.explainPostings(tx, c, s); err != nil {
			return err
		}
	}

	// Every vector belongs to a stored utterance (one may lack its vector:
	// embedding is best effort), and reads whole. Every text waiting for
	// its vector is a stored utterance's too: the queue stores no vector
	// for a missing one, but its marker would stay.
	for _, kind := range []struct {
		prefix []byte
		what   string // names the key in a problem
		bad    string // the problem of one that does not read (utterance, error)
		check  func(i int, v []byte) error
	}{
		{vecPrefix(c), "vector", "vector of utterance %d is unreadable: %v",
			func(_ int, v []byte) error { return embed.CheckRecord(v) }},
		{embqPrefix(c), "pending embedding", "pending embedding of utterance %d: %v",
			func(i int, v []byte) error { return embed.CheckMarker(v, uttKey(c, i), vecKey(c, i)) }},
	} {
		err := tx.Scan(storage.Prefix(kind.prefix), func(k, v []byte) error {
			if err := ck.ctx.Err(); err != nil {
				return err
			}
			i, ok := ck.indexOf(c, k)
			if !ok {
				return nil
			}
			if find(i) == nil {
				ck.problem(c, "%s %q names utterance %d, which does not exist", kind.what, k, i)
			} else if err := kind.check(i, v); err != nil {
				ck.problem(c, kind.bad, i, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkACL checks the grants the conversation's state carries, as
// history.share writes them: each to a principal other than the owner,
// one per principal, with permissions access knows.
func (ck *checker) checkACL(c string, conv *Conversation) {
	acl := conv.acl()
	seen := map[string]bool{}
	for _, g := range conv.Grants {
		switch {
		case g.PrincipalID == "":
			ck.problem(c, "a grant names no principal")
		case g.PrincipalID == acl.OwnerOf():
			ck.problem(c, "a grant to %s, who owns it", g.PrincipalID)
		case seen[g.PrincipalID]:
			ck.problem(c, "%s has more than one grant", g.PrincipalID)
		}
		seen[g.PrincipalID] = true
		for _, p := range g.Permissions {
			if !slices.Contains(access.Permissions, p) {
				ck.problem(c, "the grant to %s holds an unknown permission %q", g.PrincipalID, p)
			}
		}
	}
}

// explainPostings names what is wrong with an utterance's postings, once
// their count or hash sum did not match: each posting its text makes that
// is missing, and how many others there are.
func (ck *checker) explainPostings(tx *storage.Tx, c string, s *stored) error {
	u, err := readUtterance(tx, c, s.index)
	if err != nil {
		return err
	}
	counts, dl := text.TermCounts(u.Text)
	present := 0
	for _, term := range slices.Sorted(maps.Keys(counts)) {
		p := posting{speaker: s.speaker, tf: counts[term], dl: dl}
		ok, err := tx.Has(postingKey(c, term, s.index, p))
		if err != nil {
			return err
		}
		if ok {
			present++
		} else {
			ck.problem(c, "utterance %d is missing its search posting for term %q", s.index, term)
		}
	}
	if extra := s.found - present; extra > 0 {
		ck.problem(c, "utterance %d has %d search postings its text does not make", s.index, extra)
	}
	return nil
}

// indexOf reads the utterance index that ends key k, reporting a key that
// does not end with one.
func (ck *checker) indexOf(c string, k []byte) (int, bool) {
	i, err := storage.ParseUint64(storage.LastPart(k))
	if err != nil {
		ck.problem(c, "key %q does not end with an utterance index", k)
		return 0, false
	}
	return int(i), true
}

// coveredBy says whether index i is in one of spans (sorted, disjoint).
func coveredBy(spans []text.Span, i int) bool {
	j, found := slices.BinarySearchFunc(spans, i, func(sp text.Span, i int) int {
		switch {
		case sp.To < i:
			return -1
		case sp.From > i:
			return 1
		}
		return 0
	})
	return found && j >= 0
}
