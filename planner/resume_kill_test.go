//go:build !noplanning

package planner_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/planner"
)

// killRounds is how many times TestResumeAfterKillRunsEachSubtaskOnce
// kills engram mid-plan: enough to land between a subtask's writes and its
// checkpoint more than once in CI; -kill-rounds 60 repeats the run.
var killRounds = flag.Int("kill-rounds", 20, "kill -9 rounds of TestResumeAfterKillRunsEachSubtaskOnce")

// killSubtasks is the plan's size: long enough a run to be killed in the
// middle of it at several points.
const killSubtasks = 40

// batchLine is one result line of engram --batch.
type batchLine struct {
	ID     string          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// Resuming a plan after a kill -9 runs every subtask's effect exactly once
// (issue 13, item 8): each subtask's store action and its checkpoint commit
// together. Real engram processes run a plan of store-writing subtasks —
// cortex.create with fixed ids (run twice: a ConflictError that aborts the
// plan) and memory.memorize without ids (run twice: one memory too many) —
// and are killed at points spread over the run; plan.resume in a new
// process must then complete the plan with each goal and each memory there
// once.
func TestResumeAfterKillRunsEachSubtaskOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds engram and kills it")
	}
	bin := filepath.Join(t.TempDir(), "engram")
	built := time.Now()
	if err := enginetest.Build(bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("building engram: %s", time.Since(built))
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ENGRAM_LOG=" + filepath.Join(home, "engram.log"),
		"XDG_DATA_HOME=" + filepath.Join(home, "xdg-data"), "XDG_STATE_HOME=" + filepath.Join(home, "xdg-state")}
	scripts := t.TempDir()
	script := func(name string, steps ...map[string]any) string {
		var b bytes.Buffer
		for _, s := range steps {
			line, _ := json.Marshal(s)
			b.Write(append(line, '\n'))
		}
		path := filepath.Join(scripts, name)
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var subtasks []map[string]any
	memories := 0
	for i := range killSubtasks {
		s := map[string]any{"id": fmt.Sprintf("s%02d", i)}
		if i%2 == 0 {
			s["action"] = map[string]any{"name": "cortex.create", "args": map[string]any{"type": "goal", "id": fmt.Sprintf("g%02d", i),
				"fields": map[string]any{"title": fmt.Sprintf("Goal %d", i)}}}
		} else {
			memories++
			s["action"] = map[string]any{"name": "memory.memorize", "args": map[string]any{"store": "episodic",
				"item": map[string]any{"type": "event", "text": fmt.Sprintf("Memory %d", i), "agent_id": "assistant"}}}
		}
		subtasks = append(subtasks, s)
	}
	run := script("run.jsonl",
		map[string]any{"id": "create", "action": "plan.create", "args": map[string]any{"id": "p", "goal": "Write it all down", "subtasks": subtasks}},
		map[string]any{"id": "execute", "action": "plan.execute", "args": map[string]any{"plan_id": "p", "max_concurrent": 2}})
	// Before resuming, the relaunched engram says how the kill left the
	// plan: never "running", since nobody runs it (issue 14, bug 1).
	resume := script("resume.jsonl", map[string]any{"id": "status", "action": "plan.status", "args": map[string]any{"plan_id": "p"}},
		map[string]any{"id": "resume", "action": "plan.resume", "args": map[string]any{"plan_id": "p"}})
	execute := script("execute.jsonl", map[string]any{"id": "resume", "action": "plan.execute", "args": map[string]any{"plan_id": "p", "max_concurrent": 2}})
	check := []map[string]any{{"id": "memories", "action": "memory.capacity", "args": map[string]any{"store": "episodic"}}}
	for i := 0; i < killSubtasks; i += 2 {
		check = append(check, map[string]any{"id": fmt.Sprintf("g%02d", i), "action": "cortex.get", "args": map[string]any{"id": fmt.Sprintf("g%02d", i)}})
	}
	checks := script("check.jsonl", check...)

	// How long an uninterrupted run takes from the plan's creation on: the
	// kills are spread over it.
	start := time.Now()
	var created time.Time
	lines := runBatch(t, bin, env, filepath.Join(t.TempDir(), "data"), run, func(l batchLine) {
		if l.ID == "create" {
			created = time.Now()
		}
	})
	if len(lines) != 2 || !lines[1].OK {
		t.Fatalf("the uninterrupted run: %+v", lines)
	}
	span := time.Since(created)
	t.Logf("an uninterrupted run: %s, of which the plan %s", time.Since(start), span)

	interrupted, interruptedSeen, rounds := 0, 0, time.Now()
	for round := range *killRounds {
		dir := filepath.Join(t.TempDir(), "data")
		// From just after plan.create to just past the end of the run.
		delay := span * time.Duration(round) / time.Duration(max(*killRounds-1, 1))
		finished := killDuring(t, bin, env, dir, run, delay)
		if !finished {
			interrupted++
		}
		lines := runBatch(t, bin, env, dir, resume, nil)
		if len(lines) != 2 || !lines[0].OK {
			t.Errorf("round %d (killed after %s): plan.status, plan.resume: %+v", round, delay, lines)
			continue
		}
		var left planner.StatusResult
		if err := json.Unmarshal(lines[0].Result, &left); err != nil {
			t.Fatal(err)
		}
		switch left.Status {
		case planner.PlanInterrupted:
			interruptedSeen++
		case planner.PlanPending, planner.PlanCompleted: // killed before the run began, or after it ended
		default:
			t.Errorf("round %d (killed after %s): relaunched, plan.status says %s, want interrupted", round, delay, left.Status)
		}
		if left.InProgress != 0 {
			t.Errorf("round %d (killed after %s): relaunched, plan.status says %d in progress", round, delay, left.InProgress)
		}
		lines = lines[1:]
		if len(lines) == 1 && !lines[0].OK && strings.Contains(lines[0].Error.Message, "never ran") {
			lines = runBatch(t, bin, env, dir, execute, nil) // killed before the run began
		}
		if len(lines) != 1 || !lines[0].OK {
			t.Errorf("round %d (killed after %s): resuming: %+v", round, delay, lines)
			continue
		}
		var res struct {
			Plan     *planner.Plan  `json:"plan"`
			Progress planner.Counts `json:"progress"`
		}
		if err := json.Unmarshal(lines[0].Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.Plan.Status != planner.PlanCompleted || res.Progress.Completed != killSubtasks {
			var failed []string
			for _, s := range res.Plan.Subtasks {
				if s.Status != planner.Completed {
					failed = append(failed, s.ID+": "+s.Status+" "+s.Error)
				}
			}
			t.Errorf("round %d (killed after %s): the resumed plan is %s, %d/%d completed: %s",
				round, delay, res.Plan.Status, res.Progress.Completed, killSubtasks, strings.Join(failed, "; "))
			continue
		}
		for _, l := range runBatch(t, bin, env, dir, checks, nil) {
			switch {
			case !l.OK:
				t.Errorf("round %d: %s: %s", round, l.ID, l.Error.Message)
			case l.ID == "memories":
				var c struct {
					ItemCount int `json:"item_count"`
				}
				if err := json.Unmarshal(l.Result, &c); err != nil {
					t.Fatal(err)
				}
				if c.ItemCount != memories {
					t.Errorf("round %d (killed after %s): %d memories, want %d: a subtask's effect happened twice (or not at all)",
						round, delay, c.ItemCount, memories)
				}
			}
		}
	}
	t.Logf("%d rounds in %s, %d killed mid-run, %d of them read interrupted", *killRounds, time.Since(rounds), interrupted, interruptedSeen)
}

// startBatch starts engram --batch script against dir, its results on out
// and its standard error gathered in stderr.
func startBatch(t *testing.T, bin string, env []string, dir, script string) (cmd *exec.Cmd, out io.Reader, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(bin, "--data", dir, "--batch", script)
	cmd.Env = env
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, pipe, stderr
}

// runBatch runs script against dir to the end and returns its result lines
// (seen, if set, hears each as it comes).
func runBatch(t *testing.T, bin string, env []string, dir, script string, seen func(batchLine)) []batchLine {
	t.Helper()
	cmd, out, stderr := startBatch(t, bin, env, dir, script)
	lines, torn := readLines(t, out, seen)
	if torn != nil {
		t.Errorf("engram --batch %s: a result line that is not JSON: %q", filepath.Base(script), torn)
	}
	if err := cmd.Wait(); err != nil && len(lines) == 0 {
		// Exit status 3 is a store that does not reopen after the kill:
		// the storage layer's failure (issue 13, item 2), not the planner's.
		t.Errorf("engram --batch %s: %v (a data directory left by kill -9 must open)\n%s", filepath.Base(script), err, stderr.Bytes())
	}
	return lines
}

// killDuring runs script against dir and kills engram with SIGKILL delay
// after the plan was created; it reports whether the run had already
// finished.
func killDuring(t *testing.T, bin string, env []string, dir, script string, delay time.Duration) (finished bool) {
	t.Helper()
	cmd, out, stderr := startBatch(t, bin, env, dir, script)
	var timer *time.Timer
	lines, torn := readLines(t, out, func(l batchLine) {
		if l.ID == "create" {
			timer = time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) }) // fails only once it exited
		}
	})
	err := cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	var exit *exec.ExitError
	switch {
	case len(lines) == 0 || !lines[0].OK:
		t.Fatalf("plan.create did not succeed: %v %+v\n%s", err, lines, stderr.Bytes())
	case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		// A line longer than the pipe's atomic write can be cut by the
		// kill; only the last one, and only then.
		return false
	case torn != nil:
		t.Fatalf("engram finished with a result line that is not JSON: %q", torn)
	case err != nil:
		t.Fatalf("engram: %v\n%s", err, stderr.Bytes())
	}
	return true
}

