package memory

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// TimeBoost is the weight of the time part of a recalled item's score:
// an item stored inside a time window of the prompt ("last week", "in
// May") or of when scores this share more than its relevance alone, so
// that of two items matching alike the one from the time asked about
// comes first, and an item from another time still counts.
const TimeBoost = 1.0

// The names of the parts of a Why (retrieval's, where they mean the same).
const (
	PartLexical    = retrieval.PartLexical
	PartSynonyms   = retrieval.PartSynonyms
	PartTags       = "tags"
	PartVector     = "vector"
	PartTime       = retrieval.PartTime
	PartImportance = "importance"
	PartRecency    = "recency"
)

// Part is one signal of a recalled item's score, in retrieval's shape:
// its value, its weight and what it adds (value times weight).
type Part = retrieval.Part

// MatchedTerm is a word of the prompt (or of the thesaurus) an item
// holds, and where.
type MatchedTerm struct {
	// Term is the prompt's word as written; for a thesaurus word, the
	// item's word as written ("application").
	Term string `json:"term"`
	// Field is where the item holds it: "text", or "tags" for a tag
	// (a prompt word that is a whole tag adds the tags part of the
	// score; Why.Tagged names those tags).
	Field string `json:"field"`
	// Count is how often the field holds it.
	Count int `json:"count"`
	// SynonymOf is, for a thesaurus word (not in the prompt), the
	// prompt's word it stood for ("apply"); Relation says how
	// (retrieval.RelDerived, ...).
	SynonymOf string `json:"synonym_of,omitempty"`
	Relation  string `json:"relation,omitempty"`
}

// recallTime is what the prompt's and when's time expressions say.
type recallTime struct {
	// lexical is the prompt without the words of its windows.
	lexical string
	// windows are the spans of time asked about.
	windows []retrieval.Window
}

// parseRecallTime reads the time expressions of the prompt and of when
// against now. A when that places no window is a ValidationError: recall
// places no event ("after the move"), only months, seasons and spans.
func parseRecallTime(prompt, when string, now time.Time) (recallTime, error) {
	tq := retrieval.ParseTime(prompt, now)
	rt := recallTime{lexical: tq.Lexical(prompt), windows: tq.Windows}
	if w := strings.TrimSpace(when); w != "" {
		wq := retrieval.ParseTime(w, now)
		if len(wq.Windows) == 0 || len(wq.Unparsed) > 0 {
			return rt, kit.Validation("when", "%q names no time engram can place; use a month (\"in May 2025\"), a season (\"last summer\"), a span (\"3 weeks ago\", \"last week\") or before/after one (\"after May\")", w)
		}
		rt.windows = append(rt.windows, wq.Windows...)
	}
	return rt, nil
}

// wordless says the prompt names a time and nothing to look for but stop
// words: "last week", "what was it last week" ask for what was stored
// then, as an empty prompt would.
func (rt recallTime) wordless(prompt string) bool {
	return len(rt.windows) > 0 && strings.TrimSpace(prompt) != "" && len(text.Terms(rt.lexical)) == 0
}

// maxWindowKeys bounds the time index keys read to learn which items a
// prompt's windows hold (about 0.3 µs a key): a short window ("last
// week") is a short scan at any size of store; a broad one ("after May",
// most of the store) is told item by item as candidates are read instead,
// so it lifts only the most relevant (the pool remember orders).
var maxWindowKeys = 5_000

// timeFilter is what the windows of a recall hold.
type timeFilter struct {
	windows []retrieval.Window
	// ids are the items inside a window, when known: nil when the
	// windows hold more than maxWindowKeys items (broad).
	ids map[string]bool
}

// timeFilter reads which items the windows hold (nil without windows),
// from key-only scans of the time index over each window's range.
func (s *store) timeFilter(tx *storage.Tx, ws []retrieval.Window, includeDeleted bool) (*timeFilter, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	tf := &timeFilter{windows: ws, ids: map[string]bool{}}
	prefixes := [][]byte{idxPrefix(s.name, "time")}
	if includeDeleted {
		prefixes = append(prefixes, idxPrefix(s.name, "del", "time"))
	}
	read := 0
	for _, w := range mergeWindows(ws) {
		for _, prefix := range prefixes {
			r := storage.Range{Prefix: prefix}
			if !w.From.IsZero() {
				r.Start = append(slices.Clone(prefix), storage.Time(w.From)...)
			}
			var end []byte
			if !w.To.IsZero() {
				end = []byte(storage.Time(w.To))
			}
			err := tx.Keys(r, func(k []byte) error {
				if end != nil && bytes.Compare(k[len(prefix):], end) >= 0 {
					return storage.ErrStop
				}
				if read++; read > maxWindowKeys {
					tf.ids = nil
					return storage.ErrStop
				}
				tf.ids[storage.LastPart(k)] = true
				return nil
			})
			if err != nil {
				return nil, err
			}
			if tf.ids == nil {
				return tf, nil
			}
		}
	}
	return tf, nil
}

// mergeWindows are the spans of the windows, overlapping ones merged, so
// that no key is read twice ("in May" is this May and the last).
func mergeWindows(ws []retrieval.Window) []retrieval.Window {
	out := slices.Clone(ws)
	slices.SortFunc(out, func(a, b retrieval.Window) int { return a.From.Compare(b.From) })
	merged := out[:1]
	for _, w := range out[1:] {
		last := &merged[len(merged)-1]
		switch {
		case last.To.IsZero():
			// open to the end: holds the rest
		case !w.From.After(last.To):
			if w.To.IsZero() || w.To.After(last.To) {
				last.To = w.To
			}
		default:
			merged = append(merged, w)
		}
	}
	return merged
}

