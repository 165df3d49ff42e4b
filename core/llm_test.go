package core

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
)

func engineWith(t *testing.T, p llm.Provider) *Engine {
	t.Helper()
	e, err := Open(Options{InMemory: true, Clock: clock.NewFixed(t0), LLM: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

func TestLLMCompleteAnswers(t *testing.T) {
	model := llmtest.New("Hello there, engram.")
	model.Model = "tiny"
	e := engineWith(t, model)
	res := decode[LLMCompleteResult](t, do(t, e, "llm.complete", "", `{"prompt": "Say hello", "system": "Be brief.", "model": "other"}`))
	if res.Text != "Hello there, engram." || res.Provider != "scripted" || res.Model != "tiny" {
		t.Errorf("result %+v", res)
	}
	if res.TokenCount != llm.CountTokens(res.Text) || res.TokenCount == 0 {
		t.Errorf("token_count %d, want the tokenizer's %d", res.TokenCount, llm.CountTokens(res.Text))
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].System != "Be brief." || reqs[0].Messages[0].Content != "Say hello" || reqs[0].Model != "other" || reqs[0].JSON {
		t.Errorf("the model was asked %+v", reqs)
	}
	info := decode[Info](t, do(t, e, "engine.info", "", ""))
	if info.Provider != "scripted" || info.Model != "tiny" {
		t.Errorf("engine.info provider %q model %q", info.Provider, info.Model)
	}
}

func TestLLMCompleteOffline(t *testing.T) {
	e, _ := newEngine(t)
	got := doErrAs(t, e, Request{Action: "llm.complete", Args: []byte(`{"prompt": "hi"}`)}, errs.LLM, "--llm ollama")
	if got.Details["transient"] != false || got.Details["attempts"] != 0 || got.Details["provider"] != "offline" {
		t.Errorf("details %v", got.Details)
	}
	if !errors.Is(got, llm.ErrNoModel) {
		t.Error("the offline error does not wrap llm.ErrNoModel")
	}
}

func TestLLMCompleteValidation(t *testing.T) {
	e := engineWith(t, llmtest.New())
	doErr(t, e, Request{Action: "llm.complete", Args: []byte(`{}`)}, errs.Validation, "args.prompt is required")
	doErr(t, e, Request{Action: "llm.complete", Args: []byte(`{"prompt": ""}`)}, errs.Validation, "prompt: must not be empty")
	doErr(t, e, Request{Action: "llm.complete", Args: []byte(`{"prompt": "x", "json": "yes"}`)}, errs.Validation, "args.json: expected boolean")
}

func TestLLMCompleteTransientFailure(t *testing.T) {
	model := &llmtest.Scripted{Answers: []llmtest.Answer{llmtest.Transient("upstream overloaded")}}
	e := engineWith(t, llm.WithRetry(model, llm.RetryPolicy{Attempts: 1}))
	got := doErrAs(t, e, Request{Action: "llm.complete", Args: []byte(`{"prompt": "hi"}`)}, errs.LLM, "upstream overloaded")
	if got.Details["transient"] != true || got.Details["attempts"] != 1 {
		t.Errorf("details %v", got.Details)
	}
}

func TestLLMCompleteJSONThatIsNot(t *testing.T) {
	answer := "Sure! " + strings.Repeat("Here is a long explanation instead of JSON. ", 100)
	model := llmtest.New(answer)
	e := engineWith(t, llm.CheckJSON(model))
	got := doErrAs(t, e, Request{Action: "llm.complete", Args: []byte(`{"prompt": "give JSON", "json": true}`)}, errs.Parse, "not the JSON asked for")
	raw, _ := got.Details["raw"].(string)
	if !strings.HasPrefix(raw, "Sure! Here is") || len(raw) >= len(answer) || !strings.Contains(raw, "more bytes") {
		t.Errorf("details.raw should be the answer cut for display, got %d bytes: %q", len(raw), llm.Truncate(raw, 80))
	}
	if len(got.Message) > 600 || strings.Contains(got.Message, "Go ") || strings.Contains(got.Message, "unmarshal") {
		t.Errorf("message is too long or shows internals: %q", got.Message)
	}
	if !model.Requests()[0].JSON {
		t.Error("the model was not asked for JSON")
	}
}

func TestLLMCompleteHonoursCancellation(t *testing.T) {
	e := engineWith(t, llmtest.New("never"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Do(ctx, Request{Action: "llm.complete", Args: []byte(`{"prompt": "hi"}`)})
	if errs.KindOf(err) != errs.LLM {
		t.Errorf("cancelled call: %v (%s), want an LLMError", err, errs.KindOf(err))
	}
}
