package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/retrieval"
)

// whyMaxLines is the most lines an explanation takes under a result in a
// view of height rows: 4 to 6, a fifth of the height. The rest is cut
// with "…" (the strongest signals come first, so what is cut matters
// least).
func whyMaxLines(height int) int { return min(max(height/5, 4), 6) }

// whyShown is anything a hit's why block would say: the ranker's Why or
// the embedding similarity.
func whyShown(h *history.Hit) bool { return h.Why != nil || h.Semantic != nil }

// hitWhyGroups is what the ranker says about a hit, in groups that each
// start a line: the terms it matched; the parts of its score, the largest
// first, the time part with the windows it is in and the neighbours' with
// the neighbours that lent it; then what is left (the query's expansion,
// a question about time no window matched). Only what Why and the hit
// say: nothing is inferred.
func hitWhyGroups(h *history.Hit) [][]string {
	var groups [][]string
	w := h.Why
	if w == nil {
		w = &retrieval.Why{}
	}
	if terms := termSegments(w.Terms); len(terms) > 0 {
		groups = append(groups, terms)
	}
	windows := quoted(w.Windows, len(w.Windows))
	// The neighbours are utterances, by index: "#4" as the hits say.
	nbs := make([]string, len(w.Neighbours))
	for i, id := range w.Neighbours {
		nbs[i] = utteranceRef(id)
	}
	neighbours := listSome(nbs, 3)
	ps := slices.Clone(w.Parts)
	slices.SortStableFunc(ps, func(a, b retrieval.Part) int { return cmp.Compare(b.Contribution, a.Contribution) })
	var parts []string
	for _, p := range ps {
		if p.Contribution == 0 {
			continue
		}
		seg := p.Name
		switch {
		case p.Name == retrieval.PartTime && windows != "":
			seg, windows = seg+" "+windows, ""
		case p.Name == retrieval.PartNeighbour && neighbours != "":
			seg, neighbours = seg+" "+neighbours, ""
		}
		seg += fmt.Sprintf(" %+.2f", p.Contribution)
		if p.Weight != 1 {
			seg += fmt.Sprintf(" (weight %s)", trimFloat(p.Weight))
		}
		parts = append(parts, seg)
	}
	if h.Semantic != nil {
		parts = append(parts, fmt.Sprintf("vector similarity %.2f", *h.Semantic))
	}
	if f := w.Fusion; f != nil {
		parts = append(parts, "fused: "+fusedRanks(f))
	}
	if len(parts) > 0 {
		groups = append(groups, parts)
	}
	var ctx []string
	if windows != "" {
		ctx = append(ctx, "in "+windows)
	}
	if w.Temporal && len(w.Windows) == 0 {
		ctx = append(ctx, "a question about time (no window matched)")
	}
	if neighbours != "" {
		ctx = append(ctx, "near "+neighbours)
	}
	if len(w.Expansion) > 0 {
		ctx = append(ctx, "query expanded with "+listSome(w.Expansion, 5))
	}
	if len(ctx) > 0 {
		groups = append(groups, ctx)
	}
	return groups
}

// fusedRanks says where a fused hit stood in each ranking.
func fusedRanks(f *retrieval.FusionWhy) string {
	rank := func(r int) string {
		if r == 0 {
			return "not ranked"
		}
		return fmt.Sprintf("#%d", r)
	}
	return fmt.Sprintf("words %s, vectors %s (k %d)", rank(f.LexicalRank), rank(f.VectorRank), f.K)
}

// utteranceRef is "#4" for the document ID "4" (history's documents are
// its utterances, by index); any other ID as it is.
func utteranceRef(id string) string {
	if id != "" && strings.Trim(id, "0123456789") == "" {
		return "#" + id
	}
	return id
}

// quoted is the first n of ss, each quoted, joined by commas.
func quoted(ss []string, n int) string {
	q := make([]string, 0, n)
	for _, s := range ss[:min(n, len(ss))] {
		q = append(q, fmt.Sprintf("%q", oneLine(s)))
	}
	return strings.Join(q, ", ")
}

// listSome is the first n of ss joined by commas, and how many more.
func listSome(ss []string, n int) string {
	if len(ss) == 0 {
		return ""
	}
	out := oneLine(strings.Join(ss[:min(n, len(ss))], ", "))
	if len(ss) > n {
		out += fmt.Sprintf(" +%d more", len(ss)-n)
	}
	return out
}

