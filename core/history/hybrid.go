package history

import (
	"cmp"
	"encoding/json"
	"github.com/engram-console/engram/core/kit"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/storage"
)

// The hybrid indexes: each conversation's utterances (buffer and archive)
// as core/retrieval documents, in memory, which history.search ranks with
// the hybrid ranker. The store stays the truth: an index is built from the
// utterances stored on a conversation's first search, and says which index
// version (Conversation.IndexVersion, raised with every write and delete in
// the same transaction) it holds. A search uses it only at the version its
// own transaction reads. A committed write is appended to it
// (retrieval.Index.Add); anything else — a delete, a drop, a move, a change
// it missed — throws it away, and the next search builds it again. So it
// never answers with an utterance the store no longer holds, and every
// hit is read again from the store.

// SessionGap is how long a pause starts a new session of a conversation
// whose utterances name none (metadata "session"): the ranker lifts the
// turns of a hit's session.
const SessionGap = 4 * time.Hour

// The hybrid indexes' bounds, from BenchmarkHistorySearch100k (~30-word
// utterances in daily sessions): an index of 100,000 utterances takes
// 88 MB and 4.6 s to build, p50 2.2 ms a search; of 200,000, 173 MB and
// 13.6 s, p50 6.1 ms, p99 12 ms (load 3 on 2 cores). The README's 600 MB
// for a store of 1M items and 1M utterances leaves little beside the
// postings of the 1M-utterance conversation (140 MB).
const (
	// HybridMaxUtterances is the most utterances a conversation holds
	// for history.search to rank it with the hybrid ranker (its first
	// search builds the index: ~6 s, ~90 MB at this size). A larger one
	// is searched by plain BM25 over its persisted postings
	// (searchPlain: p50 2.2 ms at 1M utterances, 140 MB of postings in
	// memory), its hits' why saying so (PartPlainBM25).
	HybridMaxUtterances = 100_000
	// HybridMaxDocs bounds the utterances the hybrid indexes of all
	// conversations hold together (~175 MB; two of the largest): past
	// it, the index least recently searched or written is thrown away,
	// and its conversation's next search builds it again.
	HybridMaxDocs = 200_000
	// HybridRebuildMax is the most utterances an index holds for a write
	// to build it again when the turn written changes how earlier turns
	// read (retrieval.Index.Add: a new name, alias or relation; ~0.5 s
	// at this size). A larger index has the turn appended without
	// building (retrieval.Index.Append): the earlier turns keep how they
	// read until the index is next built from the store, and no write
	// waits seconds for a build of a long conversation.
	HybridRebuildMax = 10_000
)

// hybridIndexes holds the conversations' hybrid indexes by name.
type hybridIndexes struct {
	mu    sync.Mutex
	convs map[string]*hybridIndex
	// docs is the utterances the indexes hold together; tick numbers
	// the uses (searches and writes), for throwing the least recently
	// used away first. Both under mu.
	docs int
	tick uint64
	// The bounds (HybridMaxUtterances, HybridMaxDocs, HybridRebuildMax),
	// which tests lower.
	maxUtterances, maxDocs, rebuildMax int
	// builds counts the indexes built from the store (for tests: a write
	// is appended, not rebuilt); rebuilds counts the indexes a write
	// built again (retrieval.Index.Add); evictions counts those thrown
	// away to stay within maxDocs.
	builds, rebuilds, evictions atomic.Int64
	// inflight are the builds under way (catchup.go), under mu.
	inflight builds
	// afterSnapshot (tests) runs in a build once it has read the
	// utterances, before it builds.
	afterSnapshot func(c string)
}

func newHybridIndexes() *hybridIndexes {
	return &hybridIndexes{convs: map[string]*hybridIndex{},
		maxUtterances: HybridMaxUtterances, maxDocs: HybridMaxDocs, rebuildMax: HybridRebuildMax}
}

