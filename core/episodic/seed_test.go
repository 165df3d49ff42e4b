package episodic_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// The seed's tests (seed 003: episodic memory), one Go test each, named
// after the scenario, driven through the engine's thread.* and episode.*
// actions (and chat.send for the integration scenarios) with a fixed clock.

var seedUpdateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seedClockAt is hh:mm on the seed's day (2025-11-05).
func seedClockAt(hhmm string) time.Time {
	d, err := time.Parse("15:04", hhmm)
	if err != nil {
		panic(err)
	}
	return time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), 0, 0, time.UTC)
}

// sendTitled starts a thread with a title (or continues one, ignoring it).
func (r *rig) seedSendTitled(channel, threadID, title, text string) episodic.MessageResult {
	r.t.Helper()
	var res episodic.MessageResult
	r.do("thread.message", map[string]string{"channel": channel, "thread_id": threadID, "title": title, "text": text}, &res)
	return res
}

// doTurn runs an action as part of a turn (so its trace entries carry it).
func (r *rig) seedDoTurn(turn, name string, args any, out any) {
	r.t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	raw, err := r.e.Do(context.Background(), core.Request{Action: name, Args: b, Turn: turn})
	if err != nil {
		r.t.Fatalf("%s (turn %s): %v", name, turn, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			r.t.Fatalf("%s: decoding %s: %v", name, raw, err)
		}
	}
}

func (r *rig) seedThreadList() []*episodic.Thread {
	r.t.Helper()
	var out struct {
		Threads []*episodic.Thread `json:"threads"`
	}
	r.do("thread.list", map[string]any{}, &out)
	return out.Threads
}

// liveThread reads a thread without its archived turns.
func (r *rig) seedLiveThread(id string) episodic.ThreadView {
	r.t.Helper()
	var out struct {
		Thread episodic.ThreadView `json:"thread"`
	}
	r.do("thread.get", map[string]any{"thread_id": id}, &out)
	return out.Thread
}

func (r *rig) seedDecisions(threadID string) []*episodic.Decision {
	r.t.Helper()
	var out struct {
		Decisions []*episodic.Decision `json:"decisions"`
	}
	r.do("episode.decisions", map[string]any{"thread_id": threadID}, &out)
	return out.Decisions
}

// decisionsRaw is episode.decisions as the JSON a client sees.
func (r *rig) seedDecisionsRaw(threadID string) []map[string]any {
	r.t.Helper()
	var out struct {
		Decisions []map[string]any `json:"decisions"`
	}
	r.do("episode.decisions", map[string]any{"thread_id": threadID}, &out)
	return out.Decisions
}

func (r *rig) seedEpisodes(threadID string) (eps []*episodic.Episode, xs []*episodic.CrossEpisode) {
	r.t.Helper()
	var out struct {
		Episodes            []*episodic.Episode      `json:"episodes"`
		CrossThreadEpisodes []*episodic.CrossEpisode `json:"cross_thread_episodes"`
	}
	r.do("episode.list", map[string]any{"thread_id": threadID}, &out)
	return out.Episodes, out.CrossThreadEpisodes
}

func (r *rig) seedEpisode(id string) episodic.EpisodeView {
	r.t.Helper()
	var out struct {
		Episode episodic.EpisodeView `json:"episode"`
	}
	r.do("episode.get", map[string]any{"episode_id": id}, &out)
	return out.Episode
}

func (r *rig) seedContext(threadID, channel, input string) episodic.Context {
	r.t.Helper()
	var out struct {
		Context episodic.Context `json:"context"`
	}
	r.do("episode.context", map[string]any{"thread_id": threadID, "channel": channel, "input": input}, &out)
	return out.Context
}

func (r *rig) seedTuning() episodic.Tuning {
	r.t.Helper()
	var out episodic.Tuning
	r.do("episode.tuning", map[string]any{}, &out)
	return out
}

func (r *rig) seedTraceOf(turn, kind string) []trace.Entry {
	r.t.Helper()
	var out struct {
		Entries []trace.Entry `json:"entries"`
	}
	r.do("trace.list", map[string]any{"turn": turn, "kind": kind, "limit": 10000}, &out)
	return out.Entries
}

// seedErrField is the field a kit error names.
func seedErrField(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		f, _ := e.Details["field"].(string)
		return f
	}
	return ""
}

func seedUserTexts(turns []*episodic.Turn) []string {
	var out []string
	for _, u := range turns {
		if u.Speaker == "user" {
			out = append(out, u.Text)
		}
	}
	return out
}

func seedAllTexts(turns []*episodic.Turn) []string {
	var out []string
	for _, u := range turns {
		out = append(out, u.Text)
	}
	return out
}

func seedLastUser(req llm.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[len(req.Messages)-1].Content
}

// seedNewMessageOf is the new message a linking request asks about.
func seedNewMessageOf(req llm.Request) string {
	_, after, _ := strings.Cut(seedLastUser(req), "New message:\n")
	msg, _, _ := strings.Cut(after, "\n\nAre these")
	return msg
}

