package tui

// The console's text helpers: everything that measures, cuts, pads or wraps
// text does it in screen cells (github.com/charmbracelet/x/ansi), so that
// wide characters (CJK, emoji) and styled text (ANSI escapes) line up; and
// the glyphs the panes share.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// The glyphs the panes share, so that they mean the same thing everywhere.
const (
	glyphCursor    = "▸"   // the selected row: " ▸ "
	glyphOK        = "✓"   // done, verified, correct
	glyphFailed    = "✗"   // an error, a failure, incorrect
	glyphEllipsis  = "…"   // text cut short; loading
	glyphSep       = " · " // between the facts of a line
	glyphNone      = "—"   // no value
	glyphRule      = "─"   // a horizontal rule
	glyphVRule     = "│"   // the rule between side-by-side panels
	glyphUp        = "↑"   // more above; the key
	glyphDown      = "↓"   // more below; the key
	glyphTo        = "→"   // from … to; a link to an earlier thread
	glyphFrom      = "←"   // a link from a later thread
	glyphLinks     = "⇄"   // linked threads
	glyphAgentCall = "↔"   // a call an agent client made (through MCP)
	glyphNode      = "○"   // a version in a lineage
	glyphNodeLast  = "●"   // the latest version
	glyphBarFull   = "█"   // a meter's filled cells
	glyphBarEmpty  = "·"   // a meter's empty cells
	glyphBranch    = "├─ " // a tree's branch
	glyphLastOne   = "└─ " // a tree's last branch
	glyphChild     = "└ "  // an item under its parent
)

// --- measuring, cutting and padding (in screen cells) ---

// lineWidth is how many screen cells s takes: wide characters (CJK, most
// emoji) take two, escape sequences none.
func lineWidth(s string) int { return ansi.StringWidth(s) }

// lineCount is how many lines s has (one more than its newlines).
func lineCount(s string) int {
	n := 1
	for _, r := range s {
		if r == '\n' {
			n++
		}
	}
	return n
}

// truncateTo cuts s to n columns with an ellipsis.
func truncateTo(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, max(n, 1), "…")
}

// truncateLeft keeps the end of s within width columns ("…/share/engram").
func truncateLeft(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.TruncateLeft(s, ansi.StringWidth(s)-width+1, "…")
}

// shortenLeft keeps the end of s within n columns, without the dashes the
// cut leaves at its start: turn ids are UUIDv7, whose beginning is a
// timestamp shared by turns started together, so their end is what tells
// them apart.
func shortenLeft(s string, n int) string {
	w := ansi.StringWidth(s)
	if w <= n {
		return s
	}
	return glyphEllipsis + strings.TrimLeft(ansi.TruncateLeft(s, w-n+1, ""), "-")
}

// fitMessage fits a message (plain text, one line) in width columns the
// way it reads: it starts with what went wrong and ends with what to do
// about it, so a message too long keeps its start and its last clause,
// the middle cut at spaces ("… or write the plan yourself with
// plan.create"), never inside a flag or a bracket. When the last clause
// would leave the start too little room, the message is cut at its end,
// at a space. (Issue 14, bug 4: the status line cut off the alternative.)
func fitMessage(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	kept, ok := keepFlags(s)
	release := func(s string) string {
		if ok {
			return releaseFlags(s)
		}
		return s
	}
	words := strings.Split(kept, " ")
	tail := lastClause(words)
	if tail > 0 {
		end := strings.Join(words[tail:], " ")
		if room := width - ansi.StringWidth(end) - 3; room >= width/3 {
			if head := wordsWithin(words[:tail], room); head != "" {
				return release(head + " " + glyphEllipsis + " " + end)
			}
		}
	}
	if head := wordsWithin(words, width-1); head != "" {
		return release(head + glyphEllipsis)
	}
	return truncateTo(s, width)
}

// lastClause is the index of the word that starts the last clause of
// words (after a word ending in a comma, semicolon or colon), or 0.
func lastClause(words []string) int {
	for i := len(words) - 1; i > 1; i-- {
		if strings.TrimSpace(words[i]) != "" && strings.ContainsAny(words[i-1][max(len(words[i-1])-1, 0):], ",;:") {
			return i
		}
	}
	return 0
}

// wordsWithin joins as many of words, from the first, as fit in width
// columns, without a bracket the cut would leave open: "(and --model …"
// reads as a mistake.
func wordsWithin(words []string, width int) string {
	n, w := 0, -1
	for n < len(words) && w+1+ansi.StringWidth(words[n]) <= width {
		w += 1 + ansi.StringWidth(words[n])
		n++
	}
	if n < len(words) {
		depth, open := 0, -1
		for i := range n {
			for _, r := range words[i] {
				switch r {
				case '(', '[', '{':
					if depth == 0 {
						open = i
					}
					depth++
				case ')', ']', '}':
					depth = max(depth-1, 0)
				}
			}
		}
		if depth > 0 {
			n = open
		}
	}
	return strings.TrimRight(strings.Join(words[:n], " "), " ")
}

