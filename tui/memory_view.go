package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/memory"
)

const (
	// memCardRows is the height of a store's card.
	memCardRows = 4
	// memMinCard is the narrowest a card gets: fewer stores show side by
	// side (←/→ scroll through them) rather than narrower cards.
	memMinCard = 34
	// memMaxBar is the widest a gauge gets, brackets aside.
	memMaxBar = 30
)

// View renders the pane: the title line, the stores' cards, and below them
// the list, the remember box or the forget box; or an item's detail.
func (p *memoryPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	lines := []string{p.titleLine()}
	if p.detail != nil {
		lines = append(lines, "")
		lines = append(lines, p.detail.view.viewLines(p.styles)...)
		return fit(joinLines(lines), p.width, p.height)
	}
	lines = append(lines, p.cardLines()...)
	lines = append(lines, "")
	var area []string
	switch {
	case p.memorize != nil:
		area = p.memorize.lines()
	case p.forget != nil:
		area = p.forgetLines()
	case p.mode == memPrompting || p.list.want.prompt != "":
		area = p.rememberLines()
	default:
		area = p.listLines()
	}
	lines = append(lines, area...)
	return fit(joinLines(lines), p.width, p.height)
}

// headRows is the rows above the list area: the title, the cards, a gap.
func (p *memoryPane) headRows() int { return 1 + memCardRows + 1 }

// areaRows is the height of the list area.
func (p *memoryPane) areaRows() int { return max(p.height-p.headRows(), 1) }

// listRows is how many items the list area shows at once.
func (p *memoryPane) listRows() int {
	if p.mode == memPrompting || p.list.want.prompt != "" {
		// The box's rule, prompt, summary, header; why the selected item
		// was recalled.
		return max(p.areaRows()-4-p.whyRows(), 1)
	}
	return max(p.areaRows()-2, 1) // the title and the header
}

// memWhyRows is the most rows why the selected item was recalled takes.
const memWhyRows = 2

// whyRows is the rows kept under the ranked list for why the selected item
// was recalled (whether it says why or not, so that the list does not
// jump as the cursor moves).
func (p *memoryPane) whyRows() int {
	if p.hideWhy || p.list.want.prompt == "" {
		return 0
	}
	return memWhyRows
}

// whyLines is why the selected item was recalled, under the ranked list:
// nothing when memory.remember did not say.
func (p *memoryPane) whyLines() []string {
	it := p.current()
	if p.whyRows() == 0 || p.list.shown.prompt == "" || it == nil || it.Why == nil {
		return nil
	}
	return whyLines(p.styles, "   why ", [][]string{slices.Concat(memoryWhyGroups(it.Why)...)}, p.width, memWhyRows)
}

// forgetRows is how many previewed items the forget box shows at once.
func (p *memoryPane) forgetRows() int {
	// The rule, instruction, mode, gap; the summary, header; a gap and the
	// question.
	return max(p.areaRows()-8, 1)
}

// layout renders what depends on the size and the data: call it after
// either changes.
func (p *memoryPane) layout() {
	p.list.cursor.setHeight(p.listRows())
	if d := p.detail; d != nil {
		d.view.setHeight(max(p.height-2, 1))
		d.view.setLines(p.detailLines(p.width))
	}
	if f := p.forget; f != nil {
		f.rows.setHeight(p.forgetRows())
		f.rows.setLines(p.previewRows())
		f.ask()
	}
}

// scrollPercent is how far down v is, from 0 to 100.
func scrollPercent(v *scrollView) float64 {
	if v.AtBottom() {
		return 100
	}
	return float64(v.Offset()) * 100 / float64(v.TotalLineCount()-v.Height())
}

// --- the title and the cards ---

