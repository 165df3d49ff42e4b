package episodic_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/trace"
)

// Issue 13, item 5: threads and episodes are not shared by all agents.

var (
	alice = enginetest.Who{As: "alice"}
	bob   = enginetest.Who{As: "bob"}
	carol = enginetest.Who{As: "carol"}
)

// aliceWorld is Alice's two threads (the second linked to the first, so
// that there is a decision and a cross-thread episode), the first with a
// compacted episode.
type aliceWorld struct {
	first, second string
	episode       string
	decision      string
}

func newAliceWorld(r *rig) aliceWorld {
	r.T.Helper()
	var w aliceWorld
	msg := func(who enginetest.Who, channel, thread, text string) episodic.MessageResult {
		return enginetest.Call[episodic.MessageResult](r.Rig, who, "thread.message", map[string]string{"channel": channel, "thread_id": thread, "text": text})
	}
	r.at("10:00")
	w.first = msg(alice, "sms", "", "What's the weather in New York? My PIN is 4242").ThreadID
	msg(alice, "sms", w.first, "Sunny, 20 degrees in New York.")
	r.Do(alice, "episode.compact", map[string]string{"thread_id": w.first}, nil)
	r.at("11:00")
	res := msg(alice, "sms", "", "And the weather in New York on Thursday?")
	w.second = res.ThreadID
	if res.Decision == nil || res.Decision.Decision != episodic.Link {
		r.T.Fatalf("alice's follow-up did not link: %+v", res.Decision)
	}
	w.decision = res.Decision.ID
	w.episode = r.aliceThread(w.first).Episodes[0]
	return w
}

func (r *rig) aliceThread(id string) episodic.ThreadView {
	r.T.Helper()
	return enginetest.Call[episodic.GetResult](r.Rig, alice, "thread.get", episodic.GetArgs{ThreadID: id, IncludeArchived: true}).Thread
}

// snapshot is everything Alice can see of her threads, as JSON.
func (r *rig) snapshot(w aliceWorld) string {
	r.T.Helper()
	var b strings.Builder
	for _, step := range []struct {
		name string
		args any
	}{
		{"thread.list", struct{}{}},
		{"thread.get", map[string]any{"thread_id": w.first, "include_archived": true}},
		{"thread.get", map[string]any{"thread_id": w.second, "include_archived": true}},
		{"episode.list", struct{}{}},
		{"episode.decisions", struct{}{}},
		{"episode.tuning", struct{}{}},
	} {
		b.Write(r.Do(alice, step.name, step.args, nil))
		b.WriteByte('\n')
	}
	return b.String()
}

// denials is how many access denials the trace shows who, counting the
// repeats an entry aggregates.
func (r *rig) denials(who enginetest.Who) int {
	r.T.Helper()
	var out trace.ListResult
	r.Do(who, "trace.list", map[string]any{"kind": "access_denied", "limit": 1000}, &out)
	n := 0
	for _, e := range out.Entries {
		var d struct {
			Count int `json:"count"`
		}
		_ = json.Unmarshal(e.Data, &d)
		n += max(d.Count, 1)
	}
	return n
}

type step struct {
	name string
	args any
}

// writes are the thread.* and episode.* actions that change a thread.
func (w aliceWorld) writes() []step {
	return []step{
		{"thread.message", map[string]string{"channel": "web", "thread_id": w.first, "text": "Bob was here"}},
		{"thread.message", map[string]string{"channel": "sms", "thread_id": w.first, "text": "Bob was here", "speaker": "assistant"}},
		{"thread.configure", map[string]any{"thread_id": w.first, "inactivity_timeout_minutes": 5}},
		{"thread.share", map[string]any{"thread_id": w.first, "principal": "carol", "permissions": []string{"read"}}},
		{"thread.revoke", map[string]any{"thread_id": w.first, "principal": "carol"}},
		{"episode.compact", map[string]string{"thread_id": w.second}},
		{"episode.outcome", map[string]string{"decision_id": w.decision, "outcome": "incorrect"}},
		{"episode.tune", struct{}{}},
	}
}

