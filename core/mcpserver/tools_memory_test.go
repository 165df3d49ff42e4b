package mcpserver

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

// text is a result's text content, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// badCall is one bad input to a tool and what its error must say.
type badCall struct {
	name string
	args map[string]any
	// kind is the engram error kind the tool error carries; "" for inputs
	// the go-sdk refuses before the tool runs (a missing required field,
	// a wrong type), whose text must name field.
	kind  errs.Kind
	field string
}

// checkBad calls tool with each bad input and checks the error names its
// field, and that snapshot (what is stored) is the same after as before.
func checkBad(t *testing.T, cs *mcp.ClientSession, tool string, cases []badCall, snapshot func() string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot()
			res := callTool(t, cs, tool, c.args, nil)
			if !res.IsError {
				t.Fatalf("%s %v succeeded; want an error about %s", tool, c.args, c.field)
			}
			if c.kind == "" {
				if msg := text(res); !strings.Contains(msg, `"`+c.field+`"`) && !strings.Contains(msg, "/properties/"+c.field) {
					t.Errorf("%s %v: error %q does not name the field %s", tool, c.args, text(res), c.field)
				}
			} else {
				te := toolErr(t, res)
				if te.Kind != c.kind {
					t.Errorf("%s %v: error kind %s (%s); want %s", tool, c.args, te.Kind, te.Message, c.kind)
				}
				if c.field != "" && (te.Details["field"] != c.field || !strings.HasPrefix(te.Message, c.field)) && c.kind == errs.Validation {
					t.Errorf("%s %v: error %q (details %v) does not name the field %s", tool, c.args, te.Message, te.Details, c.field)
				}
				if c.field != "" && !strings.Contains(te.Message, c.field) && c.kind != errs.Validation {
					t.Errorf("%s %v: error %q does not mention %s", tool, c.args, te.Message, c.field)
				}
				if !strings.HasPrefix(text(res), string(c.kind)+": ") {
					t.Errorf("%s %v: text %q does not start with the kind", tool, c.args, text(res))
				}
			}
			if after := snapshot(); after != before {
				t.Errorf("%s %v changed what is stored:\nbefore %s\nafter  %s", tool, c.args, before, after)
			}
		})
	}
}

// memorySnapshot is every item of every store, forgotten ones included,
// as JSON: what a failed call must not change.
func memorySnapshot(t *testing.T, e *core.Engine) func() string {
	return func() string {
		t.Helper()
		stores, err := conn.Call(t.Context(), e, memory.ActionStores, action.None{})
		if err != nil {
			t.Fatal(err)
		}
		var all []any
		for _, st := range stores.Stores {
			res, err := conn.Call(t.Context(), e, memory.ActionRemember, memory.RememberArgs{Store: st.Store, Limit: 1000, IncludeDeleted: true})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, st, res.Items)
		}
		raw, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
}

func TestRememberKeepsAFactInTheDefaultAgentsWorkingStore(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var out RememberOutput
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats.", "type": "preference"}, &out)
	if out.Ref != "working/"+out.Item.ID || out.Item.Type != "preference" || out.Item.Agent != core.DefaultAgent {
		t.Fatalf("remember = %+v; want the default agent's preference in the built-in working store", out)
	}
	got, err := conn.Call(t.Context(), e, memory.ActionGet, memory.GetArgs{Store: "working", ID: out.Item.ID})
	if err != nil || got.Item == nil || got.Item.Text != "Prefers window seats." {
		t.Fatalf("memory.get %s = %+v, %v; want the item remembered", out.Item.ID, got, err)
	}
}