// shortID is the end of a UUIDv7 id: what tells ids made in one run apart.
func shortID(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// fitLine cuts or pads one line to exactly width columns (a wide
// character the cut would halve goes, and its cell is padded).
func fitLine(l string, width int) string {
	w := ansi.StringWidth(l)
	if w > width {
		l = ansi.Truncate(l, width, "…")
		w = ansi.StringWidth(l)
	}
	if w < width {
		return l + strings.Repeat(" ", width-w)
	}
	return l
}

// fit makes s exactly width columns by height lines: long lines are cut
// (never wrapped, which would break the layout), short ones padded, missing
// lines added, extra lines dropped.
func fit(s string, width, height int) string {
	if width <= 0 || height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = fitLine(l, width)
	}
	return strings.Join(lines, "\n")
}

// oneLine makes text safe for a single screen line: newlines and tabs
// become spaces, so a multi-line message cannot push the layout down, and
// other control characters are neutralised. Every piece of text that comes
// from outside (titles, utterances, messages) goes through it.
func oneLine(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
	// Any other control character (ESC above all) would let text from an
	// agent or a model drive the terminal: show it as U+FFFD instead.
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// --- lines and wrapping ---

// joinLines joins lines with newlines.
func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// wrap word-wraps s to width columns and starts every line with indent.
func wrap(s string, width int, indent string) string {
	lines := strings.Split(wordWrap(s, max(width, 1)), "\n")
	for i, l := range lines {
		lines[i] = indent + strings.TrimRight(l, " ")
	}
	return joinLines(lines)
}

// wrapText wraps plain text from outside (keeping its line breaks, with
// every other control character neutralised) to width columns, each line
// starting with indent.
func wrapText(s string, width int, indent string) []string {
	var out []string
	for _, par := range strings.Split(strings.ReplaceAll(s, "\t", "    "), "\n") {
		for _, l := range strings.Split(wordWrap(strings.TrimRight(oneLine(par), " "), max(width, 1)), "\n") {
			out = append(out, strings.TrimRight(indent+l, " "))
		}
	}
	return out
}

// wordWrap wraps s (plain or styled) to width columns at spaces, never
// inside a flag: "--llm ollama" moves to the next line whole (issue 14,
// bug 4: an error split it as "--llm" and "ollama"). A unit wider than
// width is cut where it must be.
func wordWrap(s string, width int) string {
	kept, ok := keepFlags(s)
	if !ok {
		return ansi.Wrap(s, width, "")
	}
	return releaseFlags(ansi.Wrap(kept, width, ""))
}

// The stand-ins that hold a flag together while wrapping: the wrapper
// breaks lines after any hyphen ("--llm" split as "-" and "-llm" reads as
// nothing) and at any space but a non-breaking one.
const (
	nonBreakingHyphen = "\u2011"
	nonBreakingSpace  = "\u00a0"
)

// flagWord is a word that starts with a hyphen (a flag, a negative
// number), at the start, after a space or after a style's escape code.
var flagWord = regexp.MustCompile(`(^|\s|\x1b\[[0-9;]*m)-\S*`)

// flagAndValue is a flag ("--llm", "-n") and the word after it when that
// is no flag itself: its value, which reads as nothing on a line of its own.
var flagAndValue = regexp.MustCompile(`(^|\s|\x1b\[[0-9;]*m)--?[A-Za-z]\S* [^\s-]\S*`)

// keepFlags makes every flag of s one unbreakable unit (its hyphens and
// the space before its value stand-ins), unless s holds a stand-in of its
// own: it would come back as a hyphen or a space.
func keepFlags(s string) (string, bool) {
	if !strings.Contains(s, "-") || strings.Contains(s, nonBreakingHyphen) || strings.Contains(s, nonBreakingSpace) {
		return s, false
	}
	s = flagAndValue.ReplaceAllStringFunc(s, func(w string) string {
		i := strings.LastIndex(w, " ")
		return w[:i] + nonBreakingSpace + w[i+1:]
	})
	return flagWord.ReplaceAllStringFunc(s, func(w string) string {
		return strings.ReplaceAll(w, "-", nonBreakingHyphen)
	}), true
}

// releaseFlags turns keepFlags' stand-ins back into hyphens and spaces.
var releaseFlags = strings.NewReplacer(nonBreakingHyphen, "-", nonBreakingSpace, " ").Replace

// wrapIndented wraps a line to width columns, at spaces where it can,
// continuing it two columns deeper than it starts.
func wrapIndented(l string, width int) string {
	if width < 8 || ansi.StringWidth(l) <= width {
		return l
	}
	l, kept := keepFlags(l)
	first := strings.SplitN(ansi.Wrap(l, width, ""), "\n", 2)[0]
	if !strings.HasPrefix(l, first) {
		first = ansi.Truncate(l, width, "")
	}
	rest := strings.TrimLeft(l[len(first):], " ")
	indent := strings.Repeat(" ", min(len(l)-len(strings.TrimLeft(l, " "))+2, width/2))
	rest = ansi.Wrap(rest, width-len(indent), "")
	out := strings.TrimRight(first, " ") + "\n" + indent + strings.ReplaceAll(rest, "\n", "\n"+indent)
	if kept {
		out = releaseFlags(out)
	}
	return out
}

// wrapValue wraps a long value over at most n lines.
func wrapValue(s string, width, n int) []string {
	lines := strings.Split(wordWrap(s, max(width-1, 4)), "\n")
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = truncateTo(lines[n-1]+" …", width-1)
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// styleLines renders every line in style (wrapText takes plain text only:
// it would neutralise a style's escape codes).
func styleLines(style lipgloss.Style, lines []string) []string {
	for i, l := range lines {
		lines[i] = style.Render(l)
	}
	return lines
}

// --- words and figures ---

// plural says "1 match", "3 matches".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listWords joins words as a sentence does: "a, b and c".
func listWords(words []string, conj string) string {
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		return strings.Join(words[:n-1], ", ") + " " + conj + " " + words[n-1]
	}
}

// gaugeFigures is "12/100", or "12" without a limit.
func gaugeFigures(n, limit int) string {
	if limit <= 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, limit)
}

