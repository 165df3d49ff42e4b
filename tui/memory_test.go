package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/memory"
)

// memorize stores an item through the engine, five minutes after the one
// before.
func memorize(t *testing.T, engine conn.Conn, clk *clock.Fixed, store, item string) {
	t.Helper()
	do(t, engine, "memory.memorize", "", fmt.Sprintf(`{"store": %q, "item": %s}`, store, item))
	clk.Advance(5 * time.Minute)
}

// seedMemory fills both default stores, with limits small enough for the
// gauges to show: six items in working (at most 8 items, 120 tokens), four
// in episodic (at most 20 items, 400 tokens) from the two days before.
func seedMemory(t *testing.T, engine conn.Conn, clk *clock.Fixed) {
	t.Helper()
	do(t, engine, "memory.configure", "", `{"store": "working", "max_items": 8, "token_budget": 120}`)
	do(t, engine, "memory.configure", "", `{"store": "episodic", "max_items": 20, "token_budget": 400}`)
	for _, it := range []string{
		`{"id": "w-lisbon", "type": "fact", "text": "The team offsite is in Lisbon on March 3.", "agent_id": "local", "tags": ["offsite", "lisbon"], "importance": 0.9}`,
		`{"id": "w-budget", "type": "fact", "text": "The offsite budget is $40,000, flights included.", "agent_id": "local", "tags": ["offsite", "budget"], "importance": 0.8}`,
		`{"id": "w-venue", "type": "task", "text": "Marta books the venue by Friday, November 7.", "agent_id": "planner", "tags": ["offsite"], "importance": 0.6}`,
		`{"id": "w-short", "type": "preference", "text": "The user prefers short answers.", "agent_id": "local", "tags": ["style"], "importance": 0.4}`,
		`{"id": "w-boat", "type": "idea", "text": "Draft: maybe a boat trip on the Tagus.", "agent_id": "local", "tags": ["draft"], "importance": 0.2,
			"metadata": {"source": "chat", "episode": 3, "people": ["Marta", "Joe"]}}`,
		`{"id": "w-dinner", "type": "fact", "text": "The dinner on March 5 must stay under $2,000 of the budget.", "agent_id": "local", "tags": ["offsite", "budget"], "importance": 0.7}`,
	} {
		memorize(t, engine, clk, "working", it)
	}
	for _, it := range []string{
		`{"id": "e-budget", "type": "event", "text": "Asked about the offsite budget; answered $40,000.", "agent_id": "local", "timestamp": "2025-11-03T09:15:00Z", "importance": 0.5}`,
		`{"id": "e-flights", "type": "event", "text": "Booked flights to Lisbon for twelve people.", "agent_id": "local", "tags": ["travel"], "timestamp": "2025-11-03T16:40:00Z", "importance": 0.7}`,
		`{"id": "e-dinner", "type": "event", "text": "Talked through the dinner plan with Marta.", "agent_id": "local", "timestamp": "2025-11-04T11:05:00Z", "metadata": {"episode": "e2"}}`,
		`{"id": "e-venue", "type": "event", "text": "Reviewed the venue shortlist: three options near the river.", "agent_id": "planner", "timestamp": "2025-11-04T14:30:00Z", "importance": 0.6}`,
	} {
		memorize(t, engine, clk, "episodic", it)
	}
}

func memoryOf(m *Model) *memoryPane { return m.panes[tabMemory].(*memoryPane) }

// startMemory seeds both stores and opens the Memory tab on working.
func startMemory(t *testing.T) (conn.Conn, *clock.Fixed, *teatest.TestModel) {
	t.Helper()
	engine, clk := newEngine(t)
	seedMemory(t, engine, clk)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("5")
	waitFor(t, tm, "[5 Memory]", "6/8", "4/20", "most important first", "Draft: maybe a boat trip")
	return engine, clk, tm
}

