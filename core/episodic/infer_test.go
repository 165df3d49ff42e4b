package episodic_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
)

// inferredOf is the decision's inferred outcomes as "outcome/signal".
func inferredOf(d *episodic.Decision) []string {
	var out []string
	for _, in := range d.Inferred {
		out = append(out, in.Outcome+"/"+in.Signal)
	}
	return out
}

// decisionOf is the decision of thread about candidate, failing if none.
func (r *rig) decisionOf(thread, candidate string) *episodic.Decision {
	r.T.Helper()
	for _, d := range r.decisions(thread) {
		if d.ThreadID == thread && d.Candidate == candidate {
			return d
		}
	}
	r.T.Fatalf("no decision of %s about %s", thread, candidate)
	return nil
}

// TestEngineInfersSwitchesAwayFromALinkAsIncorrect: a user who leaves a
// linked thread at once (for another thread, or for another subject) shows
// the link was wrong; a back-reference after the assistant's answer
// confirms it; a message long after says nothing.
func TestEngineInfersSwitchesAwayFromALinkAsIncorrect(t *testing.T) {
	r := newRigWith(t, rigOptions{opts: episodic.FixedScores(episodic.Options{MaxCandidates: 1}, func(string, string) float64 { return 0.75 })})
	r.clock.Set(t0)
	a := r.send("web", "", "Planning the trip to Lisbon").ThreadID

	// B links to A; a minute later the user starts another thread: B's
	// link was not what they wanted.
	r.clock.Advance(time.Minute)
	b := r.send("web", "", "What about hotels there?")
	if b.Decision == nil || b.Decision.Decision != episodic.Link {
		t.Fatalf("B: %+v", b.Decision)
	}
	r.clock.Advance(time.Minute)
	c := r.send("web", "", "Which museums open on Mondays?").ThreadID
	if got := inferredOf(r.decisionOf(b.ThreadID, a)); fmt.Sprint(got) != "[incorrect/thread_switch]" {
		t.Errorf("B after a switch to another thread: %v", got)
	}
	if d := r.decisionOf(b.ThreadID, a); d.Inferred[0].Evidence != c || d.Inferred[0].ThreadID != c || d.Outcome != "" {
		t.Errorf("the switch names the thread the user went to (%s): %+v", c, d.Inferred[0])
	}

	// C links to B; the user changes the subject in it at once.
	r.clock.Advance(time.Minute)
	r.send("web", c, "On another note: what's for dinner?")
	if got := inferredOf(r.decisionOf(c, b.ThreadID)); fmt.Sprint(got) != "[incorrect/topic_switch]" {
		t.Errorf("C after a change of subject: %v", got)
	}

	// D links to C; the assistant answers (which says nothing of the
	// user), then the user refers back: the link was right.
	r.clock.Advance(time.Minute)
	d := r.send("web", "", "And the restaurant near it?").ThreadID
	r.answer("web", d, "Here are a few places nearby.")
	r.clock.Advance(time.Minute)
	r.send("web", d, "Yes, the one we talked about before, as I said.")
	got := r.decisionOf(d, c)
	if fmt.Sprint(inferredOf(got)) != "[correct/back_reference]" || got.Inferred[0].Turn != 3 {
		t.Errorf("D after a back-reference: %+v", got.Inferred)
	}

	// E links to D; the user comes back only after InferWindow: nothing.
	r.clock.Advance(time.Minute)
	e := r.send("web", "", "Oh, and the opening hours?").ThreadID
	r.clock.Advance(episodic.InferWindow + time.Minute)
	r.send("web", e, "No, that's not what I meant.")
	if got := inferredOf(r.decisionOf(e, d)); got != nil {
		t.Errorf("E read from a message after the window: %v", got)
	}
}