// reads are the thread.* and episode.* actions that read one thread.
func (w aliceWorld) reads() []step {
	return []step{
		{"thread.get", map[string]string{"thread_id": w.first}},
		{"episode.context", map[string]string{"thread_id": w.first}},
		{"episode.list", map[string]string{"thread_id": w.first}},
		{"episode.get", map[string]string{"episode_id": w.episode}},
		{"episode.decisions", map[string]string{"thread_id": w.first}},
	}
}

// TestStrangerCannotTouchAnotherAgentsThreads is the bypass matrix: every
// thread.* and episode.* action Bob runs on Alice's threads without a
// grant is a PermissionError, changes nothing, and is traced; the lists
// show him none of hers. (Before issue 13 every one of them worked.)
func TestStrangerCannotTouchAnotherAgentsThreads(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	before := r.snapshot(w)
	for _, s := range append(w.writes(), w.reads()...) {
		t.Run(s.name, func(t *testing.T) {
			was := r.denials(bob)
			_, err := r.Try(bob, s.name, s.args)
			if errs.KindOf(err) != errs.Permission {
				t.Fatalf("%s %v as bob: %v, want a PermissionError", s.name, s.args, err)
			}
			if s.name != "episode.tune" && !strings.Contains(err.Error(), "thread.share") {
				t.Errorf("the refusal does not say how to get access: %v", err)
			}
			if got := r.snapshot(w); got != before {
				t.Errorf("%s as bob changed alice's threads:\nbefore %s\nafter  %s", s.name, before, got)
			}
			if got := r.denials(bob); got != was+1 {
				t.Errorf("denials bob sees: %d, want %d", got, was+1)
			}
		})
	}
	if n := r.denials(carol); n != 0 {
		t.Errorf("carol sees %d of bob's denials", n)
	}
	if n := r.denials(alice); n == 0 {
		t.Errorf("alice, the owner, sees none of bob's denials")
	}
	threads := enginetest.Call[episodic.ListResult](r.Rig, bob, "thread.list", struct{}{}).Threads
	eps := enginetest.Call[episodic.EpisodesResult](r.Rig, bob, "episode.list", struct{}{})
	ds := enginetest.Call[episodic.DecisionsResult](r.Rig, bob, "episode.decisions", struct{}{}).Decisions
	if len(threads)+len(eps.Episodes)+len(eps.CrossThreadEpisodes)+len(ds) != 0 {
		t.Errorf("bob's lists show alice's: %d threads, %d episodes, %d cross-thread, %d decisions",
			len(threads), len(eps.Episodes), len(eps.CrossThreadEpisodes), len(ds))
	}
	var tr trace.ListResult
	r.Do(bob, "trace.list", map[string]any{"limit": 1000}, &tr)
	for _, e := range tr.Entries {
		if e.Principal != "bob" {
			t.Errorf("bob's trace.list shows %s's entry %q", e.Principal, e.Message)
		}
	}
}

