package errs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
)

var sentinels = map[Kind]error{
	Parse: ErrParse, Validation: ErrValidation, NotFound: ErrNotFound, Conflict: ErrConflict,
	Permission: ErrPermission, UnknownAction: ErrUnknownAction, UnsupportedInstruction: ErrUnsupportedInstruction,
	Budget: ErrBudget, CyclicDependency: ErrCyclicDependency, MaxReplansExceeded: ErrMaxReplansExceeded,
	Checkpoint: ErrCheckpoint, LLM: ErrLLM, StorageDamaged: ErrStorageDamaged, StorageFull: ErrStorageFull,
	Unavailable: ErrUnavailable,
	Internal:    ErrInternal,
}

func TestKindsMatchBatchContract(t *testing.T) {
	want := []string{"ParseError", "ValidationError", "NotFoundError", "ConflictError", "PermissionError",
		"UnknownAction", "UnsupportedInstruction", "BudgetError", "CyclicDependency", "MaxReplansExceededError",
		"CheckpointError", "LLMError", "StorageDamaged", "StorageFull", "Unavailable", "Internal"}
	got := Kinds()
	if len(got) != len(want) {
		t.Fatalf("Kinds() has %d kinds, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("Kinds()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	if len(sentinels) != len(want) {
		t.Fatalf("test table has %d sentinels", len(sentinels))
	}
}

func TestIsMatchesOnlyItsKind(t *testing.T) {
	for _, k := range Kinds() {
		err := New(k, "something about %s", "x")
		wrapped := fmt.Errorf("step 3: %w", err)
		twice := fmt.Errorf("outer: %w", wrapped)
		for other, s := range sentinels {
			want := other == k
			for _, e := range []error{err, wrapped, twice} {
				if got := errors.Is(e, s); got != want {
					t.Errorf("errors.Is(%q [%s], Err%s) = %v, want %v", e, k, other, got, want)
				}
			}
		}
	}
}

func TestIsNotFooledByPlainErrors(t *testing.T) {
	for k, s := range sentinels {
		if errors.Is(errors.New(string(k)), s) {
			t.Errorf("a plain error whose text is %q matched Err%s", k, k)
		}
	}
	// Two distinct non-sentinel errors of the same kind are not each other.
	a, b := New(NotFound, "a"), New(NotFound, "a")
	if errors.Is(a, b) {
		t.Error("errors.Is matched two distinct *Error values")
	}
}

func TestErrorsAs(t *testing.T) {
	inner := New(Conflict, "item %q changed", "g1").With("current", map[string]int{"version": 6})
	err := fmt.Errorf("cortex.update: %w", inner)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal("errors.As found no *Error")
	}
	if e != inner {
		t.Fatalf("errors.As found %p, want the inner %p", e, inner)
	}
	if e.Kind != Conflict || e.Message != `item "g1" changed` {
		t.Fatalf("got %s %q", e.Kind, e.Message)
	}
	if err.Error() != `cortex.update: item "g1" changed` {
		t.Fatalf("wrapped message %q", err.Error())
	}
}

func TestKindOf(t *testing.T) {
	if got := KindOf(nil); got != "" {
		t.Fatalf("KindOf(nil) = %q, want \"\"", got)
	}
	if got := KindOf(errors.New("disk on fire")); got != Internal {
		t.Fatalf("KindOf(plain) = %q, want Internal", got)
	}
	if got := KindOf(io.EOF); got != Internal {
		t.Fatalf("KindOf(io.EOF) = %q", got)
	}
	for _, k := range Kinds() {
		err := fmt.Errorf("a: %w", fmt.Errorf("b: %w", New(k, "c")))
		if got := KindOf(err); got != k {
			t.Errorf("KindOf(wrapped %s) = %q", k, got)
		}
	}
	// The first *Error in the chain decides.
	outer := New(Validation, "bad ref: %w", New(NotFound, "no step"))
	if got := KindOf(outer); got != Validation {
		t.Fatalf("KindOf(Validation wrapping NotFound) = %q", got)
	}
	if !errors.Is(outer, ErrNotFound) {
		t.Fatal("the wrapped NotFound cause is not reachable with errors.Is")
	}
}

func TestAs(t *testing.T) {
	inner := New(Conflict, "version 5 is stale").With("current", "v6")
	err := fmt.Errorf("step a2: %w", inner)
	got := As(err)
	if got.Kind != Conflict {
		t.Fatalf("As kind %q", got.Kind)
	}
	if got.Message != "step a2: version 5 is stale" {
		t.Fatalf("As message %q; want the outer message with its context", got.Message)
	}
	if got.Details["current"] != "v6" {
		t.Fatalf("As details %v", got.Details)
	}
	if !errors.Is(got, ErrConflict) {
		t.Fatal("As result does not match ErrConflict")
	}
	if inner.Message != "version 5 is stale" {
		t.Fatalf("As changed the inner error: %q", inner.Message)
	}

	plain := errors.New("boom")
	gp := As(fmt.Errorf("doing x: %w", plain))
	if gp.Kind != Internal || gp.Message != "doing x: boom" {
		t.Fatalf("As(plain) = %s %q", gp.Kind, gp.Message)
	}
	if !errors.Is(gp, plain) {
		t.Fatal("As(plain) lost the cause")
	}
	if !errors.Is(gp, ErrInternal) {
		t.Fatal("As(plain) is not ErrInternal")
	}

	// A sentinel returned as is: As gives a usable error of that kind that is
	// no longer a sentinel (it must not match other NotFound errors' targets).
	gs := As(ErrNotFound)
	if gs.Kind != NotFound || gs == ErrNotFound || gs.sentinel {
		t.Fatalf("As(ErrNotFound) = %+v", gs)
	}
	if As(nil) != nil {
		t.Fatal("As(nil) should be nil")
	}
}

func TestParseKindRoundTrip(t *testing.T) {
	for _, k := range Kinds() {
		got, ok := ParseKind(string(k))
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, ok)
		}
	}
	for _, bad := range []string{"", "parseerror", "Parse", "NotFound", "ValidationError ", "Error"} {
		if k, ok := ParseKind(bad); ok {
			t.Errorf("ParseKind(%q) = %q, true", bad, k)
		}
	}
}