// capacity is a store's memory.capacity, as the engine reports it.
func capacity(t *testing.T, engine conn.Conn, store string) memory.Capacity {
	t.Helper()
	c, err := conn.Call(context.Background(), engine, memory.ActionCapacity, memory.CapacityArgs{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// getMemory reads an item through the engine.
func getMemory(t *testing.T, engine conn.Conn, store, id string) (*memory.Item, error) {
	t.Helper()
	res, err := conn.Call(context.Background(), engine, memory.ActionGet, memory.GetArgs{Store: store, ID: id})
	return res.Item, err
}

// rememberIDs is what memory.remember answers, as ids in order: the list's
// own question, asked straight.
func rememberIDs(t *testing.T, engine conn.Conn, store, prompt, rank string) string {
	t.Helper()
	q := memoryQuery{store: store, prompt: prompt, rank: rank}
	res, err := conn.Call(context.Background(), engine, memory.ActionRemember, q.args())
	if err != nil {
		t.Fatal(err)
	}
	return recalledIDs(res.Items)
}

func recalledIDs(items []memory.Recalled) string {
	ids := make([]string, len(items))
	for i, r := range items {
		ids[i] = r.ID
	}
	return strings.Join(ids, " ")
}

// --- golden frames (memory_empty is in TestGoldenTabs) ---

func TestGoldenMemoryStores(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	m := finish(t, tm)
	requireGolden(t, m)
	p := memoryOf(m)
	if got, want := recalledIDs(p.list.items), "w-lisbon w-budget w-dinner w-venue w-short w-boat"; got != want {
		t.Errorf("working lists %s, want %s (by importance)", got, want)
	}
	if got, want := recalledIDs(p.list.items), rememberIDs(t, engine, "working", "", ""); got != want {
		t.Errorf("the list is %s, memory.remember with no prompt says %s", got, want)
	}
	view := m.View()
	for _, want := range []string{"▸ working", "  episodic", "[", "6/8", "/120", "4/20", "/400", "evicts the least important when full", "refuses new items when full"} {
		if !strings.Contains(view, want) {
			t.Errorf("the stores lack %q", want)
		}
	}
}

func TestGoldenMemoryRemember(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("/")
	waitFor(t, tm, "remember: ")
	tm.Type("offsite budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "3 hits", "score", "conf")
	m := finish(t, tm)
	requireGolden(t, m)
	p := memoryOf(m)
	if got, want := recalledIDs(p.list.items), rememberIDs(t, engine, "working", "offsite budget", ""); got != want {
		t.Errorf("hits %s, memory.remember says %s", got, want)
	}
	best := 0.0
	for _, r := range p.list.items {
		best = max(best, r.Confidence)
		if r.Score <= 0 {
			t.Errorf("%s has no score", r.ID)
		}
	}
	if best != 1 || !strings.Contains(m.View(), "100%") {
		t.Errorf("no hit with full confidence shown (best %v)", best)
	}
}

func TestGoldenMemoryForgetPreview(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("f")
	waitFor(t, tm, "forget: ")
	tm.Type("items tagged budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "2 items would go", "Forget these 2 items (soft)?")
	m := finish(t, tm)
	requireGolden(t, m)
	if c := capacity(t, engine, "working"); c.ItemCount != 6 || c.Deleted != 0 {
		t.Errorf("the dry run changed the store: %+v", c)
	}
	if p := memoryOf(m); p.forget == nil || p.forget.stage != forgetConfirming || !m.panes[tabMemory].Capturing() {
		t.Error("the preview does not await y or n")
	}
}

// --- stores ---

func TestMemorySwitchStores(t *testing.T) {
	t.Parallel()
	_, _, tm := startMemory(t)
	keys(tm, tea.KeyRight)
	waitFor(t, tm, "▸ episodic", "newest first (the store's order)", "Reviewed the venue shortlist")
	keys(tm, tea.KeyRight) // the last store: nothing further
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("1"), Alt: true})
	waitFor(t, tm, "▸ working", "most important first (the store's order)")
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("2"), Alt: true})
	// An item of episodic's: the store's name and order show before its
	// items have loaded.
	waitFor(t, tm, "▸ episodic", "newest first", "Reviewed the venue shortlist")
	m := finish(t, tm)
	p := memoryOf(m)
	if m.active != tabMemory {
		t.Fatalf("alt+1 switched to tab %d", m.active)
	}
	if p.list.want.store != "episodic" || recalledIDs(p.list.items) != "e-venue e-dinner e-flights e-budget" {
		t.Errorf("store %s lists %s, want episodic newest first", p.list.want.store, recalledIDs(p.list.items))
	}
	view := m.View()
	if !strings.Contains(view, "2025-11-04 14:30") || strings.Contains(view, "boat trip") {
		t.Errorf("episodic's items (dated) do not show, or working's still do:\n%s", view)
	}
	press(m, "h")
	if p.list.want.store != "working" {
		t.Errorf("h selected %s, want working", p.list.want.store)
	}
}

// --- remember ---

func TestMemoryRememberAndBack(t *testing.T) {
	t.Parallel()
	_, _, tm := startMemory(t)
	tm.Type("/lisbon")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Remember in working", "1 hit", "The team offsite is in Lisbon")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "6 items · most important first (the store's order)")
	m := finish(t, tm)
	p := memoryOf(m)
	if p.list.want.prompt != "" || len(p.list.items) != 6 {
		t.Errorf("prompt %q with %d items, want the store's 6 in its order", p.list.want.prompt, len(p.list.items))
	}
	if view := m.View(); strings.Contains(view, "Remember in") || strings.Contains(view, "score") {
		t.Errorf("esc left the remember box showing:\n%s", view)
	}
}

func TestMemoryRankToggle(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("/offsite budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "3 hits · most important first")
	byImportance := rememberIDs(t, engine, "working", "offsite budget", "importance")
	// With a prompt, relevance comes right after the store's order.
	for _, want := range []string{"most relevant first", "newest first", "most important first (the store's order)", "most relevant first"} {
		tm.Type("r")
		waitFor(t, tm, "3 hits · "+want)
	}
	m := finish(t, tm)
	p := memoryOf(m)
	byRelevance := rememberIDs(t, engine, "working", "offsite budget", "relevance")
	if got := recalledIDs(p.list.items); got != byRelevance || got == byImportance {
		t.Errorf("by relevance %s, want %s (and not the importance order %s)", got, byRelevance, byImportance)
	}
	for i := 1; i < len(p.list.items); i++ {
		if p.list.items[i].Score > p.list.items[i-1].Score {
			t.Errorf("hit %d scores more than the one before it", i+1)
		}
	}
	// Without a prompt, r goes between importance and recency only.
	press(m, "esc")
	if p.list.want.rank != "" || p.nextRank() != "recency" {
		t.Errorf("rank %q (next %q) after leaving the prompt, want the store's", p.list.want.rank, p.nextRank())
	}
}

func TestMemoryIncludeDeleted(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	do(t, engine, "memory.forget", "", `{"store": "working", "instruction": "item w-boat"}`)
	waitFor(t, tm, "5/8", "1 forgotten kept", "forgotten hidden")
	tm.Type("d")
	// w-boat's own line: the title counts the forgotten one before the
	// list that holds it has loaded, and End would select another.
	waitFor(t, tm, "6 items (1 forgotten)", "Draft: maybe a boat trip")
	// x on a forgotten item: soft would change nothing, so the box starts
	// hard, to erase it.
	keys(tm, tea.KeyEnd)
	tm.Type("x")
	waitFor(t, tm, "mode hard", "1 item would go", "Erase it for good (hard, no undo)?")
	keys(tm, tea.KeyTab)
	waitFor(t, tm, "1 item named, 1 already forgotten", "Soft changes nothing here")
	tm.Type("y") // nothing to do: y does nothing
	keys(tm, tea.KeyTab)
	waitFor(t, tm, "Erase it for good")
	m := finish(t, tm)
	p := memoryOf(m)
	if p.forget == nil || p.forget.stage != forgetConfirming {
		t.Error("y on a soft forget of a forgotten item did something")
	}
	if got := recalledIDs(p.list.items); !strings.Contains(got, "w-boat") {
		t.Errorf("d does not show the forgotten item: %s", got)
	}
	press(m, "esc", "esc")
	if !strings.Contains(m.View(), "forgotten  Draft: maybe") {
		t.Errorf("the forgotten item is not marked:\n%s", m.View())
	}
	if it, err := getMemory(t, engine, "working", "w-boat"); err != nil || !it.Deleted {
		t.Errorf("w-boat: %+v, %v; want it kept, forgotten", it, err)
	}
}

// --- forget ---

func TestMemoryForgetSoft(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	before := capacity(t, engine, "working")
	tm.Type("foldest")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "1 item would go", "Forget it (soft)?")
	tm.Type("n")
	waitFor(t, tm, "enter shows what the instruction names")
	if got := capacity(t, engine, "working"); got != before {
		t.Fatalf("n changed the store: %+v, was %+v", got, before)
	}
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Forget it (soft)?")
	tm.Type("y")
	waitFor(t, tm, "Forgot 1 item from working (soft", "5/8", "1 forgotten kept")
	m := finish(t, tm)
	it, err := getMemory(t, engine, "working", "w-lisbon")
	if err != nil || !it.Deleted {
		t.Fatalf("w-lisbon after a soft forget: %+v, %v; want it kept, deleted", it, err)
	}
	p := memoryOf(m)
	if p.forget != nil || strings.Contains(recalledIDs(p.list.items), "w-lisbon") {
		t.Errorf("the box is still open, or the forgotten item still listed: %s", recalledIDs(p.list.items))
	}
}

func TestMemoryForgetHard(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("fitems tagged budget")
	keys(tm, tea.KeyTab) // hard
	waitFor(t, tm, "mode hard")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Erase these 2 items for good (hard, no undo)?")
	tm.Type("y")
	waitFor(t, tm, "Forgot 2 items from working (hard: erased)", "4/8")
	finish(t, tm)
	for _, id := range []string{"w-budget", "w-dinner"} {
		if _, err := getMemory(t, engine, "working", id); errs.KindOf(err) != errs.NotFound {
			t.Errorf("%s after a hard forget: %v, want NotFound", id, err)
		}
	}
	if c := capacity(t, engine, "working"); c.ItemCount != 4 || c.Deleted != 0 {
		t.Errorf("capacity %+v, want 4 live items and none kept", c)
	}
}

func TestMemoryForgetUnsupported(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	tm.Type("fthe blue ones")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `working does not understand "the blue ones". It understands:`, "oldest [N]", "to fit <n> tokens")
	m := finish(t, tm)
	if c := capacity(t, engine, "working"); c.ItemCount != 6 {
		t.Errorf("an unsupported instruction changed the store: %+v", c)
	}
	view := m.View()
	if strings.Contains(view, "episode <id>") {
		t.Error("working lists episodic's own form")
	}
	if p := memoryOf(m); p.forget == nil || p.forget.stage != forgetEditing || p.forget.input.Value() != "the blue ones" {
		t.Error("the instruction is not back for editing")
	}
	if !m.status.isError {
		t.Error("no error in the status line")
	}
}

// TestMemoryForgetPreviewFollowsTheStore: what y forgets is what shows, so
// a change of the store under a preview makes it again.
func TestMemoryForgetPreviewFollowsTheStore(t *testing.T) {
	t.Parallel()
	engine, clk, tm := startMemory(t)
	tm.Type("fitems tagged budget")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "2 items would go")
	memorize(t, engine, clk, "working", `{"id": "w-flights", "type": "fact", "text": "Flights are part of the budget.", "agent_id": "local", "tags": ["budget"]}`)
	waitFor(t, tm, "3 items would go", "the store changed: previewed again")
	tm.Type("y")
	waitFor(t, tm, "Forgot 3 items from working")
	finish(t, tm)
	if c := capacity(t, engine, "working"); c.ItemCount != 4 {
		t.Errorf("capacity %+v, want 4 live items", c)
	}
}

