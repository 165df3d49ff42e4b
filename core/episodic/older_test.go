package episodic_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/episodic"
)

// Issue 18: thread linking shares the hybrid retrieval. A new thread's
// candidates are the 50 most recently active threads and, beyond them, the
// few older ones a search of its message finds (older.go).

// backReference is a message about a thread from months ago.
const backReference = "Remember when we talked about the Lisbon flat?"

// fillerThreads starts n threads (one user message each: an answer would
// only make the tests slower) about nothing the back-reference names, one
// a minute from the clock on, as who.
func fillerThreads(r *rig, who enginetest.Who, n int) {
	r.T.Helper()
	chores := []string{"water the tomatoes", "call the plumber about the tap", "order printer ink", "pay the electricity bill", "book the car service"}
	for i := range n {
		r.clock.Advance(time.Minute)
		enginetest.Call[episodic.MessageResult](r.Rig, who, "thread.message", map[string]string{"channel": "web", "text": fmt.Sprintf("Remind me to %s, chore %d.", chores[i%len(chores)], i)})
	}
}

// oldThread starts a thread of two turns as who, at the clock's time.
func oldThread(r *rig, who enginetest.Who, question, answer string) string {
	r.T.Helper()
	res := enginetest.Call[episodic.MessageResult](r.Rig, who, "thread.message", map[string]string{"channel": "web", "text": question})
	enginetest.Call[episodic.MessageResult](r.Rig, who, "thread.message", map[string]string{"channel": "web", "thread_id": res.ThreadID, "speaker": "assistant", "text": answer})
	return res.ThreadID
}

// lisbonWorld is an old thread about a flat in Lisbon and an old one about
// a passport (which shares only "talked" and filler with the
// back-reference), four months before fillers threads about chores (50:
// as many as the recent candidates by default).
func lisbonWorld(r *rig, fillers int) (lisbon, passport string) {
	r.T.Helper()
	r.clock.Set(t0.AddDate(0, -4, 0))
	lisbon = oldThread(r, agent, "I'm looking at a flat in Lisbon, two bedrooms near Alfama.", "The Alfama flat is 1,200 euros a month; the viewing is on Saturday.")
	r.clock.Advance(time.Hour)
	passport = oldThread(r, agent, "We talked about renewing my passport; remind me when it expires.", "It expires in March; I will remind you in January.")
	r.clock.Set(t0)
	fillerThreads(r, agent, fillers)
	r.clock.Advance(time.Hour)
	return lisbon, passport
}

// decisionAbout is the decision about candidate among ds, or nil.
func decisionAbout(ds []*episodic.Decision, candidate string) *episodic.Decision {
	for _, d := range ds {
		if d.Candidate == candidate {
			return d
		}
	}
	return nil
}

// foundTerms are the terms a Found lists.
func foundTerms(f *episodic.Found) []string {
	var out []string
	for _, t := range f.Terms {
		out = append(out, t.Term)
	}
	return out
}

// TestBackReferenceLinksAThreadOlderThanTheFiftyMostRecent: a thread about
// the Lisbon flat, four months and 50 threads ago, is not among the 50
// most recent, yet "Remember when we talked about the Lisbon flat?" links
// to it: a search found it, and the decision says so and by which words.
func TestBackReferenceLinksAThreadOlderThanTheFiftyMostRecent(t *testing.T) {
	t.Parallel() // each its own engine; the slowest of the package
	r := newRig(t)
	lisbon, _ := lisbonWorld(r, 50)
	res := r.send("web", "", backReference)
	d := decisionAbout(res.Decisions, lisbon)
	if d == nil {
		t.Fatalf("the Lisbon thread was not a candidate: decisions %s", enginetest.Short(res.Decisions))
	}
	if d.Decision != episodic.Link || !slices.Contains(res.LinkedThreads, lisbon) {
		t.Errorf("the back-reference did not link to the Lisbon thread: %s (%.2f, signals %+v)", d.Decision, d.Algorithmic, d.Signals)
	}
	if d.Found == nil || d.Found.By != episodic.FoundBySearch || d.Found.Rank != 1 {
		t.Fatalf("the decision should say a search found the thread, first: %+v", d.Found)
	}
	if got := foundTerms(d.Found); !slices.Contains(got, "lisbon") || !slices.Contains(got, "flat") {
		t.Errorf("found by %q, want lisbon and flat", got)
	}
	// The recent candidates are still scored, and say nothing of search.
	recent := 0
	for _, d := range res.Decisions {
		if d.Candidate != lisbon && d.Found != nil {
			t.Errorf("decision about %s says it was found by search: %+v", d.Candidate, d.Found)
		}
		if d.Candidate != lisbon {
			recent++
		}
	}
	if recent == 0 {
		t.Errorf("no decision about the recent threads: %s", enginetest.Short(res.Decisions))
	}
	// The stored decision (episode.decisions) shows it too.
	var found bool
	for _, raw := range r.decisionsRaw(res.ThreadID) {
		if raw["candidate_thread_id"] == lisbon {
			f, _ := raw["found"].(map[string]any)
			found = f["by"] == "search"
		} else if _, ok := raw["found"]; ok {
			t.Errorf("a recent candidate's decision has found: %v", raw)
		}
	}
	if !found {
		t.Errorf("episode.decisions does not say the Lisbon thread was found by search")
	}
}

