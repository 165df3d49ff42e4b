package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/storage"
)

// demoUsage and demoHelp are `engram mcp demo --help`'s.
const (
	demoUsage = "engram mcp demo [--data DIR] [--agent NAME] [--pause D] [--log FILE]"
	demoHelp  = "Plays a short agent session against the data directory, as an MCP client would: it starts\n" +
		"engram mcp (this same program) and, over MCP on its standard input and output, remembers facts,\n" +
		"logs messages on two channels, creates and updates a goal, and runs a small plan, printing one\n" +
		"line per call. Offline: no model, no network. Open the console on the same directory in another\n" +
		"terminal first (engram --data DIR) to watch the agent work: its Agents view lists the demo's\n" +
		"client, and Trace, Chat, Goals, Plans and Memory change as it goes.\n" +
		"Exit status: 0 every call passed, 1 one failed (the line says why), 2 bad flags."
)

// The demo's script: what the agent remembers, says and aims for. The
// tests check that the data directory holds them afterwards.
var (
	demoFacts = []string{
		"The user prefers short answers with a code sample.",
		"The production database is Postgres 15 on db-1; backups run nightly at 02:00.",
	}
	// demoMessages are logged in order: channel, speaker, text. On web
	// the thread is the conversation's; on sms engram infers it.
	demoMessages = [][3]string{
		{"web", "user", "The nightly export failed again with exit code 137."},
		{"web", "assistant", "Exit 137 means it ran out of memory; I will raise its limit to 2 GiB."},
		{"sms", "user", "Plan the upgrade to Postgres 17 for Friday."},
	}
	demoGoal = "Upgrade the production database to Postgres 17"
	// demoPlan is the plan the agent makes for the goal: subtasks that
	// run offline (state.set, task.sleep).
	demoPlanSubtasks = []string{"snapshot", "dry-run", "switch-over"}
)

// demoOptions are `engram mcp demo`'s flags.
type demoOptions struct {
	data, agent, log string
	pause            time.Duration
}

// runMCPDemo runs `engram mcp demo ...`; ok is false for other commands.
func runMCPDemo(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) < 2 || args[0] != "mcp" || args[1] != "demo" {
		return 0, false
	}
	fs := flag.NewFlagSet("engram mcp demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var opts demoOptions
	fs.StringVar(&opts.data, "data", "", "the data `DIR`ectory (default $ENGRAM_DATA, else $XDG_DATA_HOME/engram, else ~/.local/share/engram)")
	fs.StringVar(&opts.agent, "agent", core.DefaultAgent, "the agent `ID` the session acts as (the console's, by default, so that it sees everything)")
	fs.DurationVar(&opts.pause, "pause", time.Second, "how long to wait between calls, so that a watcher can follow (0: none)")
	fs.StringVar(&opts.log, "log", "", "the log `FILE` of the engram mcp it starts (default as engram's)")
	positional, code, done := parseSubcommand(fs, args[2:], "engram mcp demo", demoUsage, demoHelp, stdout, stderr)
	if done {
		return code, true
	}
	if len(positional) > 0 {
		complain(stderr, "engram mcp demo: unexpected argument %q\nUsage: %s\n", positional[0], demoUsage)
		return exitUsage, true
	}
	if opts.agent == "" || opts.pause < 0 {
		complain(stderr, "engram mcp demo: --agent must not be empty and --pause not negative\nUsage: %s\n", demoUsage)
		return exitUsage, true
	}
	opts.data = defaultPath(opts.data, "ENGRAM_DATA", "XDG_DATA_HOME", ".local/share", "engram")
	if opts.data == "" {
		complain(stderr, "engram mcp demo: no data directory: set --data DIR (or HOME)\n")
		return exitUsage, true
	}
	exe, err := os.Executable()
	if err != nil {
		complain(stderr, "engram mcp demo: finding this program to start engram mcp: %v\n", err)
		return exitFailed, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := playDemo(ctx, exe, opts, stdout, stderr); err != nil {
		complain(stderr, "engram mcp demo: %v\n", err)
		return exitFailed, true
	}
	return exitOK, true
}

// demo is one run of the scripted session.
type demo struct {
	cs *mcp.ClientSession
	// tools are the tools the server offers.
	tools map[string]bool
	out   io.Writer
	pause time.Duration
	step  int
}

// playDemo starts engram mcp on the directory and plays the session.
func playDemo(ctx context.Context, exe string, opts demoOptions, stdout, stderr io.Writer) error {
	args := []string{"mcp", "--data", opts.data, "--agent", opts.agent}
	if opts.log != "" {
		args = append(args, "--log", opts.log)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	say := func(format string, a ...any) { _, _ = fmt.Fprintf(stdout, format, a...) } // a failed write to stdout has nowhere to go
	say("engram mcp demo: an agent (%q) works on %s through engram mcp.\n", opts.agent, opts.data)
	say("Watch it: in another terminal run  engram --data %s  (Agents lists this client; Trace marks its calls).\n\n", opts.data)
	client := mcp.NewClient(&mcp.Implementation{Name: "engram-demo", Title: "engram mcp demo", Version: core.Version}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("starting engram mcp: %w", err)
	}
	d := &demo{cs: cs, out: stdout, pause: opts.pause}
	err = d.play(ctx)
	// The owner keeps the list of agent clients in its memory: when the
	// demo's own engram mcp owns the directory, the list ends with it.
	ownedByDemo := lockHolder(opts.data) == cmd.Process.Pid
	// Closing stdin ends engram mcp, which tells the owner the client left.
	if cerr := cs.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("engram mcp did not end cleanly: %w", cerr)
	}
	if err != nil && ctx.Err() != nil {
		// ctrl+c or SIGTERM: what was done so far stays.
		return fmt.Errorf("interrupted after %d step(s); what the agent wrote so far stays in %s", d.step, opts.data)
	}
	if err != nil {
		return err
	}
	say("\ndone: %d steps, every one passed. What the agent wrote stays in %s:\n", d.step, opts.data)
	if ownedByDemo {
		say("the console shows it (Memory, Chat, Goals, Plans, Trace). The demo's own engram mcp owned the\n")
		say("directory, so its list of agent clients ended with it: to see the demo in the Agents tab, open\n")
		say("the console first (engram --data %s), then run the demo again.\n", opts.data)
		return nil
	}
	say("the console shows it (Memory, Chat, Goals, Plans), and its Agents tab lists the demo, now gone.\n")
	return nil
}

// lockHolder is the pid the data directory's lock file names: the engram
// that owns it (0 when none does or it cannot be read).
func lockHolder(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, storage.LockFileName))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b))) // not a number: 0, no owner known
	return pid
}

