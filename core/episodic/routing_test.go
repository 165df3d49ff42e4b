package episodic_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// TestFollowUpRefersToItsChannelsThread: an "Oh, and…" on sms follows up
// the sms thread, not a web thread opened in between.
func TestFollowUpRefersToItsChannelsThread(t *testing.T) {
	r := newRig(t)
	weather := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", weather.ThreadID, "Sunny, 72°F.")
	r.at("10:20")
	tokyo := r.send("web", "", "Book me a flight to Tokyo in March.")
	r.at("10:45")
	follow := r.send("sms", "", "Oh, and what is it on Thursday?")
	if !follow.NewThread || len(follow.LinkedThreads) != 1 || follow.LinkedThreads[0] != weather.ThreadID {
		t.Fatalf("linked to %v; want only the weather thread %s (the web thread is %s)", follow.LinkedThreads, weather.ThreadID, tokyo.ThreadID)
	}
	var c struct{ Context episodic.Context }
	r.do("episode.context", map[string]string{"thread_id": follow.ThreadID}, &c)
	if !strings.HasPrefix(c.Context.Text, "You were discussing weather in New York.") || strings.Contains(c.Context.Text, "Tokyo") {
		t.Errorf("context:\n%s", c.Context.Text)
	}
}

// TestAnswersNeedTheirThreadOnExplicitChannels: an assistant's message on
// the web without thread_id is refused (it would land in whichever thread
// was last active), and nothing is recorded.
func TestAnswersNeedTheirThreadOnExplicitChannels(t *testing.T) {
	r := newRig(t)
	r.send("web", "", "Book me a flight to Tokyo")
	r.send("sms", "", "What's the weather in New York?")
	r.fails("thread.message", map[string]string{"channel": "web", "speaker": "assistant", "text": "Done."}, errs.Validation, "thread_id")
	var list struct{ Threads []episodic.Thread }
	r.do("thread.list", "{}", &list)
	for _, th := range list.Threads {
		if th.TurnCount != 1 {
			t.Errorf("thread %q has %d turns; want 1", th.Title, th.TurnCount)
		}
	}
}

// TestOneActiveImplicitThread: reopening an ended sms thread by its id ends
// the sms thread that took over from it, whose episode is then compacted.
func TestOneActiveImplicitThread(t *testing.T) {
	r := newRig(t)
	first := r.send("sms", "", "What's the weather in New York?")
	r.at("10:45")
	second := r.send("sms", "", "Book me a flight to Tokyo")
	if second.EndedThread != first.ThreadID {
		t.Fatalf("ended %q; want %q", second.EndedThread, first.ThreadID)
	}
	r.at("10:50")
	again := r.send("sms", first.ThreadID, "Is it still sunny?")
	if again.NewThread || again.ThreadID != first.ThreadID || again.EndedThread != second.ThreadID {
		t.Fatalf("%+v; want thread %s reopened and %s ended", again, first.ThreadID, second.ThreadID)
	}
	if got := r.thread(first.ThreadID); got.Status != episodic.StatusActive || len(got.Episodes) != 2 {
		t.Errorf("reopened thread: status %s, %d episodes; want active, a new episode", got.Status, len(got.Episodes))
	}
	if got := r.thread(second.ThreadID); got.Status != episodic.StatusCompacted {
		t.Errorf("the thread it took over from is %s; want compacted", got.Status)
	}
}

// TestContextFollowsAChainOfFollowUps: a follow-up of a follow-up draws on
// the whole chain (through their cross-thread episode), and the topic is
// the first thread's.
func TestContextFollowsAChainOfFollowUps(t *testing.T) {
	r := newRig(t)
	first := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", first.ThreadID, "Sunny, 72°F.")
	r.at("10:45")
	second := r.send("sms", "", "Oh, and what is it on Thursday?")
	r.answer("sms", second.ThreadID, "Rain, 60°F.")
	r.at("11:30")
	third := r.send("sms", "", "And on Friday?")
	if len(third.LinkedThreads) == 0 {
		t.Fatalf("the third thread did not link: %+v", third.Decisions)
	}
	var c struct{ Context episodic.Context }
	r.do("episode.context", map[string]string{"thread_id": third.ThreadID}, &c)
	text := c.Context.Text
	for _, want := range []string{"You were discussing weather in New York.", "What's the weather in New York? (Sunny, 72°F)", "Oh, and what is it on Thursday? (Rain, 60°F)"} {
		if !strings.Contains(text, want) {
			t.Errorf("context lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "(cont.)") {
		t.Errorf("the topic carries a title's (cont.):\n%s", text)
	}
}

// TestJudgingDoesNotHoldOtherMessages: while a model judges a new thread's
// links, a message to another thread goes through; the judged message then
// lands with its decision.
func TestJudgingDoesNotHoldOtherMessages(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	model := &llmtest.Scripted{Func: func(req llm.Request) llmtest.Answer {
		last := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(last, "Thursday") {
			return llmtest.Text(judgeAnswer(false, 0.9, "Different topics"))
		}
		if !strings.Contains(last, "New York") {
			return llmtest.Text(judgeAnswer(false, 0.8, "Tokyo flights are another topic"))
		}
		once.Do(func() { close(asked) })
		<-release
		return llmtest.Text(judgeAnswer(true, 0.9, "Both about weather in New York", "weather"))
	}}
	r := newRigWith(t, rigOptions{llm: model})
	weather := r.send("sms", "", "What's the weather in New York?")
	web := r.send("web", "", "Book me a flight to Tokyo")
	r.at("10:45")
	done := make(chan episodic.MessageResult)
	go func() {
		var res episodic.MessageResult
		raw, err := r.try("thread.message", map[string]string{"channel": "sms", "text": "Oh, and what is it on Thursday?"})
		if err == nil {
			err = json.Unmarshal(raw, &res)
		}
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-asked // the model is judging now
	sent := make(chan episodic.MessageResult, 1)
	go func() {
		var res episodic.MessageResult
		raw, err := r.try("thread.message", map[string]string{"channel": "web", "thread_id": web.ThreadID, "text": "Window seat, please."})
		if err == nil {
			err = json.Unmarshal(raw, &res)
		}
		if err != nil {
			t.Error(err)
		}
		sent <- res
	}()
	select {
	case other := <-sent:
		if other.TurnCount != 2 {
			t.Errorf("the web message: %+v", other)
		}
	case <-time.After(10 * time.Second): // a watchdog, not a wait: it returns at once when right
		close(release)
		t.Fatal("the web message waited for the model judging another thread")
	}
	close(release)
	res := <-done
	if !res.NewThread || res.Decision == nil || res.Decision.Candidate != weather.ThreadID || res.Decision.Confidence != episodic.ConfidenceHigh {
		t.Errorf("the judged message: %+v", res)
	}
}
