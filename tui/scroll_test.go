package tui

import (
	"fmt"
	"slices"
	"testing"
)

// numbered is n lines "0" … "n-1".
func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprint(i)
	}
	return lines
}

func scrollOf(n, height int) *scrollView {
	v := &scrollView{}
	v.setHeight(height)
	v.setLines(numbered(n))
	return v
}

func TestScrollViewIsExactlyItsHeight(t *testing.T) {
	t.Parallel()
	st := DefaultStyles()
	short := scrollOf(2, 5)
	if got := short.viewLines(&st); !slices.Equal(got, []string{"0", "1", "", "", ""}) {
		t.Errorf("short content: %q", got)
	}
	if got := short.View(&st); got != "0\n1\n\n\n" {
		t.Errorf("View %q", got)
	}
	long := scrollOf(50, 4)
	long.setOffset(10)
	if got := long.viewLines(&st); len(got) != 4 || got[1] != "11" || got[2] != "12" {
		t.Errorf("long content: %q", got)
	}
	if got := scrollOf(3, 0).viewLines(&st); len(got) != 0 {
		t.Errorf("height 0: %q", got)
	}
}

func TestScrollSaysWhatIsAboveAndBelow(t *testing.T) {
	t.Parallel()
	st := DefaultStyles()
	v := scrollOf(10, 4)
	if got := v.viewLines(&st); !slices.Equal(got, []string{"0", "1", "2", " ↓ more below"}) {
		t.Errorf("at the top: %q", got)
	}
	v.down()
	v.down()
	if got := v.viewLines(&st); !slices.Equal(got, []string{" ↑ more above", "3", "4", " ↓ more below"}) {
		t.Errorf("in the middle: %q", got)
	}
	v.end()
	if got := v.viewLines(&st); !slices.Equal(got, []string{" ↑ more above", "7", "8", "9"}) {
		t.Errorf("at the end: %q", got)
	}
	// The panes' own words: the Goals diff's, and the Threads views' counts
	// (the lines out of view and the one the note covers).
	v.Above, v.Below = fixedNote("↑ more above (pgup)"), countNote(" ↓ %s below (enter, then ↓)")
	v.setOffset(2)
	if got := v.viewLines(&st); got[0] != "↑ more above (pgup)" || got[3] != " ↓ 5 lines below (enter, then ↓)" {
		t.Errorf("own notes: %q", got)
	}
	v.Above = countNote(" ↑ %s above")
	v.setOffset(1)
	if got := v.viewLines(&st); got[0] != " ↑ 2 lines above" {
		t.Errorf("count: %q", got[0])
	}
	// A note that says nothing leaves the line.
	v.Above = fixedNote("")
	if got := v.viewLines(&st); got[0] != "1" {
		t.Errorf("no note: %q", got[0])
	}
	// One line has no room for a note.
	one := scrollOf(10, 1)
	one.setOffset(4)
	if got := one.viewLines(&st); !slices.Equal(got, []string{"4"}) {
		t.Errorf("one line: %q", got)
	}
	// All in view: no note.
	if got := scrollOf(3, 3).viewLines(&st); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("all in view: %q", got)
	}
}

func TestScrollStaysWithinItsLines(t *testing.T) {
	t.Parallel()
	v := scrollOf(10, 4)
	if !v.AtTop() || v.AtBottom() {
		t.Error("a new view is at the top")
	}
	v.up()
	if v.Offset() != 0 {
		t.Errorf("up at the top: %d", v.Offset())
	}
	v.pageDown()
	if v.Offset() != 4 {
		t.Errorf("a page down: %d", v.Offset())
	}
	v.pageDown()
	if v.Offset() != 6 || !v.AtBottom() {
		t.Errorf("the last page: %d", v.Offset())
	}
	v.pageUp()
	if v.Offset() != 2 {
		t.Errorf("a page up: %d", v.Offset())
	}
	v.Page = 1 // Threads pages by a line less than the height, Chat's side by 3
	v.pageDown()
	if v.Offset() != 3 {
		t.Errorf("a page of 1: %d", v.Offset())
	}
	v.scrollBy(-100)
	if v.Offset() != 0 {
		t.Errorf("scrollBy(-100): %d", v.Offset())
	}
	// Fewer lines: the offset comes back to fill the view.
	v.end()
	v.setLines(numbered(5))
	if v.Offset() != 1 || v.TotalLineCount() != 5 {
		t.Errorf("after shrinking: offset %d of %d", v.Offset(), v.TotalLineCount())
	}
	v.setHeight(10)
	if v.Offset() != 0 || !v.AtTop() || !v.AtBottom() {
		t.Errorf("all in view: offset %d", v.Offset())
	}
}

func TestScrollFollowsTheEnd(t *testing.T) {
	t.Parallel()
	v := &scrollView{Follow: true}
	v.setHeight(3)
	v.setLines(numbered(10))
	if !v.AtBottom() || v.Offset() != 7 {
		t.Fatalf("a following view starts at the end: %d", v.Offset())
	}
	v.setLines(numbered(12))
	if v.Offset() != 9 {
		t.Errorf("new lines at the end: offset %d, want 9", v.Offset())
	}
	v.up()
	v.setLines(numbered(20))
	if v.Offset() != 8 {
		t.Errorf("scrolled up, it stays: offset %d, want 8", v.Offset())
	}
	// Without Follow, new lines do not move it.
	w := scrollOf(10, 3)
	w.end()
	w.setLines(numbered(20))
	if w.Offset() != 7 {
		t.Errorf("without Follow: offset %d, want 7", w.Offset())
	}
}

func TestScrollHandlesTheNavigationKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key    string
		offset int
	}{
		{"up", 4}, {"k", 4}, {"down", 6}, {"j", 6}, {"pgup", 1}, {"pgdown", 9},
		{"home", 0}, {"g", 0}, {"end", 16}, {"G", 16},
	} {
		v := scrollOf(20, 4)
		v.setOffset(5)
		if !v.handleKey(keyMsg(t, tc.key)) || v.Offset() != tc.offset {
			t.Errorf("%s: offset %d, want %d", tc.key, v.Offset(), tc.offset)
		}
	}
	v := scrollOf(20, 4)
	if v.handleKey(keyMsg(t, "enter")) || v.handleKey(keyMsg(t, "x")) {
		t.Error("enter or x scrolled")
	}
	if v.handleKeyWith(keyMsg(t, "j"), navArrows) || v.Offset() != 0 {
		t.Error("j scrolled while typing")
	}
	// scrollNote (the Chat title's " · more below") reads it as a viewport.
	if got := scrollNote(v); got != " · more below" {
		t.Errorf("scrollNote %q", got)
	}
}
