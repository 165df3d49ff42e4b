package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/episodic"
)

// View renders the pane: the title line and the threads; below, the
// selected thread's rule (with the views), its facts and links, and the
// view; the outcome question, when asked, at the bottom.
func (p *threadsPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	lines := []string{p.titleLine()}
	switch {
	case p.list.err != "" && len(p.list.threads) == 0:
		lines = append(lines, "")
		lines = append(lines, styleLines(p.styles.Failed, wrapText("✗ "+p.list.err, p.width-2, " "))...)
		return fit(joinLines(lines), p.width, p.height)
	case !p.list.loaded:
		return fit(joinLines(append(lines, "", p.styles.Muted.Render(" Loading…"))), p.width, p.height)
	case len(p.list.threads) == 0:
		lines = append(lines, p.emptyLines()...)
		return fit(joinLines(lines), p.width, p.height)
	}
	lines = append(lines, p.listLines()...)
	lines = append(lines, p.headLines()...)
	lines = append(lines, p.sectionView()...)
	ask := p.askLines()
	body := fit(joinLines(lines), p.width, max(p.height-len(ask), 0))
	if len(ask) == 0 {
		return body
	}
	if p.height <= len(ask) {
		return fit(joinLines(ask), p.width, p.height)
	}
	return body + "\n" + fit(joinLines(ask), p.width, len(ask))
}

// --- sizes ---

// listRows is how many threads show at once: a few, so that the selected
// thread keeps most of the screen.
func (p *threadsPane) listRows() int {
	return max(min(len(p.list.threads), max(p.height/4+1, 2), 10), 1)
}

// threadsHeadRows: a gap, the rule, the facts line and the links line.
const threadsHeadRows = 4

// sectionRows is the height of the view below the selected thread's head.
func (p *threadsPane) sectionRows() int {
	return max(p.height-1-(1+p.listRows())-threadsHeadRows-len(p.askLines()), 1)
}

// --- the title and the list ---

func (p *threadsPane) titleLine() string {
	s := p.styles
	line := " " + s.Emphasis.Render("Threads")
	switch {
	case p.list.err != "" && len(p.list.threads) == 0:
	case !p.list.loaded:
		line += s.Muted.Render(" · loading…")
	case len(p.list.threads) > 0:
		line += s.Muted.Render(" · " + plural(len(p.list.threads), "thread", "threads"))
		if len(p.list.threads) > 1 {
			line += s.Muted.Render(", most recently active first")
		}
		if c := p.shownCursor(); len(p.list.threads) > c.Height() {
			start, end := c.visible()
			line += s.Muted.Render(fmt.Sprintf(" · %d-%d", start+1, end))
		}
		if t := p.tune.tuning; t != nil {
			line += s.Muted.Render(fmt.Sprintf(" · link threshold %.2f", t.Threshold))
		}
	}
	if p.judge.count > 0 {
		what := "judging links…"
		if p.judge.threads > 0 {
			what = fmt.Sprintf("judging links with %s…", plural(p.judge.threads, "thread", "threads"))
		}
		judging := p.judge.spinner.View() + " " + s.Prompt.Render(what)
		if gap := p.width - lineWidth(line) - lineWidth(judging) - 1; gap >= 2 {
			line += strings.Repeat(" ", gap) + judging
		} else {
			line = " " + s.Emphasis.Render("Threads") + " " + judging
		}
	}
	return truncateTo(line, p.width)
}

func (p *threadsPane) emptyLines() []string {
	s := p.styles
	lines := []string{"", s.Muted.Render(" No threads yet.")}
	lines = append(lines, styleLines(s.Muted, wrapText(fmt.Sprintf("A thread is a conversation on a channel. Chatting on the Chat tab "+
		"starts one (on web by default; ctrl+t there picks another channel). Web and app keep the thread you choose; %s "+
		"continue the latest thread used on one of them, or start a new one after %d minutes of silence, linked to the earlier "+
		"threads it continues. Or from the palette:", implicitChannels("and"), episodic.DefaultInactivityTimeout),
		p.width-2, " "))...)
	return append(lines, ` :thread.message {"channel": "sms", "text": "What's the weather in New York?"}`)
}

// implicitChannels lists the implicit channels: "sms, whatsapp and voice".
func implicitChannels(conj string) string {
	return listWords(episodic.ImplicitChannels, conj)
}

// shownCursor is the list's cursor at the height the list has now (the
// layout may have changed since the last key).
func (p *threadsPane) shownCursor() listCursor {
	c := p.list.cursor
	c.setLen(len(p.list.threads))
	c.setHeight(p.listRows())
	return c
}

func (p *threadsPane) lastActive(t *episodic.Thread) string {
	return ago(p.conn.Now(), t.LastActivityAt)
}

