package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/text"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// Summarizing reads every item of the scope once and keeps a bounded digest
// of them (issue 13, item 7: it used to be quadratic): counts by type, tag
// and agent, the date range, the words most items share, and the most
// important items. The text is made from the digest alone, so its cost does
// not grow with the store beyond the one pass.
const (
	// summaryTopItems is how many of the most important items the digest keeps.
	summaryTopItems = 64
	// summaryItemTokens bounds one item's text in a summary.
	summaryItemTokens = 48
	// summarySample is about how many items' words a summary counts.
	summarySample = 2048
	// summaryTermBytes is how much of an item's text counts for its words.
	summaryTermBytes = 512
	// summaryListed is how many types, tags, agents and words a line names.
	summaryListed = 5
	// summaryCheckEvery is how many items are read between two looks at
	// the context (a cancelled summarize stops within that many).
	summaryCheckEvery = 1024
)

// summarizeProgress, when set (by tests), is called with the number of
// items read each time the context is checked.
var summarizeProgress func(read int)

// Summarize sums up the live items of a scope — all, tag:<t>, agent:<id>,
// since:<time> — within token_limit tokens: how many, when, of what kinds,
// about what, and the most important of them (the model writes it from that
// digest when one is configured; engram enforces the limit). It reads each
// item once and stops when ctx is cancelled.
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
	out := Summary{SourceItems: []string{}, Writer: "extractive"}
	var d *digest
	err := s.env.Store.View(func(tx *storage.Tx) error {
		if _, err := s.loadAs(tx, call, access.Read); err != nil {
			return err
		}
		var err error
		d, err = s.digest(ctx, tx, scope, value, since)
		return err
	})
	if err != nil {
		return Summary{}, err
	}
	out.SourceItems = append(out.SourceItems, d.ids...)
	if d.count == 0 {
		return out, nil
	}
	out.Text = d.render(req.TokenLimit)
	out.TokenCount = llm.CountTokens(out.Text)
	if llm.Available(s.env.LLM) {
		if model, ok := s.modelSummary(ctx, d, req.TokenLimit); ok {
			out.Text, out.TokenCount, out.Writer = model, llm.CountTokens(model), "model"
		}
	}
	return out, nil
}

// digest is what a summary is written from. It is made from key-only
// scans of the store's indexes and a bounded number of items, so that it
// costs one pass over the keys whatever the size of the store.
type digest struct {
	// ids are the live items of the scope, oldest first.
	ids           []string
	count         int
	first, last   time.Time
	types, agents map[string]int
	tags          map[string]int
	// words counts how many of the sampled items each word (by its stem)
	// appears in, under the first spelling seen.
	words    map[string]int
	spelling map[string]string
	sampled  int
	// top are the most important items (then the newest), best first.
	top []*Item
}

