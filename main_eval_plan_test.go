//go:build !noplanning

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/llm/llmtest"
)

// TestPlanSubtaskMayNotNameAnEvaluationFile: eval.retrieval's file is a
// path on the engine's machine, which only the person gives: a plan's
// subtask that runs it is refused (issue 13: no file path comes from a
// plan), and the file is never read.
func TestPlanSubtaskMayNotNameAnEvaluationFile(t *testing.T) {
	e := openEvalEngine(t, "")
	ctx := context.Background()
	do := func(name, args string) json.RawMessage {
		t.Helper()
		out, err := e.Do(ctx, core.Request{Action: name, Args: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	do("plan.create", `{"id": "p", "goal": "measure", "subtasks": [{"id": "eval", "action": {"name": "eval.retrieval", "args": {"file": "testdata/eval/tiny.json"}}}]}`)
	var res struct {
		Plan struct {
			Subtasks []struct {
				Status string `json:"status"`
				Error  string `json:"error"`
				Result any    `json:"result"`
			} `json:"subtasks"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(do("plan.execute", `{"plan_id": "p", "on_subtask_failure": "skip"}`), &res); err != nil {
		t.Fatal(err)
	}
	s := res.Plan.Subtasks[0]
	if s.Status != "Skipped" || !strings.Contains(s.Error, "may not run eval.retrieval (its arguments name a file") || s.Result != nil {
		t.Errorf("the subtask: %+v", s)
	}
}

// TestModelMayNotProposeAnEvaluationFile: eval.retrieval changes nothing
// stored, yet a model's plan may not name it: its file would be a path
// chosen by the model. The subtask keeps its description, with a warning.
func TestModelMayNotProposeAnEvaluationFile(t *testing.T) {
	model := llmtest.New(`{"subtasks": [{"id": "look", "description": "Measure recall", "action": {"name": "eval.retrieval", "args": {"file": "/etc/passwd"}}}]}`)
	e, err := core.Open(engineOptions(core.Options{InMemory: true, Clock: clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)), IDSeed: "eval tests", LLM: model}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	out, err := e.Do(context.Background(), core.Request{Action: "plan.decompose", Args: json.RawMessage(`{"goal": "Check retrieval", "id": "p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Plan struct {
			Subtasks []struct {
				Action  any    `json:"action"`
				Warning string `json:"warning"`
			} `json:"subtasks"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if p := res.Plan; len(p.Subtasks) != 1 || p.Subtasks[0].Action != nil || !strings.Contains(p.Subtasks[0].Warning, `"eval.retrieval"`) ||
		!strings.Contains(p.Subtasks[0].Warning, "name a file") {
		t.Errorf("the model's eval.retrieval was kept: %s", out)
	}
}
