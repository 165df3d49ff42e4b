package history_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/storage"
)

// TestMoveWhileWriting: writes racing a move all land, in the backend the
// conversation ends in.
func TestMoveWhileWriting(t *testing.T) {
	t.Parallel()
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

// TestTurnEndWritesAForeignStoreConversationOnItsOwn: a turn's utterances for a conversation kept in
// the other store are written on their own.
func TestTurnEndWritesAForeignStoreConversationOnItsOwn(t *testing.T) {
	t.Parallel()
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

// TestListNamesEveryConversationWithItsBackend: history.list names each
// conversation once, sorted, with the backend it lives in; engine.info
// counts them.
func TestListNamesEveryConversationWithItsBackend(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, rigOptions{dir: t.TempDir()})
	r.write("b", "user", "x")
	r.write("a", "user", "y")
	r.do("history.backend", map[string]any{"conversation": "a", "backend": "in-memory"}, nil)
	list := enginetest.Call[history.ListResult](r.Rig, enginetest.Who{}, "history.list", `{}`)
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

// TestInMemoryBackendWritesNothingToDisk: a conversation kept in memory
// works and never reaches the disk store (seed 001, scenario 7.13).
func TestInMemoryBackendWritesNothingToDisk(t *testing.T) {
	t.Parallel()
	// An engine on disk with the history kept in memory: it works, and not
	// a word of it reaches the disk store.
	r := newRigWith(t, rigOptions{dir: t.TempDir(), historyBackend: history.BackendInMemory})
	r.configure(map[string]any{"buffer_size": 3})
	lines := numbered(5)
	for i, s := range lines {
		r.add("", speakerOf(i), s)
	}
	if got := r.read("", ""); !slices.Equal(texts(got), lines[2:]) {
		t.Errorf("read = %q", texts(got))
	}
	if st := r.stats(""); st.Backend != history.BackendInMemory || st.Size != 3 || len(st.Summary.Covers) != 2 {
		t.Errorf("stats = %+v", st)
	}
	if hits := matching(t, r.search(map[string]any{"query": "topic1"})); len(hits) != 1 || !hits[0].Evicted {
		t.Errorf("search topic1 = %+v", hits)
	}
	for k := range dump(t, r.e.Env().Store) {
		if strings.HasPrefix(k, storage.PrefixHistory+"utt/") || strings.HasPrefix(k, storage.PrefixHistory+"sum/") ||
			strings.HasPrefix(k, storage.PrefixIndex+"history/") {
			t.Errorf("the durable store holds %s of an in-memory conversation", k)
		}
	}
	// And an engine wholly in memory.
	m := newRig(t)
	for i, s := range lines {
		m.add("", speakerOf(i), s)
	}
	if got := m.read("", ""); !slices.Equal(texts(got), lines) || m.stats("").Backend != history.BackendInMemory {
		t.Errorf("in-memory engine: read %q", texts(got))
	}
}
