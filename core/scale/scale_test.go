package scale_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/scale"
)

// do runs an action on e as principal and decodes its result into out.
func do(t *testing.T, e *core.Engine, principal, name string, args any, out any) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Do(context.Background(), core.Request{Action: name, Args: raw, Principal: principal})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatal(err)
	}
}

// TestBuildWritesWhatTheSubsystemsCheck: a generated store holds what was
// asked for, read back through the actions, and every subsystem's checker
// (engram check's: each item's audit chain, the memory indexes, the
// history's postings and counters...) finds no problem in it. Progress
// goes to the writer given. (Each bulk path is held key for key to its
// action by its own package's test: TestBulkCreateWritesWhatCreateWrites,
// TestBulkLoadWritesWhatWriteWrites, TestMemorizeManyWritesWhatMemorizeWrites.)
func TestBuildWritesWhatTheSubsystemsCheck(t *testing.T) {
	dir := t.TempDir()
	defer scale.SetItemChunk(250)() // three calls to BulkCreate
	var progress bytes.Buffer
	// Each count crosses its bulk path's batch once at least: 600 items
	// are three BulkCreate calls, 1,200 utterances two of BulkLoad's
	// 1,000-write transactions (2,500 made three, and folding their
	// evictions was most of this test's time under -race), 1,500
	// memories two MemorizeMany calls of 1,000.
	rep, err := scale.Build(context.Background(), scale.Options{Dir: dir, Items: 600, Threads: 12, Utterances: 1200, Memories: 1500, Seed: 3, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Items != 600 || rep.Threads != 12 || rep.Utterances != 1200 || rep.Memories != 1500 {
		t.Errorf("report %+v", rep)
	}
	for _, want := range []string{"600 items", "12 threads", "1200 utterances", "1500 memories"} {
		if !strings.Contains(progress.String(), "engram scale: "+want+" in ") {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}

	e, err := core.Open(core.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	found, err := e.Env().Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for subsystem, problems := range found {
		for _, p := range problems {
			t.Errorf("%s: %s", subsystem, p)
		}
	}
	for _, sub := range []string{"cortex", "memory", "history"} {
		if _, ok := found[sub]; !ok {
			t.Errorf("no %s checker ran (checked: %v)", sub, found)
		}
	}

	items := 0
	for _, agent := range []string{"agent_a", "agent_b"} {
		var q cortex.QueryResult
		do(t, e, agent, "cortex.query", map[string]any{"limit": 1}, &q)
		items += q.Count
	}
	if items != 600 {
		t.Errorf("cortex.query counts %d items, want 600", items)
	}
	var threads episodic.ListResult
	do(t, e, "", "thread.list", map[string]any{}, &threads)
	if len(threads.Threads) != 12 {
		t.Errorf("thread.list has %d threads, want 12", len(threads.Threads))
	}
	var stats history.Stats
	do(t, e, "", "history.stats", map[string]any{"conversation": scale.Conversation}, &stats)
	if stats.NextIndex != 1200 {
		t.Errorf("history.stats: next index %d, want 1200", stats.NextIndex)
	}
	var capacity memory.Capacity
	do(t, e, "", "memory.capacity", map[string]any{"store": scale.MemoryStore}, &capacity)
	if capacity.ItemCount != 1500 {
		t.Errorf("memory.capacity: %d items, want 1500", capacity.ItemCount)
	}
}

// TestBuildRefusesBadCounts: a negative or huge count is refused before
// anything is created.
func TestBuildRefusesBadCounts(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []scale.Options{{Dir: dir, Items: -1}, {Dir: dir, Memories: 20_000_000}} {
		if _, err := scale.Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%+v: %v, want out of range", o, err)
		}
	}
	if _, err := scale.Build(context.Background(), scale.Options{Items: 1}); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Errorf("no directory: %v", err)
	}
}

// TestItemsDrawnInChunksAreTheSame: drawing items a chunk at a time (as a
// build does) gives the items drawn all at once.
func TestItemsDrawnInChunksAreTheSame(t *testing.T) {
	src := scale.NewItems(3)
	chunked := append(src.Next(5), src.Next(7)...)
	want, _ := json.Marshal(scale.Items(12, 3))
	if got, _ := json.Marshal(chunked); !bytes.Equal(got, want) {
		t.Errorf("in chunks:\n%s\nat once:\n%s", got, want)
	}
}