func (p *memoryPane) titleLine() string {
	s := p.styles
	line := " " + s.Emphasis.Render("Memory")
	switch {
	case p.detail != nil:
		d := p.detail
		line += s.Muted.Render(" · ") + oneLine(d.store) + s.Muted.Render(" › item ") + oneLine(d.id)
		if d.view.TotalLineCount() > d.view.Height() {
			line += s.Muted.Render(fmt.Sprintf(" · %3.0f%% ↑/↓", scrollPercent(&d.view)))
		}
	case p.stores.err != "" && len(p.stores.all) == 0:
		line += s.Failed.Render(" · " + glyphFailed + " " + oneLine(p.stores.err))
	case !p.stores.loaded:
		line += s.Muted.Render(" · loading…")
	default:
		line += s.Muted.Render(" · " + plural(len(p.stores.all), "store", "stores"))
		if len(p.stores.all) > 1 {
			line += s.Muted.Render(" · ←/→ switches")
		}
		first, n := p.visibleStores()
		if first > 0 {
			line += s.Muted.Render(fmt.Sprintf(" · ‹ %d more", first))
		}
		if rest := len(p.stores.all) - first - n; rest > 0 {
			line += s.Muted.Render(fmt.Sprintf(" · %d more ›", rest))
		}
	}
	return truncateTo(line, p.width)
}

// visibleStores is the first store shown and how many show, the selected
// one among them.
func (p *memoryPane) visibleStores() (first, n int) {
	n = min(len(p.stores.all), max((p.width+1)/(memMinCard+1), 1))
	sel := max(slices.IndexFunc(p.stores.all, func(c memory.Capacity) bool { return c.Store == p.list.want.store }), 0)
	first = min(max(sel-n+1, 0), max(len(p.stores.all)-n, 0))
	if sel < first {
		first = sel
	}
	return first, n
}

// cardLines renders the stores side by side.
func (p *memoryPane) cardLines() []string {
	s := p.styles
	if len(p.stores.all) == 0 {
		lines := make([]string, memCardRows)
		if p.stores.loaded && p.stores.err == "" {
			lines[1] = s.Muted.Render(" No memory store. Create one from the palette, e.g.")
			lines[2] = ` :memory.configure {"store": "notes", "type": "episodic"}`
		}
		return lines
	}
	first, n := p.visibleStores()
	cw := (p.width - (n - 1)) / n
	cards := make([][]string, n)
	for i := range n {
		w := cw
		if i == n-1 {
			w = p.width - (n-1)*(cw+1) // the last takes the rest
		}
		cards[i] = p.card(&p.stores.all[first+i], first+i, w)
	}
	sep := s.Rule.Render(glyphVRule)
	lines := make([]string, memCardRows)
	for row := range memCardRows {
		parts := make([]string, n)
		for i := range n {
			w := cw
			if i == n-1 {
				w = p.width - (n-1)*(cw+1)
			}
			parts[i] = fitLine(truncateTo(cards[i][row], w), w)
		}
		lines[row] = strings.Join(parts, sep)
	}
	return lines
}

// card is one store: its name and type, a gauge of its items and of its
// tokens, and its policy.
func (p *memoryPane) card(c *memory.Capacity, index, w int) []string {
	s := p.styles
	selected := c.Store == p.list.want.store
	name := " " + s.Emphasis.Render("  "+oneLine(c.Store))
	if selected {
		name = " " + s.Selected.Render(glyphCursor+" "+oneLine(c.Store))
	}
	name += s.Muted.Render(" · " + oneLine(c.Type) + " memory")
	if index < 9 && len(p.stores.all) > 1 {
		hint := fmt.Sprintf("alt+%d", index+1)
		if gap := w - lineWidth(name) - len(hint) - 1; gap > 1 {
			name += strings.Repeat(" ", gap) + s.Muted.Render(hint)
		}
	}
	items := gaugeFigures(c.ItemCount, c.MaxItems)
	tokens := gaugeFigures(c.TokenUsage, c.MaxTokens)
	numW := max(lineWidth(items), lineWidth(tokens))
	barW := min(max(w-len("   tokens [] ")-numW-1, 4), memMaxBar)
	gauge := func(label string, n, limit int, figures string) string {
		line := "   " + s.Muted.Render(fitLine(label, 7))
		if limit <= 0 {
			return line + figures + s.Muted.Render(" · no limit")
		}
		return line + meter(s, n, limit, barW) + " " + figures
	}
	// The policy and the forgotten items kept, shorter until they fit.
	var policies []string
	switch {
	case c.MaxItems <= 0 && c.MaxTokens <= 0:
		policies = []string{"no limits"}
	case c.OnFull == "evict":
		policies = []string{"evicts the least important when full", "evicts when full", "full: evicts"}
	case c.OnFull == "reject":
		policies = []string{"refuses new items when full", "refuses when full", "full: refuses"}
	default:
		policies = []string{oneLine(c.OnFull) + " when full"}
	}
	var kept []string
	if c.Deleted > 0 {
		kept = []string{fmt.Sprintf(" · %d forgotten kept", c.Deleted), fmt.Sprintf(" · %d forgotten", c.Deleted)}
	} else {
		kept = []string{""}
	}
	policy := policies[len(policies)-1] + kept[len(kept)-1]
	for _, k := range kept {
		if i := slices.IndexFunc(policies, func(pol string) bool { return lineWidth(pol+k) <= w-4 }); i >= 0 {
			policy = policies[i] + k
			break
		}
	}
	return []string{
		name,
		gauge("items", c.ItemCount, c.MaxItems, items),
		gauge("tokens", c.TokenUsage, c.MaxTokens, tokens),
		"   " + s.Muted.Render(policy),
	}
}

