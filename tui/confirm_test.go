package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"

	"github.com/charmbracelet/x/ansi"
)

type revertAsk struct {
	id      string
	version int
}

func TestConfirmYesHandsBackWhatWasAsked(t *testing.T) {
	t.Parallel()
	var c confirm[revertAsk]
	if c.Active() {
		t.Fatal("a new confirm asks nothing")
	}
	if a, _ := c.handleKey(keyMsg(t, "y")); a != answerNone {
		t.Errorf("y with nothing asked: %v", a)
	}
	c.open("Revert goal_launch to v2?", revertAsk{"goal_launch", 2})
	if !c.Active() || c.Question() != "Revert goal_launch to v2?" || c.Payload().version != 2 {
		t.Fatalf("opened: %+v", c)
	}
	a, got := c.handleKey(keyMsg(t, "Y"))
	if a != answerYes || got != (revertAsk{"goal_launch", 2}) {
		t.Errorf("Y: %v %+v", a, got)
	}
	if c.Active() || c.Payload() != (revertAsk{}) {
		t.Error("the answer did not close the question")
	}
}

func TestConfirmNoAndEscCancel(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"n", "N", "esc"} {
		c := confirm[func() int]{Yes: "compact"}
		c.open("Compact “x”?", func() int { return 1 })
		if a, f := c.handleKey(keyMsg(t, k)); a != answerCancel || f == nil || c.Active() {
			t.Errorf("%s: %v, still asking %v", k, a, c.Active())
		}
	}
	// A question whose n is an answer: n says no, esc cancels.
	c := confirm[string]{Yes: "correct", No: "incorrect"}
	c.open("Was it right?", "d1")
	if a, d := c.handleKey(keyMsg(t, "n")); a != answerNo || d != "d1" {
		t.Errorf("n: %v %q", a, d)
	}
	c.open("Was it right?", "d1")
	if a, _ := c.handleKey(keyMsg(t, "esc")); a != answerCancel {
		t.Errorf("esc: %v", a)
	}
}

func TestConfirmLeavesOtherKeysToThePane(t *testing.T) {
	t.Parallel()
	c := confirm[int]{Yes: "forget"}
	c.open("Forget it?", 7)
	for _, k := range []string{"up", "j", "pgdown", "q", "enter", "tab"} {
		if a, _ := c.handleKey(keyMsg(t, k)); a != answerNone {
			t.Errorf("%s answered %v", k, a)
		}
	}
	if !c.Active() || c.Payload() != 7 {
		t.Error("other keys closed the question")
	}
	c.setQuestion("Forget it now?")
	if c.Question() != "Forget it now?" || c.Payload() != 7 {
		t.Errorf("reworded: %q %d", c.Question(), c.Payload())
	}
	c.close()
	if c.Active() || c.View(&Styles{}, 80) != "" || c.ViewRuled(&Styles{}, 80) != nil || c.Keys() != nil {
		t.Error("closed, it still shows")
	}
}

// TestConfirmReadsAsThePanesAsk: the words of the questions the Goals,
// Threads and Memory tabs ask now (their golden frames) come out the same.
func TestConfirmReadsAsThePanesAsk(t *testing.T) {
	t.Parallel()
	st := DefaultStyles()
	goals := confirm[revertAsk]{Yes: "revert", Hint: " (y/n)", CancelKey: "n"}
	goals.open("Revert goal_launch to v2? This creates v5.", revertAsk{})
	if got := ansi.Strip(goals.View(&st, 100)); got != " Revert goal_launch to v2? This creates v5. (y/n)" {
		t.Errorf("goals: %q", got)
	}
	if got := helpLine(goals.Keys()); got != "y revert · n cancel" {
		t.Errorf("goals footer: %q", got)
	}

	threads := confirm[string]{Yes: "compact"}
	threads.open("Compact 3 turns of “Trip”?", "t1")
	lines := threads.ViewRuled(&st, 60)
	if len(lines) != 2 || ansi.Strip(lines[0]) != strings.Repeat("─", 60) {
		t.Fatalf("threads rule: %q", lines)
	}
	if got := ansi.Strip(lines[1]); got != " Compact 3 turns of “Trip”?  y compact · n/esc cancel" {
		t.Errorf("threads: %q", got)
	}
	if got := helpLine(threads.Keys()); got != "y compact · n/esc cancel" {
		t.Errorf("threads footer: %q", got)
	}

	outcome := confirm[string]{Yes: "correct", No: "incorrect", YesHelp: "it was correct", NoHelp: "it was incorrect"}
	outcome.open("Was LINK of “a” and “b” right?", "d")
	if got := ansi.Strip(outcome.View(&st, 100)); got != " Was LINK of “a” and “b” right?  y correct · n incorrect · esc cancel" {
		t.Errorf("outcome: %q", got)
	}
	if got := helpLine(outcome.Keys()); got != "y it was correct · n it was incorrect · esc cancel" {
		t.Errorf("outcome footer: %q", got)
	}

	forget := confirm[int]{Yes: "forget them", Hint: " y erases · n changes the instruction", Danger: true, CancelKey: "n"}
	forget.open("Erase these 2 items for good (hard, no undo)?", 2)
	if got := ansi.Strip(forget.View(&st, 100)); got != " Erase these 2 items for good (hard, no undo)? y erases · n changes the instruction" {
		t.Errorf("forget: %q", got)
	}
	// Cut to the width, by screen cells.
	if got := forget.View(&st, 30); ansi.StringWidth(got) != 30 || ansi.Strip(got)[len(ansi.Strip(got))-len("…"):] != "…" {
		t.Errorf("cut: %q (%d cells)", ansi.Strip(got), ansi.StringWidth(got))
	}
}

// helpLine is the footer's reading of keys: "y revert · n cancel".
func helpLine(keys []key.Binding) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, k.Help().Key+" "+k.Help().Desc)
	}
	return strings.Join(parts, " · ")
}
