package tui

import (
	"fmt"
	"slices"
	"testing"

	"github.com/engram-console/engram/core/trace"
)

// TestTraceLiveEntriesRenderAsAFullRefreshWould: entries appended one by
// one as they come (the fast path), past the cap the pane keeps and with a
// wider column arriving, show the same lines as rendering them all afresh.
func TestTraceLiveEntriesRenderAsAFullRefreshWould(t *testing.T) {
	styles := DefaultStyles()
	p := newTracePane(nil, &styles)
	p.SetSize(goldenWidth, goldenHeight)
	total := traceKeep + 150
	for i := 1; i <= total; i++ {
		turn := fmt.Sprintf("t%d", i%7)
		if i == traceKeep+100 {
			turn = "a-much-longer-turn" // widens the turn column
		}
		p.merge(trace.Entry{Seq: uint64(i), TurnID: turn, Kind: "turn.start", Message: fmt.Sprintf("entry %d", i), At: goldenTime})
	}
	if len(p.entries) != traceKeep || p.entries[0].Seq != uint64(total-traceKeep+1) || p.entries[traceKeep-1].Seq != uint64(total) {
		t.Fatalf("kept %d entries, %d to %d: want the newest %d", len(p.entries), p.entries[0].Seq, p.entries[len(p.entries)-1].Seq, traceKeep)
	}
	live := slices.Clone(p.view.Lines())
	p.refresh()
	if !slices.Equal(live, p.view.Lines()) {
		for i := range live {
			if live[i] != p.view.Lines()[i] {
				t.Fatalf("line %d live:\n%q\nrefreshed:\n%q", i, live[i], p.view.Lines()[i])
			}
		}
		t.Fatalf("%d lines live, %d refreshed", len(live), len(p.view.Lines()))
	}
}
