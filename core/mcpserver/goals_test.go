package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/errs"
)

// newServer returns a server over e, closed when the test ends (before
// the engine closes: cleanups run last first).
func newServer(t *testing.T, e *core.Engine, opts Options) *Server {
	t.Helper()
	s := New(e, opts)
	t.Cleanup(s.Close)
	return s
}

// itemAs reads item id directly from the engine as agent.
func itemAs(t *testing.T, e *core.Engine, agent, id string) *cortex.Item {
	t.Helper()
	res, err := conn.CallAs(t.Context(), e, conn.Request{Principal: agent}, cortex.ActionGet, cortex.GetArgs{ID: id})
	if err != nil {
		t.Fatalf("cortex.get %s as %s: %v", id, agent, err)
	}
	return res.Item
}

// goalsOf returns every goal agent may read, straight from the engine.
func goalsOf(t *testing.T, e *core.Engine, agent string) []*cortex.Item {
	t.Helper()
	res, err := conn.CallAs(t.Context(), e, conn.Request{Principal: agent}, cortex.ActionQuery, cortex.Query{Type: "goal", IncludeDeleted: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Items
}

// createGoal creates a goal through the create_goal tool.
func createGoal(t *testing.T, cs *mcp.ClientSession, args map[string]any) Goal {
	t.Helper()
	var out GoalOutput
	if res := callTool(t, cs, "create_goal", args, &out); res.IsError {
		t.Fatalf("create_goal %v: %v", args, toolErr(t, res))
	}
	return out.Goal
}

// wantToolError checks a failed call's kind and that its message names
// what it should.
func wantToolError(t *testing.T, res *mcp.CallToolResult, kind errs.Kind, mentions string) ToolError {
	t.Helper()
	te := toolErr(t, res)
	if te.Kind != kind || !strings.Contains(te.Message, mentions) {
		t.Fatalf("tool error = %s: %s; want a %s mentioning %q", te.Kind, te.Message, kind, mentions)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, string(kind)+": ") {
		t.Errorf("tool error text %q does not start with its kind", text)
	}
	return te
}

func TestCreateGoalStoresAGoalTheAgentOwns(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Ship the MCP server", "priority": "high", "tags": []string{"mcp"},
		"due_at": "2025-11-06T17:00:00Z", "progress": 10})
	if g.ID == "" || g.Title != "Ship the MCP server" || g.Priority != "high" || g.Owner != "alice" || g.Version != 1 ||
		g.Progress != 10 || g.Status != "active" || g.DueAt != "2025-11-06T17:00:00Z" || !slices.Equal(g.Tags, []string{"mcp"}) {
		t.Fatalf("goal = %+v", g)
	}
	it := itemAs(t, e, "alice", g.ID)
	if it.Type != "goal" || it.Title != "Ship the MCP server" || it.Owner != "alice" {
		t.Errorf("stored item = %+v; want alice's goal", it)
	}
}

func TestCreateGoalRefusesBadInputAndStoresNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	for _, c := range []struct {
		name     string
		args     map[string]any
		mentions string
	}{
		{"missing title", map[string]any{"priority": "high"}, "title"},
		{"title of the wrong type", map[string]any{"title": 5}, "title"},
		{"unknown priority", map[string]any{"title": "x", "priority": "urgent"}, "priority"},
		{"progress out of range", map[string]any{"title": "x", "progress": 150}, "progress"},
		{"due_at not a time", map[string]any{"title": "x", "due_at": "tomorrow"}, "due_at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantToolError(t, callTool(t, cs, "create_goal", c.args, nil), errs.Validation, c.mentions)
		})
	}
	if goals := goalsOf(t, e, "alice"); len(goals) != 0 {
		t.Errorf("goals stored after failed calls: %+v", goals)
	}
}

func TestUpdateGoalChangesOnlyTheGivenFields(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Write the docs", "description": "all of them"})
	var out UpdateGoalOutput
	res := callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": g.Version, "progress": 40, "status": "in_progress"}, &out)
	if res.IsError {
		t.Fatal(toolErr(t, res))
	}
	if out.Goal.Version != 2 || out.Goal.Progress != 40 || out.Goal.Status != "in_progress" || out.Goal.Title != "Write the docs" ||
		out.Goal.Description != "all of them" || out.Merged {
		t.Fatalf("updated goal = %+v, merged %v", out.Goal, out.Merged)
	}
	if it := itemAs(t, e, "alice", g.ID); it.Progress != 40 || it.GlobalVersion != 2 {
		t.Errorf("stored = progress %d, v%d; want 40, v2", it.Progress, it.GlobalVersion)
	}
}

