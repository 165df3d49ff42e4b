package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/attach"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/tui"
)

// TestConsoleAttachedShowsAnotherClientsItem: a console attached to the
// owner of a data directory shows a goal that a batch client creates, on
// the event the owner sends, without a key pressed.
func TestConsoleAttachedShowsAnotherClientsItem(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	startServe(t, env, dir, "--log", logFile)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := attach.Open(ctx, attach.Options{DataDir: dir, Agent: core.DefaultAgent, Open: func() (*core.Engine, error) {
		return nil, errors.New("the console under test must attach to engram serve, not own the directory")
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if w := c.Where(); w.Owner || w.PID == 0 {
		t.Fatalf("the console is %+v, want attached to engram serve", w)
	}
	// The console's first frame asks the owner for engine.info without
	// the counts (issue 17: they read the whole store).
	no := false
	if info, err := c.InfoWith(ctx, conn.InfoArgs{Counts: &no}); err != nil || info.Counts != nil || info.DataDir != dir {
		t.Fatalf("engine.info without counts through the owner: %+v, %v", info, err)
	}
	tm := teatest.NewTestModel(t, tui.New(c, tui.Options{StatusFade: time.Hour}), teatest.WithInitialTermSize(120, 36))
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("3")}) // Goals
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("No goals")) || bytes.Contains(b, []byte("goals"))
	},
		teatest.WithDuration(10*time.Second))

	out := runIn(t, env, `{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": "Seen from another engram"}}}`,
		"--batch", "-", "--data", dir, "--log", logFile)
	if out.code != 0 {
		t.Fatalf("the batch client: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Seen from another engram")) },
		teatest.WithDuration(10*time.Second))
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
}
