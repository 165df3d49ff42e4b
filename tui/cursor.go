package tui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// listCursor is the selection of a list the user moves through: which row
// is selected, which row is the first one shown, and how many rows show.
// Every method keeps it valid: the cursor within [0, Len) (0 when the list
// is empty) and the cursor in view (the offset moves as little as it
// must, and never leaves empty rows at the end when the list could fill
// them). It replaces the cursor/offset fields, the clamps and the
// scrolled() functions each pane kept: goals.go listKey and listResult
// with goals_view.go scrolled; memory.go listKey and listResult with
// memory_view.go itemRows' offset; threads.go handleKey, selectThread and
// listResult with threads_view.go scrolled; plans.go listKey and
// listResult with plans_view.go scrolled; and the windows computed from a
// selection (goals_view.go timelineLines, threads_view.go decisionLines,
// chat_channel.go pickerLines, chat_switcher.go).
//
// The zero value is an empty list of height 1. Typical use:
//
//	p.list.setLen(len(items))         // after a load
//	p.list.keep(func(i int) bool { return items[i].ID == was })
//	p.list.setHeight(p.listRows())    // whenever the layout may change
//	if p.list.handleKey(msg) { ... }  // ↑/↓ pgup/pgdn home/end
//	start, end := p.list.visible()    // rows to draw; p.list.Index() is the selected one
type listCursor struct {
	cursor int // the selected row
	offset int // the first row shown
	height int // how many rows show at once (less than 1 counts as 1)
	n      int // how many rows the list has
}

// Index is the selected row (0 when the list is empty: check Len).
func (c *listCursor) Index() int { return c.cursor }

// Offset is the first row shown.
func (c *listCursor) Offset() int { return c.offset }

// Len is how many rows the list has.
func (c *listCursor) Len() int { return c.n }

// Height is how many rows show at once (at least 1).
func (c *listCursor) Height() int { return max(c.height, 1) }

// visible is the range of rows shown, [start, end): what a view draws.
func (c *listCursor) visible() (start, end int) {
	return c.offset, min(c.offset+c.Height(), c.n)
}

// setHeight sets how many rows show at once, keeping the cursor in view.
// Call it whenever the layout may have changed (a resize, a prompt
// opening) before drawing or handling a key: pages are this high.
func (c *listCursor) setHeight(h int) {
	c.height = h
	c.keepInView()
}

// setLen sets how many rows the list has (after a load), moving the
// cursor to the last row if the list shrank under it.
func (c *listCursor) setLen(n int) {
	c.n = max(n, 0)
	c.clamp()
}

// set selects row i (clamped to the list), keeping it in view.
func (c *listCursor) set(i int) {
	c.cursor = i
	c.clamp()
}

// reset selects the first row and scrolls to the top (a new query).
func (c *listCursor) reset() {
	c.cursor, c.offset = 0, 0
	c.clamp()
}

// up moves the cursor up one row; down moves it down one.
func (c *listCursor) up()   { c.set(c.cursor - 1) }
func (c *listCursor) down() { c.set(c.cursor + 1) }

// pageUp moves the cursor up a page (Height rows); pageDown down a page.
func (c *listCursor) pageUp()   { c.set(c.cursor - c.Height()) }
func (c *listCursor) pageDown() { c.set(c.cursor + c.Height()) }

// home selects the first row; end selects the last.
func (c *listCursor) home() { c.set(0) }
func (c *listCursor) end()  { c.set(c.n - 1) }

// keep selects the first row for which found is true (the same item after
// a reload, by id) and reports whether there was one; without one the
// cursor stays where it is (clamped). Call setLen first.
//
//	was := items[c.Index()].ID // before the reload
//	c.setLen(len(fresh))
//	c.keep(func(i int) bool { return fresh[i].ID == was })
func (c *listCursor) keep(found func(i int) bool) bool {
	for i := range c.n {
		if found(i) {
			c.set(i)
			return true
		}
	}
	return false
}

// handleKey moves the cursor for the navigation keys (nav: ↑/k ↓/j pgup
// pgdn home/g end/G) and reports whether the key was one of them, moved or
// not (at the top, ↑ is still consumed). Compare Index before and after to
// know whether the selection changed.
func (c *listCursor) handleKey(msg tea.KeyMsg) bool { return c.handleKeyWith(msg, nav) }

// handleKeyWith is handleKey with another keymap: navArrows when a text
// input has the keyboard.
func (c *listCursor) handleKeyWith(msg tea.KeyMsg, k navKeys) bool { return navigate(c, msg, k) }

// clamp puts the cursor back in the list and in view.
func (c *listCursor) clamp() {
	c.cursor = max(min(c.cursor, c.n-1), 0)
	c.keepInView()
}

// keepInView moves the offset as little as keeps the cursor in view, and
// no further down than shows a full last page.
func (c *listCursor) keepInView() {
	rows := c.Height()
	if c.cursor < c.offset {
		c.offset = c.cursor
	}
	if c.cursor >= c.offset+rows {
		c.offset = c.cursor - rows + 1
	}
	c.offset = max(min(c.offset, c.n-rows), 0)
}
