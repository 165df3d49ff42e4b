package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/evalret"
)

const evalUsage = "engram eval retrieval FILE [--json [--details]] [--retriever history|bm25|hybrid|all|hashed|hybrid+hashed] [--split dev|heldout|all]"

const evalHelp = "Measures how well engram finds the turns that answer questions about long conversations.\n" +
	"FILE is an evaluation set (the format is in docs/eval.md; testdata/eval/engram-longmem.json is\n" +
	"engram's own): its conversations are loaded into a scratch engine in memory, never into your data\n" +
	"directory, and every question is asked of each retriever: history (history.search, as engram\n" +
	"searches), bm25 (plain BM25 over the turns' words, the baseline) and hybrid (core/retrieval's\n" +
	"offline hybrid ranker). It prints recall@1/5/10,\n" +
	"all evidence in the top 10, MRR and nDCG@10 per category and split, and the median search time.\n" +
	"Progress goes to stderr. Exit status: 0 measured, 2 a bad file or flag."

// runEval runs `engram eval ...`; ok is false when args name another
// command.
func runEval(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 || args[0] != "eval" {
		return 0, false
	}
	fs := flag.NewFlagSet("engram eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the result as JSON (the result of the eval.retrieval action)")
	retriever := fs.String("retriever", evalret.All, "the retriever to measure: history, bm25, hybrid or all; or hashed, hybrid+hashed (a scripted embedding model, only when named)")
	split := fs.String("split", evalret.All, "the questions to ask: dev, heldout or all (each split, and both)")
	details := fs.Bool("details", false, "with --json: also list each question's outcome (the rank of its first evidence turn, the turns ranked)")
	positional, code, done := parseSubcommand(fs, args[1:], "engram eval", evalUsage, evalHelp, stdout, stderr)
	if done {
		return code, true
	}
	if len(positional) == 0 || positional[0] != "retrieval" {
		what := "nothing"
		if len(positional) > 0 {
			what = fmt.Sprintf("%q", positional[0])
		}
		complain(stderr, "engram eval: got %s; the one evaluation is retrieval\nUsage: %s\n", what, evalUsage)
		return exitUsage, true
	}
	if len(positional) != 2 {
		complain(stderr, "engram eval retrieval: give one evaluation FILE (got %d)\nUsage: %s\n", len(positional)-1, evalUsage)
		return exitUsage, true
	}
	if *details && !*asJSON {
		complain(stderr, "engram eval retrieval: --details lists every question, which only --json prints; add --json\nUsage: %s\n", evalUsage)
		return exitUsage, true
	}
	opts := evalret.Options{Retrievers: []string{*retriever}, Split: *split, Progress: stderr, Details: *details}
	if err := opts.Check(); err != nil {
		complain(stderr, "engram eval retrieval: --%s\nUsage: %s\n", errs.As(err).Message, evalUsage)
		return exitUsage, true
	}
	set, err := evalret.ReadFile(positional[1])
	if err != nil {
		complain(stderr, "engram eval retrieval: %s\n", errs.As(err).Message)
		return exitUsage, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := evalret.Evaluate(ctx, set, opts)
	if err != nil {
		e := errs.As(err)
		complain(stderr, "engram eval retrieval: %s\n", e.Message)
		if e.Kind == errs.Validation {
			return exitUsage, true
		}
		return exitFailed, true
	}
	if *asJSON {
		out, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			complain(stderr, "engram eval retrieval: %v\n", err)
			return exitFailed, true
		}
		_, _ = fmt.Fprintf(stdout, "%s\n", out) // nowhere to report a failed write to stdout
		return exitOK, true
	}
	if err := evalret.WriteTable(stdout, res); err != nil {
		complain(stderr, "engram eval retrieval: %v\n", err)
		return exitFailed, true
	}
	return exitOK, true
}
