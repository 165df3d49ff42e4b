package history

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/storage"
)

// The plain ranker: a conversation of more than HybridMaxUtterances is
// not given a hybrid index (its build would take tens of seconds and
// hundreds of MB, see HybridMaxUtterances). history.search ranks it by
// plain BM25 over its persisted postings, read into memory on its first
// search (postings.go) and kept up to date by every write: the MaxScore
// path (topScores) that answered history.search at 1M utterances in
// 2 ms before the hybrid ranker. Its hits still carry a why.

// PartPlainBM25 is the part of a why that says history.search ranked by
// plain BM25, not the hybrid ranker: its value is how many utterances
// the conversation holds (more than HybridMaxUtterances), its weight and
// contribution 0.
const PartPlainBM25 = "plain-bm25"

// PartSemantic is the part of a plain ranker's why that the embedding
// similarity adds with a model configured: half the cosine similarity
// (the lexical part is the other half, BM25 over the best BM25).
const PartSemantic = "semantic"

// plain says whether conv is too large for a hybrid index.
func (h *History) plain(conv *Conversation) bool {
	h.hybrid.mu.Lock()
	defer h.hybrid.mu.Unlock()
	return conv.Docs > h.hybrid.maxUtterances
}

// searchPlain is history.search of conversation c by plain BM25 (req is
// checked, queryVec the query's embedding or nil): BM25 over the postings
// in memory, blended with embedding similarity as before the hybrid
// ranker (rank); a quoted query finds the utterances holding all its
// words whose text holds it as written, newest first; a query of stop
// words only, those holding all its words (literal). when is not weighed
// (placing events needs the hybrid index): a hit's why names the windows
// of when it is inside.
func (h *History) searchPlain(call action.Call, c string, req SearchRequest, queryVec []float32) ([]Hit, error) {
	quote, quoted := quotedText(req.Query)
	terms := queryTerms(req.Query)
	if quoted {
		terms = queryTerms(quote)
	}
	now := call.Clock.Now()
	var hits []Hit
	for attempt := 0; ; attempt++ {
		build := false
		err := h.view(call, c, access.Read, func(tx *storage.Tx, conv *Conversation) error {
			hits = []Hit{}
			if conv == nil {
				return nil
			}
			var ix *convIndex
			if len(terms) > 0 {
				var done func()
				if ix, done = h.postings.lookup(c, conv.IndexVersion); ix != nil {
					defer done()
				} else if attempt == 0 {
					build = true
					return nil
				}
			}
			var err error
			switch {
			case quoted:
				hits, err = plainQuoted(tx, conv, ix, quote, terms, req, now)
			case len(terms) == 0:
				return h.literal(tx, conv, req, &hits)
			default:
				hits, err = plainRanked(tx, conv, ix, terms, req, queryVec)
			}
			if err != nil {
				return err
			}
			for i := range hits {
				plainWhy(conv, ix, terms, req, now, &hits[i])
			}
			return nil
		})
		if err != nil || !build {
			return hits, err
		}
		if err := h.buildIndex(c); err != nil {
			return nil, err
		}
	}
}

// plainRanked ranks by BM25: the best req.Limit only from the postings
// in memory (topHits), or every match (rank), blended with the
// embeddings' similarity when there are any.
func plainRanked(tx *storage.Tx, conv *Conversation, ix *convIndex, terms []string, req SearchRequest, queryVec []float32) ([]Hit, error) {
	if ix != nil && queryVec == nil {
		if hits, ok, err := topHits(tx, conv, req, ix, terms); ok || err != nil {
			return hits, err
		}
	}
	var lexical map[int]float64
	var err error
	if ix != nil {
		lexical = indexScores(conv, req, ix, terms)
	} else if lexical, err = bm25Scores(tx, conv, req); err != nil {
		return nil, err
	}
	semantic := map[int]float64{}
	if queryVec != nil {
		if semantic, err = similarities(tx, conv.Conversation, queryVec); err != nil {
			return nil, err
		}
	}
	return rank(tx, conv.Conversation, req, lexical, semantic)
}

