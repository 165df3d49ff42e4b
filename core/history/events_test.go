package history_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
)

// historyEvents subscribes to the history's events; next returns the next
// one, failing the test if none comes (events follow the commit, on the
// broker's goroutine).
func (r *rig) historyEvents() (next func() events.Event) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	ch := r.e.Subscribe(ctx, history.EventWritten.Name(), history.EventEvicted.Name(), history.EventSummary.Name(),
		history.EventDeleted.Name(), history.EventMoved.Name())
	return func() events.Event {
		r.t.Helper()
		select {
		case ev := <-ch:
			return ev
		case <-time.After(5 * time.Second):
			r.t.Fatal("no history event within 5s")
			return events.Event{}
		}
	}
}

// TestWriteThatEvictsPublishesItsEvents: a write that evicts publishes the
// utterance, the eviction and the summary, in that order, with typed
// payloads.
func TestWriteThatEvictsPublishesItsEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 1})
	next := r.historyEvents()
	r.write("", "user", "one")
	r.write("", "user", "two")
	var got []string
	for range 4 {
		ev := next()
		got = append(got, ev.Name)
		if u, ok := history.EventWritten.Of(ev); ok && u.Conversation != "default" {
			t.Errorf("written event %+v", u)
		}
		if e, ok := history.EventEvicted.Of(ev); ok && (!slices.Equal(e.Indexes, []int{0}) || e.Reason != "buffer_size") {
			t.Errorf("evicted event %+v", e)
		}
		if s, ok := history.EventSummary.Of(ev); ok && (s.Covered != 1 || s.Writer != "extractive") {
			t.Errorf("summary event %+v", s)
		}
	}
	want := []string{history.EventWritten.Name(), history.EventWritten.Name(), history.EventEvicted.Name(), history.EventSummary.Name()}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestDeleteAndMovePublishTheirEvents: a deletion and a move to the other
// backend each publish an event naming the conversation (they used to say
// so only in the trace); a move to where it already is publishes none.
func TestDeleteAndMovePublishTheirEvents(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	r.configure(map[string]any{"conversation": "trip", "buffer_size": 1})
	r.write("trip", "user", "one")
	r.write("trip", "user", "two")
	next := r.historyEvents()

	r.do("history.delete", map[string]any{"conversation": "trip", "utterance_index": 0}, nil)
	if d, ok := history.EventDeleted.Of(next()); !ok || d != (history.DeletedEvent{Conversation: "trip", UtteranceIndex: 0, Evicted: true}) {
		t.Errorf("after deleting an evicted utterance: %+v, %v", d, ok)
	}
	r.query("Delete utterance 1", map[string]any{"conversation": "trip"}, nil)
	if d, ok := history.EventDeleted.Of(next()); !ok || d != (history.DeletedEvent{Conversation: "trip", UtteranceIndex: 1}) {
		t.Errorf("after deleting a buffered utterance through history.query: %+v, %v", d, ok)
	}

	r.do("history.backend", map[string]any{"conversation": "trip", "backend": "in-memory"}, nil) // already there
	r.do("history.backend", map[string]any{"conversation": "trip", "backend": "durable"}, nil)
	if m, ok := history.EventMoved.Of(next()); !ok || m != (history.MovedEvent{Conversation: "trip", From: "in-memory", To: "durable"}) {
		t.Errorf("after the move: %+v, %v", m, ok)
	}
}

// TestConfigurePublishesTheNewSettings: history.configure publishes the
// settings it left, evicting or not, and history.share and history.revoke
// say whose access changed, so that a view follows them at once (issue
// 14, bug 8).
func TestConfigurePublishesTheNewSettings(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.write("trip", "user", "one")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.e.Subscribe(ctx, history.EventConfigured.Name(), history.EventAccess.Name())
	next := func() events.Event {
		t.Helper()
		select {
		case ev := <-ch:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no conversation event within 5s")
			return events.Event{}
		}
	}

	r.configure(map[string]any{"conversation": "trip", "summary_token_limit": 80}) // evicts nothing
	c, ok := history.EventConfigured.Of(next())
	if !ok || c.Conversation != "trip" || c.SummaryTokenLimit != 80 || c.BufferSize < 1 || c.Backend == "" {
		t.Errorf("after configure: %+v, %v", c, ok)
	}
	r.do("history.share", map[string]any{"conversation": "trip", "principal": "bob", "permissions": []string{"read", "write"}}, nil)
	if a, ok := history.EventAccess.Of(next()); !ok || a.Conversation != "trip" || a.Principal != "bob" || a.Change != "shared" ||
		!slices.Equal(a.Permissions, []string{"read", "write"}) {
		t.Errorf("after share: %+v, %v", a, ok)
	}
	r.do("history.revoke", map[string]any{"conversation": "trip", "principal": "bob"}, nil)
	if a, ok := history.EventAccess.Of(next()); !ok || a.Principal != "bob" || a.Change != "revoked" || len(a.Permissions) != 0 {
		t.Errorf("after revoke: %+v, %v", a, ok)
	}
}
