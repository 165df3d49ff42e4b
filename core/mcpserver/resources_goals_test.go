package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/events"
)

// readActiveGoals reads the active goals resource.
func readActiveGoals(t *testing.T, cs *mcp.ClientSession) ActiveGoalsOutput {
	t.Helper()
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: ActiveGoalsURI})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("contents = %+v", res.Contents)
	}
	var out ActiveGoalsOutput
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &out); err != nil {
		t.Fatalf("%s: %v", res.Contents[0].Text, err)
	}
	return out
}

func TestActiveGoalsResourceListsTheAgentsGoals(t *testing.T) {
	e := newEngine(t)
	if _, err := conn.CallAs(t.Context(), e, conn.Request{Principal: "bob"}, cortex.ActionCreate,
		cortex.CreateArgs{Type: "goal", Fields: map[string]json.RawMessage{"title": json.RawMessage(`"bob's"`)}}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newServer(t, e, Options{Agent: "alice"}))
	g := createGoal(t, cs, map[string]any{"title": "alice's"})
	out := readActiveGoals(t, cs)
	if out.Count != 1 || len(out.Goals) != 1 || out.Goals[0].ID != g.ID {
		t.Errorf("resource = %+v; want alice's goal only", out)
	}
}

func TestAGoalChangeTellsTheResourcesSubscribers(t *testing.T) {
	e := newEngine(t)
	s := newServer(t, e, Options{Agent: "alice"})
	subscribed := make(chan struct{})
	s.watching = func() { close(subscribed) }
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() { defer close(watched); s.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-watched })
	updated := make(chan string, 16)
	// Subscribe only asks (subscriptions/listen): the server has the
	// subscription once it acknowledges it.
	acked := make(chan struct{}, 1)
	ack := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	}
	cs := connectWith(t, s, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}, ack)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: ActiveGoalsURI}); err != nil {
		t.Fatal(err)
	}
	<-subscribed
	select {
	case <-acked:
	case <-time.After(waitLimit):
		t.Fatal("the subscription was never acknowledged")
	}
	if got := readActiveGoals(t, cs); got.Count != 0 {
		t.Fatalf("goals before = %+v", got)
	}
	g := createGoal(t, cs, map[string]any{"title": "Watched"})
	select {
	case uri := <-updated:
		if uri != ActiveGoalsURI {
			t.Errorf("updated %q; want %q", uri, ActiveGoalsURI)
		}
	case <-time.After(waitLimit):
		t.Fatal("no resources/updated after a goal was created")
	}
	if got := readActiveGoals(t, cs); got.Count != 1 || got.Goals[0].ID != g.ID {
		t.Errorf("goals after = %+v; want the new one", got)
	}
}

func TestTheGoalsWatchIgnoresOtherItems(t *testing.T) {
	s := New(newEngine(t), Options{})
	var w *watch
	for i := range s.watches {
		if len(s.watches[i].kinds) > 0 && s.watches[i].kinds[0] == cortex.EventItemMutated.Name() {
			w = &s.watches[i]
		}
	}
	if w == nil {
		t.Fatal("no watch on item.mutated")
	}
	action := events.Event{Name: cortex.EventItemMutated.Name(), Data: cortex.ItemEvent{ItemID: "x", Type: "action"}}
	goal := events.Event{Name: cortex.EventItemMutated.Name(), Data: cortex.ItemEvent{ItemID: "y", Type: "goal"}}
	commit := events.Event{Name: cortex.EventCommit.Name(), Data: cortex.CommitEvent{OK: true}}
	if got := w.uris(action); len(got) != 0 {
		t.Errorf("an action's change announces %v", got)
	}
	for _, ev := range []events.Event{goal, commit} {
		if got := w.uris(ev); len(got) != 1 || got[0] != ActiveGoalsURI {
			t.Errorf("%s announces %v; want the active goals", ev.Name, got)
		}
	}
}

// A failed read of the goals resource is an error as the other resources'
// are: "KIND: message", Invalid Params for what was asked.
func TestAFailedReadOfTheGoalsResourceCarriesEngramsKind(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{Agent: "bad\x01agent"}))
	_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: ActiveGoalsURI})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(rpc.Message, "ValidationError: as: ") {
		t.Errorf("reading %s as a refused agent: %#v; want Invalid Params \"ValidationError: as: …\"", ActiveGoalsURI, err)
	}
}
