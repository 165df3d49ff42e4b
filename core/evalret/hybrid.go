package evalret

import (
	"context"
	"time"

	rank "github.com/engram-console/engram/core/retrieval"
)

// Hybrid is the retriever of core/retrieval over each conversation's
// turns: BM25F over the speaker's name, the text and the image caption,
// with stemming, stop words, names kept whole, entity links, neighbours,
// sessions, time expressions and pseudo-relevance feedback. A turn's time
// is its session's date-time; a question is asked the day after the
// conversation's last session.
type Hybrid struct {
	convs map[string]*rank.Index
	now   map[string]time.Time
	// Params weigh the ranking (rank.DefaultParams).
	params rank.Params
}

// NewHybrid indexes every conversation of the set with the given
// parameters.
func NewHybrid(set *Set, p rank.Params) *Hybrid {
	h := &Hybrid{convs: map[string]*rank.Index{}, now: map[string]time.Time{}, params: p}
	for _, c := range set.Conversations {
		var docs []rank.Doc
		var last time.Time
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				docs = append(docs, rank.Doc{ID: t.ID, Session: s.ID, Time: s.DateTime, Speaker: t.Speaker, Text: t.Text, Caption: t.ImageCaption})
			}
			if s.DateTime.After(last) {
				last = s.DateTime
			}
		}
		h.convs[c.ID] = rank.Build(docs, p)
		h.now[c.ID] = last.AddDate(0, 0, 1)
	}
	return h
}

// Search ranks the conversation's turns for the query.
func (h *Hybrid) Search(_ context.Context, conversation, query string, k int) ([]string, error) {
	ix := h.convs[conversation]
	if ix == nil {
		return nil, nil
	}
	res, err := ix.Search(rank.Query{Text: query, Now: h.now[conversation], Limit: k})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids, nil
}