// TestUnrelatedOldThreadIsNotACandidate: an old thread that shares only
// filler with the message ("talked", "remind") is not added; the old
// thread about its subject is, alone.
func TestUnrelatedOldThreadIsNotACandidate(t *testing.T) {
	t.Parallel() // each its own engine; the slowest of the package
	r := newRigWith(t, rigOptions{opts: smallRecent})
	lisbon, passport := lisbonWorld(r, smallRecent.MaxCandidates)
	got := r.ep.OlderCandidates(t, r.e.Agent(), backReference)
	if len(got) != 1 || got[0].ID != lisbon {
		t.Fatalf("older candidates %+v, want the Lisbon thread (%s) alone, not the passport's (%s)", got, lisbon, passport)
	}
	// A message of filler and time words alone finds nothing older.
	if got := r.ep.OlderCandidates(t, r.e.Agent(), "Remember what we talked about last week?"); len(got) != 0 {
		t.Errorf("a message with no word of its own found %+v", got)
	}
	res := r.send("web", "", backReference)
	if d := decisionAbout(res.Decisions, passport); d != nil {
		t.Errorf("the passport thread was a candidate: %+v", d)
	}
}

// TestOlderThreadsFoundAreOnlyThoseThePrincipalMayRead: Alice's old thread
// about the Lisbon flat is never a candidate of Bob's new thread, though it
// matches better than Bob's own; Bob's own old thread is.
func TestOlderThreadsFoundAreOnlyThoseThePrincipalMayRead(t *testing.T) {
	t.Parallel() // each its own engine; the slowest of the package
	r := newRig(t)
	r.clock.Set(t0.AddDate(0, -4, 0))
	alices := oldThread(r, alice, "I'm looking at a flat in Lisbon, two bedrooms near Alfama.", "The Lisbon flat in Alfama is 1,200 euros a month.")
	r.clock.Advance(time.Hour)
	bobs := oldThread(r, bob, "Any news on the Lisbon office move?", "The office moves in May.")
	r.clock.Set(t0)
	fillerThreads(r, bob, 50)
	r.clock.Advance(time.Hour)

	got := r.ep.OlderCandidates(t, "bob", backReference)
	if len(got) != 1 || got[0].ID != bobs {
		t.Fatalf("Bob's older candidates %+v, want his own Lisbon thread (%s) alone, never Alice's (%s)", got, bobs, alices)
	}
	res := enginetest.Call[episodic.MessageResult](r.Rig, bob, "thread.message", map[string]string{"channel": "web", "text": backReference})
	if d := decisionAbout(res.Decisions, alices); d != nil {
		t.Errorf("Bob's thread was linked against Alice's: %+v", d)
	}
	if d := decisionAbout(res.Decisions, bobs); d == nil || d.Found == nil {
		t.Errorf("Bob's own old Lisbon thread was not found: %s", enginetest.Short(res.Decisions))
	}
	// Alice, with fewer than 50 threads, has every thread of hers a
	// candidate already: nothing is searched for her.
	if got := r.ep.OlderCandidates(t, "alice", backReference); len(got) != 0 {
		t.Errorf("Alice's older candidates %+v, want none", got)
	}
}

// smallRecent makes 5 threads the recent candidates: the older ones are
// searched as past the default 50, in a world a tenth the size.
var smallRecent = episodic.Options{MaxCandidates: 5, MaxSearched: episodic.DefaultMaxSearched}

