package llm

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// ErrNoModel is wrapped by the errors of the offline provider.
var ErrNoModel = errors.New("no language model configured")

// Error is a failed model call.
type Error struct {
	Provider string // "ollama", "openai", "replay", "offline"
	Op       string // "chat" or "embed"
	// Status is the HTTP status of the failure, 0 when there was no answer.
	Status int
	// Transient failures (timeouts, refused or reset connections, 429, 5xx)
	// were retried and may succeed later; others (bad request, unknown model,
	// no model) will not.
	Transient bool
	// Attempts is how many times the call was tried.
	Attempts int
	// RetryAfter is how long the server asked us to wait (429/503), if it did.
	RetryAfter time.Duration
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	msg := e.Provider
	if e.Op != "" {
		msg += " " + e.Op
	}
	switch {
	case e.Attempts > 1:
		msg += fmt.Sprintf(" failed after %d attempts", e.Attempts)
	default:
		msg += " failed"
	}
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	return msg + ": " + e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ParseError is a model answer that should have been JSON and is not.
type ParseError struct {
	// Raw is the model's whole answer.
	Raw string
	// Reason says what is wrong with it, in JSON's terms.
	Reason string
}

// displayLimit is how much of a raw answer error messages show.
const displayLimit = 300

func (e *ParseError) Error() string {
	return fmt.Sprintf("the model's answer is not the JSON asked for (%s): %q", e.Reason, e.Display())
}

// Display is the raw answer, cut to a readable length.
func (e *ParseError) Display() string { return Truncate(e.Raw, displayLimit) }

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes)", len(s)-cut)
}