func seedJudgeRequests(m *llmtest.Scripted) []llm.Request {
	var out []llm.Request
	for _, q := range m.Requests() {
		if q.JSON {
			out = append(out, q)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Category 1: explicit channels.

func TestEpisodic_1_1_UserExplicitlySelectsThread(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.seedSendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.seedSendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.answer("web", t2, "Booked: JL 5 on Friday.")
	if t1 == t2 {
		t.Fatal("a message on an explicit channel without a thread must start a new one")
	}
	before := r.thread(t1)

	r.at("10:10") // the user clicks Thread 1
	res := r.send("web", t1, "What about Thursday?")

	if res.ThreadID != t1 || res.NewThread {
		t.Fatalf("the turn went to %s (new %v); want Thread 1 %s", res.ThreadID, res.NewThread, t1)
	}
	after := r.thread(t1)
	if want := before.TurnCount + 1; after.TurnCount != want || res.TurnCount != want {
		t.Errorf("turn_count %d (result %d), want %d", after.TurnCount, res.TurnCount, want)
	}
	if !after.LastActivityAt.Equal(seedClockAt("10:10")) || !res.LastActivityAt.Equal(seedClockAt("10:10")) {
		t.Errorf("last_activity_at %v, want 10:10", after.LastActivityAt)
	}
	if got := after.Turns[len(after.Turns)-1]; got.Text != "What about Thursday?" || got.Number != after.TurnCount || got.Channel != "web" {
		t.Errorf("last turn of Thread 1: %+v", got)
	}
	if n := len(r.seedThreadList()); n != 2 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
	if th := r.thread(t2); th.TurnCount != 2 || !th.LastActivityAt.Equal(seedClockAt("10:05")) {
		t.Errorf("Thread 2 changed: turn_count %d, last activity %v", th.TurnCount, th.LastActivityAt)
	}
}

func TestEpisodic_1_2_UserSwitchesBetweenThreads(t *testing.T) {
	r := newRig(t)
	r.at("09:00")
	t2 := r.seedSendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.at("10:00")
	t1 := r.seedSendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	th1, th2 := r.thread(t1), r.thread(t2)
	if !th1.LastActivityAt.Equal(seedClockAt("10:00")) || !th2.LastActivityAt.Equal(seedClockAt("09:00")) {
		t.Fatalf("setup: last activity %v and %v, want 10:00 and 09:00", th1.LastActivityAt, th2.LastActivityAt)
	}

	r.at("10:10") // the user clicks Thread 2
	res := r.send("web", t2, "What about return flights?")

	if res.ThreadID != t2 || res.NewThread {
		t.Fatalf("the turn went to %s (new %v); want Thread 2", res.ThreadID, res.NewThread)
	}
	after2 := r.thread(t2)
	if after2.TurnCount != th2.TurnCount+1 || !after2.LastActivityAt.Equal(seedClockAt("10:10")) {
		t.Errorf("Thread 2: turn_count %d, last activity %v; want %d, 10:10", after2.TurnCount, after2.LastActivityAt, th2.TurnCount+1)
	}
	if got := seedUserTexts(after2.Turns); !slices.Equal(got, []string{"Book me a flight to Tokyo", "What about return flights?"}) {
		t.Errorf("Thread 2's turns %q", got)
	}
	if after1 := r.thread(t1); !reflect.DeepEqual(after1, th1) {
		t.Errorf("Thread 1 changed:\nbefore %+v\nafter  %+v", th1.Thread, after1.Thread)
	}
	for _, th := range r.seedThreadList() {
		if th.Status != episodic.StatusActive {
			t.Errorf("thread %s (%s) is %s; both remain active", th.ID, th.Title, th.Status)
		}
	}
}

// ---------------------------------------------------------------------------
// Category 2: implicit channels.

func TestEpisodic_2_1_NewThreadOnInactivityTimeout(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID
	before := r.thread(t1)
	if before.InactivityTimeoutMinutes != 30 {
		t.Fatalf("inactivity_timeout_minutes %d, want the default 30", before.InactivityTimeoutMinutes)
	}

	r.at("10:45")
	res := r.send("sms", "", "Oh, and what is it on Thursday?")

	if !res.NewThread || res.ThreadID == t1 {
		t.Fatalf("45 min after the last activity a new thread should start: %+v", res)
	}
	t2 := r.thread(res.ThreadID)
	if !t2.CreatedAt.Equal(seedClockAt("10:45")) || t2.TurnCount != 1 || res.TurnCount != 1 {
		t.Errorf("Thread 2: created_at %v, turn_count %d; want 10:45, 1", t2.CreatedAt, t2.TurnCount)
	}
	if res.EndedThread != t1 {
		t.Errorf("ended thread %q, want Thread 1", res.EndedThread)
	}
	// Thread 1 keeps its turns and activity; its status moves on (it ended,
	// and its episode is compacted: seed 5.1) and it gains the link (3.1).
	after := r.thread(t1)
	if !after.LastActivityAt.Equal(seedClockAt("10:00")) || after.TurnCount != before.TurnCount || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d; want 10:00, %d", after.LastActivityAt, after.TurnCount, before.TurnCount)
	}
	if !slices.Equal(seedAllTexts(after.Turns), seedAllTexts(before.Turns)) {
		t.Errorf("Thread 1's turns changed: %q", seedAllTexts(after.Turns))
	}
	if n := len(r.seedThreadList()); n != 2 {
		t.Errorf("%d threads, want 2", n)
	}
}

func TestEpisodic_2_2_ContinueThreadWithinTimeout(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID

	r.at("10:15")
	res := r.send("sms", "", "What about next week?")

	if res.NewThread || res.ThreadID != t1 {
		t.Fatalf("15 min later the message should continue Thread 1: %+v", res)
	}
	th := r.thread(t1)
	if !th.LastActivityAt.Equal(seedClockAt("10:15")) || th.TurnCount != 2 {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d; want 10:15, 2", th.LastActivityAt, th.TurnCount)
	}
	if n := len(r.seedThreadList()); n != 1 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
}

func TestEpisodic_2_3_CustomInactivityTimeout(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID
	var cfg struct {
		Thread episodic.Thread `json:"thread"`
	}
	r.do("thread.configure", map[string]any{"thread_id": t1, "inactivity_timeout_minutes": 60}, &cfg)
	if cfg.Thread.InactivityTimeoutMinutes != 60 || !cfg.Thread.LastActivityAt.Equal(seedClockAt("10:00")) {
		t.Fatalf("configured: %+v", cfg.Thread)
	}

	r.at("10:45")
	res := r.send("sms", "", "What about next week?")

	if res.NewThread || res.ThreadID != t1 {
		t.Fatalf("45 < 60 min: the message should continue Thread 1: %+v", res)
	}
	th := r.thread(t1)
	if !th.LastActivityAt.Equal(seedClockAt("10:45")) || th.TurnCount != 2 || th.InactivityTimeoutMinutes != 60 {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d, timeout %d", th.LastActivityAt, th.TurnCount, th.InactivityTimeoutMinutes)
	}
	if n := len(r.seedThreadList()); n != 1 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
}

// ---------------------------------------------------------------------------
// Category 3: semantic linking.

// seedWeatherThenThursday is the setup of 3.1-3.1c: Thread 1 asks about the
// weather in New York (10:00) and next week (10:15); after 30 minutes of
// inactivity, "Oh, and what is it on Thursday?" starts Thread 2.
func seedWeatherThenThursday(t *testing.T, r *rig) (t1 string, res episodic.MessageResult) {
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

// seedWeatherThenTokyo is the setup of 3.2-3.2c: Thread 1 asks about the
// weather in New York; after 30 minutes, "Book me a flight to Tokyo".
func seedWeatherThenTokyo(t *testing.T, r *rig) (t1 string, res episodic.MessageResult) {
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

func TestEpisodic_3_1_SemanticContinuityAlgorithmic(t *testing.T) {
	r := newRig(t) // no model: the algorithmic assessment alone
	t1, res := seedWeatherThenThursday(t, r)
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
		Text: "Weather in New York\nWhat's the weather in New York?\nWhat about next week?", LastActive: seedClockAt("10:15"), MostRecent: true,
	}, seedClockAt("10:45"))
	if score != d.Algorithmic {
		t.Errorf("recorded score %.2f, Score gives %.2f", d.Algorithmic, score)
	}
	if !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Errorf("linked threads %q, want Thread 1", res.LinkedThreads)
	}
}

// seedJudge answers every linking request with the same judgement.
func seedJudge(related bool, confidence float64, reasoning string, signals ...string) *llmtest.Scripted {
	return &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		return llmtest.Text(judgeAnswer(related, confidence, reasoning, signals...))
	}}
}

// seedCheckJudgeRequest checks the model was shown Thread 1 and the new message.
func seedCheckJudgeRequest(t *testing.T, m *llmtest.Scripted, earlier []string, message string) {
	t.Helper()
	reqs := seedJudgeRequests(m)
	if len(reqs) != 1 {
		t.Fatalf("%d linking requests, want 1 (one earlier thread)", len(reqs))
	}
	q := reqs[0]
	content := seedLastUser(q)
	for _, want := range append([]string{"Earlier thread", "Title: Weather in New York", "Are these semantically related?"}, earlier...) {
		if !strings.Contains(content, want) {
			t.Errorf("the model's request should contain %q:\n%s", want, content)
		}
	}
	if got := seedNewMessageOf(q); got != message {
		t.Errorf("the model was asked about %q, want the current message %q", got, message)
	}
	if !strings.Contains(q.System, `"related"`) || !strings.Contains(q.System, `"confidence"`) || !q.JSON {
		t.Errorf("the model should be asked for JSON {related, confidence, ...}: %q", q.System)
	}
}

func TestEpisodic_3_1b_SemanticContinuityLLM(t *testing.T) {
	m := seedJudge(true, 0.92, "Both about weather in New York", "weather", "New York", "temporal_continuation")
	r := newRigWith(t, rigOptions{llm: m})
	_, res := seedWeatherThenThursday(t, r)

	seedCheckJudgeRequest(t, m, []string{"user: What's the weather in New York?", "user: What about next week?"}, "Oh, and what is it on Thursday?")
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
	stored := r.seedDecisions(res.ThreadID)
	if len(stored) != 1 || !reflect.DeepEqual(stored[0].Assessment, a) {
		t.Errorf("stored assessment %+v", stored)
	}
}

