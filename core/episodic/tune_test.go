package episodic_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
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
			r.Do(agent, "episode.outcome", map[string]string{"decision_id": res.Decision.ID, "outcome": "incorrect"}, nil)
		}
	}
	r.send("sms", "", "The first thread")
	// Nothing marked: tuning fails, saying so in a detail a client can
	// test without reading the message.
	if e := r.Fail(agent, "episode.tune", "{}", errs.Validation, "no linking decision has an outcome"); e.Details["reason"] != episodic.ReasonNoOutcomes {
		t.Errorf("details %v, want reason %q", e.Details, episodic.ReasonNoOutcomes)
	}
	mark(3)
	var rec episodic.TuningRecord
	r.Do(agent, "episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.7 || !strings.Contains(rec.Reason, "Only 3 marked decision(s)") || !strings.Contains(rec.Reason, "suggest 0.76") {
		t.Errorf("after 3 marks: %+v", rec)
	}
	mark(episodic.MinOutcomes - 3)
	r.Do(agent, "episode.tune", "{}", &rec)
	if rec.NewThreshold != 0.76 || rec.Reason != "Reduce false positive rate" || rec.Metrics.AccuracyAfter != 1 {
		t.Errorf("after %d marks: %+v", episodic.MinOutcomes, rec)
	}
}

// decisionSeries makes one linking decision per message: each message starts a
// new thread (on sms, gap after the previous one) scored against the
// previous thread only (MaxCandidates 1), its score scores[i]. It returns
// the decisions in order.
type decisionSeries struct {
	r      *rig
	model  *llmtest.Scripted
	scores map[string]float64
	next   time.Time
	gap    time.Duration
}

func newDecisionSeries(t *testing.T, model *llmtest.Scripted, start time.Time, gap time.Duration) *decisionSeries {
	s := &decisionSeries{model: model, scores: map[string]float64{}, next: start, gap: gap}
	var mu sync.Mutex
	opts := episodic.FixedScores(episodic.Options{MaxCandidates: 1}, func(message, cand string) float64 {
		mu.Lock()
		defer mu.Unlock()
		score, ok := s.scores[message]
		if !ok {
			t.Errorf("no score for %q", message)
		}
		return score
	})
	o := rigOptions{opts: opts}
	if model != nil {
		o.llm = model
	}
	s.r = newRigWith(t, o)
	s.r.clock.Set(start)
	s.r.send("sms", "", "What's the weather in New York?") // the first thread: nothing to link to
	return s
}

// decide sends message (scored score) as a new thread's first message.
func (s *decisionSeries) decide(message string, score float64) *episodic.Decision {
	s.r.T.Helper()
	s.scores[message] = score
	s.next = s.next.Add(s.gap)
	s.r.clock.Set(s.next)
	res := s.r.send("sms", "", message)
	if !res.NewThread || len(res.Decisions) != 1 {
		s.r.T.Fatalf("%q should start a thread with one decision: %+v", message, res)
	}
	return res.Decision
}

