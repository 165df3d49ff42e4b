package core

import (
	"context"
	"strings"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
)

func (e *Engine) registerBuiltins() {
	reg := e.env.Actions
	action.Register(reg, action.Spec{Name: "engine.info", Summary: "Version, store, language model and counts per subsystem", ReadOnly: true}, e.info)
	action.Register(reg, action.Spec{Name: "actions.list", Summary: "Every action with its description and argument fields", ReadOnly: true}, e.listActions)
	action.Register(reg, action.Spec{Name: "trace.list", Summary: "Turn trace entries, oldest first, by turn and kind", ReadOnly: true}, e.listTrace)
	action.Register(reg, action.Spec{Name: "turn.start", Summary: "Start a turn and assemble its working-memory context"}, e.startTurn)
	action.Register(reg, action.Spec{Name: "turn.end", Summary: "End a turn, committing its updates through the context providers"}, e.endTurn)
	e.registerLLM()
	e.registerChat()
}

// comingNamespaces are the action namespaces of subsystems not in this
// version yet: naming one of their actions says so, rather than guessing a
// neighbour.
var comingNamespaces = map[string]string{
	"plan":    "plans arrive with the planner",
	"memory":  "memory stores arrive with the memory plugins",
	"thread":  "threads arrive with episodic memory",
	"episode": "episodes arrive with episodic memory",
}

// markComing records the namespaces no subsystem registered.
func (e *Engine) markComing() {
	have := map[string]bool{}
	for _, a := range e.env.Actions.List() {
		ns, _, _ := strings.Cut(a.Name, ".")
		have[ns] = true
	}
	for ns, why := range comingNamespaces {
		if !have[ns] && !e.env.Actions.IsRemoved(ns) {
			e.env.Actions.Removed(ns, "this version of engram has no "+ns+".* actions yet ("+why+")")
		}
	}
}

// Info is engine.info's result.
type Info struct {
	Version    string                    `json:"version"`
	Store      string                    `json:"store"`
	DataDir    string                    `json:"data_dir,omitempty"`
	SyncWrites bool                      `json:"sync_writes"`
	Agent      string                    `json:"agent"`
	Provider   string                    `json:"provider"`
	Model      string                    `json:"model,omitempty"`
	EmbedModel string                    `json:"embed_model,omitempty"`
	Tokenizer  string                    `json:"tokenizer"`
	Actions    int                       `json:"actions"`
	Counts     map[string]map[string]int `json:"counts"`
}

// StoreLabel is "in-memory" or the data directory: how the TUI header names the store.
func (e *Engine) StoreLabel() string {
	if e.env.Store.InMemory() {
		return "in-memory"
	}
	return e.env.Store.Dir()
}

func (e *Engine) info(ctx context.Context, call action.Call, _ struct{}) (Info, error) {
	counts, err := e.env.Counts()
	if err != nil {
		return Info{}, err
	}
	store := "durable"
	if e.env.Store.InMemory() {
		store = "in-memory"
	}
	llmInfo := e.env.LLM.Info()
	return Info{
		Version: Version, Store: store, DataDir: e.env.Store.Dir(), SyncWrites: e.sync,
		Agent: e.agent, Provider: llmInfo.Provider, Model: llmInfo.Model, EmbedModel: llmInfo.EmbedModel,
		Tokenizer: llm.TokenizerName,
		Actions:   len(e.env.Actions.List()), Counts: counts,
	}, nil
}

type listActionsArgs struct {
	Namespace string `json:"namespace,omitempty" help:"only actions whose name starts with this namespace, e.g. \"turn\""`
}

// ActionInfo describes one action in actions.list.
type ActionInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	ReadOnly    bool           `json:"read_only"`
	Args        []action.Field `json:"args"`
}

func (e *Engine) listActions(ctx context.Context, call action.Call, args listActionsArgs) (map[string][]ActionInfo, error) {
	out := []ActionInfo{}
	for _, a := range e.env.Actions.List() {
		if args.Namespace != "" && !strings.HasPrefix(a.Name, strings.TrimSuffix(args.Namespace, ".")+".") {
			continue
		}
		fields := a.Fields
		if fields == nil {
			fields = []action.Field{}
		}
		out = append(out, ActionInfo{Name: a.Name, Description: a.Summary, ReadOnly: a.ReadOnly, Args: fields})
	}
	if len(out) == 0 && args.Namespace != "" {
		return nil, errs.New(errs.NotFound, "namespace: no actions in %q", args.Namespace).With("field", "namespace")
	}
	return map[string][]ActionInfo{"actions": out}, nil
}

type traceListArgs struct {
	Turn  string `json:"turn,omitempty" help:"only this turn's entries"`
	Kind  string `json:"kind,omitempty" help:"only entries of this kind, e.g. \"turn.start\""`
	Limit int    `json:"limit,omitempty" help:"at most this many, the most recent (default 100, 0 for the default)"`
}

type traceListResult struct {
	Entries []trace.Entry `json:"entries"`
	Count   int           `json:"count"`
	// More says older matching entries were left out by the limit.
	More bool `json:"more"`
}

const defaultTraceLimit = 100

func (e *Engine) listTrace(ctx context.Context, call action.Call, args traceListArgs) (traceListResult, error) {
	if args.Limit < 0 {
		return traceListResult{}, errs.New(errs.Validation, "limit: must be 0 or more, got %d", args.Limit).With("field", "limit")
	}
	limit := args.Limit
	if limit == 0 {
		limit = defaultTraceLimit
	}
	entries, more, err := e.env.Trace.List(trace.Filter{TurnID: args.Turn, Kind: args.Kind, Limit: limit})
	if err != nil {
		return traceListResult{}, err
	}
	return traceListResult{Entries: entries, Count: len(entries), More: more}, nil
}