// readLines reads result lines until out ends. A line that is not JSON
// ends the reading and comes back as torn: only a killed engram may leave
// one, as its last.
func readLines(t *testing.T, out io.Reader, seen func(batchLine)) (lines []batchLine, torn []byte) {
	t.Helper()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if torn != nil {
			t.Fatalf("a result line after one that is not JSON (%q): %q", torn, sc.Bytes())
		}
		var l batchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			torn = append([]byte(nil), sc.Bytes()...)
			continue
		}
		if seen != nil {
			seen(l)
		}
		lines = append(lines, l)
	}
	return lines, torn
}

// BenchmarkWritingSubtasks measures 100 subtasks that each write to the
// store (cortex.create), checkpointed, 4 at a time: each commits its write
// and its checkpoint in one transaction (issue 13, item 8).
func BenchmarkWritingSubtasks(b *testing.B) {
	r := newRig(b)
	call := callOf(r)
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		var subtasks []map[string]any
		for i := range 100 {
			subtasks = append(subtasks, st(fmt.Sprintf("s%03d", i), "cortex.create",
				map[string]any{"type": "goal", "id": fmt.Sprintf("b%d-%03d", n, i), "fields": map[string]any{"title": "A goal"}}))
		}
		id := fmt.Sprint("bench-", n)
		r.do("plan.create", map[string]any{"id": id, "goal": "Benchmark", "subtasks": subtasks})
		b.StartTimer()
		res, err := r.pl.Execute(context.Background(), call, id, planner.ExecuteRequest{MaxConcurrent: 4, Checkpoint: true})
		if err != nil || res.Progress.Completed != 100 {
			b.Fatalf("%v %+v", err, res.Progress)
		}
	}
}