// boxRule is the top of a box: "── Title ─────".
func boxRule(s *Styles, title string, w int) string {
	head := s.Rule.Render("── ") + title + " "
	return " " + head + s.Rule.Render(strings.Repeat(glyphRule, max(w-lineWidth(head)-2, 0)))
}

// --- the list ---

// rankPhrase says what an order puts first.
func rankPhrase(rank string) string {
	switch rank {
	case "importance":
		return "most important first"
	case "recency":
		return "newest first"
	case "relevance":
		return "most relevant first"
	}
	return "in the store's order"
}

// orderNote is "most important first (the store's order)".
func (p *memoryPane) orderNote() string {
	rank := p.rank()
	note := rankPhrase(rank)
	if rank == defaultRank(p.storeType()) && p.list.want.prompt == "" {
		note += " (the store's order)"
	}
	return note
}

func (p *memoryPane) listLines() []string {
	s := p.styles
	store := p.store(p.list.want.store)
	if store == nil {
		if p.stores.loaded && p.stores.err != "" {
			return []string{s.Failed.Render(" " + glyphFailed + " Could not list the stores: " + oneLine(p.stores.err))}
		}
		return nil
	}
	count := store.ItemCount
	what := plural(count, "item", "items")
	if p.list.want.deleted {
		what = plural(count+store.Deleted, "item", "items") + fmt.Sprintf(" (%d forgotten)", store.Deleted)
	}
	title := " " + s.Emphasis.Render(oneLine(store.Store)) + s.Muted.Render(" · "+what)
	if count > 0 || p.list.want.deleted {
		title += s.Muted.Render(" · " + p.orderNote())
	}
	if p.list.loaded && len(p.list.items) < count && len(p.list.items) == memoryListLimit {
		title += s.Muted.Render(fmt.Sprintf(" · the first %d", len(p.list.items)))
	}
	if !p.list.want.deleted && store.Deleted > 0 {
		title += s.Muted.Render(" · forgotten hidden")
	}
	lines := []string{truncateTo(title, p.width)}
	switch {
	case p.list.err != "" && p.list.shown.store == p.list.want.store && strings.HasSuffix(p.list.err, "no longer shared with you."):
		return append(lines, "", " "+s.Emphasis.Render(oneLine(p.list.err)), s.Muted.Render(" Its owner revoked your access."))
	case p.list.err != "" && p.list.shown.store == p.list.want.store:
		return append(lines, "", s.Failed.Render(" "+glyphFailed+" Could not list the items: "+oneLine(p.list.err)))
	case !p.list.loaded || p.list.shown.store != p.list.want.store:
		return append(lines, "", s.Muted.Render(" Loading…"))
	case len(p.list.items) == 0 && count == 0 && (!p.list.want.deleted || store.Deleted == 0):
		lines = append(lines, "")
		lines = append(lines, styleLines(s.Muted, wrapText("No memories in "+oneLine(store.Store)+" yet. m memorizes one.", p.width-2, " "))...)
		return append(lines, s.Muted.Render(fmt.Sprintf(` (From the palette: :memory.memorize {"store": %q, "item": {"type": "fact", "text": "…"}})`,
			oneLine(store.Store))))
	case len(p.list.items) == 0:
		return append(lines, "", s.Muted.Render(" Nothing to show: every item is forgotten. d shows them."))
	}
	return append(lines, p.listRowsOf(false)...)
}

