package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/engram-console/engram/core/episodic"
)

// TestThreadsDecisionSaysAnOlderThreadWasFoundBySearch: the decision
// detail of a candidate older than the 50 most recent threads says a
// search found it, and by which words; a recent candidate's says nothing
// of search.
func TestThreadsDecisionSaysAnOlderThreadWasFoundBySearch(t *testing.T) {
	st := DefaultStyles()
	p := newThreadsPane(nil, &st)
	p.list.sel = "new"
	older := &episodic.Decision{ID: "d1", Candidate: "lisbon", Decision: episodic.Link, DecidedBy: "algorithmic",
		Found: &episodic.Found{By: episodic.FoundBySearch, Rank: 1, Terms: []episodic.FoundTerm{{Term: "lisbon"}, {Term: "apart", SynonymOf: "flat"}}}}
	recent := &episodic.Decision{ID: "d2", Candidate: "chores", Decision: episodic.DontLink, DecidedBy: "algorithmic"}
	p.detail.cache.put("new", &episodic.ThreadView{Thread: &episodic.Thread{ID: "new"}, Decisions: []*episodic.Decision{older, recent}}, "")
	detail := ansi.Strip(strings.Join(p.decisionDetail(120), "\n"))
	if !strings.Contains(detail, "older, found by search for lisbon, apart for flat") {
		t.Errorf("the older candidate's detail does not say it was found by search:\n%s", detail)
	}
	p.lower.decID = "d2"
	if detail := ansi.Strip(strings.Join(p.decisionDetail(120), "\n")); strings.Contains(detail, "search") {
		t.Errorf("a recent candidate's detail mentions search:\n%s", detail)
	}
}
