package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/history"
)

// chatBarWidth is the width of the side panel's bars, brackets aside.
const chatBarWidth = 10

// View renders the pane: a title line, the main area (the conversation,
// search results or the switcher) beside the side panel, and the input line.
func (p *chatPane) View() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	s := p.styles
	bodyH := p.bodyHeight()
	mw := p.mainWidth()
	main := strings.Split(fit(joinLines(p.mainLines(mw, bodyH)), mw, bodyH), "\n")
	lines := []string{p.titleLine()}
	rule := strings.Repeat("─", p.width)
	if p.narrow() {
		lines = append(lines, main...)
	} else {
		sw := p.sideWidth()
		side := strings.Split(fit(joinLines(p.sideLines(sw, bodyH)), sw, bodyH), "\n")
		sep := s.Rule.Render("│")
		for i := range main {
			lines = append(lines, main[i]+sep+side[i])
		}
		rule = strings.Repeat("─", mw) + "┴" + strings.Repeat("─", max(p.width-mw-1, 0))
	}
	lines = append(lines, s.Rule.Render(rule), p.inputLine())
	return fit(joinLines(lines), p.width, p.height)
}

// render re-renders the content of every viewport: call it after anything
// they show changes.
func (p *chatPane) render() {
	p.renderConv()
	p.renderSide()
	p.renderHits()
}

// --- the title and input lines ---

func (p *chatPane) titleLine() string {
	s := p.styles
	line := " " + s.Emphasis.Render("Chat") + s.Muted.Render(" · ") + oneLine(p.conv)
	if p.route.channel != "" {
		line += s.Muted.Render(" · on ") + p.route.channel
		if episodic.IsExplicit(p.route.channel) {
			thread := s.Muted.Render("a new thread")
			if shown := p.route.shownThread(); shown != "" {
				thread = "“" + p.threadTitle(shown) + "”"
			}
			line += s.Muted.Render(" › ") + thread
		}
	}
	switch {
	case p.picker != nil:
		line += s.Muted.Render(" · choosing a channel")
	case p.switcher != nil:
		line += s.Muted.Render(" · switching conversations")
	case p.mode == chatResults || (p.mode == chatSearching && p.find.query != ""):
		line += s.Muted.Render(" · search ") + fmt.Sprintf("%q", oneLine(p.find.query))
		switch {
		case p.find.err != "":
			line += s.Failed.Render(" failed")
		case !p.find.searched:
			line += s.Muted.Render(" · searching…")
		default:
			line += s.Muted.Render(": "+plural(len(p.find.hits), "hit", "hits")+", best first, evicted ones included") +
				s.Muted.Render(scrollNote(&p.find.view))
		}
	case p.narrow() && p.main == mainSide:
		line += s.Muted.Render(" · side panel · ctrl+p for more")
	case !p.buf.statsLoaded:
	case !p.buf.stats.Exists:
		line += s.Muted.Render(" · conversation not started")
	default:
		line += s.Muted.Render(fmt.Sprintf(" · %s · %s, %d evicted", p.buf.stats.Backend,
			plural(p.buf.stats.NextIndex, "utterance", "utterances"), p.buf.stats.EvictedCount))
	}
	return truncateTo(line, p.width)
}

// scrollNote says where a viewport is, when it does not show everything.
func scrollNote(v interface {
	TotalLineCount() int
	AtTop() bool
	AtBottom() bool
}) string {
	switch {
	case v.AtTop() && v.AtBottom():
		return ""
	case v.AtTop():
		return " · more below"
	case v.AtBottom():
		return " · more above"
	}
	return " · more above and below"
}

func (p *chatPane) inputLine() string {
	s := p.styles
	switch {
	case p.mode == chatSearching:
		return strings.TrimRight(" "+p.find.input.View(), " ")
	case p.mode == chatResults:
		why := ""
		switch {
		case !p.find.anyWhy():
		case p.find.hideWhy:
			why = " · w shows why"
		default:
			why = " · w hides why"
		}
		return " " + s.Muted.Render("search: ") + oneLine(p.find.query) + s.Muted.Render("   enter shows the hit in the chat"+why+" · / searches again · esc goes back")
	case p.picker != nil:
		return " " + p.styles.Muted.Render("enter uses it · esc goes back")
	case p.mode == chatTyping && p.switcher == nil:
		return strings.TrimRight(" "+p.input.View(), " ")
	case p.mode == chatReplying && p.switcher == nil:
		return strings.TrimRight(" "+p.reply.input.View(), " ")
	case p.switcher != nil:
		return " " + p.styles.Muted.Render("enter switches · esc goes back")
	case p.input.Value() != "":
		return strings.TrimRight(" "+p.input.View(), " ") + s.Muted.Render("   (enter to go on typing)")
	}
	return " " + s.Prompt.Render("› ") + s.Muted.Render("press enter to type a message · / search · ctrl+o conversations · ctrl+p context · ctrl+t channel")
}

