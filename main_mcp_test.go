package main

// Tests of engram as an agent's memory over MCP (issue 16) with real
// processes: engram mcp on stdio, /mcp on engram serve --listen, and
// engram mcp demo.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/remote"
)

// batchResult runs one batch step against dir (attaching to its owner)
// and decodes its result into out, failing the test if it did not pass.
func batchResult(t *testing.T, env []string, dir, logFile, step string, out any) {
	t.Helper()
	o := runIn(t, env, step, "--batch", "-", "--data", dir, "--log", logFile)
	res := parseResults(t, o.stdout)
	if o.code != 0 || len(res) != 1 || !res[0].OK {
		t.Fatalf("%s: exit %d\n%s%s", step, o.code, o.stdout, o.stderr)
	}
	if err := json.Unmarshal(res[0].Result, out); err != nil {
		t.Fatalf("%s: %v: %s", step, err, res[0].Result)
	}
}

// listClients is the owner's clients.list of every agent, read by another
// engram process.
func listClients(t *testing.T, env []string, dir, logFile string) []clients.Client {
	t.Helper()
	var list clients.ListResult
	batchResult(t, env, dir, logFile, `{"action": "clients.list", "args": {"all": true}}`, &list)
	return list.Clients
}

// mcpCall calls a tool and decodes its structured content into out (when
// not nil), failing the test on a protocol or tool error.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %v %v", name, res.StructuredContent, res.Content[0].(*mcp.TextContent).Text)
	}
	if out == nil {
		return
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, raw)
	}
}