func TestUpdateGoalMergesAChangeToAnotherField(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Merge me"})
	callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": 1, "progress": 10}, nil)
	var out UpdateGoalOutput
	if res := callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": 1, "title": "Merged"}, &out); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	if !out.Merged || out.Goal.Version != 3 || out.Goal.Title != "Merged" || out.Goal.Progress != 10 {
		t.Errorf("goal = %+v, merged %v; want both changes at v3, merged", out.Goal, out.Merged)
	}
}

func TestUpdateGoalWithAStaleVersionReturnsTheCurrentGoal(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Contended"})
	callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": 1, "progress": 50}, nil)
	before := itemAs(t, e, "alice", g.ID)

	te := wantToolError(t, callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": 1, "progress": 20}, nil),
		errs.Conflict, "progress")
	raw, err := json.Marshal(te.Details["current"])
	if err != nil {
		t.Fatal(err)
	}
	var current Goal
	if err := json.Unmarshal(raw, &current); err != nil {
		t.Fatalf("details.current %s: %v", raw, err)
	}
	if current.ID != g.ID || current.Version != 2 || current.Progress != 50 || current.Title != "Contended" {
		t.Errorf("details.current = %+v; want the goal at v2 with progress 50", current)
	}
	if after := itemAs(t, e, "alice", g.ID); after.GlobalVersion != before.GlobalVersion || after.Progress != 50 {
		t.Errorf("the conflict changed the goal: v%d progress %d", after.GlobalVersion, after.Progress)
	}
	// Merging: retry with the current version.
	var out UpdateGoalOutput
	if res := callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "expected_version": current.Version, "progress": 70}, &out); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	if out.Goal.Version != 3 || out.Goal.Progress != 70 {
		t.Errorf("retried update = %+v", out.Goal)
	}
}

func TestUpdateGoalRefusesBadInputAndChangesNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Steady"})
	act, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "action", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"an action"`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		args     map[string]any
		kind     errs.Kind
		mentions string
	}{
		{"missing id", map[string]any{"progress": 5}, errs.Validation, "id"},
		{"progress of the wrong type", map[string]any{"id": g.ID, "progress": "half"}, errs.Validation, "progress"},
		{"nothing to update", map[string]any{"id": g.ID}, errs.Validation, "updates"},
		{"unknown status", map[string]any{"id": g.ID, "status": "done"}, errs.Validation, "status"},
		{"version ahead of the goal's", map[string]any{"id": g.ID, "expected_version": 9, "progress": 5}, errs.Validation, "expected_version"},
		{"unknown goal id", map[string]any{"id": "no-such-goal", "progress": 5}, errs.NotFound, "no-such-goal"},
		{"an item that is not a goal", map[string]any{"id": act.Item.ID, "progress": 5}, errs.NotFound, "not a goal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantToolError(t, callTool(t, cs, "update_goal", c.args, nil), c.kind, c.mentions)
		})
	}
	if it := itemAs(t, e, "alice", g.ID); it.GlobalVersion != 1 || it.Progress != 0 || it.Status != "active" {
		t.Errorf("failed updates changed the goal: %+v", it)
	}
	if it := itemAs(t, e, "alice", act.Item.ID); it.GlobalVersion != 1 {
		t.Errorf("update_goal changed an action: %+v", it)
	}
}

func TestAnAgentCannotSeeOrChangeAnotherAgentsUnsharedGoal(t *testing.T) {
	e := newEngine(t)
	bobs, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"bob's secret"`)}})
	if err != nil {
		t.Fatal(err)
	}
	id := bobs.Item.ID
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	denied := func(res *mcp.CallToolResult) {
		t.Helper()
		if te := toolErr(t, res); te.Kind != errs.Permission && te.Kind != errs.NotFound {
			t.Errorf("tool error = %s: %s; want a PermissionError or NotFoundError", te.Kind, te.Message)
		} else if strings.Contains(te.Message, "bob's secret") {
			t.Errorf("the refusal shows the goal: %s", te.Message)
		}
	}
	denied(callTool(t, cs, "update_goal", map[string]any{"id": id, "title": "alice's now"}, nil))
	denied(callTool(t, cs, "goal_history", map[string]any{"id": id}, nil))
	var active ActiveGoalsOutput
	callTool(t, cs, "active_goals", map[string]any{}, &active)
	if active.Count != 0 || len(active.Goals) != 0 {
		t.Errorf("alice's active goals = %+v; want none of bob's", active)
	}
	if it := itemAs(t, e, "bob", id); it.GlobalVersion != 1 || it.Title != "bob's secret" {
		t.Errorf("bob's goal changed: %+v", it)
	}
}

