package episodic_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.RemoveBinary() // TestCompactKill9 builds engram
	os.Exit(code)
}

// t0 is the seed's date, 10:00.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// rig is an engine with the episodic layer (and the history, as in a real
// engram), the *Episodic at hand for the Go API, and a fixed clock. Its
// Try, Do and Fail are the shared enginetest.Rig's.
type rig struct {
	enginetest.Rig
	e     *core.Engine
	ep    *episodic.Episodic
	clock *clock.Fixed
}

// agent runs actions as the engine's agent, outside any turn.
var agent enginetest.Who

type rigOptions struct {
	dir     string // a durable store there ("": in memory)
	llm     llm.Provider
	opts    episodic.Options
	history bool   // register the history too (chat.send records in it)
	idSeed  string // "episodic test" when empty
}

func newRig(t testing.TB) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{clock: clock.NewFixed(t0)}
	if o.idSeed == "" {
		o.idSeed = "episodic test"
	}
	var subsystems []core.Subsystem
	if o.history {
		subsystems = append(subsystems, func(env *kit.Env) error { _, err := history.Register(env, history.Options{}); return err })
	}
	subsystems = append(subsystems, func(env *kit.Env) error {
		var err error
		r.ep, err = episodic.Register(env, o.opts)
		return err
	})
	e, err := core.Open(core.Options{
		InMemory: o.dir == "", DataDir: o.dir, Clock: r.clock, IDSeed: o.idSeed, LLM: o.llm, Subsystems: subsystems,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.e, r.Rig = e, enginetest.ForConn(t, e)
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return r
}

// at sets the clock to t0 plus "hh:mm" past 10:00 style offsets: at("10:45").
func (r *rig) at(hhmm string) {
	r.T.Helper()
	d, err := time.Parse("15:04", hhmm)
	if err != nil {
		r.T.Fatal(err)
	}
	r.clock.Set(time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), 0, 0, time.UTC))
}

// send sends a message and returns where it went.
func (r *rig) send(channel, threadID, text string) episodic.MessageResult {
	r.T.Helper()
	var res episodic.MessageResult
	r.Do(agent, "thread.message", map[string]string{"channel": channel, "thread_id": threadID, "text": text}, &res)
	return res
}

// answer records the assistant's answer in a thread.
func (r *rig) answer(channel, threadID, text string) episodic.MessageResult {
	r.T.Helper()
	var res episodic.MessageResult
	r.Do(agent, "thread.message", map[string]string{"channel": channel, "thread_id": threadID, "text": text, "speaker": "assistant"}, &res)
	return res
}

// thread reads a thread.
func (r *rig) thread(id string) episodic.ThreadView {
	r.T.Helper()
	return enginetest.Call[episodic.GetResult](r.Rig, agent, "thread.get", episodic.GetArgs{ThreadID: id, IncludeArchived: true}).Thread
}

// judgeAnswer is a scripted model's JSON judgement.
func judgeAnswer(related bool, confidence float64, reasoning string, signals ...string) string {
	b, _ := json.Marshal(map[string]any{"related": related, "confidence": confidence, "reasoning": reasoning, "key_signals": signals})
	return string(b)
}

// Helpers of the scenario tests (seed 003: episodic memory), driven through
// the engine's thread.* and episode.* actions (and chat.send for the
// integration scenarios) with a fixed clock.

// clockAt is hh:mm on the seed's day (2025-11-05).
func clockAt(hhmm string) time.Time {
	d, err := time.Parse("15:04", hhmm)
	if err != nil {
		panic(err)
	}
	return time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), 0, 0, time.UTC)
}

// sendTitled starts a thread with a title (or continues one, ignoring it).
func (r *rig) sendTitled(channel, threadID, title, text string) episodic.MessageResult {
	r.T.Helper()
	var res episodic.MessageResult
	r.Do(agent, "thread.message", map[string]string{"channel": channel, "thread_id": threadID, "title": title, "text": text}, &res)
	return res
}