func TestRememberMakesAnotherAgentItsOwnWorkingStore(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	var none RecallOutput
	callTool(t, cs, "recall", map[string]any{"query": "Porto"}, &none)
	if len(none.Items) != 0 {
		t.Fatalf("recall before remembering anything = %+v; want nothing", none.Items)
	}
	// A refused first item leaves no store behind.
	if res := callTool(t, cs, "remember", map[string]any{"text": " "}, nil); !res.IsError {
		t.Fatal("remember of blank text succeeded")
	}
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, memory.ActionCapacity, memory.CapacityArgs{Store: "working-alice"}); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("after a refused remember, memory.capacity working-alice: %v; want NotFoundError", err)
	}
	var out RememberOutput
	callTool(t, cs, "remember", map[string]any{"text": "The user's sister Ana lives in Porto.", "tags": []string{"family"}, "importance": 0.9}, &out)
	if out.Item.Text != "The user's sister Ana lives in Porto." || out.Item.Type != "fact" || out.Item.Agent != "alice" ||
		out.Item.Importance != 0.9 || !reflect.DeepEqual(out.Item.Tags, []string{"family"}) || out.Ref != "working-alice/"+out.Item.ID {
		t.Fatalf("remember = %+v; want alice's fact in her working store", out)
	}
	as := conn.Request{Principal: "alice"}
	got, err := conn.CallAs(t.Context(), e, as, memory.ActionGet, memory.GetArgs{Store: "working-alice", ID: out.Item.ID})
	if err != nil || got.Item == nil || got.Item.Text != out.Item.Text {
		t.Fatalf("memory.get %s = %+v, %v; want the item remembered", out.Item.ID, got, err)
	}
	c, err := conn.CallAs(t.Context(), e, as, memory.ActionCapacity, memory.CapacityArgs{Store: "working-alice"})
	def := memory.DefaultWorking()
	if err != nil || c.Type != "working" || c.MaxItems != def.MaxItems || c.MaxTokens != def.TokenBudget || c.OnFull != def.OnFull {
		t.Errorf("alice's store = %+v, %v; want a working store with the built-in one's limits", c, err)
	}
	// The built-in store is the default agent's: alice wrote nothing there.
	if res, err := conn.Call(t.Context(), e, memory.ActionRemember, memory.RememberArgs{Store: "working"}); err != nil || len(res.Items) != 0 {
		t.Errorf("the built-in working store holds %+v, %v; want nothing", res, err)
	}
	var rec RecallOutput
	callTool(t, cs, "recall", map[string]any{"query": "Porto"}, &rec)
	if len(rec.Items) != 1 || rec.Items[0].ID != out.Item.ID {
		t.Errorf("alice's recall = %+v; want her item", rec.Items)
	}
	var wm WorkingMemoryOutput
	callTool(t, cs, "working_memory", map[string]any{"input": "Should I visit Porto?"}, &wm)
	if !strings.Contains(wm.System, "Ana lives in Porto") {
		t.Errorf("alice's working memory %q does not carry her memory", wm.System)
	}
}

func TestRememberRefusesBadInputAndStoresNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats."}, nil)
	checkBad(t, cs, "remember", []badCall{
		{name: "no text", args: map[string]any{"store": "working"}, field: "text"},
		{name: "text of the wrong type", args: map[string]any{"text": 42}, field: "text"},
		{name: "importance of the wrong type", args: map[string]any{"text": "x", "importance": "high"}, field: "importance"},
		{name: "importance out of range", args: map[string]any{"text": "x", "importance": 2}, kind: errs.Validation, field: "importance"},
		{name: "blank text", args: map[string]any{"text": "  "}, kind: errs.Validation, field: "text"},
		{name: "unknown store", args: map[string]any{"text": "x", "store": "nope"}, kind: errs.NotFound, field: "nope"},
		// An MCP client acts as its connection's agent, never as another.
		{name: "acting as another agent", args: map[string]any{"text": "x", "as": "bob"}, field: "as"},
	}, memorySnapshot(t, e))
}