// hybridIndex is one conversation's index at one version. Its lock keeps
// searches (read) and appends (write) apart.
type hybridIndex struct {
	mu      sync.RWMutex
	version uint64
	// dead: thrown away; a search that found it before must not use it.
	dead bool
	ix   *retrieval.Index
	// utt and speaker are each document's utterance index and speaker
	// code (user, assistant, system).
	utt     []int
	speaker []byte
	// last and gaps number the sessions SessionGap makes.
	last time.Time
	gaps int
	// docs and used are the utterances it holds and its last use (a
	// hybridIndexes.tick), under hybridIndexes.mu.
	docs int
	used uint64
}

// lookup returns conversation c's index if it holds version v, with its
// read lock held (the caller calls done when it has read it), or nil.
func (p *hybridIndexes) lookup(c string, v uint64) (hi *hybridIndex, done func()) {
	p.mu.Lock()
	hi = p.convs[c]
	if hi != nil {
		p.tick++
		hi.used = p.tick
	}
	p.mu.Unlock()
	if hi == nil {
		return nil, nil
	}
	hi.mu.RLock()
	if hi.dead || hi.version != v {
		hi.mu.RUnlock()
		return nil, nil
	}
	return hi, hi.mu.RUnlock
}

// has says whether conversation c's index is there at version v.
func (p *hybridIndexes) has(c string, v uint64) bool {
	hi, done := p.lookup(c, v)
	if hi != nil {
		done()
	}
	return hi != nil
}

// install keeps hi, built from a snapshot by run, as conversation c's
// index once it has caught up with the writes committed since (unless one
// of them cannot be replayed: see catchup.go), throwing away the least
// recently used others while they all hold more than maxDocs.
func (p *hybridIndexes) install(c string, run *buildRun, hi *hybridIndex) {
	p.builds.Add(1)
	old, victims := p.catchUp(c, run, hi)
	if old != nil {
		old.kill()
	}
	killAll(victims)
}

// catchUp is install's part under p.mu: it replays the changes committed
// since hi's snapshot and keeps hi, unless one cannot be replayed. It
// returns the index hi replaces and those trimmed, to be killed once p.mu
// is let go (one may be being searched).
func (p *hybridIndexes) catchUp(c string, run *buildRun, hi *hybridIndex) (old *hybridIndex, victims []*hybridIndex) {
	p.mu.Lock()
	defer p.mu.Unlock()
	chain, ok := p.inflight.finish(c, run, hi.version)
replay:
	for _, vc := range chain {
		for _, ch := range vc.changes {
			if !ch.add || ch.u == nil {
				ok = false // a delete: the next search builds again
				break replay
			}
			if hi.add(p.rebuildMax, ch.u) {
				p.rebuilds.Add(1)
			}
		}
		hi.version = vc.to
	}
	if !ok || hi.ix.Len() > p.maxUtterances {
		return nil, nil
	}
	old = p.convs[c]
	if old != nil {
		p.docs -= old.docs
	}
	hi.docs = hi.ix.Len()
	p.docs += hi.docs
	p.tick++
	hi.used = p.tick
	p.convs[c] = hi
	return old, p.trim(c)
}

// trim takes the least recently used indexes but conversation keep's
// out while they all hold more than maxDocs, and returns them (for the
// caller to kill once it has let go of p.mu: one may be being searched).
func (p *hybridIndexes) trim(keep string) []*hybridIndex {
	var victims []*hybridIndex
	for p.docs > p.maxDocs {
		var oldest string
		var at uint64
		found := false
		for c, hi := range p.convs {
			if c != keep && (!found || hi.used < at) {
				oldest, at, found = c, hi.used, true
			}
		}
		if !found {
			break
		}
		hi := p.convs[oldest]
		delete(p.convs, oldest)
		p.docs -= hi.docs
		p.evictions.Add(1)
		victims = append(victims, hi)
	}
	return victims
}

func killAll(his []*hybridIndex) {
	for _, hi := range his {
		hi.kill()
	}
}

func (hi *hybridIndex) kill() {
	hi.mu.Lock()
	hi.dead = true
	hi.mu.Unlock()
}

