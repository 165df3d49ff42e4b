package llm_test

// Seed 002 (planning), AC2 `plan.decompose`: the integration scenarios at the
// LLM boundary. plan.decompose asks the model, in JSON mode, to split a goal
// into subtasks; these tests make that call through the providers llm.New
// builds, against servers that speak each wire protocol.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/llm"
)

const decomposeSystem = `You are a planner. Split the user's goal into subtasks. Answer with JSON only:
{"subtasks": [{"id": "short-id", "description": "...", "dependencies": ["id", ...]}]}`

const decomposeAnswer = `{"subtasks": [
	{"id": "foundation", "description": "Pour the foundation", "dependencies": []},
	{"id": "walls", "description": "Raise the walls", "dependencies": ["foundation"]},
	{"id": "roof", "description": "Put on the roof", "dependencies": ["walls"]}
]}`

type subtask struct {
	ID           string   `json:"id"`
	Description  string   `json:"description"`
	Dependencies []string `json:"dependencies"`
}

// decompose is the call plan.decompose makes, and the parse of its answer.
func decompose(ctx context.Context, p llm.Provider, goal string) ([]subtask, llm.Response, error) {
	req := llm.Prompt(decomposeSystem, "Goal: "+goal+"\nStrategy: flat")
	req.JSON = true
	req.Temperature = ptr(0.0)
	resp, err := p.Complete(ctx, req)
	if err != nil {
		return nil, resp, err
	}
	var plan struct {
		Subtasks []subtask `json:"subtasks"`
	}
	if err := json.Unmarshal([]byte(resp.Text), &plan); err != nil {
		return nil, resp, err
	}
	return plan.Subtasks, resp, nil
}

var wantSubtasks = []subtask{
	{"foundation", "Pour the foundation", []string{}},
	{"walls", "Raise the walls", []string{"foundation"}},
	{"roof", "Put on the roof", []string{"walls"}},
}

// Seed scenario 001.3R-INT-001.
func TestDecomposeCallThroughTheOllamaClient(t *testing.T) {
	srv := ollamaServer(t, fixed(decomposeAnswer))
	p, err := llm.New(llm.Config{Provider: "ollama", Model: "llama3.2", URL: srv.URL, HTTPClient: srv.Client(),
		Timeout: 5 * time.Second, Retries: 2, Sleep: (&sleeper{}).Sleep})
	if err != nil {
		t.Fatal(err)
	}
	subtasks, resp, err := decompose(context.Background(), p, "Build a house")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(subtasks, wantSubtasks) {
		t.Errorf("subtasks %+v", subtasks)
	}
	if resp.Model != "llama3.2" || resp.Usage != (llm.Usage{PromptTokens: 26, CompletionTokens: 298}) {
		t.Errorf("response %+v", resp)
	}

	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/api/chat" {
		t.Fatalf("requests %+v", reqs)
	}
	body := reqs[0].Body
	if k := keys(body); !reflect.DeepEqual(k, []string{"format", "messages", "model", "options", "stream"}) {
		t.Errorf("body fields %v: %s", k, reqs[0].Raw)
	}
	if body["model"] != "llama3.2" || body["stream"] != false || body["format"] != "json" {
		t.Errorf("model %v, stream %v, format %v", body["model"], body["stream"], body["format"])
	}
	sameJSON(t, body["options"], `{"temperature": 0}`)
	msgs, _ := json.Marshal(body["messages"])
	want, _ := json.Marshal([]map[string]string{
		{"role": "system", "content": decomposeSystem},
		{"role": "user", "content": "Goal: Build a house\nStrategy: flat"},
	})
	if string(msgs) != string(want) {
		t.Errorf("messages %s, want %s", msgs, want)
	}
}

// Seed scenario 001.3R-INT-002.
func TestDecomposeCallThroughAnOpenAICompatibleClient(t *testing.T) {
	srv := openAIServer(t, fixed(decomposeAnswer))
	p, err := llm.New(llm.Config{Provider: "openai", Model: "gpt-4o-mini", URL: srv.URL + "/v1", HTTPClient: srv.Client(),
		Timeout: 5 * time.Second, Retries: 2, Sleep: (&sleeper{}).Sleep,
		Getenv: env(map[string]string{"OPENAI_API_KEY": "sk-test"})})
	if err != nil {
		t.Fatal(err)
	}
	subtasks, resp, err := decompose(context.Background(), p, "Build a house")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(subtasks, wantSubtasks) {
		t.Errorf("subtasks %+v", subtasks)
	}
	if resp.Model != "gpt-4o-mini-2024-07-18" || resp.Usage != (llm.Usage{PromptTokens: 9, CompletionTokens: 12}) {
		t.Errorf("response %+v", resp)
	}

	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("requests %+v", reqs)
	}
	got := reqs[0]
	if got.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("Authorization %q", got.Header.Get("Authorization"))
	}
	if k := keys(got.Body); !reflect.DeepEqual(k, []string{"messages", "model", "response_format", "temperature"}) {
		t.Errorf("body fields %v: %s", k, got.Raw)
	}
	sameJSON(t, got.Body["response_format"], `{"type": "json_object"}`)
	if got.Body["model"] != "gpt-4o-mini" || got.Body["temperature"] != 0.0 {
		t.Errorf("model %v temperature %v", got.Body["model"], got.Body["temperature"])
	}
	msgs, _ := got.Body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || msgs[0].(map[string]any)["content"] != decomposeSystem {
		t.Errorf("messages %v: the system prompt goes first", msgs)
	}
}

