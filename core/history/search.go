package history

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// SearchRequest asks for the utterances most relevant to a query.
type SearchRequest struct {
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Query        string `json:"query" arg:"required" help:"words to look for (at most 4096 bytes, 64 different words); wholly in double quotes, a text to find as written"`
	Speaker      string `json:"speaker,omitempty" help:"only this speaker's utterances"`
	Limit        int    `json:"limit,omitempty" help:"at most this many results (default 10)"`
	When         string `json:"when,omitempty" help:"a time the utterances were said (\"last summer\", \"in May 2025\", \"3 weeks ago\", \"after the move\"): those inside it rank higher; one that names no time is refused"`
}

// Hit is a search result: an utterance (perhaps evicted: see its evicted
// field) and how relevant it is.
type Hit struct {
	*Utterance
	RelevanceScore float64 `json:"relevance_score"`
	// Lexical is the hybrid ranker's score, or plain BM25's in a
	// conversation past HybridMaxUtterances (RelevanceScore without a
	// model; 0 for a hit found by its embedding alone); Semantic is the
	// cosine similarity of the embeddings (only with a model, whose
	// fused score is RelevanceScore).
	Lexical  float64  `json:"lexical_score"`
	Semantic *float64 `json:"semantic_score,omitempty"`
	// Why explains the score: the matched terms by field, the lifts of
	// neighbours, session and time, and each part's weight.
	Why *retrieval.Why `json:"why,omitempty"`
}

const defaultSearchLimit = 10

// MaxQueryBytes and MaxQueryTerms bound a search query: a query is a few
// words to look for, and one of thousands of words (a pasted document)
// would read the postings of most of the conversation. Refused before
// anything is read.
const (
	MaxQueryBytes = 4096
	MaxQueryTerms = 64
)

// Search ranks the conversation's utterances — buffer and archive — by
// relevance to the query with core/retrieval's hybrid ranker (hybrid.go),
// fused by reciprocal rank with embedding similarity when a model is
// configured (fuse). A query wholly in double quotes finds the utterances
// holding that text as written, newest first (quoted). A query made only
// of stop words ("what is it") falls back to finding the words as
// written. A conversation of more than HybridMaxUtterances is ranked by
// plain BM25 instead (searchPlain). Every hit carries its why.
func (h *History) Search(ctx context.Context, call action.Call, req SearchRequest) ([]Hit, error) {
	return h.search(ctx, call, req, true)
}

// search is Search. With cached false it ranks by plain BM25 from the
// posting keys in the store, as every search did before the hybrid
// ranker (searchBM25: the reference the postings tests hold the postings
// in memory to).
func (h *History) search(ctx context.Context, call action.Call, req SearchRequest, cached bool) ([]Hit, error) {
	if !cached {
		return h.searchBM25(ctx, call, req, false)
	}
	c, err := h.checkSearch(&req)
	if err != nil {
		return nil, err
	}
	quote, quoted := quotedText(req.Query)
	if err := checkWhen(req.When, quoted, call.Clock.Now()); err != nil {
		return nil, err
	}
	var queryVec []float32
	if !quoted && llm.Available(h.env.LLM) {
		if resp, err := h.env.LLM.Embed(ctx, llm.EmbedRequest{Texts: []string{req.Query}}); err == nil && len(resp.Vectors) == 1 {
			queryVec = resp.Vectors[0]
		}
	}
	var hits []Hit
	for attempt := 0; ; attempt++ {
		build, plain := false, false
		err = h.view(call, c, access.Read, func(tx *storage.Tx, conv *Conversation) error {
			hits = []Hit{}
			if conv == nil {
				return nil
			}
			if plain = h.plain(conv); plain {
				return nil
			}
			hi, done := h.hybrid.lookup(c, conv.IndexVersion)
			if hi == nil {
				if attempt < 3 {
					// Built from a snapshot, caught up with the writes
					// committed meanwhile (catchup.go).
					build = true
					return nil
				}
				return fmt.Errorf("history: conversation %q kept changing while its search index was built; search again", c)
			}
			defer done()
			var found []found
			var err error
			switch {
			case quoted:
				found = hi.quoted(quote, req, call.Clock.Now())
			default:
				if found, err = hi.ranked(req, call.Clock.Now(), queryVec); err != nil {
					return err
				}
				if queryVec != nil {
					near, sims, err := hi.vectorRanking(tx, c, queryVec, found, req)
					if err != nil {
						return err
					}
					found = hi.fuse(found, near, sims, req)
				}
				if len(found) == 0 && len(hi.ix.Analyzer().Terms(req.Query)) == 0 {
					return h.literal(tx, conv, req, &hits)
				}
			}
			for _, f := range found {
				if len(hits) == req.Limit {
					break
				}
				u, err := readUtterance(tx, c, f.index)
				if errors.Is(err, storage.ErrNotFound) {
					continue // never at the version searched; kept safe
				} else if err != nil {
					return err
				}
				if req.Speaker != "" && u.Speaker != req.Speaker {
					continue
				}
				hit := Hit{Utterance: u, RelevanceScore: round(f.score), Lexical: round(f.lex), Why: f.why}
				if f.hasSem {
					sem := round(f.sem)
					hit.Semantic = &sem
				}
				hits = append(hits, hit)
			}
			return nil
		})
		if err == nil && plain {
			return h.searchPlain(call, c, req, queryVec)
		}
		if err != nil || !build {
			return hits, err
		}
		if err := h.buildHybrid(c); err != nil {
			return nil, err
		}
	}
}

