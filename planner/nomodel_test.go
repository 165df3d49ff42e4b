//go:build !noplanning

package planner_test

// Without a model, the error names the action the person ran (issue 14,
// bug 4): plan.replan used to say "plan.decompose needs a language model".

import (
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/llm"
)

func TestReplanWithoutModelNamesPlanReplan(t *testing.T) {
	r := newRigWith(t, rigOptions{llm: llm.Offline{}})
	r.create("p", st("A", "noop", nil), st("B", "fail", nil, "A"))
	r.execute("p", nil) // aborted at B: something to replan
	e := r.fail(errs.LLM, "plan.replan", `{"plan_id": "p"}`)
	if !strings.HasPrefix(e.Message, "plan.replan needs a language model: start engram with --llm ollama") ||
		strings.Contains(e.Message, "plan.decompose") || !strings.Contains(e.Message, "plan.create") {
		t.Errorf("plan.replan without a model: %q", e.Message)
	}
	if e.Details["transient"] != false || e.Details["attempts"] != 0 {
		t.Errorf("details %v", e.Details)
	}
	// plan.decompose still names itself.
	if e := r.fail(errs.LLM, "plan.decompose", `{"goal": "g"}`); !strings.HasPrefix(e.Message, "plan.decompose needs a language model") {
		t.Errorf("plan.decompose without a model: %q", e.Message)
	}
}