// threadList is thread.list: every thread, most recently active first.
func (r *rig) threadList() []*episodic.Thread {
	r.T.Helper()
	return enginetest.Call[episodic.ListResult](r.Rig, agent, "thread.list", struct{}{}).Threads
}

// liveThread reads a thread without its archived turns.
func (r *rig) liveThread(id string) episodic.ThreadView {
	r.T.Helper()
	return enginetest.Call[episodic.GetResult](r.Rig, agent, "thread.get", episodic.GetArgs{ThreadID: id}).Thread
}

// decisions is episode.decisions about a thread ("": all).
func (r *rig) decisions(threadID string) []*episodic.Decision {
	r.T.Helper()
	return enginetest.Call[episodic.DecisionsResult](r.Rig, agent, "episode.decisions", episodic.DecisionsArgs{ThreadID: threadID}).Decisions
}

// decisionsRaw is episode.decisions as the JSON a client sees.
func (r *rig) decisionsRaw(threadID string) []map[string]any {
	r.T.Helper()
	var out struct {
		Decisions []map[string]any `json:"decisions"`
	}
	r.Do(agent, "episode.decisions", map[string]any{"thread_id": threadID}, &out)
	return out.Decisions
}

// episodes is episode.list of a thread ("": every thread).
func (r *rig) episodes(threadID string) (eps []*episodic.Episode, xs []*episodic.CrossEpisode) {
	r.T.Helper()
	out := enginetest.Call[episodic.EpisodesResult](r.Rig, agent, "episode.list", episodic.EpisodesArgs{ThreadID: threadID})
	return out.Episodes, out.CrossThreadEpisodes
}

// episode is episode.get.
func (r *rig) episode(id string) episodic.EpisodeView {
	r.T.Helper()
	return enginetest.Call[episodic.EpisodeResult](r.Rig, agent, "episode.get", episodic.EpisodeArgs{EpisodeID: id}).Episode
}

// contextOf is episode.context of a thread, for a channel and input.
func (r *rig) contextOf(threadID, channel, input string) episodic.Context {
	r.T.Helper()
	return enginetest.Call[episodic.ContextResult](r.Rig, agent, "episode.context", episodic.ContextArgs{ThreadID: threadID, Channel: channel, Input: input}).Context
}

// tuning is episode.tuning.
func (r *rig) tuning() episodic.Tuning {
	r.T.Helper()
	return enginetest.Call[episodic.Tuning](r.Rig, agent, "episode.tuning", struct{}{})
}

// traceOf is a turn's trace entries of a kind.
func (r *rig) traceOf(turn, kind string) []trace.Entry {
	r.T.Helper()
	var out struct {
		Entries []trace.Entry `json:"entries"`
	}
	r.Do(agent, "trace.list", map[string]any{"turn": turn, "kind": kind, "limit": 10000}, &out)
	return out.Entries
}

// errField is the field a kit error names.
func errField(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		f, _ := e.Details["field"].(string)
		return f
	}
	return ""
}

// userTexts is the text of the user's turns.
func userTexts(turns []*episodic.Turn) []string {
	var out []string
	for _, u := range turns {
		if u.Speaker == "user" {
			out = append(out, u.Text)
		}
	}
	return out
}

// allTexts is the text of every turn.
func allTexts(turns []*episodic.Turn) []string {
	var out []string
	for _, u := range turns {
		out = append(out, u.Text)
	}
	return out
}

// lastUser is a request's last message.
func lastUser(req llm.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[len(req.Messages)-1].Content
}

// newMessageOf is the new message a linking request asks about.
func newMessageOf(req llm.Request) string {
	_, after, _ := strings.Cut(lastUser(req), "New message:\n")
	msg, _, _ := strings.Cut(after, "\n\nAre these")
	return msg
}

// judgeRequests are the linking judgements a scripted model was asked for.
func judgeRequests(m *llmtest.Scripted) []llm.Request {
	var out []llm.Request
	for _, q := range m.Requests() {
		if q.JSON {
			out = append(out, q)
		}
	}
	return out
}