// TestEngineInfersOutcomesFromWhatTheUserSaysNext: the engine reads each
// decision's outcome from the user's next message and records it as an
// inferred outcome, in that message's turn; a person's mark sits beside
// it (seed 3.3).
func TestEngineInfersOutcomesFromWhatTheUserSaysNext(t *testing.T) {
	// How the user goes on after each decision, by the seed's four cases,
	// and the outcome the engine should read from it.
	type behaviour struct {
		link     bool   // the decision expected
		followUp string // what the user says next, in the new thread
		outcome  string
		signal   string
	}
	behaviours := []behaviour{
		{true, "Great, and should I pack an umbrella?", episodic.OutcomeCorrect, episodic.SignalContinued},    // LINK, the conversation continues naturally
		{true, "No, that's not what I meant.", episodic.OutcomeIncorrect, episodic.SignalCorrection},          // LINK, wrongly
		{false, "Hmm, didn't we talk about this?", episodic.OutcomeIncorrect, episodic.SignalBackReference},   // DON'T_LINK, wrongly
		{false, "Thanks. Also, what's a good pasta dish?", episodic.OutcomeCorrect, episodic.SignalContinued}, // DON'T_LINK, a fresh conversation
	}
	related := map[string]bool{}
	var mu sync.Mutex
	model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		mu.Lock()
		rel := related[newMessageOf(req)]
		mu.Unlock()
		return llmtest.Text(judgeAnswer(rel, 0.9, "scripted"))
	}}
	s := newDecisionSeries(t, model, t0, time.Hour)
	r := s.r

	type marked struct {
		d       *episodic.Decision
		outcome string
		signal  string
		turn    string
		at      time.Time
	}
	var all []marked
	for i := range 100 {
		b := behaviours[i%len(behaviours)]
		score, msg := 0.3, fmt.Sprintf("Tell me about subject %d.", i)
		if b.link {
			score, msg = 0.85, fmt.Sprintf("Oh, and what about option %d?", i)
		}
		mu.Lock()
		related[msg] = b.link
		mu.Unlock()
		d := s.decide(msg, score)
		if (d.Decision == episodic.Link) != b.link || d.LLM == nil || d.Agreement == nil || !*d.Agreement || len(d.Inferred) != 0 {
			t.Fatalf("decision %d: %+v", i, d)
		}
		// Five minutes later the user goes on, in a turn; the engine
		// records the outcome it shows in that turn.
		turn := fmt.Sprintf("turn-%03d", i)
		at := s.next.Add(5 * time.Minute)
		r.clock.Set(at)
		var res episodic.MessageResult
		r.Do(enginetest.Who{Turn: turn}, "thread.message", map[string]string{"channel": "sms", "text": b.followUp}, &res)
		if res.ThreadID != d.ThreadID {
			t.Fatalf("the follow-up went to %s, not the new thread %s", res.ThreadID, d.ThreadID)
		}
		all = append(all, marked{d, b.outcome, b.signal, turn, at})
	}

	// Stored: every decision with its scores, decision, agreement and
	// inferred outcome; none marked.
	stored := map[string]*episodic.Decision{}
	for _, d := range r.decisions("") {
		stored[d.ID] = d
	}
	if len(stored) != 100 {
		t.Fatalf("%d decisions stored, want 100", len(stored))
	}
	counts := map[string]int{}
	for _, m := range all {
		d := stored[m.d.ID]
		want := []episodic.InferredOutcome{{Outcome: m.outcome, Signal: m.signal, ThreadID: m.d.ThreadID, Turn: 2, At: m.at}}
		if d != nil && len(d.Inferred) == 1 {
			want[0].Evidence = d.Inferred[0].Evidence
		}
		if d == nil || d.Outcome != "" || !reflect.DeepEqual(d.Inferred, want) || d.Decision != m.d.Decision || d.Algorithmic != m.d.Algorithmic ||
			d.LLM == nil || *d.LLM != *m.d.LLM || d.Agreement == nil {
			t.Errorf("stored %+v; want inferred %+v", d, want)
			continue
		}
		if m.signal != episodic.SignalContinued && d.Inferred[0].Evidence == "" {
			t.Errorf("decision %s: %s without the phrase it read", d.ID, m.signal)
		}
		counts[d.Decision+" "+d.Inferred[0].Outcome]++
		// In the turn's trace: the follow-up and the outcome it showed.
		entries := r.traceOf(m.turn, "")
		var kinds []string
		for _, e := range entries {
			kinds = append(kinds, e.Kind)
		}
		if !slices.Equal(kinds, []string{"thread.message", "episode.outcome"}) {
			t.Errorf("turn %s trace %q", m.turn, kinds)
			continue
		}
		var data struct {
			DecisionID string `json:"decision_id"`
			Outcome    string `json:"outcome"`
			Decision   string `json:"decision"`
			Inferred   bool   `json:"inferred"`
			Signal     string `json:"signal"`
		}
		if err := json.Unmarshal(entries[1].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.DecisionID != m.d.ID || data.Outcome != m.outcome || data.Decision != m.d.Decision || !data.Inferred || data.Signal != m.signal {
			t.Errorf("turn %s traced %+v", m.turn, data)
		}
	}
	want := map[string]int{"LINK correct": 25, "LINK incorrect": 25, "DON'T_LINK incorrect": 25, "DON'T_LINK correct": 25}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("inferred outcomes %v, want %v", counts, want)
	}
	if n := len(r.traceOf("", "episode.outcome")); n != 100 {
		t.Errorf("%d episode.outcome trace entries, want 100", n)
	}
	// A later message says nothing more: each decision is read once.
	r.send("sms", "", "And one more thing about that.")
	if d := r.decisions(all[len(all)-1].d.ThreadID); len(d) != 1 || len(d[0].Inferred) != 1 {
		t.Errorf("a second message inferred again: %+v", d)
	}

	// A person marks them too: the mark sits beside what was inferred.
	for _, m := range all {
		var out struct {
			Decision episodic.Decision `json:"decision"`
		}
		r.Do(agent, "episode.outcome", map[string]string{"decision_id": m.d.ID, "outcome": m.outcome}, &out)
		if out.Decision.Outcome != m.outcome || out.Decision.OutcomeAt == nil || len(out.Decision.Inferred) != 1 {
			t.Fatalf("marked %+v", out.Decision)
		}
	}
	if n := len(r.traceOf("", "episode.outcome")); n != 200 {
		t.Errorf("%d episode.outcome trace entries after marking, want 200", n)
	}

	// A bad outcome or an unknown decision fails, naming the field, and
	// changes nothing.
	before, _ := json.Marshal(r.decisionsRaw(""))
	for _, c := range []struct {
		args  map[string]string
		kind  errs.Kind
		field string
	}{
		{map[string]string{"decision_id": all[0].d.ID, "outcome": "maybe"}, errs.Validation, "outcome"},
		{map[string]string{"decision_id": all[0].d.ID, "outcome": ""}, errs.Validation, "outcome"},
		{map[string]string{"decision_id": "no-such-decision", "outcome": "correct"}, errs.NotFound, "decision_id"},
	} {
		_, err := r.Try(agent, "episode.outcome", c.args)
		if errs.KindOf(err) != c.kind || errField(err) != c.field {
			t.Errorf("episode.outcome %v: %v (%s, field %q); want %s naming %s", c.args, err, errs.KindOf(err), errField(err), c.kind, c.field)
		}
	}
	after, _ := json.Marshal(r.decisionsRaw(""))
	if string(before) != string(after) {
		t.Error("a failed episode.outcome changed the decisions")
	}
	if n := len(r.traceOf("", "episode.outcome")); n != 200 {
		t.Errorf("%d episode.outcome trace entries after the failures, want 200", n)
	}
}

