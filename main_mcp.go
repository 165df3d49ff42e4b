package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/mcpserver"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/wire"
)

// mcpUsage is `engram mcp --help`'s text before the flags.
const mcpUsage = `engram mcp: be an AI agent's memory, over the Model Context Protocol (MCP).

Usage:
  engram mcp [--data DIR] [--agent NAME] [--read-only] [flags]
  engram mcp demo [--data DIR] [--agent NAME] [--pause D]

An MCP client (Claude Desktop, Cursor, an agent framework) starts engram mcp and
speaks MCP on its standard input and output; nothing else is written there (the
log file gets the rest). Like the console, it attaches to the engram that owns the
data directory, or becomes that owner: open the console on the same directory
(engram --data DIR) to watch the agent's calls live (the Agents view lists it).
Every tool call acts as --agent: an MCP client cannot name another agent, and
engram's access rules apply as in a batch script. With --read-only the client
gets only the tools that change nothing. It exits 0 when the client closes its
end.

engram mcp demo plays a short scripted agent session (an MCP client, offline)
against the data directory, one line per call: run it while a console watches.

Over HTTP instead: engram serve --listen HOST:PORT serves MCP at /mcp, and each
client sends "Authorization: Bearer TOKEN" (engram token create --agent NAME).

Flags:
`

// mcpTerminalHint is what engram mcp says when its input is a terminal.
const mcpTerminalHint = `engram mcp speaks MCP (JSON-RPC, one message a line) on standard input and
output: an MCP client starts it (see README, "Use engram as an agent's memory").
To watch an agent at work, run engram mcp demo beside a console. Waiting for MCP
messages; Ctrl+D ends.
`

// runMCP serves MCP on standard input and output until the client closes
// its end (or SIGINT, SIGTERM), then marks the client disconnected in the
// owner's registry.
func runMCP(ctx context.Context, cfg config, c dataConn, stdout, stderr io.Writer, logger *slog.Logger) int {
	pid := 0
	if !c.Where().Owner {
		// The owner is another process: it checks that this one still
		// runs, and lists the client as gone when it does not.
		pid = os.Getpid()
	}
	if term.IsTerminal(os.Stdin.Fd()) {
		// A person started it by hand, not an MCP client: say what it
		// waits for, on stderr (stdout is the protocol's).
		complain(stderr, "%s", mcpTerminalHint)
	}
	srv := mcpserver.New(c, mcpserver.Options{Agent: cfg.agent, ReadOnly: cfg.readOnly, Transport: "stdio", PID: pid, Version: core.Version})
	watch, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		srv.Watch(watch)
	}()
	// mcp.StdioTransport's pipes, with standard output as run was given it.
	err := srv.MCP.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{stdout}})
	stopWatch()
	<-watched
	// Plans run_plan started and left running stop here (cancelled, as
	// when engram is stopped; plan.resume goes on with them).
	srv.Close()
	// The client has gone (or a signal came): ctx may be done, but the
	// owner should still hear of it.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if derr := srv.DisconnectAll(dctx); derr != nil {
		logger.Warn("marking the MCP client disconnected failed", "err", derr)
	}
	switch {
	case err == nil, errors.Is(err, io.EOF), ctx.Err() != nil:
		logger.Info("the MCP client disconnected", "err", err)
		return exitOK
	default:
		complain(stderr, "engram mcp: %v\n", err)
		return exitFailed
	}
}

// nopWriteCloser is standard output for the MCP transport, which closes
// its writer when the session ends; the process's stdout stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpOverHTTP makes the MCP service that engram serve --listen offers at
// /mcp: a server per token's agent over the owner's engine.
func mcpOverHTTP(logger *slog.Logger) func(*core.Engine) server.MCP {
	return func(engine *core.Engine) server.MCP {
		return mcpHTTP{mcpserver.NewHTTP(engine, mcpserver.HTTPOptions{Version: core.Version, Logger: logger, MaxBody: wire.MaxBody})}
	}
}

// mcpHTTP adapts mcpserver.HTTP to the server's MCP.
type mcpHTTP struct{ h *mcpserver.HTTP }

func (m mcpHTTP) Handler(p server.Principal) http.Handler { return m.h.Handler(p.Agent, p.ReadOnly) }
func (m mcpHTTP) Close()                                  { m.h.Close() }