// TestReadGrantLetsReadNotWrite: with read on Alice's first thread, Bob
// reads it (and its episodes), and every write is still refused.
func TestReadGrantLetsReadNotWrite(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	acl := enginetest.Call[struct {
		Owner  string `json:"owner"`
		Grants []struct {
			PrincipalID string   `json:"principal_id"`
			Permissions []string `json:"permissions"`
		} `json:"grants"`
	}](r.Rig, alice, "thread.share", map[string]any{"thread_id": w.first, "principal": "bob", "permissions": []string{"read"}})
	if acl.Owner != "alice" || len(acl.Grants) != 1 || acl.Grants[0].PrincipalID != "bob" {
		t.Fatalf("thread.share's ACL: %+v", acl)
	}
	for _, s := range w.reads() {
		if _, err := r.Try(bob, s.name, s.args); err != nil {
			t.Errorf("%s with a read grant: %v", s.name, err)
		}
	}
	got := enginetest.Call[episodic.GetResult](r.Rig, bob, "thread.get", map[string]string{"thread_id": w.first}).Thread
	if got.ID != w.first || len(got.Decisions) != 0 {
		// The decision is also about the second thread, which bob may not read.
		t.Errorf("bob's thread.get: %s with %d decisions", got.ID, len(got.Decisions))
	}
	before := r.snapshot(w)
	for _, s := range w.writes() {
		if s.name == "episode.compact" || s.name == "episode.outcome" {
			continue // about the second thread: no grant at all
		}
		if _, err := r.Try(bob, s.name, s.args); errs.KindOf(err) != errs.Permission {
			t.Errorf("%s with only read: %v, want a PermissionError", s.name, err)
		}
	}
	if r.snapshot(w) != before {
		t.Errorf("bob's refused writes changed alice's threads")
	}
	threads := enginetest.Call[episodic.ListResult](r.Rig, bob, "thread.list", struct{}{}).Threads
	if len(threads) != 1 || threads[0].ID != w.first {
		t.Errorf("bob's thread.list: %d threads, want alice's shared one", len(threads))
	}
	// Bob sees Alice's trace entries about the thread he may read, and no
	// others.
	var tr trace.ListResult
	r.Do(bob, "trace.list", map[string]any{"kind": "thread.message", "limit": 100}, &tr)
	if len(tr.Entries) != 2 || !strings.Contains(tr.Entries[0].Message, w.first) {
		t.Errorf("bob's trace of thread messages: %d entries", len(tr.Entries))
	}
	r.Do(alice, "thread.revoke", map[string]any{"thread_id": w.first, "principal": "bob"}, nil)
	r.Fail(bob, "thread.get", map[string]string{"thread_id": w.first}, errs.Permission, "bob may not read thread")
}

// TestBobsThreadNeverLinksToAlices: a new thread is scored only against
// the threads its principal may read, so Bob's question on Alice's topic
// starts a thread of his own, unlinked, and his working memory holds none
// of her text; on an implicit channel his message neither continues nor
// ends her thread.
func TestBobsThreadNeverLinksToAlices(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	r.at("11:05")
	for _, channel := range []string{"web", "sms"} {
		res := enginetest.Call[episodic.MessageResult](r.Rig, bob, "thread.message",
			map[string]string{"channel": channel, "text": "Oh, and the weather in New York on Thursday?"})
		if res.ThreadID == w.first || res.ThreadID == w.second || !res.NewThread {
			t.Fatalf("bob's %s message went to %s (new %v)", channel, res.ThreadID, res.NewThread)
		}
		// (His sms thread may link to his own web thread.)
		for _, d := range res.Decisions {
			if d.Candidate == w.first || d.Candidate == w.second {
				t.Errorf("bob's %s thread was scored against alice's %s", channel, d.Candidate)
			}
		}
		if slices.Contains(res.LinkedThreads, w.first) || slices.Contains(res.LinkedThreads, w.second) || res.EndedThread == w.second {
			t.Errorf("bob's %s thread was linked to, or ended, alice's: %v %q", channel, res.LinkedThreads, res.EndedThread)
		}
		c := enginetest.Call[episodic.ContextResult](r.Rig, bob, "episode.context", map[string]string{"thread_id": res.ThreadID}).Context
		if strings.Contains(c.Text, "4242") || strings.Contains(c.Text, "Sunny") {
			t.Errorf("bob's context holds alice's text: %s", c.Text)
		}
	}
	if got := r.aliceThread(w.second); got.Status != episodic.StatusActive {
		t.Errorf("bob's sms ended alice's thread: %s", got.Status)
	}
	// turn.start as bob on sms: his own thread, none of hers.
	var start map[string]any
	r.Do(enginetest.Who{As: "bob", Turn: "b1"}, "turn.start", map[string]string{"channel": "sms", "input": "What about Friday?"}, &start)
	if b, _ := json.Marshal(start); strings.Contains(string(b), "4242") || strings.Contains(string(b), "Sunny") || strings.Contains(string(b), w.second) {
		t.Errorf("bob's turn.start holds alice's thread: %s", b)
	}
	// Naming her thread does not get it in either.
	r.Fail(enginetest.Who{As: "bob", Turn: "b2"}, "turn.start", map[string]string{"channel": "web", "thread_id": w.first, "input": "PIN?"}, errs.Permission, "thread.share")
	// Alice's own follow-up still links to her thread.
	r.at("11:10")
	res := enginetest.Call[episodic.MessageResult](r.Rig, alice, "thread.message", map[string]string{"channel": "web", "text": "And the weather in New York on Friday?"})
	if !slices.ContainsFunc(res.Decisions, func(d *episodic.Decision) bool { return d.Candidate == w.second || d.Candidate == w.first }) {
		t.Errorf("alice's follow-up was not scored against her own threads: %+v", res.Decisions)
	}
	for _, d := range res.Decisions {
		if d.Candidate != w.first && d.Candidate != w.second {
			t.Errorf("alice's thread was scored against %s, not hers", d.Candidate)
		}
	}
}