// TestTuningMovesThresholdToFewestErrors: episode.tune moves the linking
// threshold to the one with the fewest errors over the marked decisions
// (seed 3.4).
func TestTuningMovesThresholdToFewestErrors(t *testing.T) {
	// 100 marked decisions, made at 0.7 without a model (so the score alone
	// decides, and tuning replays the score alone):
	//
	//   - 2 links at 0.71 that were wrong: false positives that 0.72 avoids;
	//   - 4 links at 0.96-0.99 that were wrong: false positives at any
	//     threshold tuning may pick (it searches 0.50-0.95);
	//   - 69 non-links at 0.20-0.69 that were right (true negatives; those
	//     at 0.50 and above would become false positives below 0.70);
	//   - 2 non-links at 0.40 and 0.45 that were wrong: false negatives at
	//     any threshold from 0.50;
	//   - 23 links at 0.72-0.94 that were right (each a false negative
	//     above its score).
	//
	// At 0.70: 6 FP, 2 FN of 100: accuracy 0.92, FPR 6/75 = 0.08. At 0.72:
	// 4 FP, 2 FN: accuracy 0.94, FPR 4/75 = 0.05, and no threshold makes
	// fewer than those 6 errors.
	//
	// The seed's third metric, a false negative rate of 2%, cannot hold
	// together with accuracy 92% and FPR 8% under the usual definitions
	// (FPR = FP/(FP+TN), FNR = FN/(FN+TP), accuracy = 1 - (FP+FN)/100):
	// FP + FN = 8 with FP ≈ 0.08·N⁻ and FN ≈ 0.02·N⁺ forces N⁺ = 0. So
	// the FNR is logged, not asserted.
	type planned struct {
		score   float64
		outcome string
	}
	var plan []planned
	add := func(n int, score func(k int) float64, outcome string) {
		for k := range n {
			plan = append(plan, planned{score(k), outcome})
		}
	}
	add(2, func(int) float64 { return 0.71 }, episodic.OutcomeIncorrect)
	add(4, func(k int) float64 { return float64(96+k) / 100 }, episodic.OutcomeIncorrect)
	add(69, func(k int) float64 { return float64(20+k%50) / 100 }, episodic.OutcomeCorrect)
	add(2, func(k int) float64 { return float64(40+5*k) / 100 }, episodic.OutcomeIncorrect)
	add(23, func(k int) float64 { return float64(72+k) / 100 }, episodic.OutcomeCorrect)
	if len(plan) != 100 {
		t.Fatalf("%d planned", len(plan))
	}
	// Interleave them, as decisions come in over time.
	order := make([]planned, 0, len(plan))
	for i := range 100 {
		order = append(order, plan[(i*37)%100]) // 37 is prime to 100: a permutation
	}

	s := newDecisionSeries(t, nil, t0, 31*time.Minute)
	r := s.r
	for i, p := range order {
		d := s.decide(fmt.Sprintf("Message %d of the series.", i), p.score)
		if d.Threshold != 0.7 || (d.Decision == episodic.Link) != (p.score >= 0.7) {
			t.Fatalf("decision %d at %.2f: %s at threshold %.2f", i, p.score, d.Decision, d.Threshold)
		}
		r.Do(agent, "episode.outcome", map[string]string{"decision_id": d.ID, "outcome": p.outcome}, nil)
	}

	r.clock.Set(time.Date(2025, 11, 7, 18, 0, 0, 0, time.UTC))
	var rec episodic.TuningRecord
	r.Do(agent, "episode.tune", map[string]any{}, &rec)
	t.Logf("3.4 tuning: %+v (false negative rate before %.2f, after %.2f)", rec, rec.Metrics.FalseNegativeRateBefore, rec.Metrics.FalseNegativeRateAfter)

	if rec.TuningDate != "2025-11-07" || rec.PreviousThreshold != 0.7 || rec.NewThreshold != 0.72 || rec.Reason != "Reduce false positive rate" {
		t.Errorf("tuning_date %q, previous %.2f, new %.2f, reason %q; want 2025-11-07, 0.7, 0.72, \"Reduce false positive rate\"",
			rec.TuningDate, rec.PreviousThreshold, rec.NewThreshold, rec.Reason)
	}
	m := rec.Metrics
	if m.AccuracyBefore != 0.92 || m.AccuracyAfter != 0.94 || m.FalsePositiveRateBefore != 0.08 || m.FalsePositiveRateAfter != 0.05 {
		t.Errorf("metrics %+v; want accuracy 0.92 → 0.94, false positive rate 0.08 → 0.05", m)
	}
	if rec.Decisions != 100 {
		t.Errorf("learned from %d decisions, want 100", rec.Decisions)
	}
	// The JSON is the seed's shape.
	b, _ := json.Marshal(rec)
	var shape map[string]any
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	metrics, _ := shape["metrics"].(map[string]any)
	for k, v := range map[string]any{"tuning_date": "2025-11-07", "previous_threshold": 0.7, "new_threshold": 0.72, "reason": "Reduce false positive rate"} {
		if shape[k] != v {
			t.Errorf("%s = %v, want %v", k, shape[k], v)
		}
	}
	for k, v := range map[string]float64{"accuracy_before": 0.92, "accuracy_after": 0.94, "false_positive_rate_before": 0.08, "false_positive_rate_after": 0.05} {
		if metrics[k] != v {
			t.Errorf("metrics.%s = %v, want %v", k, metrics[k], v)
		}
	}

	tu := r.tuning()
	if tu.Threshold != 0.72 || len(tu.History) != 1 || !reflect.DeepEqual(tu.History[0], rec) {
		t.Errorf("episode.tuning: threshold %.2f, history %+v", tu.Threshold, tu.History)
	}
	// The next decision uses 0.72: a 0.71 that linked before no longer does.
	d := s.decide("One more message after tuning.", 0.71)
	if d.Threshold != 0.72 || d.Decision != episodic.DontLink {
		t.Errorf("after tuning, 0.71 decided %s at threshold %.2f; want DON'T_LINK at 0.72", d.Decision, d.Threshold)
	}
}

