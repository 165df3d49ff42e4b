package episodic_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
)

// TestConcurrentThreads runs messages on every channel, compactions and
// readers at once (run it with -race), then checks the books: every
// acknowledged message is exactly one turn of exactly one thread, turn
// counts add up, turns are numbered without gaps, no episode holds more
// than 50 turns, and once compaction settles nothing is left pending and
// every compacted episode's turns are archived.
func TestConcurrentThreads(t *testing.T) {
	r := newRig(t)
	w1 := r.send("web", "", "Plan the offsite agenda for the platform team.")
	w2 := r.send("web", "", "Draft the Q3 hiring plan.")
	// A thread one turn short of a full episode, which nothing compacts by
	// hand: the messages below close its episode by size.
	w3 := r.send("web", "", "Keep a log of the kitchen renovation.")
	for i := range episodic.EpisodeMaxTurns - 2 {
		r.send("web", w3.ThreadID, fmt.Sprintf("renovation log entry %d", i))
	}

	var mu sync.Mutex
	var errors []error
	sent := map[string]bool{} // texts acknowledged
	fail := func(err error) {
		mu.Lock()
		errors = append(errors, err)
		mu.Unlock()
	}
	send := func(args map[string]string) {
		r.clock.Advance(time.Second)
		raw, err := r.Try(agent, "thread.message", args)
		if err != nil {
			fail(fmt.Errorf("thread.message %v: %w", args, err))
			return
		}
		var res episodic.MessageResult
		if err := json.Unmarshal(raw, &res); err != nil || res.Turn == nil || res.Turn.Text != args["text"] {
			fail(fmt.Errorf("thread.message %v: %s (%v)", args, raw, err))
			return
		}
		mu.Lock()
		sent[args["text"]] = true
		mu.Unlock()
	}
	sent[w1.Turn.Text], sent[w2.Turn.Text] = true, true
	for _, u := range r.thread(w3.ThreadID).Turns {
		sent[u.Text] = true
	}

	var wg sync.WaitGroup
	// Implicit channels: one conversation moving between them (and into
	// the threads the explicit channels make most recent).
	for _, ch := range []string{"sms", "whatsapp", "voice"} {
		wg.Go(func() {
			for i := range 40 {
				speaker := "user"
				if i%2 == 1 {
					speaker = "assistant"
				}
				send(map[string]string{"channel": ch, "speaker": speaker, "text": fmt.Sprintf("%s message %d about the Lisbon trip", ch, i)})
			}
		})
	}
	// Explicit channels: the selected threads, and new ones.
	for _, w := range []episodic.MessageResult{w1, w2, w3} {
		wg.Go(func() {
			for i := range 30 {
				send(map[string]string{"channel": "app", "thread_id": w.ThreadID, "text": fmt.Sprintf("note %d for %s", i, w.ThreadID)})
			}
		})
	}
	wg.Go(func() {
		for i := range 5 {
			send(map[string]string{"channel": "web", "text": fmt.Sprintf("New topic %d: compare standing desks", i)})
		}
	})
	// Compactions of the selected threads while they take messages.
	wg.Go(func() {
		for i := range 20 {
			w := []episodic.MessageResult{w1, w2}[i%2]
			if _, err := r.Try(agent, "episode.compact", map[string]string{"thread_id": w.ThreadID}); err != nil {
				fail(fmt.Errorf("episode.compact: %w", err))
			}
		}
	})
	// Readers.
	wg.Go(func() {
		for range 20 {
			for _, req := range []struct {
				action string
				args   any
			}{
				{"thread.list", `{}`},
				{"episode.context", map[string]string{"thread_id": w1.ThreadID}},
				{"episode.context", map[string]string{"thread_id": w2.ThreadID, "channel": "sms"}},
				{"episode.list", `{}`},
				{"thread.get", map[string]any{"thread_id": w1.ThreadID, "include_archived": true}},
				{"episode.decisions", `{}`},
			} {
				if _, err := r.Try(agent, req.action, req.args); err != nil {
					fail(fmt.Errorf("%s: %w", req.action, err))
				}
			}
		}
	})
	wg.Wait()
	r.ep.Settle()
	for _, err := range errors {
		t.Error(err)
	}

	// The books.
	var list struct {
		Threads []*episodic.Thread `json:"threads"`
	}
	r.Do(agent, "thread.list", `{}`, &list)
	var eps struct {
		Episodes []*episodic.Episode `json:"episodes"`
	}
	r.Do(agent, "episode.list", `{}`, &eps)
	episodes := map[string]*episodic.Episode{}
	for _, ep := range eps.Episodes {
		episodes[ep.ID] = ep
		if ep.TurnCount > episodic.EpisodeMaxTurns {
			t.Errorf("episode %s holds %d turns", ep.ID, ep.TurnCount)
		}
		switch ep.Status {
		case episodic.EpisodeOpen, episodic.EpisodeCompacted:
		default:
			t.Errorf("episode %s is %s after settling", ep.ID, ep.Status)
		}
	}
	seen := map[string]string{} // text → thread
	total, sizeClosed := 0, 0
	for _, th := range list.Threads {
		v := r.thread(th.ID)
		if len(v.Turns) != th.TurnCount {
			t.Errorf("thread %s: turn_count %d, %d turns", th.ID, th.TurnCount, len(v.Turns))
		}
		inEpisodes := 0
		for _, id := range th.Episodes {
			ep := episodes[id]
			if ep == nil || ep.ThreadID != th.ID {
				t.Fatalf("thread %s lists episode %s, which is not its own", th.ID, id)
			}
			inEpisodes += ep.TurnCount
			if ep.Reason == "size" {
				sizeClosed++
			}
		}
		if inEpisodes != th.TurnCount {
			t.Errorf("thread %s: its episodes hold %d turns, turn_count %d", th.ID, inEpisodes, th.TurnCount)
		}
		for i, u := range v.Turns {
			if u.Number != i+1 || u.ThreadID != th.ID {
				t.Errorf("thread %s: turn %d is numbered %d (thread %s)", th.ID, i+1, u.Number, u.ThreadID)
			}
			ep := episodes[u.EpisodeID]
			if ep == nil || ep.ThreadID != th.ID || u.Number < ep.FirstTurn || u.Number > ep.LastTurn {
				t.Errorf("turn %d of %s is in episode %s, which does not cover it", u.Number, th.ID, u.EpisodeID)
			} else if u.Archived != (ep.Status == episodic.EpisodeCompacted) {
				t.Errorf("turn %d of %s: archived %v in a %s episode", u.Number, th.ID, u.Archived, ep.Status)
			}
			if other, dup := seen[u.Text]; dup {
				t.Errorf("%q is a turn of %s and of %s", u.Text, other, th.ID)
			}
			seen[u.Text] = th.ID
		}
		total += th.TurnCount
	}
	if total != len(sent) {
		t.Errorf("%d turns in all threads, %d messages acknowledged", total, len(sent))
	}
	for text := range sent {
		if _, ok := seen[text]; !ok {
			t.Errorf("acknowledged %q is in no thread", text)
		}
	}
	if n := pendingCompactions(r); n != 0 {
		t.Errorf("%d compactions still pending after settling", n)
	}
	if sizeClosed == 0 {
		t.Errorf("no episode closed by size: thread %s passed %d turns", w3.ThreadID, episodic.EpisodeMaxTurns)
	}
	t.Logf("%d threads, %d episodes (%d closed by size), %d turns", len(list.Threads), len(eps.Episodes), sizeClosed, total)
}