// play runs the script, one call per line.
func (d *demo) play(ctx context.Context) error {
	init := d.cs.InitializeResult()
	tools, err := d.cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	d.tools = map[string]bool{}
	for _, t := range tools.Tools {
		d.tools[t.Name] = true
	}
	d.line("connect", "as engram-demo", fmt.Sprintf("%s %s, %d tools", init.ServerInfo.Name, init.ServerInfo.Version, len(tools.Tools)))

	for _, fact := range demoFacts {
		out, err := d.call(ctx, "remember", quote(fact), map[string]any{"text": fact, "importance": 0.8})
		if err != nil {
			return err
		}
		d.done("stored " + field(out, "ref"))
	}
	threads := map[string]string{} // the thread of each channel, for the answers
	for _, m := range demoMessages {
		args := map[string]any{"channel": m[0], "speaker": m[1], "text": m[2]}
		if m[1] == "assistant" {
			args["thread_id"] = threads[m[0]]
		}
		out, err := d.call(ctx, "log_message", fmt.Sprintf("%s %s: %s", m[0], m[1], quote(m[2])), args)
		if err != nil {
			return err
		}
		threads[m[0]] = field(out, "thread.thread_id")
		thread := "thread " + field(out, "thread.thread_id")
		if field(out, "thread.new_thread") == "true" {
			thread = "new " + thread
		}
		d.done(fmt.Sprintf("message #%s, %s", field(out, "utterance.index"), thread))
	}
	out, err := d.call(ctx, "recall", `"database backups"`, map[string]any{"query": "database backups", "limit": 3})
	if err != nil {
		return err
	}
	d.done(recallBrief(out))

	out, err = d.call(ctx, "create_goal", quote(demoGoal), map[string]any{"title": demoGoal, "priority": "high", "tags": []string{"database"}})
	if err != nil {
		return err
	}
	goalID, version := field(out, "goal.id"), field(out, "goal.version")
	d.done(fmt.Sprintf("goal %s, version %s", goalID, version))

	out, err = d.call(ctx, "update_goal", fmt.Sprintf("in_progress, 20%%, expected_version %s", version),
		map[string]any{"id": goalID, "expected_version": atoi(version), "status": "in_progress", "progress": 20})
	if err != nil {
		return err
	}
	d.done(fmt.Sprintf("version %s, status %s", field(out, "goal.version"), field(out, "goal.status")))

	if err := d.planSteps(ctx, goalID); err != nil {
		return err
	}

	out, err = d.call(ctx, "update_goal", "progress 60%", map[string]any{"id": goalID, "progress": 60})
	if err != nil {
		return err
	}
	d.done(fmt.Sprintf("version %s, progress %s%%", field(out, "goal.version"), field(out, "goal.progress")))

	if d.tools["working_memory"] {
		const input = "What is left for the Postgres upgrade?"
		out, err = d.call(ctx, "working_memory", "sms "+quote(input), map[string]any{"input": input, "channel": "sms", "thread_id": threads["sms"]})
		if err != nil {
			return err
		}
		messages, _ := out["messages"].([]any)
		providers, _ := out["providers"].([]any)
		d.done(fmt.Sprintf("a prompt of %d messages, its system part %d characters from %d providers",
			len(messages), len([]rune(field(out, "system"))), len(providers)))
	}

	out, err = d.call(ctx, "active_goals", "(all)", map[string]any{})
	if err != nil {
		return err
	}
	d.done(field(out, "count") + " open")
	return nil
}