// digest reads what a summary of a scope needs, checking ctx as it goes.
func (s *store) digest(ctx context.Context, tx *storage.Tx, scope, value string, since time.Time) (*digest, error) {
	d := &digest{types: map[string]int{}, agents: map[string]int{}, tags: map[string]int{}, words: map[string]int{}, spelling: map[string]string{}}
	read := 0
	tick := func() error {
		if read++; read%summaryCheckEvery == 0 {
			if summarizeProgress != nil {
				summarizeProgress(read)
			}
			return ctx.Err()
		}
		return nil
	}
	// The scope's candidates, for tag and agent scopes (live or not).
	var cands map[string]bool
	if scope == "tag" || scope == "agent" {
		if scope == "tag" {
			value = strings.ToLower(value) // tags are stored in lower case
		}
		cands = map[string]bool{}
		err := tx.Keys(storage.Prefix(idxPrefix(s.name, scope, value)), func(k []byte) error {
			cands[storage.LastPart(k)] = true
			return tick()
		})
		if err != nil {
			return nil, err
		}
	}
	// The live items of the scope, oldest first, from the time index.
	prefix := idxPrefix(s.name, "time")
	r := storage.Prefix(prefix)
	if scope == "since" {
		r.Start = append(slices.Clone(prefix), storage.Time(since)...)
	}
	// in says whether a live item is in the scope: for "all", whether it is
	// not soft-forgotten (usually few are), else whether the walk met it.
	in := map[string]bool{}
	keep := func(id string) bool { return in[id] }
	if scope == "" || scope == "all" {
		gone := map[string]bool{}
		err := tx.Keys(storage.Prefix(idxPrefix(s.name, "del", "time")), func(k []byte) error {
			gone[storage.LastPart(k)] = true
			return tick()
		})
		if err != nil {
			return nil, err
		}
		in, keep = nil, func(id string) bool { return !gone[id] }
	}
	var firstKey, lastKey []byte
	err := tx.Keys(r, func(k []byte) error {
		id := storage.LastPart(k)
		if cands != nil && !cands[id] {
			return tick()
		}
		if firstKey == nil {
			firstKey = k
		}
		lastKey = k
		d.count++
		d.ids = append(d.ids, id)
		if in != nil {
			in[id] = true
		}
		return tick()
	})
	if err != nil || d.count == 0 {
		return d, err
	}
	if d.first, err = keyTime(firstKey); err != nil {
		return nil, err
	}
	if d.last, err = keyTime(lastKey); err != nil {
		return nil, err
	}
	// Counts by type, agent and tag, from their indexes (keys
	// <kind>/<value>/<id>).
	for kind, counts := range map[string]map[string]int{"type": d.types, "agent": d.agents, "tag": d.tags} {
		err := tx.Keys(storage.Prefix(idxPrefix(s.name, kind)), func(k []byte) error {
			if slash := bytes.LastIndexByte(k, '/'); slash > 0 && keep(storage.LastPart(k)) {
				counts[storage.LastPart(k[:slash])]++
			}
			return tick()
		})
		if err != nil {
			return nil, err
		}
	}
	// The most important items, from the top of the imp index.
	err = s.walkPrefix(tx, idxPrefix(s.name, "imp"), true, func(id string) bool { return !keep(id) }, func(_ []byte, it *Item) error {
		d.top = append(d.top, it)
		if len(d.top) == summaryTopItems {
			return storage.ErrStop
		}
		return tick()
	})
	if err != nil {
		return nil, err
	}
	// The words of an even sample of the items.
	step := max(1, d.count/summarySample)
	for i := 0; i < len(d.ids); i += step {
		it, err := s.get(tx, d.ids[i])
		if err != nil {
			return nil, err
		}
		d.addWords(it)
		if err := tick(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// keyTime reads the time of a time index key (storage.Time's form: 16 hex
// digits of Unix seconds with the top bit flipped, 8 of nanoseconds).
func keyTime(k []byte) (time.Time, error) {
	parts := storage.SplitKey(storage.PrefixIndex, k)
	t := parts[len(parts)-2]
	if len(t) != 24 {
		return time.Time{}, fmt.Errorf("memory: malformed time index key %q", k)
	}
	secs, err := strconv.ParseUint(t[:16], 16, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("memory: malformed time index key %q: %w", k, err)
	}
	nanos, err := strconv.ParseUint(t[16:], 16, 32)
	if err != nil {
		return time.Time{}, fmt.Errorf("memory: malformed time index key %q: %w", k, err)
	}
	return time.Unix(int64(secs^(1<<63)), int64(nanos)).UTC(), nil
}

// addWords counts the words of an item of the sample.
func (d *digest) addWords(it *Item) {
	d.sampled++
	body := it.Text
	if len(body) > summaryTermBytes {
		body = body[:summaryTermBytes]
	}
	seen := map[string]bool{}
	for _, w := range text.Words(body) {
		stem := text.Term(w)
		if len([]rune(w)) < 3 || stem == "" || seen[stem] || !strings.ContainsFunc(w, unicode.IsLetter) {
			continue
		}
		seen[stem] = true
		d.words[stem]++
		if _, ok := d.spelling[stem]; !ok {
			d.spelling[stem] = w
		}
	}
}

// header is the summary's first line: how many items, from when to when.
func (d *digest) header() string {
	noun := "memories"
	if d.count == 1 {
		noun = "memory"
	}
	from, to := d.first.Format("2006-01-02"), d.last.Format("2006-01-02")
	if from == to {
		return fmt.Sprintf("%d %s, %s.", d.count, noun, from)
	}
	return fmt.Sprintf("%d %s, %s to %s.", d.count, noun, from, to)
}

// overview names the commonest types, tags and agents with their counts.
func (d *digest) overview() string {
	var parts []string
	for _, g := range []struct {
		label  string
		counts map[string]int
	}{{"Types", d.types}, {"Tags", d.tags}, {"Agents", d.agents}} {
		if l := topCounts(g.counts); l != "" {
			parts = append(parts, g.label+": "+l+".")
		}
	}
	return strings.Join(parts, " ")
}

// recurring names the words most items share (at least two), with the
// share of the items holding each (of a sample, past summarySample).
func (d *digest) recurring() string {
	keys := slices.SortedFunc(maps.Keys(d.words), func(a, b string) int {
		return cmp.Or(cmp.Compare(d.words[b], d.words[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, k := range keys {
		if d.words[k] < 2 || len(parts) == summaryListed {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d%%", d.spelling[k], (100*d.words[k]+d.sampled/2)/d.sampled))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Recurring words: " + strings.Join(parts, ", ") + "."
}

// topCounts lists the summaryListed largest counts, "name count, ...",
// with how many more there are.
func topCounts(counts map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, k := range keys[:min(len(keys), summaryListed)] {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(keys) > summaryListed {
		parts = append(parts, fmt.Sprintf("%d more", len(keys)-summaryListed))
	}
	return strings.Join(parts, ", ")
}

// itemLine is one item as a summary shows it, its text cut to a bound,
// with its date if dated.
func itemLine(it *Item, dated bool) string {
	body := strings.Join(strings.Fields(it.Text), " ")
	if llm.CountTokens(body) > summaryItemTokens {
		body = fitTokens(body, summaryItemTokens) + "…"
	}
	tags := ""
	if len(it.Tags) > 0 {
		tags = " [" + strings.Join(it.Tags, ", ") + "]"
	}
	date := ""
	if dated {
		date = it.Timestamp.Format(time.DateOnly) + " "
	}
	return fmt.Sprintf("- %s%s%s: %s", date, it.Type, tags, body)
}

// render writes the digest within limit tokens. A few items (all of them
// in the digest) are the summary themselves: all, oldest first, if they
// fit, else the most important that fit, then the counts if room is left.
// Many items are summed up by the counts and recurring words first, then
// as many of the most important items as fit.
func (d *digest) render(limit int) string {
	header := d.header()
	if llm.CountTokens(header) > limit {
		return fitTokens(header, limit)
	}
	lines := []string{header}
	fits := func(line string) bool {
		return llm.CountTokens(strings.Join(append(lines, line), "\n")) <= limit
	}
	// Dates on items only when the items span more than a day.
	dated := d.first.Format(time.DateOnly) != d.last.Format(time.DateOnly)
	few := d.count <= len(d.top)
	if few {
		all := slices.Clone(d.top)
		slices.SortStableFunc(all, func(a, b *Item) int { return a.Timestamp.Compare(b.Timestamp) })
		whole := slices.Clone(lines)
		for _, it := range all {
			whole = append(whole, itemLine(it, dated))
		}
		if text := strings.Join(whole, "\n"); llm.CountTokens(text) <= limit {
			return text
		}
	}
	extras := func() {
		for _, l := range []string{d.overview(), d.recurring()} {
			if l != "" && fits(l) {
				lines = append(lines, l)
			}
		}
	}
	if !few {
		extras()
	}
	// The most important items, as many as fit (under a heading when they
	// follow the counts); the first that does not fit whole fills what room
	// is left.
	for i, it := range d.top {
		line := itemLine(it, dated)
		if i == 0 && !few {
			line = "Most important:\n" + line
		}
		if fits(line) {
			lines = append(lines, line)
			continue
		}
		if room := limit - llm.CountTokens(strings.Join(lines, "\n")) - 3; room >= 12 {
			cut := fitTokens(line, room)
			if cut != "" && strings.Contains(cut, "\n- ") == (i == 0 && !few) && fits(cut+"…") {
				lines = append(lines, cut+"…")
			}
		}
		break
	}
	if few {
		extras()
	}
	return strings.Join(lines, "\n")
}

// fitTokens cuts s at a word until it counts at most limit tokens (a cut
// text may count differently from its prefix).
func fitTokens(s string, limit int) string {
	for llm.CountTokens(s) > limit {
		cut, _ := llm.TruncateTokens(s, limit)
		if i := strings.LastIndexAny(cut, " \n"); i > 0 {
			cut = cut[:i]
		} else if len(cut) >= len(s) {
			return ""
		}
		s = strings.TrimSpace(cut)
	}
	return s
}

const summarizePrompt = `Summarize these memories in at most %d tokens. Keep every name, number, amount, date, decision and action; drop filler. Plain sentences, no preamble.`

// modelSummary asks the model to write from the digest (never every item:
// the prompt stays bounded); false when it fails (the extractive one stays).
func (s *store) modelSummary(ctx context.Context, d *digest, limit int) (string, bool) {
	var b strings.Builder
	fmt.Fprintln(&b, d.header())
	if d.count > len(d.top) {
		fmt.Fprintln(&b, d.overview())
		fmt.Fprintln(&b, d.recurring())
		fmt.Fprintln(&b, "The most important of them:")
	}
	top := slices.Clone(d.top)
	slices.SortStableFunc(top, func(a, b *Item) int { return a.Timestamp.Compare(b.Timestamp) })
	for _, it := range top {
		fmt.Fprintln(&b, itemLine(it, true))
	}
	zero := 0.0
	req := llm.Prompt(fmt.Sprintf(summarizePrompt, limit), b.String())
	req.Temperature = &zero
	resp, err := s.env.LLM.Complete(ctx, req)
	if err != nil {
		s.env.Log.Warn("the model could not summarize memories; the extractive summary stands", "store", s.name, "err", err)
		return "", false
	}
	summary := fitTokens(strings.TrimSpace(resp.Text), limit)
	return summary, summary != ""
}
