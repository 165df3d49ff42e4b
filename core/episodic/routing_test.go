package episodic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
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
	r.Do(agent, "episode.context", map[string]string{"thread_id": follow.ThreadID}, &c)
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
	r.Fail(agent, "thread.message", map[string]string{"channel": "web", "speaker": "assistant", "text": "Done."}, errs.Validation, "thread_id")
	var list struct{ Threads []episodic.Thread }
	r.Do(agent, "thread.list", "{}", &list)
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
	r.Do(agent, "episode.context", map[string]string{"thread_id": third.ThreadID}, &c)
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
		raw, err := r.Try(agent, "thread.message", map[string]string{"channel": "sms", "text": "Oh, and what is it on Thursday?"})
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
		raw, err := r.Try(agent, "thread.message", map[string]string{"channel": "web", "thread_id": web.ThreadID, "text": "Window seat, please."})
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

// TestSelectedThreadTakesTheMessage: a message on an explicit channel goes
// to the thread the user selected, whatever it says (seed 1.1).
func TestSelectedThreadTakesTheMessage(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.sendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.sendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
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
	if !after.LastActivityAt.Equal(clockAt("10:10")) || !res.LastActivityAt.Equal(clockAt("10:10")) {
		t.Errorf("last_activity_at %v, want 10:10", after.LastActivityAt)
	}
	if got := after.Turns[len(after.Turns)-1]; got.Text != "What about Thursday?" || got.Number != after.TurnCount || got.Channel != "web" {
		t.Errorf("last turn of Thread 1: %+v", got)
	}
	if n := len(r.threadList()); n != 2 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
	if th := r.thread(t2); th.TurnCount != 2 || !th.LastActivityAt.Equal(clockAt("10:05")) {
		t.Errorf("Thread 2 changed: turn_count %d, last activity %v", th.TurnCount, th.LastActivityAt)
	}
}

// TestSwitchingBetweenSelectedThreads: the user switches between threads on
// the web; each message goes to the one selected (seed 1.2).
func TestSwitchingBetweenSelectedThreads(t *testing.T) {
	r := newRig(t)
	r.at("09:00")
	t2 := r.sendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.at("10:00")
	t1 := r.sendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	th1, th2 := r.thread(t1), r.thread(t2)
	if !th1.LastActivityAt.Equal(clockAt("10:00")) || !th2.LastActivityAt.Equal(clockAt("09:00")) {
		t.Fatalf("setup: last activity %v and %v, want 10:00 and 09:00", th1.LastActivityAt, th2.LastActivityAt)
	}

	r.at("10:10") // the user clicks Thread 2
	res := r.send("web", t2, "What about return flights?")

	if res.ThreadID != t2 || res.NewThread {
		t.Fatalf("the turn went to %s (new %v); want Thread 2", res.ThreadID, res.NewThread)
	}
	after2 := r.thread(t2)
	if after2.TurnCount != th2.TurnCount+1 || !after2.LastActivityAt.Equal(clockAt("10:10")) {
		t.Errorf("Thread 2: turn_count %d, last activity %v; want %d, 10:10", after2.TurnCount, after2.LastActivityAt, th2.TurnCount+1)
	}
	if got := userTexts(after2.Turns); !slices.Equal(got, []string{"Book me a flight to Tokyo", "What about return flights?"}) {
		t.Errorf("Thread 2's turns %q", got)
	}
	if after1 := r.thread(t1); !reflect.DeepEqual(after1, th1) {
		t.Errorf("Thread 1 changed:\nbefore %+v\nafter  %+v", th1.Thread, after1.Thread)
	}
	for _, th := range r.threadList() {
		if th.Status != episodic.StatusActive {
			t.Errorf("thread %s (%s) is %s; both remain active", th.ID, th.Title, th.Status)
		}
	}
}

// TestInactivityTimeoutStartsANewThread: on an implicit channel, a message
// after the inactivity timeout starts a new thread and ends the old one
// (seed 2.1).
func TestInactivityTimeoutStartsANewThread(t *testing.T) {
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
	if !t2.CreatedAt.Equal(clockAt("10:45")) || t2.TurnCount != 1 || res.TurnCount != 1 {
		t.Errorf("Thread 2: created_at %v, turn_count %d; want 10:45, 1", t2.CreatedAt, t2.TurnCount)
	}
	if res.EndedThread != t1 {
		t.Errorf("ended thread %q, want Thread 1", res.EndedThread)
	}
	// Thread 1 keeps its turns and activity; its status moves on (it ended,
	// and its episode is compacted: seed 5.1) and it gains the link (3.1).
	after := r.thread(t1)
	if !after.LastActivityAt.Equal(clockAt("10:00")) || after.TurnCount != before.TurnCount || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d; want 10:00, %d", after.LastActivityAt, after.TurnCount, before.TurnCount)
	}
	if !slices.Equal(allTexts(after.Turns), allTexts(before.Turns)) {
		t.Errorf("Thread 1's turns changed: %q", allTexts(after.Turns))
	}
	if n := len(r.threadList()); n != 2 {
		t.Errorf("%d threads, want 2", n)
	}
}

