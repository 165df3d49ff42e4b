package llm_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/engram-console/engram/llm"
)

// openAI builds the OpenAI-compatible provider the way engram does, against
// srv's /v1 (unless c says otherwise).
func openAI(t *testing.T, srv *wire, c llm.Config) llm.Provider {
	t.Helper()
	c.Provider = "openai"
	if c.URL == "" && c.Getenv == nil {
		c.URL = srv.URL + "/v1"
	}
	if c.Getenv == nil {
		c.Getenv = env(nil) // never the test runner's own OPENAI_API_KEY
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

func TestOpenAIChatRequestFields(t *testing.T) {
	srv := openAIServer(t, echo)
	p := openAI(t, srv, llm.Config{Model: "gpt-4o-mini"})
	resp, err := p.Complete(context.Background(), llm.Request{
		System:   "You are terse.",
		Messages: []llm.Message{{Role: "user", Content: "Name a river."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last()
	if got.Method != "POST" || got.Path != "/v1/chat/completions" {
		t.Errorf("%s %s, want POST /v1/chat/completions", got.Method, got.Path)
	}
	if k := keys(got.Body); !reflect.DeepEqual(k, []string{"messages", "model"}) {
		t.Errorf("body fields %v, want [messages model] (nothing unset): %s", k, got.Raw)
	}
	if got.Body["model"] != "gpt-4o-mini" {
		t.Errorf("model %v", got.Body["model"])
	}
	sameJSON(t, got.Body["messages"], `[
		{"role": "system", "content": "You are terse."},
		{"role": "user", "content": "Name a river."}]`)
	if h := got.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
	want := llm.Response{Text: "echo: Name a river.", Model: "gpt-4o-mini-2024-07-18", Usage: llm.Usage{PromptTokens: 9, CompletionTokens: 12}}
	if resp != want {
		t.Errorf("response %+v, want %+v", resp, want)
	}
}

func TestOpenAIJSONMode(t *testing.T) {
	srv := openAIServer(t, fixed(`{"ok": true}`))
	p := openAI(t, srv, llm.Config{})
	req := llm.Prompt("", "x")
	req.JSON = true
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, srv.last().Body["response_format"], `{"type": "json_object"}`)
	if srv.last().Body["model"] != llm.OpenAIDefaultModel {
		t.Errorf("model %v, want the default %s", srv.last().Body["model"], llm.OpenAIDefaultModel)
	}
}

func TestOpenAISchema(t *testing.T) {
	schema := `{"type": "object", "properties": {"subtasks": {"type": "array"}}, "required": ["subtasks"]}`
	srv := openAIServer(t, fixed(`{"subtasks": []}`))
	p := openAI(t, srv, llm.Config{})
	req := llm.Prompt("", "x")
	req.Schema = json.RawMessage(schema)
	req.JSON = true // a schema wins over plain JSON mode
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, srv.last().Body["response_format"],
		`{"type": "json_schema", "json_schema": {"name": "answer", "schema": `+schema+`}}`)
}

func TestOpenAISamplingOnlyWhenSet(t *testing.T) {
	srv := openAIServer(t, echo)
	p := openAI(t, srv, llm.Config{})
	req := llm.Prompt("", "x")
	req.Temperature = ptr(0.0)
	req.MaxTokens = 64
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	body := srv.last().Body
	if body["temperature"] != 0.0 || body["max_tokens"] != 64.0 {
		t.Errorf("temperature %v, max_tokens %v; want 0 and 64: %s", body["temperature"], body["max_tokens"], srv.last().Raw)
	}
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"temperature", "max_tokens", "response_format"} {
		if _, ok := srv.last().Body[k]; ok {
			t.Errorf("%s sent though unset: %s", k, srv.last().Raw)
		}
	}
}

func TestOpenAIBearerKeyOnlyWhenSet(t *testing.T) {
	srv := openAIServer(t, echo)
	p := openAI(t, srv, llm.Config{URL: srv.URL + "/v1", Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test-123"})})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	if h := srv.last().Header.Get("Authorization"); h != "Bearer sk-test-123" {
		t.Errorf("Authorization %q, want Bearer sk-test-123", h)
	}
	if _, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if h := srv.last().Header.Get("Authorization"); h != "Bearer sk-test-123" {
		t.Errorf("embeddings: Authorization %q, want Bearer sk-test-123", h)
	}
}

func TestOpenAIBaseURLFromEnvironmentAndFlag(t *testing.T) {
	srv := openAIServer(t, echo)
	other := openAIServer(t, echo)

	// OPENAI_BASE_URL, with a trailing slash.
	p := openAI(t, srv, llm.Config{Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1/"})})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 1 || srv.last().Path != "/v1/chat/completions" {
		t.Fatalf("OPENAI_BASE_URL not used: %d requests", n)
	}

	// --llm-url wins over OPENAI_BASE_URL.
	p = openAI(t, srv, llm.Config{URL: other.URL + "/v1", Getenv: env(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})})
	if _, err := p.Complete(context.Background(), llm.Prompt("", "x")); err != nil {
		t.Fatal(err)
	}
	if len(other.requests()) != 1 || len(srv.requests()) != 1 {
		t.Errorf("--llm-url did not win: %d requests to it, %d to OPENAI_BASE_URL", len(other.requests()), len(srv.requests()))
	}
}

func TestOpenAIDefaultBaseURL(t *testing.T) {
	// Without --llm-url or OPENAI_BASE_URL the request goes to api.openai.com;
	// a transport that records the URL instead of dialling checks it.
	var got string
	client := &recordingClient{onURL: func(u string) { got = u }}
	p, err := llm.New(llm.Config{Provider: "openai", HTTPClient: client.Client(), Getenv: env(nil), Retries: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Complete(context.Background(), llm.Prompt("", "x")) // fails: recordingClient does not dial
	if got != "https://api.openai.com/v1/chat/completions" {
		t.Errorf("request to %q", got)
	}
}

func TestOpenAIFailedAnswers(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
	}{
		{"refusal", `{"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`,
			"the model refused: I can't help with that."},
		{"null content", `{"model":"m","choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":null}}]}`,
			"no content (finish_reason length)"},
		{"no choices", `{"model":"m","choices":[]}`, "no choices"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newWire(t, func(seen) reply { return reply{Status: 200, Body: c.body} })
			p := openAI(t, srv, llm.Config{Retries: 2})
			_, err := p.Complete(context.Background(), llm.Prompt("", "x"))
			e := llmError(t, err)
			if !strings.Contains(e.Msg, c.want) || e.Transient || e.Attempts != 1 {
				t.Errorf("error %q (transient %v, attempts %d), want %q, not transient, 1 attempt", e.Msg, e.Transient, e.Attempts, c.want)
			}
		})
	}
}

func TestOpenAIEmptyContentIsAnAnswer(t *testing.T) {
	srv := newWire(t, func(seen) reply {
		return reply{Status: 200, Body: `{"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":""}}]}`}
	})
	resp, err := openAI(t, srv, llm.Config{}).Complete(context.Background(), llm.Prompt("", "x"))
	if err != nil || resp.Text != "" {
		t.Errorf("(%+v, %v), want an empty answer", resp, err)
	}
}

func TestOpenAIEmbeddings(t *testing.T) {
	srv := openAIServer(t, echo)
	p := openAI(t, srv, llm.Config{EmbedModel: "text-embedding-3-large"})
	texts := []string{"one", "two words", "three more words"}
	resp, err := p.Embed(context.Background(), llm.EmbedRequest{Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	got := srv.last()
	if got.Path != "/v1/embeddings" {
		t.Errorf("path %s", got.Path)
	}
	sameJSON(t, got.Body, `{"model": "text-embedding-3-large", "input": ["one", "two words", "three more words"]}`)
	// The server answered in reverse order; the vectors follow the texts.
	want := [][]float32{vectorOf(texts[0]), vectorOf(texts[1]), vectorOf(texts[2])}
	if !reflect.DeepEqual(resp.Vectors, want) {
		t.Errorf("vectors %v, want %v", resp.Vectors, want)
	}
	if info := p.Info(); info.EmbedModel != "text-embedding-3-large" || info.Model != llm.OpenAIDefaultModel {
		t.Errorf("info %+v", info)
	}
}

func TestOpenAIEmbeddingsBadIndexes(t *testing.T) {
	for name, body := range map[string]string{
		"missing":      `{"data":[{"index":0,"embedding":[1]}]}`,
		"out of range": `{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[2]}]}`,
		"negative":     `{"data":[{"index":-1,"embedding":[1]},{"index":1,"embedding":[2]}]}`,
		"duplicate":    `{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[2]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := newWire(t, func(seen) reply { return reply{Status: 200, Body: body} })
			_, err := openAI(t, srv, llm.Config{}).Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a", "b"}})
			if e := llmError(t, err); e.Transient || e.Op != "embed" {
				t.Errorf("error %+v", e)
			}
		})
	}
}

func TestOpenAIErrorBody(t *testing.T) {
	srv := openAIServer(t, echo)
	_, err := openAI(t, srv, llm.Config{Model: "missing", Retries: 3}).Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Status != 404 || e.Transient || e.Attempts != 1 {
		t.Errorf("status %d transient %v attempts %d", e.Status, e.Transient, e.Attempts)
	}
	if !strings.Contains(e.Msg, "The model `missing` does not exist") {
		t.Errorf("message %q does not carry the server's error.message", e.Msg)
	}
	if strings.Contains(e.Msg, "invalid_request_error") || strings.Contains(e.Msg, "{") {
		t.Errorf("message %q shows the raw error body", e.Msg)
	}
}

func TestOpenAIUnauthorizedNamesTheKey(t *testing.T) {
	srv := newWire(t, func(seen) reply {
		return reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-bad. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}
	})
	sl := &sleeper{}
	_, err := openAI(t, srv, llm.Config{Retries: 2, Sleep: sl.Sleep}).Complete(context.Background(), llm.Prompt("", "x"))
	e := llmError(t, err)
	if e.Status != 401 || e.Transient || e.Attempts != 1 || len(sl.Waits()) != 0 {
		t.Errorf("status %d transient %v attempts %d waits %v; want 401, not retried", e.Status, e.Transient, e.Attempts, sl.Waits())
	}
	if !strings.Contains(err.Error(), "OPENAI_API_KEY") || !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Errorf("error %q should carry the server's message and name OPENAI_API_KEY", err)
	}
}

func TestOpenAIPlainTextErrorBody(t *testing.T) {
	srv := newWire(t, func(seen) reply {
		return reply{Status: 400, Header: map[string]string{"Content-Type": "text/plain"}, Body: "  context length exceeded\n"}
	})
	_, err := openAI(t, srv, llm.Config{}).Complete(context.Background(), llm.Prompt("", "x"))
	if e := llmError(t, err); e.Msg != "context length exceeded" || e.Status != 400 {
		t.Errorf("error %+v", e)
	}
}
