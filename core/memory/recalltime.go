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
	PartVector     = "vector"
	PartTime       = retrieval.PartTime
	PartImportance = "importance"
	PartRecency    = "recency"
)

// Part is one signal of a recalled item's score, in retrieval's shape:
// its value, its weight and what it adds (value times weight).
type Part = retrieval.Part

// MatchedTerm is a word of the prompt an item holds, and where.
type MatchedTerm struct {
	// Term is the prompt's word as written.
	Term string `json:"term"`
	// Field is where the item holds it: "text", or "tags" for a tag
	// (tags narrow recall as filters; a tag matching the prompt is
	// shown, it adds nothing to the score).
	Field string `json:"field"`
	// Count is how often the field holds it.
	Count int `json:"count"`
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

// wordless says the prompt had words but they were all a time: "last
// week" asks for what was stored then, as an empty prompt would.
func (rt recallTime) wordless(prompt string) bool {
	return len(rt.windows) > 0 && strings.TrimSpace(prompt) != "" && len(text.Words(rt.lexical)) == 0
}

// inWindows is the set of the ids of items stored inside one of the
// windows (nil without windows), from key-only scans of the time index
// over each window's range: a short window reads few keys at any size of
// store.
func (s *store) inWindows(tx *storage.Tx, ws []retrieval.Window, includeDeleted bool) (map[string]bool, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	in := map[string]bool{}
	prefixes := [][]byte{idxPrefix(s.name, "time")}
	if includeDeleted {
		prefixes = append(prefixes, idxPrefix(s.name, "del", "time"))
	}
	for _, w := range ws {
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
				in[storage.LastPart(k)] = true
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

// boost lifts the scores of the items inside a window by TimeBoost.
func boost(scored []search.DocScore, in map[string]bool) {
	if len(in) == 0 {
		return
	}
	for i := range scored {
		if in[scored[i].Doc] {
			scored[i].Score *= 1 + TimeBoost
		}
	}
}

// scoreParts are the parts of a recalled item's score, as rememberRelevant
// makes it: without a model, its BM25 (lexical); with one, the mean of its
// BM25 scaled by the best (lexical, weight 1/(2·best)) and its embedding's
// cosine (vector, weight 1/2); either way lifted by TimeBoost inside a
// window (time: the relevance so far, weighted TimeBoost or 0).
// Importance and recency order the results (rank) rather than add to the
// score: their parts say their values with weight 0. The contributions
// add up to the score shown (returned, rounded as the item's is).
func scoreParts(it *Item, lexical map[string]float64, bestLexical float64, cos *float64, withVector, inWindow bool, now time.Time) (parts []Part, score float64) {
	part := func(name string, value, weight float64) Part {
		return Part{Name: name, Value: round(value), Weight: round(weight), Contribution: round(value * weight)}
	}
	lex := lexical[it.ID]
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
		parts = append(parts, part(PartLexical, lex, lw), part(PartVector, c, 0.5))
		base = lex*lw + c/2
	} else {
		parts = append(parts, part(PartLexical, lex, 1))
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

// windowsOf are the expressions of the windows an item is inside.
func windowsOf(it *Item, ws []retrieval.Window) []string {
	var out []string
	for _, w := range ws {
		if w.Contains(it.Timestamp) && !slices.Contains(out, w.Expr) {
			out = append(out, w.Expr)
		}
	}
	return out
}

// rememberAllIn is rememberAll with the items inside the windows (in, the
// ids inside one; nil: no window) first, each group in the rank's order:
// "last week" alone, or when with no prompt, asks for what was stored then.
func (s *store) rememberAllIn(tx *storage.Tx, rank string, req RememberRequest, ids func(string) bool, pass func(*Item) bool, in map[string]bool) ([]Recalled, error) {
	if in == nil {
		return s.rememberAll(tx, rank, req, ids, pass)
	}
	inside := func(id string) bool { return in[id] && (ids == nil || ids(id)) }
	first, err := s.rememberAll(tx, rank, req, inside, pass)
	if err != nil || len(first) == req.Limit {
		return first, err
	}
	outside := func(id string) bool { return !in[id] && (ids == nil || ids(id)) }
	rest := req
	rest.Limit = req.Limit - len(first)
	more, err := s.rememberAll(tx, rank, rest, outside, pass)
	return append(first, more...), err
}
