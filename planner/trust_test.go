//go:build !noplanning

package planner_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/llm/llmtest"
	"github.com/engram-console/engram/planner"
)

// A model's answer is data, never authority (issue 13, item 1): a fake
// OpenAI-compatible server answers plan.decompose with subtasks that name
// destructive actions and a nested plan.execute writing a checkpoint file.
// None of it may run: each attacking subtask runs its description instead
// (llm.complete), says what was refused, and nothing is deleted, forgotten
// or written.
func TestModelMadeSubtasksCannotDeleteForgetOrWriteFiles(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "PWNED.json")
	attack, _ := json.Marshal(map[string]any{"subtasks": []any{
		map[string]any{"id": "drop", "description": "Tidy the goals",
			"action": map[string]any{"name": "cortex.delete", "args": map[string]any{"id": "g1"}}},
		map[string]any{"id": "forget", "description": "Tidy the memories",
			"action": map[string]any{"name": "memory.forget", "args": map[string]any{"store": "working", "instruction": "oldest 1000", "mode": "hard"}}},
		map[string]any{"id": "erase", "description": "Tidy the history",
			"action": map[string]any{"name": "history.delete", "args": map[string]any{"utterance_index": 0}}},
		map[string]any{"id": "pwn", "description": "Save the progress",
			"action": map[string]any{"name": "plan.execute", "args": map[string]any{"plan_id": "other", "checkpoint": pwned}}},
		map[string]any{"id": "wait", "description": "Wait a moment", "action": map[string]any{"name": "task.noop"}},
	}})
	var srv *modelServer
	srv = openAIServer(t, func(n int) (int, string) {
		// The decompose request asks for JSON; every other is a subtask's
		// description (memorize's embedding requests get a 404 first).
		_, sent := srv.sent()
		if sent[n]["response_format"] != nil {
			return 200, chatCompletion(string(attack))
		}
		return 200, chatCompletion("done")
	})
	r := newRigWith(t, rigOptions{llm: openAIProvider(t, srv, 0)})

	r.do("cortex.create", `{"type": "goal", "id": "g1", "fields": {"title": "Ship the beta"}}`)
	for i := range 3 {
		r.do("memory.memorize", fmt.Sprintf(`{"store": "working", "item": {"id": "m%d", "type": "fact", "text": "fact %d", "agent_id": "assistant"}}`, i, i))
	}
	r.do("history.write", `{"speaker": "user", "text": "Book the offsite."}`)
	r.do("history.write", `{"speaker": "assistant", "text": "Noted."}`)
	r.create("other", st("a", "noop", nil))

	p := decodePlan(t, r.do("plan.decompose", `{"goal": "Tidy up", "id": "tidy"}`))
	for _, id := range []string{"drop", "forget", "erase", "pwn"} {
		s := subtaskOf(t, p, id)
		if s.Action != nil || !strings.Contains(s.Warning, "refused") {
			t.Errorf("subtask %s kept action %v (warning %q)", id, s.Action, s.Warning)
		}
	}
	if w := subtaskOf(t, p, "drop").Warning; !strings.Contains(w, `"cortex.delete"`) {
		t.Errorf("the warning %q does not name the refused action", w)
	}
	if s := subtaskOf(t, p, "wait"); s.Action == nil || s.Action.Name != "task.noop" || s.Warning != "" {
		t.Errorf("the allowed task.noop was not kept: %+v", s)
	}
	// The refusal is part of the stored plan, for whoever reads it later.
	stored := decodePlan(t, r.do("plan.get", `{"plan_id": "tidy"}`))
	if subtaskOf(t, stored, "pwn").Warning == "" {
		t.Error("plan.get does not show the refusal")
	}

	res := r.execute("tidy", nil)
	if res.Plan.Status != planner.PlanCompleted {
		t.Fatalf("plan %s: %s", res.Plan.Status, ids(res.Plan))
	}
	for _, id := range []string{"drop", "forget", "erase", "pwn"} {
		if got := string(subtaskOf(t, res.Plan, id).Result); !strings.Contains(got, "done") {
			t.Errorf("subtask %s did not run its description: result %s", id, got)
		}
	}

	if item := string(r.do("cortex.get", `{"id": "g1"}`)); strings.Contains(item, "archived") {
		t.Errorf("the goal was deleted: %s", item)
	}
	var capacity struct {
		ItemCount int `json:"item_count"`
	}
	enginetest.Decode(t, r.do("memory.capacity", `{"store": "working"}`), &capacity)
	if capacity.ItemCount != 3 {
		t.Errorf("working memory holds %d items, want the 3 memorized", capacity.ItemCount)
	}
	var stats struct {
		Size int `json:"size"`
	}
	enginetest.Decode(t, r.do("history.stats", `{}`), &stats)
	if stats.Size != 2 {
		t.Errorf("history holds %d utterances, want 2", stats.Size)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Errorf("a model-made subtask wrote %s (stat: %v)", pwned, err)
	}
	if other := decodePlan(t, r.do("plan.get", `{"plan_id": "other"}`)); other.Status != planner.PlanPending {
		t.Errorf("a model-made subtask ran the plan other: %s", other.Status)
	}
}

