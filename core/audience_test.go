package core

import (
	"context"
	"slices"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// A request that asks for the events it causes gets only those its
// principal may see, and a subscription as a principal only that
// principal's: an event about another's object stays with its readers.
func TestRequestsAndSubscriptionsGetOnlyTheEventsTheirPrincipalMaySee(t *testing.T) {
	announce := func(env *kit.Env) error {
		action.Register(env.Actions, action.Spec{Name: "test.announce", Summary: "publishes one event for each audience"},
			func(ctx context.Context, call action.Call, _ struct{}) (struct{}, error) {
				env.Events.Publish("test.alices", events.Only("alice"), nil)
				env.Events.Publish("test.callers", events.Only(call.Principal), nil)
				env.Events.Publish("test.everyones", events.Everyone(), nil)
				env.Events.Publish("test.nobodys", events.Audience{}, nil)
				return struct{}{}, nil
			})
		return nil
	}
	e, err := Open(Options{InMemory: true, Subsystems: []Subsystem{announce}, Agent: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	bobSubscribed, aliceSubscribed := e.SubscribeAs(ctx, "bob"), e.Subscribe(ctx)

	var got []string
	if _, err := e.Do(ctx, Request{Action: "test.announce", Principal: "bob", OnEvent: func(ev events.Event) { got = append(got, ev.Name) }}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"test.callers", "test.everyones"}; !slices.Equal(got, want) {
		t.Errorf("bob's request got %v, want %v", got, want)
	}
	e.Env().Events.Publish("test.end", events.Everyone(), nil)
	names := func(ch <-chan events.Event) (out []string) {
		for ev := range ch {
			if ev.Name == "test.end" {
				return out
			}
			out = append(out, ev.Name)
		}
		return out
	}
	if got, want := names(bobSubscribed), []string{"test.callers", "test.everyones"}; !slices.Equal(got, want) {
		t.Errorf("bob's subscription got %v, want %v", got, want)
	}
	if got, want := names(aliceSubscribed), []string{"test.alices", "test.everyones"}; !slices.Equal(got, want) {
		t.Errorf("the engine agent alice's subscription got %v, want %v", got, want)
	}
}
