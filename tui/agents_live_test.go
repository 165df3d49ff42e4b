//go:build !noplanning

package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
)

// TestTabsFollowAnAgentsCallsLive: issue 16 item 5. What an agent does
// through MCP (requests made for its client) shows on the tab it is about
// while that tab is open, as the console's own work does: a message in
// Chat, a thread in Threads, a goal in Goals, a plan in Plans, a memory in
// Memory; and the Agents tab counts the calls.
func TestTabsFollowAnAgentsCallsLive(t *testing.T) {
	t.Parallel()
	engine, clk, _ := newPlanEngine(t)
	m := New(engine, Options{StatusFade: time.Hour})
	plansOf(m).still = true
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 36))
	t.Cleanup(func() { _ = tm.Quit() })
	steps := []struct {
		tab                string
		ready              string
		tool, action, args string
		want               string
	}{
		{"1", "[1 Chat]", "log_message", "history.write", `{"speaker": "user", "text": "The agent logged this message."}`, "The agent logged this message."},
		{"2", "[2 Threads]", "log_message", "thread.message", `{"channel": "sms", "text": "Ferry tickets for Saturday?"}`, "Ferry tickets for Saturday?"},
		{"3", "[3 Goals]", "create_goal", "cortex.create", `{"type": "goal", "fields": {"title": "Book the agent's venue"}}`, "Book the agent's venue"},
		{"4", "[4 Plans]", "create_plan", "plan.create", `{"id": "agent-plan", "goal": "The agent's plan", "subtasks": [{"id": "one", "action": ` + work(1) + `}]}`, "The agent's plan"},
		{"5", "[5 Memory]", "remember", "memory.memorize", `{"store": "working", "item": {"type": "fact", "text": "The agent remembered the ferry."}}`, "The agent remembered the ferry."},
	}
	for i, s := range steps {
		tm.Type(s.tab)
		waitFor(t, tm, s.ready)
		clk.Advance(time.Minute)
		agentCall(t, engine, clk, claude, s.tool, fmt.Sprint(i+1), s.action, s.args, false)
		waitFor(t, tm, s.want)
	}
	tm.Type("7")
	waitFor(t, tm, "[7 Agents]", "claude-desktop 1.2.0", "5 calls")
	finish(t, tm)
}
