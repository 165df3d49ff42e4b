package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
)

// requireGoldenAt checks a frame of another size than the usual goldens
// (120x36, 80x24) against testdata/<name>.golden.
func requireGoldenAt(t *testing.T, name string, m *Model, width, height int) {
	t.Helper()
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	view := m.View()
	checkScreen(t, name, view, width, height)
	got := screenText(view)
	path := filepath.Join(goldenDir, name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("frame differs from %s (go test ./tui -update rewrites it)\n%s", path, lineDiff(string(want), got))
	}
}

// rawFields decodes a JSON object of item fields.
func rawFields(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// typeInto replaces the focused field's text with text.
func typeInto(tm *teatest.TestModel, text string) {
	keys(tm, tea.KeyCtrlU)
	if text != "" {
		tm.Type(text)
	}
}

// TestGoalsNewFormCreatesAGoal: n opens the form on the title; what is
// typed becomes a goal, the list shows it and the cursor is on it.
func TestGoalsNewFormCreatesAGoal(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	tm.Type("n")
	waitFor(t, tm, "New item", "type:", "title:", "priority:", "progress:", "Enter create")
	tm.Type("Plan the launch party")
	keys(tm, tea.KeyTab)
	tm.Type("high") // typed over "medium", not added to it
	keys(tm, tea.KeyTab, tea.KeyTab)
	tm.Type("2025-11-30")
	keys(tm, tea.KeyTab)
	tm.Type("Launch, party")
	keys(tm, tea.KeyTab)
	tm.Type("10") // typed over "0"
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Created goal", "Plan the launch party", "5 open items")
	m := finish(t, tm)
	p := goalsOf(m)
	if p.edit != nil || p.Capturing() {
		t.Error("the form is still open")
	}
	res, err := conn.Call(context.Background(), engine, cortex.ActionQuery, cortex.Query{Text: "party"})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("cortex.query party: %v, %v", res.Items, err)
	}
	it := res.Items[0]
	due := time.Date(2025, 11, 30, 23, 59, 0, 0, time.UTC)
	if it.Type != "goal" || it.Priority != "high" || it.Status != "active" || it.Progress != 10 ||
		fmt.Sprint(it.Tags) != "[launch party]" || it.DueAt == nil || !it.DueAt.Equal(due) || it.Parent != "" {
		t.Errorf("created %+v", it)
	}
	if p.current() != it.ID {
		t.Errorf("cursor on %s, want the new %s", p.current(), it.ID)
	}
}

