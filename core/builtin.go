package core

import (
	"context"
	"slices"
	"strings"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/embed"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/llm"
)

func (e *Engine) registerBuiltins() {
	reg := e.env.Actions
	ActionEngineInfo.Register(reg, action.Spec{Summary: "Version, store, language model and counts per subsystem", ReadOnly: true}, e.info)
	ActionListActions.Register(reg, action.Spec{Summary: "Every action with its description and argument fields", ReadOnly: true}, e.listActions)
	ActionTraceList.Register(reg, action.Spec{Summary: "Turn trace entries, oldest first, by turn and kind", ReadOnly: true}, e.listTrace)
	e.env.Trace.Register(reg)
	ActionTurnStart.Register(reg, action.Spec{Summary: "Start a turn and assemble its working-memory context"}, e.startTurn)
	ActionTurnEnd.Register(reg, action.Spec{Summary: "End a turn, committing its updates through the context providers"}, e.endTurn)
	// Every agent's clients are the operator's to list, as engine.info's counts:
	// whichever engram owns the directory, whatever its --agent.
	clients.Register(e.env, e.clients, access.LegacyOwner)
	ActionReembed.Register(reg, action.Spec{Summary: "Re-embed every text whose vector is missing or another model's (operator only)"}, e.reembed)
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
type Info = conn.Info

// StoreLabel is "in-memory" or the data directory, as conn.Info.StoreLabel
// says it: for the log, which has no Info at hand.
func (e *Engine) StoreLabel() string {
	if e.env.Store.InMemory() {
		return "in-memory"
	}
	return e.env.Store.Dir()
}

func (e *Engine) info(ctx context.Context, call action.Call, args conn.InfoArgs) (Info, error) {
	var counts map[string]map[string]int
	// The counts are every agent's objects: only the operator (the agent
	// that owns engine-wide settings, as episode.tune's rule) is told
	// them, whichever process owns the directory and whatever its --agent.
	if (args.Counts == nil || *args.Counts) && call.Principal == access.LegacyOwner {
		var err error
		if counts, err = e.env.Counts(); err != nil {
			return Info{}, err
		}
	}
	holds, err := e.env.HoldsAnything()
	if err != nil {
		// empty only decides the console's tour offer: a record a Holder
		// cannot read (engram check names it) makes it unknown, not the
		// header's and the read-only notice's failure.
		e.env.Log.Warn("engine.info: could not tell whether the store is empty", "err", err)
		holds = true
	}
	store := "durable"
	if e.env.Store.InMemory() {
		store = "in-memory"
	}
	llmInfo := e.env.LLM.Info()
	var readOnly string
	if full := e.env.Store.FullAtOpen(); full != nil {
		readOnly = full.Error()
	}
	return Info{
		Embeddings: e.embeddingsInfo(call.Principal == access.LegacyOwner),
		Version:    Version, Store: store, DataDir: e.env.Store.Dir(), SyncWrites: e.sync,
		Agent: e.agent, Provider: llmInfo.Provider, Model: llmInfo.Model, EmbedModel: llmInfo.EmbedModel,
		Tokenizer: llm.TokenizerName,
		Actions:   len(e.env.Actions.List()), Counts: counts, Empty: !holds, ReadOnly: readOnly,
	}, nil
}

// embeddingsInfo is engine.info's embeddings: nil offline with nothing
// waiting. Its counts, errors and mismatch are every agent's texts (a
// cached count even tells whether someone wrote a text before), so only
// the operator is told them; others learn the model and its dimension.
func (e *Engine) embeddingsInfo(operator bool) *conn.EmbeddingsInfo {
	q := e.env.Embeddings()
	s := q.Stats()
	if !q.Enabled() && s.Pending == 0 && s.Mismatched == 0 {
		return nil
	}
	if !operator {
		if !q.Enabled() {
			return nil
		}
		return &conn.EmbeddingsInfo{Model: s.Model, Dimension: s.Dimension}
	}
	out := &conn.EmbeddingsInfo{Model: s.Model, Dimension: s.Dimension, Pending: s.Pending, Failed: s.Failed,
		Retried: s.Retried, Embedded: s.Embedded, Cached: s.Cached, LastError: s.LastError,
		Mismatched: s.Mismatched, Mismatch: s.Mismatch}
	if !s.NextRetry.IsZero() {
		at := s.NextRetry
		out.NextRetry = &at
	}
	return out
}

// reembed is embeddings.reembed: the operator's, since it rewrites every
// principal's vectors.
func (e *Engine) reembed(ctx context.Context, call action.Call, args ReembedArgs) (ReembedResult, error) {
	q := e.env.Embeddings()
	// Permission first: another agent learns nothing of the sources.
	if call.Principal != access.LegacyOwner {
		return ReembedResult{}, errs.New(errs.Permission, "embeddings.reembed rewrites every principal's vectors, so only the operator (%s) may run it", access.LegacyOwner)
	}
	if args.Source != "" && !slices.Contains(q.SourceNames(), args.Source) {
		return ReembedResult{}, errs.New(errs.Validation, "source: no subsystem %q keeps vectors; use one of %s, or leave it out for all",
			args.Source, strings.Join(q.SourceNames(), ", ")).With("field", "source")
	}
	if !q.Enabled() {
		return ReembedResult{}, errs.New(errs.LLM, "%s", embed.ErrNoModel.Error())
	}
	res, err := q.Reembed(ctx, args.Source)
	if err != nil {
		return ReembedResult{}, err
	}
	return ReembedResult(res), nil
}

// ReembedArgs are embeddings.reembed's arguments.
type ReembedArgs struct {
	Source string `json:"source,omitempty" help:"only this subsystem's vectors (history or memory); default all"`
}

// ReembedResult is embeddings.reembed's result: what it queued, by
// subsystem. The queue embeds them in the background; engine.info's
// embeddings.pending shows its progress.
type ReembedResult = embed.ReembedResult

func (e *Engine) listActions(ctx context.Context, call action.Call, args conn.ListActionsArgs) (conn.ListActionsResult, error) {
	out := []conn.ActionInfo{}
	for _, a := range e.env.Actions.List() {
		if args.Namespace != "" && !strings.HasPrefix(a.Name, strings.TrimSuffix(args.Namespace, ".")+".") {
			continue
		}
		fields := a.Fields
		if fields == nil {
			fields = []action.Field{}
		}
		out = append(out, conn.ActionInfo{Name: a.Name, Description: a.Summary, ReadOnly: a.ReadOnly, Args: fields})
	}
	if len(out) == 0 && args.Namespace != "" {
		return conn.ListActionsResult{}, errs.New(errs.NotFound, "namespace: no actions in %q", args.Namespace).With("field", "namespace")
	}
	return conn.ListActionsResult{Actions: out}, nil
}

const defaultTraceLimit = 100

func (e *Engine) listTrace(ctx context.Context, call action.Call, args trace.ListArgs) (trace.ListResult, error) {
	if args.Limit < 0 {
		return trace.ListResult{}, errs.New(errs.Validation, "limit: must be 0 or more, got %d", args.Limit).With("field", "limit")
	}
	limit := args.Limit
	if limit == 0 {
		limit = defaultTraceLimit
	}
	entries, more, err := e.env.Trace.List(trace.Filter{TurnID: args.Turn, Kind: args.Kind, Limit: limit, Viewer: call.Principal, Access: e.env.Access})
	if err != nil {
		return trace.ListResult{}, err
	}
	return trace.ListResult{Entries: entries, Count: len(entries), More: more}, nil
}