func (p *memoryPane) rememberLines() []string {
	s := p.styles
	store := oneLine(p.list.want.store)
	lines := []string{boxRule(s, s.Emphasis.Render("Remember")+s.Muted.Render(" in ")+store, p.width)}
	if p.mode == memPrompting {
		lines = append(lines, strings.TrimRight(" "+p.input.View(), " "))
	} else {
		why := " · w hides why"
		if p.hideWhy {
			why = " · w shows why"
		}
		lines = append(lines, truncateTo(" "+s.Prompt.Render("remember: ")+oneLine(p.list.want.prompt)+s.Muted.Render("   / changes it · esc goes back to the store"+why), p.width))
	}
	fresh := p.list.loaded && p.list.shown == p.list.want
	var summary string
	switch {
	case p.list.want.prompt == "":
		summary = s.Muted.Render(" enter ranks " + store + "'s items by what they say about the prompt, with a score and a confidence each")
	case p.list.err != "" && fresh:
		return append(lines, s.Failed.Render(" "+glyphFailed+" "+oneLine(p.list.err)))
	case !fresh:
		summary = s.Muted.Render(" Remembering…")
	default:
		deleted := "d: forgotten too"
		if p.list.want.deleted {
			deleted = "forgotten included (d hides them)"
		}
		order := rankPhrase(p.rank())
		if p.rank() == defaultRank(p.storeType()) {
			order += " (the store's order)"
		}
		// The hints go first when the line is too narrow.
		parts := []string{order, "r: by " + p.nextRank(), deleted}
		for len(parts) > 1 && lineWidth(" "+plural(len(p.list.items), "hit", "hits")+" · "+strings.Join(parts, " · ")) > p.width {
			parts = parts[:len(parts)-1]
		}
		summary = " " + plural(len(p.list.items), "hit", "hits") + s.Muted.Render(" · "+strings.Join(parts, " · "))
	}
	lines = append(lines, truncateTo(summary, p.width))
	if p.list.want.prompt == "" {
		// Typing the first prompt: the store's items stay in view.
		if p.list.loaded && p.list.shown == p.list.want && len(p.list.items) > 0 {
			lines = append(lines, p.listRowsOf(false)...)
		}
		return lines
	}
	if !fresh && len(p.list.items) == 0 || p.list.shown.store != p.list.want.store {
		return lines
	}
	if len(p.list.items) == 0 {
		note := fmt.Sprintf(" Nothing in %s is about %q.", store, oneLine(p.list.want.prompt))
		if !p.list.want.deleted {
			note += " d looks among the forgotten too."
		}
		return append(lines, "", s.Muted.Render(note))
	}
	lines = append(lines, p.listRowsOf(p.list.shown.prompt != "")...)
	return append(lines, p.whyLines()...)
}

// memColumn is one column of an item list: a table column with what its
// cell says about an item, and how that looks.
type memColumn struct {
	tableColumn
	cell  func(r *memory.Recalled) string
	style func(r *memory.Recalled, text string) string
}

// memCol is a column of title, width cells (right-aligned when right).
func memCol(title string, width int, right bool, cell func(r *memory.Recalled) string, style func(r *memory.Recalled, text string) string) memColumn {
	return memColumn{tableColumn{title: title, width: width, right: right}, cell, style}
}