// --- the main area ---

func (p *chatPane) mainLines(w, h int) []string {
	switch {
	case p.picker != nil:
		return p.pickerLines(w, h)
	case p.switcher != nil:
		in := strings.TrimRight(" "+p.switcher.input.View(), " ")
		lines := p.switcherLines(w)
		return append([]string{lines[0], in}, lines[1:]...)
	case p.mode == chatResults || (p.mode == chatSearching && p.find.query != ""):
		return p.hitsLines()
	case p.main == mainSide:
		return p.sideLines(w, h)
	}
	return p.buf.view.viewLines(p.styles)
}

func (p *chatPane) renderConv() {
	w := p.mainWidth()
	p.buf.view.setHeight(p.bodyHeight())
	p.buf.view.setLines(p.convLines(w))
}

// pending is the message in flight, unless the buffer shows it already.
func (p *chatPane) pending() bool {
	return p.out.text != "" && p.out.conv == p.conv && p.sentAt() < 0
}

// sentAt is the index of the utterance in flight once the buffer shows it
// (-1 until then, or when nothing is in flight).
func (p *chatPane) sentAt() int {
	if p.out.text == "" || p.out.conv != p.conv {
		return -1
	}
	for _, u := range p.buf.utts {
		if u.UtteranceIndex >= p.out.from && u.Speaker == "user" && u.Text == p.out.text {
			return u.UtteranceIndex
		}
	}
	return -1
}

// finishingLine says that the message in flight is recorded but its
// send is not over (the thread it went to, the model's answer or the
// turn's end are still to come): where its route will show.
func (p *chatPane) finishingLine() string {
	s := p.styles
	what := "finishing…"
	if p.out.channel != "" {
		what = "→ " + p.out.channel + " · finishing…"
	}
	return "   " + p.out.spinner.View() + " " + s.Muted.Render(what)
}

func (p *chatPane) convLines(w int) []string {
	s := p.styles
	switch {
	case p.buf.revoked:
		return append([]string{""}, styleLines(s.Failed, wrapText("Access to "+oneLine(p.conv)+
			" was taken back by its owner: it no longer shows. ctrl+o switches to another conversation.", w-2, " "))...)
	case p.buf.loadErr != "" && !p.buf.loaded:
		return []string{"", s.Failed.Render(" ✗ Could not read the conversation: " + oneLine(p.buf.loadErr))}
	case !p.buf.loaded:
		return []string{"", s.Muted.Render(" Loading…")}
	}
	var lines []string
	if sum := p.buf.stats.Summary; sum.CoveredCount() > 0 {
		lines = append(lines, truncateTo(s.Muted.Render(fmt.Sprintf(" ┄ %s left the buffer: the summary covers %s ┄",
			plural(sum.CoveredCount(), "utterance", "utterances"), coveredLabel(sum))), w), "")
	}
	if len(p.buf.utts) == 0 && !p.pending() {
		lines = append(lines, "", s.Muted.Render(" No messages in "+oneLine(p.conv)+" yet."), "")
		for _, l := range wrapText("Press enter and say something. Each message runs a turn: the working memory is assembled "+
			"(goals, this buffer, its summary), the model answers if one is configured, and both are recorded here. "+
			"Without a model, the side panel shows the exact context the model would get.", w-2, " ") {
			lines = append(lines, s.Muted.Render(l))
		}
		return lines
	}
	if !p.hasModel() {
		// Said once, not under every message.
		lines = append(lines, styleLines(s.Muted, wrapText(p.offlineNote(), w-2, " "))...)
		lines = append(lines, "")
	}
	now := p.conn.Now()
	p.buf.at = make(map[int]int, len(p.buf.utts))
	prevTurn := -1
	// The message in flight, once recorded: its send is still finishing.
	finishing := -1
	if p.out.load.busy {
		finishing = p.sentAt()
	}
	for i, u := range p.buf.utts {
		if i > 0 && u.TurnNumber != prevTurn {
			lines = append(lines, "")
		}
		prevTurn = u.TurnNumber
		p.buf.at[u.UtteranceIndex] = len(lines)
		if p.buf.marked && p.buf.mark == u.UtteranceIndex {
			// The hit a search showed: marked, and its text stands out.
			lines = append(lines, truncateTo(s.Selected.Render(glyphCursor)+p.uttHeader(u, now, false)+s.Selected.Render(" · found"), w))
			lines = append(lines, styleLines(s.Selected, wrapText(u.Text, w-4, "   "))...)
		} else {
			lines = append(lines, truncateTo(" "+p.uttHeader(u, now, false), w))
			lines = append(lines, wrapText(u.Text, w-4, "   ")...)
		}
		if r := p.route.routes[p.conv][u.UtteranceIndex]; r != nil && u.Speaker == "user" {
			lines = append(lines, styleLines(s.Prompt, wrapText(p.routeNote(r), w-6, "   "))...)
		} else if u.Speaker == "user" && u.UtteranceIndex == finishing {
			lines = append(lines, truncateTo(p.finishingLine(), w))
		}
	}
	if p.pending() {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		sending := " · sending"
		if p.out.channel != "" {
			sending += " on " + p.out.channel
		}
		lines = append(lines, " "+s.Muted.Render("#"+fmt.Sprint(p.out.from)+" ")+s.Emphasis.Render("user")+s.Muted.Render(sending))
		lines = append(lines, wrapText(p.out.text, w-4, "   ")...)
		what := "assembling the context…"
		if p.hasModel() {
			what = "waiting for the model…"
		}
		lines = append(lines, " "+p.out.spinner.View()+s.Muted.Render(" "+what))
	}
	return lines
}

