package episodic_test

import (
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// Linking a new thread to the earlier threads it continues: the
// algorithmic score, the model's judgement, their agreement, and
// cross-thread episodes (seed 003, categories 3 and 7).

// weatherThenThursday is the setup of 3.1-3.1c: Thread 1 asks about the
// weather in New York (10:00) and next week (10:15); after 30 minutes of
// inactivity, "Oh, and what is it on Thursday?" starts Thread 2.
func weatherThenThursday(t *testing.T, r *rig) (t1 string, res episodic.MessageResult) {
	t.Helper()
	r.at("10:00")
	t1 = r.send("sms", "", "What's the weather in New York?").ThreadID
	r.at("10:15")
	if again := r.send("sms", "", "What about next week?"); again.ThreadID != t1 {
		t.Fatalf("15 min later the thread should continue")
	}
	r.at("10:45") // 30 minutes after the last activity
	res = r.send("sms", "", "Oh, and what is it on Thursday?")
	if !res.NewThread || res.Decision == nil || res.Decision.Candidate != t1 {
		t.Fatalf("Thread 2 should start and be scored against Thread 1: %+v", res)
	}
	return t1, res
}

// weatherThenTokyo is the setup of 3.2-3.2c: Thread 1 asks about the
// weather in New York; after 30 minutes, "Book me a flight to Tokyo".
func weatherThenTokyo(t *testing.T, r *rig) (t1 string, res episodic.MessageResult) {
	t.Helper()
	r.at("10:00")
	t1 = r.send("sms", "", "What's the weather in New York?").ThreadID
	r.at("10:30")
	res = r.send("sms", "", "Book me a flight to Tokyo")
	if !res.NewThread || res.Decision == nil || res.Decision.Candidate != t1 {
		t.Fatalf("Thread 2 should start and be scored against Thread 1: %+v", res)
	}
	return t1, res
}

// TestFollowUpLinksByScoreAlone: without a model, a follow-up ("Oh, and…
// Thursday?") links to the thread it continues by the algorithmic score
// (seed 3.1).
func TestFollowUpLinksByScoreAlone(t *testing.T) {
	r := newRig(t) // no model: the algorithmic assessment alone
	t1, res := weatherThenThursday(t, r)
	d := res.Decision
	t.Logf("3.1 algorithmic score %.2f; signals %+v", d.Algorithmic, d.Signals)

	if d.Algorithmic <= 0.7 {
		t.Fatalf("algorithmic score %.2f, want > 0.7 (signals %+v)", d.Algorithmic, d.Signals)
	}
	if d.Decision != episodic.Link || d.Confidence != episodic.ConfidenceAlgorithm || d.Threshold != 0.7 {
		t.Errorf("decision %s (%s, threshold %.2f), want LINK by the algorithm at 0.7", d.Decision, d.Confidence, d.Threshold)
	}
	// The seed expects keyword/entity matches on "weather", "New York" and
	// "Thursday", but the new message names neither the weather nor New
	// York, and Thread 1 never said "Thursday": what ties them is that the
	// message is a follow-up — "Oh, and", an "it" with nothing to refer to,
	// and a question about a time alone.
	for _, want := range []string{"continuation: oh, and", "time follow-up"} {
		if !slices.Contains(d.Signals.Cues, want) {
			t.Errorf("cues %q should include %q", d.Signals.Cues, want)
		}
	}
	if d.Signals.GapMinutes != 30 || !d.Signals.MostRecent {
		t.Errorf("gap %d min (most recent %v), want 30 and the most recent thread", d.Signals.GapMinutes, d.Signals.MostRecent)
	}
	// The score is the scorer's, recorded as it computed it.
	score, _ := episodic.Score("Oh, and what is it on Thursday?", episodic.CandidateText{
		Text: "Weather in New York\nWhat's the weather in New York?\nWhat about next week?", LastActive: clockAt("10:15"), MostRecent: true,
	}, clockAt("10:45"))
	if score != d.Algorithmic {
		t.Errorf("recorded score %.2f, Score gives %.2f", d.Algorithmic, score)
	}
	if !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Errorf("linked threads %q, want Thread 1", res.LinkedThreads)
	}
}