// --- detail ---

func TestMemoryDetail(t *testing.T) {
	t.Parallel()
	engine, clk, tm := startMemory(t)
	keys(tm, tea.KeyEnd, tea.KeyEnter) // the least important: w-boat
	waitFor(t, tm, "item w-boat", "metadata", `"people": [`, "tokens_estimate")
	m := finish(t, tm)
	view := m.View()
	for _, want := range []string{"store            working (working memory)", "type             idea", "importance       0.20",
		"timestamp        2025-11-05 10:20:00 UTC", "agent_id         local", "tags             draft", "deleted          no",
		"evicted          no", "text             Draft: maybe a boat trip on the Tagus.", `"episode": 3,`, `    "Marta",`} {
		if !strings.Contains(view, want) {
			t.Errorf("the detail lacks %q:\n%s", want, view)
		}
	}
	press(m, "esc")
	if p := memoryOf(m); p.detail != nil || !strings.Contains(m.View(), "most important first") {
		t.Error("esc did not go back to the list")
	}

	// An evicted item says so: two more items fill working (8 at most), a
	// third evicts the least important, w-boat.
	for i := range 3 {
		memorize(t, engine, clk, "working", fmt.Sprintf(`{"type": "fact", "text": "Filler %d.", "agent_id": "local", "importance": 0.9}`, i))
	}
	tm = start(t, engine, goldenWidth, goldenHeight)
	tm.Type("5d")
	waitFor(t, tm, "evicted", "Draft: maybe a boat")
	keys(tm, tea.KeyEnd, tea.KeyEnter)
	waitFor(t, tm, "item w-boat", "deleted_at")
	view = finish(t, tm).View()
	for _, want := range []string{"deleted          yes · soft-forgotten", "evicted          yes · forgotten to make room"} {
		if !strings.Contains(view, want) {
			t.Errorf("the detail of an evicted item lacks %q:\n%s", want, view)
		}
	}
}

