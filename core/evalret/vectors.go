package evalret

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/engram-console/engram/core/embed"
	rank "github.com/engram-console/engram/core/retrieval"
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
// does with a model configured.
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
	IDs    []string
	Values [][]float32
	// inv are the vectors' inverse lengths (prepare).
	inv []float32
}

// NewFusion embeds every turn of the set with model (in batches of
// embed.BatchSize) and indexes it for the hybrid ranker.
func NewFusion(ctx context.Context, set *Set, model llm.Provider) (*Fusion, error) {
	f := &Fusion{hybrid: NewHybrid(set, rank.DefaultParams), model: model, vecs: map[string]*Vectors{}}
	for _, c := range set.Conversations {
		vs := &Vectors{}
		var texts []string
		for _, s := range c.Sessions {
			for _, t := range s.Turns {
				vs.IDs = append(vs.IDs, t.ID)
				text := t.Speaker + ": " + t.Text
				if t.ImageCaption != "" {
					text += " [image: " + t.ImageCaption + "]"
				}
				texts = append(texts, text)
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
			vs.Values = append(vs.Values, resp.Vectors...)
		}
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
	return FuseRankings(lexical, vs.Rank(resp.Vectors[0], FusionDepth), k), nil
}

// Rank is the ids of the n turns most similar to q (by cosine), best
// first; vectors of another dimension are skipped.
func (vs *Vectors) Rank(q []float32, n int) []string {
	vs.prepare()
	type hit struct {
		i   int
		cos float32
	}
	hits := make([]hit, 0, n+1)
	qn := norm(q)
	if qn == 0 || n <= 0 {
		return nil
	}
	for i, v := range vs.Values {
		if len(v) != len(q) {
			continue
		}
		c := dot(q, v) * vs.inv[i]
		if len(hits) == n && c <= hits[n-1].cos {
			continue
		}
		at, _ := slices.BinarySearchFunc(hits, c, func(h hit, c float32) int { return cmp.Compare(c, h.cos) })
		hits = slices.Insert(hits, at, hit{i, c})
		if len(hits) > n {
			hits = hits[:n]
		}
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = vs.IDs[h.i]
	}
	return out
}

// prepare computes each vector's inverse length, once.
func (vs *Vectors) prepare() {
	if len(vs.inv) == len(vs.Values) {
		return
	}
	vs.inv = make([]float32, len(vs.Values))
	for i, v := range vs.Values {
		if n := norm(v); n > 0 {
			vs.inv[i] = 1 / n
		}
	}
}

func norm(v []float32) float32 { return float32(math.Sqrt(float64(dot(v, v)))) }

// dot is the dot product of two vectors of the same length, unrolled.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
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