// TestDefaultAgentOwnsThreadsStoredWithoutOwners: threads stored before
// they had owners (no ACL key) are the default agent's.
func TestDefaultAgentOwnsThreadsStoredWithoutOwners(t *testing.T) {
	r := newRig(t)
	id := r.send("web", "", "What's the weather in New York?").ThreadID
	episodic.DropACL(t, r.e.Env(), id)
	r.Do(agent, "thread.get", map[string]string{"thread_id": id}, nil)
	r.Fail(bob, "thread.get", map[string]string{"thread_id": id}, errs.Permission, fmt.Sprintf("bob may not read thread %q", id), "the owner (local)")
}

// TestLinksToUnreadableThreadsAreHidden: a thread another agent linked to
// one of Alice's (he may read hers; she may not read his) does not show in
// her thread.get or thread.list, not even by id; once shared, it does.
func TestLinksToUnreadableThreadsAreHidden(t *testing.T) {
	r := newRig(t)
	w := newAliceWorld(r)
	r.Do(alice, "thread.share", map[string]any{"thread_id": w.second, "principal": "bob", "permissions": []string{"read"}}, nil)
	r.at("11:05")
	res := enginetest.Call[episodic.MessageResult](r.Rig, bob, "thread.message",
		map[string]string{"channel": "web", "text": "Oh, and the weather in New York on Friday?"})
	if !slices.Contains(res.LinkedThreads, w.second) {
		t.Fatalf("bob's thread did not link to alice's shared one: %+v", res)
	}
	bobs := res.ThreadID
	links := func() (get, list []string) {
		get = r.aliceThread(w.second).LinkedThreads
		for _, th := range enginetest.Call[episodic.ListResult](r.Rig, alice, "thread.list", struct{}{}).Threads {
			if th.ID == w.second {
				list = th.LinkedThreads
			}
		}
		return get, list
	}
	if get, list := links(); slices.Contains(get, bobs) || slices.Contains(list, bobs) || !slices.Contains(get, w.first) || !slices.Contains(list, w.first) {
		t.Errorf("alice sees links %v (get) and %v (list); want %s, not bob's %s", get, list, w.first, bobs)
	}
	// Nor the cross-thread episode his thread joined, as episode.list
	// leaves it out for her.
	_, xs := r.episodesAs(alice, w.second)
	if got := r.aliceThread(w.second).CrossThreadEpisodes; len(got) != len(xs) {
		t.Errorf("alice's thread lists cross-thread episodes %v; episode.list shows her %d", got, len(xs))
	}
	// Bob reads her thread with every link: he may read both.
	if got := enginetest.Call[episodic.GetResult](r.Rig, bob, "thread.get", episodic.GetArgs{ThreadID: w.second}).Thread.LinkedThreads; !slices.Contains(got, bobs) {
		t.Errorf("bob sees links %v, want his %s among them", got, bobs)
	}
	r.Do(bob, "thread.share", map[string]any{"thread_id": bobs, "principal": "alice", "permissions": []string{"read"}}, nil)
	if get, list := links(); !slices.Contains(get, bobs) || !slices.Contains(list, bobs) {
		t.Errorf("after bob shared, alice sees links %v (get) and %v (list); want his %s", get, list, bobs)
	}
}

// episodesAs is episode.list about a thread, as who.
func (r *rig) episodesAs(who enginetest.Who, threadID string) (eps []*episodic.Episode, xs []*episodic.CrossEpisode) {
	r.T.Helper()
	res := enginetest.Call[episodic.EpisodesResult](r.Rig, who, "episode.list", episodic.EpisodesArgs{ThreadID: threadID})
	return res.Episodes, res.CrossThreadEpisodes
}
