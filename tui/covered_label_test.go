package tui

import (
	"testing"

	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/text"
)

// A long conversation's summary lists its covered utterances as ranges
// (issue 13, item 7); the chat pane names them the same way either way.
func TestCoveredLabelReadsListsAndRangesAlike(t *testing.T) {
	t.Parallel()
	listed := history.Summary{Covers: []int{4, 0, 1, 2, 7}}
	ranged := history.Summary{CoveredSpans: []text.Span{{From: 0, To: 2}, {From: 4, To: 4}, {From: 7, To: 7}}}
	for _, sum := range []history.Summary{listed, ranged} {
		if got := coveredLabel(sum); got != "#0-2, 4, 7" {
			t.Errorf("coveredLabel(%+v) = %q, want %q", sum, got, "#0-2, 4, 7")
		}
	}
	if n := ranged.CoveredCount(); n != 5 {
		t.Errorf("CoveredCount of %+v = %d, want 5", ranged, n)
	}
}
