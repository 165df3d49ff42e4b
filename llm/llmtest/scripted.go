// Package llmtest is a scripted language model for Go tests: every subsystem
// tests its model paths with it, without a network or a real model.
package llmtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/engram-console/engram/llm"
)

// Answer is one scripted outcome: a text, or an error.
type Answer struct {
	Text string
	Err  error
}

// Text is a scripted answer.
func Text(s string) Answer { return Answer{Text: s} }

// Fail is a scripted failure.
func Fail(err error) Answer { return Answer{Err: err} }

// Transient is a scripted transient failure (as a timeout or a 503 would be).
func Transient(msg string) Answer {
	return Answer{Err: &llm.Error{Provider: "scripted", Op: "chat", Transient: true, Msg: msg}}
}

// Scripted is a llm.Provider that answers from a script: either a list of
// answers given in order, or a function of the request. It records every
// request, counts calls, and is safe for concurrent use. Embed answers from
// EmbedFunc, or fails.
type Scripted struct {
	// Model is what Info reports (default "scripted").
	Model string
	// Answers are returned in order; running out is a test failure reported
	// as an error naming the request.
	Answers []Answer
	// Func, when set, answers instead of Answers.
	Func func(req llm.Request) Answer
	// EmbedFunc answers Embed calls.
	EmbedFunc func(req llm.EmbedRequest) ([][]float32, error)

	mu       sync.Mutex
	requests []llm.Request
	embeds   []llm.EmbedRequest
}

// New returns a provider answering with texts, in order.
func New(texts ...string) *Scripted {
	s := &Scripted{}
	for _, t := range texts {
		s.Answers = append(s.Answers, Text(t))
	}
	return s
}

// Info names the scripted model.
func (s *Scripted) Info() llm.Info {
	model := s.Model
	if model == "" {
		model = "scripted"
	}
	return llm.Info{Provider: "scripted", Model: model, EmbedModel: model}
}

// Complete answers from the script.
func (s *Scripted) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, &llm.Error{Provider: "scripted", Op: "chat", Transient: true, Msg: "cancelled", Err: err}
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	fn := s.Func
	var a Answer
	var ran bool
	if fn == nil {
		if n < len(s.Answers) {
			a = s.Answers[n]
		} else {
			ran = true
		}
	}
	s.mu.Unlock()
	if fn != nil {
		a = fn(req)
	}
	if ran {
		last := ""
		if len(req.Messages) > 0 {
			last = req.Messages[len(req.Messages)-1].Content
		}
		return llm.Response{}, fmt.Errorf("llmtest: call %d has no scripted answer (only %d scripted); request: %q", n+1, len(s.Answers), llm.Truncate(last, 120))
	}
	if a.Err != nil {
		return llm.Response{}, a.Err
	}
	return llm.Response{Text: a.Text, Model: s.Info().Model, Usage: llm.Usage{
		PromptTokens: llm.CountTokens(req.System) + countMessages(req.Messages), CompletionTokens: llm.CountTokens(a.Text),
	}}, nil
}

func countMessages(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += llm.CountTokens(m.Content)
	}
	return n
}

// Embed answers from EmbedFunc.
func (s *Scripted) Embed(ctx context.Context, req llm.EmbedRequest) (llm.EmbedResponse, error) {
	s.mu.Lock()
	s.embeds = append(s.embeds, req)
	fn := s.EmbedFunc
	s.mu.Unlock()
	if fn == nil {
		return llm.EmbedResponse{}, &llm.Error{Provider: "scripted", Op: "embed", Msg: "no EmbedFunc scripted"}
	}
	vectors, err := fn(req)
	if err != nil {
		return llm.EmbedResponse{}, err
	}
	return llm.EmbedResponse{Vectors: vectors, Model: s.Info().EmbedModel}, nil
}

// Calls is how many Complete calls were made.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns a copy of every Complete request, in order.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.requests...)
}

// EmbedRequests returns a copy of every Embed request, in order.
func (s *Scripted) EmbedRequests() []llm.EmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.EmbedRequest(nil), s.embeds...)
}
