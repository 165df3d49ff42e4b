package core

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/planner"
	"github.com/engram-console/engram/storage"
)

// openFull builds an engine on dir's store opened read-only for want of
// space (storage.Options.ReadOnlyWhenFull), with opts.
func openFull(t *testing.T, dir string, opts Options) *Engine {
	t.Helper()
	s, err := storage.Open(storage.Options{Dir: dir, MinFree: 1 << 40, ReadOnlyWhenFull: true,
		Statfs: func(string) (uint64, error) { return 1 << 20, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if s.FullAtOpen() == nil {
		t.Fatal("the store did not open read-only")
	}
	e, err := build(s, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(errors.Join(err, s.Close()))
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

// On a store opened read-only because its disk was full (issue 13, item
// 6), every action that only reads still answers, and every write is
// refused with StorageFull, a conversation kept in memory included: its
// directory entry and trace live in the full store (a review found such a
// write went through, and for a new conversation was stored although
// refused).
func TestFullStoreReadsAndRefusesEveryWrite(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DataDir: dir, HistoryBackend: "in-memory", IDSeed: "full test"}
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ name, args string }{
		{"cortex.create", `{"type": "goal", "id": "g1", "fields": {"title": "Ship"}}`},
		{"memory.memorize", `{"store": "working", "item": {"type": "fact", "text": "remember the milk", "agent_id": "a"}}`},
		{"thread.message", `{"channel": "sms", "text": "hello from sms"}`},
	} {
		if _, err := e.Do(t.Context(), Request{Action: step.name, Args: json.RawMessage(step.args)}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openFull(t, dir, opts)
	for _, a := range e.env.Actions.List() {
		if !a.ReadOnly {
			continue
		}
		_, err := e.Do(t.Context(), Request{Action: a.Name, Args: json.RawMessage(`{}`)})
		if errors.Is(err, storage.ErrFull) || errs.KindOf(err) == errs.StorageFull {
			t.Errorf("%s, which only reads, was refused for want of space: %v", a.Name, err)
		}
	}
	if out, err := e.Do(t.Context(), Request{Action: "cortex.get", Args: json.RawMessage(`{"id": "g1"}`)}); err != nil || !strings.Contains(string(out), "Ship") {
		t.Errorf("cortex.get: %s %v", out, err)
	}
	for _, step := range []struct{ name, args string }{
		{"history.write", `{"conversation": "fresh", "speaker": "user", "text": "written while full"}`},
		{"cortex.create", `{"type": "goal", "fields": {"title": "another"}}`},
		{"memory.memorize", `{"store": "working", "item": {"type": "fact", "text": "more", "agent_id": "a"}}`},
		{"thread.message", `{"channel": "sms", "text": "more from sms"}`},
	} {
		_, err := e.Do(t.Context(), Request{Action: step.name, Args: json.RawMessage(step.args)})
		if errs.KindOf(err) != errs.StorageFull {
			t.Errorf("%s on a full store: %v, want StorageFull", step.name, err)
		}
	}
	out, err := e.Do(t.Context(), Request{Action: "history.read", Args: json.RawMessage(`{"conversation": "fresh"}`)})
	if strings.Contains(string(out), "written while full") {
		t.Errorf("a refused write to an in-memory conversation was stored: %s %v", out, err)
	}
}

// A plan.execute refused for want of space leaves the person's checkpoint
// file as it was, as it leaves the store (a review found the file was
// written first, then the store refused).
func TestRefusedExecuteLeavesTheCheckpointFileAlone(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DataDir: dir, IDSeed: "full test"}
	opts.Subsystems = append(DefaultSubsystems(opts), planner.Subsystem(planner.Options{}))
	e, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if e.CheckAction("plan.create") != nil {
		_ = e.Close()
		t.Skip("this build leaves the planner out (-tags noplanning)")
	}
	if _, err := e.Do(t.Context(), Request{Action: "plan.create",
		Args: json.RawMessage(`{"id": "p", "goal": "g", "subtasks": [{"id": "a", "action": {"name": "task.noop"}}]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(file, []byte("the person's earlier checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	e = openFull(t, dir, opts)
	args, _ := json.Marshal(map[string]any{"plan_id": "p", "checkpoint": file})
	_, err = e.Do(t.Context(), Request{Action: "plan.execute", Args: args})
	if errs.KindOf(err) != errs.StorageFull {
		t.Errorf("plan.execute on a full store: %v, want StorageFull", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "the person's earlier checkpoint" {
		t.Errorf("the checkpoint file after the refused run: %q %v", b, err)
	}
}
