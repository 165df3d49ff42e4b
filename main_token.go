package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/tokens"
)

// tokenUsage is `engram token`'s usage line.
const tokenUsage = "engram token create --agent NAME [--read-only] | list | revoke ID  [--data DIR] [--json]"

// tokenCommands are `engram token`'s subcommands.
var tokenCommands = map[string]struct {
	usage, help string
	args        int // positional arguments (an ID)
	run         func(ctx context.Context, c conn.Conn, opts tokenOptions, stdout, stderr io.Writer) error
}{
	"create": {"engram token create --agent NAME [--read-only] [--data DIR] [--json]",
		"Makes a bearer token for agent NAME, for clients over TCP (engram serve --listen), and prints it on\n" +
			"its own line. It is shown this once: the data directory keeps only its hash. With --read-only the\n" +
			"token may only read. Exit status: 0 made, 1 refused (the message says why), 2 bad flags or an\n" +
			"unusable data directory, 3 damaged, 4 the file system is full.", 0, tokenCreate},
	"list": {"engram token list [--data DIR] [--json]",
		"Lists every token: id, agent, read-only, when it was made, when it was revoked. Never a secret.\n" +
			"Exit status: 0 listed, 2 bad flags or an unusable data directory, 3 damaged.", 0, tokenList},
	"revoke": {"engram token revoke ID [--data DIR] [--json]",
		"Revokes the token ID (as engram token list shows it): it authenticates no longer. Revoking is final.\n" +
			"Exit status: 0 revoked, 1 no such token or revoked already, 2 bad flags or an unusable data\n" +
			"directory, 3 damaged, 4 the file system is full.", 1, tokenRevoke},
}

// tokenOptions are the flags of `engram token ...`.
type tokenOptions struct {
	agent    string
	readOnly bool
	json     bool
	id       string
}

// runToken runs `engram token create|list|revoke ...`; ok is false when
// args do not start with "token".
func runToken(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 || args[0] != "token" {
		return 0, false
	}
	if len(args) == 1 || args[1] == "-h" || args[1] == "-help" || args[1] == "--help" {
		out := stdout
		code = exitOK
		if len(args) == 1 {
			out, code = stderr, exitUsage
		}
		_, _ = fmt.Fprintf(out, "Usage: %s\n\nManages the bearer tokens of clients over TCP. Each subcommand takes --help.\n", tokenUsage)
		return code, true
	}
	name := args[1]
	cmd, found := tokenCommands[name]
	if !found {
		complain(stderr, "engram token: unknown subcommand %q: use create, list or revoke\nUsage: %s\n", name, tokenUsage)
		return exitUsage, true
	}
	fs := flag.NewFlagSet("engram token "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg config
	var opts tokenOptions
	fs.StringVar(&cfg.data, "data", "", "the data `DIR`ectory (default $ENGRAM_DATA, else $XDG_DATA_HOME/engram, else ~/.local/share/engram)")
	fs.BoolVar(&opts.json, "json", false, "print the result as JSON")
	if name == "create" {
		fs.StringVar(&opts.agent, "agent", "", "the agent `NAME` the token acts as (required)")
		fs.BoolVar(&opts.readOnly, "read-only", false, "the token may only read")
	}
	positional, code, done := parseSubcommand(fs, args[2:], "engram token "+name, cmd.usage, cmd.help, stdout, stderr)
	if done {
		return code, true
	}
	if len(positional) != cmd.args {
		what := "no argument"
		if cmd.args == 1 {
			what = "the token's ID"
		}
		complain(stderr, "engram token %s: want %s, got %d argument(s)\nUsage: %s\n", name, what, len(positional), cmd.usage)
		return exitUsage, true
	}
	if cmd.args == 1 {
		opts.id = positional[0]
	}
	if name == "create" && opts.agent == "" {
		complain(stderr, "engram token create: --agent NAME is required: the agent the token acts as\nUsage: %s\n", cmd.usage)
		return exitUsage, true
	}
	cfg.data = defaultPath(cfg.data, "ENGRAM_DATA", "XDG_DATA_HOME", ".local/share", "engram")
	if cfg.data == "" {
		complain(stderr, "engram token %s: no data directory: set --data DIR (or HOME)\n", name)
		return exitUsage, true
	}
	cfg.agent = core.DefaultAgent // the operator: only it manages tokens

	c, closeConn, err := openConnForCommand(cfg)
	if err != nil {
		complain(stderr, "engram token %s: %v\n", name, err)
		return storageExit(err), true
	}
	err = cmd.run(context.Background(), c, opts, stdout, stderr)
	if cerr := closeConn(); cerr != nil {
		complain(stderr, "engram token %s: closing the data directory: %v\n", name, cerr)
		if err == nil {
			return exitFailed, true
		}
	}
	if err != nil {
		complain(stderr, "engram token %s: %v\n", name, err)
		switch errs.KindOf(err) {
		case errs.StorageDamaged:
			return exitDamaged, true
		case errs.StorageFull:
			return exitFull, true
		}
		return exitFailed, true
	}
	return exitOK, true
}

// openConnForCommand gives a one-shot command (engram token ...) a
// connection to cfg.data's engine, acting as cfg.agent, and the function
// that closes it: it attaches to the engram that owns the directory, or
// owns it for as long as the command runs.
func openConnForCommand(cfg config) (conn.Conn, func() error, error) {
	c, err := attach.Open(context.Background(), attach.Options{DataDir: cfg.data, Agent: cfg.agent, Open: func() (*core.Engine, error) {
		return core.Open(engineOptions(core.Options{DataDir: cfg.data, Agent: cfg.agent}))
	}})
	if err != nil {
		return nil, nil, err
	}
	return c, c.Close, nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func tokenCreate(ctx context.Context, c conn.Conn, opts tokenOptions, stdout, stderr io.Writer) error {
	res, err := conn.Call(ctx, c, tokens.ActionCreate, tokens.CreateArgs{Agent: opts.agent, ReadOnly: opts.readOnly})
	if err != nil {
		return err
	}
	mode := ""
	if res.ReadOnly {
		mode = ", read-only"
	}
	complain(stderr, "engram token: token %s for agent %s%s: shown once; store it now\n", res.ID, res.Agent, mode)
	if opts.json {
		return printJSON(stdout, res)
	}
	_, err = fmt.Fprintln(stdout, res.Token)
	return err
}

func tokenList(ctx context.Context, c conn.Conn, opts tokenOptions, stdout, _ io.Writer) error {
	res, err := conn.Call(ctx, c, tokens.ActionList, action.None{})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(stdout, res)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "ID\tAGENT\tREAD-ONLY\tCREATED\tREVOKED")
	for _, t := range res.Tokens {
		ro, revoked := "no", "-"
		if t.ReadOnly {
			ro = "yes"
		}
		if t.RevokedAt != nil {
			revoked = t.RevokedAt.UTC().Format(time.RFC3339)
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, ro, t.CreatedAt.UTC().Format(time.RFC3339), revoked)
	}
	return w.Flush()
}

func tokenRevoke(ctx context.Context, c conn.Conn, opts tokenOptions, stdout, _ io.Writer) error {
	res, err := conn.Call(ctx, c, tokens.ActionRevoke, tokens.RevokeArgs{ID: opts.id})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(stdout, res)
	}
	_, err = fmt.Fprintf(stdout, "revoked token %s at %s\n", res.ID, res.RevokedAt.UTC().Format(time.RFC3339))
	return err
}
