//go:build evaltune

package evalret

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	rank "github.com/engram-console/engram/core/retrieval"
)

// devOnly is the set with its held-out questions taken out: tuning never
// sees them.
func devOnly(t *testing.T) *Set {
	set, err := ReadFile("../../testdata/eval/engram-longmem.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []Question
	for _, q := range set.Questions {
		if q.SplitOf() == Dev {
			qs = append(qs, q)
		}
	}
	set.Questions = qs
	return set
}

// devScore is recall@10 overall and per category, and MRR, on dev.
func devScore(t *testing.T, set *Set, p rank.Params) (r10, mrr float64, cat map[string]float64) {
	h := NewHybrid(set, p)
	cat = map[string]float64{}
	n := map[string]float64{}
	for _, q := range set.Questions {
		ids, err := h.Search(context.Background(), q.Conversation, q.Text, K)
		if err != nil {
			t.Fatal(err)
		}
		n[q.Category]++
		if j := judge(ids, q.Evidence); j.rank > 0 {
			r10++
			cat[q.Category]++
			mrr += 1 / float64(j.rank)
		}
	}
	for c := range cat {
		cat[c] /= n[c]
	}
	return r10 / float64(len(set.Questions)), mrr / float64(len(set.Questions)), cat
}

// TestTuneDev reports the dev split's figures of DefaultParams (go test
// -tags evaltune ./core/evalret -run TestTuneDev -v), and with
// TUNE=1 runs coordinate ascent over the params on dev only.
func TestTuneDev(t *testing.T) {
	set := devOnly(t)
	p := rank.DefaultParams
	obj := func(p rank.Params) float64 {
		r, m, cat := devScore(t, set, p)
		worst := 1.0
		for _, c := range Categories {
			worst = min(worst, cat[c])
		}
		return r + 0.5*m + 0.5*worst
	}
	r, m, cat := devScore(t, set, p)
	t.Logf("default: dev R@10 %.3f MRR %.3f %v", r, m, cat)
	if os.Getenv("GRID") != "" {
		// A grid over the thesaurus weights alone, the rest as shipped.
		for _, rel := range []struct {
			name string
			set  func(p *rank.Params, v float64)
		}{
			{"synonyms", func(p *rank.Params, v float64) { p.Synonyms = v }},
			{"hypernyms", func(p *rank.Params, v float64) { p.Hypernyms = v }},
			{"hyponyms", func(p *rank.Params, v float64) { p.Hyponyms = v }},
			{"derived", func(p *rank.Params, v float64) { p.Derived = v }},
			{"derived-hi", func(p *rank.Params, v float64) { p.Derived = v + 0.5 }},
			{"all", func(p *rank.Params, v float64) { p.Synonyms, p.Hypernyms, p.Hyponyms, p.Derived = v, v/2, v/2, v }},
		} {
			for _, v := range []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7} {
				q := p
				rel.set(&q, v)
				r, m, cat := devScore(t, set, q)
				t.Logf("%s %.2f: dev R@10 %.3f MRR %.3f obj %.4f %v", rel.name, v, r, m, obj(q), cat)
			}
		}
	}
	if os.Getenv("TUNE") == "" {
		return
	}
	knobs := []knob{
		{"K1", []float64{0.8, 1.2, 1.6, 2, 3}, func(p *rank.Params, v float64) { p.K1 = v }},
		{"Btext", []float64{0, 0.25, 0.5, 0.75, 1}, func(p *rank.Params, v float64) { p.B[rank.FieldText] = v }},
		{"Wspeaker", []float64{0, 0.25, 0.5, 1, 1.5}, func(p *rank.Params, v float64) { p.Weight[rank.FieldSpeaker] = v }},
		{"Wentity", []float64{0, 0.5, 1, 1.5}, func(p *rank.Params, v float64) { p.Weight[rank.FieldEntity] = v }},
		{"Time", []float64{0, 1, 2, 4, 8}, func(p *rank.Params, v float64) { p.Time = v }},
		{"Neighbour", []float64{0, 0.05, 0.1, 0.2, 0.3}, func(p *rank.Params, v float64) { p.Neighbour = [2]float64{v, v / 3} }},
		{"Session", []float64{0, 0.05, 0.1, 0.2}, func(p *rank.Params, v float64) { p.Session = v }},
		{"PRF", []float64{0, 0.1, 0.2, 0.4}, func(p *rank.Params, v float64) { p.PRFWeight = v }},
		{"LengthPrior", []float64{-1, -0.5, 0, 0.5, 1}, func(p *rank.Params, v float64) { p.LengthPrior = v }},
		{"NamePrior", []float64{0, 0.3, 0.6, 1.2}, func(p *rank.Params, v float64) { p.NamePrior = v }},
	}
	knobs = append(knobs,
		knob{"Address", []float64{0, 0.25, 0.5, 1}, func(p *rank.Params, v float64) { p.Address = v }},
		knob{"Coord", []float64{0, 0.5, 1, 2, 3}, func(p *rank.Params, v float64) { p.Coord = v }},
		knob{"Synonyms", []float64{0, 0.1, 0.2, 0.3, 0.5, 0.7, 1}, func(p *rank.Params, v float64) { p.Synonyms = v }},
		knob{"Hypernyms", []float64{0, 0.05, 0.1, 0.2, 0.3, 0.5}, func(p *rank.Params, v float64) { p.Hypernyms = v }},
		knob{"Hyponyms", []float64{0, 0.05, 0.1, 0.2, 0.3, 0.5}, func(p *rank.Params, v float64) { p.Hyponyms = v }},
		knob{"Derived", []float64{0, 0.1, 0.2, 0.3, 0.5, 0.7}, func(p *rank.Params, v float64) { p.Derived = v }},
	)
	best := obj(p)
	for round := 0; round < 3; round++ {
		changed := false
		for _, k := range knobs {
			for _, v := range k.vals {
				q := p
				k.set(&q, v)
				if o := obj(q); o > best+1e-9 {
					best, p, changed = o, q, true
					t.Logf("%s=%v: %.4f", k.name, v, o)
				}
			}
		}
		if !changed {
			break
		}
	}
	r, m, cat = devScore(t, set, p)
	t.Logf("tuned: dev R@10 %.3f MRR %.3f %v\n%+v", r, m, cat, p)
}

// knob is a parameter to tune and the values to try.
type knob struct {
	name string
	vals []float64
	set  func(p *rank.Params, v float64)
}

// TestDevMisses lists the dev questions whose evidence is not in the top
// 10, with what came first instead.
func TestDevMisses(t *testing.T) {
	set := devOnly(t)
	h := NewHybrid(set, rank.DefaultParams)
	text := map[string]string{}
	for _, c := range set.Conversations {
		for _, s := range c.Sessions {
			for _, tn := range s.Turns {
				text[tn.ID] = tn.Speaker + ": " + tn.Text
			}
		}
	}
	var b strings.Builder
	for _, q := range set.Questions {
		ids, _ := h.Search(context.Background(), q.Conversation, q.Text, K)
		if judge(ids, q.Evidence).rank > 0 {
			continue
		}
		fmt.Fprintf(&b, "\n[%s] %s\n", q.Category, q.Text)
		for _, e := range q.Evidence {
			fmt.Fprintf(&b, "  want %s\n", text[e])
		}
		for _, id := range ids[:min(3, len(ids))] {
			fmt.Fprintf(&b, "  got  %s\n", text[id])
		}
	}
	t.Log(b.String())
}
