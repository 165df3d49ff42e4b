package episodic_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

// Threads through chat.send, end to end: routing, linking and context
// as the assistant's answers see them (seed 003, category 6).

// newChatRig is an engine as engram runs it for chat: the history (which
// chat.send records the exchange in) and the episodic layer, with the given model.
func newChatRig(t *testing.T, model llm.Provider) *rig {
	t.Helper()
	return newRigWith(t, rigOptions{llm: model, history: true, idSeed: "episodic chat test"})
}

// scriptedSi is a scripted assistant: it judges links as the seed's model does
// (related, 0.92), and answers from its system prompt — opening with the
// recap when the context says it continues an earlier thread, and naming
// the subject the context gives.
func scriptedSi() *llmtest.Scripted {
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
		q := lastUser(req)
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

// chat sends text through chat.send and returns the exchange and where
// thread.message routed it.
func (r *rig) chat(channel, threadID, text string) (core.ChatSendResult, episodic.MessageResult) {
	r.T.Helper()
	res := enginetest.Call[core.ChatSendResult](r.Rig, agent, "chat.send", map[string]string{"channel": channel, "thread_id": threadID, "text": text})
	if res.Thread == nil {
		r.T.Fatalf("chat.send on %s routed nowhere: %+v", channel, res)
	}
	if !res.Answered {
		r.T.Fatalf("no answer: %+v", res)
	}
	return res, *res.Thread
}

// TestChatFollowUpOnImplicitChannelDrawsOnEarlierThread: chat.send on sms: a
// follow-up after a gap starts a linked thread, and the answer draws on the
// earlier one (seed 6.1).
func TestChatFollowUpOnImplicitChannelDrawsOnEarlierThread(t *testing.T) {
	model := scriptedSi()
	r := newChatRig(t, model)
	r.at("10:00")
	_, m1 := r.chat("sms", "", "What's the weather in New York?")
	r.at("10:05")
	_, m2 := r.chat("sms", "", "What about next week?")
	r.at("10:45")
	res, m3 := r.chat("sms", "", "Oh, and what is it on Thursday?")

	t1, t2 := m1.ThreadID, m3.ThreadID
	if !m1.NewThread || m2.ThreadID != t1 || m2.NewThread || !m3.NewThread || t2 == t1 {
		t.Fatalf("threads: %s (new %v), %s, %s (new %v); want Thread 1 for turns 1-2 and Thread 2 for turn 3", t1, m1.NewThread, m2.ThreadID, t2, m3.NewThread)
	}
	if got := userTexts(r.thread(t1).Turns); !slices.Equal(got, []string{"What's the weather in New York?", "What about next week?"}) {
		t.Errorf("Thread 1's questions %q", got)
	}
	if got := userTexts(r.thread(t2).Turns); !slices.Equal(got, []string{"Oh, and what is it on Thursday?"}) {
		t.Errorf("Thread 2's questions %q", got)
	}
	if d := m3.Decision; d == nil || d.Decision != episodic.Link || d.Confidence != episodic.ConfidenceHigh {
		t.Errorf("Thread 2's link: %+v", d)
	}
	checkLinkedToAll(t, r, t2, t1)

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
		t.Errorf("the answer should be recorded in Thread 2: %q", allTexts(th.Turns))
	}
}

// TestChatOnSelectedThreadKeepsItsOwnContext: chat.send on the web: each
// selected thread answers from its own context (seed 6.2).
func TestChatOnSelectedThreadKeepsItsOwnContext(t *testing.T) {
	model := scriptedSi()
	r := newChatRig(t, model)
	r.at("10:00")
	t1 := r.sendTitled("web", "", "Weather in New York", "What's the weather in New York?").ThreadID
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.sendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.answer("web", t2, "Booked: JL 5 on Friday.")

	r.at("10:10") // the user clicks Thread 1
	res, m := r.chat("web", t1, "What about Thursday?")

	if m.ThreadID != t1 || m.NewThread {
		t.Fatalf("routed to %s (new %v), want Thread 1", m.ThreadID, m.NewThread)
	}
	th := r.thread(t1)
	if th.TurnCount != 4 || !slices.Equal(userTexts(th.Turns), []string{"What's the weather in New York?", "What about Thursday?"}) {
		t.Errorf("Thread 1: %d turns %q", th.TurnCount, allTexts(th.Turns))
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

// TestChatContinuesAcrossImplicitChannels: chat.send: switching from sms to
// WhatsApp continues the same thread and its context (seed 6.3).
func TestChatContinuesAcrossImplicitChannels(t *testing.T) {
	model := scriptedSi()
	r := newChatRig(t, model)
	r.at("10:00")
	_, m1 := r.chat("sms", "", "What's the weather in New York?")
	r.at("10:05") // the user switches to WhatsApp
	res, m2 := r.chat("whatsapp", "", "What about next week?")

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
	if n := len(r.threadList()); n != 1 {
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
