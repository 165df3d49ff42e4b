package core

import (
	"context"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
)

// LLMCompleteArgs is llm.complete's arguments.
type LLMCompleteArgs struct {
	Prompt string `json:"prompt" arg:"required" help:"what to ask the model"`
	System string `json:"system,omitempty" help:"the system prompt"`
	JSON   bool   `json:"json,omitempty" help:"ask for a JSON answer (checked: an answer that is not JSON is a ParseError)"`
	Model  string `json:"model,omitempty" help:"a model other than --model for this call"`
}

// LLMCompleteResult is llm.complete's result: the model's answer.
type LLMCompleteResult struct {
	Text     string    `json:"text"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Usage    llm.Usage `json:"usage"`
	// TokenCount is the answer's length by engram's tokenizer (the one every
	// budget uses), whatever the server counted.
	TokenCount int `json:"token_count"`
}

func (e *Engine) registerLLM() {
	ActionLLMComplete.Register(e.env.Actions, action.Spec{Summary: "Ask the configured language model (fails with LLMError when offline)", ReadOnly: true}, e.complete)
}

func (e *Engine) complete(ctx context.Context, call action.Call, args LLMCompleteArgs) (LLMCompleteResult, error) {
	if args.Prompt == "" {
		return LLMCompleteResult{}, kit.Validation("prompt", "must not be empty")
	}
	req := llm.Prompt(args.System, args.Prompt)
	req.JSON, req.Model = args.JSON, args.Model
	resp, err := e.env.LLM.Complete(ctx, req)
	if err != nil {
		return LLMCompleteResult{}, kit.FromLLM(err)
	}
	return LLMCompleteResult{
		Text: resp.Text, Provider: e.env.LLM.Info().Provider, Model: resp.Model,
		Usage: resp.Usage, TokenCount: llm.CountTokens(resp.Text),
	}, nil
}
