package episodic_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/episodic"
)

// A thread's working memory: what episode.context assembles on explicit
// and implicit channels, and how it renders (seed 003, category 4).

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestExplicitChannelContextIsTheThreadAlone: on an explicit channel the
// context is the selected thread alone (seed 4.1).
func TestExplicitChannelContextIsTheThreadAlone(t *testing.T) {
	r := newRig(t)
	// An earlier thread Thread 1 continues, so that there is something an
	// implicit channel would pull in.
	r.at("09:00")
	t0id := r.send("sms", "", "Is it going to rain in New York today?").ThreadID
	r.answer("sms", t0id, "No, dry all day.")
	r.at("10:00")
	first := r.sendTitled("web", "", "Weather in New York", "What's the weather in New York this week?")
	t1 := first.ThreadID
	if first.Decision == nil || first.Decision.Decision != episodic.Link {
		t.Fatalf("Thread 1 should continue the earlier weather thread: %+v", first.Decision)
	}
	r.answer("web", t1, "Sunny, 72°F.")
	r.at("10:05")
	t2 := r.sendTitled("web", "", "Flight booking", "Book me a flight to Tokyo").ThreadID
	r.answer("web", t2, "Booked: JL 5 on Friday.")
	r.at("10:10") // the user selects Thread 1
	r.send("web", t1, "What about Thursday?")

	c := r.contextOf(t1, "", "")

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
	if implicit := r.contextOf(t1, "sms", ""); len(implicit.Threads) != 2 || implicit.Threads[0].ID != t0id || !implicit.Continuing {
		t.Errorf("on sms the linked thread should come in: %+v", implicit.Threads)
	}
}

// weatherFollowUp: seed 4.2's setup. Thread 1 "Weather in New York" from
// 10:00 to 10:15; Thread 2 "Weather follow-up" from 10:45, linked to it.
func weatherFollowUp(t *testing.T, r *rig) (t1, t2 string) {
	t.Helper()
	r.at("10:00")
	t1 = r.send("sms", "", "What's the weather in New York?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")
	r.at("10:15")
	r.send("sms", "", "What about next week?")
	r.answer("sms", t1, "Mixed, 65-75°F.")
	r.at("10:45")
	res := r.sendTitled("sms", "", "Weather follow-up", "Oh, and is it going to rain this weekend?")
	t2 = res.ThreadID
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("Thread 2 should start linked to Thread 1: %+v", res)
	}
	r.answer("sms", t2, "Light rain on Saturday.")
	return t1, t2
}

// TestImplicitChannelContextPullsLinkedThreads: on an implicit channel the
// context pulls in the threads linked to this one (seed 4.2).
func TestImplicitChannelContextPullsLinkedThreads(t *testing.T) {
	r := newRig(t)
	t1, t2 := weatherFollowUp(t, r)
	r.at("10:50")
	if res := r.send("sms", "", "What about Thursday?"); res.ThreadID != t2 {
		t.Fatalf("the new turn should be in Thread 2: %+v", res)
	}

	c := r.contextOf(t2, "", "")

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

// TestContextRendersAsThePromptInjection: the context renders as the text
// injected into the prompt, line by line (golden file) (seed 4.3).
func TestContextRendersAsThePromptInjection(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	t1 := r.sendTitled("sms", "", "Weather in New York", "What's the weather tomorrow?").ThreadID
	r.answer("sms", t1, "Sunny, 72°F.")
	r.at("10:05")
	r.send("sms", "", "What about next week?")
	r.answer("sms", t1, "Mixed, 65-75°F.")
	r.at("10:35") // exactly 30 minutes after the last activity
	res := r.send("sms", "", "Oh, and what is it on Thursday?")
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("a 30-minute break should start Thread 2, linked to Thread 1: %+v", res)
	}

	got := r.contextOf(res.ThreadID, "", "").Text

	golden := filepath.Join("testdata", "context_4_3.golden")
	if *updateGolden {
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

// TestContextSaysWhatWasAskedInWholeSentences: the topic is what the
// thread is about, not its greeting ("You were discussing hi, …"); a name
// keeps its case; and "Previous questions" lists the questions asked,
// without their greeting, while what was only said is listed apart.
func TestContextSaysWhatWasAskedInWholeSentences(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	id := r.send("web", "", "Hi, I'm planning Maria's birthday party in Lisbon.").ThreadID
	r.answer("web", id, "Happy to help.")
	r.send("web", id, "Hi! What's the budget?")
	r.answer("web", id, "About $2,000.")
	r.send("web", id, "Lisbon venues near the river are nice.")
	r.send("web", id, "Shall we look at venues near the river?")

	c := r.contextOf(id, "", "")

	if c.Topic != "Maria's birthday party in Lisbon" {
		t.Errorf("topic %q, want \"Maria's birthday party in Lisbon\"", c.Topic)
	}
	var asked []string
	for _, qa := range c.PreviousQuestions {
		asked = append(asked, qa.Question)
	}
	if want := []string{"What's the budget?"}; !slices.Equal(asked, want) {
		t.Errorf("previous questions %q, want %q", asked, want)
	}
	if c.CurrentQuestion != "Shall we look at venues near the river?" {
		t.Errorf("current question %q", c.CurrentQuestion)
	}
	want := strings.Join([]string{
		"You were discussing Maria's birthday party in Lisbon.",
		"What you said:",
		"- Hi, I'm planning Maria's birthday party in Lisbon. (Happy to help)",
		"- Lisbon venues near the river are nice.",
		"Previous questions:",
		"- What's the budget? (About $2,000)",
		"",
		"Current question: Shall we look at venues near the river?",
	}, "\n")
	if c.Text != want {
		t.Errorf("context:\n%s\nwant:\n%s", c.Text, want)
	}
	// A common word opening a topic is lowered; a name is not.
	r.at("11:00")
	id2 := r.send("app", "", "Hello there! I need help with venues near the river.").ThreadID
	if got := r.contextOf(id2, "", "").Topic; got != "venues near the river" {
		t.Errorf("topic %q, want \"venues near the river\"", got)
	}
	r.at("12:00")
	id3 := r.sendTitled("web", "", "Lisbon offsite", "Where do we stay?").ThreadID
	if got := r.contextOf(id3, "", "").Topic; got != "Lisbon offsite" {
		t.Errorf("topic %q, want \"Lisbon offsite\" (a name keeps its case)", got)
	}
}