// itemColumns chooses the columns that fit: text gets what is left, and
// the optional columns go, least useful first, when it would get too
// little.
func (p *memoryPane) itemColumns(items []memory.Recalled, scored, deleted bool) ([]memColumn, int) {
	s := p.styles
	now := p.conn.Now()
	timeW, agentW, tagsW := len("time")+2, len("agent")+2, len("tags")+2
	anyTags, anyGone := false, false
	for _, r := range items {
		timeW = max(timeW, lineWidth(clockTime(r.Timestamp, now))+2)
		agentW = max(agentW, min(lineWidth(oneLine(r.AgentID))+2, 16))
		tagsW = max(tagsW, min(lineWidth(oneLine(strings.Join(r.Tags, ",")))+2, 20))
		anyTags = anyTags || len(r.Tags) > 0
		anyGone = anyGone || r.Deleted
	}
	plain := func(_ *memory.Recalled, t string) string { return t }
	muted := func(_ *memory.Recalled, t string) string { return s.Muted.Render(t) }
	var cols []memColumn
	if scored {
		cols = append(cols,
			memCol("score", 8, true, func(r *memory.Recalled) string { return fmt.Sprintf("%.3f", r.Score) }, plain),
			memCol("conf", 6, true, func(r *memory.Recalled) string { return fmt.Sprintf("%.0f%%", r.Confidence*100) }, muted))
	}
	cols = append(cols,
		memCol("imp", 6, true, func(r *memory.Recalled) string { return fmt.Sprintf("%.2f", r.Importance) }, plain),
		memCol("time", timeW, false, func(r *memory.Recalled) string { return clockTime(r.Timestamp, now) }, muted),
		memCol("agent", agentW, false, func(r *memory.Recalled) string { return oneLine(r.AgentID) }, plain),
		memCol("tags", tagsW, false, func(r *memory.Recalled) string { return oneLine(strings.Join(r.Tags, ",")) }, muted),
		memCol("tok", 5, true, func(r *memory.Recalled) string { return fmt.Sprint(r.TokensEstimate) }, muted),
	)
	if deleted && anyGone {
		cols = append(cols, memCol("state", 11, false, func(r *memory.Recalled) string {
			switch {
			case r.Evicted:
				return "evicted"
			case r.Deleted:
				return "forgotten"
			}
			return ""
		}, func(_ *memory.Recalled, t string) string { return s.Failed.Render(t) }))
	}
	cols = append(cols, memCol("text", 0, false, func(r *memory.Recalled) string { return oneLine(r.Text) }, plain))
	if !anyTags {
		cols = slices.DeleteFunc(cols, func(c memColumn) bool { return c.title == "tags" })
	}
	used := func(cols []memColumn) int {
		n := 3 // the cursor
		for _, c := range cols {
			n += c.width
		}
		return n
	}
	const minText = 36
	for _, drop := range []string{"agent", "tags", "tok", "conf", "time"} {
		if p.width-used(cols) >= minText {
			break
		}
		cols = slices.DeleteFunc(cols, func(c memColumn) bool { return c.title == drop })
	}
	return cols, max(p.width-used(cols), 8)
}

// listRowsOf is the list's header and the rows in view, the cursor's among
// them.
func (p *memoryPane) listRowsOf(scored bool) []string {
	c := &p.list.cursor
	return p.itemRows(p.list.items, c.Index(), c.Offset(), p.listRows(), scored, true)
}