// judgeAll answers every linking request with the same judgement.
func judgeAll(related bool, confidence float64, reasoning string, signals ...string) *llmtest.Scripted {
	return &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		return llmtest.Text(judgeAnswer(related, confidence, reasoning, signals...))
	}}
}

// checkJudgeRequest checks the model was shown Thread 1 and the new message.
func checkJudgeRequest(t *testing.T, m *llmtest.Scripted, earlier []string, message string) {
	t.Helper()
	reqs := judgeRequests(m)
	if len(reqs) != 1 {
		t.Fatalf("%d linking requests, want 1 (one earlier thread)", len(reqs))
	}
	q := reqs[0]
	content := lastUser(q)
	for _, want := range append([]string{"Earlier thread", "Title: Weather in New York", "Are these semantically related?"}, earlier...) {
		if !strings.Contains(content, want) {
			t.Errorf("the model's request should contain %q:\n%s", want, content)
		}
	}
	if got := newMessageOf(q); got != message {
		t.Errorf("the model was asked about %q, want the current message %q", got, message)
	}
	if !strings.Contains(q.System, `"related"`) || !strings.Contains(q.System, `"confidence"`) || !q.JSON {
		t.Errorf("the model should be asked for JSON {related, confidence, ...}: %q", q.System)
	}
}

// TestModelJudgesFollowUpRelated: the model is shown the earlier thread and
// the follow-up, and judges them related (seed 3.1b).
func TestModelJudgesFollowUpRelated(t *testing.T) {
	m := judgeAll(true, 0.92, "Both about weather in New York", "weather", "New York", "temporal_continuation")
	r := newRigWith(t, rigOptions{llm: m})
	_, res := weatherThenThursday(t, r)

	checkJudgeRequest(t, m, []string{"user: What's the weather in New York?", "user: What about next week?"}, "Oh, and what is it on Thursday?")
	a := res.Decision.Assessment
	if !a.Available || !a.Related || a.Confidence <= 0.7 || a.Confidence != 0.92 {
		t.Errorf("assessment %+v, want related with confidence 0.92", a)
	}
	if !strings.Contains(a.Reasoning, "Both about weather in New York") {
		t.Errorf("reasoning %q", a.Reasoning)
	}
	if want := []string{"weather", "New York", "temporal_continuation"}; !slices.Equal(a.KeySignals, want) {
		t.Errorf("key_signals %q, want %q", a.KeySignals, want)
	}
	// Stored as it was returned.
	stored := r.decisions(res.ThreadID)
	if len(stored) != 1 || !reflect.DeepEqual(stored[0].Assessment, a) {
		t.Errorf("stored assessment %+v", stored)
	}
}

