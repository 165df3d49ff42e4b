package episodic_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
)

// TestTuningNeedsEnoughOutcomes: a few marked decisions report what they
// suggest but do not move the threshold; enough of them do.
func TestTuningNeedsEnoughOutcomes(t *testing.T) {
	r := newRigWith(t, rigOptions{opts: episodic.FixedScores(episodic.Options{}, func(message, candidate string) float64 { return 0.75 })})
	mark := func(n int) {
		for i := range n {
			r.clock.Advance(time.Hour) // each message starts a thread, linked (0.75) to the one before
			res := r.send("sms", "", fmt.Sprintf("Question %d about something else entirely", i))
			if res.Decision == nil || res.Decision.Decision != episodic.Link {
				t.Fatalf("message %d: %+v", i, res.Decision)
			}
			r.do("episode.outcome", map[string]string{"decision_id": res.Decision.ID, "outcome": "incorrect"}, nil)
		}
	}
	r.send("sms", "", "The first thread")
	mark(3)
	var rec episodic.TuningRecord
	r.do("episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.7 || !strings.Contains(rec.Reason, "Only 3 marked decision(s)") || !strings.Contains(rec.Reason, "suggest 0.76") {
		t.Errorf("after 3 marks: %+v", rec)
	}
	mark(episodic.MinOutcomes - 3)
	r.do("episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.76 || rec.Reason != "Reduce false positive rate" || rec.Metrics.AccuracyAfter != 1 {
		t.Errorf("after %d marks: %+v", episodic.MinOutcomes, rec)
	}
}
