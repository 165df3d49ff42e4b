package history_test

import (
	"github.com/engram-console/engram/core/history"
	"slices"
	"strings"
	"testing"
)

// TestFoldsResumeAfterACrash: evictions whose fold into the summary had not
// run when engram stopped (as after kill -9 right after the write) are
// folded on the next start, and the summary is as if nothing had happened.
func TestFoldsResumeAfterACrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	held := newRigWith(t, rigOptions{dir: dir, holdFolds: true})
	held.configure(map[string]any{"buffer_size": 2})
	for _, s := range []string{"Maria books the Lisbon venue for March 3.", "The budget is $40,000.", "Twelve people are coming.", "Ask Marta by Friday."} {
		held.write("", "user", s)
	}
	if err := held.e.Close(); err != nil {
		t.Fatal(err)
	}

	r := newRigWith(t, rigOptions{dir: dir})
	st := r.stats("")
	if !slices.Equal(st.Summary.Covers, []int{0, 1}) {
		t.Fatalf("after the restart the summary covers %v; want the evicted 0 and 1", st.Summary.Covers)
	}

	// The same writes without the crash give the same summary.
	clean := newRigWith(t, rigOptions{dir: t.TempDir()})
	clean.configure(map[string]any{"buffer_size": 2})
	for _, s := range []string{"Maria books the Lisbon venue for March 3.", "The budget is $40,000.", "Twelve people are coming.", "Ask Marta by Friday."} {
		clean.write("", "user", s)
	}
	if got, want := r.stats("").Summary.Text, clean.stats("").Summary.Text; got != want {
		t.Errorf("resumed summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestFoldKeepsWhatADeletedUtteranceSaid: an evicted utterance deleted
// before its fold ran still reaches the summary (a summary keeps what an
// evicted utterance said, whenever the fold runs).
func TestFoldKeepsWhatADeletedUtteranceSaid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	held := newRigWith(t, rigOptions{dir: dir, holdFolds: true})
	held.configure(map[string]any{"buffer_size": 1})
	held.write("", "user", "Maria books the Lisbon venue for March 3.")
	held.write("", "user", "The budget is $40,000.") // evicts 0; its fold is held
	held.do("history.delete", map[string]any{"utterance_index": 0}, nil)
	if err := held.e.Close(); err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, rigOptions{dir: dir})
	st := r.stats("")
	if !slices.Equal(st.Summary.Covers, []int{0}) || !strings.Contains(st.Summary.Text, "Lisbon") {
		t.Errorf("summary %+v; want it to cover 0, Lisbon included", st.Summary)
	}
}

// Every conversation's pending folds are found and run after a restart,
// also those of conversations nobody reads (finding them is the folder's
// first job, not part of opening), and also when their names share a
// beginning or sort between one another's fold keys ("a", "a b", "a%",
// "a.", "a0", "ab"): skipping the rest of one conversation's folds never
// skips another's.
func TestFoldsOfConversationsSharingAPrefixAllResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	held := newRigWith(t, rigOptions{dir: dir, holdFolds: true})
	names := []string{"a", "a b", "a%", "a%2F", "a.", "a0", "ab", "b"}
	for _, c := range names {
		held.configure(map[string]any{"conversation": c, "buffer_size": 1})
		for _, s := range []string{"Maria books the venue.", "The budget is $40,000.", "Ask Marta by Friday."} {
			held.write(c, "user", s)
		}
	}
	if n, err := history.PendingFolds(held.h); err != nil || n != 2*len(names) {
		t.Fatalf("%d folds pending before the restart (err %v), want %d", n, err, 2*len(names))
	}
	if err := held.e.Close(); err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, rigOptions{dir: dir})
	r.h.Settle()
	if n, err := history.PendingFolds(r.h); err != nil || n != 0 {
		t.Fatalf("%d folds still pending after the restart settled (err %v), want none", n, err)
	}
}