// --- live updates ---

func TestMemoryShowsLiveMemorize(t *testing.T) {
	t.Parallel()
	engine, clk, tm := startMemory(t)
	memorize(t, engine, clk, "working", `{"type": "fact", "text": "Joe joins the offsite on March 4.", "agent_id": "local", "importance": 0.95}`)
	waitFor(t, tm, "7/8", "Joe joins the offsite")
	// Another store's memorize moves its gauge, not the list.
	memorize(t, engine, clk, "episodic", `{"type": "event", "text": "Not for the working list.", "agent_id": "local"}`)
	waitFor(t, tm, "5/20")
	m := finish(t, tm)
	p := memoryOf(m)
	if len(p.list.items) != 7 || !strings.HasPrefix(p.list.items[0].Text, "Joe joins") {
		t.Errorf("list %s, want the new item first (most important)", recalledIDs(p.list.items))
	}
	if strings.Contains(m.View(), "Not for the working list") {
		t.Error("episodic's item shows in working's list")
	}
}

// TestMemoryCatchesUpWithoutEvents: memory.configure publishes no event;
// the tab follows it once the palette closes.
func TestMemoryCatchesUpWithoutEvents(t *testing.T) {
	t.Parallel()
	_, _, tm := startMemory(t)
	tm.Type(`:memory.configure {"store": "notes", "type": "episodic"}`)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ memory.configure ok")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "3 stores")
	tm.Type(":")
	waitFor(t, tm, "[: palette]")
	keys(tm, tea.KeyCtrlU) // the palette keeps the last command
	tm.Type(`memory.configure {"store": "working", "max_items": 10}`)
	keys(tm, tea.KeyEnter)
	// Not "✓ memory.configure ok" again: that line may not change between
	// frames (the first command's result showed it), so it is not redrawn.
	// Nor `"max_items": 10` alone: the typed command shows that too, and
	// closing the palette before the answer came would race it.
	waitFor(t, tm, `"max_items": 10,`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "6/10")
	finish(t, tm)
}