// TestScoreAndModelAgreeToLink: score and model, run in parallel, agree to
// link: high confidence (seed 3.1c).
func TestScoreAndModelAgreeToLink(t *testing.T) {
	m := judgeAll(true, 0.92, "Both about weather in New York", "weather", "New York", "temporal_continuation")
	r := newRigWith(t, rigOptions{llm: m})
	t1, res := weatherThenThursday(t, r)
	d := res.Decision
	t.Logf("3.1c algorithmic score %.2f, model %.2f", d.Algorithmic, *d.LLM)

	if d.Algorithmic <= 0.7 {
		t.Errorf("algorithmic score %.2f, want > 0.7 (LINK)", d.Algorithmic)
	}
	if d.Agreement == nil || !*d.Agreement || d.Confidence != episodic.ConfidenceHigh || d.Decision != episodic.Link || d.DecidedBy != "both" || d.Disagreement {
		t.Errorf("decision %s, agreement %v, confidence %s, decided by %s; want LINK, agreement, HIGH, both", d.Decision, d.Agreement, d.Confidence, d.DecidedBy)
	}
	_, xs := r.episodes("")
	if len(xs) != 1 || !slices.Equal(xs[0].LinkedThreads, []string{t1, res.ThreadID}) || d.CrossThreadEpisode != xs[0].ID {
		t.Fatalf("cross-thread episodes %+v; want one linking Thread 1 and Thread 2 (the decision's %q)", xs, d.CrossThreadEpisode)
	}
	for _, id := range []string{t1, res.ThreadID} {
		if th := r.thread(id); !slices.Equal(th.CrossThreadEpisodes, []string{xs[0].ID}) {
			t.Errorf("thread %s cross_thread_episodes %q", id, th.CrossThreadEpisodes)
		}
	}
	// Both scores recorded: {algorithmic: <score>, llm: 0.92}.
	raw := r.decisionsRaw(res.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != d.Algorithmic || raw[0]["llm"] != 0.92 || raw[0]["agreement"] != true || raw[0]["confidence"] != "HIGH" {
		t.Errorf("recorded %v", raw)
	}

	// In parallel: the scorer and the model each wait for the other to have
	// started; run one after the other, the first would wait in vain.
	t.Run("parallel", func(t *testing.T) {
		var scorerIn, modelIn = make(chan struct{}), make(chan struct{})
		var failed atomic.Value
		meet := func(mine, theirs chan struct{}, who string) {
			close(mine)
			select {
			case <-theirs:
			case <-time.After(10 * time.Second):
				failed.Store(who + " waited 10 s for the other assessment to start: they do not run in parallel")
			}
		}
		model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
			meet(modelIn, scorerIn, "the model")
			return llmtest.Text(judgeAnswer(true, 0.92, "Both about weather in New York"))
		}}
		opts := episodic.FixedScores(episodic.Options{}, func(message, cand string) float64 {
			meet(scorerIn, modelIn, "the scorer")
			return 0.88
		})
		r := newRigWith(t, rigOptions{llm: model, opts: opts})
		_, res := weatherThenThursday(t, r)
		if msg, _ := failed.Load().(string); msg != "" {
			t.Fatal(msg)
		}
		if d := res.Decision; d.Algorithmic != 0.88 || *d.LLM != 0.92 || d.Confidence != episodic.ConfidenceHigh {
			t.Errorf("%+v", d)
		}
	})
}

// TestNewSubjectDoesNotLinkByScore: without a model, a new subject does not
// link to the earlier thread (seed 3.2).
func TestNewSubjectDoesNotLinkByScore(t *testing.T) {
	r := newRig(t)
	t1, res := weatherThenTokyo(t, r)
	d := res.Decision
	t.Logf("3.2 algorithmic score %.2f; signals %+v", d.Algorithmic, d.Signals)

	if d.Algorithmic >= 0.7 {
		t.Fatalf("algorithmic score %.2f, want < 0.7", d.Algorithmic)
	}
	if d.Decision != episodic.DontLink {
		t.Errorf("decision %s, want DON'T_LINK", d.Decision)
	}
	if len(d.Signals.Keywords)+len(d.Signals.Entities)+len(d.Signals.Topics) != 0 {
		t.Errorf("no keyword/entity/topic overlap expected; signals %+v", d.Signals)
	}
	if len(res.LinkedThreads) != 0 || d.CrossThreadEpisode != "" {
		t.Errorf("linked %q / %q", res.LinkedThreads, d.CrossThreadEpisode)
	}
	if th := r.thread(t1); len(th.LinkedThreads) != 0 || len(th.CrossThreadEpisodes) != 0 {
		t.Errorf("Thread 1 linked: %+v", th.Thread)
	}
}

