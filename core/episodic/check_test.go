package episodic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/storage"
)

// The index-vs-record check of the episodic layer (issue 13, item 2:
// engram check verifies "index vs records").

// checked is what the healthy store holds, for the damage to aim at.
type checked struct {
	r        *rig
	linked   string // the thread that was ended and compacted (t1)
	follow   string // the thread linked to it (t2)
	big      string // a web thread of 55 turns: a full episode, compacted
	decision string // t2's LINK decision
	cross    string // their cross-thread episode
	bigLast  time.Time
	bigEps   []string // big's episodes: the first compacted, the second open with turns 51..55
}

// healthyStore writes a realistic mix through the actions: linking on an
// implicit channel (a decision, a cross-thread episode, an ended and
// compacted thread), a thread that fills an episode, a manual compaction,
// a reopened thread, an outcome and a tuning, a configure and a share.
func healthyStore(t *testing.T) checked {
	t.Helper()
	r := newRig(t)
	t1, res := weatherThenThursday(t, r)
	if res.Decision.Decision != episodic.Link || res.Decision.CrossThreadEpisode == "" {
		t.Fatalf("the follow-up should link: %+v", res.Decision)
	}
	c := checked{r: r, linked: t1, follow: res.ThreadID, decision: res.Decision.ID, cross: res.Decision.CrossThreadEpisode}
	r.answer("sms", c.follow, "Thursday looks sunny.")
	r.at("11:00")
	c.big = r.send("web", "", "Plan a trip to Kyoto").ThreadID
	for i := 0; i < 54; i++ {
		r.send("web", c.big, fmt.Sprintf("Kyoto question %d", i))
	}
	r.Do(agent, "episode.compact", episodic.CompactArgs{ThreadID: c.follow}, nil)
	r.send("web", t1, "Back to New York for a moment.") // reopens the ended thread
	r.Do(agent, "episode.outcome", episodic.OutcomeArgs{DecisionID: c.decision, Outcome: episodic.OutcomeCorrect}, nil)
	r.Do(agent, "episode.tune", struct{}{}, nil)
	r.Do(agent, "thread.configure", episodic.ConfigureArgs{ThreadID: c.big, Minutes: 90}, nil)
	r.Do(agent, "thread.share", map[string]any{"thread_id": c.big, "principal": "bob", "permissions": []string{"read"}}, nil)
	r.ep.Settle()
	th := r.thread(c.big).Thread
	c.bigLast, c.bigEps = th.LastActivityAt, th.Episodes
	return c
}

// problems runs every checker and returns the episodic one's problems.
func (c checked) problems(t *testing.T) []string {
	t.Helper()
	c.r.ep.Settle()
	all, err := c.r.e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all["episodic"]
}