// TestMemoryReloadsOncePerBurst: events arriving while a load is in flight
// cost one more load, not one each; answers to earlier loads are ignored.
func TestMemoryReloadsOncePerBurst(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedMemory(t, engine, clk)
	styles := DefaultStyles()
	p := newMemoryPane(engine, &styles)
	p.SetSize(goldenWidth, 25)
	drain(p, p.Init()) // the stores, then working's list
	if p.list.want.store != "working" || len(p.list.items) != 6 {
		t.Fatalf("store %q with %d items after the first loads", p.list.want.store, len(p.list.items))
	}
	p.loadList()
	first := p.list.req
	ev := events.Event{Name: memory.EventMemorized.Name(), Data: memory.MemorizedEvent{Store: "working", ID: "x"}}
	for range 5 {
		p.Update(ev)
	}
	if p.list.req != first || !p.list.dirty || !p.stores.dirty {
		t.Fatalf("req %d (first %d), dirty %v/%v: want the first load current and a reload owed", p.list.req, first, p.list.dirty, p.stores.dirty)
	}
	answer := memory.RememberResult{Items: []memory.Recalled{{Item: &memory.Item{ID: "answer", Text: "the first load's answer", Timestamp: goldenTime}}}}
	cmd := p.Update(resultMsg[memory.RememberResult]{pane: memoryPaneID, req: first, action: "memory.remember", value: answer})
	if cmd == nil || p.list.req == first || p.list.dirty {
		t.Fatalf("no single reload after the burst (req %d, dirty %v)", p.list.req, p.list.dirty)
	}
	// The first load answering again is stale now: the reload is current.
	p.Update(resultMsg[memory.RememberResult]{pane: memoryPaneID, req: first, action: "memory.remember", value: memory.RememberResult{Items: []memory.Recalled{}}})
	if len(p.list.items) != 1 || p.list.items[0].ID != "answer" {
		t.Errorf("a stale answer was applied: %s", recalledIDs(p.list.items))
	}
	// An event about another store leaves the list alone (its card is
	// reloaded); one about working owes the list a reload.
	reload := p.list.req
	p.Update(events.Event{Name: memory.EventForgotten.Name(), Data: memory.ForgottenEvent{Store: "episodic", IDs: []string{"e-budget"}, Mode: "soft"}})
	if p.list.req != reload || p.list.dirty {
		t.Errorf("an episodic event touched working's list (req %d, was %d; dirty %v)", p.list.req, reload, p.list.dirty)
	}
	p.Update(events.Event{Name: memory.EventForgotten.Name(), Data: memory.ForgottenEvent{Store: "working", IDs: []string{"w-boat"}, Mode: "soft"}})
	if !p.list.dirty {
		t.Error("a working event owes the list no reload")
	}
}

