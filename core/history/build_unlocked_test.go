package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/history"
)

// heldBuild holds the next index build of r's history once it has read
// the store, until release is called; reached is closed when it is held.
type heldBuild struct {
	reached, release chan struct{}
}

func holdBuilds(r *rig) *heldBuild {
	b := &heldBuild{reached: make(chan struct{}), release: make(chan struct{})}
	first := true
	history.AfterBuildSnapshot(r.h, func(string) {
		if first { // only the build the test starts: builds run one at a time
			first = false
			close(b.reached)
			<-b.release
		}
	})
	return b
}

// searchInBackground starts a search of query and returns where its error
// (nil when it answered) will come.
func searchInBackground(r *rig, query string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.Try(enginetest.Who{}, "history.search", map[string]any{"query": query})
		done <- err
	}()
	return done
}

// during runs fn while the build is held, then lets the build go on. It
// fails the test if fn does not return within a generous bound: fn must
// not wait for the build (which is let go then, so nothing hangs).
func (b *heldBuild) during(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
		close(b.release)
	case <-time.After(20 * time.Second):
		close(b.release)
		<-done
		t.Fatalf("%s waited for the index build", what)
	}
}

// TestWritesGoOnWhileTheFirstSearchBuildsTheIndex: a conversation's first
// search builds its index without the conversation's lock, so a write
// meanwhile does not wait for it, and the index installed has caught up
// with the write (found by the next search, with no second build).
func TestWritesGoOnWhileTheFirstSearchBuildsTheIndex(t *testing.T) {
	r := newRig(t)
	r.write("", "user", "The Kowalski invoice is overdue.")
	r.write("", "assistant", "I will pay the invoice today.")
	history.ForgetHybrid(r.h, "default") // as after a restart
	writeDuringTheBuild(t, r, func() int64 { return history.HybridBuilds(r.h) })
}

// writeDuringTheBuild holds the build of the next search of "invoice",
// writes a third invoice meanwhile, and checks the index built has it
// (builds counts the builds of the index the search uses).
func writeDuringTheBuild(t *testing.T, r *rig, builds func() int64) {
	t.Helper()
	before := builds()
	held := holdBuilds(r)
	searched := searchInBackground(r, "invoice")
	<-held.reached
	var written utt
	held.during(t, "a write", func() { written = r.write("", "user", "Acme sent another invoice.") })
	if err := <-searched; err != nil {
		t.Fatal(err)
	}
	got := indexes(matching(t, r.search(map[string]any{"query": "invoice"})))
	if len(got) != 3 || !slices.Contains(got, written.UtteranceIndex) {
		t.Errorf("after the build: %v, want the three invoices with %d", got, written.UtteranceIndex)
	}
	if n := builds() - before; n != 1 {
		t.Errorf("%d builds, want 1: the build caught up with the write", n)
	}
}

// TestADeleteDuringTheBuildIsNeverFound: a delete cannot be replayed on a
// hybrid index built before it, so that index is not kept (the next
// search builds one without it); the deleted turn is never a result.
func TestADeleteDuringTheBuildIsNeverFound(t *testing.T) {
	r := newRig(t)
	r.write("", "user", "The Kowalski invoice is overdue.")
	r.write("", "assistant", "I will pay the invoice today.")
	history.ForgetHybrid(r.h, "default")
	held := holdBuilds(r)
	searched := searchInBackground(r, "invoice")
	<-held.reached
	held.during(t, "a delete", func() { r.do("history.delete", map[string]any{"utterance_index": 0}, nil) })
	if err := <-searched; err != nil {
		t.Fatal(err)
	}
	if got := indexes(matching(t, r.search(map[string]any{"query": "Kowalski invoice"}))); !slices.Equal(got, []int{1}) {
		t.Errorf("after the delete: %v, want [1]", got)
	}
	if n := history.HybridLen(r.h, "default"); n != 1 {
		t.Errorf("the index holds %d turns, want 1: it was built again without the deleted one", n)
	}
}

// TestADropDuringTheBuildLeavesNoIndexForTheNextConversation: a
// conversation dropped while its index is built, and started again under
// its name, never answers with the dropped one's turns.
func TestADropDuringTheBuildLeavesNoIndexForTheNextConversation(t *testing.T) {
	r := newRig(t)
	r.write("", "user", "The Kowalski invoice is overdue.")
	history.ForgetHybrid(r.h, "default")
	held := holdBuilds(r)
	searched := searchInBackground(r, "invoice")
	<-held.reached
	held.during(t, "a drop", func() {
		r.do("history.drop", map[string]any{"conversation": "default"}, nil)
		r.write("", "user", "A fresh start, no bills.")
	})
	// It answers from the new conversation (its build was not kept).
	if err := <-searched; err != nil {
		t.Fatal(err)
	}
	if got := r.search(map[string]any{"query": "Kowalski invoice"}); len(got) != 0 {
		t.Errorf("the new conversation finds the dropped one's turns: %v", texts(got))
	}
}

// TestWritesGoOnWhileAPlainSearchReadsThePostings: the same for a
// conversation too long for a hybrid index, whose first search reads its
// postings into memory: a write meanwhile does not wait, and is found.
func TestWritesGoOnWhileAPlainSearchReadsThePostings(t *testing.T) {
	r := newRig(t)
	history.SetHybridBounds(r.h, 2, 0, 0)
	r.write("", "user", "The Kowalski invoice is overdue.")
	r.write("", "assistant", "I will pay the invoice today.")
	r.write("", "user", "Paid it.")
	history.ForgetPostings(r.h, "default")
	writeDuringTheBuild(t, r, func() int64 { return history.IndexBuilds(r.h) })
}

// TestASearchAfterABuildThatPanickedIsAnswered: a build that panics (a
// bug the engine turns into the action's error) ends its run, so the next
// search of the conversation builds again instead of waiting forever on
// a build that will never finish.
func TestASearchAfterABuildThatPanickedIsAnswered(t *testing.T) {
	r := newRig(t)
	r.write("", "user", "The Kowalski invoice is overdue.")
	history.ForgetHybrid(r.h, "default")
	first := true
	history.AfterBuildSnapshot(r.h, func(string) {
		if first {
			first = false
			panic("a bug in the build")
		}
	})
	if _, err := r.Try(enginetest.Who{}, "history.search", map[string]any{"query": "invoice"}); err == nil {
		t.Fatal("the search whose build panicked answered")
	}
	select {
	case err := <-searchInBackground(r, "invoice"):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the next search waits for the build that panicked")
	}
}