// TestMessageWithinTimeoutContinuesTheThread: on an implicit channel, a
// message within the timeout continues the thread (seed 2.2).
func TestMessageWithinTimeoutContinuesTheThread(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID

	r.at("10:15")
	res := r.send("sms", "", "What about next week?")

	if res.NewThread || res.ThreadID != t1 {
		t.Fatalf("15 min later the message should continue Thread 1: %+v", res)
	}
	th := r.thread(t1)
	if !th.LastActivityAt.Equal(clockAt("10:15")) || th.TurnCount != 2 {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d; want 10:15, 2", th.LastActivityAt, th.TurnCount)
	}
	if n := len(r.threadList()); n != 1 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
}

// TestConfiguredTimeoutDecidesContinuation: thread.configure sets a thread's
// inactivity timeout, and routing follows it (seed 2.3).
func TestConfiguredTimeoutDecidesContinuation(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.send("sms", "", "What's the weather in New York?").ThreadID
	var cfg struct {
		Thread episodic.Thread `json:"thread"`
	}
	r.Do(agent, "thread.configure", map[string]any{"thread_id": t1, "inactivity_timeout_minutes": 60}, &cfg)
	if cfg.Thread.InactivityTimeoutMinutes != 60 || !cfg.Thread.LastActivityAt.Equal(clockAt("10:00")) {
		t.Fatalf("configured: %+v", cfg.Thread)
	}

	r.at("10:45")
	res := r.send("sms", "", "What about next week?")

	if res.NewThread || res.ThreadID != t1 {
		t.Fatalf("45 < 60 min: the message should continue Thread 1: %+v", res)
	}
	th := r.thread(t1)
	if !th.LastActivityAt.Equal(clockAt("10:45")) || th.TurnCount != 2 || th.InactivityTimeoutMinutes != 60 {
		t.Errorf("Thread 1: last_activity_at %v, turn_count %d, timeout %d", th.LastActivityAt, th.TurnCount, th.InactivityTimeoutMinutes)
	}
	if n := len(r.threadList()); n != 1 {
		t.Errorf("%d threads; no new thread should have been created", n)
	}
}

// TestRapidSwitchingKeepsTurnsInTheirThreads: rapid switching between three
// web threads, one at a time and all at once, keeps every turn in its thread
// (seed 7.1).
func TestRapidSwitchingKeepsTurnsInTheirThreads(t *testing.T) {
	r := newRig(t)
	firsts := []string{"What's the weather in New York?", "Book me a flight to Tokyo", "Find me a lasagna recipe"}
	var ids []string
	for i, text := range firsts {
		r.clock.Set(clockAt("10:00").Add(time.Duration(i) * time.Minute))
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
			raw, err := r.Try(agent, "thread.message", map[string]string{"channel": "web", "thread_id": id, "text": follow[i][1]})
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
		if want := append([]string{firsts[i]}, follow[i]...); !slices.Equal(allTexts(th.Turns), want) {
			t.Errorf("thread %d turns %q, want %q", i+1, allTexts(th.Turns), want)
		}
		for n, u := range th.Turns {
			if u.Number != n+1 || u.ThreadID != id {
				t.Errorf("thread %d turn %d: %+v", i+1, n+1, u)
			}
		}
		if th.TurnCount != 3 || th.Status != episodic.StatusActive || !th.LastActivityAt.Equal(clockAt("10:05")) || len(th.LinkedThreads) != 0 {
			t.Errorf("thread %d: turn_count %d, status %s, last activity %v, linked %q", i+1, th.TurnCount, th.Status, th.LastActivityAt, th.LinkedThreads)
		}
	}
	if _, xs := r.episodes(""); len(xs) != 0 {
		t.Errorf("no cross-thread episode expected (different topics): %+v", xs)
	}
}

// TestSMSFollowUpAfterAGapStartsALinkedThread: the seed's 6.1 flow end to
// end, briefly (it was the smoke test): after 45 minutes, "Oh, and…" on sms
// starts a new thread linked to the one it follows up.
func TestSMSFollowUpAfterAGapStartsALinkedThread(t *testing.T) {
	r := newRig(t)
	first := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", first.ThreadID, "Sunny, 72°F.")
	r.at("10:45")
	second := r.send("sms", "", "Oh, and what is it on Thursday?")
	if !second.NewThread || second.Decision == nil || second.Decision.Decision != "LINK" {
		t.Fatalf("%+v", second)
	}
}

// TestThreadCreatedEventSaysWhatTheThreadIs: thread.created carries the
// new thread as its first message left it (one turn, on its channel), not
// as it was before the turn was added; a message continuing it sends none.
func TestThreadCreatedEventSaysWhatTheThreadIs(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := r.e.Subscribe(ctx, episodic.EventThreadCreated.Name())
	first := r.send("sms", "", "What's the weather in New York?")
	r.send("sms", "", "And tomorrow?") // continues it
	r.clock.Advance(time.Hour)
	second := r.send("sms", "", "Book me a flight to Tokyo")
	for _, want := range []string{first.ThreadID, second.ThreadID} {
		var ev events.Event
		select {
		case ev = <-evs:
		case <-time.After(10 * time.Second): // a guard, never reached when it works
			t.Fatalf("no thread.created for %s", want)
		}
		got, ok := episodic.EventThreadCreated.Of(ev)
		if !ok || got.ID != want || got.TurnCount != 1 || !slices.Equal(got.Channels, []string{"sms"}) {
			t.Errorf("thread.created %+v (payload %T); want thread %s with 1 turn on sms", got, ev.Data, want)
		}
	}
}