// listLines are the header and the threads that fit.
func (p *threadsPane) listLines() []string {
	s := p.styles
	chanW, lastW := p.list.chanW, max(len("last"), p.list.lastWidth(p.conn.Now()))+2
	cols := dropColumns([]tableColumn{
		{title: "title"},
		{title: "channels", width: chanW},
		{title: "turns", width: 7, right: true},
		{title: "last", width: lastW},
		{title: "status", width: 11},
		{title: "links", width: 7},
	}, "title", p.width, 20, "channels", "last", "links")
	var head strings.Builder
	head.WriteString("   ")
	for _, c := range cols {
		head.WriteString(tableCell(c, c.title))
	}
	lines := []string{s.Muted.Render(strings.TrimRight(head.String(), " "))}
	c := p.shownCursor()
	start, end := c.visible()
	for i := start; i < end; i++ {
		t := p.list.threads[i]
		var b strings.Builder
		selected := t.ID == p.list.sel
		if selected {
			b.WriteString(" " + s.Selected.Render("▸ "))
		} else {
			b.WriteString("   ")
		}
		for _, c := range cols {
			var text string
			switch c.title {
			case "title":
				text = oneLine(t.Title)
			case "channels":
				text = oneLine(strings.Join(t.Channels, ","))
			case "turns":
				text = fmt.Sprint(t.TurnCount)
			case "last":
				text = p.lastActive(t)
			case "status":
				text = t.Status
			case "links":
				if n := len(t.LinkedThreads); n > 0 {
					text = fmt.Sprintf("⇄ %d", n)
				}
			}
			cell := tableCell(c, text)
			switch {
			case selected && c.title == "title":
				cell = s.Selected.Render(cell)
			case c.title == "status":
				cell = p.statusStyle(t.Status, cell)
			case c.title == "last" || c.title == "channels":
				cell = s.Muted.Render(cell)
			}
			b.WriteString(cell)
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	return lines
}

func (p *threadsPane) statusStyle(status, text string) string {
	switch status {
	case episodic.StatusActive:
		return p.styles.OK.Render(text)
	case episodic.StatusEnded:
		return p.styles.Prompt.Render(text)
	}
	return p.styles.Muted.Render(text)
}

// --- the selected thread's head ---

// headLines are the selected thread's rule (with the views), its facts and
// its links.
func (p *threadsPane) headLines() []string {
	s := p.styles
	t := p.current()
	if t == nil {
		return make([]string, threadsHeadRows)
	}
	now := p.conn.Now()
	var tabs []string
	for i, name := range threadsSectionNames {
		if threadsSection(i) == p.lower.section {
			tabs = append(tabs, s.Selected.Render("["+name+"]"))
		} else {
			tabs = append(tabs, s.Muted.Render(" "+name+" "))
		}
	}
	views := strings.Join(tabs, "")
	title := s.Emphasis.Render(truncateTo(oneLine(t.Title), max(p.width-lineWidth(views)-12, 8)))
	head := " " + s.Rule.Render("── ") + title + " " + s.Rule.Render("── ") + views + " "
	rule := head + s.Rule.Render(strings.Repeat("─", max(p.width-lineWidth(head)-1, 0)))

	factLine := " " + p.factsLine(t, now, p.width-1)

	var links string
	if len(t.LinkedThreads) == 0 {
		links = " " + s.Muted.Render("not linked to another thread")
	} else {
		var titles []string
		for _, id := range t.LinkedThreads {
			titles = append(titles, "“"+p.titleOf(id)+"”")
		}
		links = " " + s.Muted.Render("linked to ") + strings.Join(titles, s.Muted.Render(", "))
		if n := len(t.CrossThreadEpisodes); n > 0 {
			links += s.Muted.Render(" · in " + plural(n, "cross-thread episode", "cross-thread episodes"))
		}
	}
	return []string{"", truncateTo(rule, p.width), truncateTo(factLine, p.width), truncateTo(links, p.width)}
}

// threadFact is one fact of the facts line; the least important go first
// when the line does not fit.
type threadFact struct {
	text string
	rank int // lower is more important
}

// factsLine is the selected thread's facts, as many as fit in w: its
// channels, turns, status, times and, for an active thread on an implicit
// channel, what silence does to it.
func (p *threadsPane) factsLine(t *episodic.Thread, now time.Time, w int) string {
	s := p.styles
	facts := []threadFact{{oneLine(strings.Join(t.Channels, ", ")), 3}, {plural(t.TurnCount, "turn", "turns"), 2}}
	var implicit []string
	for _, c := range t.Channels {
		if !episodic.IsExplicit(c) {
			implicit = append(implicit, oneLine(c))
		}
	}
	timeout := time.Duration(t.InactivityTimeoutMinutes) * time.Minute
	active := t.Status == episodic.StatusActive && len(implicit) > 0
	quiet := active && timeout > 0 && now.Sub(t.LastActivityAt) >= timeout
	if quiet {
		// Silent past its timeout: active still, but the next message on
		// an implicit channel starts a new thread (and ends this one).
		facts = append(facts, threadFact{s.Prompt.Render("quiet") + " — the next " + listWords(implicit, "or") + " message starts a new thread", 0})
	} else {
		facts = append(facts, threadFact{p.statusStyle(t.Status, t.Status), 0})
	}
	facts = append(facts, threadFact{"started " + minuteTime(t.CreatedAt, now), 6}, threadFact{"last " + minuteTime(t.LastActivityAt, now), 1})
	if t.EndedAt != nil {
		facts = append(facts, threadFact{"ended " + minuteTime(*t.EndedAt, now), 5})
	}
	if active && !quiet {
		facts = append(facts, threadFact{fmt.Sprintf("silence ends it after %d min", t.InactivityTimeoutMinutes), 4})
	}
	sep := s.Muted.Render(" · ")
	join := func() string {
		texts := make([]string, len(facts))
		for i, f := range facts {
			texts[i] = f.text
		}
		return strings.Join(texts, sep)
	}
	// Drop the least important facts until the line fits (the last one
	// left is cut).
	for len(facts) > 1 && lineWidth(join()) > w {
		worst := 0
		for i, f := range facts {
			if f.rank > facts[worst].rank {
				worst = i
			}
		}
		facts = slices.Delete(facts, worst, worst+1)
	}
	return truncateTo(join(), w)
}

// --- the views ---

// sectionView is the selected view, in sectionRows lines: outside it, the
// start of it (the newest turns for the turns), and where the lines it
// scrolls to are, inside.
func (p *threadsPane) sectionView() []string {
	rows := p.sectionRows()
	if p.lower.section == secDecisions {
		return p.decisionLines(p.width, rows)
	}
	content := p.sectionContent(p.width)
	if len(content) <= rows {
		return content
	}
	v := p.lower.scroll // a copy: drawing moves nothing
	v.setHeight(rows)
	v.setLines(content)
	if !p.lower.inside {
		v.home()
		if p.lower.section == secTurns {
			v.end() // the newest turns
		}
		// Outside, the notes say how to scroll.
		above, below := v.Above, v.Below
		v.Above = func(n int) string { return above(n) + " (enter, then ↑)" }
		v.Below = func(n int) string { return below(n) + " (enter, then ↓)" }
	}
	return v.viewLines(p.styles)
}

// maxSectionScroll is the last first line the view can start at.
func (p *threadsPane) maxSectionScroll() int {
	return max(len(p.sectionContent(p.width))-p.sectionRows(), 0)
}

// sectionContent is every line of the view (the turns, the compaction tree
// or the tuning report); the view shows a window of it.
func (p *threadsPane) sectionContent(w int) []string {
	s := p.styles
	switch p.lower.section {
	case secTurns:
		d := p.shownDetail()
		switch {
		case d == nil && p.detail.err != "":
			return styleLines(s.Failed, wrapText("✗ "+p.detail.err, w-2, " "))
		case d == nil:
			return []string{s.Muted.Render(" Loading…")}
		}
		return p.turnLines(d, w)
	case secCompaction:
		return p.compactionLines(w)
	case secTuning:
		return p.tuningLines(w)
	}
	return nil
}

// turnLines are the thread's turns, oldest first, as the Chat tab shows
// utterances; archived ones (their episode compacted) say so.
func (p *threadsPane) turnLines(d *episodic.ThreadView, w int) []string {
	s := p.styles
	if len(d.Turns) == 0 {
		return []string{s.Muted.Render(" No turns.")}
	}
	now := p.conn.Now()
	var lines []string
	archived := 0
	for _, u := range d.Turns {
		if u.Archived {
			archived++
		}
	}
	if archived > 0 {
		lines = append(lines, s.Muted.Render(fmt.Sprintf(" %s archived by compaction (kept whole; the compaction view has their summaries)",
			plural(archived, "turn", "turns"))))
	}
	for i, u := range d.Turns {
		if i > 0 || archived > 0 {
			lines = append(lines, "")
		}
		speaker := s.Prompt.Render(oneLine(u.Speaker))
		if u.Speaker == "user" {
			speaker = s.Emphasis.Render(u.Speaker)
		}
		head := " " + s.Muted.Render(fmt.Sprintf("#%d ", u.Number)) + speaker +
			s.Muted.Render(fmt.Sprintf(" · %s · %s", oneLine(u.Channel), minuteTime(u.At, now)))
		if u.Archived {
			head += s.Prompt.Render(" · archived")
		}
		lines = append(lines, truncateTo(head, w))
		text := wrapText(u.Text, w-4, "   ")
		if u.Archived {
			text = styleLines(s.Muted, text)
		}
		lines = append(lines, text...)
	}
	return lines
}

// decisionLines are the thread's linking decisions as a table, the chosen
// one's signals and the model's reading below it, and the keys.
func (p *threadsPane) decisionLines(w, rows int) []string {
	s := p.styles
	d := p.shownDetail()
	switch {
	case d == nil && p.detail.err != "":
		return styleLines(s.Failed, wrapText("✗ "+p.detail.err, w-2, " "))
	case d == nil:
		return []string{s.Muted.Render(" Loading…")}
	}
	ds := d.Decisions
	threshold := ""
	if p.tune.tuning != nil {
		threshold = fmt.Sprintf(" · current threshold %.2f", p.tune.tuning.Threshold)
	}
	if len(ds) == 0 {
		lines := []string{s.Muted.Render(" No linking decision about this thread" + threshold + ".")}
		return append(lines, styleLines(s.Muted, wrapText("When a new thread starts, it is scored against the earlier ones "+
			"(and judged by the model, when one is configured); each candidate gets a decision, LINK or DON'T_LINK, shown here "+
			"for both threads.", w-2, " "))...)
	}
	cur := p.decIndex()
	// The details of the chosen decision show below the table when they
	// fit beside a few rows of it (and the pager); when they do not, the
	// table has the room, and the details show once enter has chosen a
	// decision, with the chosen row only above them.
	const head = 2 // the summary and the column titles
	detail := p.decisionDetail(w)
	tableFor := func(room int) int { // rows of a table in room lines, with its pager when it needs one
		if len(ds) <= room {
			return len(ds)
		}
		return room - 1
	}
	want := min(len(ds), 3)
	withDetail := tableFor(rows-head-1-len(detail)) >= want
	compact := !withDetail && p.lower.inside
	var tableRows int
	switch {
	case withDetail:
		tableRows = tableFor(rows - head - 1 - len(detail))
	case compact:
		tableRows = 1
	default:
		tableRows, detail = max(tableFor(rows-head), 1), nil
	}
	// Where the footer has no room, the summary explains the parentheses.
	legend := ""
	if anyInferred(ds) {
		legend = " · (✓)/(✗) inferred, not marked"
	}
	summary := " " + plural(len(ds), "decision", "decisions") + s.Muted.Render(threshold+legend+" · → an earlier thread it was judged against · ← a later one")
	if compact {
		summary = " " + fmt.Sprintf("decision %d of %d", cur+1, len(ds)) + s.Muted.Render(threshold+" · ↑/↓ another · esc back")
	}
	lines := []string{truncateTo(summary, w)}
	// An inferred outcome shows in parentheses, and its column widens for them.
	outcomeW := 13
	if anyInferred(ds) {
		outcomeW = 15
	}
	cols := dropColumns([]tableColumn{
		{title: "with"},
		{title: "alg", width: 6, right: true},
		{title: "llm", width: 10, right: true},
		{title: "agree", width: 7},
		{title: "decision", width: 12},
		{title: "confidence", width: 18},
		{title: "outcome", width: outcomeW},
	}, "with", w, 16, "agree")
	var colHead strings.Builder
	colHead.WriteString("   ")
	for _, c := range cols {
		colHead.WriteString(tableCell(c, c.title))
	}
	lines = append(lines, s.Muted.Render(strings.TrimRight(colHead.String(), " ")))
	start := max(min(cur-tableRows+1, len(ds)-tableRows), 0)
	for i := start; i < min(start+tableRows, len(ds)); i++ {
		lines = append(lines, p.decisionRow(ds[i], cols, i == cur))
	}
	if len(ds) > tableRows && !compact {
		pager := fmt.Sprintf("   %d-%d of %d", start+1, min(start+tableRows, len(ds)), len(ds))
		if !p.lower.inside {
			pager += " (enter, then ↑/↓)"
		}
		lines = append(lines, s.Muted.Render(pager))
	}
	if len(detail) > 0 {
		lines = append(lines, "")
		lines = append(lines, detail...)
	}
	hint := " o marks the chosen decision correct or incorrect · t tunes the threshold"
	if anyInferred(ds) {
		// The parentheses need a word: they are what engram read, not a mark.
		hint = " (✓)/(✗) inferred from the user's next message · o marks it yourself · t tunes"
		if !p.lower.inside {
			hint = " (✓)/(✗) inferred from the user's next message · enter, o marks one · t tunes"
		}
	}
	switch {
	case strings.HasPrefix(hint, " (✓)"):
	case !p.lower.inside && !withDetail:
		hint = " enter chooses a decision and shows its signals · o marks it · t tunes"
	case !p.lower.inside && len(ds) > 1:
		hint = " enter chooses a decision · o marks it correct/incorrect · t tunes the threshold"
	}
	if len(lines)+2 <= rows {
		lines = append(lines, "", truncateTo(s.Muted.Render(hint), w))
	}
	return lines
}

// anyInferred reports whether a decision of ds shows an inferred outcome
// (one without a mark).
func anyInferred(ds []*episodic.Decision) bool {
	return slices.ContainsFunc(ds, func(d *episodic.Decision) bool { return d.Outcome == "" && len(d.Inferred) > 0 })
}

// decisionRow is one row of the table.
func (p *threadsPane) decisionRow(d *episodic.Decision, cols []tableColumn, chosen bool) string {
	s := p.styles
	var b strings.Builder
	switch {
	case chosen && p.lower.inside:
		b.WriteString(" " + s.Selected.Render("▸ "))
	case chosen:
		b.WriteString(" " + s.Muted.Render("▸ "))
	default:
		b.WriteString("   ")
	}
	for _, c := range cols {
		var text string
		style := func(t ...string) string { return strings.Join(t, "") }
		switch c.title {
		case "with":
			if d.ThreadID == p.list.sel {
				text = "→ " + p.titleOf(d.Candidate)
			} else {
				text = "← " + p.titleOf(d.ThreadID)
			}
			if chosen && p.lower.inside {
				style = s.Selected.Render
			}
		case "alg":
			text = fmt.Sprintf("%.2f", d.Algorithmic)
		case "llm":
			text, style = llmCell(d), s.Muted.Render
			if d.LLM != nil {
				style = func(t ...string) string { return strings.Join(t, "") }
			}
		case "agree":
			text = "—"
			if d.Agreement != nil {
				text = "no"
				if *d.Agreement {
					text = "yes"
				}
			}
		case "decision":
			text = d.Decision
			if d.Decision == episodic.Link {
				style = s.OK.Render
			}
		case "confidence":
			text = d.Confidence
			switch d.Confidence {
			case episodic.ConfidenceUncertain:
				style = s.Failed.Render
			case episodic.ConfidenceAlgorithm:
				style = s.Muted.Render
			}
		case "outcome":
			// A person's mark wins (tuning counts it alone); else the
			// latest inferred outcome, in parentheses.
			inferred := ""
			if n := len(d.Inferred); n > 0 {
				inferred = d.Inferred[n-1].Outcome
			}
			switch {
			case d.Outcome == episodic.OutcomeCorrect:
				text, style = "✓ correct", s.OK.Render
			case d.Outcome == episodic.OutcomeIncorrect:
				text, style = "✗ incorrect", s.Failed.Render
			case d.Outcome == "" && inferred == episodic.OutcomeCorrect:
				text, style = "(✓ correct)", s.OK.Render
			case d.Outcome == "" && inferred == episodic.OutcomeIncorrect:
				text, style = "(✗ incorrect)", s.Failed.Render
			default:
				text, style = "—", s.Muted.Render
			}
		}
		b.WriteString(style(tableCell(c, text)))
	}
	return strings.TrimRight(b.String(), " ")
}

// inferredFrom says what an inferred outcome was read from: the phrase in
// the user's next message, or the thread they went to instead.
func inferredFrom(in episodic.InferredOutcome, threadTitle string) string {
	switch in.Signal {
	case episodic.SignalThreadSwitch:
		return "a switch to “" + oneLine(threadTitle) + "”"
	case episodic.SignalContinued:
		return fmt.Sprintf("turn #%d, which went on", in.Turn)
	}
	what := map[string]string{episodic.SignalCorrection: "a correction", episodic.SignalBackReference: "a back-reference",
		episodic.SignalTopicSwitch: "a change of subject"}[in.Signal]
	if what == "" {
		what = oneLine(in.Signal)
	}
	return fmt.Sprintf("%s in turn #%d (“%s”)", what, in.Turn, oneLine(in.Evidence))
}

// llmCell is the model's probability that the threads are related, or
// why there is none.
func llmCell(d *episodic.Decision) string {
	a := d.Assessment
	switch {
	case d.LLM != nil:
		return fmt.Sprintf("%.2f", *d.LLM)
	case a.Error != "":
		return "failed"
	case strings.HasPrefix(a.Note, "no language model"):
		return "no model"
	}
	return "—"
}

// decisionDetail is the chosen decision's signals, the model's reading and
// who decided.
func (p *threadsPane) decisionDetail(w int) []string {
	s := p.styles
	ds := p.decisions()
	if len(ds) == 0 {
		return nil
	}
	d := ds[p.decIndex()]
	const labelW = 10
	field := func(label, text string) string {
		return truncateTo(" "+s.Muted.Render(fitLine(label, labelW))+text, w)
	}
	sig := d.Signals
	var signals []string
	if f := d.Found; f != nil {
		// An older thread: why it was a candidate at all.
		var terms []string
		for _, t := range f.Terms {
			if t.SynonymOf != "" {
				terms = append(terms, t.Term+" for "+t.SynonymOf)
			} else {
				terms = append(terms, t.Term)
			}
		}
		signals = append(signals, "older, found by search for "+oneLine(strings.Join(terms, ", ")))
	}
	for _, c := range sig.Cues {
		signals = append(signals, oneLine(c))
	}
	for _, group := range []struct {
		name  string
		words []string
	}{{"words", sig.Keywords}, {"names", sig.Entities}, {"topics", sig.Topics}} {
		if len(group.words) > 0 {
			signals = append(signals, group.name+" "+oneLine(strings.Join(group.words, ", ")))
		}
	}
	if sig.TopicClash {
		signals = append(signals, "topics differ")
	}
	if sig.EntityClash {
		signals = append(signals, "names differ")
	}
	signals = append(signals, "gap "+gapMinutes(sig.GapMinutes))
	if sig.MostRecent {
		signals = append(signals, "the most recent thread")
	}
	a := d.Assessment
	var model string
	modelStyle := s.Muted
	switch {
	case a.Available:
		related := "not related"
		if a.Related {
			related = "related"
		}
		model, modelStyle = fmt.Sprintf("%s, %.0f%% sure", related, a.Confidence*100), s.HeaderInfo
		if a.Reasoning != "" {
			model += " · " + a.Reasoning
		}
	case a.Error != "":
		model, modelStyle = a.Error, s.Failed
	case a.Note != "":
		model = a.Note
	default:
		model = "not asked"
	}
	by := map[string]string{"both": "both agree", "algorithmic": "the algorithmic score", "llm": "the model (more confident)"}[d.DecidedBy]
	if by == "" {
		by = oneLine(d.DecidedBy)
	}
	decided := fmt.Sprintf("%s, by %s", d.Decision, by)
	if d.DecidedBy != "llm" {
		cmp := "≥"
		if d.Algorithmic < d.Threshold {
			cmp = "<"
		}
		decided += s.Muted.Render(fmt.Sprintf(": score %.2f %s threshold %.2f", d.Algorithmic, cmp, d.Threshold))
	}
	lines := []string{field("signals", strings.Join(signals, s.Muted.Render(" · ")))}
	// The model's reading may be a sentence: two lines of it.
	reading := wrapText(model, max(w-labelW-3, 8), "")
	if len(reading) > 2 {
		reading = []string{reading[0], reading[1] + "…"}
	}
	for i, l := range reading {
		label := "model"
		if i > 0 {
			label = ""
		}
		lines = append(lines, field(label, modelStyle.Render(l)))
	}
	lines = append(lines, field("decided", decided))
	if d.OutcomeAt != nil {
		lines = append(lines, field("marked", d.Outcome+s.Muted.Render(" at "+minuteTime(*d.OutcomeAt, p.conn.Now()))))
	}
	for _, in := range d.Inferred {
		lines = append(lines, field("inferred", in.Outcome+s.Muted.Render(" from "+inferredFrom(in, p.titleOf(in.ThreadID))+" at "+minuteTime(in.At, p.conn.Now()))))
	}
	return lines
}

// --- compaction ---

// threadsTreeLines is how many lines of each summary the compaction tree
// shows until enter expands it.
const threadsTreeLines = 2

// treeNode is one node of the compaction tree: a label, its text, its
// children.
type treeNode struct {
	label    string
	text     []string // plain lines, wrapped under the label
	children []treeNode
}

// renderTree draws nodes under prefix with branches.
func (p *threadsPane) renderTree(nodes []treeNode, prefix string, w int) []string {
	s := p.styles
	var out []string
	for i, n := range nodes {
		last := i == len(nodes)-1
		branch, cont := "├─ ", "│  "
		if last {
			branch, cont = "└─ ", "   "
		}
		out = append(out, truncateTo(prefix+s.Rule.Render(branch)+n.label, w))
		inner := prefix + s.Rule.Render(cont)
		// The text hangs under the label, with the children's branch
		// line beside it when there are children.
		textPrefix := inner + "   "
		if len(n.children) > 0 {
			textPrefix = inner + s.Rule.Render("│") + "  "
		}
		var text []string
		for _, l := range n.text {
			text = append(text, wrapText(l, w-lineWidth(textPrefix), "")...)
		}
		// The overview shows the tree's shape: two lines of each summary,
		// all of them once enter has the view scroll.
		if more := len(text) - threadsTreeLines; more > 0 && !p.lower.inside {
			note := s.Muted.Render(fmt.Sprintf(" … +%s", plural(more, "line", "lines")))
			last := truncateTo(text[threadsTreeLines-1], max(w-lineWidth(textPrefix)-lineWidth(note), 1))
			text = append(text[:threadsTreeLines-1], last+note)
		}
		for _, l := range text {
			out = append(out, textPrefix+l)
		}
		out = append(out, p.renderTree(n.children, inner, w)...)
	}
	return out
}

// compactionLines draw the thread's episodes, newest first (the one just
// compacted near the top), as trees: macro (across the linked threads) →
// meso (the episode) → micro (a few turns each), and the skills the
// episode taught.
func (p *threadsPane) compactionLines(w int) []string {
	s := p.styles
	eps := p.shownEpisodes()
	if eps == nil {
		if p.eps.err != "" {
			return styleLines(s.Failed, wrapText("✗ "+p.eps.err, w-2, " "))
		}
		return []string{s.Muted.Render(" Loading…")}
	}
	now := p.conn.Now()
	var lines []string
	for _, x := range eps.CrossThreadEpisodes {
		var others []string
		for _, id := range x.LinkedThreads {
			if id != p.list.sel {
				others = append(others, "“"+p.titleOf(id)+"”")
			}
		}
		if len(others) > 0 {
			lines = append(lines, truncateTo(" "+s.Muted.Render("cross-thread episode with ")+strings.Join(others, s.Muted.Render(", "))+
				s.Muted.Render(" · the macro summaries span them"), w))
		}
	}
	if len(eps.Episodes) == 0 {
		return append(lines, s.Muted.Render(" No episodes."))
	}
	for i, ep := range slices.Backward(eps.Episodes) {
		if i < len(eps.Episodes)-1 {
			lines = append(lines, "")
		}
		head := " " + s.Emphasis.Render(fmt.Sprintf("Episode %d", ep.Number)) + s.Muted.Render(" · ") + p.episodeStatus(ep.Status)
		switch {
		case ep.Status == episodic.EpisodeCompacted && ep.CompactedAt != nil:
			head += s.Muted.Render(" " + minuteTime(*ep.CompactedAt, now))
		case ep.ClosedAt != nil:
			head += s.Muted.Render(" · closed " + minuteTime(*ep.ClosedAt, now))
		}
		if ep.TurnCount > 0 {
			head += s.Muted.Render(fmt.Sprintf(" · turns #%d-%d", ep.FirstTurn, ep.LastTurn))
		}
		if why := episodeReason(ep.Reason); why != "" {
			head += s.Muted.Render(" · " + why)
		}
		lines = append(lines, truncateTo(head, w))
		sum := ep.Summaries
		if sum == nil {
			var note string
			switch {
			case ep.TurnCount == 0:
				note = "No turns yet: the thread's next message goes here."
			case ep.Status == episodic.EpisodeClosed:
				note = "Waiting for compaction."
			default:
				note = fmt.Sprintf("%s, not compacted yet: an episode is compacted when its thread ends (a new thread takes over), "+
					"after %d turns, or now with c.", plural(ep.TurnCount, "turn", "turns"), episodic.EpisodeMaxTurns)
			}
			lines = append(lines, styleLines(s.Muted, wrapText(note, w-4, "   "))...)
			continue
		}
		var micros []treeNode
		for _, m := range sum.Micro {
			micros = append(micros, treeNode{label: s.Prompt.Render("micro") + s.Muted.Render(fmt.Sprintf(" · turns #%d-%d", m.Turns[0], m.Turns[1])),
				text: strings.Split(m.Text, "\n")})
		}
		meso := treeNode{label: s.Prompt.Render("meso") + s.Muted.Render(" · the episode"), text: strings.Split(sum.Meso, "\n"), children: micros}
		macro := treeNode{label: s.Prompt.Render("macro") + s.Muted.Render(" · this thread and the threads linked to it"),
			text: strings.Split(sum.Macro, "\n"), children: []treeNode{meso}}
		skills := treeNode{label: s.Prompt.Render("skills") + s.Muted.Render(" · "+plural(len(ep.Skills), "skill", "skills")+" learned")}
		for _, sk := range ep.Skills {
			skills.children = append(skills.children, treeNode{label: s.Emphasis.Render(oneLine(sk.Kind)) + s.Muted.Render(" · ") + oneLine(sk.Text) +
				s.Muted.Render(fmt.Sprintf(" · turn %d, from %s", sk.Turn, oneLine(sk.From)))})
		}
		if len(ep.Skills) == 0 {
			skills.label = s.Prompt.Render("skills") + s.Muted.Render(" · none: no preference, fact or procedure stood out")
		}
		lines = append(lines, p.renderTree([]treeNode{macro, skills}, " ", w)...)
	}
	return lines
}

func (p *threadsPane) episodeStatus(status string) string {
	switch status {
	case episodic.EpisodeOpen:
		return p.styles.OK.Render(status)
	case episodic.EpisodeClosed:
		return p.styles.Prompt.Render(status)
	}
	return p.styles.Muted.Render(status)
}

// episodeReason says why an episode closed.
func episodeReason(reason string) string {
	switch reason {
	case "thread_end":
		return "its thread ended"
	case "size":
		return fmt.Sprintf("full (%d turns)", episodic.EpisodeMaxTurns)
	case "manual":
		return "compacted on request"
	}
	return oneLine(reason)
}

// --- tuning ---

// tuningLines are the linking threshold, and the report of the last
// tuning: the threshold, accuracy and error rates before and after.
func (p *threadsPane) tuningLines(w int) []string {
	s := p.styles
	t := p.tune.tuning
	var lines []string
	switch {
	case p.tune.run.busy:
		lines = append(lines, s.Muted.Render(" Tuning…"))
	case p.tune.err != "":
		lines = append(lines, styleLines(s.Failed, wrapText("✗ "+p.tune.err, w-2, " "))...)
	}
	if t == nil {
		return append(lines, s.Muted.Render(" Loading…"))
	}
	version := 0
	if n := len(t.Prompts); n > 0 {
		version = t.Prompts[n-1].Version
	}
	lines = append(lines, truncateTo(fmt.Sprintf(" link threshold %.2f", t.Threshold)+
		s.Muted.Render(fmt.Sprintf(" · the model's guidance v%d · %s", version, plural(len(t.History), "tuning", "tunings"))), w))
	if len(t.History) == 0 {
		lines = append(lines, "")
		return append(lines, styleLines(s.Muted, wrapText("No tuning yet. Mark decisions correct or incorrect (the decisions view, o), or let engram infer "+
			"that from what the user says next, then press t: tuning replays every decision with an outcome at each threshold from 0.50 to 0.95 and keeps the one with the fewest "+
			"errors, and adds guidance to the model's prompt for the mistakes it keeps making.", w-2, " "))...)
	}
	rec := t.History[len(t.History)-1]
	now := p.conn.Now()
	lines = append(lines, "", truncateTo(" "+s.Emphasis.Render("Last tuning")+s.Muted.Render(fmt.Sprintf(" · %s · from %s · ",
		minuteTime(rec.TunedAt, now), learnedFrom(rec)))+oneLine(rec.Reason), w))
	pct := func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }
	m := rec.Metrics
	row := func(name, before, after string) string {
		line := "   " + s.Muted.Render(fitLine(name, 22)) + fmt.Sprintf("%8s  %8s", before, after)
		if before != after {
			line += s.Prompt.Render("  changed")
		}
		return line
	}
	lines = append(lines,
		"   "+s.Muted.Render(fitLine("", 22)+fmt.Sprintf("%8s  %8s", "before", "after")),
		row("threshold", fmt.Sprintf("%.2f", rec.PreviousThreshold), fmt.Sprintf("%.2f", rec.NewThreshold)),
		row("accuracy", pct(m.AccuracyBefore), pct(m.AccuracyAfter)),
		row("false positive rate", pct(m.FalsePositiveRateBefore), pct(m.FalsePositiveRateAfter)),
		row("false negative rate", pct(m.FalseNegativeRateBefore), pct(m.FalseNegativeRateAfter)))
	llmAcc := "— (it judged none of them)"
	if m.LLMAccuracy != nil {
		llmAcc = pct(*m.LLMAccuracy)
	}
	lines = append(lines, "", truncateTo("   "+s.Muted.Render("the model's accuracy ")+llmAcc+
		s.Muted.Render(fmt.Sprintf(" · %s between the model and the score", plural(m.Disagreements, "disagreement", "disagreements"))), w))
	if len(rec.GuidanceAdded) > 0 {
		lines = append(lines, "", "   "+s.Emphasis.Render(fmt.Sprintf("guidance added (prompt v%d)", rec.PromptVersion)))
		for _, g := range rec.GuidanceAdded {
			lines = append(lines, wrapText("- "+g, w-6, "     ")...)
		}
	}
	if len(t.History) > 1 {
		lines = append(lines, "", s.Muted.Render(" Earlier tunings"))
		for i := len(t.History) - 2; i >= 0; i-- {
			r := t.History[i]
			lines = append(lines, truncateTo(s.Muted.Render(fmt.Sprintf("   %s  %.2f → %.2f  ", minuteTime(r.TunedAt, now),
				r.PreviousThreshold, r.NewThreshold))+oneLine(r.Reason), w))
		}
	}
	return lines
}

// askLines are the question asked, if any, under a rule: the outcome of
// a decision, or whether to tune or compact.
func (p *threadsPane) askLines() []string {
	if p.ask.Active() {
		return p.ask.ViewRuled(p.styles, p.width)
	}
	return p.confirm.ViewRuled(p.styles, p.width)
}