// damage changes the store directly, under the actions' feet.
func (c checked) damage(t *testing.T, fn func(tx *storage.Tx) error) {
	t.Helper()
	if err := c.r.e.Env().Store.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// edit rewrites the JSON record at key.
func edit[T any](tx *storage.Tx, key []byte, change func(*T)) error {
	var v T
	if err := tx.GetJSON(key, &v); err != nil {
		return err
	}
	change(&v)
	return tx.SetJSON(key, v)
}

func threadKey(id string) []byte { return storage.Key(storage.PrefixEpisodic, "thread", id) }
func turnKey(thread string, n int, family string) []byte {
	return storage.Key(storage.PrefixEpisodic, family, thread, storage.Uint64(uint64(n)))
}
func activityKey(at time.Time, id string) []byte {
	return storage.IndexKey("episodic", "act", storage.Time(at), id)
}

// TestCheckFindsNoProblemInAHealthyEpisodicStore: after linking, ending,
// compacting (in the background and by hand), reopening, tuning and sharing,
// every index and counter agrees with the records.
func TestCheckFindsNoProblemInAHealthyEpisodicStore(t *testing.T) {
	c := healthyStore(t)
	if p := c.problems(t); len(p) != 0 {
		t.Fatalf("a healthy store has problems:\n%s", strings.Join(p, "\n"))
	}
	eps, _ := c.r.episodes(c.big)
	if len(eps) < 2 || eps[0].Status != episodic.EpisodeCompacted {
		t.Fatalf("the 55-turn thread should have a compacted first episode: %+v", eps)
	}
}

// TestCheckFindsEachEpisodicInconsistency damages a healthy store one way
// at a time; the check names that damage, and only it.
func TestCheckFindsEachEpisodicInconsistency(t *testing.T) {
	cases := []struct {
		name   string
		damage func(c checked, tx *storage.Tx) error
		want   []string // one substring per expected problem
	}{
		{"a thread missing from its activity index", func(c checked, tx *storage.Tx) error {
			return tx.Delete(activityKey(c.bigLast, c.big))
		}, []string{"thread " + "BIG" + ": missing from the activity index"}},
		{"a stale activity entry", func(c checked, tx *storage.Tx) error {
			return tx.Set(activityKey(c.bigLast.Add(-time.Hour), c.big), nil)
		}, []string{"for thread BIG is stale"}},
		{"an activity entry without its thread", func(c checked, tx *storage.Tx) error {
			return tx.Set(activityKey(t0, "ghost"), nil)
		}, []string{"names thread ghost, which does not exist"}},
		{"a thread counting a turn it does not hold", func(c checked, tx *storage.Tx) error {
			return edit(tx, threadKey(c.big), func(th *episodic.Thread) { th.TurnCount++ })
		}, []string{"thread BIG: counts 56 turns, turn 56 is not stored"}},
		{"a turn beyond its thread's count", func(c checked, tx *storage.Tx) error {
			return edit(tx, threadKey(c.big), func(th *episodic.Thread) { th.TurnCount-- })
		}, []string{"live turn 55 is beyond the thread's turn_count 54"}},
		{"a turn stored both live and archived", func(c checked, tx *storage.Tx) error {
			var u episodic.Turn
			if err := tx.GetJSON(turnKey(c.big, 55, "turn"), &u); err != nil {
				return err
			}
			u.Archived = true
			return tx.SetJSON(turnKey(c.big, 55, "arch"), u)
		}, []string{"thread BIG: turn 55 is stored both live and archived"}},
		{"an episode counting turns it does not hold", func(c checked, tx *storage.Tx) error {
			ep := c.bigEps[1]
			return edit(tx, storage.Key(storage.PrefixEpisodic, "ep", ep), func(e *episodic.Episode) { e.TurnCount = 9 })
		}, []string{": counts 9 turns, holds 5"}},
		{"a queue entry for a compacted episode", func(c checked, tx *storage.Tx) error {
			ep := c.bigEps[0]
			return tx.Set(storage.Key(storage.PrefixEpisodic, "pending", ep), nil)
		}, []string{"which is compacted"}},
		{"a link not made back", func(c checked, tx *storage.Tx) error {
			return edit(tx, threadKey(c.linked), func(th *episodic.Thread) { th.LinkedThreads = []string{} })
		}, []string{"thread FOLLOW: linked to thread LINKED, which is not linked back"}},
		{"a cross-thread episode that lost a thread", func(c checked, tx *storage.Tx) error {
			return edit(tx, storage.Key(storage.PrefixEpisodic, "xep", c.cross), func(x *episodic.CrossEpisode) { x.LinkedThreads = []string{c.linked} })
		}, []string{"thread FOLLOW: lists cross-thread episode CROSS, which does not list it"}},
		{"an unreadable decision", func(c checked, tx *storage.Tx) error {
			return tx.Set(storage.Key(storage.PrefixEpisodic, "dec", c.decision), []byte("{not json"))
		}, []string{"episodic decision at key \"episodic/dec/DECISION\": unreadable"}},
		{"an access list without its thread", func(c checked, tx *storage.Tx) error {
			return tx.SetJSON(storage.Key(storage.PrefixEpisodic, "acl", "ghost"), map[string]string{"owner": "agent"})
		}, []string{"access list is stored for thread ghost, which does not exist"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := healthyStore(t)
			c.damage(t, func(tx *storage.Tx) error { return tc.damage(c, tx) })
			names := strings.NewReplacer("BIG", c.big, "FOLLOW", c.follow, "LINKED", c.linked, "CROSS", c.cross, "DECISION", c.decision)
			got := c.problems(t)
			if len(got) != len(tc.want) {
				t.Fatalf("want %d problem(s), got:\n%s", len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if w = names.Replace(w); !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// BenchmarkCheckEpisodic checks stores of 25 and 100 threads of 100 turns
// each (2,500 and 10,000 turns, half of them in compacted episodes, and a
// linking decision for each earlier thread a new one was scored against),
// to show how the check grows.
//
//	go test -run '^$' -bench CheckEpisodic -benchtime 10x ./core/episodic
func BenchmarkCheckEpisodic(b *testing.B) {
	for _, threads := range []int{25, 100} {
		b.Run(fmt.Sprintf("turns=%d", threads*100), func(b *testing.B) {
			r := newRig(b)
			for k := 0; k < threads; k++ {
				id := r.send("web", "", fmt.Sprintf("Benchmark thread %d about %s", k, benchCities[k%len(benchCities)])).ThreadID
				for i := 1; i < 100; i++ {
					speaker, text := benchTurn(k, i)
					r.Do(agent, "thread.message", map[string]string{"channel": "web", "thread_id": id, "text": text, "speaker": speaker}, nil)
				}
			}
			r.ep.Settle()
			env := r.e.Env()
			if counts, err := env.Counts(); err == nil {
				b.Logf("stored: %v", counts["episodic"])
			}
			for b.Loop() {
				all, err := env.Check(context.Background())
				if err != nil || len(all["episodic"]) != 0 {
					b.Fatal(err, all["episodic"])
				}
			}
		})
	}
}

// TestCheckNamesAnUnreadableThreadFirst: a thread record that does not
// decode is named by its key, never a crash; what hangs off it (its turns,
// episodes, index entry) then follows as records without their thread.
func TestCheckNamesAnUnreadableThreadFirst(t *testing.T) {
	c := healthyStore(t)
	c.damage(t, func(tx *storage.Tx) error { return tx.Set(threadKey(c.big), []byte("{\"id\": 7")) })
	got := c.problems(t)
	want := fmt.Sprintf("episodic thread at key %q: unreadable", threadKey(c.big))
	if len(got) < 2 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("want %q first, then what hangs off it; got:\n%s", want, strings.Join(got, "\n"))
	}
	t.Logf("problems:\n%s", strings.Join(got, "\n"))
	for _, p := range got[1:] {
		if !strings.Contains(p, c.big) {
			t.Errorf("a problem not about the damaged thread: %s", p)
		}
	}
}
