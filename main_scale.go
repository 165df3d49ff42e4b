package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/engram-console/engram/core/scale"
)

const scaleUsage = "engram scale --data DIR [--items N] [--threads N] [--utterances N] [--memories N] [--seed S]"

const scaleHelp = "Builds a large store for the benchmarks (README, Performance) into DIR: cortex items (the\n" +
	"benchmarks' mix of goals, actions and questions, owned by agent_a and agent_b), threads (one\n" +
	"message each), utterances (in the conversation \"scale\") and memories (in the episodic store\n" +
	"\"scale\"), all generated from the seed, many to a transaction, writing what the actions write.\n" +
	"Progress goes to stderr. Give a new directory: --data is required, never your own data.\n" +
	"Exit status: 0 built, 3 damaged, 4 the file system is full, 2 anything else."

// runScale runs `engram scale ...`; ok is false when args name another
// command. It is left out of engram -h: it is for benchmarking.
func runScale(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 || args[0] != "scale" {
		return 0, false
	}
	fs := flag.NewFlagSet("engram scale", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var opts scale.Options
	fs.StringVar(&opts.Dir, "data", "", "the data `DIR`ectory to build into (required: a new one)")
	fs.IntVar(&opts.Items, "items", 0, "cortex items")
	fs.IntVar(&opts.Threads, "threads", 0, "conversation threads")
	fs.IntVar(&opts.Utterances, "utterances", 0, "utterances")
	fs.IntVar(&opts.Memories, "memories", 0, "memories")
	fs.Uint64Var(&opts.Seed, "seed", 7, "the data's seed (7: the cortex benchmarks' items)")
	positional, code, done := parseSubcommand(fs, args[1:], "engram scale", scaleUsage, scaleHelp, stdout, stderr)
	if done {
		return code, true
	}
	if len(positional) > 0 {
		complain(stderr, "engram scale: unexpected argument %q\nUsage: %s\n", positional[0], scaleUsage)
		return exitUsage, true
	}
	if opts.Dir == "" {
		complain(stderr, "engram scale: --data DIR is required (a new directory: scale never writes into your own data by default)\nUsage: %s\n", scaleUsage)
		return exitUsage, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts.Progress = stderr
	rep, err := scale.Build(ctx, opts)
	if err != nil {
		complain(stderr, "engram scale: %v\n", err)
		return storageExit(err), true
	}
	_, _ = fmt.Fprintf(stdout, "built %d items, %d threads, %d utterances, %d memories into %s in %s\n",
		rep.Items, rep.Threads, rep.Utterances, rep.Memories, opts.Dir, rep.Took.Round(1e8)) // nowhere to report a failed write
	return exitOK, true
}
