package evalret

import (
	"context"
	"fmt"
	"slices"

	"github.com/engram-console/engram/core/embed"
	rank "github.com/engram-console/engram/core/retrieval"
	"github.com/engram-console/engram/core/search"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// RetrieverHybridHashed is the hybrid ranker fused by reciprocal rank
// fusion with the vector ranking of a scripted embedding model
// (llmtest.Hashed: feature hashing of stemmed words and trigrams, a
// stand-in for a real embedding model, not a semantic one).
const RetrieverHybridHashed = "hybrid+hashed"

// RetrieverHashed is the scripted hashed model's vector ranking alone:
// what the fusion adds to the hybrid ranking is judged beside it.
const RetrieverHashed = "hashed"

// FusionDepth is how many turns of each ranking are fused.
const FusionDepth = 50

// Fusion fuses the hybrid ranking with an embedding model's vector
// ranking by reciprocal rank fusion (retrieval.Fuse), as history.search
// does with a model configured: the same texts embedded, the same depth,
// the same floor for turns found by their vectors alone.
type Fusion struct {
	hybrid *Hybrid
	model  llm.Provider
	// vecs are each conversation's turn vectors.
	vecs map[string]*Vectors
	// alone ranks by the vectors only (RetrieverHashed).
	alone bool
}

// Vectors are a conversation's turn vectors, for a brute-force ranking.
type Vectors struct {
	ix embed.Index
}

// Add appends a turn's vector.
func (vs *Vectors) Add(id string, v []float32) { vs.ix.Add([]byte(id), embed.Vector{Values: v}) }

// Pack readies the vectors for ranking (after the last Add).
func (vs *Vectors) Pack() { vs.ix.Pack() }

// Rank is the ids of the n turns most similar to q (by cosine), best
// first; vectors of another dimension are skipped.
func (vs *Vectors) Rank(q []float32, n int) []string {
	near, _ := vs.ix.Nearest(q, n)
	out := make([]string, len(near))
	for i, h := range near {
		out[i] = string(h.Key)
	}
	return out
}

// NewFusion embeds every turn of the set with model (in batches of
// embed.BatchSize) and indexes it for the hybrid ranker.
func NewFusion(ctx context.Context, set *Set, model llm.Provider) (*Fusion, error) {
	f := &Fusion{hybrid: NewHybrid(set, rank.DefaultParams), model: model, vecs: map[string]*Vectors{}}
	for _, c := range set.Conversations {
		vs := &Vectors{}
		var texts, ids []string
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				ids = append(ids, t.ID)
				// What history embeds: the utterance's text as the scratch
				// engine writes it.
				texts = append(texts, turnText(t))
			}
		}
		for start := 0; start < len(texts); start += embed.BatchSize {
			batch := texts[start:min(start+embed.BatchSize, len(texts))]
			resp, err := model.Embed(ctx, llm.EmbedRequest{Texts: batch})
			if err != nil {
				return nil, fmt.Errorf("embedding conversation %s: %w", c.ID, err)
			}
			if len(resp.Vectors) != len(batch) {
				return nil, fmt.Errorf("embedding conversation %s: %d vectors for %d texts", c.ID, len(resp.Vectors), len(batch))
			}
			for i, v := range resp.Vectors {
				vs.Add(ids[start+i], v)
			}
		}
		vs.Pack()
		f.vecs[c.ID] = vs
	}
	return f, nil
}

// NewHybridHashed is NewFusion with the scripted hashed model.
func NewHybridHashed(ctx context.Context, set *Set) (*Fusion, error) {
	return NewFusion(ctx, set, llmtest.Hashed{})
}

// VectorsOnly is f ranking by the vectors alone.
func (f *Fusion) VectorsOnly() *Fusion {
	g := *f
	g.alone = true
	return &g
}

// Search fuses the two rankings of the conversation's turns.
func (f *Fusion) Search(ctx context.Context, conversation, query string, k int) ([]string, error) {
	if f.alone {
		vs := f.vecs[conversation]
		if vs == nil {
			return nil, nil
		}
		resp, err := f.model.Embed(ctx, llm.EmbedRequest{Texts: []string{query}})
		if err != nil || len(resp.Vectors) != 1 {
			return nil, fmt.Errorf("embedding the question: %w", err)
		}
		return vs.Rank(resp.Vectors[0], k), nil
	}
	lexical, err := f.hybrid.Search(ctx, conversation, query, FusionDepth)
	if err != nil {
		return nil, err
	}
	vs := f.vecs[conversation]
	if vs == nil {
		return nil, nil
	}
	resp, err := f.model.Embed(ctx, llm.EmbedRequest{Texts: []string{query}})
	if err != nil || len(resp.Vectors) != 1 {
		return lexical[:min(k, len(lexical))], nil // the model failed: lexical alone, as the product does
	}
	return FuseRankings(lexical, vs.closeEnough(resp.Vectors[0], lexical), k), nil
}

// closeEnough is the vector ranking history.search fuses: the FusionDepth
// turns most similar to q, those the lexical ranking did not find only if
// close in meaning indeed (search.SemanticThreshold).
func (vs *Vectors) closeEnough(q []float32, lexical []string) []string {
	near, _ := vs.ix.Nearest(q, FusionDepth)
	out := make([]string, 0, len(near))
	for _, h := range near {
		if id := string(h.Key); h.Cosine >= search.SemanticThreshold || slices.Contains(lexical, id) {
			out = append(out, id)
		}
	}
	return out
}

// FuseRankings is the first k ids of the lexical and vector rankings
// fused by reciprocal rank fusion.
func FuseRankings(lexical, vector []string, k int) []string {
	fused := rank.Fuse(lexical, vector)
	out := make([]string, 0, min(k, len(fused)))
	for _, f := range fused[:min(k, len(fused))] {
		out = append(out, f.ID)
	}
	return out
}
