package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/llm"
)

// sleeper records the waits a retrying provider asks for, instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return nil
}

func (s *sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// seen is one request as a fake server received it.
type seen struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any // the JSON body, generically decoded
}

// reply is a canned HTTP answer.
type reply struct {
	Status int
	Header map[string]string
	Body   string
}

// wire is an httptest server that records every request and answers from a
// queue of canned replies, then from a function of the request.
type wire struct {
	*httptest.Server
	t *testing.T

	mu      sync.Mutex
	seen    []seen
	queue   []reply
	answer  func(s seen) reply
	blocked chan struct{} // when set, every request blocks until it is closed
	active  int           // handlers running
}

func newWire(t *testing.T, answer func(s seen) reply) *wire {
	t.Helper()
	w := &wire{t: t, answer: answer}
	w.Server = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.Close)
	return w
}

func (w *wire) serve(rw http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	s := seen{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s.Body); err != nil {
			w.t.Errorf("%s %s: the body is not a JSON object: %v\n%s", r.Method, r.URL.Path, err, raw)
		}
	}
	w.mu.Lock()
	w.seen = append(w.seen, s)
	w.active++
	blocked := w.blocked
	var rep reply
	queued := len(w.queue) > 0
	if queued {
		rep, w.queue = w.queue[0], w.queue[1:]
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.active--
		w.mu.Unlock()
	}()
	if blocked != nil {
		<-blocked // a server that does not answer in time
		return
	}
	if !queued {
		rep = w.answer(s)
	}
	for k, v := range rep.Header {
		rw.Header().Set(k, v)
	}
	if rw.Header().Get("Content-Type") == "" {
		rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	rw.WriteHeader(rep.Status)
	_, _ = io.WriteString(rw, rep.Body) // a failed write shows as the client's error
}

// then queues canned replies, answered before the server's own logic.
func (w *wire) then(replies ...reply) *wire {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, replies...)
	return w
}

// hang makes every request block until the test ends (or release is called).
func (w *wire) hang() (release func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.blocked = ch
	w.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	w.t.Cleanup(release) // runs before Close, so Close does not wait forever
	return release
}

func (w *wire) requests() []seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seen(nil), w.seen...)
}

func (w *wire) last() seen {
	w.t.Helper()
	rs := w.requests()
	if len(rs) == 0 {
		w.t.Fatal("the server saw no request")
	}
	return rs[len(rs)-1]
}

func (w *wire) running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active
}

// ollamaServer speaks Ollama's documented API (docs/api.md of ollama/ollama):
// POST /api/chat with stream false answers one JSON object; POST /api/embed
// answers {"model", "embeddings"}; an unknown model is a 404 with
// {"error": "model \"x\" not found, try pulling it first"}.
func ollamaServer(t *testing.T, chat func(body map[string]any) string) *wire {
	t.Helper()
	return newWire(t, func(s seen) reply {
		if s.Method != http.MethodPost {
			return reply{Status: http.StatusMethodNotAllowed, Body: `{"error":"method not allowed"}`}
		}
		model, _ := s.Body["model"].(string)
		if model == "missing" {
			return reply{Status: http.StatusNotFound, Body: `{"error":"model \"missing\" not found, try pulling it first"}`}
		}
		switch s.Path {
		case "/api/chat":
			if s.Body["stream"] != false {
				t.Errorf("/api/chat without \"stream\": false would answer in NDJSON chunks: %s", s.Raw)
			}
			answer, _ := json.Marshal(map[string]any{
				"model":             model,
				"created_at":        "2025-11-05T10:00:00.000000Z",
				"message":           map[string]any{"role": "assistant", "content": chat(s.Body)},
				"done":              true,
				"done_reason":       "stop",
				"total_duration":    5191566416,
				"load_duration":     2154458,
				"prompt_eval_count": 26,
				"eval_count":        298,
				"eval_duration":     4799921000,
			})
			return reply{Status: http.StatusOK, Body: string(answer)}
		case "/api/embed":
			inputs, _ := s.Body["input"].([]any)
			vectors := make([][]float32, len(inputs))
			for i, in := range inputs {
				vectors[i] = vectorOf(in.(string))
			}
			answer, _ := json.Marshal(map[string]any{"model": model, "embeddings": vectors,
				"total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8})
			return reply{Status: http.StatusOK, Body: string(answer)}
		}
		return reply{Status: http.StatusNotFound, Body: "404 page not found"}
	})
}

// openAIServer speaks the OpenAI chat completions and embeddings API under
// /v1, as vLLM, llama.cpp or api.openai.com do.
func openAIServer(t *testing.T, chat func(body map[string]any) string) *wire {
	t.Helper()
	return newWire(t, func(s seen) reply {
		model, _ := s.Body["model"].(string)
		if model == "missing" {
			return reply{Status: http.StatusNotFound, Body: `{"error":{"message":"The model ` + "`missing`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}
		}
		switch s.Path {
		case "/v1/chat/completions":
			answer, _ := json.Marshal(map[string]any{
				"id": "chatcmpl-123", "object": "chat.completion", "created": 1677652288, "model": model + "-2024-07-18",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": chat(s.Body), "refusal": nil}}},
				"usage": map[string]any{"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
			})
			return reply{Status: http.StatusOK, Body: string(answer)}
		case "/v1/embeddings":
			inputs, _ := s.Body["input"].([]any)
			data := make([]any, len(inputs))
			for i := range inputs {
				// Servers may answer out of order: the index says which text.
				j := len(inputs) - 1 - i
				data[i] = map[string]any{"object": "embedding", "index": j, "embedding": vectorOf(inputs[j].(string))}
			}
			answer, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": model,
				"usage": map[string]any{"prompt_tokens": 8, "total_tokens": 8}})
			return reply{Status: http.StatusOK, Body: string(answer)}
		}
		return reply{Status: http.StatusNotFound, Body: `{"error":{"message":"Unknown request URL","type":"invalid_request_error"}}`}
	})
}

// vectorOf is a deterministic little embedding of a text.
func vectorOf(s string) []float32 {
	return []float32{float32(len(s)), float32(strings.Count(s, " ")) + 0.5, -0.25}
}

// echo answers a chat with its last message.
func echo(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].(string)
	return "echo: " + content
}

// fixed answers every chat with the same text.
func fixed(text string) func(map[string]any) string {
	return func(map[string]any) string { return text }
}

// keys returns the sorted keys of a JSON object.
func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// asJSON decodes a JSON text generically, for comparisons.
func asJSON(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	return v
}

func sameJSON(t *testing.T, got any, want string) {
	t.Helper()
	if w := asJSON(t, want); !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("got %s, want %s", g, want)
	}
}

// llmError asserts err is an *llm.Error and returns it.
func llmError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *llm.Error", err, err)
	}
	return e
}

// closedAddr is the address of a listener that was closed: nothing answers there.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// env is a Getenv over a map.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func ptr[T any](v T) *T { return &v }

// recordingClient is an HTTP client that never dials: it records the URL of
// each request and fails it.
type recordingClient struct{ onURL func(string) }

func (c *recordingClient) Client() *http.Client { return &http.Client{Transport: c} }

func (c *recordingClient) RoundTrip(r *http.Request) (*http.Response, error) {
	c.onURL(r.URL.String())
	return nil, errors.New("recordingClient does not dial")
}
