package history_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/history"
)

// TestSummaryListsCoveredIndexesAsRangesPastALimit (issue 13 item 7):
// history.stats and turn.start returned every covered index, 142 KB of
// them after 25,000 evictions. Past history.MaxCoversListed the summary
// gives them as ranges instead, so what they return stays small however
// long the conversation gets.
func TestSummaryListsCoveredIndexesAsRangesPastALimit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	if err := history.SeedEvictions(r.h, "long", 25_000); err != nil {
		t.Fatal(err)
	}
	r.write("long", "user", "one more, evicting the one before")
	r.write("long", "user", "and another")

	raw := r.do("history.stats", `{"conversation": "long"}`, nil)
	if len(raw) > 4096 {
		t.Errorf("history.stats after 25,000 evictions is %d bytes: %s", len(raw), short(string(raw)))
	}
	var st history.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Summary.Covers != nil || len(st.Summary.CoveredSpans) != 1 || st.Summary.CoveredSpans[0].From != 0 || st.Summary.CoveredSpans[0].To != 25_000 {
		t.Errorf("summary covers %v, spans %v; want null and [[0,25000]]", st.Summary.Covers, st.Summary.CoveredSpans)
	}
	if n := st.Summary.CoveredCount(); n != 25_001 {
		t.Errorf("CoveredCount %d, want 25001", n)
	}
	var turn json.RawMessage
	r.do("turn.start", `{"input": "hello", "conversation": "long"}`, &turn)
	if len(turn) > 8192 || !strings.Contains(string(turn), `"covered_spans":[[0,25000]]`) {
		t.Errorf("turn.start after 25,000 evictions is %d bytes: %s", len(turn), short(string(turn)))
	}
}

// TestSummaryListsFewCoveredIndexes: up to the limit, covers lists them
// as before and there is no covered_spans.
func TestSummaryListsFewCoveredIndexes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 1})
	for _, s := range []string{"one", "two", "three"} {
		r.write("", "user", s)
	}
	raw := string(r.do("history.summary", nil, nil))
	if !strings.Contains(raw, `"covers":[0,1]`) || strings.Contains(raw, "covered_spans") {
		t.Errorf("summary: %s", raw)
	}
}