// plainQuoted are the utterances whose text holds quote as written,
// ignoring case, newest first (inside when's windows if it has any; the
// speaker's only when one is asked): of those holding every term of the
// quote (from the postings in memory, or else every utterance).
func plainQuoted(tx *storage.Tx, conv *Conversation, ix *convIndex, quote string, terms []string, req SearchRequest, now time.Time) ([]Hit, error) {
	lq := strings.ToLower(quote)
	var windows []retrieval.Window
	if strings.TrimSpace(req.When) != "" {
		windows = retrieval.ParseTime(req.When, now).Windows
	}
	hits := []Hit{}
	keep := func(u *Utterance) bool {
		if req.Speaker != "" && u.Speaker != req.Speaker || !containsFold(u.Text, lq) {
			return false
		}
		return len(windows) == 0 || slices.ContainsFunc(windows, func(w retrieval.Window) bool { return w.Contains(u.Timestamp) })
	}
	hit := func(u *Utterance) Hit {
		why := &retrieval.Why{Score: 1, Parts: []retrieval.Part{{Name: PartQuote, Value: 1, Weight: 1, Contribution: 1}}}
		return Hit{Utterance: u, RelevanceScore: 1, Why: why}
	}
	if ix == nil {
		// No terms (or no postings in memory): every utterance, newest
		// kept.
		var all []*Utterance
		err := tx.Scan(storage.Prefix(uttPrefix(conv.Conversation)), func(_, v []byte) error {
			var u Utterance
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			if keep(&u) {
				all = append(all, &u)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0 && len(hits) < req.Limit; i-- {
			hits = append(hits, hit(all[i]))
		}
		return hits, err
	}
	var lists []*postingList
	for _, t := range terms {
		l := ix.terms[t]
		if l == nil {
			return hits, nil
		}
		lists = append(lists, l)
	}
	slices.SortFunc(lists, func(a, b *postingList) int { return len(a.ids) - len(b.ids) })
	code := speakerCodes[req.Speaker]
	for j := len(lists[0].ids) - 1; j >= 0 && len(hits) < req.Limit; j-- {
		id := lists[0].ids[j]
		if code != 0 && ix.speaker[id] != code {
			continue
		}
		all := true
		for _, l := range lists[1:] {
			if _, ok := slices.BinarySearch(l.ids, id); !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		u, err := readUtterance(tx, conv.Conversation, int(id))
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		if keep(u) {
			hits = append(hits, hit(u))
		}
	}
	return hits, nil
}

// plainWhy gives a hit of the plain ranker its why (a quoted or literal
// one keeps its own): the query terms it holds with what each added, the
// lexical part (and the semantic part, with embeddings), the windows of
// when it is inside, and PartPlainBM25.
func plainWhy(conv *Conversation, ix *convIndex, terms []string, req SearchRequest, now time.Time, hit *Hit) {
	plainPart := retrieval.Part{Name: PartPlainBM25, Value: float64(conv.Docs)}
	if hit.Why != nil {
		hit.Why.Parts = append(hit.Why.Parts, plainPart)
		return
	}
	why := &retrieval.Why{Score: hit.RelevanceScore}
	semContribution := 0.0
	if hit.Semantic != nil {
		semContribution = round(*hit.Semantic / 2)
	}
	if lex := hit.Lexical; lex > 0 {
		c := round(hit.RelevanceScore - semContribution)
		why.Parts = append(why.Parts, retrieval.Part{Name: retrieval.PartLexical, Value: lex, Weight: round(c / lex), Contribution: c})
	}
	if hit.Semantic != nil {
		why.Parts = append(why.Parts, retrieval.Part{Name: PartSemantic, Value: *hit.Semantic, Weight: 0.5, Contribution: semContribution})
	}
	why.Parts = append(why.Parts, plainPart)
	if ix != nil && hit.UtteranceIndex < len(ix.length) {
		avgdl := 1.0
		if conv.Docs > 0 {
			avgdl = float64(conv.DocLength) / float64(conv.Docs)
		}
		id, dl := uint32(hit.UtteranceIndex), float64(ix.length[hit.UtteranceIndex])
		for _, term := range terms {
			l := ix.terms[term]
			if l == nil {
				continue
			}
			if j, ok := slices.BinarySearch(l.ids, id); ok {
				tf := l.tf(j)
				s := text.BM25{}.Term(len(l.ids), conv.Docs, avgdl).Score(tf, dl)
				why.Terms = append(why.Terms, retrieval.TermMatch{Term: term, Field: "text", Count: tf, Score: round(s)})
			}
		}
	}
	if strings.TrimSpace(req.When) != "" {
		for _, w := range retrieval.ParseTime(req.When, now).Windows {
			if w.Contains(hit.Timestamp) && !slices.Contains(why.Windows, w.Expr) {
				why.Windows = append(why.Windows, w.Expr)
			}
		}
	}
	hit.Why = why
}