// Seed scenario 001.3R-INT-003.
func TestModelTimeoutIsATransientLLMError(t *testing.T) {
	for _, provider := range []string{"ollama", "openai"} {
		t.Run(provider, func(t *testing.T) {
			srv, url := serverFor(t, provider, fixed(decomposeAnswer))
			release := srv.hang() // the model never answers
			const retries = 2
			sl := &sleeper{}
			p, err := llm.New(llm.Config{Provider: provider, URL: url, HTTPClient: srv.Client(), Getenv: env(nil),
				Timeout: 50 * time.Millisecond, Retries: retries, Sleep: sl.Sleep})
			if err != nil {
				t.Fatal(err)
			}

			subtasks, _, err := decompose(context.Background(), p, "Build a house")
			if subtasks != nil {
				t.Errorf("subtasks %+v from a model that never answered", subtasks)
			}
			e := llmError(t, err)
			if !e.Transient || e.Attempts != retries+1 || e.Status != 0 {
				t.Errorf("transient %v, attempts %d, status %d; want true, %d, 0", e.Transient, e.Attempts, e.Status, retries+1)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v does not wrap context.DeadlineExceeded", err)
			}
			msg := err.Error()
			for _, want := range []string{"did not answer in time", "--llm-timeout", "after 3 attempts"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q should say %q", msg, want)
				}
			}
			if n := len(srv.requests()); n != retries+1 || len(sl.Waits()) != retries {
				t.Errorf("%d requests, waits %v", n, sl.Waits())
			}

			// Nothing is left waiting on the server: once it lets its
			// handlers go, Close (which waits for them) returns and none runs.
			release()
			srv.Close()
			if n := srv.running(); n != 0 {
				t.Errorf("%d handlers still running", n)
			}
		})
	}
}

// Seed scenario 001.3R-INT-004.
func TestTransientModelErrorsAreRetried(t *testing.T) {
	for _, provider := range []string{"ollama", "openai"} {
		t.Run(provider, func(t *testing.T) {
			srv, url := serverFor(t, provider, fixed(decomposeAnswer))
			busy := reply{Status: 503, Body: `{"error": "server overloaded, try again"}`}
			srv.then(busy, busy)
			sl := &sleeper{}
			p, err := llm.New(llm.Config{Provider: provider, URL: url, HTTPClient: srv.Client(), Getenv: env(nil),
				Timeout: 5 * time.Second, Retries: 2, Sleep: sl.Sleep})
			if err != nil {
				t.Fatal(err)
			}

			subtasks, _, err := decompose(context.Background(), p, "Build a house")
			if err != nil {
				t.Fatalf("the third attempt answers: %v", err)
			}
			if !reflect.DeepEqual(subtasks, wantSubtasks) {
				t.Errorf("subtasks %+v", subtasks)
			}
			reqs := srv.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for i := 1; i < 3; i++ {
				if string(reqs[i].Raw) != string(reqs[0].Raw) {
					t.Errorf("retry %d sent a different body:\n%s\n%s", i, reqs[i].Raw, reqs[0].Raw)
				}
			}
			// Two waits, exponential backoff with jitter from the default
			// 500ms base: [250ms, 500ms), then [500ms, 1s).
			w := sl.Waits()
			if len(w) != 2 || w[0] < 250*time.Millisecond || w[0] >= 500*time.Millisecond || w[1] < 500*time.Millisecond || w[1] >= time.Second {
				t.Errorf("waits %v", w)
			}
		})
	}
}

// serverFor starts a fake server of the provider's protocol and returns it
// with the base URL engram is given.
func serverFor(t *testing.T, provider string, chat func(map[string]any) string) (*wire, string) {
	t.Helper()
	if provider == "openai" {
		srv := openAIServer(t, chat)
		return srv, srv.URL + "/v1"
	}
	srv := ollamaServer(t, chat)
	return srv, srv.URL
}
