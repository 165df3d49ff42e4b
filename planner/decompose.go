//go:build !noplanning

package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
)

// proposed is a subtask as a model proposes it (nested for hierarchical
// plans).
type proposed struct {
	ID           string      `json:"id,omitempty"`
	Description  string      `json:"description" arg:"required"`
	Dependencies []string    `json:"dependencies,omitempty"`
	Action       *ActionSpec `json:"action,omitempty"`
	Subtasks     []proposed  `json:"subtasks,omitempty"`
}

type proposal struct {
	Subtasks []proposed `json:"subtasks" arg:"required"`
}

const decomposeSystem = `You break goals into plans of subtasks. Answer with JSON only, in this shape:
{"subtasks": [{"id": "short-id", "description": "what to do", "dependencies": ["ids of subtasks that must finish first"]}]}
Ids are short, unique, lower-case words joined by dashes. Dependencies name only ids of the same answer.`

var strategyGuidance = map[string]string{
	"flat":         "Give one flat list of subtasks; independent subtasks have no dependencies between them, so they can run in parallel.",
	"hierarchical": "Give a tree: a subtask may have its own \"subtasks\" (same shape), at most %d levels deep in all.",
	"iterative":    "Give the steps in the order to do them, one after the other.",
}

// proposalSchema is the JSON schema of the answer (servers that support it
// use it to constrain the model).
var proposalSchema = json.RawMessage(`{"type":"object","required":["subtasks"],"properties":{"subtasks":{"type":"array","items":{"type":"object","required":["description"],"properties":{"id":{"type":"string"},"description":{"type":"string"},"dependencies":{"type":"array","items":{"type":"string"}},"subtasks":{"type":"array"}}}}}}`)

// asker is who asks the model for subtasks: the action the person ran and
// what they can do instead without a model. The error that says a model is
// missing names it (issue 14, bug 4): a plan.replan that blamed
// plan.decompose sent the reader to an action they never ran.
type asker struct{ action, instead string }

var (
	byDecompose = asker{"plan.decompose", "write the plan yourself with plan.create"}
	byReplan    = asker{"plan.replan", "write the plan yourself with plan.create"}
	byExecute   = asker{"plan.execute's replan (on_subtask_failure replan)", "execute the plan with on_subtask_failure skip, retry or abort"}
)

// needsModel is the LLMError of an asker when no model is configured.
func needsModel(by asker, err error) error {
	return errs.New(errs.LLM, "%s needs a language model: start engram with --llm ollama or --llm openai (and --model NAME), or %s%w", by.action, by.instead, quiet{err}).
		With("transient", false).With("attempts", 0)
}

// decompose asks the model for a plan's subtasks, on behalf of by.
func (pl *Planner) decompose(ctx context.Context, by asker, goal, strategy string, maxDepth int, extra string) ([]*Subtask, error) {
	guidance := strategyGuidance[strategy]
	if strategy == "hierarchical" {
		guidance = fmt.Sprintf(guidance, maxDepth)
	}
	user := "Goal: " + goal + "\n" + guidance
	if extra != "" {
		user += "\n\n" + extra
	}
	req := llm.Prompt(decomposeSystem, user)
	req.JSON, req.Schema = true, proposalSchema
	zero := 0.0
	req.Temperature = &zero
	resp, err := pl.env.LLM.Complete(ctx, req)
	if err != nil {
		if !llm.Available(pl.env.LLM) {
			return nil, needsModel(by, err)
		}
		return nil, kit.FromLLM(err)
	}
	subtasks, err := parseProposal(resp.Text, strategy, maxDepth)
	if err != nil {
		return nil, err
	}
	pl.screen(subtasks)
	return subtasks, nil
}

// screen strips from model-made subtasks every action a model may not
// choose (issue 13, item 1): what a model proposes is data, never
// authority. A stripped subtask keeps its description (it asks the model
// to do it, as a subtask without an action does) and says in its warning
// which action was refused. An action a model may choose is kept as
// proposed: it runs only once the person approved it (approveProposed).
func (pl *Planner) screen(subtasks []*Subtask) {
	for _, s := range subtasks {
		if s.Action == nil {
			continue
		}
		if pl.modelMayPropose(s.Action.Name) {
			s.Proposed = true
			continue
		}
		s.Warning = fmt.Sprintf("the model proposed the action %q, which was refused: a model-made subtask may run only read-only and task.* actions (not plan.*, nor one whose arguments name a file); it runs its description instead",
			llm.Truncate(s.Action.Name, 80))
		pl.env.Log.Warn("refused an action a model proposed", "subtask", s.ID, "action", llm.Truncate(s.Action.Name, 80))
		s.Action = nil
	}
}

// modelMayPropose is the allowlist of actions a model-made subtask may
// name: those that change nothing stored (their Spec is ReadOnly) and the
// task.* steps, but no plan.* action (they start, resume and create plans,
// and plan.execute's checkpoint names a file) and no action whose
// arguments name a file (Spec.NamesFiles: eval.retrieval). Anything else — a delete, a
// forget, a write — comes only from the person, through plan.create or a
// batch script.
func (pl *Planner) modelMayPropose(name string) bool {
	if alias, ok := actionAliases[name]; ok {
		name = alias
	}
	if strings.HasPrefix(name, "plan.") {
		return false
	}
	a, err := pl.env.Actions.Lookup(name)
	if err != nil || a.NamesFiles || len(a.FileArgs) > 0 {
		return false
	}
	return a.ReadOnly || strings.HasPrefix(name, "task.")
}

