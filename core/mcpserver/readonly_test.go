package mcpserver

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/clients"
)

// A read-only server (--read-only, a read-only token) hides the tools that
// change things, but its calls run as the agent, whose requests the engine
// does not hold to read-only: what keeps them from writing is that every
// tool, resource and prompt it offers runs only read-only actions. Every
// one is called here, and each action its requests ran is checked.
func TestAReadOnlyServerRunsOnlyReadOnlyActions(t *testing.T) {
	e := newEngine(t)
	full := connect(t, New(e, Options{Agent: "ann"}))
	var msg LogMessageOutput
	callTool(t, full, "log_message", map[string]any{"speaker": "user", "text": "Hello there, planning a trip.", "channel": "sms"}, &msg)
	callTool(t, full, "remember", map[string]any{"text": "The trip is to Porto."}, nil)
	var goal GoalOutput
	callTool(t, full, "create_goal", map[string]any{"title": "Book the flights"}, &goal)
	var plan PlanStatusOutput
	callTool(t, full, "create_plan", map[string]any{"goal": "Pack", "subtasks": []map[string]any{{"id": "a", "action": map[string]any{"name": "task.noop"}}}}, &plan)

	calls := e.Subscribe(t.Context(), clients.EventCall.Name())
	ro := connect(t, New(e, Options{Agent: "ann", ReadOnly: true}))
	args := map[string]map[string]any{
		"memory_stats": {}, "recall": {"query": "trip"}, "search_history": {"query": "trip"}, "conversation_summary": {},
		"thread_context": {"thread_id": msg.Thread.ThreadID}, "active_goals": {}, "goal_history": {"id": goal.Goal.ID},
		"plan_status": {"plan_id": plan.PlanID},
	}
	for _, tool := range listTools(t, ro) {
		a, ok := args[tool.Name]
		if !ok {
			t.Errorf("the read-only server offers %s, which this test does not call: add it", tool.Name)
			continue
		}
		callTool(t, ro, tool.Name, a, nil)
	}
	for _, uri := range []string{ActiveGoalsURI, SummaryURI("default"), ThreadContextURI(msg.Thread.ThreadID)} {
		if _, err := ro.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err != nil {
			t.Errorf("reading %s: %v", uri, err)
		}
	}
	prompts, err := ro.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 0 {
		t.Errorf("the read-only server offers prompts %v; with_memory records a turn", prompts.Prompts)
	}
	// The full server's call after them (a tool the read-only one lacks)
	// marks the end of the read-only ones.
	callTool(t, full, "log_message", map[string]any{"speaker": "assistant", "text": "Where to?"}, nil)

	readOnly := map[string]bool{}
	for _, a := range e.Actions() {
		readOnly[a.Name] = a.ReadOnly
	}
	timeout := time.After(10 * time.Second)
	seen := 0
	for done := false; !done; {
		select {
		case ev := <-calls:
			c, _ := clients.EventCall.Of(ev)
			if c.Tool == "log_message" {
				done = true
				continue
			}
			seen++
			if !readOnly[c.Action] {
				t.Errorf("the read-only server's %s ran %s, which changes what is stored", c.Tool, c.Action)
			}
		case <-timeout:
			t.Fatal("the full server's last call never came")
		}
	}
	if seen < len(args)+3 {
		t.Errorf("saw %d requests of the read-only server; want one at least per tool and resource", seen)
	}
}
