package tui

import "testing"

// cursorAt is a cursor over n rows, height rows high, on row i.
func cursorAt(n, height, i int) *listCursor {
	c := &listCursor{}
	c.setLen(n)
	c.setHeight(height)
	c.set(i)
	return c
}

func checkCursor(t *testing.T, c *listCursor, index, offset int) {
	t.Helper()
	if c.Index() != index || c.Offset() != offset {
		t.Errorf("cursor at %d, offset %d; want %d, %d", c.Index(), c.Offset(), index, offset)
	}
}

func TestCursorKeepsSelectionInView(t *testing.T) {
	t.Parallel()
	c := cursorAt(10, 3, 0)
	for range 5 {
		c.down()
	}
	checkCursor(t, c, 5, 3) // the cursor on the last row shown
	c.up()
	c.up()
	checkCursor(t, c, 3, 3) // within view: the list does not move
	c.up()
	checkCursor(t, c, 2, 2) // above it: the list moves by one
	if start, end := c.visible(); start != 2 || end != 5 {
		t.Errorf("visible %d-%d, want 2-5", start, end)
	}
	// A taller view never leaves empty rows below while rows are above.
	c.end()
	checkCursor(t, c, 9, 7)
	c.setHeight(5)
	checkCursor(t, c, 9, 5)
	c.setHeight(20)
	checkCursor(t, c, 9, 0)
	if start, end := c.visible(); start != 0 || end != 10 {
		t.Errorf("visible %d-%d, want 0-10", start, end)
	}
	// A shorter one keeps the cursor in view.
	c.setHeight(2)
	checkCursor(t, c, 9, 8)
}

func TestCursorStopsAtTheEnds(t *testing.T) {
	t.Parallel()
	c := cursorAt(4, 2, 0)
	c.up()
	checkCursor(t, c, 0, 0)
	c.end()
	c.down()
	checkCursor(t, c, 3, 2)
	c.set(-5)
	checkCursor(t, c, 0, 0)
	c.set(99)
	checkCursor(t, c, 3, 2)
}

func TestCursorPagesByItsHeight(t *testing.T) {
	t.Parallel()
	c := cursorAt(20, 4, 0)
	c.pageDown()
	checkCursor(t, c, 4, 1)
	c.pageDown()
	checkCursor(t, c, 8, 5)
	c.pageUp()
	checkCursor(t, c, 4, 4)
	c.pageUp()
	c.pageUp()
	checkCursor(t, c, 0, 0)
	c.set(18)
	c.pageDown()
	checkCursor(t, c, 19, 16)
	c.home()
	checkCursor(t, c, 0, 0)
	// Height 0 (not laid out yet) pages by one row.
	z := cursorAt(5, 0, 0)
	z.pageDown()
	checkCursor(t, z, 1, 1)
}

func TestCursorClampsWhenTheListShrinks(t *testing.T) {
	t.Parallel()
	c := cursorAt(10, 3, 8)
	checkCursor(t, c, 8, 6)
	c.setLen(5)
	checkCursor(t, c, 4, 2)
	c.setLen(0)
	checkCursor(t, c, 0, 0)
	if c.Len() != 0 {
		t.Errorf("Len %d", c.Len())
	}
	if start, end := c.visible(); start != 0 || end != 0 {
		t.Errorf("an empty list shows %d-%d", start, end)
	}
	// Moving in an empty list stays put.
	c.down()
	c.end()
	c.pageDown()
	checkCursor(t, c, 0, 0)
	// A list that grows keeps the cursor where it was.
	c.setLen(10)
	c.set(2)
	c.setLen(30)
	checkCursor(t, c, 2, 0)
}

func TestCursorKeepsTheSameItemAfterAReload(t *testing.T) {
	t.Parallel()
	before := []string{"a", "b", "c", "d", "e"}
	c := cursorAt(len(before), 2, 3) // on "d"
	was := before[c.Index()]
	after := []string{"x", "d", "a"} // reordered and shorter
	c.setLen(len(after))
	if !c.keep(func(i int) bool { return after[i] == was }) {
		t.Fatal("keep did not find d")
	}
	checkCursor(t, c, 1, 1)
	// Gone: the cursor stays where it is (clamped), and keep says so.
	gone := []string{"x", "y"}
	c.setLen(len(gone))
	if c.keep(func(i int) bool { return gone[i] == was }) {
		t.Error("keep found an item that is gone")
	}
	checkCursor(t, c, 1, 0)
	c.reset()
	checkCursor(t, c, 0, 0)
}

func TestCursorHandlesTheNavigationKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key   string
		index int
	}{
		{"up", 4}, {"k", 4}, {"down", 6}, {"j", 6},
		{"pgup", 2}, {"pgdown", 8}, {"home", 0}, {"g", 0}, {"end", 11}, {"G", 11},
	} {
		c := cursorAt(12, 3, 5)
		if !c.handleKey(keyMsg(t, tc.key)) {
			t.Errorf("%s not consumed", tc.key)
		}
		if c.Index() != tc.index {
			t.Errorf("%s: cursor at %d, want %d", tc.key, c.Index(), tc.index)
		}
	}
	c := cursorAt(12, 3, 5)
	for _, k := range []string{"x", "enter", "esc", "left", "y"} {
		if c.handleKey(keyMsg(t, k)) {
			t.Errorf("%s consumed", k)
		}
	}
	checkCursor(t, c, 5, 3)
	// At the top ↑ is still the cursor's key, though it does not move.
	c.home()
	if !c.handleKey(keyMsg(t, "up")) {
		t.Error("up at the top not consumed")
	}
	// While typing, letters are not the cursor's.
	if c.handleKeyWith(keyMsg(t, "j"), navArrows) || c.Index() != 0 {
		t.Error("j moved the cursor while typing")
	}
	if !c.handleKeyWith(keyMsg(t, "down"), navArrows) || c.Index() != 1 {
		t.Error("down did not move the cursor while typing")
	}
}