func TestEpisodic_3_1c_ParallelExecutionAndAgreement(t *testing.T) {
	m := seedJudge(true, 0.92, "Both about weather in New York", "weather", "New York", "temporal_continuation")
	r := newRigWith(t, rigOptions{llm: m})
	t1, res := seedWeatherThenThursday(t, r)
	d := res.Decision
	t.Logf("3.1c algorithmic score %.2f, model %.2f", d.Algorithmic, *d.LLM)

	if d.Algorithmic <= 0.7 {
		t.Errorf("algorithmic score %.2f, want > 0.7 (LINK)", d.Algorithmic)
	}
	if d.Agreement == nil || !*d.Agreement || d.Confidence != episodic.ConfidenceHigh || d.Decision != episodic.Link || d.DecidedBy != "both" || d.Disagreement {
		t.Errorf("decision %s, agreement %v, confidence %s, decided by %s; want LINK, agreement, HIGH, both", d.Decision, d.Agreement, d.Confidence, d.DecidedBy)
	}
	_, xs := r.seedEpisodes("")
	if len(xs) != 1 || !slices.Equal(xs[0].LinkedThreads, []string{t1, res.ThreadID}) || d.CrossThreadEpisode != xs[0].ID {
		t.Fatalf("cross-thread episodes %+v; want one linking Thread 1 and Thread 2 (the decision's %q)", xs, d.CrossThreadEpisode)
	}
	for _, id := range []string{t1, res.ThreadID} {
		if th := r.thread(id); !slices.Equal(th.CrossThreadEpisodes, []string{xs[0].ID}) {
			t.Errorf("thread %s cross_thread_episodes %q", id, th.CrossThreadEpisodes)
		}
	}
	// Both scores recorded: {algorithmic: <score>, llm: 0.92}.
	raw := r.seedDecisionsRaw(res.ThreadID)
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
		_, res := seedWeatherThenThursday(t, r)
		if msg, _ := failed.Load().(string); msg != "" {
			t.Fatal(msg)
		}
		if d := res.Decision; d.Algorithmic != 0.88 || *d.LLM != 0.92 || d.Confidence != episodic.ConfidenceHigh {
			t.Errorf("%+v", d)
		}
	})
}

