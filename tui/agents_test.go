package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/trace"
)

// agentClient is an agent client as engram mcp names it in its requests.
type agentClient struct {
	agent, session, name, version, transport string
	pid                                      int
}

var (
	claude = agentClient{agent: "local", session: "s-claude", name: "claude-desktop", version: "1.2.0", transport: "stdio", pid: 1} // pid 1 runs: never found gone
	cursor = agentClient{agent: "bob", session: "s-cursor", name: "cursor", version: "0.9", transport: "http"}
	zed    = agentClient{agent: "local", session: "s-zed", name: "zed", version: "0.160", transport: "stdio", pid: 1}
)

// agentCall runs an action for client c, as its tool, at the engine
// clock's time pinned (so that every time on screen repeats), and fails
// the test unless it fails exactly when wantErr says.
func agentCall(t *testing.T, engine conn.Conn, clk *clock.Fixed, c agentClient, tool, call, action, args string, wantErr bool) {
	t.Helper()
	at := clk.Now()
	req := conn.Request{Action: action, Principal: c.agent, At: &at, Client: &conn.ClientCall{
		Session: c.session, Via: "mcp", Name: c.name, Version: c.version, Transport: c.transport, PID: c.pid, Tool: tool, Call: call}}
	if args != "" {
		req.Args = json.RawMessage(args)
	}
	if _, err := engine.Do(context.Background(), req); (err != nil) != wantErr {
		t.Fatalf("%s's %s (%s): error %v, want an error: %v", c.name, tool, action, err, wantErr)
	}
}

// seedAgents has two agent clients connected (claude-desktop as local,
// with a failed call, and cursor as bob) and one gone (zed), the engine's
// clock five minutes past the last call.
func seedAgents(t *testing.T, engine conn.Conn, clk *clock.Fixed) {
	t.Helper()
	agentCall(t, engine, clk, zed, "memory_stats", "1", "memory.stores", "", false)
	clk.Advance(30 * time.Second)
	agentCall(t, engine, clk, claude, "memory_stats", "1", "memory.stores", "", false)
	clk.Advance(30 * time.Second)
	agentCall(t, engine, clk, claude, "goal_history", "2", "cortex.get", `{"id": "nope"}`, true)
	clk.Advance(time.Minute)
	agentCall(t, engine, clk, cursor, "log_message", "1", "history.write", `{"conversation": "bob-notes", "speaker": "user", "text": "hello"}`, false)
	clk.Advance(time.Minute)
	at := clk.Now()
	if _, err := engine.Do(context.Background(), conn.Request{Action: clients.ActionDisconnect.Name(), At: &at,
		Args: json.RawMessage(`{"session": "s-zed"}`)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
}

func agentsEngine(t *testing.T) conn.Conn {
	engine, clk := newEngine(t)
	seedAgents(t, engine, clk)
	return engine
}

// TestGoldenAgents: the Agents tab lists two connected clients and one
// gone, the connected first, and shows the selected one's details with its
// last error in full; at 120x36 and at 80x24, where the columns that do
// not fit go.
func TestGoldenAgents(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedAgents(t, engine, clk)
	tm := start(t, engine, 120, 36)
	tm.Type("7")
	waitFor(t, tm, "[7 Agents]", "2 connected · 1 gone", "cursor 0.9", "zed 0.160")
	m := finish(t, tm)
	requireGoldenAt(t, "TestGoldenAgents_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoldenAgents_80x24", m, 80, 24)
	p := m.panes[tabAgents].(*agentsPane)
	var order []string
	for _, c := range p.clients {
		order = append(order, c.Name)
	}
	if strings.Join(order, ",") != "cursor,claude-desktop,zed" {
		t.Errorf("clients in the order %v, want cursor, claude-desktop (connected, newest call first), then zed (gone)", order)
	}
	// The selected client's details: its session, who serves it, its last
	// error in full.
	press(m, "j")
	m.Update(settleMsg{})
	view := m.View()
	for _, want := range []string{"session s-claude", "served by engram mcp, pid 1", `last error: no item "nope"`, "2 calls, 1 failed"} {
		if !strings.Contains(view, want) {
			t.Errorf("claude-desktop selected, the details lack %q:\n%s", want, view)
		}
	}
}

// TestAgentsFollowClientCallsLive: a client's call, a new client and a
// disconnect show in the tab as they happen, with no key pressed.
func TestAgentsFollowClientCallsLive(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	agentCall(t, engine, clk, claude, "memory_stats", "1", "memory.stores", "", false)
	tm := start(t, engine, 120, 36)
	tm.Type("7")
	waitFor(t, tm, "1 connected", "memory_stats just now")
	clk.Advance(3 * time.Minute)
	agentCall(t, engine, clk, claude, "recall", "2", "memory.stores", "", false)
	waitFor(t, tm, "recall just now", "2 calls")
	agentCall(t, engine, clk, cursor, "log_message", "1", "history.write", `{"conversation": "bob-notes", "speaker": "user", "text": "hi"}`, false)
	waitFor(t, tm, "2 connected", "cursor 0.9")
	at := clk.Now()
	if _, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: "bob", At: &at}, clients.ActionDisconnect,
		clients.DisconnectArgs{Session: cursor.session}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "1 connected · 1 gone")
	m := finish(t, tm)
	p := m.panes[tabAgents].(*agentsPane)
	if len(p.clients) != 2 || p.clients[0].Calls != 2 || p.clients[1].Connected {
		t.Errorf("the tab holds %+v; want claude-desktop with 2 calls, then cursor gone", p.clients)
	}
}

