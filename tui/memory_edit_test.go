package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/memory"
)

// TestMemoryMemorizeForm: m opens the form on the selected store with the
// cursor on the text; enter memorizes it as the console's agent, and the
// list shows it.
func TestMemoryMemorizeForm(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("m")
	waitFor(t, tm, "Memorize", "store:", "kind:", "text:", "importance:", "Enter memorize")
	tm.Type("Joe is vegetarian.")
	keys(tm, tea.KeyTab)
	tm.Type("food, offsite")
	keys(tm, tea.KeyTab)
	typeInto(tm, "0.95")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Memorized ", " in working.", "7/8", "Joe is vegetarian.")
	m := finish(t, tm)
	p := memoryOf(m)
	if p.memorize != nil || p.Capturing() {
		t.Error("the form is still open")
	}
	if len(p.list.items) == 0 || p.list.items[0].Text != "Joe is vegetarian." {
		t.Fatalf("list %s: want the new item first (most important)", recalledIDs(p.list.items))
	}
	it, err := getMemory(t, engine, "working", p.list.items[0].ID)
	if err != nil || it.Type != "fact" || it.AgentID != "local" || it.Importance != 0.95 || strings.Join(it.Tags, ",") != "food,offsite" {
		t.Errorf("memorized %+v, %v", it, err)
	}
}

// TestMemoryMemorizeFormNamesTheFieldToFix: mistakes name their field and
// the fix; the engine's refusals show in the form; nothing is stored.
func TestMemoryMemorizeFormNamesTheFieldToFix(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("m")
	waitFor(t, tm, "Memorize")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✗ text: type what to remember")
	tm.Type("Something")
	keys(tm, tea.KeyTab, tea.KeyTab)
	typeInto(tm, "2")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ importance: "2" is not an importance: give a number from 0 to 1`)
	typeInto(tm, "0.5")
	keys(tm, tea.KeyShiftTab, tea.KeyShiftTab, tea.KeyShiftTab)
	typeInto(tm, "my notes")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ kind: "my notes": a kind is one word`)
	typeInto(tm, "fact")
	keys(tm, tea.KeyShiftTab)
	typeInto(tm, "nowhere")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `no memory store "nowhere"`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "remember")
	finish(t, tm)
	if c := capacity(t, engine, "working"); c.ItemCount != 6 {
		t.Errorf("working holds %d items, want the 6 seeded", c.ItemCount)
	}
}

// TestMemoryUnforgetKey: u on a soft-forgotten item (d shows them) brings
// it back; on a live one it says what u is for.
func TestMemoryUnforgetKey(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	do(t, engine, "memory.forget", "", `{"store": "working", "instruction": "item w-boat"}`)
	waitFor(t, tm, "5/8")
	tm.Type("u")
	waitFor(t, tm, "is not forgotten: u brings back a forgotten item")
	tm.Type("d")
	// w-boat's own line: "forgotten" alone is in the status line already.
	waitFor(t, tm, "Draft: maybe a boat trip")
	tm.Type("G") // the least important: w-boat
	tm.Type("u")
	waitFor(t, tm, "Brought w-boat back: remember finds it again.", "6/8")
	finish(t, tm)
	if it, err := getMemory(t, engine, "working", "w-boat"); err != nil || it.Deleted {
		t.Errorf("w-boat after u: %+v, %v", it, err)
	}
}

// TestMemoryFollowsEveryChange: a configure, an unforget or a share made
// elsewhere (a batch step, another agent) shows without leaving the tab.
func TestMemoryFollowsEveryChange(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	do(t, engine, "memory.configure", "", `{"store": "working", "max_items": 10}`)
	waitFor(t, tm, "6/10")
	do(t, engine, "memory.forget", "", `{"store": "working", "instruction": "item w-boat"}`)
	waitFor(t, tm, "5/10")
	do(t, engine, "memory.unforget", "", `{"store": "working", "id": "w-boat"}`)
	waitFor(t, tm, "6/10", "Draft: maybe a boat trip")
	do(t, engine, "memory.configure", "", `{"store": "notes", "type": "episodic"}`)
	waitFor(t, tm, "3 stores")
	finish(t, tm)
}

// TestMemoryRevokedStoreIsNoLongerShared: another agent's store, shared
// with the console's agent and open in the tab, is revoked: the tab says
// so plainly and shows another store, with no PermissionError.
func TestMemoryRevokedStoreIsNoLongerShared(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	bob := conn.Request{Principal: "bob"}
	ctx := context.Background()
	if _, err := conn.CallAs(ctx, engine, bob, memory.ActionConfigure, memory.ConfigureArgs{Store: "bob-notes", Type: "episodic"}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CallAs(ctx, engine, bob, memory.ActionMemorize, memory.MemorizeArgs{Store: "bob-notes", Item: memory.ItemInput{Type: "fact", Text: "Bob's shared note"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CallAs(ctx, engine, bob, memory.ActionShare, memory.ShareArgs{Store: "bob-notes", Principal: "local", Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("5")
	waitFor(t, tm, "3 stores")
	keys(tm, tea.KeyRight, tea.KeyRight)
	waitFor(t, tm, "Bob's shared note")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "bob-notes › item")
	if _, err := conn.CallAs(ctx, engine, bob, memory.ActionRevoke, memory.RevokeArgs{Store: "bob-notes", Principal: "local"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "Store bob-notes is no longer shared with you")
	m := finish(t, tm)
	view := m.View()
	if strings.Contains(view, "PermissionError") || strings.Contains(view, "Bob's shared note") {
		t.Errorf("after the revoke:\n%s", view)
	}
}

// TestGoldenMemoryMemorizeForm: the form at 120x36 and 80x24.
func TestGoldenMemoryMemorizeForm(t *testing.T) {
	t.Parallel()
	_, _, tm := startMemory(t)
	tm.Type("m")
	waitFor(t, tm, "Memorize")
	tm.Type("Joe is vegetarian.")
	m := finish(t, tm)
	requireGoldenAt(t, "TestGoldenMemoryMemorizeForm_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoldenMemoryMemorizeForm_80x24", m, 80, 24)
}