// hasModel reports whether a language model answers messages.
func (p *chatPane) hasModel() bool { return p.model }

// uttHeader is "#8 user · turn 5 · 10:04:00", and "· evicted" after the
// speaker when asked and it is.
func (p *chatPane) uttHeader(u *history.Utterance, now time.Time, evicted bool) string {
	s := p.styles
	speaker := s.Prompt.Render(u.Speaker)
	switch u.Speaker {
	case "user":
		speaker = s.Emphasis.Render(u.Speaker)
	case "system":
		speaker = s.Muted.Render(u.Speaker)
	}
	head := s.Muted.Render(fmt.Sprintf("#%d ", u.UtteranceIndex)) + speaker
	if evicted && u.Evicted {
		head += s.Failed.Render(" · evicted")
	}
	return head + s.Muted.Render(fmt.Sprintf(" · turn %d · %s", u.TurnNumber, clockTime(u.Timestamp, now)))
}

// --- search results ---

func (p *chatPane) hitsLines() []string {
	s := p.styles
	switch {
	case p.find.err != "":
		return []string{"", s.Failed.Render(" ✗ " + oneLine(p.find.err))}
	case !p.find.searched:
		return []string{"", s.Muted.Render(" Searching…")}
	case len(p.find.hits) == 0:
		return []string{"", s.Muted.Render(fmt.Sprintf(" Nothing in %s matches %q. / searches again, esc goes back.", oneLine(p.conv), oneLine(p.find.query)))}
	}
	return p.find.view.viewLines(s)
}

func (p *chatPane) renderHits() {
	w := p.mainWidth()
	p.find.view.setHeight(p.bodyHeight())
	s := p.styles
	now := p.conn.Now()
	var lines []string
	p.find.starts = make([]int, len(p.find.hits))
	for i, hit := range p.find.hits {
		p.find.starts[i] = -1
		if hit.Utterance == nil {
			continue
		}
		if i > 0 {
			lines = append(lines, "")
		}
		p.find.starts[i] = len(lines)
		u := hit.Utterance
		num := s.Emphasis.Render(fmt.Sprintf(" %2d ", i+1))
		if i == p.find.sel {
			num = s.Selected.Render(fmt.Sprintf("%s%2d ", glyphCursor, i+1))
		}
		head := num + s.Prompt.Render(fmt.Sprintf("%7.3f", hit.RelevanceScore)) + "  " +
			p.uttHeader(u, now, true)
		lines = append(lines, truncateTo(head, w))
		text := wrapText(u.Text, w-6, "      ")
		if len(text) > 3 {
			text = append(text[:2], truncateTo(text[2]+" …", w))
		}
		lines = append(lines, text...)
		if i == p.find.sel && !p.find.hideWhy {
			// Why the selected hit was found, under its text.
			lines = append(lines, whyLines(s, "      why ", hitWhyGroups(&hit), w, whyMaxLines(p.bodyHeight()))...)
		}
	}
	p.find.view.setLines(lines)
}

