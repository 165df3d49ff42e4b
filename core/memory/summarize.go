package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Summarize sums up the live items of a scope — all, tag:<t>, agent:<id>,
// since:<time> — oldest first, within token_limit tokens: extractively
// (keeping names, numbers, dates and actions), or by the model when one is
// configured (engram enforces the limit).
func (s *store) Summarize(ctx context.Context, call action.Call, req SummarizeRequest) (Summary, error) {
	if req.TokenLimit < 1 {
		return Summary{}, kit.Validation("token_limit", "must be 1 or more")
	}
	scope, value, _ := strings.Cut(strings.TrimSpace(req.Scope), ":")
	var since time.Time
	switch scope {
	case "", "all":
	case "tag", "agent":
		if value == "" {
			return Summary{}, kit.Validation("scope", "%s: needs a value, e.g. %s:work", scope, scope)
		}
	case "since":
		t, err := parseDate(value)
		if err != nil {
			return Summary{}, kit.Validation("scope", "since: %q is not a date (2025-11-05 or RFC 3339)", value)
		}
		since = t
	default:
		return Summary{}, errs.New(errs.Validation, "scope: unknown scope %q; use all, tag:<tag>, agent:<id> or since:<time>", req.Scope).
			With("field", "scope")
	}
	var items []*Item
	err := s.env.Store.View(func(tx *storage.Tx) error {
		if _, err := s.load(tx); err != nil {
			return err
		}
		return s.walk(tx, "time", false, nil, func(it *Item) error {
			switch {
			case scope == "tag" && !containsFold(it.Tags, value),
				scope == "agent" && it.AgentID != value,
				scope == "since" && it.Timestamp.Before(since):
				return nil
			}
			items = append(items, it)
			return nil
		})
	})
	if err != nil {
		return Summary{}, err
	}
	out := Summary{SourceItems: []string{}, Writer: "extractive"}
	if len(items) == 0 {
		return out, nil
	}
	var sum text.Summary
	lines := make([]text.Line, len(items))
	for i, it := range items {
		lines[i] = text.Line{Index: i, Speaker: it.Type, Text: it.Text}
		out.SourceItems = append(out.SourceItems, it.ID)
	}
	sum.Add(lines...)
	out.Text, out.TokenCount = sum.Compress(req.TokenLimit, llm.CountTokens)
	if llm.Available(s.env.LLM) {
		if model, ok := s.modelSummary(ctx, items, req.TokenLimit); ok {
			out.Text, out.TokenCount, out.Writer = model, llm.CountTokens(model), "model"
		}
	}
	return out, nil
}

const summarizePrompt = `Summarize these memories in at most %d tokens. Keep every name, number, amount, date, decision and action; drop filler. Plain sentences, no preamble.`

// modelSummary asks the model; false when it fails (the extractive one stays).
func (s *store) modelSummary(ctx context.Context, items []*Item, limit int) (string, bool) {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "- [%s, %s] %s\n", it.Type, it.Timestamp.Format("2006-01-02"), it.Text)
	}
	zero := 0.0
	req := llm.Prompt(fmt.Sprintf(summarizePrompt, limit), b.String())
	req.Temperature = &zero
	resp, err := s.env.LLM.Complete(ctx, req)
	if err != nil {
		s.env.Log.Warn("the model could not summarize memories; the extractive summary stands", "store", s.name, "err", err)
		return "", false
	}
	summary := strings.TrimSpace(resp.Text)
	// Cut at a word until it fits: a cut text may count differently.
	for llm.CountTokens(summary) > limit {
		cut, _ := llm.TruncateTokens(summary, limit)
		if i := strings.LastIndexAny(cut, " \n"); i > 0 {
			cut = cut[:i]
		} else if len(cut) >= len(summary) {
			return "", false
		}
		summary = strings.TrimSpace(cut)
	}
	return summary, summary != ""
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
