package evalret

import (
	"context"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/kit"
)

// RetrievalArgs are eval.retrieval's arguments.
type RetrievalArgs struct {
	File      string `json:"file" arg:"required" help:"the evaluation set: a JSON file on the engine's machine (docs/eval.md)"`
	Retriever string `json:"retriever,omitempty" help:"history (history.search), bm25 (the baseline), hybrid (core/retrieval) or all (the default)"`
	Split     string `json:"split,omitempty" help:"dev, heldout or all (the default: each split, and both together)"`
	Details   bool   `json:"details,omitempty" help:"also list each question's outcome: the rank of its first evidence turn and the turns ranked"`
}

// ActionRetrieval is the eval.retrieval action. Measure retrieval on an
// evaluation set, in a scratch engine.
var ActionRetrieval = action.NewRef[RetrievalArgs, Result]("eval.retrieval")

// Subsystem registers eval.retrieval. Its argument names a file, which
// only the person may give (action.Spec.NamesFiles); it reads nothing of
// the engine's store and writes nothing to it.
func Subsystem() func(env *kit.Env) error {
	return func(env *kit.Env) error {
		ActionRetrieval.Register(env.Actions, action.Spec{
			Summary:    "Measure retrieval (recall@k, MRR, nDCG) on an evaluation set, in a scratch engine",
			ReadOnly:   true,
			NamesFiles: true,
		}, retrieval)
		return nil
	}
}

func retrieval(ctx context.Context, _ action.Call, args RetrievalArgs) (Result, error) {
	opts := Options{Split: args.Split, Details: args.Details}
	if args.Retriever != "" {
		opts.Retrievers = []string{args.Retriever}
	}
	// The options first: a bad one is refused before the file is read.
	if err := opts.Check(); err != nil {
		return Result{}, err
	}
	set, err := ReadFile(args.File)
	if err != nil {
		return Result{}, err
	}
	res, err := Evaluate(ctx, set, opts)
	if err != nil {
		return Result{}, err
	}
	return *res, nil
}
