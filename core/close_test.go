package core

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// TestCloseWaitsForActionsInFlight runs an action that blocks until told,
// closes the engine meanwhile, and checks that Close waits for it (its write
// lands in an open store) and that an action asked for once Close has begun
// is refused rather than run against a closing store.
func TestCloseWaitsForActionsInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	hold := func(env *kit.Env) error {
		action.Register(env.Actions, action.Spec{Name: "test.hold", Summary: "blocks until released, then writes"},
			func(ctx context.Context, call action.Call, _ struct{}) (struct{}, error) {
				close(started)
				<-release
				return struct{}{}, env.Store.Update(ctx, func(tx *storage.Tx) error {
					return tx.Set(storage.Key(storage.PrefixMeta, "held"), []byte("done"))
				})
			})
		return nil
	}
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{hold}})
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), Request{Action: "test.hold"})
		held <- err
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()

	// Close has begun once a new action is refused; until then, wait for it.
	for {
		_, err := e.Do(context.Background(), Request{Action: "engine.info"})
		if err == nil {
			continue
		}
		if errs.KindOf(err) != errs.Internal || !strings.Contains(err.Error(), "the engine is closing") {
			t.Fatalf("engine.info during Close: %v", err)
		}
		break
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while an action was still running", err)
	default:
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the action in flight failed: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestCloseLetsARunningActionRunItsParts: an action that runs other
// actions (chat.send, plan subtasks) while Close waits for it may still run
// them; only actions asked for from outside are refused.
func TestCloseLetsARunningActionRunItsParts(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var env *kit.Env
	composite := func(en *kit.Env) error {
		env = en
		action.Register(en.Actions, action.Spec{Name: "test.composite", Summary: "runs engine.info once released"},
			func(ctx context.Context, call action.Call, _ struct{}) (struct{}, error) {
				close(started)
				<-release
				_, err := env.Run(ctx, call, "engine.info", nil)
				return struct{}{}, err
			})
		return nil
	}
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{composite}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), Request{Action: "test.composite"})
		done <- err
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	for { // until Close has begun
		if _, err := e.Do(context.Background(), Request{Action: "engine.info"}); err != nil {
			break
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the running action's own engine.info was refused: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// answerNever is a model that answers only when the request is cancelled.
type answerNever struct{ asked chan struct{} }

func (m answerNever) Info() llm.Info { return llm.Info{Provider: "test", Model: "never"} }
func (m answerNever) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	close(m.asked)
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}
func (m answerNever) Embed(context.Context, llm.EmbedRequest) (llm.EmbedResponse, error) {
	return llm.EmbedResponse{}, errors.New("no embeddings")
}

// TestCancelledChatSendStillRecordsTheTurn: when the console quits while
// the model thinks (it closes the engine and cancels the send), the answer
// is given up but the turn is finished: the user's message is written, not
// left half recorded.
func TestCancelledChatSendStillRecordsTheTurn(t *testing.T) {
	model := answerNever{asked: make(chan struct{})}
	e, err := Open(Options{InMemory: true, IDSeed: "cancel test", LLM: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	var res ChatSendResult
	go func() {
		var err error
		res, err = conn.Call(ctx, e, ActionChatSend, ChatSendArgs{Text: "Book the venue by Friday"})
		sent <- err
	}()
	<-model.asked
	// The console quits: it closes the engine and cancels what it asked.
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	for { // until Close has begun
		if _, err := e.Do(context.Background(), Request{Action: "engine.info"}); err != nil {
			break
		}
	}
	cancel()
	if err := <-sent; err != nil {
		t.Fatalf("chat.send: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if res.Answered || res.LLMError == "" {
		t.Errorf("answered %v, llm error %q: want no answer and the reason", res.Answered, res.LLMError)
	}
	if len(res.Committed) == 0 || !strings.Contains(string(res.Committed["history"]), "Book the venue by Friday") {
		t.Errorf("committed %s: want the user's message written", res.Committed)
	}
}
