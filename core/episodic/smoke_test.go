package episodic_test

import "testing"

// TestSmokeImplicitFlow: the seed's 6.1 flow end to end, briefly.
func TestSmokeImplicitFlow(t *testing.T) {
	r := newRig(t)
	first := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", first.ThreadID, "Sunny, 72°F.")
	r.at("10:45")
	second := r.send("sms", "", "Oh, and what is it on Thursday?")
	if !second.NewThread || second.Decision == nil || second.Decision.Decision != "LINK" {
		t.Fatalf("%+v", second)
	}
}
