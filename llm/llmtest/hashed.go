package llmtest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/engram-console/engram/llm"
	"github.com/kljensen/snowball/english"
)

// HashedDim is the dimension of Hashed's vectors.
const HashedDim = 256

// Hashed is a deterministic, offline embedding model for tests and the
// retrieval evaluation: a text's vector is its stemmed words and their
// character trigrams hashed into HashedDim signed buckets (feature
// hashing), normalised to length 1. It is a stand-in for a real embedding
// model, not a semantic one: texts are close when they share words, word
// stems or spellings ("plan", "plans", "planned"), never because they
// mean the same. Figures measured with it show what the vector path and
// its fusion with the lexical ranking do, not what a real model adds.
// It has no chat: Complete fails with llm.ErrNoModel.
type Hashed struct{}

// HashedModel is the model name Hashed reports.
const HashedModel = "hashed-trigrams-256"

// Info names the hashed model.
func (Hashed) Info() llm.Info {
	return llm.Info{Provider: "hashed", EmbedModel: HashedModel}
}

// Complete fails: the hashed model only embeds.
func (Hashed) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, &llm.Error{Provider: "hashed", Op: "chat", Err: llm.ErrNoModel, Msg: "the hashed model only embeds"}
}

// Embed returns each text's hashed vector.
func (Hashed) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	if err := ctx.Err(); err != nil {
		return llm.EmbedResponse{}, &llm.Error{Provider: "hashed", Op: "embed", Transient: true, Msg: "cancelled", Err: err}
	}
	out := make([][]float32, len(req.Texts))
	for i, t := range req.Texts {
		out[i] = HashedVector(t)
	}
	return llm.EmbedResponse{Vectors: out, Model: HashedModel}, nil
}

// HashedVector is text's vector under Hashed.
func HashedVector(text string) []float32 {
	v := make([]float32, HashedDim)
	add := func(feature string, weight float32) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		sum := h.Sum64()
		sign := float32(1)
		if sum>>63 == 1 {
			sign = -1
		}
		v[sum%HashedDim] += sign * weight
	}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if hashedStop[w] {
			continue
		}
		stem := english.Stem(w, false)
		add("w:"+stem, 1)
		padded := []rune("^" + stem + "$")
		for i := 0; i+3 <= len(padded); i++ {
			add("t:"+string(padded[i:i+3]), 0.25)
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= s
		}
	}
	return v
}

// hashedStop are words too common to count.
var hashedStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if of to in on at by for with from as is are was were be been
		it its this that these those i you he she we they me him her us them my your his our their what when where
		who how which do did does so not no yes just about`) {
		hashedStop[w] = true
	}
}