// itemRows renders a header and the rows of items that fit in rows from
// start, the cursor's (-1: none) selected, the last one saying how many
// more there are below.
func (p *memoryPane) itemRows(items []memory.Recalled, cursor, start, rows int, scored, withState bool) []string {
	s := p.styles
	cols, textW := p.itemColumns(items, scored, withState && p.list.want.deleted)
	header := make([]tableColumn, len(cols))
	for i, c := range cols {
		header[i] = c.tableColumn
		if c.title == "text" {
			header[i].width = textW
		}
	}
	cell := func(c memColumn, text string) string {
		if c.title == "text" { // the last column: one cell of margin, not two
			return fitLine(truncateTo(text, max(textW-1, 1)), textW)
		}
		return tableCell(c.tableColumn, text)
	}
	lines := []string{s.Muted.Render(tableHeader(header))}
	start = max(min(start, len(items)), 0)
	for i := start; i < min(start+rows, len(items)); i++ {
		r := &items[i]
		var b strings.Builder
		if i == cursor {
			b.WriteString(" " + s.Selected.Render(glyphCursor+" "))
		} else {
			b.WriteString("   ")
		}
		for _, c := range cols {
			text := cell(c, c.cell(r))
			if i == cursor {
				b.WriteString(s.Selected.Render(text))
			} else {
				b.WriteString(c.style(r, text))
			}
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	if more := len(items) - start - rows; more > 0 && len(lines) > 1 {
		lines[len(lines)-1] = s.Muted.Render(fmt.Sprintf("   %s %d more (↓, pgdn)", glyphDown, more+1))
	}
	return lines
}

// --- the forget box ---

func (p *memoryPane) forgetLines() []string {
	s := p.styles
	f := p.forget
	title := s.Emphasis.Render("Forget") + s.Muted.Render(" from ") + oneLine(f.store)
	if f.stage == forgetConfirming || f.stage == forgetPreviewing {
		title += s.Muted.Render(" · dry run")
	}
	lines := []string{boxRule(s, title, p.width)}
	if f.stage == forgetEditing {
		lines = append(lines, strings.TrimRight(" "+f.input.View(), " "))
	} else {
		lines = append(lines, " "+s.Prompt.Render("forget: ")+oneLine(f.instruction))
	}
	mode := s.Emphasis.Render("soft") + s.Muted.Render(": marked deleted, kept for audit · tab: hard")
	if f.hard {
		mode = s.Failed.Render("hard") + s.Muted.Render(": erased for good, no undo · tab: soft")
	}
	lines = append(lines, truncateTo(" "+s.Muted.Render("mode ")+mode, p.width), "")
	switch f.stage {
	case forgetEditing:
		switch {
		case f.forms != nil:
			lines = append(lines, styleLines(s.Failed, wrapText(glyphFailed+" "+f.err+" It understands:", p.width-2, " "))...)
			lines = append(lines, packForms(f.forms, p.width-4, "   ")...)
		case f.err != "":
			lines = append(lines, styleLines(s.Failed, wrapText(glyphFailed+" "+f.err, p.width-2, " "))...)
		default:
			lines = append(lines, styleLines(s.Muted, wrapText("enter shows what the instruction names (a dry run); nothing is forgotten before you say y.", p.width-2, " "))...)
		}
		// The store's items stay in view, to name them by.
		if rows := p.areaRows() - len(lines) - 2; rows >= 2 && p.list.loaded && p.list.shown.store == f.store && len(p.list.items) > 0 {
			lines = append(lines, "")
			lines = append(lines, p.itemRows(p.list.items, -1, 0, rows, false, true)...)
		}
	case forgetPreviewing:
		lines = append(lines, s.Muted.Render(" Looking for what it names (nothing is forgotten yet)…"))
	case forgetApplying:
		lines = append(lines, s.Muted.Render(" Forgetting "+plural(f.changes(), "item", "items")+"…"))
	case forgetConfirming:
		lines = append(lines, p.previewLines()...)
	}
	return lines
}

// previewLines are the dry run's items and the question.
func (p *memoryPane) previewLines() []string {
	s := p.styles
	f := p.forget
	items := f.preview.Forgotten
	matched := ""
	if f.preview.Matched != "" {
		matched = s.Muted.Render(" · understood as ") + oneLine(f.preview.Matched)
	}
	if len(items) == 0 {
		return []string{truncateTo(" Nothing would go: the instruction"+matched+" names no live item of "+oneLine(f.store)+".", p.width),
			s.Muted.Render(" n changes the instruction, esc too.")}
	}
	summary := " " + s.Emphasis.Render(plural(len(items), "item", "items")+" would go") + matched
	n := f.changes()
	if gone := len(items) - n; gone > 0 {
		summary = " " + s.Emphasis.Render(fmt.Sprintf("%s named, %d already forgotten", plural(len(items), "item", "items"), gone)) + matched
	}
	if f.changed {
		summary += s.Prompt.Render(" · the store changed: previewed again")
	}
	question := f.confirm.View(s, p.width)
	if n == 0 {
		question = truncateTo(s.Muted.Render(" Soft changes nothing here: tab makes it hard, to erase. n changes the instruction."), p.width)
	}
	shown := f.rows.viewLines(s)[:min(f.rows.Height(), f.rows.TotalLineCount())]
	out := append([]string{truncateTo(summary, p.width), p.previewHeader()}, shown...)
	return append(out, "", question)
}

// previewItems are the dry run's items as rows of the item table.
func (f *forgetBox) previewItems() []memory.Recalled {
	if f.preview == nil {
		return nil
	}
	rows := make([]memory.Recalled, len(f.preview.Forgotten))
	for i, it := range f.preview.Forgotten {
		rows[i] = memory.Recalled{Item: it}
	}
	return rows
}

// previewHeader is the header of the previewed items' table.
func (p *memoryPane) previewHeader() string {
	return p.itemRows(p.forget.previewItems(), -1, 0, 0, false, true)[0]
}

// previewRows are every previewed item's row, for the box to scroll.
func (p *memoryPane) previewRows() []string {
	items := p.forget.previewItems()
	return p.itemRows(items, -1, 0, len(items), false, true)[1:]
}

// packForms lays forms out in lines of width, separated by " · ", never
// breaking one across lines.
func packForms(forms []string, width int, indent string) []string {
	var lines []string
	line := ""
	for _, f := range forms {
		f = oneLine(f)
		switch {
		case line == "":
			line = f
		case lineWidth(line)+3+lineWidth(f) <= width:
			line += " · " + f
		default:
			lines = append(lines, indent+line)
			line = f
		}
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return lines
}

// --- the detail ---

func (p *memoryPane) detailLines(w int) []string {
	d := p.detail
	s := p.styles
	if d.item == nil {
		if strings.HasSuffix(d.err, "no longer shared with you.") {
			return []string{" " + s.Emphasis.Render(oneLine(d.err)), "", s.Muted.Render(" Its owner revoked your access. esc goes back to the list.")}
		}
		if d.err != "" {
			return []string{s.Failed.Render(" " + glyphFailed + " " + oneLine(d.err)), "", s.Muted.Render(" esc goes back to the list.")}
		}
		return []string{s.Muted.Render(" Loading…")}
	}
	it := d.item
	const nameW = 17
	valueW := max(w-nameW-2, 10)
	var lines []string
	field := func(name string, values ...string) {
		for i, v := range values {
			label := ""
			if i == 0 {
				label = name
			}
			lines = append(lines, strings.TrimRight(" "+s.Muted.Render(fitLine(label, nameW))+v, " "))
		}
	}
	yesNo := func(b bool, yes string) string {
		if b {
			return s.Failed.Render("yes") + s.Muted.Render(" · "+yes)
		}
		return "no"
	}
	storeType := ""
	if c := p.store(d.store); c != nil {
		storeType = s.Muted.Render(" (" + oneLine(c.Type) + " memory)")
	}
	field("store", oneLine(d.store)+storeType)
	field("id", oneLine(it.ID))
	field("type", oneLine(it.Type))
	field("importance", fmt.Sprintf("%.2f", it.Importance))
	field("timestamp", it.Timestamp.UTC().Format("2006-01-02 15:04:05 MST")+s.Muted.Render(" · "+ago(p.conn.Now(), it.Timestamp)))
	field("agent_id", oneLine(it.AgentID))
	tags := glyphNone
	if len(it.Tags) > 0 {
		tags = oneLine(strings.Join(it.Tags, ", "))
	}
	field("tags", tags)
	field("tokens_estimate", fmt.Sprint(it.TokensEstimate))
	field("deleted", yesNo(it.Deleted, "soft-forgotten: kept for audit, hidden from remember; u brings it back"))
	if it.DeletedAt != nil {
		field("deleted_at", it.DeletedAt.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	field("evicted", yesNo(it.Evicted, "forgotten to make room when the store was full"))
	if r := d.rank; r != nil {
		field("score", fmt.Sprintf("%.3f", r.Score)+s.Muted.Render(fmt.Sprintf(" · confidence %.0f%% · for %q", r.Confidence*100, oneLine(p.list.shown.prompt))))
		if r.Why != nil {
			field("why", styleLines(s.Muted, packForms(slices.Concat(memoryWhyGroups(r.Why)...), valueW, ""))...)
		}
	}
	lines = append(lines, "")
	field("text", wrapText(it.Text, valueW, "")...)
	lines = append(lines, "")
	field("metadata", metadataLines(it.Metadata)...)
	if it.Deleted {
		lines = append(lines, "", s.Muted.Render(" x erases it for good (with a preview first) · esc goes back"))
	} else {
		lines = append(lines, "", s.Muted.Render(" x forgets it (with a preview first) · esc goes back"))
	}
	return lines
}

// metadataLines pretty-prints an item's metadata, one string per line.
func metadataLines(raw json.RawMessage) []string {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Indent(&buf, raw, "", "  ") != nil {
		return []string{oneLine(string(raw))}
	}
	if buf.String() == "{}" {
		return []string{"{} (none)"}
	}
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = oneLine(l)
	}
	return lines
}