// forget throws conversation c's index away, and any being built.
func (p *hybridIndexes) forget(c string) {
	p.mu.Lock()
	p.inflight.breakRun(c)
	hi := p.convs[c]
	if hi != nil {
		delete(p.convs, c)
		p.docs -= hi.docs
	}
	p.mu.Unlock()
	if hi != nil {
		hi.kill()
	}
}

// apply brings conversation c's index from version from to version to
// with a committed change: an utterance written is appended; anything
// else throws the index away. A conversation the commit created (fresh)
// starts an empty index. Changes to one conversation come one at a time
// (under its lock). An index grown past maxUtterances is thrown away
// (its conversation is searched by plain BM25 now), and the least
// recently used others while all hold more than maxDocs.
func (p *hybridIndexes) apply(c string, from, to uint64, fresh bool, ch indexChange) {
	p.mu.Lock()
	p.inflight.record(c, from, to, ch)
	hi := p.convs[c]
	if hi == nil && fresh && from == 0 && ch.add && ch.u != nil {
		hi = &hybridIndex{version: from, ix: retrieval.Build(nil, retrieval.DefaultParams)}
		p.convs[c] = hi
	}
	rebuildMax := p.rebuildMax
	p.mu.Unlock()
	if hi == nil {
		return
	}
	hi.mu.Lock()
	if !hi.dead && to <= hi.version {
		// Already in: a build read it in its snapshot, or replayed it,
		// before this report of its commit came.
		hi.mu.Unlock()
		return
	}
	ok := !hi.dead && hi.version == from && ch.add && ch.u != nil
	if ok {
		if hi.add(rebuildMax, ch.u) {
			p.rebuilds.Add(1)
		}
		hi.version = to
	}
	n := hi.ix.Len()
	hi.mu.Unlock()
	p.mu.Lock()
	var victims []*hybridIndex
	drop := !ok || n > p.maxUtterances
	switch {
	case p.convs[c] != hi:
	case drop:
		delete(p.convs, c)
		p.docs -= hi.docs
	default:
		p.docs += n - hi.docs
		hi.docs = n
		p.tick++
		hi.used = p.tick
		victims = p.trim(c)
	}
	p.mu.Unlock()
	if drop {
		hi.kill()
	}
	killAll(victims)
}

// add appends utterances (in the order of their indexes, after those
// held) to the index, and says whether that built it again: only an
// index of at most rebuildMax documents is built again
// (retrieval.Index.Add); a larger one has them appended
// (retrieval.Index.Append), so that no write waits for a build of a long
// conversation.
func (hi *hybridIndex) add(rebuildMax int, us ...*Utterance) (rebuilt bool) {
	docs := make([]retrieval.Doc, len(us))
	for i, u := range us {
		docs[i] = hi.doc(u)
		hi.utt = append(hi.utt, u.UtteranceIndex)
		hi.speaker = append(hi.speaker, speakerCodes[u.Speaker])
	}
	if hi.ix.Len() > rebuildMax {
		hi.ix.Append(docs...)
		return false
	}
	ix := hi.ix.Add(docs...)
	rebuilt = ix != hi.ix
	hi.ix = ix
	return rebuilt
}

// uttMeta are the utterance metadata the index reads.
type uttMeta struct {
	Speaker      string          `json:"speaker"`
	Session      json.RawMessage `json:"session"`
	ImageCaption string          `json:"image_caption"`
	Tags         json.RawMessage `json:"tags"`
}

