package tui

import (
	"os/exec"
	"testing"
)

// runningProcess starts a process that runs until the returned stop ends
// it: an engram mcp that can be killed without saying goodbye.
func runningProcess(t *testing.T) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep command to stand for an engram mcp process: %v", err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Kill() // it may have ended already
		_ = cmd.Wait()         // killed: the error says so
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// TestAgentsShowAKilledClientGoneWhenShownAgain: an engram mcp killed
// with -9 never tells the owner it left; the owner finds it gone when it
// next lists its clients. Coming back to the tab asks again, so the
// client shows as gone without waiting for another client's call.
func TestAgentsShowAKilledClientGoneWhenShownAgain(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	pid, kill := runningProcess(t)
	victim := agentClient{agent: "local", session: "s-victim", name: "victim", version: "1.0", transport: "stdio", pid: pid}
	agentCall(t, engine, clk, victim, "memory_stats", "1", "memory.stores", "", false)
	tm := start(t, engine, 120, 36)
	tm.Type("7")
	waitFor(t, tm, "[7 Agents]", "1 connected", "victim 1.0")
	tm.Type("6")
	waitFor(t, tm, "[6 Trace]")
	kill()
	tm.Type("7")
	waitFor(t, tm, "[7 Agents]", "0 connected · 1 gone")
	finish(t, tm)
}

// TestAgentsShowAKilledClientGoneWhileShown: while the tab shows, each
// tick asks the owner again, so a killed client shows as gone with no
// key pressed and no other client calling.
func TestAgentsShowAKilledClientGoneWhileShown(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	pid, kill := runningProcess(t)
	victim := agentClient{agent: "local", session: "s-victim", name: "victim", version: "1.0", transport: "stdio", pid: pid}
	agentCall(t, engine, clk, victim, "memory_stats", "1", "memory.stores", "", false)
	tm := start(t, engine, 120, 36)
	tm.Type("7") // the tab's first Focus: its ticks are chain 1
	waitFor(t, tm, "[7 Agents]", "1 connected", "victim 1.0")
	kill()
	tm.Send(agentsTickMsg{id: 1})
	waitFor(t, tm, "0 connected · 1 gone")
	finish(t, tm)
}

// TestAgentsTickAndFocusAskForTheList: the tick while the tab shows, and
// coming into view, each send a clients.list (the owner marks dead
// clients gone only when it lists them); a tick while hidden sends none.
func TestAgentsTickAndFocusAskForTheList(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newAgentsPane(engine, &styles)
	p.Update(p.load()())
	if p.lists.busy {
		t.Fatal("the first list is still in flight")
	}
	p.Focus()
	if !p.lists.busy {
		t.Error("coming into view sends no clients.list")
	}
	p.Update(p.load()()) // its answer
	p.Update(agentsTickMsg{id: p.tickID})
	if !p.lists.busy {
		t.Error("a tick while the tab shows sends no clients.list")
	}
	p.Update(p.load()())
	p.Blur()
	p.Update(agentsTickMsg{id: p.tickID})
	if p.lists.busy {
		t.Error("a tick while the tab is hidden sends a clients.list")
	}
}
