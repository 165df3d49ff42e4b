package tui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// scrollView is a scrollable section: a block of lines shown height at a
// time from an offset, with a muted line saying "↑ more above" in place of
// the first line shown when some are above, and "↓ more below" in place of
// the last when some are below (only when the section has room for more
// than one line). Its View is always exactly height lines.
//
// It replaces the viewports the panes scroll by hand and the indicators
// they draw over them: chat_view.go sideLines (" ↑ more above (shift+↑)"),
// mainLines (" ↓ newer below …"), goals_view.go lineageView (the diff's
// "↑ more above (pgup)"), goals' and memory's detail viewports,
// threads_view.go sectionView with threads.go insideKey/maxSectionScroll
// (" ↑ 3 lines above (enter, then ↑)"), trace.go's list and palette.go's
// result. It satisfies scrollNote's interface (chat_view.go) and has what
// scrollInfo (palette.go) reads.
//
//	p.diff = scrollView{Above: fixedNote("↑ more above (pgup)"), Below: fixedNote("↓ more below (pgdn)")}
//	p.diff.setHeight(h)
//	p.diff.setLines(lines)
//	if p.diff.handleKey(msg) { return nil }
//	lines = append(lines, p.diff.viewLines(p.styles)...)
type scrollView struct {
	// Above and Below say what is out of view; hidden is how many lines
	// the indicator stands for (those out of view and the one it covers).
	// Nil: " ↑ more above" and " ↓ more below". A note returning "" shows
	// no indicator. See fixedNote and countNote.
	Above, Below func(hidden int) string
	// Follow keeps the end in view when lines change while the end shows
	// (a log, a conversation: the newest stays in sight).
	Follow bool
	// Page is how many lines pgup/pgdn move; 0 is the height.
	Page int

	lines  []string
	height int
	offset int
}

// fixedNote is an indicator that always says text ("↑ more above (pgup)").
func fixedNote(text string) func(int) string {
	return func(int) string { return text }
}

// countNote is an indicator that says how many lines it stands for:
// countNote(" ↑ %s above") reads " ↑ 3 lines above" (plural of line).
func countNote(format string) func(int) string {
	return func(n int) string { return strings.Replace(format, "%s", plural(n, "line", "lines"), 1) }
}

// setLines replaces the content, keeping the offset (clamped), or the end
// in view when Follow and the end showed.
func (v *scrollView) setLines(lines []string) {
	follow := v.Follow && v.AtBottom()
	v.lines = lines
	if follow {
		v.end()
	}
	v.clamp()
}

// setHeight sets how many lines show at once.
func (v *scrollView) setHeight(h int) {
	follow := v.Follow && v.AtBottom()
	v.height = max(h, 0)
	if follow {
		v.end()
	}
	v.clamp()
}

// Lines is the content.
func (v *scrollView) Lines() []string { return v.lines }

// Height is how many lines show at once.
func (v *scrollView) Height() int { return v.height }

// Offset is the first line shown.
func (v *scrollView) Offset() int { return v.offset }

// TotalLineCount is how many lines the content has.
func (v *scrollView) TotalLineCount() int { return len(v.lines) }

// maxOffset is the last offset that still fills the section.
func (v *scrollView) maxOffset() int { return max(len(v.lines)-v.height, 0) }

// AtTop reports whether the first line shows.
func (v *scrollView) AtTop() bool { return v.offset <= 0 }

// AtBottom reports whether the last line shows (true when all fit).
func (v *scrollView) AtBottom() bool { return v.offset >= v.maxOffset() }

// setOffset scrolls to first line o (clamped).
func (v *scrollView) setOffset(o int) {
	v.offset = o
	v.clamp()
}

// scrollBy scrolls n lines down (up when n is negative).
func (v *scrollView) scrollBy(n int) { v.setOffset(v.offset + n) }

// up scrolls a line up; down a line down.
func (v *scrollView) up()   { v.scrollBy(-1) }
func (v *scrollView) down() { v.scrollBy(1) }

// pageUp scrolls a page up; pageDown a page down.
func (v *scrollView) pageUp()   { v.scrollBy(-v.page()) }
func (v *scrollView) pageDown() { v.scrollBy(v.page()) }

// home scrolls to the first line; end to the last.
func (v *scrollView) home() { v.setOffset(0) }
func (v *scrollView) end()  { v.setOffset(v.maxOffset()) }

func (v *scrollView) page() int {
	if v.Page > 0 {
		return v.Page
	}
	return max(v.height, 1)
}

func (v *scrollView) clamp() { v.offset = max(min(v.offset, v.maxOffset()), 0) }

// handleKey scrolls for the navigation keys (nav: ↑/k ↓/j pgup pgdn
// home/g end/G) and reports whether the key was one of them.
func (v *scrollView) handleKey(msg tea.KeyMsg) bool { return v.handleKeyWith(msg, nav) }

// handleKeyWith is handleKey with another keymap (navArrows while a text
// input has the keyboard).
func (v *scrollView) handleKeyWith(msg tea.KeyMsg, k navKeys) bool { return navigate(v, msg, k) }

// viewLines is the section: exactly Height lines (empty ones after a short
// content), the indicators muted in place of the first and last line
// shown when lines are out of view above or below.
func (v *scrollView) viewLines(st *Styles) []string {
	out := make([]string, v.height)
	copy(out, v.lines[min(v.offset, len(v.lines)):])
	if v.height < 2 {
		return out
	}
	if above := v.offset; above > 0 {
		if note := v.note(v.Above, " "+glyphUp+" more above", above+1); note != "" {
			out[0] = st.Muted.Render(note)
		}
	}
	if below := len(v.lines) - v.offset - v.height; below > 0 {
		if note := v.note(v.Below, " "+glyphDown+" more below", below+1); note != "" {
			out[v.height-1] = st.Muted.Render(note)
		}
	}
	return out
}

func (v *scrollView) note(f func(int) string, def string, hidden int) string {
	if f == nil {
		return def
	}
	return f(hidden)
}

// View is viewLines joined: exactly Height lines.
func (v *scrollView) View(st *Styles) string { return joinLines(v.viewLines(st)) }