// broad says the items inside are told one by one (by their time).
func (tf *timeFilter) broad() bool { return tf != nil && tf.ids == nil }

// inside says whether an item was stored inside a window.
func (tf *timeFilter) inside(it *Item) bool { return len(tf.windowsOf(it)) > 0 }

// windowsOf are the expressions of the windows an item is inside.
func (tf *timeFilter) windowsOf(it *Item) []string {
	if tf == nil {
		return nil
	}
	var out []string
	for _, w := range tf.windows {
		if w.Contains(it.Timestamp) && !slices.Contains(out, w.Expr) {
			out = append(out, w.Expr)
		}
	}
	return out
}

// boost lifts the scores of the items known to be inside a window by
// TimeBoost, and returns the lift still to apply as candidates are read:
// 1+TimeBoost when the window is broad, else 1.
func (tf *timeFilter) boost(scored []search.DocScore) float64 {
	if tf.broad() {
		return 1 + TimeBoost
	}
	if tf == nil {
		return 1
	}
	for i := range scored {
		if tf.ids[scored[i].Doc] {
			scored[i].Score *= 1 + TimeBoost
		}
	}
	return 1
}

// scoreParts are the parts of a recalled item's score, as rememberRelevant
// makes it: without a model, its lexical score (lexical: the prompt's own
// words' BM25; synonyms: the thesaurus words', at their weights; tags:
// its tags', at tagWeight — these two only when they add something);
// with one, the mean of that score scaled by the best (weight
// 1/(2·best)) and its embedding's cosine (vector, weight 1/2); either
// way lifted by TimeBoost inside a window (time: the relevance so far,
// weighted TimeBoost or 0). Importance and recency order the results
// (rank) rather than add to the score: their parts say their values with
// weight 0. The contributions add up to the score shown (returned,
// rounded as the item's is).
func scoreParts(it *Item, lexical map[string]float64, sh lexShare, bestLexical float64, cos *float64, withVector, inWindow bool, now time.Time) (parts []Part, score float64) {
	part := func(name string, value, weight float64) Part {
		return Part{Name: name, Value: round(value), Weight: round(weight), Contribution: round(value * weight)}
	}
	lex := lexical[it.ID]
	// The prompt's own words' share is what the others leave: an item
	// with neither scores exactly its BM25.
	own := lex - sh.thesaurus - sh.tags
	lexParts := func(lw float64) {
		parts = append(parts, part(PartLexical, own, lw))
		if sh.thesaurus != 0 {
			parts = append(parts, part(PartSynonyms, sh.thesaurus, lw))
		}
		if sh.tags != 0 {
			parts = append(parts, part(PartTags, sh.tags/tagWeight, tagWeight*lw))
		}
	}
	base := 0.0
	if withVector {
		lw := 0.0
		if bestLexical > 0 {
			lw = 1 / (2 * bestLexical)
		}
		c := 0.0
		if cos != nil {
			c = *cos
		}
		lexParts(lw)
		parts = append(parts, part(PartVector, c, 0.5))
		base = lex*lw + c/2
	} else {
		lexParts(1)
		base = lex
	}
	tw := 0.0
	if inWindow {
		tw = TimeBoost
	}
	parts = append(parts, part(PartTime, base, tw), part(PartImportance, it.Importance, 0), part(PartRecency, recency(now.Sub(it.Timestamp)), 0))
	// The score from the unrounded parts, rounded as the item's is.
	return parts, round(base * (1 + tw))
}

// recency says how recent an age is, from 1 (just stored) down: 1/2 a
// day old, 1/31 a month old.
func recency(age time.Duration) float64 {
	return 1 / (1 + math.Max(0, age.Hours()/24))
}

// matchedTerms are the prompt's words (words, with their terms) an item
// holds in its text and in its tags.
func matchedTerms(it *Item, words []string, literal bool) []MatchedTerm {
	out := []MatchedTerm{}
	count := func(field string, ws []string) {
		have := map[string]int{}
		for _, w := range ws {
			have[w]++
			if t := text.Term(w); t != "" {
				have["\x00"+t]++
			}
		}
		seen := map[string]bool{}
		for _, w := range words {
			if seen[w] {
				continue
			}
			n := 0
			if literal {
				n = have[w]
			} else if t := text.Term(w); t != "" {
				n = have["\x00"+t]
			}
			if n > 0 {
				seen[w] = true
				out = append(out, MatchedTerm{Term: w, Field: field, Count: n})
			}
		}
	}
	count("text", text.Words(it.Text))
	var tagWords []string
	for _, tag := range it.Tags {
		tagWords = append(tagWords, text.Words(tag)...)
	}
	count("tags", tagWords)
	return out
}

// rememberAllIn is rememberAll with the items inside tf's windows first
// (nil: no window), each group in the rank's order: "last week" alone, or
// when with no prompt, asks for what was stored then. The ids inside are
// left out by id before items are read; a broad window's by reading them.
func (s *store) rememberAllIn(tx *storage.Tx, rank string, req RememberRequest, ids func(string) bool, pass func(*Item) bool, tf *timeFilter) ([]Recalled, error) {
	if tf == nil {
		return s.rememberAll(tx, rank, req, ids, pass)
	}
	group := func(in bool, limit int) ([]Recalled, error) {
		r := req
		r.Limit = limit
		if tf.broad() {
			return s.rememberAll(tx, rank, r, ids, func(it *Item) bool { return pass(it) && tf.inside(it) == in })
		}
		return s.rememberAll(tx, rank, r, func(id string) bool { return tf.ids[id] == in && (ids == nil || ids(id)) }, pass)
	}
	first, err := group(true, req.Limit)
	if err != nil || len(first) == req.Limit {
		return first, err
	}
	more, err := group(false, req.Limit-len(first))
	return append(first, more...), err
}
