package episodic

import "testing"

// TestReadSignalReadsThePhraseLists: each phrase list catches what it is
// for, and ordinary follow-ups (an "anyway", a new question on the same
// subject) read as going on.
func TestReadSignalReadsThePhraseLists(t *testing.T) {
	for text, want := range map[string]string{
		"No, that's not what I meant.":                     SignalCorrection,
		"That is not what I was asking about":              SignalCorrection,
		"I didn't mean the weather, I meant the game":      SignalCorrection,
		"Wrong thread, sorry":                              SignalCorrection,
		"No, that’s not what I meant":                      SignalCorrection,
		"Didn’t we talk about this already?":               SignalBackReference,
		"That has nothing to do with the trip.":            SignalCorrection,
		"It's a different question really":                 SignalCorrection,
		"Hmm, didn't we talk about this?":                  SignalBackReference,
		"As I said before, the budget is fixed.":           SignalBackReference,
		"We already talked about Lisbon":                   SignalBackReference,
		"Remember what you suggested?":                     SignalBackReference,
		"I mentioned it earlier":                           SignalBackReference,
		"On another note: what's for dinner?":              SignalTopicSwitch,
		"Changing the subject, how is Sam?":                SignalTopicSwitch,
		"Different question: what time is it in Tokyo?":    SignalTopicSwitch,
		"Unrelated, but can you book a cab?":               SignalTopicSwitch,
		"Great, and should I pack an umbrella?":            SignalContinued,
		"Anyway, thanks!":                                  SignalContinued,
		"I have a new question about the trip":             SignalContinued,
		"Thanks. Also, what's a good pasta dish?":          SignalContinued,
		"What did the forecast say for the weekend, then?": SignalContinued,
	} {
		if got, evidence := readSignal(text); got != want {
			t.Errorf("%q: %s (%q), want %s", text, got, evidence, want)
		} else if (got == SignalContinued) != (evidence == "") {
			t.Errorf("%q: %s with evidence %q", text, got, evidence)
		}
	}
}