// drain runs a pane's commands synchronously, as the program would, and
// hands it their answers. A timer command blocks for its whole duration
// here, so a pane drained must not start long timers: chat panes under
// drain are built with a fade of 0.
func drain(p pane, cmd tea.Cmd) {
	var run func(tea.Msg)
	run = func(msg tea.Msg) {
		switch msg := msg.(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				if c != nil {
					run(c())
				}
			}
		case addressed:
			if next := p.Update(msg); next != nil {
				run(next())
			}
		}
	}
	if cmd != nil {
		run(cmd())
	}
}

// --- keys ---

func TestMemoryQTypesInInputs(t *testing.T) {
	t.Parallel()
	_, _, tm := startMemory(t)
	tm.Type("/q1?")
	waitFor(t, tm, "remember: q1?")
	keys(tm, tea.KeyEsc)
	tm.Type("fq2:")
	waitFor(t, tm, "forget: q2:")
	keys(tm, tea.KeyCtrlC)
	m := final(t, tm)
	p := memoryOf(m)
	if p.forget == nil || p.forget.input.Value() != "q2:" || p.input.Value() != "" || m.active != tabMemory || m.paletteOpen || m.help.ShowAll {
		t.Errorf("typing reached the app: forget %q, tab %d, palette %v, help %v", p.forget.input.Value(), m.active, m.paletteOpen, m.help.ShowAll)
	}
}

