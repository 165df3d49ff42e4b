package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/conn"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

// seedGoals creates the items of the goals frames through the engine, a
// minute apart: four open ones of every priority, with due dates, tags and a
// blocking question, and a completed one the active list leaves out. Ship v1
// (goal_launch) gets a lineage of four versions, two of them made in turns.
func seedGoals(t *testing.T, engine conn.Conn, clk *clock.Fixed) {
	t.Helper()
	step := func(name, turn, args string) {
		t.Helper()
		do(t, engine, name, turn, args)
		clk.Advance(time.Minute)
	}
	step("cortex.create", "", `{"type": "goal", "id": "goal_launch", "fields": {"title": "Ship v1", "priority": "high",
		"tags": ["launch", "release"], "due_at": "2025-11-20T17:00:00Z",
		"description": "First public release: the console, the batch runner and the cortex."}}`)
	step("cortex.create", "", `{"type": "action", "id": "act_docs", "fields": {"title": "Write the user guide",
		"priority": "medium", "tags": ["docs"], "due_at": "2025-11-12T09:00:00Z", "parent": "goal_launch"}}`)
	step("cortex.create", "", `{"type": "question", "id": "q_license", "fields": {"title": "Which license do we ship under?",
		"priority": "critical", "blocking": true}}`)
	step("cortex.create", "", `{"type": "goal", "id": "goal_perf", "fields": {"title": "Make recall fast",
		"priority": "low", "status": "in_progress", "progress": 30, "tags": ["perf"]}}`)
	step("cortex.create", "", `{"type": "goal", "id": "goal_old", "fields": {"title": "Pick a name",
		"priority": "medium", "status": "completed", "progress": 100}}`)
	step("cortex.update", "turn-7", `{"id": "goal_launch", "updates": {"progress": 40}}`)
	step("cortex.update", "turn-8", `{"id": "goal_launch", "updates": {"priority": "critical", "status": "in_progress"}}`)
	step("cortex.update", "", `{"id": "goal_launch", "updates": {"tags": ["launch", "release", "q4"]}}`)
}

// getItem reads an item through the engine as principal ("" for the
// engine's agent).
func getItem(t *testing.T, engine conn.Conn, principal, id string) (*cortex.Item, error) {
	t.Helper()
	res, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: principal}, cortex.ActionGet, cortex.GetArgs{ID: id})
	return res.Item, err
}

func mustGet(t *testing.T, engine conn.Conn, id string) *cortex.Item {
	t.Helper()
	it, err := getItem(t, engine, "", id)
	if err != nil {
		t.Fatalf("cortex.get %s: %v", id, err)
	}
	return it
}

func goalsOf(m *Model) *goalsPane { return m.panes[tabGoals].(*goalsPane) }

func itemIDs(p *goalsPane) []string {
	ids := make([]string, len(p.list.items))
	for i, it := range p.list.items {
		ids[i] = it.ID
	}
	return ids
}

// startGoals seeds the items and opens the Goals tab on its list.
func startGoals(t *testing.T) (conn.Conn, *clock.Fixed, *teatest.TestModel) {
	t.Helper()
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("3")
	waitFor(t, tm, "[3 Goals]", "4 open items", "Make recall fast")
	return engine, clk, tm
}

// openLineage goes from the list to Ship v1's lineage, its latest version
// (v4) selected.
func openLineage(t *testing.T, tm *teatest.TestModel) {
	t.Helper()
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ audit chain verified", "launch, release, q4")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "lineage v1 → v4", "v4 update")
}

// --- golden frames ---

func TestGoldenGoalsList(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	m := finish(t, tm)
	requireGolden(t, m)
	// Active order: priority, then due date (none last), blocking first;
	// a child (act_docs) right under its parent.
	want := "[goal_launch act_docs q_license goal_perf]"
	if got := fmt.Sprint(itemIDs(goalsOf(m))); got != want {
		t.Errorf("list %s, want %s (the completed goal_old left out)", got, want)
	}
}

func TestGoldenGoalsDetail(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "goal_launch · v4 · owner local", "✓ audit chain verified", "launch, release, q4")
	m := finish(t, tm)
	requireGolden(t, m)
	if p := goalsOf(m); p.level != levelDetail || p.open.item == nil || p.open.item.ID != "goal_launch" {
		t.Errorf("level %d, item %v: want goal_launch's detail", p.level, p.open.item)
	}
}

func TestGoldenGoalsLineage(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	openLineage(t, tm)
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "v3 update · 2025-11-05 10:06:00", "turn turn-8", "+ critical")
	m := finish(t, tm)
	requireGolden(t, m)
}