// PartLiteral is the part of a why that says a query of stop words only
// found its words as written (literalMatches).
const PartLiteral = "literal"

// literal is a search of stop words only: the utterances holding all its
// words as written.
func (h *History) literal(tx *storage.Tx, conv *Conversation, req SearchRequest, hits *[]Hit) error {
	scores, err := literalMatches(tx, conv, req)
	if err != nil {
		return err
	}
	if *hits, err = rank(tx, conv.Conversation, req, scores, nil); err != nil {
		return err
	}
	for i := range *hits {
		hit := &(*hits)[i]
		s := hit.RelevanceScore
		hit.Why = &retrieval.Why{Score: s, Parts: []retrieval.Part{{Name: PartLiteral, Value: s, Weight: 1, Contribution: s}}}
	}
	return nil
}

// checkSearch checks a search request, before anything is read, and
// returns its conversation.
func (h *History) checkSearch(req *SearchRequest) (string, error) {
	c, err := conversationName(req.Conversation)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(req.Query) == "" {
		return "", kit.Validation("query", "give words to search for")
	}
	if len(req.Query) > MaxQueryBytes {
		return "", kit.Validation("query", "at most %d bytes, not %d; search for a few distinctive words", MaxQueryBytes, len(req.Query))
	}
	terms := queryTerms(req.Query)
	if len(terms) > MaxQueryTerms {
		return "", kit.Validation("query", "at most %d different words to look for, not %d; search for a few distinctive words", MaxQueryTerms, len(terms))
	}
	if req.Speaker != "" && speakerCodes[req.Speaker] == 0 {
		return "", kit.Validation("speaker", "unknown speaker %q; use user, assistant or system", req.Speaker)
	}
	if req.Limit < 0 {
		return "", kit.Validation("limit", "must be positive")
	}
	if req.Limit == 0 {
		req.Limit = defaultSearchLimit
	}
	return c, nil
}

// searchBM25 is how history.search ranked before the hybrid ranker:
// BM25 over the persisted postings (in memory when cached), blended with
// embedding similarity. history.search ranks a conversation too large
// for a hybrid index the same way (searchPlain); the postings tests hold
// it as their reference.
func (h *History) searchBM25(ctx context.Context, call action.Call, req SearchRequest, cached bool) ([]Hit, error) {
	c, err := h.checkSearch(&req)
	if err != nil {
		return nil, err
	}
	terms := queryTerms(req.Query)
	var queryVec []float32
	if llm.Available(h.env.LLM) {
		if resp, err := h.env.LLM.Embed(ctx, llm.EmbedRequest{Texts: []string{req.Query}}); err == nil && len(resp.Vectors) == 1 {
			queryVec = resp.Vectors[0]
		}
	}
	var hits []Hit
	for attempt := 0; ; attempt++ {
		build := false
		err = h.view(call, c, access.Read, func(tx *storage.Tx, conv *Conversation) error {
			if conv == nil {
				return nil
			}
			var ix *convIndex
			if cached && len(terms) > 0 {
				var done func()
				if ix, done = h.postings.lookup(c, conv.IndexVersion); ix != nil {
					defer done()
				} else if attempt == 0 {
					build = true
					return nil
				}
			}
			var err error
			hits, err = plainRanked(tx, conv, ix, terms, req, queryVec)
			return err
		})
		if err != nil || !build {
			return hits, err
		}
		if err := h.buildIndex(c); err != nil {
			return nil, err
		}
	}
}

