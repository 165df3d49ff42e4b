//go:build !noplanning

package planner

// A replan during plan.execute (on_subtask_failure replan) says that it is
// plan.execute's replan that needs the model, and what to run instead
// (issue 14, bug 4). The run keeps that error as its failure, out of reach
// of the external tests: hence this one, on the message itself.

import (
	"errors"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
)

func TestReplanDuringExecuteWithoutModelSaysSo(t *testing.T) {
	e := errs.As(needsModel(byExecute, errors.New("offline")))
	if e.Kind != errs.LLM || !strings.HasPrefix(e.Message, "plan.execute's replan (on_subtask_failure replan) needs a language model: start engram with --llm ollama") ||
		!strings.Contains(e.Message, "on_subtask_failure skip, retry or abort") {
		t.Errorf("%s: %q", e.Kind, e.Message)
	}
	if strings.Contains(e.Message, "offline") {
		t.Errorf("the cause shows in the message: %q", e.Message)
	}
}