func TestRecallRanksItemsAndSaysWhy(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"id": "sister", "text": "The user's sister Ana lives in Porto.", "importance": 0.9}, nil)
	callTool(t, cs, "remember", map[string]any{"id": "flight", "text": "Booked a flight to Porto for December 12.", "importance": 0.6}, nil)
	callTool(t, cs, "remember", map[string]any{"id": "seat", "text": "Prefers window seats.", "importance": 0.4}, nil)
	var out RecallOutput
	callTool(t, cs, "recall", map[string]any{"query": "trips to Porto"}, &out)
	if len(out.Items) != 2 || out.Items[0].ID != "sister" || out.Items[1].ID != "flight" {
		t.Fatalf("recall = %+v; want sister then flight (both mention Porto; by importance)", out.Items)
	}
	for _, it := range out.Items {
		if it.Score <= 0 || it.Confidence <= 0 || !reflect.DeepEqual(it.Why.Terms, []string{"porto"}) || it.Why.Rank != "importance" ||
			it.Why.Lexical <= 0 || it.Why.Importance != it.Importance || !strings.Contains(it.Why.Text, "porto") {
			t.Errorf("recalled %s = %+v; want a score, the term porto, ranked by importance", it.ID, it)
		}
		sum := 0.0
		for _, p := range it.Why.Parts {
			sum += p.Contribution
		}
		if len(it.Why.Parts) == 0 || math.Abs(sum-it.Score) > 1e-5 {
			t.Errorf("recalled %s: parts %+v; want parts adding up to the score %v", it.ID, it.Why.Parts, it.Score)
		}
	}
	callTool(t, cs, "recall", map[string]any{"query": "Porto", "rank": "recency", "limit": 1}, &out)
	if len(out.Items) != 1 || out.Items[0].ID != "flight" || out.Items[0].Why.Rank != "recency" {
		t.Errorf("recall by recency, one = %+v; want flight, the newest", out.Items)
	}
}

func TestRecallRefusesBadInput(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats."}, nil)
	checkBad(t, cs, "recall", []badCall{
		{name: "limit of the wrong type", args: map[string]any{"query": "seats", "limit": "ten"}, field: "limit"},
		{name: "negative limit", args: map[string]any{"query": "seats", "limit": -1}, kind: errs.Validation, field: "limit"},
		{name: "unknown rank", args: map[string]any{"query": "seats", "rank": "best"}, kind: errs.Validation, field: "rank"},
		{name: "unknown store", args: map[string]any{"query": "seats", "store": "nope"}, kind: errs.NotFound, field: "nope"},
	}, memorySnapshot(t, e))
}

func TestForgetPreviewsUntilToldNotTo(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	var kept RememberOutput
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats.", "tags": []string{"travel"}}, &kept)
	callTool(t, cs, "remember", map[string]any{"text": "Likes green tea."}, nil)
	snapshot := memorySnapshot(t, e)
	before := snapshot()
	var out ForgetOutput
	callTool(t, cs, "forget", map[string]any{"id": kept.Item.ID}, &out)
	if !out.DryRun || len(out.Forgotten) != 1 || out.Forgotten[0].ID != kept.Item.ID {
		t.Fatalf("forget without dry_run = %+v; want a preview of the item", out)
	}
	if snapshot() != before {
		t.Fatal("a dry run forgot something")
	}
	callTool(t, cs, "forget", map[string]any{"instruction": "items tagged travel", "dry_run": false}, &out)
	if out.DryRun || out.Mode != "soft" || len(out.Forgotten) != 1 || out.Forgotten[0].ID != kept.Item.ID {
		t.Fatalf("forget dry_run false = %+v; want the item forgotten, soft", out)
	}
	var rec RecallOutput
	callTool(t, cs, "recall", map[string]any{"query": "window seats"}, &rec)
	if len(rec.Items) != 0 {
		t.Errorf("recall after forget = %+v; want nothing", rec.Items)
	}
}