// TestAgentsSaysHowToConnectOne: with no client yet, the tab says so and
// names the command that connects one. The list lives in the owner's
// memory: an owner that just took the directory over starts it empty
// though agents called before, so the tab does not claim that none ever
// did, only none since the owner started.
func TestAgentsSaysHowToConnectOne(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newAgentsPane(engine, &styles) // on a data directory: not private
	p.SetSize(80, 21)
	p.Update(p.load()())
	view := p.View()
	for _, want := range []string{"No agent client has called since", "owner started.", "engram mcp"} {
		if !strings.Contains(view, want) {
			t.Errorf("the empty tab lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "yet") {
		t.Errorf("the empty tab claims no agent has connected yet, which a new owner cannot know:\n%s", view)
	}
	checkScreen(t, "empty Agents tab", view, 80, 21)
}

// TestAgentsInMemorySaysNoAgentCanConnect: a console with --in-memory
// serves nothing, so no engram mcp can reach it: the empty tab says so
// and how to watch an agent, rather than send the person to engram mcp.
func TestAgentsInMemorySaysNoAgentCanConnect(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, 80, 24)
	tm.Type("7")
	waitFor(t, tm, "[7 Agents]", "no agent can connect")
	m := finish(t, tm)
	view := m.View()
	if strings.Contains(view, "has called since") || !strings.Contains(view, "engram --data DIR") {
		t.Errorf("the in-memory console's Agents tab waits for an agent that cannot reach it, or does not say how to watch one:\n%s", view)
	}
	checkScreen(t, "empty Agents tab in memory", view, 80, 24)
}

// otherAgent is a connection acting as bob: an engram attached to the
// directory with another --agent than its owner's.
type otherAgent struct{ conn.Conn }

func (o otherAgent) Agent() string { return "bob" }

func (o otherAgent) Do(ctx context.Context, req conn.Request) (json.RawMessage, error) {
	if req.Principal == "" {
		req.Principal = "bob"
	}
	return o.Conn.Do(ctx, req)
}

// TestAgentsListsItsOwnClientsWhenNotTheOwnersAgent: the engine refuses
// all to an agent other than its own; the tab then lists that agent's
// clients, says so, and shows no error.
func TestAgentsListsItsOwnClientsWhenNotTheOwnersAgent(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedAgents(t, engine, clk)
	tm := start(t, otherAgent{engine}, 120, 36)
	tm.Type("7")
	waitFor(t, tm, "agent bob's clients only", "cursor 0.9")
	m := finish(t, tm)
	p := m.panes[tabAgents].(*agentsPane)
	if len(p.clients) != 1 || p.clients[0].Agent != "bob" {
		t.Errorf("bob's tab lists %+v, want his one client", p.clients)
	}
	if m.status.isError || strings.Contains(m.View(), "ValidationError") {
		t.Errorf("the refusal of all shows as an error: %q", m.status.text)
	}
	// Another owner (after engram.owner_changed) may run as this agent:
	// the tab asks for every agent's clients again.
	if p.Update(p.reloadAll()()) == nil || !p.own {
		t.Error("after a reload the refusal of all is not taken again")
	}
	if p.lists.req == 0 || !p.lists.busy {
		t.Error("after the refusal no load of the agent's own clients is in flight")
	}
}

// TestTraceMarksAgentClientCalls: the Trace tab marks the entries of an
// agent client's calls with the face, the tool, the action, how it went
// and which client made it as which agent.
func TestTraceMarksAgentClientCalls(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	turn(t, engine, clk, "turn-1", "hello")
	seedAgents(t, engine, clk)
	tm := start(t, engine, 120, 36)
	tm.Type("6")
	// bob's call (cursor) is his: trace.list shows the console's agent its
	// own entries.
	waitFor(t, tm, "[6 Trace]", "↔ mcp goal_history → cortex.get ✗ NotFoundError · claude-desktop (local)",
		"↔ mcp memory_stats → memory.stores · zed (local)")
	m := finish(t, tm)
	requireGoldenAt(t, "TestGoldenTraceAgentCalls", m, 120, 36)
	for _, l := range strings.Split(m.View(), "\n") {
		if strings.Contains(l, "turn.start") && strings.Contains(l, glyphAgentCall) {
			t.Errorf("the console's own turn is marked as an agent's call: %q", l)
		}
	}
}

// TestTraceMarksOnlyClientCallEntries: an entry whose kind ends in .call
// but is not a client's (no such data, or another face's kind) reads as
// written.
func TestTraceMarksOnlyClientCallEntries(t *testing.T) {
	t.Parallel()
	styles := DefaultStyles()
	p := newTracePane(nil, &styles)
	data := json.RawMessage(`{"via": "mcp", "tool": "recall", "action": "memory.remember", "session": "s", "client": "c", "ok": true}`)
	for _, e := range []trace.Entry{
		{Kind: "plan.call", Message: "plain"},
		{Kind: "other.call", Message: "plain", Data: data},
		{Kind: "mcp.call", Message: "plain", Data: json.RawMessage(`{"note": 1}`)},
	} {
		if got := p.message(e); got != "plain" {
			t.Errorf("%s with %s: %q, want the message as written", e.Kind, e.Data, got)
		}
	}
	if got := p.message(trace.Entry{Kind: "mcp.call", Principal: "local", Message: "plain", Data: data}); got != "↔ mcp recall → memory.remember · c (local)" {
		t.Errorf("a client's call reads %q", got)
	}
}

// TestAgentsIgnoreOtherEvents: only client events reload the tab.
func TestAgentsIgnoreOtherEvents(t *testing.T) {
	t.Parallel()
	styles := DefaultStyles()
	p := newAgentsPane(nil, &styles)
	if cmd := p.Update(events.Event{Name: "utterance.written"}); cmd != nil {
		t.Error("an utterance reloads the Agents tab")
	}
	for _, k := range []string{clients.EventConnected.Name(), clients.EventCall.Name(), clients.EventDisconnected.Name()} {
		p.lists = loader{}
		if cmd := p.Update(events.Event{Name: k}); cmd == nil {
			t.Errorf("%s does not reload the Agents tab", k)
		}
	}
}

// TestAgentsLongClientNameGivesWayToTheLastCall: at 80 columns a long
// client name is cut so that the last call shows whole; the details show
// the name whole.
func TestAgentsLongClientNameGivesWayToTheLastCall(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	long := agentClient{agent: "local", session: "s-long", name: "ツールクライアント-with-a-really-long-name", version: "10.20.30-beta", transport: "stdio"}
	agentCall(t, engine, clk, long, "memory_stats", "1", "memory.stores", "", false)
	clk.Advance(3 * time.Minute)
	styles := DefaultStyles()
	p := newAgentsPane(engine, &styles)
	p.SetSize(80, 18)
	p.Update(p.load()())
	view := p.View()
	if !strings.Contains(view, "memory_stats 3m ago") {
		t.Errorf("the last call is cut at 80 columns:\n%s", view)
	}
	if !strings.Contains(view, "ツールクライアント-with-a-really-long-name 10.20.30-beta · agent local") {
		t.Errorf("the details do not name the client whole:\n%s", view)
	}
	checkScreen(t, "a long client name at 80 columns", view, 80, 18)
}

// TestAgentsRedrawWhileShown: the tab's times are relative ("3m ago"), so
// while it shows it redraws every agentsTick; hidden, or after another
// Focus started a new chain, an old tick ends its chain.
func TestAgentsRedrawWhileShown(t *testing.T) {
	t.Parallel()
	styles := DefaultStyles()
	p := newAgentsPane(nil, &styles)
	if p.Focus() == nil {
		t.Fatal("Focus starts no redraw")
	}
	first := p.tickID
	if p.Update(agentsTickMsg{id: first}) == nil {
		t.Error("a tick while shown does not ask for the next")
	}
	p.Blur()
	if p.Update(agentsTickMsg{id: first}) != nil {
		t.Error("a tick while hidden asks for another")
	}
	p.Focus()
	if p.Update(agentsTickMsg{id: first}) != nil {
		t.Error("a tick of the chain before the last Focus asks for another: two chains would run")
	}
}

// TestAgentsSelectedClientAlwaysShows: with more clients than rows, the
// selected one is never the row the "more below" line takes, wherever the
// cursor goes.
func TestAgentsSelectedClientAlwaysShows(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	for i := range 15 {
		c := agentClient{agent: "local", session: fmt.Sprintf("s-%02d", i), name: fmt.Sprintf("agent-%02d", i), transport: "http"}
		agentCall(t, engine, clk, c, "memory_stats", "1", "memory.stores", "", false)
		clk.Advance(time.Second)
	}
	styles := DefaultStyles()
	p := newAgentsPane(engine, &styles)
	p.SetSize(80, 18) // 9 rows for the table's clients
	p.Update(p.load()())
	for i := range 15 {
		view := p.View()
		selected := p.clients[p.list.Index()].Name
		if !strings.Contains(view, glyphCursor+" "+selected) {
			t.Fatalf("after %d downs, %s is selected but not shown:\n%s", i, selected, view)
		}
		if below := 15 - p.list.Offset() - p.listRows(); below > 0 && !strings.Contains(view, fmt.Sprintf("%d more (↓, pgdn)", below)) {
			t.Errorf("after %d downs, the list does not say %d more are below:\n%s", i, below, view)
		}
		p.Update(tea.KeyMsg{Type: tea.KeyDown})
	}
}