// linkScript runs the same steps on r (made with smallRecent): the Lisbon world, a continued old
// thread (which takes it out of the older ones and back), and three
// back-references; it returns every decision about a candidate found by
// search, and all of them, as JSON.
func linkScript(t *testing.T, rp **rig, between func()) (found []string, all string) {
	t.Helper()
	r := *rp
	lisbon, passport := lisbonWorld(r, smallRecent.MaxCandidates)
	first := r.send("web", "", backReference)
	r.clock.Advance(time.Minute)
	r.send("web", passport, "Did my passport renewal go through?")
	between()
	r = *rp
	r.clock.Advance(time.Minute)
	second := r.send("web", "", "What did we say about the flat near Alfama?")
	r.clock.Advance(time.Minute)
	third := r.send("web", "", "Going back to the Lisbon viewing on Saturday: is it still on?")
	var b []byte
	for _, res := range []episodic.MessageResult{first, second, third} {
		for _, d := range res.Decisions {
			if d.Found != nil {
				j, _ := json.Marshal(struct {
					Candidate   string
					Algorithmic float64
					Decision    string
					Found       *episodic.Found
				}{d.Candidate, d.Algorithmic, d.Decision, d.Found})
				found = append(found, string(j))
			}
		}
		j, _ := json.Marshal(res.Decisions)
		b = append(b, j...)
	}
	r.ep.CheckOlderActivity(t)
	if !slices.ContainsFunc(second.Decisions, func(d *episodic.Decision) bool { return d.Candidate == lisbon && d.Found != nil }) {
		t.Errorf("the second back-reference did not find the Lisbon thread: %s", enginetest.Short(second.Decisions))
	}
	return found, string(b)
}

// TestOlderCandidatesAreTheSameOnEveryRun: the same steps on a fresh store
// give the same decisions byte for byte; and after a restart midway (the
// index built from scratch rather than kept and appended to) the same
// threads are found, by the same words, scored alike.
func TestOlderCandidatesAreTheSameOnEveryRun(t *testing.T) {
	t.Parallel() // each its own engine; the slowest of the package
	a, b := newRigWith(t, rigOptions{opts: smallRecent}), newRigWith(t, rigOptions{opts: smallRecent})
	foundA, allA := linkScript(t, &a, func() {})
	foundB, allB := linkScript(t, &b, func() {})
	if len(foundA) == 0 {
		t.Fatal("no candidate was found by search")
	}
	if allA != allB {
		t.Errorf("two runs of the same steps decided differently:\n%s\n%s", allA, allB)
	}
	if !slices.Equal(foundA, foundB) {
		t.Errorf("two runs found differently:\n%q\n%q", foundA, foundB)
	}

	o := rigOptions{dir: t.TempDir(), opts: smallRecent}
	c := newRigWith(t, o)
	foundC, _ := linkScript(t, &c, func() { c = c.reopen(&o) })
	if !slices.Equal(foundA, foundC) {
		t.Errorf("after a restart the older threads were found differently:\n%q\n%q", foundA, foundC)
	}
}

