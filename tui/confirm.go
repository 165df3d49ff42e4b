package tui

import (
	"cmp"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// answer is what a key did to a confirm's question.
type answer int

const (
	// answerNone: the key is not an answer; the question stays open and
	// the key is the caller's (to scroll what the question is about).
	answerNone answer = iota
	// answerYes: y. The question closes.
	answerYes
	// answerNo: n, when the question has a no of its own (confirm.No is
	// set, as in "was this decision correct?"). The question closes.
	answerNo
	// answerCancel: esc, or n when no is just "don't". The question closes.
	answerCancel
)

// confirm is a question asked before something that changes things: "y"
// does it, "n" or esc does not. It carries the caller's payload (what to
// do: an id and a version, a func() tea.Cmd, any value of type T) from the
// moment it is asked to the moment it is answered, so that the answer acts
// on what the question showed.
//
// It replaces goals.go's revertConfirm (askRevert/confirmKey and its
// overlay line), threads.go's threadsConfirm and outcome question
// (askTune/askCompact/confirmKey, ask/askKey, askLines) and the y/n of
// memory_forget.go's forgetConfirming stage (previewLines' question).
//
// Set the words once, open it with a question, and route keys to it while
// it is Active (the pane is then Capturing, so q and 1-7 do not escape):
//
//	p.confirm = confirm[revertConfirm]{Yes: "revert", Hint: " (y/n)", CancelKey: "n"}
//	p.confirm.open(fmt.Sprintf("Revert %s to v%d?", id, v), revertConfirm{id, v})
//	...
//	switch ans, c := p.confirm.handleKey(msg); ans {
//	case answerYes:
//		return p.revert(c)
//	case answerNone:
//		// not an answer: scroll, or ignore
//	}
type confirm[T any] struct {
	// Yes says what y does ("revert", "compact", "correct"): the hint after
	// the question reads "y revert · n/esc cancel", the footer "y revert".
	Yes string
	// No, when set, makes n an answer of its own ("incorrect") rather than
	// a cancel: the hint reads "y correct · n incorrect · esc cancel".
	No string
	// YesHelp and NoHelp, when set, replace Yes and No in the footer
	// ("it was correct").
	YesHelp, NoHelp string
	// CancelKey names the keys that cancel in the footer: "n/esc" unless
	// set ("n"), or "esc" when No is set.
	CancelKey string
	// Hint, when set, replaces the keys hint after the question: " (y/n)",
	// " y forgets · n changes the instruction".
	Hint string
	// Danger shows the question in the Failed style: for what cannot be
	// undone (an erase).
	Danger bool

	active   bool
	question string
	payload  T
}

// open asks question (without a leading space) about payload.
func (c *confirm[T]) open(question string, payload T) {
	c.active, c.question, c.payload = true, question, payload
}

// close takes the question away unanswered (the tab lost the focus).
func (c *confirm[T]) close() {
	var zero T
	c.active, c.question, c.payload = false, "", zero
}

// Active reports whether the question is open: keys go to handleKey.
func (c *confirm[T]) Active() bool { return c.active }

// Question is the question asked ("" when closed).
func (c *confirm[T]) Question() string { return c.question }

// setQuestion rewords the open question, the payload unchanged (what it
// says moved on: "This creates v6" once v5 came meanwhile).
func (c *confirm[T]) setQuestion(q string) { c.question = q }

// Payload is what the open question is about.
func (c *confirm[T]) Payload() T { return c.payload }

// handleKey answers the question with msg: y is yes, n is no (or cancel,
// when No is empty), esc cancels; an answer closes the question and hands
// back the payload. Any other key is answerNone, the question stays open
// and the key is the caller's. When closed, every key is answerNone.
func (c *confirm[T]) handleKey(msg tea.KeyMsg) (answer, T) {
	var zero T
	if !c.active {
		return answerNone, zero
	}
	var a answer
	switch {
	case key.Matches(msg, nav.Yes):
		a = answerYes
	case key.Matches(msg, nav.No) && c.No != "":
		a = answerNo
	case key.Matches(msg, nav.No, nav.Esc):
		a = answerCancel
	default:
		return answerNone, zero
	}
	payload := c.payload
	c.close()
	return a, payload
}

// hint is what follows the question: the keys and what they do.
func (c *confirm[T]) hint() string {
	switch {
	case c.Hint != "":
		return c.Hint
	case c.No != "":
		return "  y " + c.Yes + " · n " + c.No + " · esc cancel"
	}
	return "  y " + c.Yes + " · n/esc cancel"
}

// View is the question's line, width columns at most: " Revert x to v2?"
// in the Prompt style (Failed when Danger), then the keys hint, muted.
// Empty when closed.
func (c *confirm[T]) View(st *Styles, width int) string {
	if !c.active {
		return ""
	}
	style := st.Prompt
	if c.Danger {
		style = st.Failed
	}
	return truncateTo(style.Render(" "+c.question)+st.Muted.Render(c.hint()), width)
}

// ViewRuled is View under a rule across width: the two lines a question
// takes at the bottom of a pane (as the Threads tab asks). Nil when closed.
func (c *confirm[T]) ViewRuled(st *Styles, width int) []string {
	if !c.active {
		return nil
	}
	return []string{st.Rule.Render(strings.Repeat(glyphRule, max(width, 0))), c.View(st, width)}
}

// Keys are the question's keys for the footer: y, then n (when it is an
// answer) and what cancels. Nil when closed.
func (c *confirm[T]) Keys() []key.Binding {
	if !c.active {
		return nil
	}
	yes := withHelp(nav.Yes, "y", cmp.Or(c.YesHelp, c.Yes))
	if c.No != "" {
		return []key.Binding{yes, withHelp(nav.No, "n", cmp.Or(c.NoHelp, c.No)), withHelp(nav.Esc, cmp.Or(c.CancelKey, "esc"), "cancel")}
	}
	cancel := key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp(cmp.Or(c.CancelKey, "n/esc"), "cancel"))
	return []key.Binding{yes, cancel}
}