func TestActiveGoalsListsOpenGoalsMostUrgentFirst(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	low := createGoal(t, cs, map[string]any{"title": "Tidy up", "priority": "low"})
	critical := createGoal(t, cs, map[string]any{"title": "Fix the outage", "priority": "critical"})
	createGoal(t, cs, map[string]any{"title": "Already done", "status": "completed"})
	var out ActiveGoalsOutput
	if res := callTool(t, cs, "active_goals", map[string]any{}, &out); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	var ids []string
	for _, g := range out.Goals {
		ids = append(ids, g.ID)
	}
	if out.Count != 2 || !slices.Equal(ids, []string{critical.ID, low.ID}) {
		t.Errorf("active goals = %v (count %d); want the critical one, then the low one", ids, out.Count)
	}
	wantToolError(t, callTool(t, cs, "active_goals", map[string]any{"priority": []string{"urgent"}}, nil), errs.Validation, "priority")
	wantToolError(t, callTool(t, cs, "active_goals", map[string]any{"limit": "ten"}, nil), errs.Validation, "limit")
}

func TestGoalHistoryListsEveryVersionWithItsChanges(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "Grow"})
	callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "progress": 30}, nil)
	callTool(t, cs, "update_goal", map[string]any{"id": g.ID, "title": "Grow up", "progress": 60}, nil)
	var out GoalHistoryOutput
	if res := callTool(t, cs, "goal_history", map[string]any{"id": g.ID}, &out); res.IsError {
		t.Fatal(toolErr(t, res))
	}
	if out.ID != g.ID || !out.ChainVerified || len(out.Versions) != 3 {
		t.Fatalf("history = %+v; want 3 verified versions", out)
	}
	v3 := out.Versions[2]
	if out.Versions[0].Kind != "create" || v3.Version != 3 || v3.Previous != 2 || v3.Kind != "update" || v3.By != "alice" {
		t.Errorf("versions = %+v", out.Versions)
	}
	changes := map[string]FieldChange{}
	for _, c := range v3.Changes {
		changes[c.Field] = c
	}
	if changes["title"].Old != "Grow" || changes["title"].New != "Grow up" || changes["progress"].Old != float64(30) || changes["progress"].New != float64(60) {
		t.Errorf("v3 changes = %+v", v3.Changes)
	}
	wantToolError(t, callTool(t, cs, "goal_history", map[string]any{"id": "nope"}, nil), errs.NotFound, "nope")
	wantToolError(t, callTool(t, cs, "goal_history", map[string]any{}, nil), errs.Validation, "id")
}

func TestActiveGoalsIncludeGoalsSharedWithTheAgent(t *testing.T) {
	e := newEngine(t)
	bobs, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"shared with alice"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionShare,
		cortex.ShareArgs{ID: bobs.Item.ID, Principal: "alice", Permissions: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	var out ActiveGoalsOutput
	callTool(t, cs, "active_goals", map[string]any{}, &out)
	if out.Count != 1 || out.Goals[0].ID != bobs.Item.ID || out.Goals[0].Owner != "bob" {
		t.Errorf("active goals = %+v; want bob's shared goal", out)
	}
	// Read, not write: alice cannot change it.
	if te := toolErr(t, callTool(t, cs, "update_goal", map[string]any{"id": bobs.Item.ID, "progress": 5}, nil)); te.Kind != errs.Permission {
		t.Errorf("update of a read-only share = %s: %s; want a PermissionError", te.Kind, te.Message)
	}
}

func TestGoalHistoryRefusesAnIdOfTheWrongType(t *testing.T) {
	cs := connect(t, newServer(t, newEngine(t), Options{Agent: "alice"}))
	wantToolError(t, callTool(t, cs, "goal_history", map[string]any{"id": 7}, nil), errs.Validation, "id")
}