// TestConcurrentNewThreadsSearchOlderThreads: new threads and messages to
// old threads at once, with few recent candidates so that most threads
// are older and searched (run it with -race): every message succeeds, and
// every candidate a search found is one the recent ones did not include.
func TestConcurrentNewThreadsSearchOlderThreads(t *testing.T) {
	r := newRigWith(t, rigOptions{opts: episodic.Options{MaxCandidates: 3, MaxSearched: 3}})
	var old []string
	for i := range 8 {
		r.clock.Advance(time.Minute)
		old = append(old, r.send("web", "", fmt.Sprintf("Notes on the Lisbon flat, visit %d.", i)).ThreadID)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				args := map[string]string{"channel": "web", "text": fmt.Sprintf("Remember the Lisbon flat? Question %d-%d.", g, i)}
				if i%2 == 1 {
					args = map[string]string{"channel": "web", "thread_id": old[(g+i)%len(old)], "text": fmt.Sprintf("More on the flat, %d-%d.", g, i)}
				}
				raw, err := r.Try(agent, "thread.message", args)
				if err != nil {
					errc <- err
					continue
				}
				var res episodic.MessageResult
				if err := json.Unmarshal(raw, &res); err != nil {
					errc <- err
					continue
				}
				seen := map[string]bool{}
				for _, d := range res.Decisions {
					if seen[d.Candidate] {
						errc <- fmt.Errorf("%s is a candidate twice: %s", d.Candidate, raw)
					}
					seen[d.Candidate] = true
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// The activity index kept in memory, moved by every commit (or
	// scanned again when a plan raced one), is the store's.
	r.send("web", "", "Remember the Lisbon flat? Once more.")
	r.send("web", old[0], "And once more on the flat.")
	r.ep.CheckOlderActivity(t)
}

// TestACrossThreadEpisodeNeverHoldsMoreThanItsBound: alike threads that
// all link to the ones before them fill one cross-thread episode up to
// MaxEpisodeThreads; the next link starts another, so no episode's record
// grows without end and every new thread's message is still taken.
func TestACrossThreadEpisodeNeverHoldsMoreThanItsBound(t *testing.T) {
	t.Parallel() // each its own engine; the slowest of the package
	r := newRigWith(t, rigOptions{opts: episodic.FixedScores(episodic.Options{MaxCandidates: 2}, func(string, string) float64 { return 0.9 })})
	var last episodic.MessageResult
	for i := range episodic.MaxEpisodeThreads + 10 {
		r.clock.Advance(time.Minute)
		last = enginetest.Call[episodic.MessageResult](r.Rig, agent, "thread.message", map[string]string{"channel": "web", "text": fmt.Sprintf("Weather in Porto today, asked the %dth time?", i)})
	}
	if last.Decision == nil || last.Decision.Decision != episodic.Link || last.Decision.CrossThreadEpisode == "" {
		t.Fatalf("the last thread was not linked: %+v", last.Decision)
	}
	list := enginetest.Call[episodic.EpisodesResult](r.Rig, agent, "episode.list", map[string]string{})
	if len(list.CrossThreadEpisodes) < 2 {
		t.Errorf("%d cross-thread episodes, want a second once the first was full", len(list.CrossThreadEpisodes))
	}
	for _, x := range list.CrossThreadEpisodes {
		if len(x.LinkedThreads) > episodic.MaxEpisodeThreads {
			t.Errorf("episode %s holds %d threads, more than %d", x.ID, len(x.LinkedThreads), episodic.MaxEpisodeThreads)
		}
	}
}

// kitchenAfterPorto asks, as bob, about the kitchen budget "after the
// Porto conference": the conference thread is conferenceBy's, two months
// old; bob's kitchen thread is five days younger; two filler threads are
// the most recent (MaxCandidates 2). It returns the decision about the
// kitchen thread, which a search must have found.
func kitchenAfterPorto(t *testing.T, conferenceBy enginetest.Who) *episodic.Decision {
	t.Helper()
	r := newRigWith(t, rigOptions{opts: episodic.Options{MaxCandidates: 2, MaxSearched: 5}})
	r.clock.Set(t0.AddDate(0, 0, -60))
	oldThread(r, conferenceBy, "Booking the Porto conference trip for the team.", "The Porto conference hotel is booked.")
	r.clock.Advance(5 * 24 * time.Hour)
	kitchen := oldThread(r, bob, "What is the budget for the kitchen renovation?", "The kitchen budget is 8,000 euros.")
	r.clock.Set(t0)
	fillerThreads(r, bob, 2)
	r.clock.Advance(time.Hour)

	res := enginetest.Call[episodic.MessageResult](r.Rig, bob, "thread.message", map[string]string{"channel": "web", "text": "What was the kitchen budget after the Porto conference?"})
	d := decisionAbout(res.Decisions, kitchen)
	if d == nil || d.Found == nil {
		t.Fatalf("Bob's kitchen thread was not found: %s", enginetest.Short(res.Decisions))
	}
	return d
}

// TestAnOlderThreadBobCannotReadPlacesNoEventForHim: "after the Porto
// conference" is placed in time by the thread that best matches the
// event. Only Alice's thread does; Bob may not read it, so his search
// places no window there: his own old thread is found by its words
// alone, its decision naming no window that Alice's thread placed.
func TestAnOlderThreadBobCannotReadPlacesNoEventForHim(t *testing.T) {
	if d := kitchenAfterPorto(t, alice); len(d.Found.Windows) != 0 {
		t.Errorf("Bob's search placed %q by Alice's thread, which he may not read", d.Found.Windows)
	}
}

// TestAFoundThreadNamesEachWindowOnce: an event the message places ("after
// the Porto conference") is named once in the decision of a thread inside
// its window, though the search reads the message's time words twice
// (its words, and the whole message for time).
func TestAFoundThreadNamesEachWindowOnce(t *testing.T) {
	d := kitchenAfterPorto(t, bob)
	if want := []string{"after the Porto conference"}; !slices.Equal(d.Found.Windows, want) {
		t.Errorf("found in windows %q, want %q", d.Found.Windows, want)
	}
}