func TestForgetRefusesBadInputAndForgetsNothing(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats."}, nil)
	checkBad(t, cs, "forget", []badCall{
		{name: "nothing named", args: map[string]any{"dry_run": false}, kind: errs.Validation, field: "id"},
		{name: "id and instruction", args: map[string]any{"id": "a", "instruction": "oldest", "dry_run": false}, kind: errs.Validation, field: "id"},
		{name: "dry_run of the wrong type", args: map[string]any{"instruction": "oldest", "dry_run": "no"}, field: "dry_run"},
		{name: "an instruction engram does not understand", args: map[string]any{"instruction": "the boring ones", "dry_run": false}, kind: errs.UnsupportedInstruction},
		{name: "unknown store", args: map[string]any{"instruction": "oldest", "store": "nope", "dry_run": false}, kind: errs.NotFound, field: "nope"},
		{name: "unknown item", args: map[string]any{"id": "nope", "dry_run": false}, kind: errs.NotFound, field: "nope"},
	}, memorySnapshot(t, e))
}

// An agent other than the default one has its own working store: an
// unknown id there is a NotFoundError, not an empty success that would
// tell the agent it forgot something that was never there.
func TestForgetOfAnUnknownIdInAnAgentsOwnStoreIsNotFound(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats."}, nil)
	checkBad(t, cs, "forget", []badCall{
		{name: "unknown item", args: map[string]any{"id": "nope", "dry_run": false}, kind: errs.NotFound, field: "nope"},
		{name: "unknown item, dry run", args: map[string]any{"id": "nope"}, kind: errs.NotFound, field: "nope"},
	}, memorySnapshot(t, e))
}

// An id already in the store is refused, not replaced: the schema says so,
// so that an agent does not count on remember to overwrite an item.
func TestRememberWithATakenIdIsAConflictAsItsSchemaSays(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{}))
	callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats.", "id": "seat"}, nil)
	checkBad(t, cs, "remember", []badCall{
		{name: "taken id", args: map[string]any{"text": "Prefers aisle seats.", "id": "seat"}, kind: errs.Conflict, field: "seat"},
	}, memorySnapshot(t, e))
	for _, tool := range listTools(t, cs) {
		if tool.Name != "remember" {
			continue
		}
		schema, _ := asJSON(t, tool.InputSchema).(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		id, _ := props["id"].(map[string]any)
		if desc, _ := id["description"].(string); strings.Contains(desc, "replaces") || !strings.Contains(desc, "ConflictError") {
			t.Errorf("remember's id says %q; want it to say a taken id is a ConflictError", desc)
		}
	}
}

// An agent's working store does not exist until its first remember: the
// memory tools must not count that as a failed call in the Agents view
// (clients.list's errors) when the call itself succeeds.
func TestAnAgentsFirstMemoryCallsCountNoErrors(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	callTool(t, cs, "recall", map[string]any{"query": "seats"}, nil)
	callTool(t, cs, "forget", map[string]any{"instruction": "oldest"}, nil)
	if res := callTool(t, cs, "remember", map[string]any{"text": "Prefers window seats."}, nil); res.IsError {
		t.Fatalf("remember: %s", text(res))
	}
	callTool(t, cs, "recall", map[string]any{"query": "seats"}, nil)
	list, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, clients.ActionList, clients.ListArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Clients) != 1 || list.Clients[0].Calls != 4 || list.Clients[0].Errors != 0 {
		t.Fatalf("clients.list of alice = %+v; want one client, 4 calls, no error", list.Clients)
	}
}

// An agent's first item may be refused by the store it would make (larger
// than the working store's whole token budget): the refused call leaves no
// store behind, as a refused call changes nothing stored.
func TestAFirstItemTooLargeForTheStoreLeavesNoStore(t *testing.T) {
	e := newEngine(t)
	cs := connect(t, New(e, Options{Agent: "alice"}))
	huge := strings.Repeat("porto lisbon faro ", 2000) // 6000 words: over the 4000-token budget
	res := callTool(t, cs, "remember", map[string]any{"text": huge}, nil)
	if te := toolErr(t, res); te.Kind != errs.Budget {
		t.Fatalf("remember of %d bytes: %s: %s; want a BudgetError", len(huge), te.Kind, te.Message)
	}
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "alice"}, memory.ActionCapacity, memory.CapacityArgs{Store: "working-alice"}); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("after a refused remember, memory.capacity working-alice: %v; want NotFoundError", err)
	}
}