// queryTerms are the different terms of a query, in their order.
func queryTerms(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range text.Terms(q) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// buildIndex reads conversation c's postings into memory, unless they are
// there at the version the store holds. It holds the conversation's lock:
// no write of this process changes the postings meanwhile.
func (h *History) buildIndex(c string) error {
	// As buildHybrid: a snapshot read without the lock, caught up when
	// installed.
	run := h.joinBuild(c, &h.postings.mu, &h.postings.inflight)
	if run == nil {
		return nil
	}
	installed := false
	defer func() {
		if !installed {
			h.postings.inflight.abandon(&h.postings.mu, c, run)
		}
	}()
	st, _, err := h.storeOf(c)
	if err != nil {
		return err
	}
	return st.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil || conv == nil || h.postings.has(c, conv.IndexVersion) {
			return err
		}
		ix, err := buildIndex(tx, c, conv.IndexVersion)
		if err != nil || ix == nil {
			return err
		}
		if h.postings.afterSnapshot != nil {
			h.postings.afterSnapshot(c)
		}
		installed = true
		h.postings.install(c, run, ix)
		return nil
	})
}

// accumulator adds up the scores of a search by utterance index: dense
// arrays, reused from search to search (a map of the hundreds of thousands
// of utterances a common word is in costs more than the scoring).
type accumulator struct {
	score   []float64
	seen    []bool
	touched []uint32
}

var accumulators = sync.Pool{New: func() any { return &accumulator{} }}

// indexTerms calls fn with each utterance holding a term of the query (of
// the speaker asked for) and its BM25 score, reading the postings in
// memory. The scores are added up term by term in the query's order, as
// bm25Scores adds them: the same figures to the last bit.
func indexTerms(conv *Conversation, req SearchRequest, ix *convIndex, terms []string, fn func(i int, score float64)) {
	avgdl := 1.0
	if conv.Docs > 0 {
		avgdl = float64(conv.DocLength) / float64(conv.Docs)
	}
	code := speakerCodes[req.Speaker]
	acc := accumulators.Get().(*accumulator)
	if n := len(ix.length); len(acc.score) < n {
		acc.score, acc.seen = make([]float64, n), make([]bool, n)
	}
	scorer := text.BM25{}
	for _, term := range terms {
		l := ix.terms[term]
		if l == nil {
			continue
		}
		ts := scorer.Term(len(l.ids), conv.Docs, avgdl)
		for j, id := range l.ids {
			if code != 0 && ix.speaker[id] != code {
				continue
			}
			if !acc.seen[id] {
				acc.seen[id] = true
				acc.touched = append(acc.touched, id)
			}
			acc.score[id] += ts.Score(l.tf(j), float64(ix.length[id]))
		}
	}
	for _, id := range acc.touched {
		fn(int(id), acc.score[id])
		acc.score[id], acc.seen[id] = 0, false
	}
	acc.touched = acc.touched[:0]
	accumulators.Put(acc)
}

// indexScores is bm25Scores from the postings in memory.
func indexScores(conv *Conversation, req SearchRequest, ix *convIndex, terms []string) map[int]float64 {
	scores := map[int]float64{}
	indexTerms(conv, req, ix, terms, func(i int, s float64) { scores[i] = s })
	return scores
}

// topHits is rank without embeddings, from the postings in memory: only
// the best req.Limit scores are found (topScores). ok is false when one of
// them could not be shown (deleted meanwhile, or of another speaker than
// its postings say): rank then goes through all of them, as it always did.
func topHits(tx *storage.Tx, conv *Conversation, req SearchRequest, ix *convIndex, terms []string) (hits []Hit, ok bool, err error) {
	best := topScores(conv, req, ix, terms)
	hits = make([]Hit, 0, len(best))
	for _, s := range best {
		u, err := readUtterance(tx, conv.Conversation, s.index)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, false, nil
		} else if err != nil {
			return nil, false, err
		}
		if req.Speaker != "" && u.Speaker != req.Speaker {
			return nil, false, nil
		}
		hits = append(hits, Hit{Utterance: u, RelevanceScore: round(s.score), Lexical: round(s.lex)})
	}
	return hits, true, nil
}