// planSteps makes a plan for the goal, runs it, and follows it until it
// ends. An engram built without the planner (-tags noplanning) has no
// plan tools: the demo says so and goes on.
func (d *demo) planSteps(ctx context.Context, goalID string) error {
	if !d.tools["create_plan"] || !d.tools["run_plan"] || !d.tools["plan_status"] {
		d.line("create_plan", "", "skipped: this engram is built without the planner")
		return nil
	}
	// The dry run takes as long as a pause, so that a watcher sees the
	// plan running.
	sleep := max(1, int(d.pause.Milliseconds()))
	subtasks := []map[string]any{
		{"id": demoPlanSubtasks[0], "description": "Snapshot the database",
			"action": map[string]any{"name": "state.set", "args": map[string]any{"key": "snapshot", "value": "snap-before-pg17"}}},
		{"id": demoPlanSubtasks[1], "description": "Dry-run the upgrade on a copy", "dependencies": []string{demoPlanSubtasks[0]},
			"action": map[string]any{"name": "task.sleep", "args": map[string]any{"ms": sleep}}},
		{"id": demoPlanSubtasks[2], "description": "Switch production over", "dependencies": []string{demoPlanSubtasks[1]},
			"action": map[string]any{"name": "state.set", "args": map[string]any{"key": "switched", "value": true}}},
	}
	out, err := d.call(ctx, "create_plan", "for the goal: "+strings.Join(demoPlanSubtasks, " → "),
		map[string]any{"goal_id": goalID, "subtasks": subtasks})
	if err != nil {
		return err
	}
	planID := field(out, "plan_id")
	d.done(fmt.Sprintf("plan %s, %s subtasks", planID, field(out, "progress.total")))

	out, err = d.call(ctx, "run_plan", "the plan", map[string]any{"plan_id": planID})
	if err != nil {
		return err
	}
	d.done("started: " + field(out, "status"))
	for deadline := time.Now().Add(30 * time.Second); ; {
		if d.pause == 0 {
			// Without a pause between calls, still poll at a pace.
			select {
			case <-time.After(25 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		out, err = d.call(ctx, "plan_status", "the plan", map[string]any{"plan_id": planID})
		if err != nil {
			return err
		}
		status := field(out, "status")
		d.done(fmt.Sprintf("%s, %s of %s subtasks done", status, field(out, "progress.completed"), field(out, "progress.total")))
		switch {
		case status == "completed":
			return nil
		case status != "running" && status != "pending":
			return fmt.Errorf("the plan ended %s", status)
		case time.Now().After(deadline):
			return errors.New("the plan was still running after 30s")
		}
	}
}

// call pauses, then calls a tool and prints its line up to the arrow;
// done (or the error) finishes the line.
func (d *demo) call(ctx context.Context, tool, what string, args map[string]any) (map[string]any, error) {
	if d.step > 0 && d.pause > 0 {
		select {
		case <-time.After(d.pause):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.step++
	_, _ = fmt.Fprintf(d.out, "%2d. %-14s %s → ", d.step, tool, what)
	res, err := d.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil && ctx.Err() != nil {
		_, _ = fmt.Fprintln(d.out, "interrupted")
		return nil, err
	}
	if err != nil {
		_, _ = fmt.Fprintf(d.out, "failed: %v\n", err)
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		msg := ""
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg += t.Text
			}
		}
		_, _ = fmt.Fprintf(d.out, "failed: %s\n", msg)
		return nil, fmt.Errorf("%s failed: %s", tool, msg)
	}
	var out map[string]any
	raw, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		_, _ = fmt.Fprintln(d.out, "?")
		return nil, fmt.Errorf("%s: its result is not an object: %s", tool, raw)
	}
	return out, nil
}

// done ends the line call began.
func (d *demo) done(brief string) { _, _ = fmt.Fprintln(d.out, brief) }

// line prints a step that is no tool call.
func (d *demo) line(what, args, brief string) {
	d.step++
	_, _ = fmt.Fprintf(d.out, "%2d. %-14s %s → %s\n", d.step, what, args, brief)
}

// field is the value at a dotted path of a tool's output, as text ("" when
// absent); the empty path is the whole output as JSON.
func field(out map[string]any, path string) string {
	var v any = out
	if path != "" {
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = m[k]
		}
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v) // a decoded JSON value always encodes
	return string(b)
}

// atoi is a decimal number's value (0 when it is none).
func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n) // a version the server sent is a number
	return n
}

// quote is text in quotes, cut to 48 characters.
func quote(s string) string {
	if r := []rune(s); len(r) > 48 {
		s = string(r[:47]) + "…"
	}
	return `"` + s + `"`
}

// recallBrief says how many items recall found and the best one.
func recallBrief(out map[string]any) string {
	items, _ := out["items"].([]any)
	if len(items) == 0 {
		return "nothing"
	}
	best, _ := items[0].(map[string]any)
	n := fmt.Sprintf("%d items", len(items))
	if len(items) == 1 {
		n = "1 item"
	}
	return fmt.Sprintf("%s; best %s", n, quote(field(best, "text")))
}
