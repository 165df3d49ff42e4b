package episodic_test

import (
	"context"
	"slices"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/events"
)

// thread.configure by an agent Alice gave her second thread (read and
// write) shows that agent only the links it may read, as thread.get
// does: neither its result nor the thread.configured event it and every
// other reader get names her first thread, which is hers alone. Alice's
// own event names it.
func TestConfiguringASharedThreadShowsOnlyTheLinksEachReaderMayRead(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.second, "principal": "carol", "permissions": []string{"read", "write"}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	carols, alices := r.e.SubscribeAs(ctx, "carol", episodic.EventConfigured.Name()), r.e.SubscribeAs(ctx, "alice", episodic.EventConfigured.Name())

	res := enginetest.Call[episodic.ThreadResult](r.Rig, carol, "thread.configure", episodic.ConfigureArgs{ThreadID: w.second, Minutes: 45})
	if slices.Contains(res.Thread.LinkedThreads, w.first) || len(res.Thread.CrossThreadEpisodes) != 0 {
		t.Errorf("carol's thread.configure shows links %v and cross-thread episodes %v; alice's %s is not hers to see",
			res.Thread.LinkedThreads, res.Thread.CrossThreadEpisodes, w.first)
	}
	payload := func(ch <-chan events.Event) episodic.Thread {
		t.Helper()
		ev := <-ch
		th, ok := episodic.EventConfigured.Of(ev)
		if !ok {
			t.Fatalf("got %s", ev.Name)
		}
		return th
	}
	if th := payload(carols); slices.Contains(th.LinkedThreads, w.first) || len(th.CrossThreadEpisodes) != 0 || th.InactivityTimeoutMinutes != 45 {
		t.Errorf("carol's thread.configured: links %v, cross-thread episodes %v, timeout %d", th.LinkedThreads, th.CrossThreadEpisodes, th.InactivityTimeoutMinutes)
	}
	if th := payload(alices); !slices.Contains(th.LinkedThreads, w.first) || len(th.CrossThreadEpisodes) == 0 {
		t.Errorf("alice's thread.configured: links %v, cross-thread episodes %v; want her first thread's", th.LinkedThreads, th.CrossThreadEpisodes)
	}
}