// TestMCPStdioClientIsSeenByTheOwnerAndMarkedGone: a real engram mcp
// process, driven over stdio by the go-sdk client, attaches to the owner
// (engram serve); another engram process reads what the agent wrote, and
// the owner's clients.list shows the client by name and version while it
// is connected and marks it disconnected once it closed.
func TestMCPStdioClientIsSeenByTheOwnerAndMarkedGone(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	startServe(t, env, dir, "--log", logFile)

	cmd := engramCmd(t, env, "mcp", "--data", dir, "--agent", "ann", "--log", logFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "2.5"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to engram mcp: %v\n%s", err, stderr.String())
	}
	const fact = "Ann's deploys go out on Tuesdays."
	var remembered struct {
		Ref string `json:"ref"`
	}
	mcpCall(t, cs, "remember", map[string]any{"text": fact}, &remembered)
	var mem struct {
		Items []struct{ ID, Text string } `json:"items"`
	}
	batchResult(t, env, dir, logFile, `{"action": "memory.remember", "as": "ann", "args": {"store": "working-ann", "prompt": "deploys"}}`, &mem)
	if len(mem.Items) != 1 || mem.Items[0].Text != fact || !strings.HasSuffix(remembered.Ref, "/"+mem.Items[0].ID) {
		t.Errorf("another engram reads %+v from ann's working store; want what the agent remembered (%s)", mem.Items, remembered.Ref)
	}

	list := listClients(t, env, dir, logFile)
	if len(list) != 1 {
		t.Fatalf("clients.list on the owner: %+v, want the one MCP client", list)
	}
	c := list[0]
	if !c.Connected || c.Agent != "ann" || c.Name != "test-agent" || c.Version != "2.5" || c.Transport != "stdio" ||
		c.Via != "mcp" || c.PID != cmd.Process.Pid || c.Calls != 1 || c.LastCall != "remember" {
		t.Errorf("clients.list shows %+v; want ann's test-agent 2.5 over stdio from pid %d, connected, one call", c, cmd.Process.Pid)
	}

	if err := cs.Close(); err != nil {
		t.Errorf("closing the client: %v\n%s", err, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("engram mcp exited %d after its client closed, want 0\n%s", code, stderr.String())
	}
	list = listClients(t, env, dir, logFile)
	if len(list) != 1 || list[0].Connected || list[0].GoneAt == nil || list[0].Session != c.Session {
		t.Errorf("after the client closed, clients.list shows %+v; want %s disconnected", list, c.Session)
	}
	if stderr.Len() > 0 {
		t.Errorf("engram mcp wrote to standard error: %s", stderr.String())
	}
}

// TestMCPOwningTheDirectoryListsItsClientWithoutAPID: engram mcp on a
// directory nobody owns becomes its owner, serves it to other engrams,
// and lists its own client with pid 0 (the owner itself serves it). Its
// engine's own agent stays the operator's (local), not --agent's, so a
// console on the default agent lists every agent's clients.
func TestMCPOwningTheDirectoryListsItsClientWithoutAPID(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	cmd := engramCmd(t, env, "mcp", "--data", dir, "--agent", "ann", "--log", logFile)
	client := mcp.NewClient(&mcp.Implementation{Name: "solo", Version: "0.1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	mcpCall(t, cs, "memory_stats", map[string]any{}, nil)
	if pid := lockPID(dir); pid != cmd.Process.Pid {
		t.Fatalf("the directory's lock names pid %d, want engram mcp's %d", pid, cmd.Process.Pid)
	}
	list := listClients(t, env, dir, logFile)
	if len(list) != 1 || list[0].PID != 0 || list[0].Name != "solo" || list[0].Agent != "ann" || !list[0].Connected {
		t.Errorf("clients.list on engram mcp, the owner: %+v; want its client solo, agent ann, pid 0", list)
	}
}

// TestMCPStdioSubscriberHearsOfAnotherProcessesGoal: engram mcp runs its
// resource watch beside the server, so a client subscribed to the active
// goals hears resources/updated when another engram process (a batch
// client of the same owner) creates a goal of its agent.
func TestMCPStdioSubscriberHearsOfAnotherProcessesGoal(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	startServe(t, env, dir, "--log", logFile)
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: engramCmd(t, env, "mcp", "--data", dir, "--log", logFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	const uri = "engram://goals/active"
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// engram mcp starts its watch (one subscription to the owner) before
	// it serves; a tool call answered, through the owner too, comes after
	// several round trips to the owner, by when the watch is listening.
	mcpCall(t, cs, "active_goals", map[string]any{}, nil)
	var created struct{}
	batchResult(t, env, dir, logFile, `{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": "Seen by the agent"}}}`, &created)
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("resources/updated for %s, want %s", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated within 10s of another process creating a goal")
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects the go-sdk client to /mcp at addr with token.
func connectHTTP(t *testing.T, addr, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}, Timeout: 30 * time.Second}}, nil)
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// toolNames lists the tools of a session, sorted, and whether each says
// it only reads.
func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	}
	return out
}

// TestMCPOverHTTPActsAsTheTokensAgent: /mcp on engram serve --listen
// refuses a request without a valid token with 401 as /v1 does, serves a
// read-only token only the read tools, and every call acts as the
// token's agent (ann cannot read or change bob's unshared goal); the
// session's client is listed for that agent and marked
// disconnected when the client ends its session.
func TestMCPOverHTTPActsAsTheTokensAgent(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	ann := newToken(t, env, dir, "--agent", "ann")
	reader := newToken(t, env, dir, "--agent", "ann", "--read-only")
	bob := newToken(t, env, dir, "--agent", "bob")
	s := startServe(t, env, dir, "--listen", "127.0.0.1:0", "--log", logFile)

	initialize := `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}`
	revoked := newToken(t, env, dir, "--agent", "ann")
	if out := runIn(t, env, "", "token", "revoke", strings.SplitN(strings.TrimPrefix(revoked, "egt_"), "_", 2)[0], "--data", dir); out.code != 0 {
		t.Fatalf("token revoke: %s%s", out.stdout, out.stderr)
	}
	for _, c := range []struct{ name, token string }{{"no token", ""}, {"a wrong token", ann + "x"}, {"a revoked token", revoked}} {
		req, err := http.NewRequest(http.MethodPost, "http://"+s.tcp+"/mcp", strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			OK    bool                  `json:"ok"`
			Error struct{ Kind string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || err != nil || body.OK || body.Error.Kind != "PermissionError" {
			t.Errorf("%s: %d %+v (%v); want 401 with a PermissionError", c.name, resp.StatusCode, body, err)
		}
	}

	all := toolNames(t, connectHTTP(t, s.tcp, ann))
	ro := toolNames(t, connectHTTP(t, s.tcp, reader))
	for name, readOnly := range all {
		if _, ok := ro[name]; ok != readOnly {
			t.Errorf("tool %s (read-only %v): offered to the read-only token: %v", name, readOnly, ok)
		}
	}
	if !ro["recall"] || !ro["active_goals"] || len(ro) >= len(all) {
		t.Errorf("the read-only token got %v of %v; want the read tools only", ro, all)
	}

	// Bob's goal, unshared, is not ann's to read or change.
	var bobs struct {
		Goal struct{ ID string } `json:"goal"`
	}
	mcpCall(t, connectHTTP(t, s.tcp, bob), "create_goal", map[string]any{"title": "Bob's secret goal"}, &bobs)
	annSession := connectHTTP(t, s.tcp, ann)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"goal_history", map[string]any{"id": bobs.Goal.ID}},
		{"update_goal", map[string]any{"id": bobs.Goal.ID, "title": "Ann's now"}},
	} {
		res, err := annSession.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		raw, _ := json.Marshal(res)
		if !res.IsError || !strings.Contains(string(raw), "PermissionError") || strings.Contains(string(raw), "secret") {
			t.Errorf("ann's %s of bob's goal: %s; want a PermissionError that shows nothing of it", c.tool, raw)
		}
	}
	var active struct {
		Goals []struct{ Title string } `json:"goals"`
	}
	mcpCall(t, annSession, "active_goals", map[string]any{}, &active)
	if len(active.Goals) != 0 {
		t.Errorf("ann's active_goals lists %+v; bob's goal is not hers", active.Goals)
	}
	var history struct {
		Versions []struct{ By string } `json:"versions"`
	}
	mcpCall(t, connectHTTP(t, s.tcp, bob), "goal_history", map[string]any{"id": bobs.Goal.ID}, &history)
	if len(history.Versions) != 1 || history.Versions[0].By != "bob" {
		t.Errorf("bob's goal history: %+v; want his one creation (ann's update must not have applied)", history.Versions)
	}

	cs := connectHTTP(t, s.tcp, ann)
	mcpCall(t, cs, "memory_stats", map[string]any{}, nil)
	list := listClients(t, env, dir, logFile)
	i := slices.IndexFunc(list, func(c clients.Client) bool { return c.Calls > 0 })
	if i < 0 || list[i].Agent != "ann" || list[i].Transport != "http" || list[i].Name != "http-agent" || list[i].PID != 0 || !list[i].Connected {
		t.Fatalf("clients.list: %+v; want ann's http-agent over http, connected", list)
	}
	session := list[i].Session
	// Watch the owner's events, as the console does, for the session's end.
	watcher, err := remote.Dial(t.Context(), remote.Options{Socket: attach.SocketPath(dir), Agent: "local"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Close() }()
	gone := watcher.Subscribe(t.Context(), clients.EventDisconnected.Name())
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	// The session ends on the owner after the client's DELETE answered.
	for {
		select {
		case ev := <-gone:
			var c clients.Client
			raw, _ := json.Marshal(ev.Data)
			if err := json.Unmarshal(raw, &c); err != nil || c.Session != session {
				continue
			}
			list = listClients(t, env, dir, logFile)
			i = slices.IndexFunc(list, func(c clients.Client) bool { return c.Session == session })
			if i < 0 || list[i].Connected {
				t.Errorf("after client.disconnected, clients.list shows %+v", list)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("10s after the client ended its session, no client.disconnected for %s", session)
		}
	}
}

// TestMCPDemoRunsToTheEndAndLeavesWhatItSays: engram mcp demo, on a fresh
// data directory with no pause, plays every step (its engram mcp owns the
// directory), and afterwards the directory holds the facts it remembered,
// the goal it created and updated, the plan it ran and the messages it
// logged.
func TestMCPDemoRunsToTheEndAndLeavesWhatItSays(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	o := runIn(t, env, "", "mcp", "demo", "--data", dir, "--pause", "0", "--log", logFile)
	if o.code != 0 {
		t.Fatalf("engram mcp demo: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	for _, want := range []string{"remember", "log_message", "recall", "create_goal", "update_goal", "create_plan", "run_plan", "plan_status", "working_memory", "active_goals", "done:"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "→ failed") || o.stderr != "" {
		t.Errorf("the demo reported a failure:\n%s%s", o.stdout, o.stderr)
	}
	// Its engram mcp owned the directory: the list of agent clients lived
	// in that process and ended with it, so no console lists the demo.
	if strings.Contains(o.stdout, "lists the demo") || !strings.Contains(o.stdout, "its list of agent clients ended with it") {
		t.Errorf("the demo, whose engram mcp owned the directory, ends claiming a console lists it, or does not say how to watch:\n%s", o.stdout)
	}

	var mem struct {
		Items []struct{ Text string } `json:"items"`
	}
	batchResult(t, env, dir, logFile, `{"action": "memory.remember", "args": {"store": "working", "limit": 50}}`, &mem)
	for _, fact := range demoFacts {
		if !slices.ContainsFunc(mem.Items, func(it struct{ Text string }) bool { return it.Text == fact }) {
			t.Errorf("the working store lacks %q: %+v", fact, mem.Items)
		}
	}
	var goals struct {
		Items []struct {
			Title, Status string
			Progress      int
		} `json:"items"`
	}
	batchResult(t, env, dir, logFile, `{"action": "cortex.query", "args": {"type": "goal"}}`, &goals)
	if len(goals.Items) != 1 || goals.Items[0].Title != demoGoal || goals.Items[0].Status != "in_progress" || goals.Items[0].Progress != 60 {
		t.Errorf("goals: %+v; want %q in progress at 60%%", goals.Items, demoGoal)
	}
	var plans struct {
		Plans []struct {
			Status   string
			Progress struct{ Completed, Total int }
		} `json:"plans"`
	}
	batchResult(t, env, dir, logFile, `{"action": "plan.list"}`, &plans)
	if len(plans.Plans) != 1 || plans.Plans[0].Status != "completed" || plans.Plans[0].Progress.Completed != len(demoPlanSubtasks) {
		t.Errorf("plans: %+v; want one completed with %d subtasks done", plans.Plans, len(demoPlanSubtasks))
	}
	for _, m := range demoMessages {
		var hits struct {
			Results []struct{ Speaker, Text string } `json:"results"`
		}
		batchResult(t, env, dir, logFile, fmt.Sprintf(`{"action": "history.search", "args": {"query": %q}}`, m[2]), &hits)
		if !slices.ContainsFunc(hits.Results, func(h struct{ Speaker, Text string }) bool { return h.Speaker == m[1] && h.Text == m[2] }) {
			t.Errorf("the conversation lacks %s's %q: %+v", m[1], m[2], hits.Results)
		}
	}
}

// TestMCPDemoWatchedSaysTheAgentsTabListsIt: with another engram owning
// the directory (a console, here engram serve), that owner lists the
// demo's client, and the demo's last line says so.
func TestMCPDemoWatchedSaysTheAgentsTabListsIt(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	startServe(t, env, dir, "--log", logFile)
	o := runIn(t, env, "", "mcp", "demo", "--data", dir, "--pause", "0", "--log", logFile)
	if o.code != 0 {
		t.Fatalf("engram mcp demo: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout, "its Agents tab lists the demo, now gone") || strings.Contains(o.stdout, "ended with it") {
		t.Errorf("the demo, watched by the directory's owner, does not end saying its Agents tab lists it:\n%s", o.stdout)
	}
	list := listClients(t, env, dir, logFile)
	if len(list) != 1 || list[0].Name != "engram-demo" || list[0].Connected {
		t.Errorf("the owner lists %+v; want the demo's client, gone", list)
	}
}

// TestMCPDemoInterruptedSaysSo: ctrl+c (SIGINT) during the demo stops it
// with a line that says it was interrupted and after how many steps, not
// Go's "context canceled".
func TestMCPDemoInterruptedSaysSo(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	cmd := engramCmd(t, env, "mcp", "demo", "--data", dir, "--pause", "1h", "--log", filepath.Join(home, "test.log"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first step (connect) is printed; the next waits out the pause.
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.Contains(lines.Text(), "1. connect") {
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	_ = cmd.Wait() // the exit code is checked below
	if code := cmd.ProcessState.ExitCode(); code != exitFailed {
		t.Errorf("the interrupted demo exited %d, want %d", code, exitFailed)
	}
	if got := stderr.String(); strings.Contains(got, "context canceled") || !strings.Contains(got, "interrupted after 1 step") {
		t.Errorf("the interrupted demo says %q; want that it was interrupted after 1 step", got)
	}
}

// TestMCPRefusesAnAgentNameNoActionAccepts: an --agent the engine would
// refuse on every call (a control character, too long) stops engram mcp
// at the start with a usage error naming --agent, rather than serve an
// MCP client whose every tool call fails.
func TestMCPRefusesAnAgentNameNoActionAccepts(t *testing.T) {
	for _, agent := range []string{"ann\tbob", strings.Repeat("a", 300)} {
		var stdout, stderr strings.Builder
		code := run([]string{"mcp", "--in-memory", "--agent", agent, "--log", filepath.Join(t.TempDir(), "test.log")}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "--agent") || stdout.Len() != 0 {
			t.Errorf("engram mcp --agent %.12q: exit %d, stderr %q, stdout %q; want exit %d naming --agent, nothing on stdout",
				agent, code, stderr.String(), stdout.String(), exitUsage)
		}
	}
}

// TestMCPHelpExplainsTheCommand: engram mcp --help says what it serves,
// where, as whom, and names the demo; the main usage names both.
func TestMCPHelpExplainsTheCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"mcp", "--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("engram mcp --help: exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"standard input and output", "--agent", "--read-only", "engram mcp demo", "/mcp", "Agents"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("engram mcp --help lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "--batch") {
		t.Errorf("engram mcp --help offers --batch, which engram mcp does not take")
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "engram mcp") {
		t.Errorf("engram --help does not name engram mcp:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"mcp", "demo", "--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "Usage: engram mcp demo") {
		t.Errorf("engram mcp demo --help: %s", stdout.String())
	}
}

// TestServeStopsPromptlyWithAnMCPSessionOpen: engram serve, stopped while
// an MCP client over HTTP holds its session (and its event stream) open,
// ends those sessions and exits cleanly at once, rather than wait out its
// shutdown deadline (5 s) for the stream.
func TestServeStopsPromptlyWithAnMCPSessionOpen(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	ann := newToken(t, env, dir, "--agent", "ann")
	s := startServe(t, env, dir, "--listen", "127.0.0.1:0", "--log", filepath.Join(home, "test.log"))
	cs := connectHTTP(t, s.tcp, ann)
	mcpCall(t, cs, "memory_stats", map[string]any{}, nil)
	start := time.Now()
	s.stop(t)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("engram serve took %s to stop with an MCP session open", took)
	}
}

// TestMCPReadOnlyFlagOffersOnlyReadTools: engram mcp --read-only (here
// on a store in memory, private to the process) lists only the tools
// that change nothing, each annotated read-only.
func TestMCPReadOnlyFlagOffersOnlyReadTools(t *testing.T) {
	env, home := hermeticEnv(t)
	cmd := engramCmd(t, env, "mcp", "--in-memory", "--read-only", "--log", filepath.Join(home, "test.log"))
	client := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	tools := toolNames(t, cs)
	for name, readOnly := range tools {
		if !readOnly {
			t.Errorf("engram mcp --read-only offers %s, which changes what is stored", name)
		}
	}
	for _, want := range []string{"recall", "active_goals", "plan_status"} {
		if _, ok := tools[want]; !ok {
			t.Errorf("engram mcp --read-only lacks the read tool %s: %v", want, tools)
		}
	}
	if _, ok := tools["remember"]; ok {
		t.Errorf("engram mcp --read-only offers remember")
	}
}
