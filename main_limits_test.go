package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 13, item 7: SIGTERM or ctrl+c during a long step (a plan run
// waiting in task.sleep for ten minutes) ends that step: engram reports it,
// closes the store and exits with status 1 at once, not when the step ends.
func TestSignalInterruptsALongStep(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			env, home := hermeticEnv(t)
			cmd := engramCmd(t, env, "--batch", "-", "--events", "--data", filepath.Join(home, "data"), "--log", filepath.Join(home, "test.log"))
			cmd.Stdin = strings.NewReader(`{"action": "plan.create", "args": {"id": "long", "goal": "wait", "subtasks": [{"id": "wait", "action": {"name": "task.sleep", "args": {"ms": 600000}}}]}}
{"id": "run", "action": "plan.execute", "args": {"plan_id": "long"}}
{"id": "never", "action": "engine.info"}
`)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The sleep has begun once its subtask's start event is out.
			br := bufio.NewReader(stdout)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("no subtask started: %v\nstderr:\n%s", err, stderr.Bytes())
				}
				if strings.Contains(line, `"plan.subtask.started"`) {
					break
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			signalled := time.Now()
			rest := make(chan string, 1)
			exited := make(chan error, 1)
			go func() {
				b, _ := io.ReadAll(br)
				rest <- string(b)
				exited <- cmd.Wait()
			}()
			select {
			case err := <-exited:
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Errorf("engram ended with %v after %v, want exit status 1 (the step did not pass)", err, sig)
				}
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill() // fails only if it has just exited, which is as good
				t.Fatalf("engram did not exit within 5s of %v\nstderr:\n%s", sig, stderr.Bytes())
			}
			t.Logf("exited %v after %v", sig, time.Since(signalled))
			out := <-rest
			if code := cmd.ProcessState.ExitCode(); code != exitFailed {
				t.Errorf("exit status %d, want %d\nstderr:\n%s", code, exitFailed, stderr.Bytes())
			}
			if !strings.Contains(out, `"id":"run","action":"plan.execute"`) || strings.Contains(out, `"id":"never"`) {
				t.Errorf("want the interrupted step reported and no step after it:\n%s", out)
			}
			if !strings.Contains(stderr.String(), "stopped after 2 step(s)") {
				t.Errorf("stderr:\n%s", stderr.Bytes())
			}
		})
	}
}

// Issue 13, item 9: --data "" is a usage error, not the default directory.
func TestEmptyDataIsAUsageError(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--batch", "-", "--data", ""}, io.Discard, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--data") {
		t.Errorf("status %d, stderr %q", code, stderr.String())
	}
}

// Issue 13, item 9: a data directory that is a device is not called "a
// regular file".
func TestDevNullAsDataIsNotARegularFile(t *testing.T) {
	env, _ := hermeticEnv(t)
	out := runIn(t, env, "", "--batch", "-", "--data", os.DevNull)
	if out.code != exitUsage || strings.Contains(out.stderr, "regular file") || !strings.Contains(out.stderr, "character device") {
		t.Errorf("status %d, stderr %q", out.code, out.stderr)
	}
}

// Issue 13, item 3, through the binary: a billion-laughs cassette and plan
// file, /dev/zero and a FIFO as plan files are refused at once, by name.
func TestHostileFilesAreRefusedByTheBinary(t *testing.T) {
	env, home := hermeticEnv(t)
	laughs := filepath.Join(home, "laughs.yaml")
	text := "version: 1\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
	for i, c := range "bcdefghi" {
		prev := string("abcdefgh"[i])
		text += string(c) + ": &" + string(c) + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
	}
	text += "goal: [*i]\ninteractions: [*i]\n"
	if err := os.WriteFile(laughs, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, env, "", "--in-memory", "--batch", "-", "--llm", "replay", "--cassette", laughs)
	if out.code != exitUsage || !strings.Contains(out.stderr, "aliases") || !strings.Contains(out.stderr, laughs) {
		t.Errorf("cassette: status %d, stderr %q", out.code, out.stderr)
	}
	fifo := filepath.Join(home, "plan.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := ""
	for _, file := range []string{laughs, os.DevNull, "/dev/zero", fifo} {
		script += `{"action": "plan.create", "args": {"file": "` + file + `"}}` + "\n"
	}
	out = runIn(t, env, script, "--in-memory", "--batch", "-")
	results := parseResults(t, out.stdout)
	if out.code != exitFailed || len(results) != 4 {
		t.Fatalf("status %d, %d results\n%s\nstderr:\n%s", out.code, len(results), out.stdout, out.stderr)
	}
	for i, want := range []string{"aliases", "character device", "character device", "named pipe"} {
		if results[i].OK || !strings.Contains(results[i].Error.Message, want) {
			t.Errorf("step %d: %+v, want an error saying %q", i+1, results[i].Error, want)
		}
	}
}