// cursor walks one query term's postings in topScores.
type cursor struct {
	l      *postingList
	scorer text.TermScorer
	// bound is the most the term can add to an utterance's score.
	bound float64
	// term is the term's place in the query.
	term int
	at   int
	// memo holds the scores of the commonest counts and lengths, worked
	// out once a search (0: not yet): the same figures, without a
	// division for every posting.
	memo *[memoTF][memoLength]float64
}

const memoTF, memoLength = 4, 128

// seek moves the cursor to the first posting at or after utterance id,
// and says whether it is id's: galloping (1, 2, 4... postings ahead), as
// the utterances asked for come in order and mostly close together.
func (c *cursor) seek(id uint32) bool {
	ids := c.l.ids
	if c.at >= len(ids) {
		return false
	}
	if ids[c.at] >= id {
		return ids[c.at] == id
	}
	lo, step := c.at, 1
	for lo+step < len(ids) && ids[lo+step] < id {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(ids)-1) + 1
	j, found := slices.BinarySearch(ids[lo+1:hi], id)
	c.at = lo + 1 + j
	return found
}

// score is the term's score for the posting at c.at, in an utterance of
// length dl.
func (c *cursor) score(dl uint32) float64 {
	tf := c.l.tf(c.at)
	if tf >= memoTF || dl >= memoLength {
		return c.scorer.Score(tf, float64(dl))
	}
	s := &c.memo[tf][dl]
	if *s == 0 {
		*s = c.scorer.Score(tf, float64(dl))
	}
	return *s
}

// slack widens the bounds against rounding: a bound and the score it
// bounds add the same figures in other orders.
const slack = 1 + 1e-9

// topScores are the req.Limit best scores of the query's terms, best first
// (by better), exactly as rank orders all of them, found without scoring
// every utterance a common term is in (MaxScore: once the best so far are
// in hand, an utterance holding only terms whose bounds add up to less
// than the worst of them cannot displace it, so those terms' postings
// are only looked into for utterances the others bring). Each score found
// is added up in the query's order, as bm25Scores adds it.
func topScores(conv *Conversation, req SearchRequest, ix *convIndex, terms []string) []scored {
	avgdl := 1.0
	if conv.Docs > 0 {
		avgdl = float64(conv.DocLength) / float64(conv.Docs)
	}
	code := speakerCodes[req.Speaker]
	scorer := text.BM25{}
	var cs []*cursor
	for q, term := range terms {
		l := ix.terms[term]
		if l == nil {
			continue
		}
		ts := scorer.Term(len(l.ids), conv.Docs, avgdl)
		bound := ts.Score(l.maxTF, float64(l.minLength))
		if !(bound > 0) {
			// A term in more utterances than the conversation counts
			// (a damaged store) scores below zero: no bounds hold.
			return allScores(conv, req, ix, terms)
		}
		cs = append(cs, &cursor{l: l, scorer: ts, bound: bound * slack, term: q, memo: new([memoTF][memoLength]float64)})
	}
	// The terms by their bounds, smallest first; below[i] is the sum of
	// the bounds of cs[:i].
	slices.SortStableFunc(cs, func(a, b *cursor) int { return cmp.Compare(a.bound, b.bound) })
	below := make([]float64, len(cs)+1)
	for i, c := range cs {
		below[i+1] = below[i] + c.bound
	}
	top := &bestFirst[scored]{better: func(a, b scored) bool { return better(b, a) }}
	// cs[:first] are the terms that cannot bring a new utterance in.
	first := 0
	part := make([]float64, len(terms))
	has := make([]bool, len(terms))
	for {
		if len(top.items) == req.Limit && first == len(cs)-1 {
			// One term left to bring utterances in: skip its blocks
			// that cannot reach the worst of the best.
			c, worst := cs[first], top.items[0].score
			for c.at < len(c.l.ids) {
				b := c.at / blockSize
				if (c.scorer.Score(int(c.l.blockTF[b]), float64(c.l.blockLength[b]))+below[first])*slack >= worst {
					break
				}
				c.at = (b + 1) * blockSize
			}
		}
		next := uint64(math.MaxUint64)
		for _, c := range cs[first:] {
			if c.at < len(c.l.ids) {
				next = min(next, uint64(c.l.ids[c.at]))
			}
		}
		if next == math.MaxUint64 {
			break
		}
		id := uint32(next)
		clear(has)
		if code != 0 && ix.speaker[id] != code {
			for _, c := range cs[first:] {
				if c.at < len(c.l.ids) && c.l.ids[c.at] == id {
					c.at++
				}
			}
			continue
		}
		dl := ix.length[id]
		sum := 0.0
		for _, c := range cs[first:] {
			if c.at < len(c.l.ids) && c.l.ids[c.at] == id {
				part[c.term], has[c.term] = c.score(dl), true
				sum += part[c.term]
				c.at++
			}
		}
		out := false
		for i := first - 1; i >= 0; i-- {
			if len(top.items) == req.Limit && (sum+below[i+1])*slack < top.items[0].score {
				out = true
				break
			}
			c := cs[i]
			if c.seek(id) {
				part[c.term], has[c.term] = c.score(dl), true
				sum += part[c.term]
				c.at++
			}
		}
		if out {
			continue
		}
		score := 0.0
		for q, ok := range has {
			if ok {
				score += part[q]
			}
		}
		s := scored{index: int(id), score: score, lex: score}
		if len(top.items) < req.Limit {
			heap.Push(top, s)
		} else if better(s, top.items[0]) {
			top.items[0] = s
			heap.Fix(top, 0)
		}
		if len(top.items) == req.Limit {
			for first < len(cs) && below[first+1]*slack < top.items[0].score {
				first++
			}
		}
	}
	return bestOf(top.items)
}