func TestEpisodic_3_2_NoSemanticContinuityAlgorithmic(t *testing.T) {
	r := newRig(t)
	t1, res := seedWeatherThenTokyo(t, r)
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

func TestEpisodic_3_2b_NoSemanticContinuityLLM(t *testing.T) {
	m := seedJudge(false, 0.88, "Different topics - weather vs. flight booking", "weather", "flight")
	r := newRigWith(t, rigOptions{llm: m})
	_, res := seedWeatherThenTokyo(t, r)

	seedCheckJudgeRequest(t, m, []string{"user: What's the weather in New York?"}, "Book me a flight to Tokyo")
	a := res.Decision.Assessment
	if !a.Available || a.Related || a.Confidence <= 0.7 || a.Confidence != 0.88 {
		t.Errorf("assessment %+v, want not related with confidence 0.88", a)
	}
	if a.Reasoning != "Different topics - weather vs. flight booking" {
		t.Errorf("reasoning %q", a.Reasoning)
	}
}

func TestEpisodic_3_2c_ParallelAgreementNoLink(t *testing.T) {
	m := seedJudge(false, 0.88, "Different topics - weather vs. flight booking")
	r := newRigWith(t, rigOptions{llm: m})
	t1, res := seedWeatherThenTokyo(t, r)
	d := res.Decision
	t.Logf("3.2c algorithmic score %.2f, model %.2f", d.Algorithmic, *d.LLM)

	if d.Algorithmic >= 0.7 || d.Decision != episodic.DontLink {
		t.Errorf("algorithmic %.2f, decision %s; want < 0.7, DON'T_LINK", d.Algorithmic, d.Decision)
	}
	if d.Agreement == nil || !*d.Agreement || d.Confidence != episodic.ConfidenceHigh || d.DecidedBy != "both" || d.Disagreement {
		t.Errorf("agreement %v, confidence %s, decided by %s; want agreement, HIGH", d.Agreement, d.Confidence, d.DecidedBy)
	}
	if _, xs := r.seedEpisodes(""); len(xs) != 0 {
		t.Errorf("no cross-thread episode expected: %+v", xs)
	}
	if th := r.thread(t1); len(th.CrossThreadEpisodes) != 0 {
		t.Errorf("Thread 1: %+v", th.Thread)
	}
	// {algorithmic: <score>, llm: 0.12}: the model's probability of related.
	raw := r.seedDecisionsRaw(res.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != d.Algorithmic || raw[0]["llm"] != 0.12 || raw[0]["agreement"] != true {
		t.Errorf("recorded %v", raw)
	}
}

// seedDisagree runs seed 3.2d/3.2e: Thread 1, then Thread 2 an hour later,
// the algorithmic score forced to alg, the model answering related/conf.
func seedDisagree(t *testing.T, first, second string, alg float64, related bool, conf float64) (*rig, *episodic.Decision) {
	t.Helper()
	m := seedJudge(related, conf, "scripted")
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
	if !res.NewThread || res.Decision == nil || scored.Load() != 1 || len(seedJudgeRequests(m)) != 1 {
		t.Fatalf("Thread 2 should start, scored once and judged once: %+v", res)
	}
	real, _ := episodic.Score(second, episodic.CandidateText{Text: first + "\n" + first, LastActive: seedClockAt("10:00"), MostRecent: true}, seedClockAt("11:00"))
	t.Logf("(the real scorer gives %.2f for this pair; the seed's %.2f is forced)", real, alg)
	return r, res.Decision
}

func TestEpisodic_3_2d_DisagreementAlgorithmLinks(t *testing.T) {
	r, d := seedDisagree(t, "What's the weather in New York?", "What about the weather in Boston?", 0.72, false, 0.65)

	if d.Agreement == nil || *d.Agreement || d.Confidence != episodic.ConfidenceUncertain || !d.Disagreement {
		t.Errorf("agreement %v, confidence %s, disagreement %v; want NO, UNCERTAIN, true", d.Agreement, d.Confidence, d.Disagreement)
	}
	// Algorithmic confidence 0.72 > the model's 0.65: the algorithm decides.
	if d.DecidedBy != "algorithmic" || d.Decision != episodic.Link {
		t.Errorf("decided by %s: %s; want the algorithm: LINK", d.DecidedBy, d.Decision)
	}
	raw := r.seedDecisionsRaw(d.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != 0.72 || raw[0]["llm"] != 0.35 || raw[0]["disagreement"] != true || raw[0]["decision"] != "LINK" {
		t.Errorf("recorded %v, want {algorithmic: 0.72, llm: 0.35, disagreement: true}", raw)
	}

	c := episodic.Combine(0.72, episodic.Assessment{Available: true, Related: false, Confidence: 0.65}, 0.7)
	if c.Decision != episodic.Link || c.DecidedBy != "algorithmic" || c.Confidence != episodic.ConfidenceUncertain || !c.Disagreement ||
		c.Agreement == nil || *c.Agreement || c.LLM == nil || *c.LLM != 0.35 || c.Algorithmic != 0.72 {
		t.Errorf("Combine(0.72, not related 0.65) = %+v", c)
	}
}

func TestEpisodic_3_2e_DisagreementLLMLinks(t *testing.T) {
	r, d := seedDisagree(t, "I'm planning a trip to Paris", "What's the best time to visit?", 0.68, true, 0.85)

	if d.Agreement == nil || *d.Agreement || d.Confidence != episodic.ConfidenceUncertain || !d.Disagreement {
		t.Errorf("agreement %v, confidence %s, disagreement %v; want NO, UNCERTAIN, true", d.Agreement, d.Confidence, d.Disagreement)
	}
	// Algorithmic confidence 0.68 < the model's 0.85: the model decides.
	if d.DecidedBy != "llm" || d.Decision != episodic.Link {
		t.Errorf("decided by %s: %s; want the model: LINK", d.DecidedBy, d.Decision)
	}
	raw := r.seedDecisionsRaw(d.ThreadID)
	if len(raw) != 1 || raw[0]["algorithmic"] != 0.68 || raw[0]["llm"] != 0.85 || raw[0]["disagreement"] != true || raw[0]["decision"] != "LINK" {
		t.Errorf("recorded %v, want {algorithmic: 0.68, llm: 0.85, disagreement: true}", raw)
	}
	if _, xs := r.seedEpisodes(""); len(xs) != 1 {
		t.Errorf("the link should make a cross-thread episode: %+v", xs)
	}

	c := episodic.Combine(0.68, episodic.Assessment{Available: true, Related: true, Confidence: 0.85}, 0.7)
	if c.Decision != episodic.Link || c.DecidedBy != "llm" || c.Confidence != episodic.ConfidenceUncertain || !c.Disagreement ||
		c.Agreement == nil || *c.Agreement || c.LLM == nil || *c.LLM != 0.85 || c.Algorithmic != 0.68 {
		t.Errorf("Combine(0.68, related 0.85) = %+v", c)
	}
}

// seedSeries makes one linking decision per message: each message starts a
// new thread (on sms, gap after the previous one) scored against the
// previous thread only (MaxCandidates 1), its score scores[i]. It returns
// the decisions in order.
type seedSeries struct {
	r      *rig
	model  *llmtest.Scripted
	scores map[string]float64
	next   time.Time
	gap    time.Duration
}

func seedNewSeries(t *testing.T, model *llmtest.Scripted, start time.Time, gap time.Duration) *seedSeries {
	s := &seedSeries{model: model, scores: map[string]float64{}, next: start, gap: gap}
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
func (s *seedSeries) decide(message string, score float64) *episodic.Decision {
	s.r.t.Helper()
	s.scores[message] = score
	s.next = s.next.Add(s.gap)
	s.r.clock.Set(s.next)
	res := s.r.send("sms", "", message)
	if !res.NewThread || len(res.Decisions) != 1 {
		s.r.t.Fatalf("%q should start a thread with one decision: %+v", message, res)
	}
	return res.Decision
}

func TestEpisodic_3_3_OutcomeValidation(t *testing.T) {
	// How the user goes on after each decision, by the seed's four cases.
	type behaviour struct {
		link     bool   // the decision expected
		followUp string // what the user says next, in the new thread
	}
	behaviours := []behaviour{
		{true, "Great, and should I pack an umbrella?"},    // LINK, the conversation continues naturally
		{true, "No, that's not what I meant."},             // LINK, wrongly
		{false, "Hmm, didn't we talk about this?"},         // DON'T_LINK, wrongly
		{false, "Thanks. Also, what's a good pasta dish?"}, // DON'T_LINK, a fresh conversation
	}
	// monitor is the outcome the user's behaviour shows (seed 3.3).
	monitor := func(decision, followUp string) string {
		switch {
		case decision == episodic.Link && strings.Contains(followUp, "not what I meant"),
			decision == episodic.DontLink && strings.Contains(followUp, "didn't we talk about this"):
			return episodic.OutcomeIncorrect
		}
		return episodic.OutcomeCorrect
	}
	related := map[string]bool{}
	var mu sync.Mutex
	model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		mu.Lock()
		rel := related[seedNewMessageOf(req)]
		mu.Unlock()
		return llmtest.Text(judgeAnswer(rel, 0.9, "scripted"))
	}}
	s := seedNewSeries(t, model, t0, time.Hour)
	r := s.r

	type marked struct {
		d       *episodic.Decision
		outcome string
		turn    string
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
		if (d.Decision == episodic.Link) != b.link || d.LLM == nil || d.Agreement == nil || !*d.Agreement {
			t.Fatalf("decision %d: %+v", i, d)
		}
		// Five minutes later the user goes on, in a turn; the outcome it
		// shows is recorded in that turn.
		turn := fmt.Sprintf("turn-%03d", i)
		r.clock.Set(s.next.Add(5 * time.Minute))
		var res episodic.MessageResult
		r.seedDoTurn(turn, "thread.message", map[string]string{"channel": "sms", "text": b.followUp}, &res)
		if res.ThreadID != d.ThreadID {
			t.Fatalf("the follow-up went to %s, not the new thread %s", res.ThreadID, d.ThreadID)
		}
		outcome := monitor(d.Decision, b.followUp)
		var out struct {
			Decision episodic.Decision `json:"decision"`
		}
		r.seedDoTurn(turn, "episode.outcome", map[string]string{"decision_id": d.ID, "outcome": outcome}, &out)
		if out.Decision.Outcome != outcome || out.Decision.OutcomeAt == nil || !out.Decision.OutcomeAt.Equal(s.next.Add(5*time.Minute)) {
			t.Fatalf("marked %+v", out.Decision)
		}
		all = append(all, marked{d, outcome, turn})
	}

	// Stored: every decision with its scores, decision, agreement and outcome.
	stored := map[string]*episodic.Decision{}
	for _, d := range r.seedDecisions("") {
		stored[d.ID] = d
	}
	if len(stored) != 100 {
		t.Fatalf("%d decisions stored, want 100", len(stored))
	}
	counts := map[string]int{}
	for _, m := range all {
		d := stored[m.d.ID]
		if d == nil || d.Outcome != m.outcome || d.Decision != m.d.Decision || d.Algorithmic != m.d.Algorithmic ||
			d.LLM == nil || *d.LLM != *m.d.LLM || d.Agreement == nil {
			t.Errorf("stored %+v; want outcome %s", d, m.outcome)
			continue
		}
		counts[d.Decision+" "+d.Outcome]++
		// In the turn's trace: the follow-up and the outcome it showed.
		entries := r.seedTraceOf(m.turn, "")
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
		}
		json.Unmarshal(entries[1].Data, &data)
		if data.DecisionID != m.d.ID || data.Outcome != m.outcome || data.Decision != m.d.Decision {
			t.Errorf("turn %s traced %+v", m.turn, data)
		}
	}
	want := map[string]int{"LINK correct": 25, "LINK incorrect": 25, "DON'T_LINK incorrect": 25, "DON'T_LINK correct": 25}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("outcomes %v, want %v", counts, want)
	}
	if n := len(r.seedTraceOf("", "episode.outcome")); n != 100 {
		t.Errorf("%d episode.outcome trace entries, want 100", n)
	}

	// A bad outcome or an unknown decision fails, naming the field, and
	// changes nothing.
	before, _ := json.Marshal(r.seedDecisionsRaw(""))
	for _, c := range []struct {
		args  map[string]string
		kind  errs.Kind
		field string
	}{
		{map[string]string{"decision_id": all[0].d.ID, "outcome": "maybe"}, errs.Validation, "outcome"},
		{map[string]string{"decision_id": all[0].d.ID, "outcome": ""}, errs.Validation, "outcome"},
		{map[string]string{"decision_id": "no-such-decision", "outcome": "correct"}, errs.NotFound, "decision_id"},
	} {
		_, err := r.try("episode.outcome", c.args)
		if errs.KindOf(err) != c.kind || seedErrField(err) != c.field {
			t.Errorf("episode.outcome %v: %v (%s, field %q); want %s naming %s", c.args, err, errs.KindOf(err), seedErrField(err), c.kind, c.field)
		}
	}
	after, _ := json.Marshal(r.seedDecisionsRaw(""))
	if string(before) != string(after) {
		t.Error("a failed episode.outcome changed the decisions")
	}
	if n := len(r.seedTraceOf("", "episode.outcome")); n != 100 {
		t.Errorf("%d episode.outcome trace entries after the failures, want 100", n)
	}
}

func TestEpisodic_3_4_ThresholdAdjustment(t *testing.T) {
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

	s := seedNewSeries(t, nil, t0, 31*time.Minute)
	r := s.r
	for i, p := range order {
		d := s.decide(fmt.Sprintf("Message %d of the series.", i), p.score)
		if d.Threshold != 0.7 || (d.Decision == episodic.Link) != (p.score >= 0.7) {
			t.Fatalf("decision %d at %.2f: %s at threshold %.2f", i, p.score, d.Decision, d.Threshold)
		}
		r.do("episode.outcome", map[string]string{"decision_id": d.ID, "outcome": p.outcome}, nil)
	}

	r.clock.Set(time.Date(2025, 11, 7, 18, 0, 0, 0, time.UTC))
	var rec episodic.TuningRecord
	r.do("episode.tune", map[string]any{}, &rec)
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
	json.Unmarshal(b, &shape)
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

	tu := r.seedTuning()
	if tu.Threshold != 0.72 || len(tu.History) != 1 || !reflect.DeepEqual(tu.History[0], rec) {
		t.Errorf("episode.tuning: threshold %.2f, history %+v", tu.Threshold, tu.History)
	}
	// The next decision uses 0.72: a 0.71 that linked before no longer does.
	d := s.decide("One more message after tuning.", 0.71)
	if d.Threshold != 0.72 || d.Decision != episodic.DontLink {
		t.Errorf("after tuning, 0.71 decided %s at threshold %.2f; want DON'T_LINK at 0.72", d.Decision, d.Threshold)
	}
}

