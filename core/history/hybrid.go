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

// hybridIndexes holds the conversations' hybrid indexes by name.
type hybridIndexes struct {
	mu    sync.Mutex
	convs map[string]*hybridIndex
	// builds counts the indexes built from the store (for tests: a write
	// is appended, not rebuilt).
	builds atomic.Int64
}

func newHybridIndexes() *hybridIndexes { return &hybridIndexes{convs: map[string]*hybridIndex{}} }

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
}

// lookup returns conversation c's index if it holds version v, with its
// read lock held (the caller calls done when it has read it), or nil.
func (p *hybridIndexes) lookup(c string, v uint64) (hi *hybridIndex, done func()) {
	p.mu.Lock()
	hi = p.convs[c]
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

// install keeps hi as conversation c's index.
func (p *hybridIndexes) install(c string, hi *hybridIndex) {
	p.builds.Add(1)
	p.mu.Lock()
	old := p.convs[c]
	p.convs[c] = hi
	p.mu.Unlock()
	if old != nil {
		old.kill()
	}
}

func (hi *hybridIndex) kill() {
	hi.mu.Lock()
	hi.dead = true
	hi.mu.Unlock()
}

// forget throws conversation c's index away.
func (p *hybridIndexes) forget(c string) {
	p.mu.Lock()
	hi := p.convs[c]
	delete(p.convs, c)
	p.mu.Unlock()
	if hi != nil {
		hi.kill()
	}
}

// apply brings conversation c's index from version from to version to
// with a committed change: an utterance written is appended; anything
// else throws the index away. A conversation the commit created (fresh)
// starts an empty index. Changes to one conversation come one at a time
// (under its lock).
func (p *hybridIndexes) apply(c string, from, to uint64, fresh bool, ch indexChange) {
	p.mu.Lock()
	hi := p.convs[c]
	if hi == nil && fresh && from == 0 && ch.add && ch.u != nil {
		hi = &hybridIndex{version: from, ix: retrieval.Build(nil, retrieval.DefaultParams)}
		p.convs[c] = hi
	}
	p.mu.Unlock()
	if hi == nil {
		return
	}
	hi.mu.Lock()
	ok := !hi.dead && hi.version == from && ch.add && ch.u != nil
	if ok {
		hi.add(ch.u)
		hi.version = to
	}
	hi.mu.Unlock()
	if !ok {
		p.mu.Lock()
		if p.convs[c] == hi {
			delete(p.convs, c)
		}
		p.mu.Unlock()
		hi.kill()
	}
}

// add appends utterances (in the order of their indexes, after those
// held) to the index.
func (hi *hybridIndex) add(us ...*Utterance) {
	docs := make([]retrieval.Doc, len(us))
	for i, u := range us {
		docs[i] = hi.doc(u)
		hi.utt = append(hi.utt, u.UtteranceIndex)
		hi.speaker = append(hi.speaker, speakerCodes[u.Speaker])
	}
	hi.ix = hi.ix.Add(docs...)
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
// unless it is there at the version the store holds. It holds the
// conversation's lock: no write of this process changes it meanwhile.
func (h *History) buildHybrid(c string) error {
	defer h.lock(c)()
	st, _, err := h.storeOf(c)
	if err != nil {
		return err
	}
	return st.View(func(tx *storage.Tx) error {
		conv, err := loadConversation(tx, c)
		if err != nil || conv == nil || h.hybrid.has(c, conv.IndexVersion) {
			return err
		}
		hi := &hybridIndex{version: conv.IndexVersion}
		var docs []retrieval.Doc
		err = tx.Scan(storage.Prefix(uttPrefix(c)), func(_, v []byte) error {
			var u Utterance
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			docs = append(docs, hi.doc(&u))
			hi.utt = append(hi.utt, u.UtteranceIndex)
			hi.speaker = append(hi.speaker, speakerCodes[u.Speaker])
			return nil
		})
		if err != nil {
			return err
		}
		hi.ix = retrieval.Build(docs, retrieval.DefaultParams)
		hi.ix.Compact()
		h.hybrid.install(c, hi)
		return nil
	})
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
func checkWhen(when string, now time.Time) error {
	w := strings.TrimSpace(when)
	if w == "" {
		return nil
	}
	if tq := retrieval.ParseTime(w, now); len(tq.Windows) == 0 && len(tq.Anchors) == 0 {
		return kit.Validation("when", "%q names no time engram can place; use a month (\"in May 2025\"), a season (\"last summer\"), a span (\"3 weeks ago\") or \"before\"/\"after\" an event", w)
	}
	return nil
}

// fuse merges the hybrid ranking with the embedding ranking (the
// utterances' cosine similarity to the query, best first, fusionDepth
// deep) by reciprocal rank fusion (retrieval.Fuse): each hit's score is
// the fused score, its why says its similarity and both ranks.
func (hi *hybridIndex) fuse(lexical []found, sims map[int]float64, req SearchRequest) []found {
	code := speakerCodes[req.Speaker]
	type vec struct {
		index int
		sim   float64
	}
	var vs []vec
	for i, s := range sims {
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
	lexIDs := make([]string, len(lexical))
	byID := map[string]found{}
	for i, f := range lexical {
		lexIDs[i] = strconv.Itoa(f.index)
		byID[lexIDs[i]] = f
	}
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
		why := *f.why
		why.Fusion = fw
		why.Score = round(fu.Score)
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
		if !containsFold(doc.Text, lq) && !containsFold(doc.Caption, lq) {
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
func containsFold(s, lq string) bool {
	if len(s) < len(lq) {
		return false
	}
	return strings.Contains(strings.ToLower(s), lq)
}