// --- sizes ---

// TestMemoryFitsEveryState: every state of the tab (the list, forgotten
// items shown, the remember box typing and with results, the forget box
// editing, unsupported, previewing, the detail) is exactly the terminal's
// size, and the footer keeps the keys that matter.
func TestMemoryFitsEveryState(t *testing.T) {
	t.Parallel()
	engine, _, tm := startMemory(t)
	do(t, engine, "memory.configure", "", `{"store": "a-very-long-store-name-for-the-cards", "type": "episodic"}`)
	do(t, engine, "memory.configure", "", `{"store": "notes", "type": "working"}`)
	do(t, engine, "memory.forget", "", `{"store": "working", "instruction": "item w-boat"}`)
	waitFor(t, tm, "1 forgotten", "4 stores") // the forget's event reloads the stores
	m := finish(t, tm)
	p := memoryOf(m)
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}, {Width: 100, Height: 30}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		name := func(state string) string { return fmt.Sprintf("%dx%d %s", size.Width, size.Height, state) }
		check := func(state, footer string) {
			t.Helper()
			checkScreen(t, name(state), m.View(), size.Width, size.Height)
			if size.Width >= 80 && !strings.Contains(lastLine(m.View()), footer) {
				t.Errorf("%s: the footer lacks %q: %q", name(state), footer, lastLine(m.View()))
			}
		}
		check("list", "q quit")
		press(m, "?")
		check("full help", "")
		if size.Width >= 80 && (!strings.Contains(m.View(), "fewer keys") || !strings.Contains(m.View(), "forget it")) {
			t.Errorf("%s: no full help", name("full help"))
		}
		press(m, "?", "d")
		p.list.items = append(p.list.items, memory.Recalled{Item: &memory.Item{ID: "gone", Text: strings.Repeat("long text ", 30),
			AgentID: strings.Repeat("agent", 10), Tags: []string{strings.Repeat("tag", 20)}, Deleted: true, Evicted: true, Timestamp: goldenTime}})
		check("forgotten shown", "q quit")
		press(m, "d", "/", "offsite")
		check("remember typing", "Enter remember")
		p.mode = memBrowse
		p.setPrompt("offsite")
		p.list.shown = p.list.want
		p.list.items[0].Score, p.list.items[0].Confidence = 12.5, 1
		check("remember results", "Esc back to store")
		press(m, "esc", "f", strings.Repeat("x", 300))
		check("forget editing", "Enter preview")
		p.forget.err, p.forget.forms = "working does not understand it.", []string{"oldest [N]", "newest [N]", "least important [N]",
			"item <id>", "items tagged <tag>", "older than <duration> (e.g. 30 days, 12h)", "before <date> (RFC 3339 or 2025-11-05)",
			"from agent <id>", "about <topic>", "to fit <n> tokens"}
		check("forget unsupported", "Enter preview")
		items := []*memory.Item{}
		for _, r := range p.list.items {
			items = append(items, r.Item)
		}
		p.forget.instruction = strings.Repeat("oldest ", 40)
		p.forget.showPreview(p, memory.ForgetResult{Forgotten: items, Matched: "oldest [N]", Mode: "soft", DryRun: true})
		check("forget preview", "y forget them")
		press(m, "j", "j", "tab")
		check("forget preview, scrolled, hard", "y erase them")
		press(m, "n", "esc", "enter")
		check("detail", "Esc back to list")
		press(m, "esc")
		p.setPrompt("")
		press(m, "m", strings.Repeat("long memory ", 40))
		check("memorize form", "Enter memorize")
		press(m, "tab", "tab", "tab", "9")
		press(m, "enter")
		check("memorize form, an error", "Enter memorize")
		press(m, "esc")
	}
}
