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
	glyphCursor   = "▸"   // the selected row: " ▸ "
	glyphOK       = "✓"   // done, verified, correct
	glyphFailed   = "✗"   // an error, a failure, incorrect
	glyphEllipsis = "…"   // text cut short; loading
	glyphSep      = " · " // between the facts of a line
	glyphNone     = "—"   // no value
	glyphRule     = "─"   // a horizontal rule
	glyphVRule    = "│"   // the rule between side-by-side panels
	glyphUp       = "↑"   // more above; the key
	glyphDown     = "↓"   // more below; the key
	glyphTo       = "→"   // from … to; a link to an earlier thread
	glyphFrom     = "←"   // a link from a later thread
	glyphLinks    = "⇄"   // linked threads
	glyphNode     = "○"   // a version in a lineage
	glyphNodeLast = "●"   // the latest version
	glyphBarFull  = "█"   // a meter's filled cells
	glyphBarEmpty = "·"   // a meter's empty cells
	glyphBranch   = "├─ " // a tree's branch
	glyphLastOne  = "└─ " // a tree's last branch
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
	lines := strings.Split(ansi.Wrap(s, max(width, 1), ""), "\n")
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
		par, kept := keepFlags(strings.TrimRight(oneLine(par), " "))
		for _, l := range strings.Split(ansi.Wrap(par, max(width, 1), ""), "\n") {
			if kept {
				l = strings.ReplaceAll(l, nonBreakingHyphen, "-")
			}
			out = append(out, strings.TrimRight(indent+l, " "))
		}
	}
	return out
}

// nonBreakingHyphen stands in for the hyphens of a flag while wrapping:
// the wrapper breaks lines after any hyphen, and "--llm" split as "-" and
// "-llm" reads as nothing.
const nonBreakingHyphen = "\u2011"

// flagWord is a word that starts with a hyphen: a flag, a negative number.
var flagWord = regexp.MustCompile(`(^|\s)-\S*`)

// keepFlags makes the hyphens of flag-like words non-breaking, unless s
// has non-breaking hyphens of its own (they would come back as hyphens).
func keepFlags(s string) (string, bool) {
	if !strings.Contains(s, "-") || strings.Contains(s, nonBreakingHyphen) {
		return s, false
	}
	return flagWord.ReplaceAllStringFunc(s, func(w string) string {
		return strings.ReplaceAll(w, "-", nonBreakingHyphen)
	}), true
}

// wrapIndented wraps a line to width columns, at spaces where it can,
// continuing it two columns deeper than it starts.
func wrapIndented(l string, width int) string {
	if width < 8 || ansi.StringWidth(l) <= width {
		return l
	}
	first := strings.SplitN(ansi.Wrap(l, width, ""), "\n", 2)[0]
	if !strings.HasPrefix(l, first) {
		first = ansi.Truncate(l, width, "")
	}
	rest := strings.TrimLeft(l[len(first):], " ")
	indent := strings.Repeat(" ", min(len(l)-len(strings.TrimLeft(l, " "))+2, width/2))
	rest = ansi.Wrap(rest, width-len(indent), "")
	return strings.TrimRight(first, " ") + "\n" + indent + strings.ReplaceAll(rest, "\n", "\n"+indent)
}

// wrapValue wraps a long value over at most n lines.
func wrapValue(s string, width, n int) []string {
	lines := strings.Split(ansi.Wrap(s, max(width-1, 4), ""), "\n")
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