// TestTuningAddsGuidanceForMissedFollowUps: episode.tune adds guidance to
// the model's prompt for the follow-ups it missed, and the next prompt
// version catches them (seed 3.5).
func TestTuningAddsGuidanceForMissedFollowUps(t *testing.T) {
	// Three kinds of new thread, in every 20: 9 follow-ups with a cue
	// ("Oh, and…", "What about…"; algorithmic 0.72, LINK), 1 continuation
	// without a cue (0.68), 10 fresh subjects (0.20). All turn out correct.
	// The scripted model misses the follow-ups (not related, 0.65) unless
	// its prompt tells it to look for temporal continuity.
	const (
		followUp = "follow-up"
		implicit = "implicit"
		fresh    = "fresh"
	)
	kindOf := map[string]string{}
	var mu sync.Mutex
	model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		mu.Lock()
		kind := kindOf[newMessageOf(req)]
		mu.Unlock()
		guided := strings.Contains(req.System, "temporal continuity")
		switch {
		case kind == followUp && guided:
			return llmtest.Text(judgeAnswer(true, 0.9, "a follow-up of the earlier thread", "temporal_continuation"))
		case kind == followUp:
			return llmtest.Text(judgeAnswer(false, 0.65, "no shared subject"))
		case kind == implicit:
			return llmtest.Text(judgeAnswer(true, 0.85, "the same trip"))
		}
		return llmtest.Text(judgeAnswer(false, 0.9, "different subjects"))
	}}
	s := newDecisionSeries(t, model, t0, 31*time.Minute)
	r := s.r
	followUps := []string{"Oh, and what about %d?", "What about number %d?", "And what about item %d?", "Also, how about %d?"}
	freshOnes := []string{"Book me a flight to city %d.", "Find me recipe %d.", "Remind me to call person %d."}

	type stats struct{ disagreements, modelRight, judged int }
	batch := func(n int) (stats, []*episodic.Decision) {
		var st stats
		var ds []*episodic.Decision
		for i := range 100 {
			idx := n*100 + i
			var msg, kind string
			var score float64
			switch j := i % 20; {
			case j < 9:
				msg, kind, score = fmt.Sprintf(followUps[i%len(followUps)], idx), followUp, 0.72
			case j == 9:
				msg, kind, score = fmt.Sprintf("What's the best time to visit, option %d?", idx), implicit, 0.68
			default:
				msg, kind, score = fmt.Sprintf(freshOnes[i%len(freshOnes)], idx), fresh, 0.20
			}
			mu.Lock()
			kindOf[msg] = kind
			mu.Unlock()
			d := s.decide(msg, score)
			if kind == followUp && len(d.Signals.Cues) == 0 {
				t.Fatalf("%q: the scorer found no cue (signals %+v)", msg, d.Signals)
			}
			// Every decision turned out right: the follow-ups and the
			// continuation belong with their earlier thread (both
			// linked), the fresh subjects not.
			if want := kind != fresh; (d.Decision == episodic.Link) != want {
				t.Fatalf("%q (%s): %s", msg, kind, d.Decision)
			}
			r.Do(agent, "episode.outcome", map[string]string{"decision_id": d.ID, "outcome": episodic.OutcomeCorrect}, nil)
			truth := d.Decision == episodic.Link // outcome correct
			if d.Disagreement {
				st.disagreements++
			}
			if d.Assessment.Available {
				st.judged++
				if d.Assessment.Related == truth {
					st.modelRight++
				}
			}
			ds = append(ds, d)
		}
		return st, ds
	}

	before, ds1 := batch(0)
	for _, d := range ds1 {
		if d.Assessment.PromptVersion != 1 {
			t.Fatalf("batch 1 judged with prompt version %d", d.Assessment.PromptVersion)
		}
	}
	judgedBefore := len(judgeRequests(model))
	for _, q := range judgeRequests(model) {
		if strings.Contains(q.System, "temporal continuity") {
			t.Fatal("the first prompt already has the temporal guidance")
		}
	}

	var rec episodic.TuningRecord
	r.Do(agent, "episode.tune", map[string]any{}, &rec)
	t.Logf("3.5 first tuning: %+v", rec)
	if len(rec.GuidanceAdded) != 1 || !strings.Contains(rec.GuidanceAdded[0], "temporal continuity") || !strings.Contains(rec.GuidanceAdded[0], "Oh, and") {
		t.Fatalf("guidance added %q; want temporal continuity guidance citing \"Oh, and...\"", rec.GuidanceAdded)
	}
	tu := r.tuning()
	latest := tu.Prompts[len(tu.Prompts)-1]
	if latest.Version != 2 || rec.PromptVersion != 2 || !slices.Contains(latest.Guidance, rec.GuidanceAdded[0]) || latest.Reason == "" {
		t.Errorf("prompt versions %+v", tu.Prompts)
	}

	after, ds2 := batch(1)
	reqs := judgeRequests(model)
	if len(reqs) <= judgedBefore || !strings.Contains(reqs[judgedBefore].System, rec.GuidanceAdded[0]) {
		t.Fatalf("the model's next request should carry the new guidance: %q", reqs[judgedBefore].System)
	}
	for _, d := range ds2 {
		if d.Assessment.PromptVersion != 2 {
			t.Fatalf("batch 2 judged with prompt version %d", d.Assessment.PromptVersion)
		}
	}

	accBefore := float64(before.modelRight) / float64(before.judged)
	accAfter := float64(after.modelRight) / float64(after.judged)
	t.Logf("3.5 batch 1: %d disagreements, model accuracy %.2f; batch 2: %d disagreements, model accuracy %.2f",
		before.disagreements, accBefore, after.disagreements, accAfter)
	if before.judged != 100 || after.judged != 100 {
		t.Errorf("judged %d and %d of 100", before.judged, after.judged)
	}
	if after.disagreements >= before.disagreements {
		t.Errorf("disagreements %d → %d: want fewer", before.disagreements, after.disagreements)
	}
	if accAfter <= accBefore {
		t.Errorf("model accuracy %.2f → %.2f: want higher", accBefore, accAfter)
	}

	// Tuning again sees it too, and adds nothing new.
	var rec2 episodic.TuningRecord
	r.Do(agent, "episode.tune", map[string]any{}, &rec2)
	if len(rec2.GuidanceAdded) != 0 || rec2.Metrics.LLMAccuracy == nil || rec.Metrics.LLMAccuracy == nil || *rec2.Metrics.LLMAccuracy <= *rec.Metrics.LLMAccuracy {
		t.Errorf("second tuning %+v after %+v", rec2, rec)
	}
}
