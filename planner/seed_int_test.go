//go:build !noplanning

package planner_test

// Seed 002, the integration scenarios 001.3R-INT-001..016 (INT-017 and
// INT-018 build engram with -tags noplanning: main_plan_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/planner"
)

// ---- model servers speaking the wire protocols ----

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
		json.Unmarshal(body, &m)
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
		io.WriteString(w, text)
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

func Test001_3R_INT_001_DecomposeViaOllamaClient(t *testing.T) {
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

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func Test001_3R_INT_002_DecomposeViaOpenAICompatibleClient(t *testing.T) {
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

func Test001_3R_INT_003_DecomposeHandlesModelTimeout(t *testing.T) {
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

func Test001_3R_INT_004_DecomposeRetriesTransientErrors(t *testing.T) {
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

// ---- AC3: parallel execution ----

func Test001_3R_INT_005_ParallelExecutionOfIndependentSubtasks(t *testing.T) {
	// B and C each wait until the other has started: they complete only
	// if they run at the same time.
	r := newRig(t)
	r.create("p", st("A", "noop", nil),
		st("B", "test.meet", map[string]any{"me": "B", "other": "C"}, "A"),
		st("C", "test.meet", map[string]any{"me": "C", "other": "B"}, "A"),
		st("D", "noop", nil, "B", "C"))
	res := r.execute("p", map[string]any{"max_concurrent": 2})
	if res.Plan.Status != "completed" {
		t.Fatalf("%s: %s (B: %q)", res.Plan.Status, ids(res.Plan), subtaskOf(t, res.Plan, "B").Error)
	}
	// Many at once: eight subtasks pairwise meeting, eight at a time.
	r = newRig(t)
	var subtasks []map[string]any
	for i := range 8 {
		subtasks = append(subtasks, st(fmt.Sprint("s", i), "test.meet", map[string]any{"me": fmt.Sprint("s", i), "other": fmt.Sprint("s", i^1)}))
	}
	r.create("wide", subtasks...)
	if res := r.execute("wide", map[string]any{"max_concurrent": 8}); res.Progress.Completed != 8 {
		t.Errorf("%s", ids(res.Plan))
	}
}

func Test001_3R_INT_006_MaxConcurrentOneIsSequential(t *testing.T) {
	r := newRig(t)
	rec := r.record()
	var subtasks []map[string]any
	var names []string
	for i := range 12 {
		name := fmt.Sprint("s", i)
		names = append(names, name)
		subtasks = append(subtasks, st(name, "test.record", map[string]any{"name": name}))
	}
	r.create("p", subtasks...)
	res := r.execute("p", map[string]any{"max_concurrent": 1})
	if res.Progress.Completed != 12 {
		t.Fatal(ids(res.Plan))
	}
	rec.runs(t, 1)
	if m := r.probes.maxActive.Load(); m != 1 {
		t.Errorf("%d subtasks ran at once with max_concurrent 1", m)
	}
	if !slices.Equal(r.probes.Order(), names) {
		t.Errorf("order %v", r.probes.Order())
	}
	// Strictly one after the other: started, finished, started, finished...
	var seq []string
	for _, ev := range rec.plan() {
		seq = append(seq, strings.TrimPrefix(ev.Name, "plan.subtask.")+" "+ev.Subtask)
	}
	for i, name := range names {
		if seq[2*i] != "started "+name || seq[2*i+1] != "finished "+name {
			t.Fatalf("events %v", seq)
		}
	}
	// And the bound holds at any width: 40 independent subtasks, 3 at a time.
	r = newRig(t)
	subtasks = nil
	for i := range 40 {
		subtasks = append(subtasks, st(fmt.Sprint("s", i), "test.record", map[string]any{"name": "x"}))
	}
	r.create("p", subtasks...)
	r.execute("p", map[string]any{"max_concurrent": 3})
	if m := r.probes.maxActive.Load(); m > 3 {
		t.Errorf("%d at once with max_concurrent 3", m)
	}
}

func Test001_3R_INT_007_StateDeepCopiedForParallelBranches(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "state.set", map[string]any{"key": "counter", "value": 1}),
		st("B", "test.incr_meet", map[string]any{"me": "B", "other": "C", "key": "counter"}, "A"),
		st("C", "test.incr_meet", map[string]any{"me": "C", "other": "B", "key": "counter"}, "A"))
	res := r.execute("p", nil)
	for _, id := range []string{"B", "C"} {
		var seen struct{ Before, After float64 }
		json.Unmarshal(subtaskOf(t, res.Plan, id).Result, &seen)
		// Each received its own copy with counter = 1, and after both had
		// incremented it saw only its own increment.
		if seen.Before != 1 || seen.After != 2 {
			t.Errorf("%s saw counter %v, then %v (want 1, then 2)", id, seen.Before, seen.After)
		}
		if d := subtaskOf(t, res.Plan, id).Delta["counter"]; d != 2.0 {
			t.Errorf("%s wrote %v", id, d)
		}
	}
	if res.State["counter"] != 2.0 {
		t.Errorf("final counter %v: the branches' increments must not add up", res.State["counter"])
	}
}

func Test001_3R_INT_008_ParallelResultsMergedAtConvergence(t *testing.T) {
	// B and C both write x; D, after both, reads it. The rule (state.go):
	// the later in execution order wins — C, listed after B — whichever
	// finished first.
	for _, firstDone := range []string{"B", "C"} {
		t.Run(firstDone+" finishes first", func(t *testing.T) {
			r := newRig(t)
			rec := r.record()
			r.create("p", st("A", "state.set", map[string]any{"key": "x", "value": "from A"}),
				st("B", "test.gate", map[string]any{"name": "B", "key": "x", "value": "from B"}, "A"),
				st("C", "test.gate", map[string]any{"name": "C", "key": "x", "value": "from C"}, "A"),
				st("B2", "state.set", map[string]any{"key": "only_b", "value": true}, "B"),
				st("D", "state.get", nil, "B2", "C"))
			done := r.executeAsync("p", nil)
			second := map[string]string{"B": "C", "C": "B"}[firstDone]
			waitFor(t, r.probes.Started("B"), "B")
			waitFor(t, r.probes.Started("C"), "C")
			r.probes.Release(firstDone)
			rec.waitEvent(t, planner.EventSubtaskFinished, firstDone)
			r.probes.Release(second)
			res := decodeResult(t, await(t, done))
			rec.runs(t, 1)
			if rec.seq(planner.EventSubtaskFinished, firstDone) > rec.seq(planner.EventSubtaskFinished, second) {
				t.Fatalf("%s did not finish first", firstDone)
			}
			var d struct{ State map[string]any }
			json.Unmarshal(subtaskOf(t, res.Plan, "D").Result, &d)
			if d.State["x"] != "from C" || d.State["only_b"] != true || res.State["x"] != "from C" {
				t.Errorf("D saw x=%v, final x=%v; want from C", d.State["x"], res.State["x"])
			}
			results, _ := d.State["results"].(map[string]any)
			if len(results) != 4 {
				t.Errorf("D saw the results of %v", results)
			}
		})
	}
}

func Test001_3R_INT_009_SubtaskRunsNestedRegisteredAction(t *testing.T) {
	r := newRig(t)
	r.do("plan.create", `{"id": "p", "goal": "Mixed", "state": {"goal_id": "g-ada"}, "subtasks": [
		{"id": "set", "action": {"name": "state.set", "args": {"key": "n", "value": 40}}},
		{"id": "incr", "dependencies": ["set"], "action": {"name": "state.incr", "args": {"key": "n", "by": 2}}},
		{"id": "nap", "action": {"name": "sleep", "args": {"ms": 250}}},
		{"id": "flaky", "action": {"name": "fail", "args": {"times": 1}}},
		{"id": "custom", "dependencies": ["incr"], "action": {"name": "test.record", "args": {"name": "custom"}}},
		{"id": "goal", "dependencies": ["incr"], "action": {"name": "cortex.create", "args": {"type": "goal", "id": "${state.goal_id}", "fields": {"title": "Answer", "progress": "${state.n}"}}}}]}`)
	res := r.execute("p", map[string]any{"on_subtask_failure": "retry", "max_retries": 1})
	if res.Plan.Status != "completed" {
		t.Fatalf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	if res.State["n"] != 42.0 || r.probes.Calls("custom") != 1 {
		t.Errorf("state %v", res.State)
	}
	if !slices.Contains(r.sleep.Waits(), 250*time.Millisecond) {
		t.Errorf("sleep did not go through the injected sleeper: %v", r.sleep.Waits())
	}
	if f := subtaskOf(t, res.Plan, "flaky"); f.Attempts != 2 || !jsonEqual(f.Result, map[string]any{"attempt": 2}) {
		t.Errorf("flaky: %+v", f)
	}
	// The state reference was substituted, and the other subsystem's
	// action took effect.
	var got struct {
		Item struct {
			ID       string `json:"id"`
			Progress int    `json:"progress"`
		} `json:"item"`
	}
	json.Unmarshal(r.do("cortex.get", `{"id": "g-ada"}`), &got)
	if got.Item.Progress != 42 {
		t.Errorf("cortex item %+v", got.Item)
	}
	// An unknown action fails the subtask as any failure does.
	r.create("bad", st("x", "no.such", nil))
	res = r.execute("bad", nil)
	if x := subtaskOf(t, res.Plan, "x"); x.Status != planner.Failed || !strings.Contains(x.Error, "unknown action") {
		t.Errorf("x: %+v", x)
	}
	// A reference to a state key that is not there: the subtask fails, saying so.
	r.create("ref", st("x", "state.set", map[string]any{"key": "y", "value": "${state.missing}"}))
	if x := subtaskOf(t, r.execute("ref", nil).Plan, "x"); !strings.Contains(x.Error, `the state has no "missing"`) {
		t.Errorf("x: %+v", x)
	}
}

// replanAnswer replaces a failed B.
const replanAnswer = `{"subtasks": [
	{"id": "B2", "description": "Buy flour elsewhere", "dependencies": ["A"], "action": {"name": "test.record", "args": {"name": "B2"}}},
	{"id": "C2", "description": "Bake", "dependencies": ["B2"], "action": {"name": "test.record", "args": {"name": "C2"}}}]}`

func Test001_3R_INT_010_ReplanPolicyInvokesReplan(t *testing.T) {
	r := decomposeRig(t, replanAnswer)
	rec := r.record()
	r.create("p", st("A", "test.record", map[string]any{"name": "A"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"), st("C", "noop", nil, "B"))
	res := r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	rec.runs(t, 1)
	if res.Plan.Status != "completed" || res.Plan.ReplanCount != 1 || ids(res.Plan) != "A:Completed, B2:Completed, C2:Completed" {
		t.Fatalf("%s, %d replans: %s", res.Plan.Status, res.Plan.ReplanCount, ids(res.Plan))
	}
	if r.probes.Calls("A") != 1 || !slices.Equal(r.probes.Order(), []string{"A", "B2", "C2"}) {
		t.Errorf("ran %v", r.probes.Order())
	}
	changed := false
	rec.mu.Lock()
	for _, ev := range rec.events {
		if m, ok := ev.Data.(map[string]any); ok && ev.Name == planner.EventPlanChanged && m["change"] == "replanned" {
			changed = true
		}
	}
	rec.mu.Unlock()
	if !changed {
		t.Error("no plan.changed replanned event")
	}
	// A replan that keeps failing ends at max_replans: the run fails, saying why.
	fails := `{"subtasks": [{"id": "B", "description": "Again", "dependencies": ["A"], "action": {"name": "fail"}}]}`
	r = decomposeRig(t, fails, fails, fails, fails)
	r.create("p", st("A", "noop", nil), st("B", "fail", nil, "A"))
	res = r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	if res.Plan.Status != "failed" || res.Plan.ReplanCount != 3 || r.model.Calls() != 3 {
		t.Errorf("%s after %d replans, %d model calls", res.Plan.Status, res.Plan.ReplanCount, r.model.Calls())
	}
}

func Test001_3R_INT_011_PartialResultsAfterAbort(t *testing.T) {
	r := newRig(t)
	r.create("p", st("A", "state.set", map[string]any{"key": "dough", "value": "ready"}),
		st("A2", "state.incr", map[string]any{"key": "loaves", "by": 2}, "A"),
		st("B", "fail", map[string]any{"message": "oven broke"}, "A2"),
		st("C", "state.set", map[string]any{"key": "baked", "value": true}, "B"))
	out, err := r.try("plan.execute", `{"plan_id": "p", "on_subtask_failure": "abort"}`)
	if err != nil {
		t.Fatalf("an aborted run is still a result: %v", err)
	}
	res := decodeResult(t, out)
	if res.Plan.Status != "aborted" || res.Progress != (planner.Counts{Completed: 2, Failed: 1, Pending: 1, Total: 4}) {
		t.Errorf("%s %+v", res.Plan.Status, res.Progress)
	}
	if res.State["dough"] != "ready" || res.State["loaves"] != 2.0 || res.State["baked"] != nil {
		t.Errorf("partial state %v", res.State)
	}
	// The same partial results are stored: plan.get shows them.
	stored := decodePlan(t, r.do("plan.get", `{"plan_id": "p"}`))
	if planJSON(t, stored) != planJSON(t, res.Plan) {
		t.Errorf("stored:\n%s\nreturned:\n%s", planJSON(t, stored), planJSON(t, res.Plan))
	}
}

func Test001_3R_INT_012_ReplanUsesSameProvider(t *testing.T) {
	r := decomposeRig(t, `{"subtasks": [
		{"id": "A", "description": "first", "action": {"name": "noop"}},
		{"id": "B", "description": "second", "dependencies": ["A"], "action": {"name": "fail"}}]}`, replanAnswer)
	r.model.Model = "planner-model"
	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Bake bread", "id": "bread"}`))
	if p.Provider != "scripted" {
		t.Errorf("provider %q", p.Provider)
	}
	res := r.execute("bread", map[string]any{"on_subtask_failure": "replan"})
	if res.Plan.Status != "completed" || res.Plan.Provider != "scripted" {
		t.Errorf("%s: %s", res.Plan.Status, ids(res.Plan))
	}
	// Both calls went to the one model, with the same instructions.
	reqs := r.model.Requests()
	if len(reqs) != 2 || reqs[0].System != reqs[1].System || !reqs[1].JSON || len(reqs[1].Schema) == 0 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if !strings.HasPrefix(reqs[1].Messages[0].Content, "Goal: Bake bread\n") {
		t.Errorf("replan prompt %q", reqs[1].Messages[0].Content)
	}
}

func Test001_3R_INT_013_ReplanPromptIncludesFailureContext(t *testing.T) {
	r := decomposeRig(t, replanAnswer)
	r.create("p", st("A", "state.set", map[string]any{"key": "flour", "value": "500g"}),
		st("B", "fail", map[string]any{"message": "the shop is closed"}, "A"), st("C", "noop", nil, "B"))
	r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	prompt := r.model.Requests()[0].Messages[0].Content
	for _, want := range []string{
		"Goal: Goal of p",
		"- A: A → {\"key\":\"flour\",\"value\":\"500g\"}",
		"- B: B (failed: task.fail: the shop is closed (attempt 1))",
		"- C: C",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the replan prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// ---- AC7: checkpoints ----

func Test001_3R_INT_014_CheckpointSavedAfterEachCompletion(t *testing.T) {
	for _, mode := range []string{"store", "file", "off"} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t)
			file := filepath.Join(t.TempDir(), "plan.ckpt")
			var subtasks []map[string]any
			for i := 1; i <= 5; i++ {
				args := map[string]any{"name": fmt.Sprint("s", i), "plan_id": "p"}
				if mode == "file" {
					args["file"] = file
				}
				var deps []string
				if i > 1 {
					deps = []string{fmt.Sprint("s", i-1)}
				}
				subtasks = append(subtasks, st(fmt.Sprint("s", i), "test.probe", args, deps...))
			}
			r.create("p", subtasks...)
			extra := map[string]any{"checkpoint": true}
			switch mode {
			case "file":
				extra["checkpoint"] = file
			case "off":
				extra["checkpoint"] = false
			}
			r.execute("p", extra)
			// When subtask k started, the checkpoint held 1..k-1 as completed.
			for i := 1; i <= 5; i++ {
				var want []string
				for j := 1; j < i && mode != "off"; j++ {
					want = append(want, fmt.Sprint("s", j))
				}
				got, _ := r.probes.Seen(fmt.Sprint("s", i)).([]string)
				if !slices.Equal(got, want) {
					t.Errorf("s%d saw %v completed in the checkpoint, want %v", i, got, want)
				}
			}
			// And after the run, everything.
			var final *planner.Plan
			var err error
			if mode == "file" {
				final, err = planner.ReadCheckpointFile(file)
			} else {
				final, err = planner.StoredPlan(r.e.Env(), "p")
			}
			if err != nil || final.Count().Completed != 5 || final.Status != "completed" {
				t.Errorf("after the run: %v %v", final, err)
			}
		})
	}
}

// sequential4 creates plan p: A, B, C (a gate), D, one after the other.
func sequential4(r *rig) {
	r.create("p", st("A", "state.set", map[string]any{"key": "a", "value": "from A"}),
		st("B", "test.record", map[string]any{"name": "B"}, "A"),
		st("C", "test.gate", map[string]any{"name": "C", "key": "c", "value": "from C"}, "B"),
		st("D", "test.record", map[string]any{"name": "D"}, "C"))
}

// interruptAtC runs plan p until C has started, and cancels it.
func interruptAtC(t *testing.T, r *rig) result {
	t.Helper()
	done := r.executeAsync("p", map[string]any{"max_concurrent": 2})
	waitFor(t, r.probes.Started("C"), "C to start")
	if out := r.do("plan.cancel", `{"plan_id": "p"}`); string(out) != `{"cancelled":true}` {
		t.Errorf("plan.cancel: %s", out)
	}
	res := decodeResult(t, await(t, done))
	if got := ids(res.Plan); got != "A:Completed, B:Completed, C:Pending, D:Pending" || res.Plan.Status != "cancelled" {
		t.Fatalf("after cancelling: %s %s", res.Plan.Status, got)
	}
	return res
}

func Test001_3R_INT_015_ResumeFromCheckpointStartsAtC(t *testing.T) {
	dir := t.TempDir()
	r := newRigWith(t, rigOptions{dir: dir})
	sequential4(r)
	interrupted := interruptAtC(t, r)
	r.e.Close()

	// A new engram on the same store resumes.
	r = newRigWith(t, rigOptions{dir: dir})
	rec := r.record()
	r.probes.Release("C")
	res := decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`))
	rec.runs(t, 1)
	if res.Plan.Status != "completed" || !slices.Equal(rec.started(), []string{"C", "D"}) {
		t.Errorf("%s; started %v, want C, D", res.Plan.Status, rec.started())
	}
	// A and B were loaded, results and all, from the checkpoint.
	for _, id := range []string{"A", "B"} {
		if got, was := subtaskOf(t, res.Plan, id), subtaskOf(t, interrupted.Plan, id); !jsonEqual(got, was) {
			t.Errorf("%s:\n%+v\n%+v", id, got, was)
		}
	}
	if res.State["a"] != "from A" || res.State["c"] != "from C" || len(res.State["results"].(map[string]any)) != 4 {
		t.Errorf("state %v", res.State)
	}
	if res.Plan.Settings.MaxConcurrent != 2 {
		t.Errorf("resume did not reuse the settings: %+v", res.Plan.Settings)
	}
}

func Test001_3R_INT_016_CompletedSubtasksNotReExecuted(t *testing.T) {
	r := newRig(t)
	sequential4(r)
	interruptAtC(t, r)
	if r.probes.Calls("B") != 1 || r.probes.Calls("C") != 1 {
		t.Fatalf("calls: B %d, C %d", r.probes.Calls("B"), r.probes.Calls("C"))
	}
	r.probes.Release("C")
	res := decodeResult(t, r.do("plan.resume", `{"plan_id": "p"}`))
	if res.Plan.Status != "completed" || r.probes.Calls("B") != 1 || r.probes.Calls("C") != 2 || r.probes.Calls("D") != 1 {
		t.Errorf("%s; calls: B %d, C %d (interrupted, then run again), D %d", res.Plan.Status, r.probes.Calls("B"), r.probes.Calls("C"), r.probes.Calls("D"))
	}
	if b := subtaskOf(t, res.Plan, "B"); b.Attempts != 1 {
		t.Errorf("B: %+v", b)
	}
	// A completed plan, resumed or executed again, runs nothing.
	for _, action := range []string{"plan.resume", "plan.execute"} {
		res = decodeResult(t, r.do(action, `{"plan_id": "p"}`))
		if res.Plan.Status != "completed" || r.probes.Calls("B") != 1 || r.probes.Calls("D") != 1 {
			t.Errorf("%s: %s; calls B %d, D %d", action, res.Plan.Status, r.probes.Calls("B"), r.probes.Calls("D"))
		}
	}
}

// callOf is the call the engine would make for the default agent.
func callOf(r *rig) action.Call { return action.Call{Principal: "local", Clock: r.e.Clock()} }
