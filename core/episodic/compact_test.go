package episodic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/storage"
)

// episodicKeys returns every key and value the episodic layer stores (under
// episodic/ and idx/episodic/).
func episodicKeys(t testing.TB, st *storage.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, prefix := range []string{storage.PrefixEpisodic, storage.PrefixIndex + "episodic/"} {
		err := st.View(func(tx *storage.Tx) error {
			return tx.Scan(storage.Prefix([]byte(prefix)), func(k, v []byte) error {
				out[string(k)] = string(v)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// diffKeys lists how after differs from before (empty: identical).
func diffKeys(before, after map[string]string) []string {
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed "+k)
		} else if w != v {
			diffs = append(diffs, fmt.Sprintf("changed %s: %s → %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added "+k)
		}
	}
	return diffs
}

// countPrefix counts the keys of dump under prefix.
func countPrefix(dump map[string]string, prefix string) int {
	n := 0
	for k := range dump {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// pendingCompactions is engine.info's episodic.compactions_pending.
func pendingCompactions(r *rig) int {
	r.T.Helper()
	var info core.Info
	r.Do(agent, "engine.info", `{}`, &info)
	n, ok := info.Counts["episodic"]["compactions_pending"]
	if !ok {
		r.T.Fatalf("engine.info has no episodic.compactions_pending: %v", info.Counts)
	}
	return n
}

// episodeView reads an episode with episode.get.
func episodeView(r *rig, id string) (episodic.EpisodeView, json.RawMessage) {
	r.T.Helper()
	raw, err := r.Try(agent, "episode.get", map[string]string{"episode_id": id})
	if err != nil {
		r.T.Fatalf("episode.get %s: %v", id, err)
	}
	var out struct {
		Episode episodic.EpisodeView `json:"episode"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		r.T.Fatal(err)
	}
	return out.Episode, raw
}

// compactionScene is a thread of four turns on sms, ended at 10:45 by an
// unrelated message, which queues its episode for compaction.
type compactionScene struct {
	thread, episode string
	texts           []string
}

func playCompactionScene(r *rig) compactionScene {
	r.T.Helper()
	r.at("10:00")
	first := r.send("sms", "", "What's the weather in New York?")
	r.answer("sms", first.ThreadID, "Sunny, 72°F.")
	r.at("10:05")
	r.send("sms", "", "What about next week? I prefer mornings for my runs.")
	r.answer("sms", first.ThreadID, "Mixed, 65-75°F, with rain on Wednesday.")
	r.at("10:45")
	second := r.send("sms", "", "Book me a table for two at Nopa on Friday.")
	if !second.NewThread || second.EndedThread != first.ThreadID || len(second.Compacting) != 1 {
		r.T.Fatalf("the message at 10:45 should end thread %s and queue its episode: %+v", first.ThreadID, second)
	}
	return compactionScene{thread: first.ThreadID, episode: second.Compacting[0], texts: []string{
		"What's the weather in New York?", "Sunny, 72°F.", "What about next week? I prefer mornings for my runs.", "Mixed, 65-75°F, with rain on Wednesday.",
	}}
}

// checkUncompacted: the episode is closed and pending, every raw turn live,
// none archived, no summaries.
func checkUncompacted(r *rig, s compactionScene) {
	r.T.Helper()
	if n := pendingCompactions(r); n != 1 {
		r.T.Errorf("compactions_pending = %d, want 1", n)
	}
	ep, _ := episodeView(r, s.episode)
	if ep.Status != episodic.EpisodeClosed || ep.Summaries != nil || len(ep.Skills) != 0 || ep.CompactedAt != nil {
		r.T.Errorf("after the failure the episode is %s with summaries %+v, skills %v; want closed, none", ep.Status, ep.Summaries, ep.Skills)
	}
	th := r.thread(s.thread)
	if th.Status != episodic.StatusEnded {
		r.T.Errorf("thread status %s, want ended", th.Status)
	}
	if len(th.Turns) != len(s.texts) {
		r.T.Fatalf("thread has %d turns, want %d", len(th.Turns), len(s.texts))
	}
	for i, u := range th.Turns {
		if u.Archived || u.Text != s.texts[i] {
			r.T.Errorf("turn %d: archived=%v text %q; want live %q", u.Number, u.Archived, u.Text, s.texts[i])
		}
	}
	keys := episodicKeys(r.T, r.e.Env().Store)
	if n := countPrefix(keys, "episodic/arch/"+s.thread+"/"); n != 0 {
		r.T.Errorf("%d archived turns stored after the failure", n)
	}
	if n := countPrefix(keys, "episodic/turn/"+s.thread+"/"); n != len(s.texts) {
		r.T.Errorf("%d live turns stored after the failure, want %d", n, len(s.texts))
	}
}

// checkCompacted: the episode is compacted whole.
func checkCompacted(r *rig, s compactionScene) {
	r.T.Helper()
	if n := pendingCompactions(r); n != 0 {
		r.T.Errorf("compactions_pending = %d, want 0", n)
	}
	ep, _ := episodeView(r, s.episode)
	if ep.Status != episodic.EpisodeCompacted || ep.CompactedAt == nil {
		r.T.Fatalf("episode %s, compacted_at %v: want compacted, with the time", ep.Status, ep.CompactedAt)
	}
	if ep.Summaries == nil || len(ep.Summaries.Micro) == 0 || ep.Summaries.Meso == "" || ep.Summaries.Macro == "" {
		r.T.Errorf("summaries %+v: want micro, meso and macro", ep.Summaries)
	}
	if len(ep.Skills) == 0 {
		r.T.Errorf("no skills extracted (the user said a preference)")
	}
	if len(ep.Turns) != len(s.texts) {
		r.T.Errorf("episode.get shows %d raw turns, want %d", len(ep.Turns), len(s.texts))
	}
	for i, u := range ep.Turns {
		if !u.Archived || u.Text != s.texts[i] {
			r.T.Errorf("turn %d: archived=%v text %q; want archived %q", u.Number, u.Archived, u.Text, s.texts[i])
		}
	}
	if th := r.thread(s.thread); th.Status != episodic.StatusCompacted {
		r.T.Errorf("thread status %s, want compacted", th.Status)
	}
	keys := episodicKeys(r.T, r.e.Env().Store)
	if n := countPrefix(keys, "episodic/arch/"+s.thread+"/"); n != len(s.texts) {
		r.T.Errorf("%d archived turns stored, want %d", n, len(s.texts))
	}
	if n := countPrefix(keys, "episodic/turn/"+s.thread+"/"); n != 0 {
		r.T.Errorf("%d live turns left after compaction", n)
	}
}

// TestCompactInjectedFailure fails a compaction at each of its stages: the
// episode stays closed and pending, untouched; a retry (episode.compact, or
// a restart, which resumes pending compactions) completes it; compacting
// again changes nothing.
func TestCompactInjectedFailure(t *testing.T) {
	for _, stage := range []string{"summaries", "archive", "commit"} {
		for _, retry := range []string{"episode.compact", "reopen"} {
			t.Run(stage+"/"+retry, func(t *testing.T) {
				var mu sync.Mutex
				failing, seen := true, map[string]int{}
				hook := func(s string) error {
					mu.Lock()
					defer mu.Unlock()
					seen[s]++
					if failing && s == stage {
						return fmt.Errorf("injected failure at %s", s)
					}
					return nil
				}
				opts := episodic.CompactHook(episodic.Options{}, hook)
				dir := t.TempDir()
				r := newRigWith(t, rigOptions{dir: dir, opts: opts})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				evs := r.e.SubscribeBuffer(ctx, 64)

				s := playCompactionScene(r)
				r.ep.Settle()
				mu.Lock()
				if seen[stage] == 0 {
					t.Fatalf("the hook never reached %q (stages seen: %v)", stage, seen)
				}
				mu.Unlock()
				waitEvent(t, evs, episodic.EventCompactFailed.Name(), "injected failure at "+stage)
				checkUncompacted(r, s)

				// Asking again while it still fails reports the failure and
				// changes nothing.
				before := episodicKeys(t, r.e.Env().Store)
				if _, err := r.Try(agent, "episode.compact", map[string]string{"thread_id": s.thread}); err == nil || !strings.Contains(err.Error(), "injected failure") {
					t.Errorf("episode.compact while failing: %v", err)
				}
				if d := diffKeys(before, episodicKeys(t, r.e.Env().Store)); len(d) > 0 {
					t.Errorf("a failed episode.compact changed the store: %v", d)
				}

				mu.Lock()
				failing = false
				mu.Unlock()
				switch retry {
				case "episode.compact":
					var out struct {
						Episodes []*episodic.Episode `json:"episodes"`
					}
					r.Do(agent, "episode.compact", map[string]string{"thread_id": s.thread}, &out)
					if len(out.Episodes) != 1 || out.Episodes[0].ID != s.episode || out.Episodes[0].Status != episodic.EpisodeCompacted {
						t.Errorf("episode.compact compacted %+v, want episode %s", out.Episodes, s.episode)
					}
				case "reopen":
					if err := r.e.Close(); err != nil {
						t.Fatal(err)
					}
					r = newRigWith(t, rigOptions{dir: dir, opts: opts})
					r.ep.Settle()
				}
				checkCompacted(r, s)

				// Idempotent: compacting again, or restarting, changes nothing.
				before = episodicKeys(t, r.e.Env().Store)
				_, epJSON := episodeView(r, s.episode)
				var again struct {
					Episodes []*episodic.Episode `json:"episodes"`
				}
				r.Do(agent, "episode.compact", map[string]string{"thread_id": s.thread}, &again)
				if len(again.Episodes) != 0 {
					t.Errorf("compacting again compacted %d episode(s)", len(again.Episodes))
				}
				if err := r.e.Close(); err != nil {
					t.Fatal(err)
				}
				r = newRigWith(t, rigOptions{dir: dir, opts: opts})
				r.ep.Settle()
				if d := diffKeys(before, episodicKeys(t, r.e.Env().Store)); len(d) > 0 {
					t.Errorf("compacting again changed the store: %v", d)
				}
				if _, again := episodeView(r, s.episode); !bytes.Equal(again, epJSON) {
					t.Errorf("the episode changed:\n%s\n%s", epJSON, again)
				}
			})
		}
	}
}

// waitEvent reads events until one named name whose JSON contains want.
func waitEvent(t *testing.T, evs <-chan events.Event, name, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second) // a guard, never reached when it works
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("event stream closed before %s", name)
			}
			b, _ := json.Marshal(ev.Data)
			if ev.Name == name && strings.Contains(string(b), want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event containing %q", name, want)
		}
	}
}

// TestCompactDoesNotBlockMessages: compaction runs in the background; a
// message — to the thread that just started, or to a new one — returns
// while it is stuck, and readers that show compaction state wait for it.
func TestCompactDoesNotBlockMessages(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(stage string) error {
		if stage == "summaries" {
			// A retry after a commit conflict comes here again: block once.
			blocked := false
			once.Do(func() { close(entered); blocked = true })
			if blocked {
				<-release
			}
		}
		return nil
	}
	r := newRigWith(t, rigOptions{opts: episodic.CompactHook(episodic.Options{}, hook)})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	s := playCompactionScene(r) // returned although the compaction is queued
	guard := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second): // a guard against a hang, not a wait for a race
			t.Fatalf("%s: still blocked after 30 s", what)
		}
	}
	guard("the compaction never started", entered)

	done := make(chan struct{})
	var results []episodic.MessageResult
	var sendErr error
	go func() {
		defer close(done)
		for _, m := range []struct{ hhmm, channel, thread, speaker, text string }{
			{"10:50", "sms", "", "user", "Can you make it 8 pm instead?"},
			{"10:52", "web", "", "user", "Draft a packing list for Lisbon."},
			{"10:53", "web", "<new>", "assistant", "Passport, adapter, light jacket."},
		} {
			if m.thread == "<new>" {
				m.thread = results[1].ThreadID
			}
			r.at(m.hhmm)
			raw, err := r.Try(agent, "thread.message", map[string]string{"channel": m.channel, "thread_id": m.thread, "speaker": m.speaker, "text": m.text})
			var res episodic.MessageResult
			if err == nil {
				err = json.Unmarshal(raw, &res)
			}
			if err != nil {
				sendErr = err
				return
			}
			results = append(results, res)
		}
	}()
	guard("messages blocked on a running compaction", done)
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	if results[0].NewThread || results[1].ThreadID == results[0].ThreadID || !results[1].NewThread || results[2].TurnCount != 2 {
		t.Errorf("messages while compacting went wrong: %+v", results)
	}
	// Still mid-compaction: the store shows it closed and pending.
	var ep episodic.Episode
	err := r.e.Env().Store.View(func(tx *storage.Tx) error {
		return tx.GetJSON(storage.Key(storage.PrefixEpisodic, "ep", s.episode), &ep)
	})
	if err != nil || ep.Status != episodic.EpisodeClosed {
		t.Errorf("mid-compaction the episode is %q (%v), want closed", ep.Status, err)
	}

	// A reader of compaction state settles it first: asked now, it answers
	// once the compaction is done, and shows it done.
	type listing struct {
		Threads []*episodic.Thread `json:"threads"`
	}
	listed := make(chan listing, 1)
	go func() {
		var out listing
		raw, err := r.e.Do(context.Background(), core.Request{Action: "thread.list", Args: json.RawMessage(`{}`)})
		if err == nil {
			err = json.Unmarshal(raw, &out)
		}
		if err != nil {
			t.Errorf("thread.list: %v", err)
		}
		listed <- out
	}()
	close(release)
	released = true
	select {
	case out := <-listed:
		for _, th := range out.Threads {
			if th.ID == s.thread && th.Status != episodic.StatusCompacted {
				t.Errorf("thread.list during the compaction shows thread %s %s: it did not wait for the compaction", th.ID, th.Status)
			}
		}
		if len(out.Threads) != 3 {
			t.Errorf("thread.list shows %d threads, want 3", len(out.Threads))
		}
	case <-time.After(30 * time.Second): // a guard against a hang
		t.Fatal("thread.list still blocked after the compaction was released")
	}
	r.ep.Settle()
	checkCompacted(r, s)
}

// TestCompactKill9 runs engram --batch on a data directory, sends a thread
// of 40 turns and then a message that ends it (queueing its compaction),
// and SIGKILLs engram as soon as that message is acknowledged — while the
// background compaction is queued, running or done; which one cannot be
// chosen without sleeping, so the test checks the store in whatever state
// the kill left it: never half compacted. (TestCompactInjectedFailure is the
// deterministic mid-compaction crash.) Then engram's store is opened in
// process: every acknowledged message is there, and a pending compaction
// completes on start.
func TestCompactKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds engram")
	}
	bin := enginetest.Binary(t)
	dir := filepath.Join(t.TempDir(), "data")
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ENGRAM_LOG=" + filepath.Join(home, "engram.log"),
		"XDG_DATA_HOME=" + filepath.Join(home, "xdg-data"), "XDG_STATE_HOME=" + filepath.Join(home, "xdg-state")}
	p := enginetest.Start(t, bin, env, "--batch", "-", "--data", dir)
	cmd, stdin, stdout, stderr := p.Cmd, p.Stdin, p.Stdout, p.Stderr
	// The script: 40 turns from 10:00, then at 12:00 a message that ends
	// the thread. stdin stays open, so engram is alive, waiting for more,
	// when it is killed.
	const turns = 40
	type sent struct{ id, speaker, text string }
	var script []sent
	for i := range turns {
		speaker, text := "user", fmt.Sprintf("Question %d about the Lisbon trip: which museum opens at %d am?", i/2, 9+i%3)
		if i%2 == 1 {
			speaker, text = "assistant", fmt.Sprintf("Answer %d: the Gulbenkian opens at %d am, €%d entry.", i/2, 9+i%3, 10+i)
		}
		script = append(script, sent{fmt.Sprintf("m%02d", i), speaker, text})
	}
	script = append(script, sent{"ender", "user", "Set a reminder to call the plumber tomorrow."})
	go func() {
		for i, m := range script {
			at := t0.Add(time.Duration(i) * time.Minute)
			if m.id == "ender" {
				at = t0.Add(2 * time.Hour) // 81 minutes after the last turn
			}
			step, _ := json.Marshal(map[string]any{"id": m.id, "action": "thread.message", "at": at.Format(time.RFC3339Nano),
				"args": map[string]string{"channel": "sms", "speaker": m.speaker, "text": m.text}})
			if _, err := stdin.Write(append(step, '\n')); err != nil {
				return
			}
		}
	}()

	type ack struct {
		ID     string                 `json:"id"`
		OK     bool                   `json:"ok"`
		Result episodic.MessageResult `json:"result"`
		Error  json.RawMessage        `json:"error"`
	}
	acked := map[string]ack{}
	var ender ack
	killed := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a ack
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Errorf("result line %q: %v", sc.Bytes(), err)
			continue
		}
		if !a.OK {
			t.Fatalf("step %s failed: %s\nstderr: %s", a.ID, a.Error, stderr.Bytes())
		}
		acked[a.ID] = a
		if a.ID == "ender" && !killed {
			ender = a
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	waitErr := cmd.Wait()
	_ = stdin.Close() // Wait has closed the pipe already: nothing to report
	var exitErr *exec.ExitError
	if !killed || !errors.As(waitErr, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("engram was not killed (killed %v, %v)\nstderr:\n%s", killed, waitErr, stderr.Bytes())
	}
	if len(acked) != len(script) || len(ender.Result.Compacting) != 1 || ender.Result.EndedThread == "" {
		t.Fatalf("%d of %d acknowledged; the last one %+v should have queued a compaction", len(acked), len(script), ender.Result)
	}
	first, episode := ender.Result.EndedThread, ender.Result.Compacting[0]

	// The store as the kill left it, before anything resumes: the episode
	// is either untouched and pending, or compacted whole.
	st, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	raw := episodicKeys(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var ep episodic.Episode
	if err := json.Unmarshal([]byte(raw["episodic/ep/"+episode]), &ep); err != nil {
		t.Fatalf("episode %s after the kill: %v", episode, err)
	}
	pending := countPrefix(raw, "episodic/pending/"+episode)
	archived, live := countPrefix(raw, "episodic/arch/"+first+"/"), countPrefix(raw, "episodic/turn/"+first+"/")
	switch {
	case ep.Status == episodic.EpisodeClosed && pending == 1 && archived == 0 && live == turns && ep.Summaries == nil:
		t.Logf("killed with the compaction pending: it must complete on start")
	case ep.Status == episodic.EpisodeCompacted && pending == 0 && archived == turns && live == 0 && ep.Summaries != nil:
		t.Logf("killed after the compaction committed")
	default:
		t.Fatalf("half-compacted after the kill: episode %s, pending %d, %d archived and %d live turns, summaries %v",
			ep.Status, pending, archived, live, ep.Summaries != nil)
	}

	// Reopen in process: the compaction completes, every message is there.
	r := newRigWith(t, rigOptions{dir: dir})
	r.ep.Settle()
	if n := pendingCompactions(r); n != 0 {
		t.Errorf("compactions_pending = %d after the restart", n)
	}
	view, _ := episodeView(r, episode)
	if view.Status != episodic.EpisodeCompacted || view.Summaries == nil || view.Summaries.Meso == "" || len(view.Summaries.Micro) != turns/5 {
		t.Errorf("after the restart episode %s is %s, summaries %+v", episode, view.Status, view.Summaries)
	}
	if len(view.Turns) != turns {
		t.Errorf("episode.get shows %d turns, want %d", len(view.Turns), turns)
	}
	got := map[string]*episodic.Turn{}
	for _, id := range []string{first, ender.Result.ThreadID} {
		th := r.thread(id)
		for _, u := range th.Turns {
			got[fmt.Sprintf("%s/%d", u.ThreadID, u.Number)] = u
			if id == first && !u.Archived {
				t.Errorf("turn %d of the ended thread is not archived", u.Number)
			}
		}
	}
	for i, m := range script {
		a := acked[m.id]
		u := got[fmt.Sprintf("%s/%d", a.Result.ThreadID, a.Result.TurnCount)]
		if u == nil || u.Text != m.text || u.Speaker != m.speaker {
			t.Errorf("acknowledged message %d (%q) reads back as %+v", i, m.text, u)
		}
	}
	if len(got) != len(script) {
		t.Errorf("%d turns after the restart, %d acknowledged", len(got), len(script))
	}
}

// fiveWeatherTurns is Thread 1: five turns about the weather, 10:00-10:10.
var fiveWeatherTurns = []struct{ speaker, text string }{
	{"user", "What's the weather in New York?"},
	{"assistant", "Sunny, 72°F in Manhattan."},
	{"user", "What about next week?"},
	{"assistant", "Mixed, 65-75°F with rain on Tuesday."},
	{"user", "I prefer Celsius, by the way."},
}

// sendFiveWeatherTurns sends fiveWeatherTurns on sms and returns the thread.
func sendFiveWeatherTurns(r *rig) string {
	r.at("10:00")
	id := r.send("sms", "", fiveWeatherTurns[0].text).ThreadID
	for i, u := range fiveWeatherTurns[1:] {
		r.clock.Set(clockAt("10:00").Add(time.Duration(2*(i+1)) * time.Minute))
		if u.speaker == "assistant" {
			r.answer("sms", id, u.text)
		} else {
			r.send("sms", "", u.text)
		}
	}
	return id
}

// checkCompactedEpisode checks a compacted episode: summaries at three tiers,
// skills, its raw turns archived and retrievable.
func checkCompactedEpisode(t *testing.T, r *rig, epID, reason string, texts []string) episodic.EpisodeView {
	t.Helper()
	v := r.episode(epID)
	if v.Status != episodic.EpisodeCompacted || v.Reason != reason || v.CompactedAt == nil || v.ClosedAt == nil {
		t.Errorf("episode %s: status %s, reason %q, closed %v, compacted %v; want compacted, %s", epID, v.Status, v.Reason, v.ClosedAt, v.CompactedAt, reason)
	}
	if v.Summaries == nil || len(v.Summaries.Micro) == 0 || v.Summaries.Meso == "" || v.Summaries.Macro == "" {
		t.Fatalf("summaries %+v; want micro, meso and macro", v.Summaries)
	}
	for _, m := range v.Summaries.Micro {
		if m.Text == "" {
			t.Errorf("empty micro summary of turns %v", m.Turns)
		}
	}
	if first, last := v.Summaries.Micro[0].Turns[0], v.Summaries.Micro[len(v.Summaries.Micro)-1].Turns[1]; first != v.FirstTurn || last != v.LastTurn {
		t.Errorf("micro summaries cover turns %d-%d, the episode %d-%d", first, last, v.FirstTurn, v.LastTurn)
	}
	if len(v.Skills) == 0 {
		t.Error("no skills extracted")
	}
	if !slices.Equal(allTexts(v.Turns), texts) {
		t.Errorf("episode.get turns %q, want the raw turns %q", allTexts(v.Turns), texts)
	}
	for _, u := range v.Turns {
		if !u.Archived || u.EpisodeID != epID {
			t.Errorf("turn %d: archived %v, episode %s", u.Number, u.Archived, u.EpisodeID)
		}
	}
	return v
}

// TestThreadEndCompactsItsEpisode: a thread ended by a newer one has its
// episode compacted into summaries and skills, its turns archived (seed
// 5.1).
func TestThreadEndCompactsItsEpisode(t *testing.T) {
	r := newRig(t)
	t1 := sendFiveWeatherTurns(r)
	r.at("10:45") // 37 minutes after the last turn
	res := r.send("sms", "", "Book me a flight to Tokyo")
	if !res.NewThread || res.EndedThread != t1 {
		t.Fatalf("Thread 2 should start and end Thread 1: %+v", res)
	}
	th := r.liveThread(t1) // reading settles the compaction
	if len(th.Episodes) != 1 || !slices.Equal(res.Compacting, th.Episodes) {
		t.Fatalf("Thread 1's episodes %q, compacting %q", th.Episodes, res.Compacting)
	}
	var texts []string
	for _, u := range fiveWeatherTurns {
		texts = append(texts, u.text)
	}
	v := checkCompactedEpisode(t, r, th.Episodes[0], "thread_end", texts)
	if v.TurnCount != 5 || v.FirstTurn != 1 || v.LastTurn != 5 {
		t.Errorf("episode turns %d (%d-%d), want 5 (1-5)", v.TurnCount, v.FirstTurn, v.LastTurn)
	}
	if !strings.Contains(v.Summaries.Meso, "New York") {
		t.Errorf("the episode's summary should say what it was about: %q", v.Summaries.Meso)
	}
	var kinds []string
	for _, s := range v.Skills {
		kinds = append(kinds, s.Kind+": "+s.Text)
	}
	if !slices.Contains(kinds, "preference: I prefer Celsius, by the way") {
		t.Errorf("skills %q should include the user's preference", kinds)
	}
	if th.Status != episodic.StatusCompacted || th.TurnCount != 5 || len(th.Turns) != 0 {
		t.Errorf("Thread 1: status %s, turn_count %d, %d live turns; want compacted, 5, 0", th.Status, th.TurnCount, len(th.Turns))
	}
	all := r.thread(t1) // with the archived turns
	if !slices.Equal(allTexts(all.Turns), texts) {
		t.Errorf("archived turns %q", allTexts(all.Turns))
	}
	for _, u := range all.Turns {
		if !u.Archived {
			t.Errorf("turn %d not archived", u.Number)
		}
	}
}

// TestSizeThresholdClosesAndCompactsAnEpisode: an episode reaching its size
// limit closes and is compacted; the thread goes on in a new episode (seed
// 5.2).
func TestSizeThresholdClosesAndCompactsAnEpisode(t *testing.T) {
	r := newRig(t)
	r.at("10:00")
	var t1 string
	var texts []string
	for i := range 50 { // 25 questions and their answers, a minute apart
		r.clock.Set(clockAt("10:00").Add(time.Duration(i) * time.Minute))
		day := i/2 + 1
		if i%2 == 0 {
			text := fmt.Sprintf("What's the forecast for day %d in Chicago?", day)
			res := r.send("sms", "", text)
			if t1 == "" {
				t1 = res.ThreadID
			} else if res.ThreadID != t1 || res.NewThread {
				t.Fatalf("turn %d left the thread", i+1)
			}
			texts = append(texts, text)
		} else {
			text := fmt.Sprintf("Day %d: %d°F and sunny.", day, 60+day)
			r.answer("sms", t1, text)
			texts = append(texts, text)
		}
	}
	ep1 := r.thread(t1).Episodes
	if len(ep1) != 1 {
		t.Fatalf("after 50 turns: episodes %q, want one", ep1)
	}

	r.at("10:50")
	res := r.send("sms", "", "And what about day 26?") // turn 51
	if res.ThreadID != t1 || res.TurnCount != 51 || !slices.Equal(res.Compacting, ep1) {
		t.Fatalf("turn 51: %+v; want thread 1, turn 51, compacting episode 1", res)
	}
	r.ep.Settle()

	th := r.thread(t1)
	if len(th.Episodes) != 2 || th.Episodes[0] != ep1[0] {
		t.Fatalf("episodes %q; want episode 1 and a new one", th.Episodes)
	}
	v := checkCompactedEpisode(t, r, ep1[0], "size", texts)
	if v.TurnCount != 50 || v.FirstTurn != 1 || v.LastTurn != 50 {
		t.Errorf("episode 1: %d turns (%d-%d), want 50 (1-50)", v.TurnCount, v.FirstTurn, v.LastTurn)
	}
	ep2 := r.episode(th.Episodes[1])
	if ep2.Number != 2 || ep2.Status != episodic.EpisodeOpen || ep2.TurnCount != 1 || ep2.FirstTurn != 51 ||
		len(ep2.Turns) != 1 || ep2.Turns[0].Text != "And what about day 26?" || res.Turn.EpisodeID != ep2.ID {
		t.Errorf("episode 2: %+v; want it open with turn 51", ep2)
	}
	if th.Status != episodic.StatusActive || th.TurnCount != 51 {
		t.Errorf("thread: status %s, turn_count %d; want active, 51", th.Status, th.TurnCount)
	}
}

// TestCompactedTurnsStayRetrievable: after compaction, archived turns and
// summaries are still what context and thread.get draw on (seed 5.3).
func TestCompactedTurnsStayRetrievable(t *testing.T) {
	r := newRig(t)
	t1 := sendFiveWeatherTurns(r)
	r.at("10:45")
	res := r.send("sms", "", "Oh, and what is it on Thursday?")
	t2 := res.ThreadID
	if !res.NewThread || !slices.Equal(res.LinkedThreads, []string{t1}) {
		t.Fatalf("Thread 2 should be linked to Thread 1: %+v", res)
	}
	r.ep.Settle()
	ep1 := r.episode(r.thread(t1).Episodes[0])
	if ep1.Status != episodic.EpisodeCompacted {
		t.Fatalf("episode 1 is %s", ep1.Status)
	}
	r.answer("sms", t2, "Thursday: 20°C and clear.")
	r.at("10:50")
	r.send("sms", "", "Should I bring an umbrella?") // a new turn in Thread 2

	c := r.contextOf(t2, "", "")

	if len(c.Threads) != 2 || c.Threads[0].ID != t1 || c.Threads[0].Compacted != 1 {
		t.Fatalf("threads %+v; want Thread 1 with its compacted episode, then Thread 2", c.Threads)
	}
	if !slices.Contains(c.Summaries, ep1.Summaries.Meso) {
		t.Errorf("episode 1's summary %q not among %q", ep1.Summaries.Meso, c.Summaries)
	}
	for _, s := range ep1.Skills {
		if !slices.Contains(c.Skills, s) {
			t.Errorf("episode 1's skill %+v not available: %+v", s, c.Skills)
		}
	}
	for _, want := range []string{
		"(preference) I prefer Celsius, by the way",
		"- What's the weather in New York? (Sunny, 72°F in Manhattan)",
		"- Oh, and what is it on Thursday? (Thursday: 20°C and clear)",
		"Current question: Should I bring an umbrella?",
		"(Continuing from previous thread after 37 min break)",
	} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("the prompt should include %q:\n%s", want, c.Text)
		}
	}
	// The raw turns, if needed.
	var texts []string
	for _, u := range fiveWeatherTurns {
		texts = append(texts, u.text)
	}
	if !slices.Equal(allTexts(ep1.Turns), texts) {
		t.Errorf("episode.get turns %q, want %q", allTexts(ep1.Turns), texts)
	}
}