func TestEpisodic_3_5_PromptImprovement(t *testing.T) {
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
		kind := kindOf[seedNewMessageOf(req)]
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
	s := seedNewSeries(t, model, t0, 31*time.Minute)
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
			r.do("episode.outcome", map[string]string{"decision_id": d.ID, "outcome": episodic.OutcomeCorrect}, nil)
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
	judgedBefore := len(seedJudgeRequests(model))
	for _, q := range seedJudgeRequests(model) {
		if strings.Contains(q.System, "temporal continuity") {
			t.Fatal("the first prompt already has the temporal guidance")
		}
	}

	var rec episodic.TuningRecord
	r.do("episode.tune", map[string]any{}, &rec)
	t.Logf("3.5 first tuning: %+v", rec)
	if len(rec.GuidanceAdded) != 1 || !strings.Contains(rec.GuidanceAdded[0], "temporal continuity") || !strings.Contains(rec.GuidanceAdded[0], "Oh, and") {
		t.Fatalf("guidance added %q; want temporal continuity guidance citing \"Oh, and...\"", rec.GuidanceAdded)
	}
	tu := r.seedTuning()
	latest := tu.Prompts[len(tu.Prompts)-1]
	if latest.Version != 2 || rec.PromptVersion != 2 || !slices.Contains(latest.Guidance, rec.GuidanceAdded[0]) || latest.Reason == "" {
		t.Errorf("prompt versions %+v", tu.Prompts)
	}

	after, ds2 := batch(1)
	reqs := seedJudgeRequests(model)
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
	r.do("episode.tune", map[string]any{}, &rec2)
	if len(rec2.GuidanceAdded) != 0 || rec2.Metrics.LLMAccuracy == nil || rec.Metrics.LLMAccuracy == nil || *rec2.Metrics.LLMAccuracy <= *rec.Metrics.LLMAccuracy {
		t.Errorf("second tuning %+v after %+v", rec2, rec)
	}
}

// seedWeatherInTwoCities: Thread 1 about New York (10:00), Thread 2 about
// Boston (10:45, after 45 minutes).
func seedWeatherInTwoCities(t *testing.T, r *rig) (t1, t2 string) {
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

// seedCheckLinkedToAll checks that t3 links to every one of earlier in one
// cross-thread episode holding them all, in creation order.
func seedCheckLinkedToAll(t *testing.T, r *rig, t3 string, earlier ...string) {
	t.Helper()
	all := append(slices.Clone(earlier), t3)
	_, xs := r.seedEpisodes("")
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

func TestEpisodic_3_6_MultipleCrossThreadEpisodes(t *testing.T) {
	r := newRig(t)
	t1, t2 := seedWeatherInTwoCities(t, r)

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
	seedCheckLinkedToAll(t, r, res.ThreadID, t1, t2)
	if x := res.Decision.CrossThreadEpisode; x == "" || byCand[t1].CrossThreadEpisode != x || byCand[t2].CrossThreadEpisode != x {
		t.Errorf("both links should name the one cross-thread episode: %q, %q", byCand[t1].CrossThreadEpisode, byCand[t2].CrossThreadEpisode)
	}
}

// ---------------------------------------------------------------------------
// Category 4: context retrieval.

func TestEpisodic_4_1_ExplicitChannelContext(t *testing.T) {
	r := newRig(t)
	// An earlier thread Thread 1 continues, so that there is something an
	// implicit channel would pull in.
	r.at("09:00")
	t0id := r.send("sms", "", "Is it going to rain in New York today?").ThreadID
	r.answer("sms", t0id, "No, dry all day.")
	r.at("10:00")
	first := r.seedSendTitled("web", "", "Weather in New York", "What's the weather in New York this week?")
	t1 := first.ThreadID
	if first.Decision == nil || first.Decision.Decision != episodic.Link {
		t.Fatalf("Thread 1 should continue the earlier weather thread: %+v", first.Decision)
	}
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.seedSendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.answer("web", t2, "Booked: JL 5 on Friday.")
	r.at("10:10") // the user selects Thread 1
	r.send("web", t1, "What about Thursday?")

	c := r.seedContext(t1, "", "")

	if !c.Explicit || c.Channel != "web" || c.ThreadID != t1 {
		t.Errorf("context of %s on %s (explicit %v)", c.ThreadID, c.Channel, c.Explicit)
	}
	if len(c.Threads) != 1 || c.Threads[0].ID != t1 || !c.Threads[0].Current || c.Continuing {
		t.Errorf("threads %+v (continuing %v); want Thread 1 only", c.Threads, c.Continuing)
	}
	if c.Recap != "You were asking about weather in New York" {
		t.Errorf("recap %q", c.Recap)
	}
	if !strings.Contains(c.Text, "- What's the weather in New York this week? (Sunny, 72°F)") {
		t.Errorf("the previous answer should be in the prompt:\n%s", c.Text)
	}
	if c.CurrentQuestion != "What about Thursday?" {
		t.Errorf("current question %q", c.CurrentQuestion)
	}
	for _, not := range []string{"rain", "dry all day", "Tokyo", "Continuing"} {
		if strings.Contains(c.Text, not) {
			t.Errorf("the explicit context should not pull %q in:\n%s", not, c.Text)
		}
	}
	// The same thread on an implicit channel would pull the earlier one.
	if implicit := r.seedContext(t1, "sms", ""); len(implicit.Threads) != 2 || implicit.Threads[0].ID != t0id || !implicit.Continuing {
		t.Errorf("on sms the linked thread should come in: %+v", implicit.Threads)
	}
}

// seedWeatherFollowUp: seed 4.2's setup. Thread 1 "Weather in New York" from
// 10:00 to 10:15; Thread 2 "Weather follow-up" from 10:45, linked to it.
func seedWeatherFollowUp(t *testing.T, r *rig) (t1, t2 string) {
	t.Helper()
	r.at("10:00")
	t1 = r.send("sms", "", "What's the weather in New York?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")
	r.at("10:15")
	r.send("sms", "", "What about next week?")
	r.answer("sms", t1, "Mixed, 65-75°F.")
	r.at("10:45")
	res := r.seedSendTitled("sms", "", "Weather follow-up", "Oh, and is it going to rain this weekend?")
	t2 = res.ThreadID
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("Thread 2 should start linked to Thread 1: %+v", res)
	}
	r.answer("sms", t2, "Light rain on Saturday.")
	return t1, t2
}

func TestEpisodic_4_2_ImplicitChannelPulling(t *testing.T) {
	r := newRig(t)
	t1, t2 := seedWeatherFollowUp(t, r)
	r.at("10:50")
	if res := r.send("sms", "", "What about Thursday?"); res.ThreadID != t2 {
		t.Fatalf("the new turn should be in Thread 2: %+v", res)
	}

	c := r.seedContext(t2, "", "")

	if c.Explicit || c.Channel != "sms" {
		t.Errorf("channel %s, explicit %v", c.Channel, c.Explicit)
	}
	if len(c.Threads) != 2 || c.Threads[0].ID != t1 || c.Threads[1].ID != t2 || !c.Threads[1].Current || c.Threads[0].Current {
		t.Fatalf("threads %+v; want Thread 1 (via the cross-thread episode) then Thread 2", c.Threads)
	}
	if c.Recap != "You were asking about weather in New York" {
		t.Errorf("recap %q", c.Recap)
	}
	if !c.Continuing || c.GapMinutes != 30 || !strings.Contains(c.Text, "Continuing from previous thread") {
		t.Errorf("continuing %v after %d min:\n%s", c.Continuing, c.GapMinutes, c.Text)
	}
	for _, want := range []string{
		"- What's the weather in New York? (Sunny, 72°F)",
		"- What about next week? (Mixed, 65-75°F)",
		"- Oh, and is it going to rain this weekend? (Light rain on Saturday)",
		"Current question: What about Thursday?",
	} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("the prompt should include %q:\n%s", want, c.Text)
		}
	}
}