func TestGoldenGoalsRevertConfirm(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	openLineage(t, tm)
	keys(tm, tea.KeyUp, tea.KeyUp)
	waitFor(t, tm, "v2 update", "turn turn-7")
	tm.Type("r")
	waitFor(t, tm, "Revert goal_launch to v2? This creates v5. (y/n)")
	m := finish(t, tm)
	requireGolden(t, m)
	if !goalsOf(m).Capturing() {
		t.Error("the question does not take the keyboard")
	}
}

// --- the list ---

func TestGoalsFilter(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	tm := teatest.NewTestModel(t, probing{New(engine, Options{StatusFade: time.Hour})},
		teatest.WithInitialTermSize(goldenWidth, goldenHeight))
	t.Cleanup(func() { _ = tm.Quit() })
	tm.Type("3")
	waitFor(t, tm, "4 open items")
	for _, tc := range []struct {
		filter, shown string
		want          []string
	}{
		{"status:completed", "1 item matching", []string{"goal_old"}},
		{"status:all", "5 items matching", []string{"goal_launch", "act_docs", "q_license", "goal_old", "goal_perf"}},
		{"#docs", "1 open item matching", []string{"act_docs"}},
		{"tag:launch", "1 open item matching", []string{"goal_launch"}},
		{"type:goal", "2 open items matching", []string{"goal_launch", "goal_perf"}},
		{"recall", "1 open item matching", []string{"goal_perf"}},
		{"type:question pri:critical", "1 open item matching", []string{"q_license"}},
		{"type:action license", "0 open items matching", nil},
	} {
		tm.Type("/")
		keys(tm, tea.KeyCtrlU)
		tm.Type(tc.filter)
		keys(tm, tea.KeyEnter)
		waitFor(t, tm, tc.shown+" "+tc.filter)
		ask := make(probe)
		tm.Send(ask)
		var got []string
		select {
		case got = <-ask:
		case <-time.After(waitLimit):
			t.Fatal("the program did not answer the probe")
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("filter %q lists %v, want %v", tc.filter, got, tc.want)
		}
	}
	// A filter the engine would refuse says what is wrong, and asks nothing.
	tm.Type("/")
	keys(tm, tea.KeyCtrlU)
	tm.Type("status:bogus")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ unknown status "bogus"`)
	// esc clears the filter: the open items again.
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "4 open items, most urgent first")
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	m := tm.FinalModel(t, teatest.WithFinalTimeout(waitLimit)).(probing).Model
	if p := goalsOf(m); p.list.filter.raw != "" || len(p.list.items) != 4 {
		t.Errorf("filter %q with %d items after esc, want none and 4", p.list.filter.raw, len(p.list.items))
	}
}

// probe asks the running program for the ids the goals list holds: they are
// read on the program's goroutine, as the model must not be read from the
// test's while the program runs.
type probe chan []string

// probing wraps the console to answer probes.
type probing struct{ *Model }

func (p probing) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if ask, ok := msg.(probe); ok {
		ask <- itemIDs(goalsOf(p.Model))
		return p, nil
	}
	_, cmd := p.Model.Update(msg)
	return p, cmd
}

func TestGoalsFilterTakesQAndDigits(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	tm.Type("/q1")
	waitFor(t, tm, "filter: q1")
	keys(tm, tea.KeyCtrlC)
	m := final(t, tm)
	if p := goalsOf(m); m.active != tabGoals || !p.list.editing || p.list.input.Value() != "q1" {
		t.Errorf("tab %d, editing %v, input %q: want q1 typed into the filter", m.active, p.list.editing, p.list.input.Value())
	}
}

func TestGoalsOpenAndBack(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	keys(tm, tea.KeyDown, tea.KeyDown, tea.KeyEnter) // the question, under goal_launch's child
	waitFor(t, tm, "Which license do we ship under?", "question q_license · v1", "yes (it holds up other work)")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "4 open items, most urgent first")
	m := finish(t, tm)
	p := goalsOf(m)
	if p.level != levelList || p.current() != "q_license" {
		t.Errorf("level %d on %s, want the list on q_license", p.level, p.current())
	}
}

func TestGoalsLineageSelection(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	openLineage(t, tm)
	// The diff follows the selection: each version shows what it changed,
	// who made it and in which turn.
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "v3 update", "turn turn-8", "priority  v1→v2", "+ critical")
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "v2 update", "turn turn-7", "progress  v1→v2", "+ 40%")
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "v1 create", "no turn", "title        Ship v1")
	keys(tm, tea.KeyUp) // stays on v1
	keys(tm, tea.KeyDown)
	waitFor(t, tm, "v2 update")
	m := finish(t, tm)
	p := goalsOf(m)
	if sel := p.selected(); sel == nil || sel.NewVersion != 2 {
		t.Fatalf("selected %+v, want v2", sel)
	}
	if view := m.View(); !strings.Contains(view, "− 0%") || strings.Contains(view, "+ critical") {
		t.Errorf("the diff is not v2's:\n%s", view)
	}
}

// --- revert ---

func TestGoalsRevertYes(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	openLineage(t, tm)
	keys(tm, tea.KeyUp, tea.KeyUp)
	waitFor(t, tm, "v2 update")
	tm.Type("r")
	waitFor(t, tm, "Revert goal_launch to v2? This creates v5. (y/n)")
	tm.Type("y")
	// The new version shows, selected, with what it restored.
	waitFor(t, tm, "Reverted goal_launch to v2: it is now v5.", "lineage v1 → v5", "v5 revert", "reverted from v4 to v2")
	m := finish(t, tm)
	it := mustGet(t, engine, "goal_launch")
	if it.GlobalVersion != 5 || it.Priority != "high" || it.Status != "active" || it.Progress != 40 ||
		strings.Join(it.Tags, ",") != "launch,release" {
		t.Errorf("after the revert: v%d priority %s status %s progress %d tags %v; want v5 with v2's fields",
			it.GlobalVersion, it.Priority, it.Status, it.Progress, it.Tags)
	}
	if p := goalsOf(m); p.selected() == nil || p.selected().NewVersion != 5 || p.confirm.Active() {
		t.Errorf("selected %+v, question %q: want v5 selected and no question", p.selected(), p.confirm.Question())
	}
}

func TestGoalsRevertNo(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	openLineage(t, tm)
	keys(tm, tea.KeyUp)
	waitFor(t, tm, "v3 update")
	tm.Type("r")
	waitFor(t, tm, "Revert goal_launch to v3? This creates v5. (y/n)")
	tm.Type("n")
	waitFor(t, tm, "↑/↓ version") // the footer is back to the lineage's keys
	// q answers the question too: it does not quit.
	tm.Type("r")
	waitFor(t, tm, "Revert goal_launch to v3?")
	tm.Type("q")
	waitFor(t, tm, "↑/↓ version")
	m := finish(t, tm)
	if it := mustGet(t, engine, "goal_launch"); it.GlobalVersion != 4 || it.Priority != "critical" {
		t.Errorf("v%d priority %s after n: want v4 untouched", it.GlobalVersion, it.Priority)
	}
	if p := goalsOf(m); p.confirm.Active() || p.Capturing() {
		t.Error("the question is still open")
	}
}

func TestGoalsRevertCurrentVersion(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	openLineage(t, tm)
	tm.Type("r")
	waitFor(t, tm, "v4 is the current version")
	finish(t, tm)
	if it := mustGet(t, engine, "goal_launch"); it.GlobalVersion != 4 {
		t.Errorf("v%d, want v4", it.GlobalVersion)
	}
}

// --- share and revoke ---

func TestGoalsShareAndRevoke(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	if _, err := getItem(t, engine, "bob", "goal_launch"); errs.KindOf(err) != errs.Permission {
		t.Fatalf("bob reads goal_launch before it is shared: %v", err)
	}
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ audit chain verified")
	tm.Type("s")
	waitFor(t, tm, "Share goal_launch", "permissions: read")
	tm.Type("bob")
	keys(tm, tea.KeyTab, tea.KeyCtrlU)
	tm.Type("read, write")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Shared goal_launch with bob: read, write.", "bob: read, write")
	it, err := getItem(t, engine, "bob", "goal_launch")
	if err != nil || it.GlobalVersion != 5 {
		t.Fatalf("bob's cortex.get after the share: %v, %v", it, err)
	}

	tm.Type("x")
	waitFor(t, tm, "Revoke access to goal_launch", "principal: bob", "has access: bob (read, write)")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Revoked bob's access to goal_launch.")
	m := finish(t, tm)
	if _, err := getItem(t, engine, "bob", "goal_launch"); errs.KindOf(err) != errs.Permission {
		t.Errorf("bob still reads goal_launch after the revoke: %v", err)
	}
	if p := goalsOf(m); p.form != nil || p.Capturing() {
		t.Error("the form is still open")
	}
}

func TestGoalsShareBadPermission(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✓ audit chain verified")
	tm.Type("s")
	waitFor(t, tm, "Share goal_launch")
	keys(tm, tea.KeyEnter) // no principal
	waitFor(t, tm, "✗ principal: give the agent to share with")
	tm.Type("bob")
	keys(tm, tea.KeyTab, tea.KeyCtrlU)
	tm.Type("read,admin")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ permissions: unknown permission "admin": use any of read, write, delete, share`)
	// The engine's refusals show in the form too: the owner has every
	// permission already.
	keys(tm, tea.KeyShiftTab, tea.KeyCtrlU)
	tm.Type("local")
	keys(tm, tea.KeyTab, tea.KeyCtrlU)
	tm.Type("read")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ principal: local owns "goal_launch"`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "Enter lineage")
	finish(t, tm)
	if it := mustGet(t, engine, "goal_launch"); it.GlobalVersion != 4 || len(it.ACL) != 1 {
		t.Errorf("v%d with ACL %+v: want v4 shared with nobody", it.GlobalVersion, it.ACL)
	}
	if _, err := getItem(t, engine, "bob", "goal_launch"); errs.KindOf(err) != errs.Permission {
		t.Errorf("bob reads goal_launch: %v", err)
	}
}

// --- live updates ---

func TestGoalsLiveUpdates(t *testing.T) {
	t.Parallel()
	engine, clk, tm := startGoals(t)
	// Another source creates an item: it appears in its place, no key pressed.
	clk.Advance(time.Minute)
	do(t, engine, "cortex.create", "", `{"type": "action", "id": "act_hotfix", "fields": {"title": "Hotfix the login", "priority": "critical", "due_at": "2025-11-06T08:00:00Z"}}`)
	waitFor(t, tm, "5 open items", "Hotfix the login")

	// An open item follows changes made elsewhere: its fields and lineage.
	keys(tm, tea.KeyEnter) // the cursor stayed on goal_launch, now second
	waitFor(t, tm, "goal_launch · v4")
	do(t, engine, "cortex.update", "turn-9", `{"id": "goal_launch", "updates": {"progress": 75}}`)
	waitFor(t, tm, "goal_launch · v5", "75%")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "lineage v1 → v5", "turn turn-9")

	// Completing an item takes it out of the open list.
	do(t, engine, "cortex.update", "", `{"id": "act_hotfix", "updates": {"status": "completed"}}`)
	keys(tm, tea.KeyEsc, tea.KeyEsc)
	waitFor(t, tm, "4 open items")
	m := finish(t, tm)
	if got := fmt.Sprint(itemIDs(goalsOf(m))); got != "[goal_launch act_docs q_license goal_perf]" {
		t.Errorf("list %s after act_hotfix was completed", got)
	}
}

// TestGoalsReloadsOncePerBurst: events arriving while a load is in flight
// cost one more load, not one each; answers to earlier loads are ignored.
func TestGoalsReloadsOncePerBurst(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newGoalsPane(engine, &styles)
	p.SetSize(goldenWidth, 20)
	if p.Init() == nil {
		t.Fatal("no first load")
	}
	first := p.list.load.req
	ev := events.Event{Name: cortex.EventItemMutated.Name(), Data: cortex.ItemEvent{ItemID: "x"}}
	for range 5 {
		if cmd := p.Update(ev); cmd != nil {
			if msg := cmd(); msg != nil {
				t.Fatalf("an event during a load started another: %#v", msg)
			}
		}
	}
	if p.list.load.req != first || !p.list.load.dirty {
		t.Fatalf("req %d dirty %v, want the first load still current and a reload owed", p.list.load.req, p.list.load.dirty)
	}
	cmd := p.Update(resultMsg[cortex.QueryResult]{pane: goalsPaneID, req: first, action: "cortex.active", value: cortex.QueryResult{Items: []*cortex.Item{}}})
	if cmd == nil || p.list.load.req == first || p.list.load.dirty {
		t.Fatalf("no single reload after the burst (req %d, dirty %v)", p.list.load.req, p.list.load.dirty)
	}
	// A stale answer (the first load's again) changes nothing.
	stale := cortex.QueryResult{Items: []*cortex.Item{{ID: "stale", Title: "stale"}}, Count: 1}
	p.Update(resultMsg[cortex.QueryResult]{pane: goalsPaneID, req: first, action: "cortex.active", value: stale})
	if len(p.list.items) != 0 {
		t.Errorf("a stale answer was applied: %v", itemIDs(p))
	}
}

// --- sizes ---

// TestGoalsFitsEveryState: every state of the pane (list, filter input,
// detail, lineage, revert question, share and revoke forms) is exactly the
// terminal's size at 80x24, 100x30 and 200x60 (where list and item show
// side by side), and smaller.
func TestGoalsFitsEveryState(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	openLineage(t, tm)
	m := finish(t, tm)
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 100, Height: 30}, {Width: 200, Height: 60}, {Width: 60, Height: 15}, {Width: 20, Height: 6}} {
		m.Update(size)
		check := func(state string) {
			t.Helper()
			checkScreen(t, fmt.Sprintf("%dx%d %s", size.Width, size.Height, state), m.View(), size.Width, size.Height)
		}
		check("lineage")
		press(m, "up", "r")
		check("revert question")
		press(m, "n", "s")
		check("share form")
		press(m, "esc", "x")
		check("revoke form")
		press(m, "esc", "esc")
		check("detail")
		press(m, "?")
		check("detail, full help")
		press(m, "?", "esc")
		check("list")
		press(m, "n")
		check("new item form")
		press(m, "esc", "e")
		check("edit form")
		press(m, "esc", "D")
		check("delete question")
		press(m, "n", "d")
		check("list with deleted items")
		press(m, "d")
		press(m, "/", "status:active #launch")
		check("filter input")
		press(m, "esc", "enter", "enter")
		check("lineage again")
		if size.Width >= 80 && !strings.Contains(lastLine(m.View()), "q quit") {
			t.Errorf("%dx%d: the footer lost q quit: %q", size.Width, size.Height, lastLine(m.View()))
		}
	}
}

// TestGoalsSplitAtWideSizes: from 150 columns the list stays on the left
// and the item under the cursor shows on the right, following the cursor.
func TestGoalsSplitAtWideSizes(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	tm := start(t, engine, 200, 60)
	tm.Type("3")
	waitFor(t, tm, "4 open items", "goal goal_launch · v4 · owner local")
	keys(tm, tea.KeyDown, tea.KeyDown) // past goal_launch's child
	waitFor(t, tm, "question q_license · v1")
	m := finish(t, tm)
	view := m.View()
	checkScreen(t, "200x60 split", view, 200, 60)
	line := strings.Split(view, "\n")[4]
	if !strings.Contains(line, "title") || !strings.Contains(line, "│") {
		t.Errorf("the list and the item are not side by side: %q", line)
	}
	if p := goalsOf(m); p.open.id != "q_license" || p.level != levelList {
		t.Errorf("open %s at level %d, want q_license previewed from the list", p.open.id, p.level)
	}
}

// TestGoalsShowsBrokenChain: a lineage whose hash chain does not verify
// says so, and where.
func TestGoalsShowsBrokenChain(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	styles := DefaultStyles()
	p := newGoalsPane(engine, &styles)
	p.SetSize(goldenWidth, 20)
	p.show("goal_x")
	p.level = levelDetail
	p.Update(resultMsg[cortex.ItemResult]{pane: goalsPaneID, req: p.open.load.req, action: "cortex.get",
		value: cortex.ItemResult{Item: &cortex.Item{ID: "goal_x", Type: "goal", Title: "X", GlobalVersion: 5, Owner: "local"}}})
	p.Update(resultMsg[cortex.HistoryResult]{pane: goalsPaneID, req: p.lineage.load.req, action: "cortex.history",
		value: cortex.HistoryResult{Mutations: []cortex.Mutation{}, ChainCheck: cortex.ChainCheck{Verified: false, BrokenAt: 4,
			Problem: "entry v4 was altered: its hash does not match its contents"}}})
	view := p.View()
	checkScreen(t, "detail", view, goldenWidth, 20)
	if !strings.Contains(view, "✗ audit chain broken at v4: entry v4 was altered") {
		t.Errorf("the broken chain is not shown:\n%s", view)
	}
}

// TestGoalsFieldValuesAreTheRecordedOnes: the detail formats each field
// from the value the audit trail records (the item's JSON), so that a field
// and its lineage's diff read alike.
func TestGoalsFieldValuesAreTheRecordedOnes(t *testing.T) {
	t.Parallel()
	due := time.Date(2025, 11, 20, 17, 0, 0, 0, time.FixedZone("", 2*3600))
	for _, it := range []*cortex.Item{
		{ID: "g", Title: "Ship v1", Description: "d", Progress: 40, Priority: "high", Status: "active", DueAt: &due,
			Blocking: true, Tags: []string{"launch", "q4"}, Org: "acme", Parent: "p", DeletedAt: &due},
		{ID: "empty", Tags: []string{}},
		{ID: "nil tags"},
	} {
		all, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(slices.Clone(detailFields), "deleted_at") {
			v, err := json.Marshal(fieldValue(it, f))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%q:%s", f, v); !strings.Contains(string(all), want) {
				t.Errorf("%s: %s is not in the item's JSON %s", it.ID, want, all)
			}
		}
	}
}