// parseProposal reads a model's answer strictly: anything that does not fit
// the shape is a ParseError carrying the answer (cut for display).
func parseProposal(answer, strategy string, maxDepth int) ([]*Subtask, error) {
	raw := llm.Truncate(answer, 300)
	body := strings.TrimSpace(answer)
	if strings.HasPrefix(body, "[") {
		// A bare list of subtasks (as many models answer): the same plan.
		body = `{"subtasks": ` + body + `}`
	}
	var p proposal
	if err := action.DecodeStrict(json.RawMessage(body), &p); err != nil {
		// DecodeStrict speaks of action args; say it of the answer, and
		// show the answer itself (the message is all many readers see).
		reason := errs.As(err).Message
		switch {
		case strings.HasPrefix(reason, "args."):
			reason = strings.TrimPrefix(reason, "args.")
		case strings.HasPrefix(reason, "args: "):
			reason = strings.TrimPrefix(reason, "args: ")
		case strings.HasPrefix(reason, "args are not valid JSON"):
			reason = "not valid JSON" + strings.TrimPrefix(reason, "args are not valid JSON")
		case strings.HasPrefix(reason, "args must be"):
			reason = "the answer must be" + strings.TrimPrefix(reason, "args must be")
		}
		return nil, errs.New(errs.Parse, "the model's plan is not in the shape asked for (%s); its answer: %q", reason, raw).
			With("raw", raw)
	}
	if len(p.Subtasks) == 0 {
		return nil, errs.New(errs.Parse, "the model's plan has no subtasks; its answer: %q", raw).With("raw", raw)
	}
	if strategy != "hierarchical" {
		maxDepth = 1 // flat and iterative plans have one level: nesting is flattened
	}
	var out []*Subtask
	used := map[string]bool{}
	n := 0
	var walk func(items []proposed, depth int, parent string) []string
	walk = func(items []proposed, depth int, parent string) []string {
		var ids []string
		var previous string
		for _, it := range items {
			n++
			id := strings.TrimSpace(it.ID)
			if id == "" || used[id] {
				id = uniqueID(fmt.Sprintf("step-%d", n), used)
			}
			used[id] = true
			s := &Subtask{ID: id, Description: strings.TrimSpace(it.Description), Dependencies: append([]string{}, it.Dependencies...),
				Action: it.Action, Status: Pending, Depth: depth, Parent: parent}
			if strategy == "iterative" && previous != "" {
				s.Dependencies = appendUnique(s.Dependencies, previous)
			}
			out = append(out, s)
			ids = append(ids, id)
			previous = id
			if len(it.Subtasks) > 0 {
				childDepth, childParent := depth+1, id
				if depth >= maxDepth {
					// Deeper than max_depth: the children are flattened to
					// this level, beside their parent.
					childDepth, childParent = depth, parent
				}
				before := len(out)
				children := walk(it.Subtasks, childDepth, childParent)
				// A parent is done when its children are: it waits for
				// them, flattened or not (or its own parent would not wait
				// for the flattened ones, and it would do their work itself).
				s.Dependencies = appendUnique(s.Dependencies, children...)
				// So its descendants cannot also wait for it (a model saying
				// "after b" of b's own steps would make a cycle).
				for _, d := range out[before:] {
					d.Dependencies = slices.DeleteFunc(d.Dependencies, func(x string) bool { return x == id })
				}
				s.Action = &ActionSpec{Name: "task.noop"}
			}
		}
		return ids
	}
	walk(p.Subtasks, 1, "")
	return out, nil
}

func uniqueID(base string, used map[string]bool) string {
	id := base
	for i := 2; used[id]; i++ {
		id = fmt.Sprintf("%s-%d", base, i)
	}
	return id
}

func appendUnique(list []string, more ...string) []string {
	for _, m := range more {
		found := false
		for _, x := range list {
			found = found || x == m
		}
		if !found {
			list = append(list, m)
		}
	}
	return list
}

// quiet wraps an error for its type without adding to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// replanPrompt gives the model what is done and what failed.
//
// Only what principal's own runs produced goes to the model: the results
// of subtasks another agent ran may hold what only that agent could read.
func replanContext(p *Plan, principal string) string {
	var b strings.Builder
	b.WriteString("This plan was already partly carried out. Plan the REMAINING work only.\nDone (you may depend on these ids):\n")
	done := 0
	for _, s := range p.Subtasks {
		if s.Status == Completed {
			done++
			fmt.Fprintf(&b, "- %s: %s", s.ID, s.Description)
			if len(s.Result) > 0 && runnerOf(s) == principal {
				fmt.Fprintf(&b, " → %s", llm.Truncate(string(s.Result), 200))
			}
			b.WriteByte('\n')
		}
	}
	if done == 0 {
		b.WriteString("(nothing yet)\n")
	}
	b.WriteString("Failed or not started:\n")
	for _, s := range p.Subtasks {
		if s.Status != Completed {
			fmt.Fprintf(&b, "- %s: %s", s.ID, s.Description)
			if s.Error != "" && runnerOf(s) == principal {
				fmt.Fprintf(&b, " (failed: %s)", llm.Truncate(s.Error, 300))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