// TestModelJudgesNewSubjectUnrelated: the model judges a new subject
// unrelated to the earlier thread (seed 3.2b).
func TestModelJudgesNewSubjectUnrelated(t *testing.T) {
	m := judgeAll(false, 0.88, "Different topics - weather vs. flight booking", "weather", "flight")
	r := newRigWith(t, rigOptions{llm: m})
	_, res := weatherThenTokyo(t, r)

	checkJudgeRequest(t, m, []string{"user: What's the weather in New York?"}, "Book me a flight to Tokyo")
	a := res.Decision.Assessment
	if !a.Available || a.Related || a.Confidence <= 0.7 || a.Confidence != 0.88 {
		t.Errorf("assessment %+v, want not related with confidence 0.88", a)
	}
	if a.Reasoning != "Different topics - weather vs. flight booking" {
		t.Errorf("reasoning %q", a.Reasoning)
	}
}

// TestScoreAndModelAgreeNotToLink: score and model agree not to link: high confidence (seed 3.2c).
func TestScoreAndModelAgreeNotToLink(t *testing.T) {
	m := judgeAll(false, 0.88, "Different topics - weather vs. flight booking")
	r := newRigWith(t, rigOptions{llm: m})
	t1, res := weatherThenTokyo(t, r)
	d := res.Decision
	t.Logf("3.2c algorithmic score %.2f, model %.2f", d.Algorithmic, *d.LLM)

	if d.Algorithmic >= 0.7 || d.Decision != episodic.DontLink {
		t.Errorf("algorithmic %.2f, decision %s; want < 0.7, DON'T_LINK", d.Algorithmic, d.Decision)
	}
	if d.Agreement == nil || !*d.Agreement || d.Confidence != episodic.ConfidenceHigh || d.DecidedBy != "both" || d.Disagreement {
		t.Errorf("agreement %v, confidence %s, decided by %s; want agreement, HIGH", d.Agreement, d.Confidence, d.DecidedBy)
	}
	if _, xs := r.episodes(""); len(xs) != 0 {
		t.Errorf("no cross-thread episode expected: %+v", xs)
	}
	if th := r.thread(t1); len(th.CrossThreadEpisodes) != 0 {
		t.Errorf("Thread 1: %+v", th.Thread)
	}
	// {algorithmic: <score>, llm: 0.12}: the model's probability of related.
	raw := r.decisionsRaw(res.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != d.Algorithmic || raw[0]["llm"] != 0.12 || raw[0]["agreement"] != true {
		t.Errorf("recorded %v", raw)
	}
}

// disagree runs seed 3.2d/3.2e: Thread 1, then Thread 2 an hour later,
// the algorithmic score forced to alg, the model answering related/conf.
func disagree(t *testing.T, first, second string, alg float64, related bool, conf float64) (*rig, *episodic.Decision) {
	t.Helper()
	m := judgeAll(related, conf, "scripted")
	var scored atomic.Int32
	opts := episodic.FixedScores(episodic.Options{}, func(message, cand string) float64 {
		if message != second || !strings.Contains(cand, first) {
			t.Errorf("scored %q against %q", message, cand)
		}
		scored.Add(1)
		return alg
	})
	r := newRigWith(t, rigOptions{llm: m, opts: opts})
	r.at("10:00")
	r.send("sms", "", first)
	r.at("11:00")
	res := r.send("sms", "", second)
	if !res.NewThread || res.Decision == nil || scored.Load() != 1 || len(judgeRequests(m)) != 1 {
		t.Fatalf("Thread 2 should start, scored once and judged once: %+v", res)
	}
	real, _ := episodic.Score(second, episodic.CandidateText{Text: first + "\n" + first, LastActive: clockAt("10:00"), MostRecent: true}, clockAt("11:00"))
	t.Logf("(the real scorer gives %.2f for this pair; the seed's %.2f is forced)", real, alg)
	return r, res.Decision
}

// TestDisagreementWhenOnlyTheScoreLinks: the score links, the model does
// not: uncertain, a disagreement recorded (seed 3.2d).
func TestDisagreementWhenOnlyTheScoreLinks(t *testing.T) {
	r, d := disagree(t, "What's the weather in New York?", "What about the weather in Boston?", 0.72, false, 0.65)

	if d.Agreement == nil || *d.Agreement || d.Confidence != episodic.ConfidenceUncertain || !d.Disagreement {
		t.Errorf("agreement %v, confidence %s, disagreement %v; want NO, UNCERTAIN, true", d.Agreement, d.Confidence, d.Disagreement)
	}
	// Algorithmic confidence 0.72 > the model's 0.65: the algorithm decides.
	if d.DecidedBy != "algorithmic" || d.Decision != episodic.Link {
		t.Errorf("decided by %s: %s; want the algorithm: LINK", d.DecidedBy, d.Decision)
	}
	raw := r.decisionsRaw(d.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != 0.72 || raw[0]["llm"] != 0.35 || raw[0]["disagreement"] != true || raw[0]["decision"] != "LINK" {
		t.Errorf("recorded %v, want {algorithmic: 0.72, llm: 0.35, disagreement: true}", raw)
	}

	c := episodic.Combine(0.72, episodic.Assessment{Available: true, Related: false, Confidence: 0.65}, 0.7)
	if c.Decision != episodic.Link || c.DecidedBy != "algorithmic" || c.Confidence != episodic.ConfidenceUncertain || !c.Disagreement ||
		c.Agreement == nil || *c.Agreement || c.LLM == nil || *c.LLM != 0.35 || c.Algorithmic != 0.72 {
		t.Errorf("Combine(0.72, not related 0.65) = %+v", c)
	}
}

// TestDisagreementWhenOnlyTheModelLinks: the model links, the score does
// not: uncertain, a disagreement recorded (seed 3.2e).
func TestDisagreementWhenOnlyTheModelLinks(t *testing.T) {
	r, d := disagree(t, "I'm planning a trip to Paris", "What's the best time to visit?", 0.68, true, 0.85)

	if d.Agreement == nil || *d.Agreement || d.Confidence != episodic.ConfidenceUncertain || !d.Disagreement {
		t.Errorf("agreement %v, confidence %s, disagreement %v; want NO, UNCERTAIN, true", d.Agreement, d.Confidence, d.Disagreement)
	}
	// Algorithmic confidence 0.68 < the model's 0.85: the model decides.
	if d.DecidedBy != "llm" || d.Decision != episodic.Link {
		t.Errorf("decided by %s: %s; want the model: LINK", d.DecidedBy, d.Decision)
	}
	raw := r.decisionsRaw(d.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != 0.68 || raw[0]["llm"] != 0.85 || raw[0]["disagreement"] != true || raw[0]["decision"] != "LINK" {
		t.Errorf("recorded %v, want {algorithmic: 0.68, llm: 0.85, disagreement: true}", raw)
	}
	if _, xs := r.episodes(""); len(xs) != 1 {
		t.Errorf("the link should make a cross-thread episode: %+v", xs)
	}

	c := episodic.Combine(0.68, episodic.Assessment{Available: true, Related: true, Confidence: 0.85}, 0.7)
	if c.Decision != episodic.Link || c.DecidedBy != "llm" || c.Confidence != episodic.ConfidenceUncertain || !c.Disagreement ||
		c.Agreement == nil || *c.Agreement || c.LLM == nil || *c.LLM != 0.85 || c.Algorithmic != 0.68 {
		t.Errorf("Combine(0.68, related 0.85) = %+v", c)
	}
}

// weatherInTwoCities: Thread 1 about New York (10:00), Thread 2 about
// Boston (10:45, after 45 minutes).
func weatherInTwoCities(t *testing.T, r *rig) (t1, t2 string) {
	t.Helper()
	r.at("10:00")
	t1 = r.send("sms", "", "What's the weather in New York?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")
	r.at("10:45")
	res := r.send("sms", "", "What's the weather in Boston?")
	t2 = res.ThreadID
	if !res.NewThread {
		t.Fatal("Thread 2 should be new")
	}
	t.Logf("Thread 2 (Boston) against Thread 1 (New York): %.2f %s", res.Decision.Algorithmic, res.Decision.Decision)
	r.answer("sms", t2, "Rainy, 55°F.")
	return t1, t2
}

// checkLinkedToAll checks that t3 links to every one of earlier in one
// cross-thread episode holding them all, in creation order.
func checkLinkedToAll(t *testing.T, r *rig, t3 string, earlier ...string) {
	t.Helper()
	all := append(slices.Clone(earlier), t3)
	_, xs := r.episodes("")
	if len(xs) != 1 {
		t.Fatalf("%d cross-thread episodes, want one: %+v", len(xs), xs)
	}
	x := xs[0]
	if !slices.Equal(x.LinkedThreads, all) {
		t.Errorf("linked_threads %q, want %q", x.LinkedThreads, all)
	}
	for _, id := range all {
		th := r.thread(id)
		if !slices.Equal(th.CrossThreadEpisodes, []string{x.ID}) {
			t.Errorf("thread %s cross_thread_episodes %q, want [%s]", id, th.CrossThreadEpisodes, x.ID)
		}
	}
	th3 := r.thread(t3)
	if got := slices.Sorted(slices.Values(th3.LinkedThreads)); !slices.Equal(got, slices.Sorted(slices.Values(earlier))) {
		t.Errorf("thread 3 linked_threads %q, want %q", th3.LinkedThreads, earlier)
	}
	for _, id := range earlier {
		if !slices.Contains(r.thread(id).LinkedThreads, t3) {
			t.Errorf("thread %s does not list thread 3 as linked", id)
		}
	}
}

// TestLinkingToSeveralThreadsSharesOneCrossThreadEpisode: a message
// following up two threads links to both, in one cross-thread episode (seed
// 3.6).
func TestLinkingToSeveralThreadsSharesOneCrossThreadEpisode(t *testing.T) {
	r := newRig(t)
	t1, t2 := weatherInTwoCities(t, r)

	r.at("11:30") // 45 minutes of inactivity
	res := r.send("sms", "", "What about weather in both cities?")

	if !res.NewThread {
		t.Fatal("Thread 3 should be new")
	}
	byCand := map[string]*episodic.Decision{}
	for _, d := range res.Decisions {
		byCand[d.Candidate] = d
		t.Logf("3.6 Thread 3 against %s: algorithmic %.2f, %s; cues %q", map[string]string{t1: "Thread 1", t2: "Thread 2"}[d.Candidate], d.Algorithmic, d.Decision, d.Signals.Cues)
	}
	for name, id := range map[string]string{"Thread 1": t1, "Thread 2": t2} {
		if d := byCand[id]; d == nil || d.Decision != episodic.Link || d.Algorithmic <= 0.7 {
			t.Errorf("%s: %+v; want LINK above 0.7", name, d)
		}
	}
	checkLinkedToAll(t, r, res.ThreadID, t1, t2)
	if x := res.Decision.CrossThreadEpisode; x == "" || byCand[t1].CrossThreadEpisode != x || byCand[t2].CrossThreadEpisode != x {
		t.Errorf("both links should name the one cross-thread episode: %q, %q", byCand[t1].CrossThreadEpisode, byCand[t2].CrossThreadEpisode)
	}
}

// TestAmbiguousFollowUpLinksToEveryRelatedThread: a follow-up that fits two
// earlier threads links to both, strongest first, and not to an unrelated
// one (seed 7.2).
func TestAmbiguousFollowUpLinksToEveryRelatedThread(t *testing.T) {
	r := newRig(t)
	r.at("08:00") // an unrelated, older thread
	recipe := r.send("sms", "", "Find me a lasagna recipe").ThreadID
	r.answer("sms", recipe, "Here's a classic one: layers of pasta, ragù and béchamel.")
	t1, t2 := weatherInTwoCities(t, r)

	r.at("11:30")
	res := r.send("sms", "", "What about weather?")

	if !res.NewThread {
		t.Fatal("Thread 3 should be new")
	}
	names := map[string]string{t1: "Thread 1 (New York)", t2: "Thread 2 (Boston)", recipe: "the recipe thread"}
	scored := map[string]*episodic.Decision{}
	for _, d := range res.Decisions {
		scored[d.Candidate] = d
		t.Logf("7.2 Thread 3 against %s: algorithmic %.2f, %s", names[d.Candidate], d.Algorithmic, d.Decision)
	}
	if len(scored) != 3 {
		t.Fatalf("scored against %d threads, want all 3", len(scored))
	}
	// Strongest first: the decision reported is the highest-scoring link.
	for i := 1; i < len(res.Decisions); i++ {
		a, b := res.Decisions[i-1], res.Decisions[i]
		if a.Decision == b.Decision && a.Algorithmic < b.Algorithmic || a.Decision == episodic.DontLink && b.Decision == episodic.Link {
			t.Errorf("decisions not strongest first: %v", res.Decisions)
		}
	}
	for _, id := range []string{t1, t2} {
		if d := scored[id]; d.Decision != episodic.Link || d.Algorithmic <= 0.7 {
			t.Errorf("%s: %.2f %s, want LINK", names[id], d.Algorithmic, d.Decision)
		}
	}
	if d := scored[recipe]; d.Decision != episodic.DontLink {
		t.Errorf("the recipe thread: %.2f %s, want DON'T_LINK", d.Algorithmic, d.Decision)
	}
	checkLinkedToAll(t, r, res.ThreadID, t1, t2)
	c := r.contextOf(res.ThreadID, "", "")
	if len(c.Threads) != 3 || c.Threads[0].ID != t1 || c.Threads[1].ID != t2 || !c.Continuing {
		t.Errorf("context threads %+v", c.Threads)
	}
	if strings.Contains(c.Text, "lasagna") {
		t.Errorf("the unrelated thread was pulled in:\n%s", c.Text)
	}
}

// TestWeekOldThreadIsLinkedByBackReference: a back-reference after a week of
// inactivity still links to the old thread and pulls it into context (seed
// 7.3).
func TestWeekOldThreadIsLinkedByBackReference(t *testing.T) {
	r := newRig(t)
	weekAgo := t0.Add(-7 * 24 * time.Hour)
	r.clock.Set(weekAgo)
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")

	r.clock.Set(t0) // 7 days of inactivity
	res := r.send("sms", "", "Remember when we talked about New York weather?")

	if !res.NewThread || res.EndedThread != t1 {
		t.Fatalf("a new thread should start: %+v", res)
	}
	d := res.Decision
	t.Logf("7.3 algorithmic score %.2f; signals %+v", d.Algorithmic, d.Signals)
	if d.Candidate != t1 || d.Decision != episodic.Link || d.Algorithmic <= 0.7 {
		t.Fatalf("decision %+v; want LINK to Thread 1", d)
	}
	if !slices.ContainsFunc(d.Signals.Cues, func(c string) bool { return strings.HasPrefix(c, "back-reference") }) {
		t.Errorf("the back-reference should be among the cues: %q", d.Signals.Cues)
	}
	if d.Signals.GapMinutes != 7*24*60 {
		t.Errorf("gap %d min, want a week", d.Signals.GapMinutes)
	}
	checkLinkedToAll(t, r, res.ThreadID, t1)

	c := r.contextOf(res.ThreadID, "", "")
	if len(c.Threads) != 2 || c.Threads[0].ID != t1 || !c.Continuing {
		t.Fatalf("context threads %+v; want Thread 1 pulled in", c.Threads)
	}
	for _, want := range []string{"- What's the weather in New York? (Sunny, 72°F)", "(Continuing from previous thread after 7 days break)"} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("the prompt should include %q:\n%s", want, c.Text)
		}
	}
	if c.Recap != "You were asking about weather in New York" {
		t.Errorf("recap %q", c.Recap)
	}
}