// --- the side panel ---

// sideLines is the side panel: the buffer's fill and the last eviction,
// then the page (the summary, or the context of the last message).
func (p *chatPane) sideLines(w, h int) []string {
	fixed := p.sideFixed(w)
	return append(append(fixed, p.pageHeader(w)...), p.side.view.viewLines(p.styles)...)
}

func (p *chatPane) sideWidthNow() int {
	if p.narrow() {
		return p.width
	}
	return p.sideWidth()
}

func (p *chatPane) renderSide() {
	w := p.sideWidthNow()
	p.side.view.setHeight(max(p.bodyHeight()-len(p.sideFixed(w))-len(p.pageHeader(w)), 1))
	if p.side.page == pageContext {
		p.side.view.setLines(p.contextLines(w))
	} else {
		p.side.view.setLines(p.summaryLines(w))
	}
}

// sideFixed is the top of the side panel: the buffer's fill as bars, and
// the last eviction.
func (p *chatPane) sideFixed(w int) []string {
	s := p.styles
	st := p.buf.stats
	switch {
	case !p.buf.statsLoaded && p.buf.statsErr != "":
		return append([]string{s.Emphasis.Render(" Buffer")},
			append(styleLines(s.Failed, wrapText("✗ Could not read its figures: "+oneLine(p.buf.statsErr), w-2, " ")), "")...)
	case !p.buf.statsLoaded:
		return []string{s.Emphasis.Render(" Buffer"), s.Muted.Render(" Loading…"), ""}
	}
	lines := []string{s.Emphasis.Render(" Buffer") + s.Muted.Render(" · "+st.Backend)}
	lines = append(lines, " "+p.bar(st.Size, st.BufferSize)+fmt.Sprintf(" %d/%d", st.Size, st.BufferSize)+s.Muted.Render(" utterances"))
	if st.MaxTokens > 0 {
		lines = append(lines, " "+p.bar(st.TotalTokens, st.MaxTokens)+fmt.Sprintf(" %d/%d", st.TotalTokens, st.MaxTokens)+s.Muted.Render(" tokens"))
	} else {
		lines = append(lines, fmt.Sprintf(" %d", st.TotalTokens)+s.Muted.Render(" tokens · no max_tokens"))
	}
	lines = append(lines, s.Muted.Render(fmt.Sprintf(" %d evicted · %d written", st.EvictedCount, st.NextIndex)), "")
	ev := st.LastEviction
	switch {
	case ev == nil:
		lines = append(lines, s.Emphasis.Render(" Last eviction")+s.Muted.Render(" · none yet"))
	case p.evict.on:
		lines = append(lines, s.Selected.Render(" » Last eviction · just now"),
			" "+s.Selected.Render(indexLabel(ev.Indexes))+s.Muted.Render(" · "+evictionReason(ev.Reason, st)))
	default:
		lines = append(lines, s.Emphasis.Render(" Last eviction")+s.Muted.Render(" · "+clockTime(ev.At, p.conn.Now())),
			" "+indexLabel(ev.Indexes)+s.Muted.Render(" · "+evictionReason(ev.Reason, st)))
	}
	for i, l := range lines {
		lines[i] = truncateTo(l, w)
	}
	return append(lines, "")
}

func evictionReason(reason string, st history.Stats) string {
	switch reason {
	case "buffer_size":
		if st.Size < st.BufferSize {
			// Configured since: the size it reached then is not today's.
			return fmt.Sprintf("buffer_size reached (now %d)", st.BufferSize)
		}
		return fmt.Sprintf("buffer_size %d reached", st.BufferSize)
	case "max_tokens":
		return fmt.Sprintf("over max_tokens %d", st.MaxTokens)
	}
	return reason
}

// bar renders n of total as "[████······]".
func (p *chatPane) bar(n, total int) string { return meter(p.styles, n, total, chatBarWidth) }