// meter renders n of total as "[████······]" in width cells: plain
// characters, which read without colour.
func meter(s *Styles, n, total, width int) string {
	filled := 0
	if total > 0 {
		filled = n * width / total
		if n > 0 && filled == 0 {
			filled = 1
		}
	}
	filled = min(max(filled, 0), width)
	return "[" + s.Prompt.Render(strings.Repeat(glyphBarFull, filled)) + s.Rule.Render(strings.Repeat(glyphBarEmpty, width-filled)) + "]"
}

// --- times ---

// clockTime is a time as the screen shows it: the time of day, with the
// date when it is not today.
func clockTime(t, now time.Time) string {
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// minuteTime is a time to the minute, with the date when it is not today.
func minuteTime(t, now time.Time) string {
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// formatTime is a full timestamp with its zone: "2026-03-02 10:04 UTC".
func formatTime(t time.Time) string { return t.Format("2006-01-02 15:04 MST") }

// ago says how long before now t was: "just now", "5m ago", "3d ago".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// gapMinutes says a gap the way a person would.
func gapMinutes(m int) string {
	switch {
	case m < 1:
		return "moments"
	case m < 120:
		return fmt.Sprintf("%d min", m)
	case m < 48*60:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d days", m/(24*60))
}

// --- tables ---

// tableColumn is one column of a table: its title and width (two columns of
// it between cells), numbers aligned right.
type tableColumn struct {
	title string
	width int
	right bool
}

// tableCell fits text in c's width, cut with an ellipsis, right-aligned
// when c is.
func tableCell(c tableColumn, text string) string {
	room := max(c.width-2, 1)
	if lineWidth(text) > room {
		text = ansi.Truncate(text, room, "…")
	}
	if c.right {
		text = strings.Repeat(" ", max(room-lineWidth(text), 0)) + text
	}
	return fitLine(text, c.width)
}

// tableHeader is the columns' titles in their cells after the cursor's
// three columns, unstyled, the trailing blanks cut: what a table shows
// (muted) above its rows.
func tableHeader(cols []tableColumn) string {
	var b strings.Builder
	b.WriteString("   ")
	for _, c := range cols {
		b.WriteString(tableCell(c, c.title))
	}
	return strings.TrimRight(b.String(), " ")
}

// dropColumns removes the named columns, in order, until the flexible one
// gets at least minFlex of w.
func dropColumns(cols []tableColumn, flex string, w, minFlex int, order ...string) []tableColumn {
	used := func() int {
		n := 3 // the cursor
		for _, c := range cols {
			if c.title != flex {
				n += c.width
			}
		}
		return n
	}
	for _, drop := range order {
		if w-used() >= minFlex {
			break
		}
		cols = slices.DeleteFunc(cols, func(c tableColumn) bool { return c.title == drop })
	}
	for i := range cols {
		if cols[i].title == flex {
			cols[i].width = max(w-used(), 8)
		}
	}
	return cols
}
