package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Ranks remember can order by.
var Ranks = []string{"relevance", "importance", "recency"}

const (
	defaultRememberLimit = 10
	maxRememberLimit     = 1000
	// relevanceFloor: an item counts as relevant when its score reaches this
	// share of the best one, so that ordering by importance or recency does
	// not promote a passing mention over the item the prompt is about.
	relevanceFloor = 0.25
	// poolFactor: remember orders at most this many times limit of the most
	// relevant items (at least minPool).
	poolFactor = 10
	minPool    = 100
)

// Remember returns the items relevant to the prompt that pass the filters,
// ordered per the store's type (working: importance; episodic: recency) or
// per req.Rank. An empty prompt makes every item relevant.
func (s *store) Remember(ctx context.Context, call action.Call, req RememberRequest) ([]Recalled, error) {
	if req.Limit < 0 {
		return nil, kit.Validation("limit", "must be positive")
	}
	if req.Limit == 0 {
		req.Limit = defaultRememberLimit
	}
	if req.Limit > maxRememberLimit {
		return nil, kit.Validation("limit", "at most %d", maxRememberLimit)
	}
	if req.Rank != "" && !slices.Contains(Ranks, req.Rank) {
		return nil, kit.Validation("rank", "unknown rank %q; use relevance, importance or recency", req.Rank)
	}
	meta, err := metadataFilter(req.Filters.Metadata)
	if err != nil {
		return nil, err
	}
	now := call.Clock.Now()
	rt, err := parseRecallTime(req.Prompt, req.When, now)
	if err != nil {
		return nil, err
	}
	var queryVec []float32
	if strings.TrimSpace(req.Prompt) != "" && llm.Available(s.env.LLM) {
		if resp, err := s.env.LLM.Embed(ctx, llm.EmbedRequest{Texts: []string{req.Prompt}}); err == nil && len(resp.Vectors) == 1 {
			queryVec = resp.Vectors[0]
		}
	}
	out := []Recalled{}
	err = s.env.Store.View(func(tx *storage.Tx) error {
		st, err := s.loadAs(tx, call, access.Read)
		if err != nil {
			return err
		}
		rank := req.Rank
		if rank == "" {
			rank = map[string]string{TypeWorking: "importance", TypeEpisodic: "recency"}[st.Type]
		}
		ids, err := s.idFilter(tx, req.Filters)
		if err != nil {
			return err
		}
		pass := func(it *Item) bool { return (req.IncludeDeleted || !it.Deleted) && req.Filters.match(it, meta) }
		tf, err := s.timeFilter(tx, rt.windows, req.IncludeDeleted)
		if err != nil {
			return err
		}
		if strings.TrimSpace(req.Prompt) == "" || rt.wordless(req.Prompt) {
			out, err = s.rememberAllIn(tx, rank, req, ids, pass, tf)
			if err == nil && req.Explain {
				err = s.explain(tx, out, rank, "", nil, nil, nil, now, tf)
			}
			return err
		}
		// Filters the indexes cannot answer: a candidate may fail them.
		postFilter := req.Filters.Since != nil || req.Filters.Until != nil || len(meta) > 0
		// The words of the prompt's time expressions are not looked up.
		lexReq := req
		lexReq.Prompt = rt.lexical
		var lexical map[string]float64
		var lq *lexQuery
		out, lexical, lq, err = s.rememberRelevant(tx, st, lexReq, rank, queryVec, ids, pass, postFilter, tf)
		if err == nil && req.Explain {
			err = s.explain(tx, out, rank, rt.lexical, lexical, lq, queryVec, now, tf)
		}
		return err
	})
	return out, err
}