func TestEpisodic_4_3_ContextInjectionFormat(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.seedSendTitled("sms", "", "Weather in New York", "What's the weather tomorrow?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")
	r.at("10:05")
	r.send("sms", "", "What about next week?")
	r.answer("sms", t1, "Mixed, 65-75°F.")
	r.at("10:35") // exactly 30 minutes after the last activity
	res := r.send("sms", "", "Oh, and what is it on Thursday?")
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("a 30-minute break should start Thread 2, linked to Thread 1: %+v", res)
	}

	got := r.seedContext(res.ThreadID, "", "").Text

	golden := filepath.Join("testdata", "context_4_3.golden")
	if *seedUpdateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run 4_3 -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("context text differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
	// The seed's structure, line by line (so that -update cannot bless a
	// different one).
	wantLines := []string{
		"You were discussing weather in New York.",
		"Previous questions:",
		"- What's the weather tomorrow? (Sunny, 72°F)",
		"- What about next week? (Mixed, 65-75°F)",
		"",
		"Current question: What is it on Thursday?",
		"(Continuing from previous thread after 30 min break)",
	}
	if lines := strings.Split(got, "\n"); !slices.Equal(lines, wantLines) {
		t.Errorf("lines %q\nwant  %q", lines, wantLines)
	}
}

// ---------------------------------------------------------------------------
// Category 5: compaction.

// seedFiveWeatherTurns is Thread 1: five turns about the weather, 10:00-10:10.
var seedFiveWeatherTurns = []struct{ speaker, text string }{
	{"user", "What's the weather in New York?"},
	{"assistant", "Sunny, 72°F in Manhattan."},
	{"user", "What about next week?"},
	{"assistant", "Mixed, 65-75°F with rain on Tuesday."},
	{"user", "I prefer Celsius, by the way."},
}

func seedSendFiveWeatherTurns(r *rig) string {
	r.at("10:00")
	id := r.send("sms", "", seedFiveWeatherTurns[0].text).ThreadID
	for i, u := range seedFiveWeatherTurns[1:] {
		r.clock.Set(seedClockAt("10:00").Add(time.Duration(2*(i+1)) * time.Minute))
		if u.speaker == "assistant" {
			r.answer("sms", id, u.text)
		} else {
			r.send("sms", "", u.text)
		}
	}
	return id
}

// seedCheckCompacted checks a compacted episode: summaries at three tiers,
// skills, its raw turns archived and retrievable.
func seedCheckCompacted(t *testing.T, r *rig, epID, reason string, texts []string) episodic.EpisodeView {
	t.Helper()
	v := r.seedEpisode(epID)
	if v.Status != episodic.EpisodeCompacted || v.Reason != reason || v.CompactedAt == nil || v.ClosedAt == nil {
		t.Errorf("episode %s: status %s, reason %q, closed %v, compacted %v; want compacted, %s", epID, v.Status, v.Reason, v.ClosedAt, v.CompactedAt, reason)
	}
	if v.Summaries == nil || len(v.Summaries.Micro) == 0 || v.Summaries.Meso == "" || v.Summaries.Macro == "" {
		t.Fatalf("summaries %+v; want micro, meso and macro", v.Summaries)
	}
	for _, m := range v.Summaries.Micro {
		if m.Text == "" {
			t.Errorf("empty micro summary of turns %v", m.Turns)
		}
	}
	if first, last := v.Summaries.Micro[0].Turns[0], v.Summaries.Micro[len(v.Summaries.Micro)-1].Turns[1]; first != v.FirstTurn || last != v.LastTurn {
		t.Errorf("micro summaries cover turns %d-%d, the episode %d-%d", first, last, v.FirstTurn, v.LastTurn)
	}
	if len(v.Skills) == 0 {
		t.Error("no skills extracted")
	}
	if !slices.Equal(seedAllTexts(v.Turns), texts) {
		t.Errorf("episode.get turns %q, want the raw turns %q", seedAllTexts(v.Turns), texts)
	}
	for _, u := range v.Turns {
		if !u.Archived || u.EpisodeID != epID {
			t.Errorf("turn %d: archived %v, episode %s", u.Number, u.Archived, u.EpisodeID)
		}
	}
	return v
}

func TestEpisodic_5_1_CompactionOnThreadEnd(t *testing.T) {
	r := newRig(t)
	t1 := seedSendFiveWeatherTurns(r)
	r.at("10:45") // 37 minutes after the last turn
	res := r.send("sms", "", "Book me a flight to Tokyo")
	if !res.NewThread || res.EndedThread != t1 {
		t.Fatalf("Thread 2 should start and end Thread 1: %+v", res)
	}
	th := r.seedLiveThread(t1) // reading settles the compaction
	if len(th.Episodes) != 1 || !slices.Equal(res.Compacting, th.Episodes) {
		t.Fatalf("Thread 1's episodes %q, compacting %q", th.Episodes, res.Compacting)
	}
	var texts []string
	for _, u := range seedFiveWeatherTurns {
		texts = append(texts, u.text)
	}
	v := seedCheckCompacted(t, r, th.Episodes[0], "thread_end", texts)
	if v.TurnCount != 5 || v.FirstTurn != 1 || v.LastTurn != 5 {
		t.Errorf("episode turns %d (%d-%d), want 5 (1-5)", v.TurnCount, v.FirstTurn, v.LastTurn)
	}
	if !strings.Contains(v.Summaries.Meso, "New York") {
		t.Errorf("the episode's summary should say what it was about: %q", v.Summaries.Meso)
	}
	var kinds []string
	for _, s := range v.Skills {
		kinds = append(kinds, s.Kind+": "+s.Text)
	}
	if !slices.Contains(kinds, "preference: I prefer Celsius, by the way") {
		t.Errorf("skills %q should include the user's preference", kinds)
	}
	if th.Status != episodic.StatusCompacted || th.TurnCount != 5 || len(th.Turns) != 0 {
		t.Errorf("Thread 1: status %s, turn_count %d, %d live turns; want compacted, 5, 0", th.Status, th.TurnCount, len(th.Turns))
	}
	all := r.thread(t1) // with the archived turns
	if !slices.Equal(seedAllTexts(all.Turns), texts) {
		t.Errorf("archived turns %q", seedAllTexts(all.Turns))
	}
	for _, u := range all.Turns {
		if !u.Archived {
			t.Errorf("turn %d not archived", u.Number)
		}
	}
}

func TestEpisodic_5_2_CompactionOnSizeThreshold(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	var t1 string
	var texts []string
	for i := range 50 { // 25 questions and their answers, a minute apart
		r.clock.Set(seedClockAt("10:00").Add(time.Duration(i) * time.Minute))
		day := i/2 + 1
		if i%2 == 0 {
			text := fmt.Sprintf("What's the forecast for day %d in Chicago?", day)
			res := r.send("sms", "", text)
			if t1 == "" {
				t1 = res.ThreadID
			} else if res.ThreadID != t1 || res.NewThread {
				t.Fatalf("turn %d left the thread", i+1)
			}
			texts = append(texts, text)
		} else {
			text := fmt.Sprintf("Day %d: %d°F and sunny.", day, 60+day)
			r.answer("sms", t1, text)
			texts = append(texts, text)
		}
	}
	ep1 := r.thread(t1).Episodes
	if len(ep1) != 1 {
		t.Fatalf("after 50 turns: episodes %q, want one", ep1)
	}

	r.at("10:50")
	res := r.send("sms", "", "And what about day 26?") // turn 51
	if res.ThreadID != t1 || res.TurnCount != 51 || !slices.Equal(res.Compacting, ep1) {
		t.Fatalf("turn 51: %+v; want thread 1, turn 51, compacting episode 1", res)
	}
	r.ep.Settle()

	th := r.thread(t1)
	if len(th.Episodes) != 2 || th.Episodes[0] != ep1[0] {
		t.Fatalf("episodes %q; want episode 1 and a new one", th.Episodes)
	}
	v := seedCheckCompacted(t, r, ep1[0], "size", texts)
	if v.TurnCount != 50 || v.FirstTurn != 1 || v.LastTurn != 50 {
		t.Errorf("episode 1: %d turns (%d-%d), want 50 (1-50)", v.TurnCount, v.FirstTurn, v.LastTurn)
	}
	ep2 := r.seedEpisode(th.Episodes[1])
	if ep2.Number != 2 || ep2.Status != episodic.EpisodeOpen || ep2.TurnCount != 1 || ep2.FirstTurn != 51 ||
		len(ep2.Turns) != 1 || ep2.Turns[0].Text != "And what about day 26?" || res.Turn.EpisodeID != ep2.ID {
		t.Errorf("episode 2: %+v; want it open with turn 51", ep2)
	}
	if th.Status != episodic.StatusActive || th.TurnCount != 51 {
		t.Errorf("thread: status %s, turn_count %d; want active, 51", th.Status, th.TurnCount)
	}
}

