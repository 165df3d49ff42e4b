package memory

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// A turn's memory must come fast whatever the size of the stores (issue
// 13, item 7: 1M memories made turn.start take 4.2 s and 1.5 GB, scoring
// every posting of the input's words). A store of at most turnWholeSearch
// live items is searched whole, as memory.remember does (a few ms at that
// size); a larger one only among its turnWindow newest and turnWindow most
// important live items, found at the ends of its time and imp indexes and
// scored among themselves, so that the cost stays the same at any size.
// memory.remember still searches a whole store.
const (
	turnWindow = 500
	// turnTextBytes is how much of an item's text a turn's scoring reads.
	turnTextBytes = 2048
)

// turnWholeSearch is the most live items a store may hold for a turn to
// search it whole (a variable for tests).
var turnWholeSearch = 20_000

// rememberForTurn is the items of the store relevant to a turn's input, at
// most limit, in the store type's order.
func (s *store) rememberForTurn(ctx context.Context, call action.Call, prompt string, limit int) ([]Recalled, error) {
	var st *state
	err := s.env.Store.View(func(tx *storage.Tx) error {
		var err error
		st, err = s.loadAs(tx, call, access.Read)
		return err
	})
	if err != nil {
		return nil, err
	}
	if st.ItemCount <= turnWholeSearch {
		return s.Remember(ctx, call, RememberRequest{Prompt: prompt, Limit: limit})
	}
	var cands []*Item
	var picked []Recalled
	err = s.env.Store.View(func(tx *storage.Tx) error {
		// The ids at the two ends, from key-only scans.
		var ids []string
		seen := map[string]bool{}
		for _, kind := range []string{"time", "imp"} {
			n := 0
			err := tx.Keys(storage.Range{Prefix: idxPrefix(s.name, kind), Reverse: true}, func(k []byte) error {
				if id := storage.LastPart(k); !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
				if n++; n == turnWindow {
					return storage.ErrStop
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		// Only what scoring and ordering need of each.
		for _, id := range ids {
			v, err := tx.Get(itemKey(s.name, id))
			if err != nil {
				return err
			}
			var w struct {
				Text       string    `json:"text"`
				Importance float64   `json:"importance"`
				Timestamp  time.Time `json:"timestamp"`
			}
			if err := json.Unmarshal(v, &w); err != nil {
				return err
			}
			cands = append(cands, &Item{ID: id, Text: w.Text, Importance: w.Importance, Timestamp: w.Timestamp})
		}
		rank := map[string]string{TypeWorking: "importance", TypeEpisodic: "recency"}[st.Type]
		picked = pickRelevant(scoreWindow(prompt, cands), rank, limit)
		// The picked items whole.
		for i := range picked {
			it, err := s.get(tx, picked[i].ID)
			if err != nil {
				return err
			}
			picked[i].Item = it
		}
		return nil
	})
	return picked, err
}

// scoreWindow scores items against a prompt with BM25 among themselves;
// a prompt of stop words only matches the items holding all its words.
func scoreWindow(prompt string, items []*Item) []Recalled {
	terms := slices.Compact(slices.Sorted(slices.Values(text.Terms(prompt))))
	type doc struct {
		counts map[string]int
		length int
	}
	docs := make([]doc, len(items))
	df := map[string]int{}
	total := 0
	for i, it := range items {
		body := it.Text
		if len(body) > turnTextBytes {
			body = body[:turnTextBytes]
		}
		if len(terms) == 0 {
			docs[i].counts = map[string]int{}
			for _, w := range text.Words(body) {
				docs[i].counts[w]++
			}
			continue
		}
		docs[i].counts, docs[i].length = text.TermCounts(body)
		total += docs[i].length
		for _, t := range terms {
			if docs[i].counts[t] > 0 {
				df[t]++
			}
		}
	}
	var out []Recalled
	if len(terms) == 0 {
		words := text.Words(prompt)
		for i, it := range items {
			if len(words) > 0 && !slices.ContainsFunc(words, func(w string) bool { return docs[i].counts[w] == 0 }) {
				out = append(out, Recalled{Item: it, Score: 1})
			}
		}
		return out
	}
	avg := max(float64(total)/float64(max(len(items), 1)), 1)
	for i, it := range items {
		score := 0.0
		for _, t := range terms {
			if tf := docs[i].counts[t]; tf > 0 {
				score += text.BM25{}.Score(tf, df[t], len(items), float64(docs[i].length), avg)
			}
		}
		if score > 0 {
			out = append(out, Recalled{Item: it, Score: score})
		}
	}
	return out
}

// pickRelevant keeps the items scoring at least relevanceFloor of the
// best, sets their confidence, orders them by rank and keeps limit.
func pickRelevant(scored []Recalled, rank string, limit int) []Recalled {
	best := 0.0
	for _, r := range scored {
		best = max(best, r.Score)
	}
	out := []Recalled{}
	for _, r := range scored {
		if r.Score >= relevanceFloor*best {
			r.Confidence, r.Score = round(r.Score/best), round(r.Score)
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Recalled) int { return compareBy(rank, a, b) })
	return out[:min(len(out), limit)]
}
