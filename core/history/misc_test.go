package history_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/history"
)

// TestDeleteEvicted: deleting an archived utterance takes it out of search;
// the summary it was folded into keeps what it said.
func TestDeleteEvicted(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 2})
	r.write("", "user", "Maria Lopez booked the Lisbon flight.")
	r.write("", "user", "second")
	r.write("", "user", "third")
	before := r.stats("")
	r.do("history.delete", map[string]any{"utterance_index": 0}, nil)
	if hits := r.search(map[string]any{"query": "Lisbon"}); len(hits) != 0 {
		t.Errorf("the deleted utterance is still found: %+v", hits)
	}
	after := r.stats("")
	if after.Size != before.Size || after.TotalTokens != before.TotalTokens || after.Archived != before.Archived-1 {
		t.Errorf("stats before %+v after %+v", before, after)
	}
	if s := r.summary("", 0); !strings.Contains(s.Text, "Maria Lopez") {
		t.Errorf("the summary forgot: %q", s.Text)
	}
	// Deleting the oldest buffered one: eviction goes on from the next.
	r.do("history.delete", map[string]any{"utterance_index": 1}, nil)
	r.write("", "user", "fourth")
	r.write("", "user", "fifth")
	if got := r.read("", ""); !slices.Equal(texts(got), []string{"fourth", "fifth"}) {
		t.Errorf("buffer %q", texts(got))
	}
	if st := r.stats(""); st.Size != 2 || st.EvictedCount != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestConfigureShrinks: a smaller buffer or budget evicts at once.
func TestConfigureShrinks(t *testing.T) {
	r := newRig(t)
	for i := range 10 {
		r.write("", speakerOf(i), fmt.Sprintf("line %d about topic%d", i, i))
	}
	st := r.configure(map[string]any{"buffer_size": 4})
	if st.Size != 4 || st.EvictedCount != 6 || st.LastEviction == nil || st.LastEviction.Reason != "buffer_size" ||
		!slices.Equal(st.LastEviction.Indexes, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("after buffer_size 4: %+v %+v", st, st.LastEviction)
	}
	st = r.configure(map[string]any{"max_tokens": 12})
	if st.TotalTokens > 12 || st.LastEviction.Reason != "max_tokens" || st.MaxTokens != 12 {
		t.Errorf("after max_tokens 12: %+v", st)
	}
	st = r.configure(map[string]any{"summary_token_limit": 10})
	if st.SummaryTokenLimit != 10 || r.summary("", 0).TokenCount > 10 {
		t.Errorf("after summary_token_limit 10: %+v", st)
	}
	// 0 turns the budget off.
	if st = r.configure(map[string]any{"max_tokens": 0}); st.MaxTokens != 0 {
		t.Errorf("max_tokens 0: %+v", st)
	}
}

// TestEvents: a write that evicts publishes the utterance, the eviction and
// the summary.
func TestEvents(t *testing.T) {
	r := newRig(t)
	r.configure(map[string]any{"buffer_size": 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.e.Subscribe(ctx, 64)
	r.write("", "user", "one")
	r.write("", "user", "two")
	want := []string{history.EventWritten, history.EventWritten, history.EventEvicted, history.EventSummary}
	var got []string
	deadline := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-ch:
			if strings.HasPrefix(ev.Name, "utterance.") || strings.HasPrefix(ev.Name, "summary.") {
				got = append(got, ev.Name)
				if ev.Name == history.EventSummary {
					m := ev.Data.(map[string]any)
					if m["covered"] != 1 || m["writer"] != "extractive" {
						t.Errorf("summary event %v", m)
					}
				}
			}
		case <-deadline:
			t.Fatalf("events so far %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestMoveWhileWriting: writes racing a move all land, in the backend the
// conversation ends in.
func TestMoveWhileWriting(t *testing.T) {
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	r.configure(map[string]any{"buffer_size": 1000})
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if _, err := r.try("history.write", map[string]any{"speaker": "user", "text": fmt.Sprintf("w%d-%d", w, i)}); err != nil {
					errc <- err
				}
			}
		}()
	}
	for _, b := range []string{"durable", "in-memory", "durable"} {
		if _, err := r.try("history.backend", map[string]any{"backend": b}); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	st := r.stats("")
	if st.Backend != "durable" || st.Size != 80 || st.NextIndex != 80 {
		t.Errorf("after moves: %+v", st)
	}
	if got := r.read("", ""); len(got) != 80 {
		t.Errorf("read %d", len(got))
	}
}

// TestTurnEndForeignStore: a turn's utterances for a conversation kept in
// the other store are written on their own.
func TestTurnEndForeignStore(t *testing.T) {
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	if _, err := r.tryIn("t1", "turn.start", `{}`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tryIn("t1", "turn.end", `{"updates": {"history": [{"speaker": "user", "text": "kept in memory"}]}}`); err != nil {
		t.Fatal(err)
	}
	if got := r.read("", ""); len(got) != 1 || got[0].Text != "kept in memory" {
		t.Errorf("read %+v", got)
	}
	if st := r.stats(""); st.Backend != history.BackendInMemory {
		t.Errorf("backend %s", st.Backend)
	}
}

func TestList(t *testing.T) {
	r := newRigWith(t, rigOptions{dir: t.TempDir()})
	r.write("b", "user", "x")
	r.write("a", "user", "y")
	r.do("history.backend", map[string]any{"conversation": "a", "backend": "in-memory"}, nil)
	var list struct {
		Conversations []struct{ Conversation, Backend string } `json:"conversations"`
	}
	r.do("history.list", `{}`, &list)
	if fmt.Sprint(list.Conversations) != "[{a in-memory} {b durable}]" {
		t.Errorf("list %+v", list.Conversations)
	}
	var info struct {
		Counts map[string]map[string]int `json:"counts"`
	}
	r.do("engine.info", `{}`, &info)
	if h := info.Counts["history"]; h["conversations"] != 2 || h["buffered"] != 2 {
		t.Errorf("engine.info counts %+v", info.Counts)
	}
}