// pageHeader is the title of the side panel's page.
func (p *chatPane) pageHeader(w int) []string {
	s := p.styles
	var title, note string
	if p.side.page == pageContext {
		switch {
		case p.out.last == nil || p.out.lastConv != p.conv:
			title, note = " Context", " · of your next message"
		case p.out.last.Answered || p.out.last.LLMError != "":
			title = " Context sent to the model"
		default:
			title = " Context that would be sent"
		}
		if p.out.reconfigured != nil && p.out.lastConv == p.conv {
			note = " · reconfigured since"
		}
	} else {
		sum := p.buf.stats.Summary
		title = " Summary"
		if sum.CoveredCount() > 0 {
			note = fmt.Sprintf(" · covers %s · %d/%d tokens", coveredLabel(sum), sum.TokenCount, p.buf.stats.SummaryTokenLimit)
			if sum.Writer == "model" {
				note += " · by the model"
			}
		}
	}
	return []string{truncateTo(s.Emphasis.Render(title)+s.Muted.Render(note), w)}
}

func (p *chatPane) summaryLines(w int) []string {
	s := p.styles
	sum := p.buf.stats.Summary
	if !p.buf.statsLoaded {
		// The buffer's size is not known yet: say nothing rather than a
		// wrong number.
		return nil
	}
	if strings.TrimSpace(sum.Text) == "" {
		return wrapText(fmt.Sprintf("Nothing evicted yet. Once the buffer holds %d utterances, the oldest go, folded into this running summary.",
			max(p.buf.stats.BufferSize, 1)), w-2, " ")
	}
	var lines []string
	for _, l := range strings.Split(sum.Text, "\n") {
		// "[0-2] user: text": the text hangs under its label, which is muted.
		wrapped := strings.Split(wrapIndented(" "+oneLine(l), w-1), "\n")
		if label, _, ok := strings.Cut(wrapped[0], "] "); ok && strings.HasPrefix(label, " [") {
			wrapped[0] = " " + s.Muted.Render(label[1:]+"]") + wrapped[0][len(label)+1:]
		}
		lines = append(lines, wrapped...)
	}
	return lines
}

// contextLines is the prompt of the last message: the system prompt, then
// every message, the new one last.
func (p *chatPane) contextLines(w int) []string {
	s := p.styles
	if p.out.last == nil || p.out.lastConv != p.conv {
		return wrapText("Nothing sent yet. Send a message and the exact context it was sent with shows here: without a model, what would be sent.", w-2, " ")
	}
	pr := p.out.last.Prompt
	what := " sent"
	if !p.out.last.Answered && p.out.last.LLMError == "" {
		what = " not sent: no model is configured"
	}
	lines := styleLines(s.Muted, wrapText(fmt.Sprintf("system prompt + %s,%s", plural(len(pr.Messages), "message", "messages"), what), w-2, " "))
	if p.out.last.LLMError != "" {
		lines = append(lines, styleLines(s.Failed, wrapText("the model failed: "+p.out.last.LLMError, w-2, " "))...)
	}
	if c := p.out.reconfigured; c != nil {
		// What shows is history: the message was sent before the change.
		lines = append(lines, styleLines(s.Prompt, wrapText(fmt.Sprintf(
			"The conversation was reconfigured since (buffer %d, summary limit %d tokens): this is the context the last message was sent with; the next one gets the new settings.",
			c.BufferSize, c.SummaryTokenLimit), w-2, " "))...)
	}
	lines = append(lines, "", " "+s.Prompt.Render("system"))
	lines = append(lines, wrapText(pr.System, w-3, "  ")...)
	for i, m := range pr.Messages {
		role := m.Role
		if i == len(pr.Messages)-1 {
			role += " (this message)"
		}
		lines = append(lines, "", " "+s.Prompt.Render(role))
		lines = append(lines, wrapText(m.Content, w-3, "  ")...)
	}
	return lines
}

// --- helpers ---

// indexLabel lists utterance indexes compactly: "#0-7", "#0-3, 5, 7-9".
// coveredLabel names the utterances a summary covers: from its list of
// indexes while it has one, else from its ranges (a long conversation's).
func coveredLabel(sum history.Summary) string {
	if sum.Covers != nil {
		return indexLabel(sum.Covers)
	}
	parts := make([]string, 0, len(sum.CoveredSpans))
	for _, sp := range sum.CoveredSpans {
		if sp.To > sp.From {
			parts = append(parts, fmt.Sprintf("%d-%d", sp.From, sp.To))
		} else {
			parts = append(parts, fmt.Sprint(sp.From))
		}
	}
	return "#" + strings.Join(parts, ", ")
}

func indexLabel(xs []int) string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		} else {
			parts = append(parts, fmt.Sprint(xs[i]))
		}
		i = j + 1
	}
	return "#" + strings.Join(parts, ", ")
}