// termSegments are the matched terms, the most telling first: "budget",
// "budget×2", "marta (speaker)", "+venue" for a feedback term.
func termSegments(terms []retrieval.TermMatch) []string {
	ts := slices.Clone(terms)
	slices.SortStableFunc(ts, func(a, b retrieval.TermMatch) int { return cmp.Compare(b.Score, a.Score) })
	var out []string
	for _, t := range ts {
		seg := oneLine(t.Term)
		if t.Expansion {
			seg = "+" + seg
		}
		if t.Count > 1 {
			seg += fmt.Sprintf("×%d", t.Count)
		}
		if t.Field != "" && t.Field != "text" {
			seg += " (" + oneLine(t.Field) + ")"
		}
		if t.SynonymOf != "" {
			seg += " for " + oneLine(t.SynonymOf)
		}
		out = append(out, seg)
	}
	return out
}

// memoryWhyGroups is what memory.remember says about an item: the prompt's
// words it holds (and the thesaurus words and tags that stood for them),
// then the figures that ranked it.
func memoryWhyGroups(w *memory.Why) [][]string {
	if w == nil {
		return nil
	}
	var groups [][]string
	terms := make([]string, len(w.Terms))
	for i, t := range w.Terms {
		terms[i] = oneLine(t)
	}
	// What the thesaurus and the tags found, beside the prompt's words.
	var more []string
	for _, m := range w.Matched {
		if m.SynonymOf != "" {
			more = append(more, oneLine(m.Term)+" for "+oneLine(m.SynonymOf))
		}
	}
	if len(more) > 0 {
		more = []string{"thesaurus " + strings.Join(more, ", ")}
	}
	if len(w.Tagged) > 0 {
		tags := make([]string, len(w.Tagged))
		for i, t := range w.Tagged {
			tags[i] = oneLine(t)
		}
		more = append(more, "tagged "+strings.Join(tags, ", "))
	}
	switch {
	case len(terms) == 0 && len(more) == 0:
		groups = append(groups, []string{"no word of the prompt"})
	case len(terms) == 0:
		groups = append(groups, more)
	case w.Literal:
		groups = append(groups, []string{"holds " + strings.Join(terms, ", ") + " as written"})
	default:
		groups = append(groups, append([]string{"matched " + strings.Join(terms, ", ")}, more...))
	}
	figures := []string{fmt.Sprintf("lexical %.2f", w.Lexical)}
	if w.Vector != nil {
		figures = append(figures, fmt.Sprintf("vector %.2f", *w.Vector))
	}
	for _, win := range w.Windows {
		figures = append(figures, fmt.Sprintf("in %q", win))
	}
	figures = append(figures, fmt.Sprintf("importance %.2f", w.Importance),
		"stored "+ago(time.Time{}.Add(time.Duration(w.AgeSeconds)*time.Second), time.Time{}))
	if w.Rank != "" {
		figures = append(figures, "ranked by "+oneLine(w.Rank))
	}
	return append(groups, figures)
}

// whyLines lays groups out under label in width: each group starts a line
// and wraps onto more, its segments never broken (one too wide is cut);
// at most maxLines, the last cut with "…" when more would follow.
func whyLines(s *Styles, label string, groups [][]string, width, maxLines int) []string {
	if len(groups) == 0 || maxLines <= 0 {
		return nil
	}
	pad := strings.Repeat(" ", lineWidth(label))
	avail := max(width-lineWidth(label), 8)
	var lines []string
	for _, g := range groups {
		lines = append(lines, packForms(g, avail, "")...)
	}
	cut := len(lines) > maxLines
	if cut {
		lines = lines[:maxLines]
	}
	for i, l := range lines {
		if cut && i == len(lines)-1 {
			l += " …"
		}
		l = truncateTo(l, avail)
		if i == 0 {
			lines[i] = s.Prompt.Render(label) + s.Muted.Render(l)
		} else {
			lines[i] = pad + s.Muted.Render(l)
		}
	}
	return lines
}

// trimFloat writes a weight briefly: 0.5, 1.25, 2.
func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
