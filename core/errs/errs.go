// Package errs defines the error kinds of the batch contract (docs/batch.md). Every
// error an action returns is, or wraps, an *Error of one kind; errors.Is with
// the sentinels below (errors.Is(err, errs.ErrConflict)) and errors.As with
// *Error both work through any amount of %w wrapping.
package errs

import (
	"errors"
	"fmt"
)

// Kind names a class of failure; its string is what batch results report.
type Kind string

// The error kinds of docs/batch.md.
const (
	Parse                  Kind = "ParseError"
	Validation             Kind = "ValidationError"
	NotFound               Kind = "NotFoundError"
	Conflict               Kind = "ConflictError"
	Permission             Kind = "PermissionError"
	UnknownAction          Kind = "UnknownAction"
	UnsupportedInstruction Kind = "UnsupportedInstruction"
	Budget                 Kind = "BudgetError"
	CyclicDependency       Kind = "CyclicDependency"
	MaxReplansExceeded     Kind = "MaxReplansExceededError"
	Checkpoint             Kind = "CheckpointError"
	LLM                    Kind = "LLMError"
	StorageDamaged         Kind = "StorageDamaged"
	StorageFull            Kind = "StorageFull"
	// Unavailable: the engram that owns the data directory went away
	// while the request was in flight, so it may or may not have
	// committed. Retry it with the same idempotency key.
	Unavailable Kind = "Unavailable"
	Internal    Kind = "Internal"
)

// Kinds lists every kind, in the order of docs/batch.md.
func Kinds() []Kind {
	return []Kind{Parse, Validation, NotFound, Conflict, Permission, UnknownAction,
		UnsupportedInstruction, Budget, CyclicDependency, MaxReplansExceeded, Checkpoint, LLM,
		StorageDamaged, StorageFull, Unavailable, Internal}
}

// ParseKind returns the kind named s, if there is one.
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, true
		}
	}
	return "", false
}

// Sentinels for errors.Is: errors.Is(err, ErrNotFound) holds for every
// *Error of kind NotFound.
var (
	ErrParse                  = sentinel(Parse)
	ErrValidation             = sentinel(Validation)
	ErrNotFound               = sentinel(NotFound)
	ErrConflict               = sentinel(Conflict)
	ErrPermission             = sentinel(Permission)
	ErrUnknownAction          = sentinel(UnknownAction)
	ErrUnsupportedInstruction = sentinel(UnsupportedInstruction)
	ErrBudget                 = sentinel(Budget)
	ErrCyclicDependency       = sentinel(CyclicDependency)
	ErrMaxReplansExceeded     = sentinel(MaxReplansExceeded)
	ErrCheckpoint             = sentinel(Checkpoint)
	ErrLLM                    = sentinel(LLM)
	ErrStorageDamaged         = sentinel(StorageDamaged)
	ErrStorageFull            = sentinel(StorageFull)
	ErrUnavailable            = sentinel(Unavailable)
	ErrInternal               = sentinel(Internal)
)

// Error is a failure of one kind, with a message for people and details for
// programs (e.g. a ConflictError's current item).
type Error struct {
	Kind    Kind
	Message string
	Details map[string]any
	Err     error // the underlying cause, if any

	sentinel bool
}

func sentinel(k Kind) *Error { return &Error{Kind: k, Message: string(k), sentinel: true} }

// New returns an error of kind k with a formatted message. A %w verb in
// format wraps its argument as the cause; when the cause is (or wraps) an
// *Error, the new error starts with a copy of its details, so that context
// added around an error never loses the field it names or the state it
// carries.
func New(k Kind, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	cause := errors.Unwrap(wrapped)
	if multi, ok := wrapped.(interface{ Unwrap() []error }); ok && len(multi.Unwrap()) > 0 {
		// Several %w verbs: errors.Unwrap sees none of them, so keep the
		// joined wrapper itself as the cause, through which errors.Is and
		// errors.As reach every one.
		cause = wrapped
	}
	e := &Error{Kind: k, Message: wrapped.Error(), Err: cause}
	var inner *Error
	if cause != nil && errors.As(cause, &inner) && len(inner.Details) > 0 {
		e.Details = make(map[string]any, len(inner.Details))
		for key, v := range inner.Details {
			e.Details[key] = v
		}
	}
	return e
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.sentinel && t.Kind == e.Kind
}

// With returns e with one more detail set. On a sentinel (ErrNotFound...) it
// returns a new error of the sentinel's kind instead of changing the shared
// sentinel.
func (e *Error) With(key string, value any) *Error {
	if e.sentinel {
		e = &Error{Kind: e.Kind, Message: e.Message}
	}
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// KindOf is the kind of the first *Error in err's chain, Internal when there
// is none, and "" for a nil error.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// As returns err as an *Error with err's whole message (context added by
// wrapping included) and the kind and details of the first *Error in its
// chain; a new Internal error when there is none, and nil for a nil err.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		out := *e
		out.Message = err.Error()
		out.sentinel = false
		return &out
	}
	return &Error{Kind: Internal, Message: err.Error(), Err: err}
}