// TestTuningWeighsMarksAboveInferredOutcomes: a mark counts as much as
// three inferred outcomes, and a mark on a decision overrides what was
// inferred about it.
func TestTuningWeighsMarksAboveInferredOutcomes(t *testing.T) {
	s := newDecisionSeries(t, nil, t0, 61*time.Minute)
	r := s.r
	var wrongLinks []*episodic.Decision
	// followed sends a decision, then the user's next message 5 minutes on.
	followed := func(n int, score float64, followUp string) {
		for range n {
			d := s.decide(fmt.Sprintf("Message %d of the series.", len(r.decisions(""))), score)
			r.clock.Set(s.next.Add(5 * time.Minute))
			r.send("sms", "", followUp)
			if d.Decision == episodic.Link {
				wrongLinks = append(wrongLinks, d)
			}
		}
	}
	// 4 links at 0.71 the user corrects (inferred incorrect: weight 4);
	// 2 links at 0.71 a person marks correct (weight 6); 20 non-links at
	// 0.30 the user goes on from (inferred correct: weight 20).
	followed(4, 0.71, "No, that's not what I meant.")
	for range 2 {
		d := s.decide(fmt.Sprintf("Message %d of the series.", len(r.decisions(""))), 0.71)
		r.Do(agent, "episode.outcome", map[string]string{"decision_id": d.ID, "outcome": episodic.OutcomeCorrect}, nil)
	}
	followed(20, 0.30, "Thanks, that helps.")

	var rec episodic.TuningRecord
	r.Do(agent, "episode.tune", "{}", &rec)
	// At 0.70 the corrected links are 4 false positives; at 0.72 the
	// marked ones would be false negatives weighing 6. Were a mark worth
	// one inference, 0.72 would win.
	if rec.NewThreshold != 0.7 || rec.Marked != 2 || rec.Inferred != 24 || rec.Decisions != 26 || rec.Metrics.AccuracyBefore != 0.87 {
		t.Errorf("two marks against four inferences: %+v", rec)
	}

	// Three more corrections outweigh the two marks.
	followed(3, 0.71, "That's not what I was asking about.")
	r.Do(agent, "episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.72 || rec.Reason != "Reduce false positive rate" || rec.Marked != 2 || rec.Inferred != 27 {
		t.Errorf("two marks against seven inferences: %+v", rec)
	}

	// A person marks one corrected link correct after all: the mark
	// replaces the inference and weighs 3, so 0.72 now loses 9 to 6, and
	// tuning moves to 0.71, the nearest threshold that links them again.
	r.Do(agent, "episode.outcome", map[string]string{"decision_id": wrongLinks[0].ID, "outcome": episodic.OutcomeCorrect}, nil)
	r.Do(agent, "episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.71 || rec.Reason != "Reduce false negative rate" || rec.Marked != 3 || rec.Inferred != 26 {
		t.Errorf("a mark over an inference: %+v", rec)
	}
}

// TestTuningWithFewInferredOutcomesOnlySuggests: inferred outcomes weighing
// less than MinOutcomes marks report what they suggest, and say how much
// more they need.
func TestTuningWithFewInferredOutcomesOnlySuggests(t *testing.T) {
	s := newDecisionSeries(t, nil, t0, 61*time.Minute)
	r := s.r
	for i := range 5 {
		s.decide(fmt.Sprintf("Message %d of the series.", i), 0.71)
		r.clock.Set(s.next.Add(5 * time.Minute))
		r.send("sms", "", "No, that's not what I meant.")
	}
	var rec episodic.TuningRecord
	r.Do(agent, "episode.tune", "{}", &rec)
	want := "Only 0 marked and 5 inferred outcome(s), weighing 5: the threshold moves at a weight of 30 (a mark weighs 3, an inferred outcome 1) (they suggest 0.72: reduce false positive rate)"
	if rec.NewThreshold != 0.7 || rec.Reason != want {
		t.Errorf("reason %q, threshold %.2f; want %q at 0.70", rec.Reason, rec.NewThreshold, want)
	}
}

// TestMissingDecisionDoesNotFailTheNextMessage: a decision gone from the
// store leaves nothing to infer, and the message it waited for goes
// through.
func TestMissingDecisionDoesNotFailTheNextMessage(t *testing.T) {
	r := newRigWith(t, rigOptions{opts: episodic.FixedScores(episodic.Options{}, func(string, string) float64 { return 0.75 })})
	r.clock.Set(t0)
	r.send("web", "", "Planning the trip to Lisbon")
	r.clock.Advance(time.Minute)
	b := r.send("web", "", "What about hotels there?")
	episodic.DropDecision(t, r.e.Env(), b.Decision.ID)
	r.clock.Advance(time.Minute)
	if res := r.send("web", b.ThreadID, "No, that's not what I meant."); res.TurnCount != 2 {
		t.Errorf("the follow-up: %+v", res)
	}
}
