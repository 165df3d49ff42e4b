package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/memory"
)

// nextEvent is the next event named name in ch (the broker hands events
// to subscribers on its own goroutine: the wait is bounded, not timed).
func nextEvent(t *testing.T, ch <-chan events.Event, name string) events.Event {
	t.Helper()
	for {
		select {
		case ev := <-ch:
			if ev.Name == name {
				return ev
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no (more) %s event was published", name)
			return events.Event{}
		}
	}
}

// TestUnforgetBringsASoftForgottenItemBack: remember finds it again, it
// counts against the limits again, the event says so, and the store's
// counters and indexes still check.
func TestUnforgetBringsASoftForgottenItemBack(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("sister", "The user's sister Ana lives in Porto."))
	r.memorize("working", it("cat", "The user's cat is called Miso."))
	r.forget("working", "item sister", "soft")
	if got := ids(r.remember("working", "sister Porto")); len(got) != 0 {
		t.Fatalf("remember finds the forgotten item: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := r.e.SubscribeBuffer(ctx, 64)

	res := enginetest.Call[memory.UnforgetResult](r.Rig, agent, "memory.unforget", memory.UnforgetArgs{Store: "working", ID: "sister"})
	if res.Item == nil || res.Item.Deleted || res.Item.DeletedAt != nil || res.Evicted == nil {
		t.Fatalf("result %+v: want the item live, evicted []", res)
	}
	if got := ids(r.remember("working", "sister Porto")); len(got) != 1 || got[0] != "sister" {
		t.Errorf("remember after unforget: %v, want [sister]", got)
	}
	if c := r.capacity("working"); c.ItemCount != 2 || c.Deleted != 0 {
		t.Errorf("capacity %+v: want 2 live items, none deleted", c)
	}
	ev, ok := memory.EventUnforgotten.Of(nextEvent(t, evs, memory.EventUnforgotten.Name()))
	if !ok || ev != (memory.UnforgottenEvent{ID: "sister", Store: "working"}) {
		t.Errorf("event %+v", ev)
	}
	if problems := r.check(); len(problems) > 0 {
		t.Errorf("the store does not check: %v", problems)
	}
	// It can be forgotten again, as any live item.
	if f := r.forget("working", "item sister", "soft"); len(f.Forgotten) != 1 {
		t.Errorf("forget again: %+v", f)
	}
}

// TestUnforgetRefusesWhatCannotComeBack: a live item, an erased one, and
// an agent without write on the store; nothing changes.
func TestUnforgetRefusesWhatCannotComeBack(t *testing.T) {
	r := newRig(t)
	r.memorize("working", it("live", "still here"))
	r.memorize("working", it("gone", "erased for good"))
	r.forget("working", "item gone", "hard")
	r.Fail(agent, "memory.unforget", memory.UnforgetArgs{Store: "working", ID: "live"}, errs.Validation, "id", "is not forgotten")
	r.Fail(agent, "memory.unforget", memory.UnforgetArgs{Store: "working", ID: "gone"}, errs.NotFound, "cannot come back")
	r.Fail(agent, "memory.unforget", memory.UnforgetArgs{Store: "nowhere", ID: "live"}, errs.NotFound, "no memory store")

	r.memorize("working", it("secret", "only mine"))
	r.forget("working", "item secret", "soft")
	r.Do(agent, "memory.share", memory.ShareArgs{Store: "working", Principal: "bob", Permissions: []string{"read"}}, nil)
	r.Fail(enginetest.Who{As: "bob"}, "memory.unforget", memory.UnforgetArgs{Store: "working", ID: "secret"}, errs.Permission)
	if got := r.get("working", "secret"); !got.Deleted {
		t.Error("a refused unforget brought the item back")
	}
}

// TestUnforgetMakesRoomInAFullStore: a full store evicts per its policy,
// as a memorize does.
func TestUnforgetMakesRoomInAFullStore(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"store": "working", "max_items": 2})
	r.memorize("working", it("a", "first", "importance", 0.9))
	r.forget("working", "item a", "soft")
	r.memorize("working", it("b", "second", "importance", 0.2))
	r.memorize("working", it("c", "third", "importance", 0.8))
	res := enginetest.Call[memory.UnforgetResult](r.Rig, agent, "memory.unforget", memory.UnforgetArgs{Store: "working", ID: "a"})
	if len(res.Evicted) != 1 || res.Evicted[0] != "b" {
		t.Errorf("evicted %v, want [b] (the least important)", res.Evicted)
	}
	if c := r.capacity("working"); c.ItemCount != 2 {
		t.Errorf("%d live items, want 2", c.ItemCount)
	}
	if problems := r.check(); len(problems) > 0 {
		t.Errorf("the store does not check: %v", problems)
	}
}

// TestStoreChangesPublishAnEvent: configure, share and revoke each say
// which store changed and how, so that a console showing it follows.
func TestStoreChangesPublishAnEvent(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := r.e.SubscribeBuffer(ctx, 64)
	r.configure(map[string]any{"store": "notes", "type": "episodic"})
	r.Do(agent, "memory.share", memory.ShareArgs{Store: "notes", Principal: "bob", Permissions: []string{"read"}}, nil)
	r.Do(agent, "memory.revoke", memory.RevokeArgs{Store: "notes", Principal: "bob"}, nil)
	for _, want := range []string{"configured", "shared", "revoked"} {
		ev, ok := memory.EventStoreChanged.Of(nextEvent(t, evs, memory.EventStoreChanged.Name()))
		if !ok || ev != (memory.StoreChangedEvent{Change: want, Store: "notes"}) {
			t.Errorf("event %+v, want %s of notes", ev, want)
		}
	}
}