// doc is utterance u as a document: its index as ID; its speaker's name
// (metadata "speaker") or else its speaker (user, assistant, system); its
// session (metadata "session", a string or a number) or else one that a
// pause of SessionGap ends; its timestamp; its image caption (metadata
// "image_caption": a text that ends with it as "[image: CAPTION]" is
// indexed without that end, so the caption counts once); and its tags
// (metadata "tags", a list of strings). Called in index order.
func (hi *hybridIndex) doc(u *Utterance) retrieval.Doc {
	var m uttMeta
	if len(u.Metadata) > 0 {
		_ = json.Unmarshal(u.Metadata, &m) // metadata is any object: what does not fit is left out
	}
	d := retrieval.Doc{ID: strconv.Itoa(u.UtteranceIndex), Speaker: u.Speaker, Time: u.Timestamp, Text: u.Text}
	if s := strings.TrimSpace(m.Speaker); s != "" {
		d.Speaker = s
	}
	if !hi.last.IsZero() && u.Timestamp.Sub(hi.last) >= SessionGap {
		hi.gaps++
	}
	hi.last = u.Timestamp
	d.Session = "\x00gap" + strconv.Itoa(hi.gaps)
	if s := metaSession(m.Session); s != "" {
		d.Session = s
	}
	if c := strings.TrimSpace(m.ImageCaption); c != "" {
		d.Caption = c
		d.Text = strings.TrimSuffix(strings.TrimSuffix(d.Text, "[image: "+c+"]"), " ")
	}
	var tags []string
	if len(m.Tags) > 0 && json.Unmarshal(m.Tags, &tags) == nil {
		d.Tags = tags
	}
	return d
}

// metaSession is a metadata session as a string ("" for none).
func metaSession(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// buildHybrid builds conversation c's index from the utterances stored,
// unless it is there at the version the store holds. It reads them from a
// snapshot, without the conversation's lock, so writes go on meanwhile;
// the build catches up with them before it is installed (catchup.go). A
// search arriving while a build is under way waits for it.
func (h *History) buildHybrid(c string) error {
	run := h.joinBuild(c, &h.hybrid.mu, &h.hybrid.inflight)
	if run == nil {
		return nil
	}
	installed := false // else the run is ended here, even by a panic
	defer func() {
		if !installed {
			h.hybrid.inflight.abandon(&h.hybrid.mu, c, run)
		}
	}()
	// Where it lives now: a move that ends later breaks the run.
	st, _, err := h.storeOf(c)
	if err != nil {
		return err
	}
	var hi *hybridIndex
	var docs []retrieval.Doc
	err = st.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil || conv == nil || h.hybrid.has(c, conv.IndexVersion) || h.plain(conv) {
			return err
		}
		read := &hybridIndex{version: conv.IndexVersion}
		err = tx.Scan(storage.Prefix(uttPrefix(c)), func(_, v []byte) error {
			var u Utterance
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			docs = append(docs, read.doc(&u))
			read.utt = append(read.utt, u.UtteranceIndex)
			read.speaker = append(read.speaker, speakerCodes[u.Speaker])
			return nil
		})
		if err == nil {
			hi = read
		}
		return err
	})
	if err != nil || hi == nil {
		return err
	}
	if h.hybrid.afterSnapshot != nil {
		h.hybrid.afterSnapshot(c)
	}
	hi.ix = retrieval.Build(docs, retrieval.DefaultParams)
	hi.ix.Compact()
	// Here, not in the first write's commit: a second at 100,000.
	hi.ix.PrepareAdd()
	installed = true // install ends the run, whatever it keeps
	h.hybrid.install(c, run, hi)
	return nil
}

// found is an utterance a search found, before it is read from the store.
type found struct {
	index      int
	score, lex float64
	sem        float64
	hasSem     bool
	why        *retrieval.Why
}

// fusionDepth is how deep each ranking fused goes: the hybrid ranker's
// and the embeddings' best fusionDepth (or the limit, if more).
const fusionDepth = 50

// ranked are the hybrid ranker's best for the request (with a model, as
// deep as fusion needs), the speaker's only when one is asked.
func (hi *hybridIndex) ranked(req SearchRequest, now time.Time, queryVec []float32) ([]found, error) {
	limit := req.Limit
	if queryVec != nil {
		limit = max(limit, fusionDepth)
	}
	q := retrieval.Query{Text: req.Query, When: req.When, Strict: strings.TrimSpace(req.When) != "", Now: now, Limit: limit, Matched: true}
	if code := speakerCodes[req.Speaker]; code != 0 {
		q.Keep = func(d int) bool { return hi.speaker[d] == code }
	}
	res, err := hi.ix.Search(q)
	if err != nil {
		return nil, searchError(err, req.When)
	}
	out := make([]found, len(res))
	for i, r := range res {
		why := r.Why
		out[i] = found{index: hi.utt[r.Index], score: r.Score, lex: r.Score, why: &why}
	}
	return out, nil
}

