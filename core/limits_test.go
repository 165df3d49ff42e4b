package core

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/core/kit"
)

// nested is a JSON value n arrays deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// Issue 13, item 4: a value nested past the limit is refused at the
// engine's edge, naming the field, before any action reads it.
func TestArgsNestedTooDeepAreRefusedNamingTheField(t *testing.T) {
	e, _ := newEngine(t)
	args := `{"input": "hi", "channel": ` + nested(input.MaxDepth) + `}`
	got := doErrAs(t, e, Request{Action: "turn.start", Args: json.RawMessage(args)}, errs.Validation,
		"channel"+strings.Repeat("[0]", input.MaxDepth-1), "nested more than 64 levels")
	if got.Details["field"] != "channel"+strings.Repeat("[0]", input.MaxDepth-1) {
		t.Errorf("details.field = %v", got.Details["field"])
	}
	if open := counts(t, e)["turns"]["open"]; open != 0 {
		t.Errorf("%d turn(s) open after a refused turn.start", open)
	}
	// 10,000 levels (what broke plans for good) is refused the same way.
	doErr(t, e, Request{Action: "turn.start", Args: json.RawMessage(`{"input": ` + nested(10000) + `}`)}, errs.Validation, "input[0]")
	// At the limit, the value reaches the action (which then says what it
	// thinks of an array for a channel).
	doErr(t, e, Request{Action: "turn.start", Args: json.RawMessage(`{"channel": ` + nested(input.MaxDepth-1) + `}`)}, errs.Validation, "channel: expected string")
}

// Issue 13, items 4 and 9: one action's args are at most input.MaxArgs.
func TestArgsOverTheSizeLimitAreRefused(t *testing.T) {
	e, _ := newEngine(t)
	big, _ := json.Marshal(map[string]string{"input": strings.Repeat("x", input.MaxArgs)})
	doErr(t, e, Request{Action: "turn.start", Args: big}, errs.Validation, "args: are 1 MiB; the limit is 1 MiB")
	if open := counts(t, e)["turns"]["open"]; open != 0 {
		t.Errorf("%d turn(s) open after a refused turn.start", open)
	}
}

// deepProvider contributes a working-memory section nested past what the
// JSON decoder accepts: it encodes, but the result holding it does not.
type deepProvider struct{}

func (deepProvider) Name() string { return "deep" }
func (deepProvider) Context(context.Context, kit.TurnStart) (kit.Section, error) {
	var v any = []any{}
	for range 10_001 {
		v = []any{v}
	}
	return kit.Section{Data: v}, nil
}
func (deepProvider) Commit(context.Context, *kit.Txn, kit.TurnEnd) (any, error) { return nil, nil }

// Issue 13, item 4: "turn.start fails while the turn was in fact started".
// A turn.start whose result cannot be encoded starts no turn.
func TestTurnStartWhoseResultCannotBeEncodedStartsNoTurn(t *testing.T) {
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{func(env *kit.Env) error {
		env.AddProvider(deepProvider{})
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	doErr(t, e, Request{Action: "turn.start", Args: json.RawMessage(`{"input": "hi"}`)}, errs.Internal, "no turn was started")
	doErr(t, e, Request{Action: "chat.send", Args: json.RawMessage(`{"text": "hi"}`)}, errs.Internal, "no turn was started")
	if open := counts(t, e)["turns"]["open"]; open != 0 {
		t.Errorf("%d turn(s) left open", open)
	}
}

// Issue 13, item 9: an action's panic (a bug) fails that action with an
// Internal error, and the engine goes on serving; the process never dies of
// it with the Go runtime's exit status 2.
func TestAPanickingActionFailsOnlyItself(t *testing.T) {
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{func(env *kit.Env) error {
		action.Register(env.Actions, action.Spec{Name: "test.panic", Summary: "panics"},
			func(context.Context, action.Call, action.None) (action.None, error) { panic("boom") })
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	doErr(t, e, Request{Action: "test.panic"}, errs.Internal, "test.panic failed with a bug (panic: boom)")
	do(t, e, "engine.info", "", "")
}

// Issue 13, item 4: "chat.send then leaves an open turn". When the turn's
// end fails (here the utterance is over the conversation's whole token
// budget), chat.send fails and the turn it started is ended, not left open.
func TestAFailedChatSendLeavesNoOpenTurn(t *testing.T) {
	e, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	do(t, e, "history.configure", "", `{"conversation": "default", "max_tokens": 3}`)
	doErr(t, e, Request{Action: "chat.send", Args: json.RawMessage(`{"text": "a message far longer than three tokens of budget"}`)}, errs.Budget, "ending the turn")
	if open := counts(t, e)["turns"]["open"]; open != 0 {
		t.Errorf("%d turn(s) left open", open)
	}
}

// A turn id another agent took shows nothing of that agent's turn: a
// review found turn.start's ConflictError carrying its input.
func TestAnotherAgentsTurnIdShowsNothingOfTheirTurn(t *testing.T) {
	e, _ := newEngine(t)
	if _, err := e.Do(context.Background(), Request{Action: "turn.start", Turn: "t1", Principal: "alice", Args: json.RawMessage(`{"input": "my password is swordfish"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"turn.start", "turn.end"} {
		_, err := e.Do(context.Background(), Request{Action: action, Turn: "t1", Principal: "bob", Args: json.RawMessage(`{}`)})
		if err == nil {
			t.Fatalf("%s on alice's turn id succeeded for bob", action)
		}
		if raw, _ := json.Marshal(errs.As(err)); strings.Contains(string(raw), "swordfish") || strings.Contains(err.Error(), "swordfish") {
			t.Errorf("%s shows bob alice's turn: %s", action, raw)
		}
	}
}
