package episodic_test

import (
	"testing"
	"time"
)

// TestGreetingsDoNotTitleAThread: a thread whose first message only greets
// ("hi", "hello there") takes its title from the first message with
// content; a greeting before the content is left out of the title; a
// title someone gave stays.
func TestGreetingsDoNotTitleAThread(t *testing.T) {
	r := newRig(t)
	r.clock.Set(t0)
	id := r.send("web", "", "hi").ThreadID
	if got := r.thread(id).Title; got != "Untitled" {
		t.Errorf("after \"hi\": title %q, want Untitled", got)
	}
	r.answer("web", id, "Hello! What can I do for you?")
	r.clock.Advance(time.Minute)
	r.send("web", id, "Hello there!")
	if got := r.thread(id).Title; got != "Untitled" {
		t.Errorf("after \"Hello there!\": title %q, want Untitled", got)
	}
	r.clock.Advance(time.Minute)
	r.send("web", id, "What's the weather in New York?")
	if got := r.thread(id).Title; got != "Weather in New York" {
		t.Errorf("after the first message with content: title %q, want \"Weather in New York\"", got)
	}
	// The context speaks of it as the title does, from that message.
	if got := r.contextOf(id, "", "").Topic; got != "weather in New York" {
		t.Errorf("context topic %q, want \"weather in New York\"", got)
	}
	r.clock.Advance(time.Minute)
	r.send("web", id, "And what about Boston?")
	if got := r.thread(id).Title; got != "Weather in New York" {
		t.Errorf("a later message retitled the thread: %q", got)
	}
	for text, want := range map[string]string{
		"Hi! What's the weather in Lisbon?": "Weather in Lisbon",
		"Hello there, book a table for two": "Book a table for two",
		"Good morning. Thanks!":             "Untitled",
	} {
		r.clock.Advance(time.Minute)
		if got := r.thread(r.send("web", "", text).ThreadID).Title; got != want {
			t.Errorf("%q: title %q, want %q", text, got, want)
		}
	}
	r.clock.Advance(time.Minute)
	given := r.sendTitled("web", "", "Untitled", "hi").ThreadID
	r.send("web", given, "Plan the offsite in Porto.")
	if got := r.thread(given).Title; got != "Untitled" {
		t.Errorf("a given title changed: %q", got)
	}
}