// searchError is a ranker's refusal as a validation error naming the
// field ("when" or "query"): an event of when's that no utterance
// matches is when's.
func searchError(err error, when string) error {
	msg := err.Error()
	for _, field := range []string{"when", "query"} {
		if rest, ok := strings.CutPrefix(msg, field+": "); ok {
			if before, after, ok := strings.Cut(rest, `"`); ok && when != "" && strings.Contains(before, "event") {
				if expr, _, ok := strings.Cut(after, `"`); ok && strings.Contains(strings.ToLower(when), strings.ToLower(expr)) {
					field = "when"
				}
			}
			return kit.Validation(field, "%s", rest)
		}
	}
	return err
}

// checkWhen refuses a time expression that places nothing.
// A quoted search is not ranked, so it cannot place an event ("after the
// move": the turn that best matches "move"): its when must be a window.
func checkWhen(when string, quoted bool, now time.Time) error {
	w := strings.TrimSpace(when)
	if w == "" {
		return nil
	}
	tq := retrieval.ParseTime(w, now)
	if len(tq.Windows) == 0 && len(tq.Anchors) == 0 || len(tq.Unparsed) > 0 {
		return kit.Validation("when", "%q names no time engram can place; use a month (\"in May 2025\"), a season (\"last summer\"), a span (\"3 weeks ago\") or \"before\"/\"after\" an event", w)
	}
	if quoted && len(tq.Anchors) > 0 {
		return kit.Validation("when", "a quoted search takes a time window (\"in May 2025\", \"last summer\"), not %q: leave out the quotes to search before or after an event", w)
	}
	return nil
}

// vectorRanking is what fuse needs of the vectors: the utterances nearest
// the query, best first (the speaker's only when one is asked; as deep as
// fuse takes them), and the similarity of each of them and of each
// lexical candidate. It reads those vectors only, not a similarity for
// every utterance.
func (hi *hybridIndex) vectorRanking(tx *storage.Tx, c string, q []float32, lexical []found, req SearchRequest) ([]int, map[int]float64, error) {
	var keep func(int) bool
	if code := speakerCodes[req.Speaker]; code != 0 {
		keep = func(i int) bool {
			d, ok := slices.BinarySearch(hi.utt, i)
			return ok && hi.speaker[d] == code
		}
	}
	near, sims, err := nearestWhere(tx, c, q, max(req.Limit, fusionDepth), keep)
	if err != nil {
		return nil, nil, err
	}
	var rest []int
	for _, f := range lexical {
		if _, ok := sims[f.index]; !ok {
			rest = append(rest, f.index)
		}
	}
	return near, sims, cosines(tx, c, q, rest, sims)
}