// allScores is topScores by scoring every utterance the terms are in.
func allScores(conv *Conversation, req SearchRequest, ix *convIndex, terms []string) []scored {
	top := &bestFirst[scored]{better: func(a, b scored) bool { return better(b, a) }}
	indexTerms(conv, req, ix, terms, func(i int, s float64) {
		c := scored{index: i, score: s, lex: s}
		if top.Len() < req.Limit {
			heap.Push(top, c)
		} else if better(c, top.items[0]) {
			top.items[0] = c
			heap.Fix(top, 0)
		}
	})
	return bestOf(top.items)
}

// bestOf sorts scores best first.
func bestOf(s []scored) []scored {
	slices.SortFunc(s, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	return s
}

// bm25Scores scores every utterance sharing a term with the query, from the
// posting keys in the store.
func bm25Scores(tx *storage.Tx, conv *Conversation, req SearchRequest) (map[int]float64, error) {
	scores := map[int]float64{}
	terms := text.Terms(req.Query)
	if len(terms) == 0 {
		return literalMatches(tx, conv, req)
	}
	avgdl := 1.0
	if conv.Docs > 0 {
		avgdl = float64(conv.DocLength) / float64(conv.Docs)
	}
	scorer := text.BM25{}
	seen := map[string]bool{}
	for _, term := range terms {
		if seen[term] {
			continue
		}
		seen[term] = true
		type match struct {
			index int
			p     posting
		}
		var matches []match
		err := tx.Keys(storage.Prefix(postingPrefix(conv.Conversation, term)), func(k []byte) error {
			i, p, err := parsePosting(storage.LastPart(k))
			if err != nil {
				return err
			}
			matches = append(matches, match{i, p})
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			if req.Speaker != "" && m.p.speaker != speakerCodes[req.Speaker] {
				continue
			}
			scores[m.index] += scorer.Score(m.p.tf, len(matches), conv.Docs, float64(m.p.dl), avgdl)
		}
	}
	return scores, nil
}

// literalMatches finds utterances containing the query's words as written
// (for queries of stop words only, which the term index leaves out).
func literalMatches(tx *storage.Tx, conv *Conversation, req SearchRequest) (map[int]float64, error) {
	words := text.Words(req.Query)
	scores := map[int]float64{}
	if len(words) == 0 {
		return scores, nil
	}
	err := tx.Scan(storage.Prefix(uttPrefix(conv.Conversation)), func(_, v []byte) error {
		var u Utterance
		if err := json.Unmarshal(v, &u); err != nil {
			return err
		}
		if req.Speaker != "" && u.Speaker != req.Speaker {
			return nil
		}
		have := map[string]int{}
		for _, w := range text.Words(u.Text) {
			have[w]++
		}
		score := 0.0
		for _, w := range words {
			if have[w] == 0 {
				return nil
			}
			score += float64(have[w])
		}
		scores[u.UtteranceIndex] = score / float64(len(text.Words(u.Text))+1)
		return nil
	})
	return scores, err
}

// similarities is the cosine similarity of the query to every stored
// embedding of the conversation. Vectors of another dimension than q's
// (another model's) are skipped and told of in engine.info's embeddings
// (package embed); embeddings.reembed replaces them.
func similarities(tx *storage.Tx, c string, q []float32) (map[int]float64, error) {
	out := map[int]float64{}
	_, err := embed.Similarities(tx, vecPrefix(c), q, func(k []byte, cos float64) {
		i, _ := storage.ParseUint64(storage.LastPart(k))
		out[int(i)] = cos
	})
	return out, err
}

// scored is an utterance's score, and its parts.
type scored struct {
	index      int
	score, lex float64
	sem        float64
	hasSem     bool
}

// rank blends the scores, orders the hits (score, then newest first) and
// reads the utterances of the best ones. Without embeddings the score is the
// BM25 score itself; with them it is the mean of BM25 normalised by the best
// BM25 score and the cosine similarity (an utterance without an embedding
// gets its normalised BM25), and an utterance with no word of the query
// counts only if its similarity reaches search.SemanticThreshold.
func rank(tx *storage.Tx, c string, req SearchRequest, lexical, semantic map[int]float64) ([]Hit, error) {
	maxLex := 0.0
	for _, s := range lexical {
		maxLex = max(maxLex, s)
	}
	var all []scored
	for i, l := range lexical {
		s := scored{index: i, score: l, lex: l}
		if sem, ok := semantic[i]; ok {
			s.sem, s.hasSem = sem, true
			s.score = (l/maxLex + sem) / 2
		} else if len(semantic) > 0 {
			// An utterance whose embedding is missing (it failed) is
			// scored on the same scale as the others: its normalised BM25
			// standing for both halves, neither helped nor hurt.
			s.score = l / maxLex
		}
		all = append(all, s)
	}
	for i, sem := range semantic {
		if _, ok := lexical[i]; ok || sem < search.SemanticThreshold {
			continue
		}
		all = append(all, scored{index: i, score: sem / 2, sem: sem, hasSem: true})
	}
	// The best first: a heap, from which only as many are taken as needed
	// (sorting thousands of matches of a common word to return ten costs
	// more than finding them).
	h := &bestFirst[scored]{items: all, better: better}
	heap.Init(h)
	hits := []Hit{}
	for h.Len() > 0 {
		if len(hits) == req.Limit {
			break
		}
		s := heap.Pop(h).(scored)
		u, err := readUtterance(tx, c, s.index)
		if err != nil {
			continue // deleted meanwhile (its vector or postings lag)
		}
		if req.Speaker != "" && u.Speaker != req.Speaker {
			continue
		}
		h := Hit{Utterance: u, RelevanceScore: round(s.score), Lexical: round(s.lex)}
		if s.hasSem {
			sem := round(s.sem)
			h.Semantic = &sem
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// better orders hits: the higher score first, then the newer.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.index > b.index
}

// bestFirst is a heap of T, the best on top.
type bestFirst[T any] struct {
	items  []T
	better func(a, b T) bool
}

func (h *bestFirst[T]) Len() int           { return len(h.items) }
func (h *bestFirst[T]) Less(i, j int) bool { return h.better(h.items[i], h.items[j]) }
func (h *bestFirst[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *bestFirst[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *bestFirst[T]) Pop() any {
	n := len(h.items) - 1
	x := h.items[n]
	h.items = h.items[:n]
	return x
}

// round keeps scores readable and stable in JSON.
func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }
