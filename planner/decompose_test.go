//go:build !noplanning

package planner_test

// Decomposition: a model breaks a goal into subtasks (flat, hierarchical,
// iterative), its answer parsed and checked, through the wire protocols of
// Ollama and OpenAI-compatible servers. Seed 002, scenarios
// 001.3R-UNIT-012..017 and 001.3R-INT-001..004.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

// Seed scenario 001.3R-UNIT-012 (FlatStrategyProducesLinearList).
func TestDecomposeFlatGivesOneLevel(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "flour", "description": "Buy flour"},
		{"id": "eggs", "description": "Buy eggs"},
		{"id": "bake", "description": "Bake the cake", "dependencies": ["flour", "eggs"],
		 "subtasks": [{"id": "oven", "description": "Heat the oven"}]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Bake a cake", "strategy": "flat", "id": "cake"}`))
	if p.Strategy != "flat" || p.Provider != "scripted" || len(p.Subtasks) != 4 {
		t.Fatalf("plan %s", planJSON(t, p))
	}
	for _, s := range p.Subtasks {
		if s.Depth != 1 || s.Parent != "" || s.Status != planner.Pending {
			t.Errorf("subtask %+v: a flat plan has one level", s)
		}
	}
	// A nested step the model gave anyway is flattened; its parent waits for it.
	if bake := subtaskOf(t, p, "bake"); !slices.Equal(bake.Dependencies, []string{"flour", "eggs", "oven"}) {
		t.Errorf("bake depends on %v", bake.Dependencies)
	}
	req := r.model.Requests()[0]
	if !req.JSON || len(req.Schema) == 0 || req.Temperature == nil || *req.Temperature != 0 ||
		!strings.Contains(req.Messages[0].Content, "Goal: Bake a cake") || !strings.Contains(req.Messages[0].Content, "flat list") {
		t.Errorf("request %+v", req)
	}
}

// Seed scenario 001.3R-UNIT-013 (HierarchicalRespectsMaxDepth).
func TestDecomposeHierarchicalKeepsMaxDepth(t *testing.T) {
	// Nested three levels deep; max_depth 2.
	r := decomposeRig(t, `{"subtasks": [
		{"id": "structure", "description": "Build the structure", "subtasks": [
			{"id": "walls", "description": "Raise the walls", "subtasks": [
				{"id": "frame", "description": "Frame the walls"},
				{"id": "drywall", "description": "Hang drywall", "dependencies": ["frame"]}]},
			{"id": "roof", "description": "Put on the roof", "dependencies": ["walls"]}]},
		{"id": "paint", "description": "Paint", "dependencies": ["structure"]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "strategy": "hierarchical", "max_depth": 2, "id": "house"}`))
	type shape struct {
		depth  int
		parent string
		deps   []string
	}
	want := map[string]shape{
		"structure": {1, "", []string{"walls", "roof"}},
		"walls":     {2, "structure", []string{"frame", "drywall"}},
		"frame":     {2, "structure", []string{}}, // level 3, flattened to 2
		"drywall":   {2, "structure", []string{"frame"}},
		"roof":      {2, "structure", []string{"walls"}},
		"paint":     {1, "", []string{"structure"}},
	}
	if len(p.Subtasks) != len(want) {
		t.Fatalf("subtasks: %s", ids(p))
	}
	for _, s := range p.Subtasks {
		w := want[s.ID]
		if s.Depth > 2 {
			t.Errorf("%s is %d levels deep; max_depth is 2", s.ID, s.Depth)
		}
		if s.Depth != w.depth || s.Parent != w.parent || !slices.Equal(s.Dependencies, w.deps) {
			t.Errorf("%s: depth %d parent %q deps %v, want %+v", s.ID, s.Depth, s.Parent, s.Dependencies, w)
		}
	}
	// Parents only group: they do nothing but wait for their children.
	for _, id := range []string{"structure", "walls"} {
		if a := subtaskOf(t, p, id).Action; a == nil || a.Name != "task.noop" {
			t.Errorf("%s runs %+v", id, a)
		}
	}
	order, _ := p.Validate()
	if !slices.Equal(order, []string{"frame", "drywall", "walls", "roof", "structure", "paint"}) {
		t.Errorf("order %v", order)
	}
	if !strings.Contains(r.model.Requests()[0].Messages[0].Content, "at most 2 levels deep") {
		t.Errorf("the prompt does not state max_depth: %q", r.model.Requests()[0].Messages[0].Content)
	}
	// max_depth 1 flattens everything to one level.
	r = decomposeRig(t, r.model.Answers[0].Text)
	p = decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "strategy": "hierarchical", "max_depth": 1}`))
	for _, s := range p.Subtasks {
		if s.Depth != 1 || s.Parent != "" {
			t.Errorf("max_depth 1: %+v", s)
		}
	}
}

// Seed scenario 001.3R-UNIT-014 (IterativeStrategyProducesSteps).
func TestDecomposeIterativeChainsTheSteps(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "draft", "description": "Write a draft"},
		{"id": "review", "description": "Review it"},
		{"id": "publish", "description": "Publish", "dependencies": ["draft"]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Write a post", "strategy": "iterative"}`))
	deps := map[string][]string{"draft": {}, "review": {"draft"}, "publish": {"draft", "review"}}
	for _, s := range p.Subtasks {
		if !slices.Equal(s.Dependencies, deps[s.ID]) {
			t.Errorf("%s depends on %v, want %v", s.ID, s.Dependencies, deps[s.ID])
		}
	}
	if order, _ := p.Validate(); !slices.Equal(order, []string{"draft", "review", "publish"}) {
		t.Errorf("order %v", order)
	}
	if !strings.Contains(r.model.Requests()[0].Messages[0].Content, "one after the other") {
		t.Errorf("prompt %q", r.model.Requests()[0].Messages[0].Content)
	}
}

// Seed scenario 001.3R-UNIT-015 (ModelJSONParsedIntoSubtasks).
func TestDecomposeParsesTheModelsSubtasks(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "1", "description": "First", "dependencies": []},
		{"id": "2", "description": "  Second  ", "dependencies": ["1"], "action": {"name": "state.set", "args": {"key": "x", "value": 2}}},
		{"description": "Third, without an id", "dependencies": ["2"]}]}`,
		// The seed's mock answers a bare list: the same thing.
		`[{"id": "1", "description": "First", "dependencies": []}]`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Count"}`))
	want := []planner.Subtask{
		{ID: "1", Description: "First", Dependencies: []string{}, Status: planner.Pending, Depth: 1},
		{ID: "2", Description: "Second", Dependencies: []string{"1"}, Status: planner.Pending, Depth: 1, Proposed: true,
			Action: &planner.ActionSpec{Name: "state.set", Args: json.RawMessage(`{"key":"x","value":2}`)}},
		{ID: "step-3", Description: "Third, without an id", Dependencies: []string{"2"}, Status: planner.Pending, Depth: 1},
	}
	if len(p.Subtasks) != len(want) {
		t.Fatalf("subtasks %s", ids(p))
	}
	for i := range want {
		if !jsonEqual(*p.Subtasks[i], want[i]) {
			t.Errorf("subtask %d:\n got %s\nwant %s", i, planJSON(t, &planner.Plan{Subtasks: p.Subtasks[i : i+1]}), planJSON(t, &planner.Plan{Subtasks: []*planner.Subtask{&want[i]}}))
		}
	}
	p = decodePlan(t, r.do("plan.decompose", `{"goal": "Count"}`))
	if len(p.Subtasks) != 1 || p.Subtasks[0].ID != "1" || p.Subtasks[0].Description != "First" {
		t.Errorf("bare list: %s", ids(p))
	}
	// Fields the shape does not have are refused, with the field named.
	for answer, field := range map[string]string{
		`{"subtasks": [{"id": "1", "description": "x", "deps": []}]}`:  `unknown field "deps"`,
		`{"subtasks": [{"id": "1"}]}`:                                  "description is required",
		`{"subtasks": [{"id": 1, "description": "x"}]}`:                "subtasks.id: expected string",
		`{"subtasks": []}`:                                             "no subtasks",
		`{"steps": [{"description": "x"}]}`:                            `unknown field "steps"`,
		`{"subtasks": [{"description": "x", "dependencies": "none"}]}`: "expected array of string",
	} {
		r := decomposeRig(t, answer)
		e := r.fail(errs.Parse, "plan.decompose", `{"goal": "g"}`)
		if !strings.Contains(e.Message, field) || e.Details["raw"] != answer {
			t.Errorf("answer %s: %q (raw %v), want it to say %s", answer, e.Message, e.Details["raw"], field)
		}
	}
}

// Seed scenario 001.3R-UNIT-016 (MalformedModelJSONIsParseError).
func TestMalformedModelAnswerIsAParseError(t *testing.T) {
	r := decomposeRig(t, "{ broken json")
	e := r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if !strings.Contains(e.Message, "{ broken json") || e.Details["raw"] != "{ broken json" {
		t.Errorf("the error does not include the model's answer: %q %v", e.Message, e.Details)
	}
	for _, word := range internals {
		if strings.Contains(e.Message, word) {
			t.Errorf("the message shows internals (%q): %q", word, e.Message)
		}
	}
	if out := r.do("plan.list", `{}`); string(out) != `{"plans":[]}` {
		t.Errorf("stored anyway: %s", out)
	}
	// Through a real provider stack (llm.New's JSON check), the same kind.
	srv := openAIServer(t, func(int) (int, string) { return 200, chatCompletion("{ broken json") })
	r = newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 0)})
	e = r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if !strings.Contains(e.Message, "{ broken json") {
		t.Errorf("via openai: %q", e.Message)
	}
	for _, word := range internals {
		if strings.Contains(e.Message, word) {
			t.Errorf("via openai: the message shows internals (%q): %q", word, e.Message)
		}
	}
	// A long answer is cut for display, in the message and the details.
	long := "{ " + strings.Repeat("broken ", 200)
	r = decomposeRig(t, long)
	e = r.fail(errs.Parse, "plan.decompose", `{"goal": "Test goal"}`)
	if raw, _ := e.Details["raw"].(string); !strings.HasPrefix(raw, "{ broken broken") || len(raw) > 400 || len(e.Message) > 700 {
		t.Errorf("long answer: %d-byte message, raw %q", len(e.Message), raw)
	}
}

// Seed scenario 001.3R-UNIT-017 (CyclicModelOutputRejected).
func TestCyclicModelAnswerIsRejected(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "a", "description": "A", "dependencies": ["c"]},
		{"id": "b", "description": "B", "dependencies": ["a"]},
		{"id": "c", "description": "C", "dependencies": ["b"]}]}`)
	e := r.fail(errs.CyclicDependency, "plan.decompose", `{"goal": "Go round", "id": "round"}`)
	if !strings.Contains(e.Message, "a → c → b → a") || !reflect.DeepEqual(e.Details["cycle"], []string{"a", "c", "b", "a"}) {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	r.fail(errs.NotFound, "plan.get", `{"plan_id": "round"}`)
	// A dependency on a subtask the answer does not have: rejected too.
	r = decomposeRig(t, `{"subtasks": [{"id": "a", "description": "A", "dependencies": ["ghost"]}]}`)
	r.fail(errs.Validation, "plan.decompose", `{"goal": "g"}`)
	// And a hierarchical answer whose steps wait for their own parent
	// (which waits for them) is not a cycle: that dependency is implied.
	r = decomposeRig(t, `{"subtasks": [{"id": "p", "description": "P", "subtasks": [{"id": "c", "description": "C", "dependencies": ["p"]}]}]}`)
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "g", "strategy": "hierarchical"}`))
	if c := subtaskOf(t, p, "c"); len(c.Dependencies) != 0 || c.Parent != "p" {
		t.Errorf("c: %+v", c)
	}
}

// Seed scenario 001.3R-INT-001 (DecomposeViaOllamaClient).
func TestDecomposeThroughOllama(t *testing.T) {
	srv := newModelServer(t, "/api/chat", func(int) (int, string) { return 200, ollamaChat(houseAnswer) })
	provider, err := llm.New(llm.Config{Provider: "ollama", Model: "llama3.2", URL: srv.URL, HTTPClient: srv.Client(),
		Timeout: 5 * time.Second, Retries: 2, Sleep: srv.sleep.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, rigOptions{llm: provider})
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "id": "house"}`))
	checkHousePlan(t, p, "ollama")
	paths, sent := srv.sent()
	if !slices.Equal(paths, []string{"POST /api/chat"}) {
		t.Fatalf("requests %v", paths)
	}
	req := sent[0]
	if req["model"] != "llama3.2" || req["stream"] != false {
		t.Errorf("request %v", req)
	}
	// Structured output: the schema itself as Ollama's format; temperature 0.
	if format, _ := req["format"].(map[string]any); format["type"] != "object" || !slices.Equal(toStrings(format["required"]), []string{"subtasks"}) {
		t.Errorf("format %v", req["format"])
	}
	if opts, _ := req["options"].(map[string]any); opts["temperature"] != 0.0 {
		t.Errorf("options %v", req["options"])
	}
	checkDecomposeMessages(t, req)
	// The plan runs: without actions, each subtask asks the same model.
	r.do("plan.get", `{"plan_id": "house"}`)
}

// Seed scenario 001.3R-INT-002 (DecomposeViaOpenAICompatibleClient).
func TestDecomposeThroughAnOpenAICompatibleServer(t *testing.T) {
	srv := openAIServer(t, func(int) (int, string) { return 200, chatCompletion(houseAnswer) })
	r := newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 2)})
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house", "id": "house"}`))
	checkHousePlan(t, p, "openai")
	paths, sent := srv.sent()
	if !slices.Equal(paths, []string{"POST /v1/chat/completions"}) {
		t.Fatalf("requests %v", paths)
	}
	req := sent[0]
	rf, _ := req["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if req["model"] != "m" || req["temperature"] != 0.0 || rf["type"] != "json_schema" || js["schema"].(map[string]any)["type"] != "object" {
		t.Errorf("request %v", req)
	}
	checkDecomposeMessages(t, req)
}

// Seed scenario 001.3R-INT-003 (DecomposeHandlesModelTimeout).
func TestDecomposeModelTimeoutIsAnLLMError(t *testing.T) {
	srv := openAIServer(t, func(int) (int, string) { return 0, "" }) // never answers
	provider, err := llm.New(llm.Config{Provider: "openai", Model: "m", URL: srv.URL + "/v1", HTTPClient: srv.Client(),
		Timeout: 50 * time.Millisecond, Retries: 1, Sleep: srv.sleep.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, rigOptions{llm: provider})
	start := time.Now()
	e := r.fail(errs.LLM, "plan.decompose", `{"goal": "Build a house", "id": "house"}`)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s: a timeout must not hang", took)
	}
	if e.Details["transient"] != true || e.Details["attempts"] != 2 || !strings.Contains(e.Message, "did not answer in time") {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	if paths, _ := srv.sent(); len(paths) != 2 || len(srv.sleep.Waits()) != 1 {
		t.Errorf("%d requests, %d waits", len(paths), len(srv.sleep.Waits()))
	}
	r.fail(errs.NotFound, "plan.get", `{"plan_id": "house"}`)

	// The caller's own deadline ends it too, and it says so.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	slow, _ := llm.New(llm.Config{Provider: "openai", Model: "m", URL: srv.URL + "/v1", HTTPClient: srv.Client(), Timeout: time.Minute, Sleep: srv.sleep.Sleep})
	r = newRigWith(t, rigOptions{llm: slow})
	_, err = r.pl.Decompose(ctx, callOf(r), "Build a house", "flat", 0, "")
	if errs.KindOf(err) != errs.LLM {
		t.Errorf("deadline: %v", err)
	}
}

// Seed scenario 001.3R-INT-004 (DecomposeRetriesTransientErrors).
func TestDecomposeRetriesTransientModelErrors(t *testing.T) {
	srv := openAIServer(t, func(n int) (int, string) {
		if n < 2 {
			return 503, `{"error": {"message": "overloaded"}}`
		}
		return 200, chatCompletion(houseAnswer)
	})
	r := newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 2)})
	checkHousePlan(t, decodePlan(t, r.do("plan.decompose", `{"goal": "Build a house"}`)), "openai")
	if paths, _ := srv.sent(); len(paths) != 3 {
		t.Errorf("%d requests, want 3 (503, 503, 200)", len(paths))
	}
	if waits := srv.sleep.Waits(); len(waits) != 2 || waits[1] < waits[0] {
		t.Errorf("backoffs %v", waits)
	}
	// With fewer retries than failures: an LLMError saying so.
	srv = openAIServer(t, func(n int) (int, string) { return 503, `{"error": {"message": "overloaded"}}` })
	r = newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 1)})
	e := r.fail(errs.LLM, "plan.decompose", `{"goal": "Build a house"}`)
	if e.Details["transient"] != true || e.Details["attempts"] != 2 || e.Details["status"] != 503 || !strings.Contains(e.Message, "overloaded") {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	// A permanent failure is not retried.
	srv = openAIServer(t, func(n int) (int, string) { return 400, `{"error": {"message": "bad model"}}` })
	r = newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 3)})
	if e := r.fail(errs.LLM, "plan.decompose", `{"goal": "g"}`); e.Details["transient"] != false || e.Details["attempts"] != 1 {
		t.Errorf("%q %v", e.Message, e.Details)
	}
	// And without any model: an LLMError saying how to get one.
	r = newRigWith(t, rigOptions{llm: llm.Offline{}})
	if e := r.fail(errs.LLM, "plan.decompose", `{"goal": "g"}`); !strings.Contains(e.Message, "--llm ollama") || !strings.Contains(e.Message, "plan.create") {
		t.Errorf("offline: %q", e.Message)
	}
}