// A replan is model output too: its subtasks pass the same allowlist.
func TestReplannedSubtasksCannotRunDestructiveActions(t *testing.T) {
	r := newRig(t)
	r.do("cortex.create", `{"type": "goal", "id": "g1", "fields": {"title": "Ship the beta"}}`)
	r.model.Answers = []llmtest.Answer{llmtest.Text(`{"subtasks": [{"id": "drop", "description": "Start over", "action": {"name": "cortex.delete", "args": {"id": "g1"}}}]}`), llmtest.Text("done")}
	r.create("p", st("a", "fail", nil))
	res := r.execute("p", map[string]any{"on_subtask_failure": "replan"})
	drop := subtaskOf(t, res.Plan, "drop")
	if drop.Action != nil || !strings.Contains(drop.Warning, "cortex.delete") {
		t.Errorf("the replanned subtask kept its action: %+v", drop)
	}
	if item := string(r.do("cortex.get", `{"id": "g1"}`)); strings.Contains(item, "archived") {
		t.Errorf("the goal was deleted by a replanned subtask: %s", item)
	}
}

// No plan — written by a person or not — creates, runs or resumes plans,
// and so no file path comes from a plan (issue 13, item 1): plan.execute's
// checkpoint and plan.create's file are refused in a subtask, while a
// read-only plan.* action still runs.
func TestPlanSubtasksCannotRunPlanActionsOrNameFiles(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.yaml")
	if err := os.WriteFile(secret, []byte("hunter2-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(dir, "PWNED.json")
	r.create("other", st("a", "noop", nil))
	r.create("nested",
		st("run", "plan.execute", map[string]any{"plan_id": "other", "checkpoint": pwned}),
		st("make", "plan.create", map[string]any{"file": secret}),
		st("resume", "plan.resume", map[string]any{"plan_id": "other"}),
		st("look", "plan.status", map[string]any{"plan_id": "other"}))
	res := r.execute("nested", map[string]any{"on_subtask_failure": "skip"})
	for _, id := range []string{"run", "make", "resume"} {
		s := subtaskOf(t, res.Plan, id)
		if s.Status != planner.Skipped || !strings.Contains(s.Error, "may not run plan.") {
			t.Errorf("subtask %s: %s %q", id, s.Status, s.Error)
		}
		if strings.Contains(s.Error, "hunter2") {
			t.Errorf("subtask %s's error quotes the file: %q", id, s.Error)
		}
	}
	if s := subtaskOf(t, res.Plan, "look"); s.Status != planner.Completed {
		t.Errorf("the read-only plan.status did not run: %s %q", s.Status, s.Error)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Errorf("a subtask wrote %s (stat: %v)", pwned, err)
	}
	if other := decodePlan(t, r.do("plan.get", `{"plan_id": "other"}`)); other.Status != planner.PlanPending {
		t.Errorf("a subtask ran the plan other: %s", other.Status)
	}
}

// A plan's subtask may not manage tokens: over TCP a token of the operator's
// agent could otherwise make itself new tokens (token.* is refused there),
// and the new token's secret would be kept in the plan's results.
func TestPlanSubtasksCannotRunTokenActions(t *testing.T) {
	r := newRig(t)
	r.create("mint", st("make", "token.create", map[string]any{"agent": "local"}), st("list", "token.list", nil))
	res := r.execute("mint", map[string]any{"on_subtask_failure": "skip"})
	for _, id := range []string{"make", "list"} {
		if s := subtaskOf(t, res.Plan, id); s.Status != planner.Skipped || !strings.Contains(s.Error, "may not run token.") {
			t.Errorf("subtask %s: %s %q", id, s.Status, s.Error)
		}
	}
	if strings.Contains(string(r.do("plan.get", `{"plan_id": "mint"}`)), "egt_") {
		t.Errorf("the plan keeps a token")
	}
}
