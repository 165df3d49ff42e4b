package tui

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

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

// fitLine cuts or pads one line to exactly width columns.
func fitLine(l string, width int) string {
	if w := ansi.StringWidth(l); w > width {
		return ansi.Truncate(l, width, "…")
	} else if w < width {
		return l + strings.Repeat(" ", width-w)
	}
	return l
}

// truncateLeft keeps the end of s within width columns ("…/share/engram").
func truncateLeft(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.TruncateLeft(s, ansi.StringWidth(s)-width+1, "…")
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// wrap word-wraps s to width columns and starts every line with indent.
func wrap(s string, width int, indent string) string {
	lines := strings.Split(ansi.Wrap(s, max(width, 1), ""), "\n")
	for i, l := range lines {
		lines[i] = indent + strings.TrimRight(l, " ")
	}
	return joinLines(lines)
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
