package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
)

// TestOpenAICompatibleServer: `engram --llm openai --llm-url URL --model m
// --batch x.jsonl` works against any OpenAI-compatible server, and
// --record writes a cassette that --llm replay then answers from.
func TestOpenAICompatibleServer(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, `{"error": {"message": "no such route"}}`, http.StatusNotFound)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("the server was sent %q: %v", raw, err)
		}
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// A failed write shows as engram's llm.complete failing.
		_, _ = io.WriteString(w, `{"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"rivers\": [\"Nile\"]}"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 11, "completion_tokens": 6}}`)
	}))
	defer server.Close()

	cassette := filepath.Join(t.TempDir(), "recorded.yaml")
	script := writeScript(t, "ask.jsonl", `{"id": "ask", "action": "llm.complete", "args": {"prompt": "Rivers?", "json": true}}
{"id": "info", "action": "engine.info"}
`)
	out := runEngram(t, "", "--in-memory", "--llm", "openai", "--llm-url", server.URL+"/v1", "--model", "m", "--record", cassette, "--batch", script)
	if out.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	results := parseResults(t, out.stdout)
	var ask struct {
		Text  string `json:"text"`
		Model string `json:"model"`
	}
	enginetest.Decode(t, results[0].Result, &ask)
	if ask.Text != `{"rivers": ["Nile"]}` || ask.Model != "m" {
		t.Errorf("llm.complete result %s", results[0].Result)
	}
	if !strings.Contains(string(results[1].Result), `"provider":"openai","model":"m"`) {
		t.Errorf("engine.info does not show the provider and model: %s", results[1].Result)
	}
	mu.Lock()
	asked := bodies
	mu.Unlock()
	if len(asked) != 1 || asked[0]["model"] != "m" || asked[0]["response_format"].(map[string]any)["type"] != "json_object" {
		t.Fatalf("the server was asked %v", asked)
	}

	// The recorded cassette replays the same answer with no server at all.
	server.Close()
	if data, err := os.ReadFile(cassette); err != nil || !strings.Contains(string(data), "Rivers?") {
		t.Fatalf("cassette: %v\n%s", err, data)
	}
	out = runEngram(t, "", "--in-memory", "--llm", "replay", "--cassette", cassette, "--batch", script)
	if out.code != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	enginetest.Decode(t, parseResults(t, out.stdout)[0].Result, &ask)
	if ask.Text != `{"rivers": ["Nile"]}` {
		t.Errorf("replayed answer %q", ask.Text)
	}
}

// TestUnreachableModelIsAnLLMError: a model server that is not there fails
// the step with an LLMError that says what to check, after the retries.
func TestUnreachableModelIsAnLLMError(t *testing.T) {
	server := httptest.NewServer(http.NotFoundHandler())
	url := server.URL
	server.Close() // nothing listens there now
	out := runEngram(t, `{"action": "llm.complete", "args": {"prompt": "hi"}}`+"\n",
		"--in-memory", "--llm", "ollama", "--llm-url", url, "--llm-retries", "0", "--batch", "-")
	if out.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	r := parseResults(t, out.stdout)[0]
	if r.Error == nil || r.Error.Kind != "LLMError" || !strings.Contains(r.Error.Message, "connection refused") || !strings.Contains(r.Error.Message, "ollama serve") {
		t.Errorf("error %+v", r.Error)
	}
}

// TestDemoScriptReplays: the demo script of the README runs from its cassette.
func TestDemoScriptReplays(t *testing.T) {
	wd, _ := os.Getwd()
	out := runEngram(t, "", "--in-memory", "--llm", "replay", "--cassette", filepath.Join(wd, "testdata/batch/llm.cassette.yaml"),
		"--batch", filepath.Join(wd, "testdata/batch/llm.jsonl"))
	if out.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	for _, r := range parseResults(t, out.stdout) {
		if !r.OK && (r.Expected == nil || !*r.Expected) {
			t.Errorf("step %s did not pass: %+v", r.ID, r.Error)
		}
	}
}