// explain sets each recalled item's Why: the prompt's words it contains
// (prompt: without its time expressions), and the thesaurus words and
// tags that stood for them (lq, the lexical query), its lexical score
// (lexical: by id), its embedding's similarity to queryVec (when there is
// one), the windows of tf it is inside, importance and age at now, and
// the parts its score is the sum of.
func (s *store) explain(tx *storage.Tx, recalled []Recalled, rank, prompt string, lexical map[string]float64, lq *lexQuery, queryVec []float32,
	now time.Time, tf *timeFilter) error {
	words := text.Words(prompt)
	literal := prompt != "" && len(text.Terms(prompt)) == 0
	bestLexical := 0.0
	for _, v := range lexical {
		bestLexical = max(bestLexical, v)
	}
	for i := range recalled {
		it := recalled[i].Item
		why := &Why{Rank: rank, Terms: []string{}, Literal: literal, Lexical: round(lexical[it.ID]), Importance: it.Importance,
			AgeSeconds: int64(now.Sub(it.Timestamp) / time.Second)}
		why.Matched = matchedTerms(it, words, literal)
		for _, m := range why.Matched {
			if m.Field == "text" {
				why.Terms = append(why.Terms, m.Term)
			}
		}
		sh := lq.share(it.ID)
		why.Matched = append(why.Matched, thesaurusMatches(it, sh)...)
		why.Synonyms = lq.expansion()
		why.Tagged = sh.tagged
		if queryVec != nil {
			raw, err := tx.Get(vecKey(s.name, it.ID))
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			// Another model's vector (even of the same dimension) says
			// nothing of this query: the ranking left it out too.
			if vec := embed.Decode(raw); err == nil && vec.Dim() == len(queryVec) && embed.SameModel(vec.Model, s.env.Embeddings().Model()) {
				cos := round(search.Cosine(queryVec, vec.Values))
				why.Vector = &cos
			}
		}
		why.Windows = tf.windowsOf(it)
		why.Parts, why.Score = scoreParts(it, lexical, sh, bestLexical, why.Vector, queryVec != nil, len(why.Windows) > 0, now)
		why.Text = whyText(why)
		recalled[i].Why = why
	}
	return nil
}

// whyText says a Why in one line, e.g. "matched porto (BM25 0.44);
// importance 0.9; stored 4d ago; ranked by importance".
func whyText(w *Why) string {
	var parts []string
	switch {
	case len(w.Terms) > 0 && w.Literal:
		parts = append(parts, "contains "+strings.Join(w.Terms, ", ")+" as written")
	case len(w.Terms) > 0:
		parts = append(parts, fmt.Sprintf("matched %s (BM25 %.2f)", strings.Join(w.Terms, ", "), w.partValue(PartLexical)))
	}
	var syns []string
	for _, m := range w.Matched {
		if m.SynonymOf != "" {
			syns = append(syns, m.Term+" for "+m.SynonymOf)
		}
	}
	if len(syns) > 0 {
		parts = append(parts, fmt.Sprintf("thesaurus: %s (+%.2f)", strings.Join(syns, ", "), w.partValue(PartSynonyms)))
	}
	if len(w.Tagged) > 0 {
		parts = append(parts, fmt.Sprintf("tagged %s (+%.2f)", strings.Join(w.Tagged, ", "), w.partValue(PartTags)*tagWeight))
	}
	if w.Vector != nil {
		parts = append(parts, fmt.Sprintf("similar in meaning (cosine %.2f)", *w.Vector))
	}
	if len(w.Windows) > 0 {
		parts = append(parts, fmt.Sprintf("in the time asked about: %s (score ×%g)", strings.Join(w.Windows, ", "), 1+TimeBoost))
	}
	parts = append(parts, fmt.Sprintf("importance %.2g", w.Importance), "stored "+ago(time.Duration(w.AgeSeconds)*time.Second), "ranked by "+w.Rank)
	return strings.Join(parts, "; ")
}

// partValue is the value of a part of w (0 when it has none): the
// lexical stage's parts, unscaled by a blend with embeddings.
func (w *Why) partValue(name string) float64 {
	for _, p := range w.Parts {
		if p.Name == name {
			return p.Value
		}
	}
	return 0
}