func TestNewKeepsCause(t *testing.T) {
	err := New(Internal, "reading %s: %w", "f", fs.ErrNotExist)
	if err.Message != "reading f: "+fs.ErrNotExist.Error() {
		t.Fatalf("message %q", err.Message)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("errors.Is does not reach the %w cause")
	}
	if err.Unwrap() != fs.ErrNotExist {
		t.Fatalf("Unwrap = %v", err.Unwrap())
	}
	// Without %w there is no cause, and %v only formats.
	if e := New(Internal, "reading: %v", fs.ErrNotExist); e.Err != nil || errors.Is(e, fs.ErrNotExist) {
		t.Fatalf("%%v made a cause: %v", e.Err)
	}
	// Several %w: every cause stays reachable.
	two := New(Internal, "a: %w; b: %w", fs.ErrNotExist, io.EOF)
	if !errors.Is(two, fs.ErrNotExist) || !errors.Is(two, io.EOF) {
		t.Fatalf("two %%w causes: Is(ErrNotExist)=%v Is(EOF)=%v", errors.Is(two, fs.ErrNotExist), errors.Is(two, io.EOF))
	}
	if two.Error() != "a: file does not exist; b: EOF" {
		t.Fatalf("two-cause message %q", two.Error())
	}
	// A %w'd *Error is found by errors.As behind the new one.
	inner := New(NotFound, "no goal")
	outer := New(Validation, "ref: %w", inner)
	var e *Error
	if !errors.As(outer.Err, &e) || e != inner {
		t.Fatal("errors.As on the cause does not find the inner *Error")
	}
}

func TestWith(t *testing.T) {
	e := New(Validation, "x").With("field", "limit").With("got", 3)
	if e.Details["field"] != "limit" || e.Details["got"] != 3 {
		t.Fatalf("details %v", e.Details)
	}
	// With on a sentinel must not change the shared sentinel.
	d := ErrNotFound.With("id", "g1")
	if ErrNotFound.Details != nil {
		t.Fatalf("With changed the ErrNotFound sentinel: %v", ErrNotFound.Details)
	}
	if d.Details["id"] != "g1" || d.Kind != NotFound || !errors.Is(d, ErrNotFound) {
		t.Fatalf("With on a sentinel gave %+v", d)
	}
	// Concurrent use of a sentinel's With is safe (-race).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = ErrConflict.With("n", i) }()
	}
	wg.Wait()
	if ErrConflict.Details != nil {
		t.Fatal("ErrConflict sentinel gained details")
	}
}

func TestErrorMessage(t *testing.T) {
	e := New(Validation, "args.limit: expected %s, got %s", "integer", "string")
	if e.Error() != "args.limit: expected integer, got string" {
		t.Fatalf("Error() = %q", e.Error())
	}
	if !strings.Contains(ErrBudget.Error(), "BudgetError") {
		t.Fatalf("sentinel message %q", ErrBudget.Error())
	}
}
