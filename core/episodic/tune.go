package episodic

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Active tuning (seed 3.3-3.5): people mark decisions correct or incorrect,
// and engram infers outcomes from what the user does next (infer.go);
// tuning replays every decision with an outcome at each candidate threshold and
// keeps the one that makes the fewest errors, and reads the disagreements
// for patterns the model's prompt should learn from.

// Tuning is the linking configuration tuning maintains.
type Tuning struct {
	Threshold float64 `json:"threshold"`
	// Prompts are the versions of the model's guidance, oldest first; the
	// last one is in use.
	Prompts []PromptVersion `json:"prompts"`
	History []TuningRecord  `json:"history"`
}

func (t *Tuning) prompt() PromptVersion { return t.Prompts[len(t.Prompts)-1] }

// TuningRecord is one run of episode.tune.
type TuningRecord struct {
	TuningDate        string    `json:"tuning_date"`
	TunedAt           time.Time `json:"tuned_at"`
	PreviousThreshold float64   `json:"previous_threshold"`
	NewThreshold      float64   `json:"new_threshold"`
	Reason            string    `json:"reason"`
	Metrics           Metrics   `json:"metrics"`
	// Decisions counts the decisions with outcomes it learned from: Marked
	// by their mark (weight MarkedWeight), Inferred by their latest
	// inferred outcome (weight InferredWeight).
	Decisions     int      `json:"decisions"`
	Marked        int      `json:"marked"`
	Inferred      int      `json:"inferred"`
	PromptVersion int      `json:"prompt_version"`
	GuidanceAdded []string `json:"guidance_added"`
}

// Metrics compare the decisions at the previous and the new threshold.
// Rates: false positives over the pairs that should not have linked, false
// negatives over those that should have. Each decision counts with its
// outcome's weight (MarkedWeight, InferredWeight).
type Metrics struct {
	AccuracyBefore          float64 `json:"accuracy_before"`
	AccuracyAfter           float64 `json:"accuracy_after"`
	FalsePositiveRateBefore float64 `json:"false_positive_rate_before"`
	FalsePositiveRateAfter  float64 `json:"false_positive_rate_after"`
	FalseNegativeRateBefore float64 `json:"false_negative_rate_before"`
	FalseNegativeRateAfter  float64 `json:"false_negative_rate_after"`
	// LLMAccuracy is the model's accuracy on the marked decisions it
	// judged (null if it judged none); Disagreements counts those where the
	// two halves disagreed.
	LLMAccuracy   *float64 `json:"llm_accuracy"`
	Disagreements int      `json:"disagreements"`
}

// Threshold search range and step.
const (
	minThreshold  = 0.50
	maxThreshold  = 0.95
	thresholdStep = 0.01
	// patternMin: how many model mistakes of one kind make a pattern.
	patternMin = 2
	// MinOutcomes: how many marked decisions tuning needs before it moves
	// the threshold, or their weight in inferred ones (MinOutcomes ×
	// MarkedWeight); fewer only report what they suggest.
	MinOutcomes = 10
)

// ReasonNoOutcomes is the "reason" detail of episode.tune's error when no
// decision is marked yet: what a client tells the user to do first, without
// reading the message.
const ReasonNoOutcomes = "no_outcomes"

// outcomeTrace is the data of an episode.outcome trace entry (fields in
// alphabetical order, as the map it replaced marshalled).
type outcomeTrace struct {
	Algorithmic float64 `json:"algorithmic"`
	Decision    string  `json:"decision"`
	DecisionID  string  `json:"decision_id"`
	// Inferred and Signal: the outcome was read from the user's next
	// message (infer.go), not marked.
	Inferred bool     `json:"inferred,omitempty"`
	LLM      *float64 `json:"llm"`
	Outcome  string   `json:"outcome"`
	Signal   string   `json:"signal,omitempty"`
}

// Outcome marks a decision correct or incorrect.
func (e *Episodic) Outcome(ctx context.Context, call action.Call, id, outcome string) (*Decision, error) {
	if outcome != OutcomeCorrect && outcome != OutcomeIncorrect {
		return nil, kit.Validation("outcome", "unknown outcome %q; use correct or incorrect", outcome)
	}
	var d *Decision
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		var err error
		if d, err = loadDecision(tx.Tx, id); err != nil {
			return err
		}
		// A mark is a note on the new thread, about both threads' texts.
		if err := e.authorize(tx.Tx, call.Principal, d.ThreadID, access.Write); err != nil {
			return err
		}
		if err := e.authorize(tx.Tx, call.Principal, d.Candidate, access.Read); err != nil {
			return err
		}
		now := e.env.Clock.Now()
		d.Outcome, d.OutcomeAt = outcome, &now
		if err := tx.SetJSON(decisionKey(id), d); err != nil {
			return err
		}
		_, err = tx.TraceAbout(call, aboutDecision(id), "episode.outcome", fmt.Sprintf("linking decision %s (%s, %s and %s) marked %s", id, d.Decision, d.ThreadID, d.Candidate, outcome),
			outcomeTrace{Algorithmic: d.Algorithmic, Decision: d.Decision, DecisionID: id, LLM: d.LLM, Outcome: outcome})
		EventOutcome.Publish(tx, decisionAudience(tx.Tx, d), *d)
		return err
	})
	if err != nil {
		return nil, e.failed(ctx, call, err)
	}
	return d, nil
}