// ago says a duration roughly: "just now", "5m ago", "3h ago", "4d ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// rememberAll lists the items in the rank's own order (no prompt): the
// live ones from their ordering index, merged with the soft-forgotten ones
// from theirs when asked to include them. ids (if not nil) leaves out what
// the agent, tag and type filters exclude before any item is read.
func (s *store) rememberAll(tx *storage.Tx, rank string, req RememberRequest, ids func(string) bool, pass func(*Item) bool) ([]Recalled, error) {
	kind := "imp"
	if rank == "recency" || rank == "relevance" {
		kind = "time"
	}
	var skip func(string) bool
	if ids != nil {
		skip = func(id string) bool { return !ids(id) }
	}
	type entry struct {
		sortKey []byte
		it      *Item
	}
	collect := func(prefix []byte) ([]entry, error) {
		var out []entry
		err := s.walkPrefix(tx, prefix, true, skip, func(k []byte, it *Item) error {
			if pass(it) {
				out = append(out, entry{k, it})
			}
			if len(out) == req.Limit {
				return storage.ErrStop
			}
			return nil
		})
		return out, err
	}
	all, err := collect(idxPrefix(s.name, kind))
	if err != nil {
		return nil, err
	}
	if req.IncludeDeleted {
		deleted, err := collect(idxPrefix(s.name, "del", kind))
		if err != nil {
			return nil, err
		}
		// Both lists are in index order, and so is their merge: the same
		// sort key (importance, time, id) under both prefixes.
		all = append(all, deleted...)
		slices.SortStableFunc(all, func(a, b entry) int { return bytes.Compare(b.sortKey, a.sortKey) })
		all = all[:min(len(all), req.Limit)]
	}
	out := make([]Recalled, len(all))
	for i, e := range all {
		out[i] = Recalled{Item: e.it, Confidence: 1}
	}
	return out, nil
}

// rememberRelevant scores the prompt (BM25, blended with embeddings),
// keeps the relevant items that pass the filters, orders them by rank.
// An item is relevant when it scores at least relevanceFloor of the best
// item that passes the filters; its confidence is its score relative to
// that best one.
func (s *store) rememberRelevant(tx *storage.Tx, st *state, req RememberRequest, rank string, queryVec []float32,
	ids func(string) bool, pass func(*Item) bool, postFilter bool, tf *timeFilter) ([]Recalled, map[string]float64, *lexQuery, error) {
	keep := func(id string, attr byte) bool {
		return (req.IncludeDeleted || attr != attrDeleted) && (ids == nil || ids(id))
	}
	postings, err := s.postings(tx)
	if err != nil {
		return nil, nil, nil, err
	}
	tags, err := s.tagPostings(tx)
	if err != nil {
		return nil, nil, nil, err
	}
	lq, err := lexicalQuery(req.Prompt, search.Stats{Docs: st.Docs, TotalLength: st.TotalLength}, postings, tags, keep)
	if err != nil {
		return nil, nil, nil, err
	}
	if lq.tagged() && !req.IncludeDeleted && st.Deleted > 0 {
		// The tag index does not mark soft-forgotten items as postings
		// do (a tag's postings carry attr 0): their ids keep them from
		// scoring and so from raising the floor. Read once per version of
		// the store, as postings are: a store at capacity evicts, and its
		// forgotten items may be most of it.
		gone, err := s.forgottenItems(tx)
		if err != nil {
			return nil, nil, nil, err
		}
		live := keep
		keep = func(id string, attr byte) bool {
			if !live(id, attr) {
				return false
			}
			if attr != 0 {
				return true
			}
			_, forgotten := slices.BinarySearchFunc(gone, id, func(p search.Posting, id string) int { return strings.Compare(p.Doc, id) })
			return !forgotten
		}
	}
	scored := lq.scores(keep)
	// The map of scores is built only for what needs one: explaining
	// (lexical scores by id), blending with embeddings, a literal match.
	var scores, lexical map[string]float64
	asMap := func() map[string]float64 {
		m := make(map[string]float64, len(scored))
		for _, d := range scored {
			m[d.Doc] = d.Score
		}
		return m
	}
	if len(text.Terms(req.Prompt)) == 0 {
		// Only stop words ("what was it"): find them as written.
		if scores, err = s.literal(tx, req.Prompt, keep); err != nil {
			return nil, nil, nil, err
		}
	} else if req.Explain || queryVec != nil {
		scores = asMap()
	}
	lexical = scores
	if queryVec != nil {
		keepID, err := s.vectorFilter(tx, req.IncludeDeleted, ids)
		if err != nil {
			return nil, nil, nil, err
		}
		if scores, err = s.blend(tx, scores, queryVec, keepID); err != nil {
			return nil, nil, nil, err
		}
	}
	if scores != nil {
		scored = scored[:0]
		for id, sc := range scores {
			scored = append(scored, search.DocScore{Doc: id, Score: sc})
		}
	}
	// Items stored inside a time the prompt (or when) names score more:
	// now when the ids inside are known, else (a broad window) as each
	// candidate is read, the floor lowered for what a lift may raise.
	lift := tf.boost(scored)
	// Without filters on the items themselves, every candidate passes and
	// the best of them all sets the floor: only those above it are sorted.
	threshold := 0.0
	if !postFilter {
		for _, d := range scored {
			threshold = max(threshold, d.Score)
		}
		threshold *= relevanceFloor / lift
	}
	cands := make([]cand, 0, len(scored))
	for _, d := range scored {
		if d.Score > 0 && d.Score >= threshold {
			cands = append(cands, cand{d.Doc, d.Score})
		}
	}
	pool := max(req.Limit*poolFactor, minPool)
	if !postFilter {
		cands = topCands(cands, pool)
	} else {
		slices.SortFunc(cands, compareCands)
	}
	var picked []Recalled
	best := 0.0
	for _, c := range cands {
		if len(picked) == pool || (best > 0 && c.score*lift < relevanceFloor*best) {
			break
		}
		it, err := s.get(tx, c.id)
		if errs.KindOf(err) == errs.NotFound {
			continue // an index entry without its item: leave it out
		} else if err != nil {
			return nil, nil, nil, err
		}
		if !pass(it) {
			continue
		}
		sc := c.score
		if lift > 1 && tf.inside(it) {
			sc *= lift
		}
		best = max(best, sc)
		picked = append(picked, Recalled{Item: it, Score: sc})
	}
	if lift > 1 {
		// A lift read late may have raised the best above the earlier.
		picked = slices.DeleteFunc(picked, func(r Recalled) bool { return r.Score < relevanceFloor*best })
	}
	for i := range picked {
		picked[i].Confidence = round(picked[i].Score / best)
		picked[i].Score = round(picked[i].Score)
	}
	slices.SortStableFunc(picked, func(a, b Recalled) int { return compareBy(rank, a, b) })
	if len(picked) > req.Limit {
		picked = picked[:req.Limit]
	}
	if picked == nil {
		picked = []Recalled{}
	}
	return picked, lexical, lq, nil
}