func TestEpisodic_5_3_RetrievalAfterCompaction(t *testing.T) {
	r := newRig(t)
	t1 := seedSendFiveWeatherTurns(r)
	r.at("10:45")
	res := r.send("sms", "", "Oh, and what is it on Thursday?")
	t2 := res.ThreadID
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("Thread 2 should be linked to Thread 1: %+v", res)
	}
	r.ep.Settle()
	ep1 := r.seedEpisode(r.thread(t1).Episodes[0])
	if ep1.Status != episodic.EpisodeCompacted {
		t.Fatalf("episode 1 is %s", ep1.Status)
	}
	r.answer("sms", t2, "Thursday: 20°C and clear.")
	r.at("10:50")
	r.send("sms", "", "Should I bring an umbrella?") // a new turn in Thread 2

	c := r.seedContext(t2, "", "")

	if len(c.Threads) != 2 || c.Threads[0].ID != t1 || c.Threads[0].Compacted != 1 {
		t.Fatalf("threads %+v; want Thread 1 with its compacted episode, then Thread 2", c.Threads)
	}
	if !slices.Contains(c.Summaries, ep1.Summaries.Meso) {
		t.Errorf("episode 1's summary %q not among %q", ep1.Summaries.Meso, c.Summaries)
	}
	for _, s := range ep1.Skills {
		if !slices.Contains(c.Skills, s) {
			t.Errorf("episode 1's skill %+v not available: %+v", s, c.Skills)
		}
	}
	for _, want := range []string{
		"(preference) I prefer Celsius, by the way",
		"- What's the weather in New York? (Sunny, 72°F in Manhattan)",
		"- Oh, and what is it on Thursday? (Thursday: 20°C and clear)",
		"Current question: Should I bring an umbrella?",
		"(Continuing from previous thread after 37 min break)",
	} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("the prompt should include %q:\n%s", want, c.Text)
		}
	}
	// The raw turns, if needed.
	var texts []string
	for _, u := range seedFiveWeatherTurns {
		texts = append(texts, u.text)
	}
	if !slices.Equal(seedAllTexts(ep1.Turns), texts) {
		t.Errorf("episode.get turns %q, want %q", seedAllTexts(ep1.Turns), texts)
	}
}

// ---------------------------------------------------------------------------
// Category 6: integration, through chat.send.

// seedNewChatRig is an engine as engram runs it for chat: the history (which
// chat.send records the exchange in) and the episodic layer, with the given model.
func seedNewChatRig(t *testing.T, model llm.Provider) *rig {
	t.Helper()
	r := &rig{t: t, clock: clock.NewFixed(t0)}
	e, err := core.Open(core.Options{
		InMemory: true, Clock: r.clock, IDSeed: "episodic chat test", LLM: model,
		Subsystems: []core.Subsystem{
			func(env *kit.Env) error { _, err := history.Register(env, history.Options{}); return err },
			func(env *kit.Env) error {
				var err error
				r.ep, err = episodic.Register(env, episodic.Options{})
				return err
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	t.Cleanup(func() { e.Close() })
	return r
}

// seedSi is a scripted assistant: it judges links as the seed's model does
// (related, 0.92), and answers from its system prompt — opening with the
// recap when the context says it continues an earlier thread, and naming
// the subject the context gives.
func seedSi() *llmtest.Scripted {
	return &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		if req.JSON {
			return llmtest.Text(judgeAnswer(true, 0.92, "Both about weather in New York", "weather", "New York", "temporal_continuation"))
		}
		var recap, topic string
		for _, line := range strings.Split(req.System, "\n") {
			if r, ok := strings.CutPrefix(line, "Recap: "); ok {
				recap = strings.TrimSuffix(r, ".")
			}
			if tp, ok := strings.CutPrefix(line, "You were discussing "); ok {
				topic = strings.TrimSuffix(tp, ".")
			}
		}
		var b strings.Builder
		if recap != "" && strings.Contains(req.System, "(Continuing from previous thread") {
			b.WriteString(recap + ". ")
		}
		q := seedLastUser(req)
		switch {
		case strings.Contains(q, "weather in New York"):
			b.WriteString("Sunny, 72°F.")
		case strings.Contains(q, "next week"):
			fmt.Fprintf(&b, "For %s next week: mixed, 65-75°F.", topic)
		case strings.Contains(q, "Thursday"):
			fmt.Fprintf(&b, "On %s: Thursday will be 70°F and clear.", topic)
		case strings.Contains(q, "flight"):
			b.WriteString("Booked: JL 5 on Friday.")
		default:
			b.WriteString("I don't know.")
		}
		return llmtest.Text(b.String())
	}}
}

func (r *rig) seedChat(channel, threadID, text string) (core.ChatResult, episodic.MessageResult) {
	r.t.Helper()
	var res core.ChatResult
	r.do("chat.send", map[string]string{"channel": channel, "thread_id": threadID, "text": text}, &res)
	var routed episodic.MessageResult
	if err := json.Unmarshal(res.Thread, &routed); err != nil {
		r.t.Fatalf("chat.send routed %s: %v", res.Thread, err)
	}
	if !res.Answered {
		r.t.Fatalf("no answer: %+v", res)
	}
	return res, routed
}

func TestEpisodic_6_1_FullWorkflowImplicit(t *testing.T) {
	model := seedSi()
	r := seedNewChatRig(t, model)
	r.at("10:00")
	_, m1 := r.seedChat("sms", "", "What's the weather in New York?")
	r.at("10:05")
	_, m2 := r.seedChat("sms", "", "What about next week?")
	r.at("10:45")
	res, m3 := r.seedChat("sms", "", "Oh, and what is it on Thursday?")

	t1, t2 := m1.ThreadID, m3.ThreadID
	if !m1.NewThread || m2.ThreadID != t1 || m2.NewThread || !m3.NewThread || t2 == t1 {
		t.Fatalf("threads: %s (new %v), %s, %s (new %v); want Thread 1 for turns 1-2 and Thread 2 for turn 3", t1, m1.NewThread, m2.ThreadID, t2, m3.NewThread)
	}
	if got := seedUserTexts(r.thread(t1).Turns); !slices.Equal(got, []string{"What's the weather in New York?", "What about next week?"}) {
		t.Errorf("Thread 1's questions %q", got)
	}
	if got := seedUserTexts(r.thread(t2).Turns); !slices.Equal(got, []string{"Oh, and what is it on Thursday?"}) {
		t.Errorf("Thread 2's questions %q", got)
	}
	if d := m3.Decision; d == nil || d.Decision != episodic.Link || d.Confidence != episodic.ConfidenceHigh {
		t.Errorf("Thread 2's link: %+v", d)
	}
	seedCheckLinkedToAll(t, r, t2, t1)

	// Thread 1's context pulled into the prompt of Thread 2's first turn.
	sys := res.Prompt.System
	for _, want := range []string{
		"From this conversation thread and those it continues:\nYou were discussing weather in New York.\nPrevious questions:\n" +
			"- What's the weather in New York? (Sunny, 72°F)\n" +
			"- What about next week? (For weather in New York next week: mixed, 65-75°F)\n\n" +
			"Current question: What is it on Thursday?\n" +
			"(Continuing from previous thread after 40 min break)",
		"Recap: You were asking about weather in New York.",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt should contain %q:\n%s", want, sys)
		}
	}
	reqs := model.Requests()
	if last := reqs[len(reqs)-1]; last.System != sys {
		t.Errorf("the model was sent another prompt than chat.send reports:\n%s", last.System)
	}
	// Si understands continuity.
	if !strings.Contains(res.Answer, "You were asking about weather in New York") {
		t.Errorf("answer %q", res.Answer)
	}
	if th := r.thread(t2); len(th.Turns) != 2 || th.Turns[1].Speaker != "assistant" || th.Turns[1].Text != res.Answer {
		t.Errorf("the answer should be recorded in Thread 2: %q", seedAllTexts(th.Turns))
	}
}

func TestEpisodic_6_2_FullWorkflowExplicit(t *testing.T) {
	model := seedSi()
	r := seedNewChatRig(t, model)
	r.at("10:00")
	t1 := r.seedSendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.seedSendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.answer("web", t2, "Booked: JL 5 on Friday.")

	r.at("10:10") // the user clicks Thread 1
	res, m := r.seedChat("web", t1, "What about Thursday?")

	if m.ThreadID != t1 || m.NewThread {
		t.Fatalf("routed to %s (new %v), want Thread 1", m.ThreadID, m.NewThread)
	}
	th := r.thread(t1)
	if th.TurnCount != 4 || !slices.Equal(seedUserTexts(th.Turns), []string{"What's the weather in New York?", "What about Thursday?"}) {
		t.Errorf("Thread 1: %d turns %q", th.TurnCount, seedAllTexts(th.Turns))
	}
	sys := res.Prompt.System
	for _, want := range []string{"You were discussing weather in New York.", "- What's the weather in New York? (Sunny, 72°F)", "Current question: What about Thursday?", "Recap: You were asking about weather in New York."} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt should contain %q:\n%s", want, sys)
		}
	}
	for _, not := range []string{"Tokyo", "Flight", "Continuing"} {
		if strings.Contains(sys, not) {
			t.Errorf("no cross-thread pulling: %q in\n%s", not, sys)
		}
	}
	if !strings.Contains(res.Answer, "weather in New York") || !strings.Contains(res.Answer, "Thursday") {
		t.Errorf("Si should respond about the weather: %q", res.Answer)
	}
	if th2 := r.thread(t2); th2.TurnCount != 2 {
		t.Errorf("Thread 2 has %d turns", th2.TurnCount)
	}
}

