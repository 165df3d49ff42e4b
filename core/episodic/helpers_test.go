package episodic_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
)

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.RemoveBinary() // TestCompactKill9 builds engram
	os.Exit(code)
}

// t0 is the seed's date, 10:00.
var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// rig is an engine with the episodic layer (and the history, as in a real
// engram), the *Episodic at hand for the Go API, and a fixed clock.
type rig struct {
	t     testing.TB
	e     *core.Engine
	ep    *episodic.Episodic
	clock *clock.Fixed
}

type rigOptions struct {
	dir  string // a durable store there ("": in memory)
	llm  llm.Provider
	opts episodic.Options
}

func newRig(t testing.TB) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t testing.TB, o rigOptions) *rig {
	t.Helper()
	r := &rig{t: t, clock: clock.NewFixed(t0)}
	e, err := core.Open(core.Options{
		InMemory: o.dir == "", DataDir: o.dir, Clock: r.clock, IDSeed: "episodic test", LLM: o.llm,
		Subsystems: []core.Subsystem{
			func(env *kit.Env) error {
				var err error
				r.ep, err = episodic.Register(env, o.opts)
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

// at sets the clock to t0 plus "hh:mm" past 10:00 style offsets: at("10:45").
func (r *rig) at(hhmm string) {
	r.t.Helper()
	d, err := time.Parse("15:04", hhmm)
	if err != nil {
		r.t.Fatal(err)
	}
	r.clock.Set(time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), 0, 0, time.UTC))
}

// try runs an action through the engine (args: a JSON string or a Go value).
func (r *rig) try(name string, args any) (json.RawMessage, error) {
	r.t.Helper()
	raw := enginetest.Args(r.t, args)
	return r.e.Do(context.Background(), core.Request{Action: name, Args: raw})
}

// do is try that must succeed, decoding the result into out (if not nil).
func (r *rig) do(name string, args any, out any) {
	r.t.Helper()
	raw, err := r.try(name, args)
	if err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			r.t.Fatalf("%s: decoding %s: %v", name, raw, err)
		}
	}
}

// fails runs an action that must fail with kind, its message containing want.
func (r *rig) fails(name string, args any, kind errs.Kind, want string) {
	r.t.Helper()
	_, err := r.try(name, args)
	if err == nil {
		r.t.Fatalf("%s succeeded; want %s", name, kind)
	}
	if errs.KindOf(err) != kind || !strings.Contains(err.Error(), want) {
		r.t.Fatalf("%s: got %s %q; want %s containing %q", name, errs.KindOf(err), err, kind, want)
	}
}

// send sends a message and returns where it went.
func (r *rig) send(channel, threadID, text string) episodic.MessageResult {
	r.t.Helper()
	var res episodic.MessageResult
	r.do("thread.message", map[string]string{"channel": channel, "thread_id": threadID, "text": text}, &res)
	return res
}

// answer records the assistant's answer in a thread.
func (r *rig) answer(channel, threadID, text string) episodic.MessageResult {
	r.t.Helper()
	var res episodic.MessageResult
	r.do("thread.message", map[string]string{"channel": channel, "thread_id": threadID, "text": text, "speaker": "assistant"}, &res)
	return res
}

// thread reads a thread.
func (r *rig) thread(id string) episodic.ThreadView {
	r.t.Helper()
	var out struct {
		Thread episodic.ThreadView `json:"thread"`
	}
	r.do("thread.get", map[string]any{"thread_id": id, "include_archived": true}, &out)
	return out.Thread
}

// judgeAnswer is a scripted model's JSON judgement.
func judgeAnswer(related bool, confidence float64, reasoning string, signals ...string) string {
	b, _ := json.Marshal(map[string]any{"related": related, "confidence": confidence, "reasoning": reasoning, "key_signals": signals})
	return string(b)
}