// TestGoldenGoalsItemForm: the new item form under the list, at 120x36
// and 80x24, with a mistake named.
func TestGoldenGoalsItemForm(t *testing.T) {
	t.Parallel()
	_, _, tm := startGoals(t)
	tm.Type("n")
	waitFor(t, tm, "New item")
	tm.Type("Plan the launch party")
	keys(tm, tea.KeyTab, tea.KeyTab, tea.KeyTab)
	tm.Type("soon")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ due: "soon" is not a date`)
	m := finish(t, tm)
	requireGoldenAt(t, "TestGoldenGoalsItemForm_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoldenGoalsItemForm_80x24", m, 80, 24)
}

// TestGoalsFormNamesTheFieldToFix: every mistake names its field and the
// fix, and nothing is stored until it is fixed.
func TestGoalsFormNamesTheFieldToFix(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	tm.Type("n")
	waitFor(t, tm, "New item")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "✗ title: give the item a title")
	tm.Type("Broken")
	keys(tm, tea.KeyTab)
	typeInto(tm, "urgent")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ priority: "urgent" is not a priority: use critical, high, medium, low`)
	typeInto(tm, "low")
	keys(tm, tea.KeyTab, tea.KeyTab)
	typeInto(tm, "next week")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ due: "next week" is not a date: use YYYY-MM-DD or YYYY-MM-DD HH:MM`)
	typeInto(tm, "")
	keys(tm, tea.KeyTab, tea.KeyTab)
	typeInto(tm, "150")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, `✗ progress: "150" is not a percentage: give a whole number from 0 to 100`)
	typeInto(tm, "0")
	keys(tm, tea.KeyTab)
	typeInto(tm, "no_such_item")
	keys(tm, tea.KeyEnter)
	// The engine's refusal shows in the form too.
	waitFor(t, tm, `parent`, `no_such_item`)
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "Enter open")
	finish(t, tm)
	if res, err := conn.Call(context.Background(), engine, cortex.ActionQuery, cortex.Query{Text: "broken"}); err != nil || len(res.Items) != 0 {
		t.Errorf("something was stored: %v, %v", res.Items, err)
	}
}

// TestGoalsEditFormSavesTheChangedFields: e fills the form with the item;
// enter sends only what changed, based on the version shown.
func TestGoalsEditFormSavesTheChangedFields(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	tm.Type("e")
	waitFor(t, tm, "Edit goal_launch", "Ship v1", "2025-11-20 17:00", "launch, release, q4", "40")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "nothing changed")
	keys(tm, tea.KeyDown, tea.KeyDown, tea.KeyDown, tea.KeyDown, tea.KeyDown)
	typeInto(tm, "85")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "Saved goal_launch: it is now v5.")
	finish(t, tm)
	it := mustGet(t, engine, "goal_launch")
	if it.Progress != 85 || it.FieldChangedAt["progress"] != 5 || it.FieldChangedAt["due_at"] != 1 || it.FieldChangedAt["tags"] != 4 {
		t.Errorf("v%d progress %d, changed at %v: want only progress changed in v5", it.GlobalVersion, it.Progress, it.FieldChangedAt)
	}
}

// TestGoalsCompleteAndDelete: c completes the item under the cursor; D
// asks first (n keeps it), y deletes it; d shows deleted items.
func TestGoalsCompleteAndDelete(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	keys(tm, tea.KeyDown) // act_docs
	tm.Type("c")
	waitFor(t, tm, "Completed act_docs.", "3 open items")
	if it := mustGet(t, engine, "act_docs"); it.Status != "completed" {
		t.Fatalf("act_docs is %s", it.Status)
	}
	tm.Type("D")
	waitFor(t, tm, `Delete q_license "Which license do we ship under?"?`, "y delete")
	tm.Type("n")
	waitFor(t, tm, "Enter open")
	if it := mustGet(t, engine, "q_license"); it.DeletedAt != nil {
		t.Fatal("n deleted the item")
	}
	tm.Type("D")
	waitFor(t, tm, "Delete q_license")
	tm.Type("y")
	waitFor(t, tm, "Deleted q_license. d shows deleted items.", "2 open items")
	if _, err := getItem(t, engine, "", "q_license"); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("q_license after the delete: %v", err)
	}
	tm.Type("d")
	waitFor(t, tm, "3 items, deleted ones too (d hides them)", "deleted")
	m := finish(t, tm)
	if got := fmt.Sprint(itemIDs(goalsOf(m))); !strings.Contains(got, "q_license") {
		t.Errorf("d lists %s, without the deleted q_license", got)
	}
}

// TestGoalsListShowsChildrenAndLateItems: a child sits under its parent,
// an item past its due date by the engine's clock (and not done) reads
// late, and the detail lists the children. The 120x36 and 80x24 frames.
func TestGoalsListShowsChildrenAndLateItems(t *testing.T) {
	t.Parallel()
	engine, clk := newEngine(t)
	seedGoals(t, engine, clk)
	do(t, engine, "cortex.create", "", `{"type": "question", "id": "q_venue", "fields": {"title": "Which venue?", "parent": "goal_launch", "due_at": "2025-11-30T12:00:00Z"}}`)
	clk.Set(time.Date(2025, 11, 15, 9, 0, 0, 0, time.UTC)) // act_docs was due on the 12th
	tm := start(t, engine, 120, 36)
	tm.Type("3")
	waitFor(t, tm, "5 open items", "Nov 12 09:00 late")
	m := finish(t, tm)
	requireGoldenAt(t, "TestGoalsListLate_120x36", m, 120, 36)
	requireGoldenAt(t, "TestGoalsListLate_80x24", m, 80, 24)
	p := goalsOf(m)
	if got := fmt.Sprint(itemIDs(p)); got != "[goal_launch act_docs q_venue q_license goal_perf]" {
		t.Errorf("list %s: want goal_launch's children under it", got)
	}
	view := m.View()
	if strings.Count(view, " late") != 1 {
		t.Errorf("want act_docs alone marked late:\n%s", view)
	}
}

// TestGoalsDetailListsChildren: the detail says which items are under
// the open one, and n there makes a new one under it.
func TestGoalsDetailListsChildren(t *testing.T) {
	t.Parallel()
	engine, _, tm := startGoals(t)
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "1 child (n adds one)", "└ Write the user guide · action act_docs · active")
	tm.Type("n")
	waitFor(t, tm, "parent:", "goal_launch")
	tm.Type("Book the venue")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "2 children", "└ Book the venue")
	finish(t, tm)
	res, err := conn.Call(context.Background(), engine, cortex.ActionQuery, cortex.Query{Parent: "goal_launch"})
	if err != nil || res.Count != 2 {
		t.Errorf("children of goal_launch: %d, %v", res.Count, err)
	}
}

// TestGoalsEmptySaysNCreatesAGoal: the empty list says which key to press.
func TestGoalsEmptySaysNCreatesAGoal(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("3")
	waitFor(t, tm, "No open goals, actions or questions. n creates a goal.")
	tm.Type("n")
	waitFor(t, tm, "New item")
	tm.Type("First goal")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "1 open item")
	finish(t, tm)
}

// TestGoalsRevokedItemIsNoLongerShared: an item another agent shares
// appears in the list; open in the detail, it is revoked by its owner: the
// pane follows the event and says plainly that it is no longer shared,
// with no PermissionError.
func TestGoalsRevokedItemIsNoLongerShared(t *testing.T) {
	t.Parallel()
	engine, _ := newEngine(t)
	tm := start(t, engine, goldenWidth, goldenHeight)
	tm.Type("3")
	waitFor(t, tm, "n creates a goal")
	// Bob's item shows once he shares it, no key pressed.
	if _, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", ID: "bob_goal", Fields: rawFields(t, `{"title": "Bob's shared goal"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: "bob"}, cortex.ActionShare,
		cortex.ShareArgs{ID: "bob_goal", Principal: "local", Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "Bob's shared goal")
	keys(tm, tea.KeyEnter)
	waitFor(t, tm, "owner bob")
	if _, err := conn.CallAs(context.Background(), engine, conn.Request{Principal: "bob"}, cortex.ActionRevoke,
		cortex.RevokeArgs{ID: "bob_goal", Principal: "local"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tm, "bob_goal is no longer shared with you.")
	keys(tm, tea.KeyEsc)
	waitFor(t, tm, "n creates a goal")
	m := finish(t, tm)
	if strings.Contains(m.View(), "PermissionError") || strings.Contains(m.View(), "✗") {
		t.Errorf("a raw error shows:\n%s", m.View())
	}
}
