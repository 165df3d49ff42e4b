package llm_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/engram-console/engram/llm"
)

// ollama builds the Ollama provider the way engram does, against srv.
func ollama(t *testing.T, srv *wire, c llm.Config) llm.Provider {
	t.Helper()
	c.Provider = "ollama"
	if c.URL == "" {
		c.URL = srv.URL
	}
	if c.HTTPClient == nil {
		c.HTTPClient = srv.Client()
	}
	if c.Sleep == nil {
		c.Sleep = (&sleeper{}).Sleep
	}
	p, err := llm.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOllamaChatRequestFields(t *testing.T) {
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{Model: "llama3.2"})

	resp, err := p.Complete(context.Background(), llm.Request{
		System: "You are terse.",
		Messages: []llm.Message{
			{Role: "user", Content: "Name a river."},
			{Role: "assistant", Content: "The Loire."},
			{Role: "user", Content: "Another."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last()
	if got.Method != "POST" || got.Path != "/api/chat" {
		t.Errorf("%s %s, want POST /api/chat", got.Method, got.Path)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if got.Header.Get("Authorization") != "" {
		t.Errorf("Ollama needs no Authorization header, sent %q", got.Header.Get("Authorization"))
	}
	// A plain chat sends exactly these fields: no format, no options.
	if k := keys(got.Body); !reflect.DeepEqual(k, []string{"messages", "model", "stream"}) {
		t.Errorf("body fields %v, want [messages model stream]: %s", k, got.Raw)
	}
	if got.Body["model"] != "llama3.2" {
		t.Errorf("model %v", got.Body["model"])
	}
	if got.Body["stream"] != false {
		t.Errorf("stream %v, want false", got.Body["stream"])
	}
	sameJSON(t, got.Body["messages"], `[
		{"role": "system", "content": "You are terse."},
		{"role": "user", "content": "Name a river."},
		{"role": "assistant", "content": "The Loire."},
		{"role": "user", "content": "Another."}]`)

	// The answer: message.content, model, and the token counts Ollama reports.
	want := llm.Response{Text: "echo: Another.", Model: "llama3.2", Usage: llm.Usage{PromptTokens: 26, CompletionTokens: 298}}
	if resp != want {
		t.Errorf("response %+v, want %+v", resp, want)
	}
}

func TestOllamaChatWithoutSystemPrompt(t *testing.T) {
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "hi")); err != nil {
		t.Fatal(err)
	}
	got := srv.last()
	sameJSON(t, got.Body["messages"], `[{"role": "user", "content": "hi"}]`)
	if got.Body["model"] != llm.OllamaDefaultModel {
		t.Errorf("model %v, want the default %s", got.Body["model"], llm.OllamaDefaultModel)
	}
}

func TestOllamaJSONMode(t *testing.T) {
	srv := ollamaServer(t, fixed(`{"subtasks": ["a", "b"]}`))
	p := ollama(t, srv, llm.Config{})
	req := llm.Prompt("Answer in JSON.", "Plan it.")
	req.JSON = true
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.last().Body["format"]; got != "json" {
		t.Errorf(`format %#v, want "json"`, got)
	}
	if resp.Text != `{"subtasks": ["a", "b"]}` {
		t.Errorf("text %q", resp.Text)
	}
}

func TestOllamaSchemaIsSentAsFormat(t *testing.T) {
	schema := `{"type": "object", "properties": {"subtasks": {"type": "array", "items": {"type": "string"}}}, "required": ["subtasks"]}`
	srv := ollamaServer(t, fixed(`{"subtasks": []}`))
	p := ollama(t, srv, llm.Config{})
	req := llm.Prompt("", "Plan it.")
	req.Schema = json.RawMessage(schema)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// Structured outputs: "format" is the schema object itself, not a string.
	sameJSON(t, srv.last().Body["format"], schema)
}

func TestOllamaOptionsOnlyWhenSet(t *testing.T) {
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{})

	req := llm.Prompt("", "x")
	req.Temperature = ptr(0.0) // zero is a setting, not "unset"
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, srv.last().Body["options"], `{"temperature": 0}`)

	req = llm.Prompt("", "x")
	req.MaxTokens = 128
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, srv.last().Body["options"], `{"num_predict": 128}`)

	req.Temperature = ptr(0.7)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, srv.last().Body["options"], `{"temperature": 0.7, "num_predict": 128}`)

	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.last().Body["options"]; ok {
		t.Errorf("options sent though none was set: %s", srv.last().Raw)
	}
}

func TestOllamaPerRequestModel(t *testing.T) {
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{Model: "llama3.2"})
	req := llm.Prompt("", "x")
	req.Model = "qwen2.5:7b"
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if srv.last().Body["model"] != "qwen2.5:7b" || resp.Model != "qwen2.5:7b" {
		t.Errorf("sent model %v, answer's model %q; want qwen2.5:7b", srv.last().Body["model"], resp.Model)
	}
	if info := p.Info(); info != (llm.Info{Provider: "ollama", Model: "llama3.2", EmbedModel: "llama3.2"}) {
		t.Errorf("info %+v", info)
	}
}