// Weights of a decision's outcome in tuning. A mark is a person's
// judgement of that very decision; an inferred outcome is read from the
// user's next message by phrase lists, and can misread it ("not what I
// meant" may be about the answer, not the link), so one mark counts as
// much as three inferences. A decision with a mark counts by its mark
// alone: a person's word overrides what engram read.
const (
	MarkedWeight   = 3
	InferredWeight = 1
)

// vote is what a decision teaches tuning: whether the threads should have
// linked, and how much that counts.
type vote struct {
	d      *Decision
	truth  bool
	weight int
}

// voteOf is d's vote: its mark, else its latest inferred outcome.
func voteOf(d *Decision) (vote, bool) {
	if d.Outcome != "" {
		return vote{d, shouldLink(d.Decision, d.Outcome), MarkedWeight}, true
	}
	if n := len(d.Inferred); n > 0 {
		return vote{d, shouldLink(d.Decision, d.Inferred[n-1].Outcome), InferredWeight}, true
	}
	return vote{}, false
}

// Tune recomputes the threshold and the model's guidance from the
// decisions' outcomes, marked and inferred.
func (e *Episodic) Tune(ctx context.Context, call action.Call) (TuningRecord, error) {
	var rec TuningRecord
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		tuning, err := loadTuning(tx.Tx)
		if err != nil {
			return err
		}
		var votes []vote
		marked, inferred, weight := 0, 0, 0
		err = tx.Scan(storage.Prefix(decisionPrefix()), func(_, v []byte) error {
			d, err := decodeDecision(v)
			if err != nil {
				return err
			}
			if vt, ok := voteOf(d); ok {
				votes = append(votes, vt)
				weight += vt.weight
				if vt.weight == MarkedWeight {
					marked++
				} else {
					inferred++
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(votes) == 0 {
			return errs.New(errs.Validation, "no linking decision has an outcome yet, marked or inferred: mark some with episode.outcome {decision_id, outcome: correct|incorrect}, or go on chatting, then tune").
				With("reason", ReasonNoOutcomes)
		}
		now := e.env.Clock.Now()
		rec = tuneThreshold(votes, tuning.Threshold)
		if weight < MinOutcomes*MarkedWeight && rec.NewThreshold != rec.PreviousThreshold {
			// A handful of outcomes is anecdote: report what they
			// suggest, move nothing.
			what := fmt.Sprintf("Only %d marked decision(s): the threshold moves once at least %d are marked", marked, MinOutcomes)
			if inferred > 0 {
				what = fmt.Sprintf("Only %d marked and %d inferred outcome(s), weighing %d: the threshold moves at a weight of %d (a mark weighs %d, an inferred outcome %d)",
					marked, inferred, weight, MinOutcomes*MarkedWeight, MarkedWeight, InferredWeight)
			}
			rec.Reason = fmt.Sprintf("%s (they suggest %.2f: %s)", what, rec.NewThreshold, strings.ToLower(rec.Reason[:1])+rec.Reason[1:])
			rec.NewThreshold = rec.PreviousThreshold
			after := confusionAt(votes, rec.PreviousThreshold)
			rec.Metrics.AccuracyAfter, rec.Metrics.FalsePositiveRateAfter, rec.Metrics.FalseNegativeRateAfter = after.accuracy(), after.fpr(), after.fnr()
		}
		rec.TuningDate, rec.TunedAt, rec.Decisions = now.Format(time.DateOnly), now, len(votes)
		rec.Marked, rec.Inferred = marked, inferred
		added, why := newGuidance(votes, tuning.prompt())
		rec.GuidanceAdded = added
		if len(added) > 0 {
			p := tuning.prompt()
			tuning.Prompts = append(tuning.Prompts, PromptVersion{Version: p.Version + 1,
				Guidance: append(slices.Clone(p.Guidance), added...), Reason: why, CreatedAt: &now})
		}
		rec.PromptVersion = tuning.prompt().Version
		tuning.Threshold = rec.NewThreshold
		tuning.History = append(tuning.History, rec)
		if err := tx.SetJSON(tuningKey(), tuning); err != nil {
			return err
		}
		// Only the operator runs a tuning; its reasons quote decisions.
		EventTuned.Publish(tx, events.Only(call.Principal), rec)
		_, err = tx.Trace(call, "episode.tune", fmt.Sprintf("linking threshold %.2f → %.2f: %s", rec.PreviousThreshold, rec.NewThreshold, rec.Reason), rec)
		return err
	})
	return rec, err
}

// shouldLink is the truth an outcome of a decision teaches.
func shouldLink(decision, outcome string) bool {
	return (decision == Link) == (outcome == OutcomeCorrect)
}

// replay is what d would have decided at threshold t.
func replay(d *Decision, t float64) bool {
	c := *d
	c.LLM, c.Agreement, c.Disagreement = nil, nil, false
	decide(&c, t)
	return c.Decision == Link
}

// confusion counts weights, not decisions.
type confusion struct{ tp, fp, tn, fn int }

func confusionAt(votes []vote, t float64) confusion {
	var c confusion
	for _, v := range votes {
		switch link := replay(v.d, t); {
		case link && v.truth:
			c.tp += v.weight
		case link:
			c.fp += v.weight
		case v.truth:
			c.fn += v.weight
		default:
			c.tn += v.weight
		}
	}
	return c
}

func (c confusion) errors() int { return c.fp + c.fn }
func (c confusion) accuracy() float64 {
	return ratio(c.tp+c.tn, c.tp+c.tn+c.fp+c.fn)
}
func (c confusion) fpr() float64 { return ratio(c.fp, c.fp+c.tn) }
func (c confusion) fnr() float64 { return ratio(c.fn, c.fn+c.tp) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round2(float64(a) / float64(b))
}

// tuneThreshold picks the threshold with the fewest (weighted) errors over
// votes; of equals, the nearest to the current one (so tuning moves only
// when it helps).
func tuneThreshold(votes []vote, current float64) TuningRecord {
	before := confusionAt(votes, current)
	best, bestC := current, before
	for i := 0; ; i++ {
		t := round2(minThreshold + float64(i)*thresholdStep)
		if t > maxThreshold {
			break
		}
		c := confusionAt(votes, t)
		if c.errors() < bestC.errors() || c.errors() == bestC.errors() && math.Abs(t-current) < math.Abs(best-current) {
			best, bestC = t, c
		}
	}
	rec := TuningRecord{PreviousThreshold: current, NewThreshold: best, Metrics: Metrics{
		AccuracyBefore: before.accuracy(), AccuracyAfter: bestC.accuracy(),
		FalsePositiveRateBefore: before.fpr(), FalsePositiveRateAfter: bestC.fpr(),
		FalseNegativeRateBefore: before.fnr(), FalseNegativeRateAfter: bestC.fnr(),
	}}
	switch {
	case best > current:
		rec.Reason = "Reduce false positive rate"
	case best < current:
		rec.Reason = "Reduce false negative rate"
	default:
		rec.Reason = "The current threshold already makes the fewest errors"
	}
	judged, right := 0, 0
	for _, v := range votes {
		if v.d.Disagreement {
			rec.Metrics.Disagreements++
		}
		if v.d.Assessment.Available {
			judged += v.weight
			if v.d.Assessment.Related == v.truth {
				right += v.weight
			}
		}
	}
	if judged > 0 {
		acc := ratio(right, judged)
		rec.Metrics.LLMAccuracy = &acc
	}
	return rec
}

// newGuidance reads the model's mistakes among the disagreements: missing a
// follow-up that the algorithm caught by its cues, or linking the same kind
// of question about something else. A pattern of either adds guidance.
func newGuidance(votes []vote, p PromptVersion) (added []string, why string) {
	missedTemporal, overLinked, disagreements := 0, 0, 0
	for _, v := range votes {
		d, truth := v.d, v.truth
		if !d.Disagreement || !d.Assessment.Available {
			continue
		}
		disagreements++
		switch {
		case truth && !d.Assessment.Related && len(d.Signals.Cues) > 0:
			missedTemporal++
		case !truth && d.Assessment.Related && (d.Signals.EntityClash || d.Signals.TopicClash):
			overLinked++
		}
	}
	var reasons []string
	if missedTemporal >= patternMin && !slices.Contains(p.Guidance, guidanceTemporal) {
		added = append(added, guidanceTemporal)
		reasons = append(reasons, fmt.Sprintf("the model missed temporal continuity in %d of %d disagreements", missedTemporal, disagreements))
	}
	if overLinked >= patternMin && !slices.Contains(p.Guidance, guidanceDistinct) {
		added = append(added, guidanceDistinct)
		reasons = append(reasons, fmt.Sprintf("the model linked a question about something else in %d of %d disagreements", overLinked, disagreements))
	}
	if added == nil {
		added = []string{}
	}
	return added, joinReasons(reasons)
}

func joinReasons(r []string) string {
	switch len(r) {
	case 0:
		return ""
	case 1:
		return r[0]
	}
	return r[0] + "; " + r[1]
}
