// Command engram is a terminal console for seeing and steering an AI
// assistant's memory. Without --batch it opens the interactive console; with
// --batch it runs a script of actions headless (see docs/batch.md).
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/batch"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/evalret"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/tour"
	"github.com/engram-console/engram/tui"
)

// Exit statuses (docs/batch.md).
const (
	exitOK     = 0
	exitFailed = 1 // a step did not pass, or the console failed
	exitUsage  = 2 // bad flags, an unreadable script, an unusable data directory
	// exitInternal is a bug: engram panicked (the log has the stack). Not 2,
	// which says the person's input was wrong.
	exitInternal = 70
)

type config struct {
	batch    string
	failFast bool
	events   bool
	data     string
	inMemory bool
	sync     bool
	agent    string
	llm      llm.Config
	logFile  string
	debug    bool
	version  bool
	// historyBackend is where new conversations live (--history-backend).
	historyBackend string
	// listen is engram serve's TCP address (--listen).
	listen string
	// readOnly is engram mcp's --read-only: only the read tools.
	readOnly bool
	// command is the subcommand run: "", "serve" or "mcp".
	command string
}

func main() {
	crashBySignal()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	if code, ok := runMaintenance(args, stdout, stderr); ok {
		return code
	}
	if code, ok := runToken(args, stdout, stderr); ok {
		return code
	}
	if code, ok := runMCPDemo(args, stdout, stderr); ok {
		return code
	}
	if code, ok := runScale(args, stdout, stderr); ok {
		return code
	}
	if code, ok := runEval(args, stdout, stderr); ok {
		return code
	}
	command := ""
	if len(args) > 0 && (args[0] == "serve" || args[0] == "mcp") {
		command, args = args[0], args[1:]
	}
	serve := command == "serve"
	cfg, err := parseFlags(args, stdout, command)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		help := "engram -h"
		if command != "" {
			help = "engram " + command + " -h"
		}
		complain(stderr, "engram: %v\nRun %s for the flags.\n", err, help)
		return exitUsage
	}
	if cfg.version {
		_, _ = fmt.Fprintln(stdout, "engram", core.Version) // a failed write to stdout has nowhere to be reported
		return exitOK
	}

	// Open the script before the store: an unreadable script changes nothing.
	var script io.ReadCloser
	if cfg.batch != "" {
		if script, err = batch.Open(cfg.batch); err != nil {
			complain(stderr, "engram: %v\n", err)
			return exitUsage
		}
		defer func() { _ = script.Close() }() // read-only: nothing to lose
	}

	logger, closeLog, err := openLog(cfg)
	if err != nil {
		complain(stderr, "engram: %v\n", err)
		return exitUsage
	}
	defer closeLog()
	// A panic on this goroutine (a batch step's action runs here) is a bug:
	// say so and exit with exitInternal, never with the Go runtime's 2, once
	// the deferred Close has flushed the store.
	defer func() {
		if p := recover(); p != nil {
			logger.Error("internal error", "panic", p, "stack", string(debug.Stack()))
			complain(stderr, "engram: internal error (a bug): %v; the log has the details\n", p)
			code = exitInternal
		}
	}()

	provider, err := llm.New(cfg.llm)
	if err != nil {
		complain(stderr, "engram: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := openConn(ctx, cfg, serve, provider, logger)
	if err != nil {
		complain(stderr, "engram: %v\n", err)
		return storageExit(err)
	}
	defer func() {
		// Closing flushes the store: a failure there may have lost writes.
		if err := c.Close(); err != nil {
			complain(stderr, "engram: closing the data directory: %v\n", err)
			if code == exitOK {
				code = exitFailed
			}
		}
	}()
	where := whereLabel(c)
	logger.Info("engram started", "version", core.Version, "data", cfg.data, "where", where, "batch", cfg.batch, "command", command)
	if engine := c.Engine(); engine != nil && cfg.batch != "" {
		if full := engine.Env().Store.FullAtOpen(); full != nil {
			complain(stderr, "engram: %v; opened it read-only: reads work, writes are refused with StorageFull until you free space and run engram again\n", full)
		}
	}

	switch {
	case serve:
		return runServe(ctx, cfg, c, stderr)
	case command == "mcp":
		return runMCP(ctx, cfg, c, stdout, stderr, logger)
	case cfg.batch != "":
		runner := batch.NewRunner(c, stdout, batch.Options{FailFast: cfg.failFast, Events: cfg.events})
		summary, err := runner.Run(ctx, script, batch.IsYAML(cfg.batch))
		switch {
		case errors.Is(err, batch.ErrUnreadable):
			complain(stderr, "engram: %v\n", err)
			return exitUsage
		case err != nil:
			complain(stderr, "engram: stopped after %d step(s): %v\n", summary.Steps, context.Cause(ctx))
			return exitFailed
		case !summary.OK():
			complain(stderr, "engram: %d of %d step(s) did not pass (first on line %d)\n", summary.Failed, summary.Steps, summary.FirstFailure)
			if summary.Full > 0 {
				return exitFull
			}
			return exitFailed
		}
		return exitOK
	}

	stop() // the console handles ctrl+c and SIGTERM itself
	program := tea.NewProgram(tui.New(c, tui.Options{PaletteHistory: paletteHistory(cfg), OfferTour: true}), tea.WithAltScreen())
	if _, err := program.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		complain(stderr, "engram: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// dataConn is the connection every face of engram uses: the engine in
// this process, or the owner of the data directory in another.
type dataConn interface {
	conn.Conn
	conn.Locator
	// Engine is the engine when it runs in this process, else nil.
	Engine() *core.Engine
	// TCPAddr is the TCP address served (engram serve --listen), or "".
	TCPAddr() string
	Close() error
}

// openConn opens the data: in memory, this process alone; else it attaches
// to the engram that owns the data directory, or becomes that owner and
// serves the directory to the others (engram serve must be the owner).
func openConn(ctx context.Context, cfg config, serve bool, provider llm.Provider, logger *slog.Logger) (dataConn, error) {
	engineAgent := cfg.agent
	if cfg.command == "mcp" {
		// engram mcp's --agent is the MCP client's, named on every call it
		// makes; the engine it may own stays the operator's, so that a
		// console on the default agent lists every agent's clients.
		engineAgent = core.DefaultAgent
	}
	open := func() (*core.Engine, error) {
		return core.Open(engineOptions(core.Options{
			DataDir: cfg.data, InMemory: cfg.inMemory, SyncWrites: cfg.sync, HistoryBackend: cfg.historyBackend,
			Agent: engineAgent, LLM: provider, Logger: logger,
		}))
	}
	if cfg.inMemory {
		engine, err := open()
		if err != nil {
			return nil, err
		}
		return alone{Conn: engine, engine: engine}, nil
	}
	mode := attach.Either
	if serve {
		mode = attach.OwnerOnly
	}
	return attach.Open(ctx, attach.Options{DataDir: cfg.data, Agent: cfg.agent, Mode: mode, Open: open,
		Tokens: tokenAuthenticator, MCP: mcpOverHTTP(logger), Listen: cfg.listen, Logger: logger})
}

// alone is an engine in memory: nothing to attach to, nothing served.
type alone struct {
	conn.Conn
	engine *core.Engine
}

func (a alone) Engine() *core.Engine { return a.engine }
func (a alone) Close() error         { return a.engine.Close() }
func (a alone) Where() conn.Where    { return a.engine.Where() }
func (a alone) TCPAddr() string      { return "" }

// whereLabel says, for the log, whether this process owns the data.
func whereLabel(c conn.Locator) string {
	if w := c.Where(); !w.Owner {
		return fmt.Sprintf("attached to pid %d", w.PID)
	}
	return "owner"
}

// runServe serves the data directory until SIGINT or SIGTERM.
func runServe(ctx context.Context, cfg config, c dataConn, stderr io.Writer) int {
	tcp := ""
	if addr := c.TCPAddr(); addr != "" {
		tcp = " and on tcp " + addr + " (bearer tokens: engram token create)"
	}
	complain(stderr, "engram: pid %d serves %s on %s%s; Ctrl+C stops it\n", os.Getpid(), cfg.data, attach.SocketPath(cfg.data), tcp)
	<-ctx.Done()
	return exitOK
}

// engineOptions adds the subsystems engram is built with to opts: the
// engine's own, the planner (left out by -tags noplanning) and the tour.
func engineOptions(opts core.Options) core.Options {
	opts.Subsystems = append(core.DefaultSubsystems(opts), planner.Subsystem(planner.Options{}), tour.Subsystem(), evalret.Subsystem())
	return opts
}

func parseFlags(args []string, usageOut io.Writer, command string) (config, error) {
	cfg := config{command: command}
	serve, mcpCmd := command == "serve", command == "mcp"
	fs := flag.NewFlagSet("engram", flag.ContinueOnError)
	// The flag package reports a bad flag and then prints the usage; we say
	// what was wrong once, ourselves, and print the usage only for -h.
	fs.SetOutput(io.Discard)
	if !mcpCmd {
		fs.StringVar(&cfg.batch, "batch", "", "run the actions of a script (`FILE`: .jsonl, .yaml, or - for standard input) instead of the console")
		fs.BoolVar(&cfg.failFast, "fail-fast", false, "with --batch: stop at the first step that does not pass")
		fs.BoolVar(&cfg.events, "events", false, "with --batch: also print the engine's events as {\"event\": ...} lines")
	}
	fs.StringVar(&cfg.data, "data", "", "the data `DIR`ectory (default $ENGRAM_DATA, else $XDG_DATA_HOME/engram, else ~/.local/share/engram)")
	inMemoryHelp := "keep everything in memory: no data is written to disk (the log file still is)"
	if mcpCmd {
		inMemoryHelp = "keep everything in memory, private to this process: the agent's memory is gone when its client disconnects, and no console can watch it"
	}
	fs.BoolVar(&cfg.inMemory, "in-memory", false, inMemoryHelp)
	fs.StringVar(&cfg.historyBackend, "history-backend", "", "where new conversations live: durable or in-memory (default durable, or in-memory with --in-memory)")
	fs.BoolVar(&cfg.sync, "sync", false, "fsync every write, so acknowledged writes survive power loss too (slower)")
	agentHelp := "the agent `ID` acting (a batch step's \"as\" overrides it)"
	if mcpCmd {
		agentHelp = "the agent `ID` every tool call acts as (an MCP client cannot name another)"
	}
	fs.StringVar(&cfg.agent, "agent", core.DefaultAgent, agentHelp)
	if mcpCmd {
		fs.BoolVar(&cfg.readOnly, "read-only", false, "expose only the tools that change nothing stored")
	}
	fs.StringVar(&cfg.llm.Provider, "llm", "offline", "language model provider: offline, ollama, openai or replay")
	fs.StringVar(&cfg.llm.Model, "model", "", "the chat model `NAME` (default: llama3.2 for ollama, gpt-4o-mini for openai)")
	fs.StringVar(&cfg.llm.EmbedModel, "embed-model", "", "the embedding model `NAME` (default: --model for ollama, text-embedding-3-small for openai)")
	fs.StringVar(&cfg.llm.URL, "llm-url", "", "the model server's base `URL` (default: $OLLAMA_HOST or http://127.0.0.1:11434 for ollama; $OPENAI_BASE_URL or https://api.openai.com/v1 for openai)")
	fs.DurationVar(&cfg.llm.Timeout, "llm-timeout", 60*time.Second, "how long one attempt at a model call may take")
	fs.IntVar(&cfg.llm.Retries, "llm-retries", 2, "how often to retry a model call that failed transiently (timeout, refused connection, 429, 5xx)")
	fs.StringVar(&cfg.llm.Cassette, "cassette", "", "with --llm replay: the recorded exchanges to answer from (`FILE`)")
	fs.StringVar(&cfg.llm.Record, "record", "", "with a live provider: record every exchange to this cassette `FILE`")
	fs.StringVar(&cfg.logFile, "log", "", "the log `FILE` (default $ENGRAM_LOG, else $XDG_STATE_HOME/engram/engram.log, else ~/.local/state/engram/engram.log)")
	fs.BoolVar(&cfg.debug, "debug", false, "log every action (debug level)")
	if !mcpCmd {
		fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
		fs.StringVar(&cfg.listen, "listen", "", "with engram serve: also serve on TCP at `HOST:PORT` (every request needs a bearer token; MCP clients use /mcp there)")
	}
	fs.Usage = func() {
		if mcpCmd {
			_, _ = fmt.Fprint(fs.Output(), mcpUsage)
			fs.PrintDefaults()
			return
		}
		_, _ = fmt.Fprintf(fs.Output(), "engram: a console for an AI assistant's memory.\n\n"+
			"Usage:\n  engram [flags]                    open the console\n"+
			"  engram --batch FILE [flags]       run a script of actions, one JSON result per line\n"+
			"  engram serve [--listen HOST:PORT] own the data directory headless and serve it to other engrams\n"+
			"                                    (and to MCP clients over HTTP at /mcp, with a bearer token)\n"+
			"  engram mcp [--agent NAME]         be an AI agent's memory: serve MCP on standard input and output\n"+
			"  engram mcp demo                   play a short scripted agent session to watch in the console\n"+
			"  engram token create|list|revoke   manage the bearer tokens of engram serve --listen (each takes --help)\n"+
			"  engram check|backup|restore ...   verify, back up or restore a data directory (each takes --help)\n"+
			"  engram eval retrieval FILE        measure retrieval on an evaluation set, in a scratch engine (docs/eval.md)\n\n"+
			"Every engram on one data directory shares it: the first owns it, the others attach to it.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usageOut)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		if mcpCmd {
			return cfg, fmt.Errorf("unexpected argument %q (engram mcp takes flags only; engram mcp demo plays the demo)", fs.Arg(0))
		}
		return cfg, fmt.Errorf("unexpected argument %q (a script goes after --batch)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.listen != "" && !serve {
		return cfg, errors.New("--listen only applies to engram serve")
	}
	if serve && (cfg.batch != "" || cfg.inMemory) {
		return cfg, errors.New("engram serve serves a data directory: drop --batch and --in-memory")
	}
	if cfg.batch == "" && (cfg.failFast || cfg.events) {
		return cfg, errors.New("--fail-fast and --events only apply with --batch")
	}
	if set["data"] && cfg.data == "" {
		return cfg, errors.New("--data needs a directory; leave the flag out for the default")
	}
	if cfg.inMemory && set["data"] {
		return cfg, errors.New("--in-memory and --data exclude each other: choose one")
	}
	switch cfg.historyBackend {
	case "", "durable", "in-memory":
	default:
		return cfg, fmt.Errorf("--history-backend %q: use durable or in-memory", cfg.historyBackend)
	}
	if cfg.historyBackend == "durable" && cfg.inMemory {
		return cfg, errors.New("--history-backend durable needs a data directory: drop --in-memory")
	}
	if cfg.agent == "" {
		return cfg, errors.New("--agent must not be empty")
	}
	// The engine refuses such a name on every action (as a step's "as"):
	// say so once, before anything runs or an MCP client connects.
	if err := kit.CheckName("--agent", cfg.agent, ""); err != nil {
		return cfg, errors.New(errs.As(err).Message)
	}
	if cfg.llm.Timeout <= 0 {
		return cfg, errors.New("--llm-timeout must be positive, e.g. 30s")
	}
	if err := cfg.llm.Validate(); err != nil {
		return cfg, err
	}
	if !cfg.inMemory {
		cfg.data = defaultPath(cfg.data, "ENGRAM_DATA", "XDG_DATA_HOME", ".local/share", "engram")
		if cfg.data == "" {
			return cfg, errors.New("no data directory: set --data DIR (or HOME)")
		}
	}
	return cfg, nil
}

// defaultPath picks a path: the flag, else the env override, else the XDG
// variable joined with name, else ~/home joined with name.
func defaultPath(flagValue, override, xdg, home, name string) string {
	switch {
	case flagValue != "":
		return flagValue
	case os.Getenv(override) != "":
		return os.Getenv(override)
	case os.Getenv(xdg) != "":
		return filepath.Join(os.Getenv(xdg), name)
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, home, name)
}

// paletteHistory is the file of the console palette's history: the data
// directory's and the agent's own, since a command holds what was typed
// (a memory's text), which another agent, another store or an
// --in-memory run must not see. None for --in-memory: nothing of it is
// kept on disk.
func paletteHistory(cfg config) string {
	if cfg.inMemory || cfg.data == "" {
		return ""
	}
	name := cfg.agent
	if !safeFileName.MatchString(name) {
		name = hex.EncodeToString([]byte(name))
	}
	return filepath.Join(cfg.data, "palette_history."+name)
}

// safeFileName is an agent id usable as it is in a file name.
var safeFileName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// logPath is the log file's: --log, $ENGRAM_LOG, or engram/engram.log in
// the state directory; empty without a home.
func logPath(cfg config) string {
	return defaultPath(cfg.logFile, "ENGRAM_LOG", "XDG_STATE_HOME", ".local/state", filepath.Join("engram", "engram.log"))
}

// openLog opens the log file (creating its directory); Badger's messages and
// the engine's go there, never to the terminal.
func openLog(cfg config) (*slog.Logger, func(), error) {
	path := logPath(cfg)
	if path == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("log file %s: %w (choose another with --log)", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("log file %s: %w (choose another with --log)", path, err)
	}
	if err := crashToLog(f); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("log file %s: %w", path, err)
	}
	level := slog.LevelInfo
	if cfg.debug {
		level = slog.LevelDebug
	}
	// The only place to report an error closing the log would be the log.
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level})), func() { _ = f.Close() }, nil
}

// complain tells the person at the terminal what went wrong. If stderr itself
// cannot be written there is nowhere left to say so; the exit status still does.
func complain(stderr io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(stderr, format, args...)
}