// fuse merges the hybrid ranking with the embedding ranking (the
// utterances' cosine similarity to the query, best first, fusionDepth
// deep) by reciprocal rank fusion (retrieval.Fuse): each hit's score is
// the fused score, its why says its similarity and both ranks. near are
// the utterances nearest the query (vectorRanking's) and sims the
// similarities of those and of the lexical candidates. The vector ranking
// is the best of the lexical candidates and of the others that reach
// search.SemanticThreshold: as deep as near goes, those others are all
// in near.
func (hi *hybridIndex) fuse(lexical []found, near []int, sims map[int]float64, req SearchRequest) []found {
	code := speakerCodes[req.Speaker]
	type vec struct {
		index int
		sim   float64
	}
	lexIDs := make([]string, len(lexical))
	byID := map[string]found{}
	candidates := slices.Clone(near)
	for i, f := range lexical {
		lexIDs[i] = strconv.Itoa(f.index)
		byID[lexIDs[i]] = f
		if !slices.Contains(near, f.index) {
			candidates = append(candidates, f.index)
		}
	}
	var vs []vec
	for _, i := range candidates {
		s, ok := sims[i]
		if !ok {
			continue // no vector (yet)
		}
		if _, lex := byID[strconv.Itoa(i)]; !lex && s < search.SemanticThreshold {
			// Close in meaning only: it must be close indeed, or every
			// search would return the whole conversation.
			continue
		}
		if code != 0 {
			if d, ok := slices.BinarySearch(hi.utt, i); !ok || hi.speaker[d] != code {
				continue
			}
		}
		vs = append(vs, vec{i, s})
	}
	slices.SortFunc(vs, func(a, b vec) int {
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return b.index - a.index
	})
	vs = vs[:min(len(vs), max(req.Limit, fusionDepth))]
	vecIDs := make([]string, len(vs))
	for i, v := range vs {
		vecIDs[i] = strconv.Itoa(v.index)
	}
	fused := retrieval.Fuse(lexIDs, vecIDs)
	out := make([]found, 0, min(len(fused), req.Limit))
	for _, fu := range fused[:min(len(fused), req.Limit)] {
		f, ok := byID[fu.ID]
		if !ok {
			f.index, _ = strconv.Atoi(fu.ID)
			f.why = &retrieval.Why{}
		}
		f.score = fu.Score
		fw := &retrieval.FusionWhy{LexicalRank: fu.Ranks[0], VectorRank: fu.Ranks[1], K: retrieval.RRFK, Score: round(fu.Score)}
		if s, ok := sims[f.index]; ok {
			f.sem, f.hasSem = s, true
			r := round(s)
			fw.Similarity = &r
		}
		// The why's score stays the sum of its parts (the hybrid
		// ranker's); the fused score, the hit's, is the fusion's.
		why := *f.why
		why.Fusion = fw
		f.why = &why
		out = append(out, f)
	}
	return out
}

// quotedText is the text of a query wholly in double quotes ("..." or
// “...”), and whether it is one.
func quotedText(q string) (string, bool) {
	q = strings.TrimSpace(q)
	for _, pair := range [][2]string{{`"`, `"`}, {"“", "”"}} {
		if len(q) > len(pair[0])+len(pair[1]) && strings.HasPrefix(q, pair[0]) && strings.HasSuffix(q, pair[1]) {
			inner := q[len(pair[0]) : len(q)-len(pair[1])]
			if !strings.ContainsAny(inner, `"“”`) && strings.TrimSpace(inner) != "" {
				return inner, true
			}
		}
	}
	return "", false
}

// PartQuote is the part of a why that says a quoted search found the
// text as written.
const PartQuote = "quote"

// quoted are the utterances whose text (or image caption) holds quote as
// written, ignoring case, newest first, inside the windows of the
// request's when if it has one (the speaker's only when one is asked).
func (hi *hybridIndex) quoted(quote string, req SearchRequest, now time.Time) []found {
	lq := strings.ToLower(quote)
	code := speakerCodes[req.Speaker]
	var windows []retrieval.Window
	if strings.TrimSpace(req.When) != "" {
		windows = retrieval.ParseTime(req.When, now).Windows
	}
	var out []found
	for d := hi.ix.Len() - 1; d >= 0 && len(out) < req.Limit; d-- {
		if code != 0 && hi.speaker[d] != code {
			continue
		}
		doc := hi.ix.Doc(d)
		if !containsFold(doc.Text, lq) && !containsFold(doc.Caption, lq) && (doc.Caption == "" || !containsFold(asWritten(doc), lq)) {
			continue
		}
		if len(windows) > 0 && !slices.ContainsFunc(windows, func(w retrieval.Window) bool { return w.Contains(doc.Time) }) {
			continue
		}
		why := &retrieval.Why{Score: 1, Parts: []retrieval.Part{{Name: PartQuote, Value: 1, Weight: 1, Contribution: 1}}}
		out = append(out, found{index: hi.utt[d], score: 1, why: why})
	}
	return out
}

// containsFold says whether s holds the lower-case text lq, ignoring case.
func containsFold(s, lq string) bool { return strings.Contains(strings.ToLower(s), lq) }

// asWritten is a captioned document's text as the utterance holds it: doc
// left its "[image: CAPTION]" end out of the text it indexes.
func asWritten(d retrieval.Doc) string { return d.Text + " [image: " + d.Caption + "]" }