// decomposeRig is a rig whose model answers answer.
func decomposeRig(t *testing.T, answers ...string) *rig {
	r := newRig(t)
	for _, a := range answers {
		r.model.Answers = append(r.model.Answers, llmtest.Text(a))
	}
	return r
}

// modelServer is an httptest server answering each request n (from 0)
// with answer(n), recording what it was sent.
type modelServer struct {
	*httptest.Server
	sleep *fakeSleep // the llm client's retry sleeper

	mu       sync.Mutex
	paths    []string
	requests []map[string]any
}

func newModelServer(t testing.TB, path string, answer func(n int) (int, string)) *modelServer {
	s := &modelServer{sleep: newFakeSleep()}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("the model server was sent %q: %v", body, err)
		}
		s.mu.Lock()
		n := len(s.requests)
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.requests = append(s.requests, m)
		s.mu.Unlock()
		if r.URL.Path != path {
			http.Error(w, `{"error": "no such route"}`, http.StatusNotFound)
			return
		}
		status, text := answer(n)
		if status == 0 { // hang until the client gives up
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text) // a failed write shows as the client's error
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *modelServer) sent() ([]string, []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths), slices.Clone(s.requests)
}

func openAIServer(t testing.TB, answer func(n int) (int, string)) *modelServer {
	return newModelServer(t, "/v1/chat/completions", answer)
}

// chatCompletion is an OpenAI chat completion answering text.
func chatCompletion(text string) string {
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 120, "completion_tokens": 40}})
	return string(b)
}

// ollamaChat is an Ollama /api/chat answer (stream off).
func ollamaChat(text string) string {
	b, _ := json.Marshal(map[string]any{"model": "llama3.2", "created_at": "2026-01-05T09:00:00Z",
		"message": map[string]any{"role": "assistant", "content": text}, "done": true, "done_reason": "stop",
		"prompt_eval_count": 120, "eval_count": 40})
	return string(b)
}

const houseAnswer = `{"subtasks": [
	{"id": "foundation", "description": "Pour the foundation"},
	{"id": "walls", "description": "Raise the walls", "dependencies": ["foundation"]},
	{"id": "roof", "description": "Put on the roof", "dependencies": ["walls"]}]}`

// checkHousePlan checks the plan decomposed from houseAnswer.
func checkHousePlan(t *testing.T, p *planner.Plan, provider string) {
	t.Helper()
	if got := ids(p); got != "foundation:Pending, walls:Pending, roof:Pending" || p.Provider != provider || p.Goal != "Build a house" {
		t.Errorf("plan %s (provider %q)", got, p.Provider)
	}
	if !slices.Equal(subtaskOf(t, p, "roof").Dependencies, []string{"walls"}) {
		t.Errorf("roof depends on %v", subtaskOf(t, p, "roof").Dependencies)
	}
}

// checkDecomposeMessages checks the chat messages decompose sends.
func checkDecomposeMessages(t *testing.T, sent map[string]any) {
	t.Helper()
	msgs, _ := sent["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages %v", sent["messages"])
	}
	system, user := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if system["role"] != "system" || !strings.Contains(system["content"].(string), "Answer with JSON only") ||
		user["role"] != "user" || !strings.HasPrefix(user["content"].(string), "Goal: Build a house\n") {
		t.Errorf("messages %v", msgs)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// openAIProvider is llm.New's openai provider for srv (retries: transient ones).
func openAIProvider(t testing.TB, srv *modelServer, retries int) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Config{Provider: "openai", Model: "m", URL: srv.URL + "/v1", HTTPClient: srv.Client(),
		Timeout: 5 * time.Second, Retries: retries, Sleep: srv.sleep.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