func TestOllamaEmbed(t *testing.T) {
	srv := ollamaServer(t, echo)
	p := ollama(t, srv, llm.Config{Model: "llama3.2", EmbedModel: "nomic-embed-text"})
	texts := []string{"why is the sky blue", "why is grass green"}
	resp, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last()
	if got.Path != "/api/embed" {
		t.Errorf("path %s, want /api/embed", got.Path)
	}
	if k := keys(got.Body); !reflect.DeepEqual(k, []string{"input", "model"}) {
		t.Errorf("body fields %v, want [input model]: %s", k, got.Raw)
	}
	sameJSON(t, got.Body, `{"model": "nomic-embed-text", "input": ["why is the sky blue", "why is grass green"]}`)
	want := [][]float32{vectorOf(texts[0]), vectorOf(texts[1])}
	if !reflect.DeepEqual(resp.Vectors, want) || resp.Model != "nomic-embed-text" {
		t.Errorf("embed %+v, want vectors %v from nomic-embed-text", resp, want)
	}
}

func TestOllamaEmbedCountMismatchIsAnError(t *testing.T) {
	srv := newWire(t, func(seen) reply {
		return reply{Status: 200, Body: `{"model": "m", "embeddings": [[0.1, 0.2]]}`}
	})
	p := ollama(t, srv, llm.Config{})
	_, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a", "b"}})
	e := llmError(t, err)
	if e.Transient || !strings.Contains(e.Msg, "different number of embeddings") {
		t.Errorf("error %+v", e)
	}
}

func TestOllamaModelNotFound(t *testing.T) {
	srv := ollamaServer(t, echo)
	sl := &sleeper{}
	p := ollama(t, srv, llm.Config{Model: "missing", Retries: 2, Sleep: sl.Sleep})
	_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Status != 404 || e.Transient || e.Attempts != 1 {
		t.Errorf("status %d transient %v attempts %d; want 404, false, 1", e.Status, e.Transient, e.Attempts)
	}
	if !strings.Contains(err.Error(), `model "missing" not found, try pulling it first`) {
		t.Errorf("error %q does not carry Ollama's message", err)
	}
	if !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "--model") {
		t.Errorf("error %q should say HTTP 404 and point at --model", err)
	}
	if n := len(srv.requests()); n != 1 || len(sl.Waits()) != 0 {
		t.Errorf("%d requests, waits %v: a 404 must not be retried", n, sl.Waits())
	}
}

func TestOllamaNotOllamaProtocol(t *testing.T) {
	srv := newWire(t, func(seen) reply {
		return reply{Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>It works!</html>"}
	})
	p := ollama(t, srv, llm.Config{})
	_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Transient || !strings.Contains(e.Msg, "did not answer in the ollama protocol") {
		t.Errorf("error %+v", e)
	}
}

func TestOllamaHost(t *testing.T) {
	for _, c := range []struct{ explicit, env, want string }{
		{"", "", "http://127.0.0.1:11434"},
		{"", "0.0.0.0", "http://127.0.0.1:11434"},
		{"", "0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"", "gpu-box", "http://gpu-box:11434"},
		{"", "gpu-box:9999", "http://gpu-box:9999"},
		{"", "10.0.0.5", "http://10.0.0.5:11434"},
		{"", ":11435", "http://127.0.0.1:11435"},
		{"", "[::1]", "http://[::1]:11434"},
		{"", "[::]:11434", "http://127.0.0.1:11434"},
		{"", `"gpu-box:1234"`, "http://gpu-box:1234"}, // quoted, as in a unit file
		{"", "  gpu-box  ", "http://gpu-box:11434"},
		{"", "http://gpu-box:11434/", "http://gpu-box:11434"},
		// A URL with a scheme but no port means that scheme's port, as in
		// Ollama's own client (a server behind a reverse proxy).
		{"", "http://gpu-box", "http://gpu-box:80"},
		{"", "https://ollama.example.com", "https://ollama.example.com:443"},
		{"", "https://example.com/ollama", "https://example.com:443/ollama"},
		// The explicit --llm-url wins over OLLAMA_HOST.
		{"http://127.0.0.1:7000", "gpu-box", "http://127.0.0.1:7000"},
		{"other:7000", "gpu-box", "http://other:7000"},
	} {
		if got := llm.OllamaHost(c.explicit, c.env); got != c.want {
			t.Errorf("OllamaHost(%q, %q) = %q, want %q", c.explicit, c.env, got, c.want)
		}
	}
}

func TestOllamaHostFromEnvironment(t *testing.T) {
	srv := ollamaServer(t, echo)
	// No --llm-url: OLLAMA_HOST (without a scheme, as Ollama allows) says where.
	host := strings.TrimPrefix(srv.URL, "http://")
	p, err := llm.New(llm.Config{Provider: "ollama", HTTPClient: srv.Client(),
		Getenv: env(map[string]string{"OLLAMA_HOST": host})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatalf("OLLAMA_HOST=%s was not used: %v", host, err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}
