// Package llm is engram's layer over language models: chat completion (with
// JSON output), embeddings, and the one tokenizer behind every token count.
// Every subsystem works without a model — the offline provider, the default,
// answers every call with ErrNoModel and subsystems fall back to their
// algorithmic paths — and a configured model (Ollama, any OpenAI-compatible
// server, or a replayed cassette) adds to them.
//
// The package knows nothing of engram's domain and imports nothing of it;
// core maps its errors onto the batch contract's error kinds.
package llm

import (
	"context"
	"encoding/json"
)

// Info names a provider and the models it uses.
type Info struct {
	Provider   string `json:"provider"`
	Model      string `json:"model,omitempty"`
	EmbedModel string `json:"embed_model,omitempty"`
}

// Message is one turn of a chat.
type Message struct {
	Role    string `json:"role" yaml:"role"` // "user", "assistant" or "system"
	Content string `json:"content" yaml:"content"`
}

// Request asks for a chat completion.
type Request struct {
	// System is the system prompt (may be empty).
	System string `json:"system,omitempty" yaml:"system,omitempty"`
	// Messages is the conversation so far; the last one is usually the user's.
	Messages []Message `json:"messages" yaml:"messages"`
	// JSON asks for an answer that is a JSON value (the answer is checked).
	JSON bool `json:"json,omitempty" yaml:"json,omitempty"`
	// Schema, if set, is the JSON schema the answer should follow; it implies JSON.
	Schema json.RawMessage `json:"schema,omitempty" yaml:"schema,omitempty"`
	// Model overrides the provider's model for this call.
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// Temperature, if set, is the sampling temperature (0 for the most repeatable answers).
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	// MaxTokens, if positive, bounds the answer's length.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
}

// WantsJSON reports whether the answer must be JSON.
func (r Request) WantsJSON() bool { return r.JSON || len(r.Schema) > 0 }

// Prompt is a request with one user message.
func Prompt(system, user string) Request {
	return Request{System: system, Messages: []Message{{Role: "user", Content: user}}}
}

// Usage counts the tokens of a call, as the server reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens" yaml:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens" yaml:"completion_tokens"`
}

// Response is a chat completion.
type Response struct {
	Text  string `json:"text" yaml:"text"`
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	Usage Usage  `json:"usage" yaml:"usage"`
}

// EmbedRequest asks for one embedding vector per text.
type EmbedRequest struct {
	Texts []string `json:"texts" yaml:"texts"`
	Model string   `json:"model,omitempty" yaml:"model,omitempty"`
}

// EmbedResponse holds the vectors, in the order of the texts.
type EmbedResponse struct {
	Vectors [][]float32 `json:"vectors" yaml:"vectors"`
	Model   string      `json:"model,omitempty" yaml:"model,omitempty"`
}

// Provider is a source of model answers. Implementations are safe for
// concurrent use.
type Provider interface {
	// Info names the provider and its models.
	Info() Info
	// Complete answers a chat.
	Complete(ctx context.Context, req Request) (Response, error)
	// Embed returns embedding vectors.
	Embed(ctx context.Context, req EmbedRequest) (EmbedResponse, error)
}

// Offline is the default provider: no model at all. Every call fails with an
// *Error wrapping ErrNoModel that says how to configure one.
type Offline struct{}

// Info says "offline".
func (Offline) Info() Info { return Info{Provider: "offline"} }

// Complete fails with ErrNoModel.
func (Offline) Complete(context.Context, Request) (Response, error) {
	return Response{}, noModel("chat")
}

// Embed fails with ErrNoModel.
func (Offline) Embed(context.Context, EmbedRequest) (EmbedResponse, error) {
	return EmbedResponse{}, noModel("embed")
}

func noModel(op string) error {
	return &Error{Provider: "offline", Op: op, Attempts: 0, Err: ErrNoModel,
		Msg: "no language model is configured; start engram with --llm ollama or --llm openai (and --model NAME) to use one"}
}

// Available reports whether p can answer at all (it is not Offline).
func Available(p Provider) bool {
	_, offline := p.(Offline)
	return p != nil && !offline
}