// cand is a scored item id.
type cand struct {
	id    string
	score float64
}

// compareCands orders by score, best first, then by id.
func compareCands(a, b cand) int {
	if a.score != b.score {
		if a.score > b.score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.id, b.id)
}

// topCands is the k best candidates, best first, without sorting them all.
func topCands(cands []cand, k int) []cand {
	if len(cands) > 4*k {
		// Keep a sorted window of the k best seen so far.
		top := make([]cand, 0, k+1)
		for _, c := range cands {
			if len(top) == k && compareCands(c, top[k-1]) >= 0 {
				continue
			}
			i, _ := slices.BinarySearchFunc(top, c, compareCands)
			top = slices.Insert(top, i, c)
			if len(top) > k {
				top = top[:k]
			}
		}
		return top
	}
	slices.SortFunc(cands, compareCands)
	return cands
}

// compareBy orders two recalled items by rank, breaking ties by relevance,
// then recency, then id.
func compareBy(rank string, a, b Recalled) int {
	cmpF := func(x, y float64) int {
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	}
	var c int
	switch rank {
	case "importance":
		c = cmpF(a.Importance, b.Importance)
	case "recency":
		c = b.Timestamp.Compare(a.Timestamp)
	}
	if c == 0 {
		c = cmpF(a.Score, b.Score)
	}
	if c == 0 {
		c = b.Timestamp.Compare(a.Timestamp)
	}
	if c == 0 {
		c = strings.Compare(a.ID, b.ID)
	}
	return c
}

// idFilter turns the agent, tag and type filters into a test on ids,
// answered from key-only index scans (nil when there are none).
func (s *store) idFilter(tx *storage.Tx, f Filters) (func(string) bool, error) {
	var sets []map[string]bool
	scan := func(kind string, values ...string) error {
		set := map[string]bool{}
		for _, v := range values {
			err := tx.Keys(storage.Prefix(idxPrefix(s.name, kind, v)), func(k []byte) error {
				set[storage.LastPart(k)] = true
				return nil
			})
			if err != nil {
				return err
			}
		}
		sets = append(sets, set)
		return nil
	}
	if f.AgentID != "" {
		if err := scan("agent", f.AgentID); err != nil {
			return nil, err
		}
	}
	if len(f.Tags) > 0 {
		tags := make([]string, len(f.Tags))
		for i, t := range f.Tags {
			tags[i] = strings.ToLower(strings.TrimSpace(t))
		}
		if err := scan("tag", tags...); err != nil {
			return nil, err
		}
	}
	if f.Type != "" {
		if err := scan("type", f.Type); err != nil {
			return nil, err
		}
	}
	if len(sets) == 0 {
		return nil, nil
	}
	return func(id string) bool {
		for _, set := range sets {
			if !set[id] {
				return false
			}
		}
		return true
	}, nil
}