func TestEpisodic_6_3_CrossChannelContinuity(t *testing.T) {
	model := seedSi()
	r := seedNewChatRig(t, model)
	r.at("10:00")
	_, m1 := r.seedChat("sms", "", "What's the weather in New York?")
	r.at("10:05") // the user switches to WhatsApp
	res, m2 := r.seedChat("whatsapp", "", "What about next week?")

	if m2.ThreadID != m1.ThreadID || m2.NewThread {
		t.Fatalf("WhatsApp should continue the SMS thread: %+v", m2)
	}
	th := r.thread(m1.ThreadID)
	if !slices.Equal(th.Channels, []string{"sms", "whatsapp"}) {
		t.Errorf("channels %q, want [sms whatsapp]", th.Channels)
	}
	if th.TurnCount != 4 || th.Turns[2].Channel != "whatsapp" || th.Turns[0].Channel != "sms" {
		t.Errorf("turns %+v", th.Turns)
	}
	if n := len(r.seedThreadList()); n != 1 {
		t.Errorf("%d threads, want 1", n)
	}
	// The context carried over.
	sys := res.Prompt.System
	for _, want := range []string{"You were discussing weather in New York.", "- What's the weather in New York? (Sunny, 72°F)", "Current question: What about next week?"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the WhatsApp prompt should contain %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "- What about next week?") {
		t.Errorf("the current question is listed as a previous one too:\n%s", sys)
	}
	if !strings.Contains(res.Answer, "New York") {
		t.Errorf("Si should understand it is still about New York: %q", res.Answer)
	}
}

// ---------------------------------------------------------------------------
// Category 7: edge cases.

func TestEpisodic_7_1_RapidThreadSwitching(t *testing.T) {
	r := newRig(t)
	firsts := []string{"What's the weather in New York?", "Book me a flight to Tokyo", "Find me a lasagna recipe"}
	var ids []string
	for i, text := range firsts {
		r.clock.Set(seedClockAt("10:00").Add(time.Duration(i) * time.Minute))
		res := r.send("web", "", text)
		if !res.NewThread {
			t.Fatalf("%q should start a thread", text)
		}
		for _, d := range res.Decisions {
			t.Logf("7.1 %q against an earlier thread: %.2f %s", text, d.Algorithmic, d.Decision)
		}
		ids = append(ids, res.ThreadID)
	}
	follow := [][]string{
		{"What about Thursday?", "And the weekend?"},
		{"What about return flights?", "Window seat, please."},
		{"Can I make it vegetarian?", "How long does it bake?"},
	}
	r.at("10:05")
	// The user sends to Thread 1, 2, 3 in a row, twice…
	for i, id := range ids {
		if res := r.send("web", id, follow[i][0]); res.ThreadID != id || res.NewThread {
			t.Fatalf("a turn for thread %d went to %s", i+1, res.ThreadID)
		}
	}
	// …and then all at once.
	var wg sync.WaitGroup
	errCh := make(chan error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := r.try("thread.message", map[string]string{"channel": "web", "thread_id": id, "text": follow[i][1]})
			var res episodic.MessageResult
			if err == nil {
				err = json.Unmarshal(raw, &res)
			}
			if err == nil && res.ThreadID != id {
				err = fmt.Errorf("a turn for thread %d went to %s", i+1, res.ThreadID)
			}
			errCh <- err
		}()
	}
	wg.Wait()
	close(errCh)
	for err := range errCh {
		if err != nil {
			t.Fatal(err)
		}
	}

	for i, id := range ids {
		th := r.thread(id)
		if want := append([]string{firsts[i]}, follow[i]...); !slices.Equal(seedAllTexts(th.Turns), want) {
			t.Errorf("thread %d turns %q, want %q", i+1, seedAllTexts(th.Turns), want)
		}
		for n, u := range th.Turns {
			if u.Number != n+1 || u.ThreadID != id {
				t.Errorf("thread %d turn %d: %+v", i+1, n+1, u)
			}
		}
		if th.TurnCount != 3 || th.Status != episodic.StatusActive || !th.LastActivityAt.Equal(seedClockAt("10:05")) || len(th.LinkedThreads) != 0 {
			t.Errorf("thread %d: turn_count %d, status %s, last activity %v, linked %q", i+1, th.TurnCount, th.Status, th.LastActivityAt, th.LinkedThreads)
		}
	}
	if _, xs := r.seedEpisodes(""); len(xs) != 0 {
		t.Errorf("no cross-thread episode expected (different topics): %+v", xs)
	}
}

func TestEpisodic_7_2_AmbiguousSemanticContinuity(t *testing.T) {
	r := newRig(t)
	r.at("08:00") // an unrelated, older thread
	recipe := r.send("sms", "", "Find me a lasagna recipe").ThreadID
	r.answer("sms", recipe, "Here's a classic one: layers of pasta, ragù and béchamel.")
	t1, t2 := seedWeatherInTwoCities(t, r)

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
	seedCheckLinkedToAll(t, r, res.ThreadID, t1, t2)
	c := r.seedContext(res.ThreadID, "", "")
	if len(c.Threads) != 3 || c.Threads[0].ID != t1 || c.Threads[1].ID != t2 || !c.Continuing {
		t.Errorf("context threads %+v", c.Threads)
	}
	if strings.Contains(c.Text, "lasagna") {
		t.Errorf("the unrelated thread was pulled in:\n%s", c.Text)
	}
}

func TestEpisodic_7_3_VeryOldThreadReactivation(t *testing.T) {
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
	seedCheckLinkedToAll(t, r, res.ThreadID, t1)

	c := r.seedContext(res.ThreadID, "", "")
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