// vectorFilter is the test on ids for embeddings, which carry no mark of
// deletion: ids, and unless deleted items are wanted, not soft-forgotten
// (a key-only scan; blending reads every embedding anyway).
func (s *store) vectorFilter(tx *storage.Tx, includeDeleted bool, ids func(string) bool) (func(string) bool, error) {
	if includeDeleted {
		return ids, nil
	}
	gone := map[string]bool{}
	err := tx.Keys(storage.Prefix(idxPrefix(s.name, "del", "time")), func(k []byte) error {
		gone[storage.LastPart(k)] = true
		return nil
	})
	return func(id string) bool { return !gone[id] && (ids == nil || ids(id)) }, err
}

// literal scores items containing every word of a stop-word prompt.
func (s *store) literal(tx *storage.Tx, prompt string, keep func(string, byte) bool) (map[string]float64, error) {
	words := text.Words(prompt)
	scores := map[string]float64{}
	if len(words) == 0 {
		return scores, nil
	}
	err := tx.Scan(storage.Prefix(itemPrefix(s.name)), func(_, v []byte) error {
		var it Item
		if err := json.Unmarshal(v, &it); err != nil {
			return err
		}
		if keep != nil && !keep(it.ID, attrOf(&it)) {
			return nil
		}
		have := map[string]bool{}
		for _, w := range text.Words(it.Text) {
			have[w] = true
		}
		for _, w := range words {
			if !have[w] {
				return nil
			}
		}
		scores[it.ID] = 1
		return nil
	})
	return scores, err
}

// blend mixes lexical scores with embedding similarity: the mean of the
// lexical score (scaled by the best) and the cosine; items sharing no word
// count when their similarity reaches search.SemanticThreshold.
func (s *store) blend(tx *storage.Tx, lexical map[string]float64, q []float32, keep func(string) bool) (map[string]float64, error) {
	best := 0.0
	for _, v := range lexical {
		best = max(best, v)
	}
	out := map[string]float64{}
	// Vectors of another dimension (another model's) are skipped and told
	// of in engine.info (package embed); their items keep their lexical
	// score until embeddings.reembed replaces them.
	_, err := embed.Similarities(tx, storage.PrefixKey(storage.PrefixMemory, "vec", s.name), q, func(k []byte, cos float64) {
		id := storage.LastPart(k)
		if keep != nil && !keep(id) {
			return
		}
		if lex, ok := lexical[id]; ok {
			l := 0.0
			if best > 0 {
				l = lex / best
			}
			out[id] = (l + cos) / 2
		} else if cos >= search.SemanticThreshold {
			out[id] = cos / 2
		}
	})
	// Relevant items without an embedding keep their scaled lexical score.
	for id, lex := range lexical {
		if _, ok := out[id]; !ok && best > 0 {
			out[id] = lex / best / 2
		}
	}
	return out, err
}

// metadataFilter reads the metadata filter: an object of members to match.
func metadataFilter(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, kit.Validation("filters.metadata", "must be a JSON object of members to match")
	}
	return m, nil
}

// match applies the filters an index does not answer (time, metadata) — and
// the others again, for items read directly.
func (f Filters) match(it *Item, meta map[string]json.RawMessage) bool {
	switch {
	case f.AgentID != "" && it.AgentID != f.AgentID,
		f.Type != "" && it.Type != f.Type,
		f.Since != nil && it.Timestamp.Before(*f.Since),
		f.Until != nil && !it.Timestamp.Before(*f.Until):
		return false
	}
	if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, func(t string) bool {
		return slices.Contains(it.Tags, strings.ToLower(strings.TrimSpace(t)))
	}) {
		return false
	}
	if len(meta) > 0 {
		var have map[string]json.RawMessage
		_ = json.Unmarshal(it.Metadata, &have) // metadata that is not an object matches no filter
		for k, want := range meta {
			if !jsonEqual(have[k], want) {
				return false
			}
		}
	}
	return true
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }
