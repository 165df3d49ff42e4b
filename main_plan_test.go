package main

// Seed 002 (planning), the scenarios that need engram built and run as a
// program: the noplanning build tag (INT-017, INT-018, E2E-004), the
// breakfast workflow against a replayed model (E2E-001), and a crash
// (SIGKILL) in the middle of a plan, then resume (E2E-002).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
)

var updatePlanCassette = flag.Bool("update-plan-cassette", false,
	"re-record testdata/plans/breakfast.cassette.yaml from a fake Ollama server (after changing the decompose prompt)")

// noplanningBin is engram built with -tags noplanning, once, beside engramBin
// (TestMain removes that directory).
var noplanningBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(engramBin), "engram-noplanning")
	if err := enginetest.Build(bin, "noplanning"); err != nil {
		return "", err
	}
	return bin, nil
})

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("go list %v: %v\n%s", args, err, exitErr.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// Seed scenario 001-3R-INT-017.
func TestBuildWithoutPlanningExcludesTheGraphLibrary(t *testing.T) {
	const graphLib = "github.com/dominikbraun/graph"
	with := goList(t, "-deps", ".")
	without := goList(t, "-deps", "-tags", "noplanning", ".")
	if !slices.Contains(with, graphLib) {
		t.Errorf("go list -deps . does not list %s: is the planner still built by default?", graphLib)
	}
	if slices.Contains(without, graphLib) {
		t.Errorf("go list -deps -tags noplanning . lists %s", graphLib)
	}
	// The planner package itself is still there (its stub says how to get
	// it back), with nothing of its own beyond the engine's basics.
	if !slices.Contains(without, "github.com/engram-console/engram/planner") {
		t.Error("the noplanning build lacks the planner's stub")
	}
	t.Logf("dependencies: %d with the planner, %d without", len(with), len(without))
}

// runBin runs a given engram binary hermetically.
func runBin(t *testing.T, bin, stdin string, args ...string) outcome {
	t.Helper()
	saved := engramBin
	engramBin = bin
	defer func() { engramBin = saved }()
	return runEngram(t, stdin, args...)
}

// Seed scenario 001-3R-INT-018.
func TestPlanActionsAreUnavailableWithoutPlanning(t *testing.T) {
	bin, err := noplanningBin()
	if err != nil {
		t.Fatal(err)
	}
	workflow := writeScript(t, "plan.yaml", `steps:
  - id: decompose
    action: plan.decompose
    args: {goal: Prepare breakfast}
  - id: create
    action: plan.create
    args: {goal: g, subtasks: [{id: a}]}
  - id: incr
    action: state.incr
    args: {key: n}
  - id: sleep
    action: task.sleep
    args: {ms: 1}
  - id: actions
    action: actions.list
`)
	out := runBin(t, bin, "", "--in-memory", "--batch", workflow)
	if out.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	results := parseResults(t, out.stdout)
	if len(results) != 5 {
		t.Fatalf("results:\n%s", out.stdout)
	}
	for _, r := range results[:4] {
		if r.OK || r.Error.Kind != "UnknownAction" || !strings.Contains(r.Error.Message, "noplanning") ||
			!strings.Contains(r.Error.Message, "rebuild without it") || !strings.Contains(r.Error.Message, r.Action) {
			t.Errorf("%s: %+v", r.Action, r.Error)
		}
	}
	if strings.Contains(string(results[4].Result), `"plan.`) {
		t.Errorf("actions.list lists plan actions: %s", results[4].Result)
	}
	// The default build has them.
	out = runEngram(t, `{"action": "plan.validate", "args": {"subtasks": [{"id": "a"}]}}`+"\n", "--in-memory", "--batch", "-")
	if out.code != 0 {
		t.Errorf("default build: exit %d\n%s", out.code, out.stdout)
	}
}

// Seed scenario 001-3R-E2E-004.
func TestBinaryWithoutPlanningIsSmaller(t *testing.T) {
	bin, err := noplanningBin()
	if err != nil {
		t.Fatal(err)
	}
	with, err := os.Stat(engramBin)
	if err != nil {
		t.Fatal(err)
	}
	without, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engram: %d bytes; with -tags noplanning: %d bytes (%d smaller)", with.Size(), without.Size(), with.Size()-without.Size())
	if without.Size() >= with.Size() {
		t.Errorf("the noplanning binary (%d bytes) is not smaller than the default one (%d)", without.Size(), with.Size())
	}
}

// ---- E2E-001: the breakfast workflow ----

const breakfastAnswer = `{"subtasks": [
  {"id": "toast", "description": "Toast two slices of bread", "dependencies": [], "action": {"name": "state.set", "args": {"key": "toast", "value": "golden"}}},
  {"id": "eggs", "description": "Fry two eggs", "dependencies": [], "action": {"name": "state.set", "args": {"key": "eggs", "value": "sunny side up"}}},
  {"id": "coffee", "description": "Brew coffee once the toast is done", "dependencies": ["toast"], "action": {"name": "state.set", "args": {"key": "coffee", "value": "hot"}}}
]}`

// recordBreakfastCassette runs the workflow against a fake Ollama server
// answering breakfastAnswer, recording the exchange to the cassette.
func recordBreakfastCassette(t *testing.T, workflow, cassette string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // what was asked does not matter: the answer is fixed
		w.Header().Set("Content-Type", "application/json")
		body, _ := json.Marshal(map[string]any{"model": "llama3.2", "message": map[string]any{"role": "assistant", "content": breakfastAnswer},
			"done": true, "prompt_eval_count": 180, "eval_count": 120})
		_, _ = w.Write(body) // a failed write fails the recording below
	}))
	defer srv.Close()
	out := runEngram(t, "", "--in-memory", "--llm", "ollama", "--model", "llama3.2", "--llm-url", srv.URL, "--record", cassette, "--batch", workflow)
	if out.code != 0 {
		t.Fatalf("recording: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	t.Logf("recorded %s", cassette)
}

// line is a batch output line: a result or an event.
type line struct {
	result
	Event string          `json:"event"`
	Seq   uint64          `json:"seq"`
	Data  json.RawMessage `json:"data"`
}

func parseLines(t *testing.T, stdout string) (results []result, events []line) {
	t.Helper()
	for _, text := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var l line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("output line %q: %v", text, err)
		}
		if l.Event != "" {
			events = append(events, l)
		} else {
			results = append(results, l.result)
		}
	}
	return results, events
}

// subtaskEvent is the seq of the first event named name about subtask.
func subtaskEvent(events []line, name, subtask string) uint64 {
	for _, ev := range events {
		var d struct{ Subtask string }
		_ = json.Unmarshal(ev.Data, &d) // data that is not an object is about no subtask
		if ev.Event == name && d.Subtask == subtask {
			return ev.Seq
		}
	}
	return 0
}

// Seed scenario 001-3R-E2E-001.
func TestPlanRunsEverySubtaskEndToEnd(t *testing.T) {
	wd, _ := os.Getwd()
	workflow := filepath.Join(wd, "testdata/plans/breakfast.workflow.yaml")
	cassette := filepath.Join(wd, "testdata/plans/breakfast.cassette.yaml")
	if *updatePlanCassette {
		recordBreakfastCassette(t, workflow, cassette)
	}
	out := runEngram(t, "", "--in-memory", "--llm", "replay", "--cassette", cassette, "--batch", workflow, "--events")
	if out.code != 0 {
		t.Fatalf("exit %d (if the decompose prompt changed, re-record with go test -run TestPlanRunsEverySubtaskEndToEnd -update-plan-cassette .)\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	results, events := parseLines(t, out.stdout)
	if len(results) != 3 {
		t.Fatalf("results:\n%s", out.stdout)
	}
	var run struct {
		Plan struct {
			Status   string `json:"status"`
			Provider string `json:"provider"`
			Subtasks []struct {
				ID           string   `json:"id"`
				Status       string   `json:"status"`
				Dependencies []string `json:"dependencies"`
			} `json:"subtasks"`
		} `json:"plan"`
		State    map[string]any `json:"state"`
		Progress struct{ Completed, Total int }
	}
	if err := json.Unmarshal(results[1].Result, &run); err != nil {
		t.Fatal(err)
	}
	if run.Plan.Status != "completed" || run.Plan.Provider != "replay" || len(run.Plan.Subtasks) != 3 {
		t.Fatalf("plan %s", results[1].Result)
	}
	started := func(id string) uint64 { return subtaskEvent(events, "plan.subtask.started", id) }
	finished := func(id string) uint64 { return subtaskEvent(events, "plan.subtask.finished", id) }
	// Toast completes before coffee starts.
	if finished("toast") == 0 || started("coffee") < finished("toast") {
		t.Errorf("coffee started (event %d) before toast finished (event %d)", started("coffee"), finished("toast"))
	}
	// Eggs runs in parallel with toast: independent of it, and started
	// with it, before either finished.
	if deps := run.Plan.Subtasks[1].Dependencies; run.Plan.Subtasks[1].ID != "eggs" || len(deps) != 0 {
		t.Errorf("eggs depends on %v", deps)
	}
	if first := min(finished("toast"), finished("eggs")); started("toast") > first || started("eggs") > first {
		t.Errorf("toast and eggs were not running together: started %d, %d; first finish %d", started("toast"), started("eggs"), first)
	}
	// The final state has every subtask's result; progress 3/3.
	results3, _ := run.State["results"].(map[string]any)
	for _, id := range []string{"toast", "eggs", "coffee"} {
		if results3[id] == nil {
			t.Errorf("no result for %s in %v", id, run.State)
		}
	}
	if run.State["toast"] != "golden" || run.State["eggs"] != "sunny side up" || run.State["coffee"] != "hot" {
		t.Errorf("state %v", run.State)
	}
	if run.Progress.Completed != 3 || run.Progress.Total != 3 {
		t.Errorf("progress %+v, want 3/3", run.Progress)
	}
	var status struct{ Completed, Total int }
	enginetest.Decode(t, results[2].Result, &status)
	if status.Completed != 3 || status.Total != 3 {
		t.Errorf("plan.status %s", results[2].Result)
	}
}

// ---- E2E-002: crash and resume ----

// crashPlan is five sequential subtasks: each of 1, 2, 3 and 5 increments
// its own counter; 4 takes two seconds.
var crashPlan = strings.ReplaceAll(`{"id": "create", "action": "plan.create", "at": "2026-01-05T09:00:00Z", "args": {"id": "crash", "goal": "Five steps", "subtasks": [
 {"id": "s1", "action": {"name": "state.incr", "args": {"key": "c1"}}},
 {"id": "s2", "dependencies": ["s1"], "action": {"name": "state.incr", "args": {"key": "c2"}}},
 {"id": "s3", "dependencies": ["s2"], "action": {"name": "state.incr", "args": {"key": "c3"}}},
 {"id": "s4", "dependencies": ["s3"], "action": {"name": "task.sleep", "args": {"ms": 2000}}},
 {"id": "s5", "dependencies": ["s4"], "action": {"name": "state.incr", "args": {"key": "c5"}}}]}}`, "\n", "") + `
{"id": "run", "action": "plan.execute", "at": "2026-01-05T09:00:01Z", "args": {"plan_id": "crash", "max_concurrent": 1}}
`

type runResult struct {
	Plan struct {
		Status   string `json:"status"`
		Subtasks []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			Attempts  int    `json:"attempts"`
			StartedAt string `json:"started_at"`
		} `json:"subtasks"`
	} `json:"plan"`
	State json.RawMessage `json:"state"`
}

// Seed scenario 001-3R-E2E-002.
func TestPlanKilledMidRunResumesToTheSameResult(t *testing.T) {
	t.Parallel() // its own homes, data directories and processes
	// The uninterrupted run, for comparison, meanwhile.
	straightEnv, straightHome := hermeticEnv(t)
	straightCmd := engramCmd(t, straightEnv, "--batch", "-", "--data", filepath.Join(straightHome, "data"), "--log", filepath.Join(straightHome, "test.log"))
	straightCmd.Stdin = strings.NewReader(crashPlan)
	uninterrupted := make(chan outcome, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		straightCmd.Stdout, straightCmd.Stderr = &stdout, &stderr
		// A non-zero exit is in ProcessState, checked by the reader; only a
		// failure to start leaves none.
		if err := straightCmd.Run(); err != nil && straightCmd.ProcessState == nil {
			uninterrupted <- outcome{code: -1, stderr: err.Error()}
			return
		}
		uninterrupted <- outcome{code: straightCmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	}()

	dir := filepath.Join(t.TempDir(), "data")
	env, home := hermeticEnv(t)
	logFile := filepath.Join(home, "test.log")
	cmd := engramCmd(t, env, "--batch", "-", "--data", dir, "--log", logFile, "--events")
	cmd.Stdin = strings.NewReader(crashPlan)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read until subtask 3 has finished (its checkpoint is written before
	// the event), then kill -9: subtask 4 is sleeping.
	var seen []string
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var l line
		enginetest.Decode(t, sc.Bytes(), &l)
		var d struct{ Subtask, Status string }
		_ = json.Unmarshal(l.Data, &d) // result lines have no data: d stays empty
		if l.Event == "plan.subtask.started" || l.Event == "plan.subtask.finished" {
			seen = append(seen, strings.TrimPrefix(l.Event, "plan.subtask.")+" "+d.Subtask)
		}
		if l.Event == "plan.subtask.finished" && d.Subtask == "s3" {
			if d.Status != "Completed" {
				t.Fatalf("s3 finished %s", d.Status)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // drain the rest; Wait says how engram ended
	waitErr := cmd.Wait()
	var exitErr *exec.ExitError
	if !killed || !errors.As(waitErr, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("engram was not killed mid-plan (%v); saw %v\nstderr:\n%s", waitErr, seen, stderr.Bytes())
	}
	if !slices.Equal(seen, []string{"started s1", "finished s1", "started s2", "finished s2", "started s3", "finished s3"}) {
		t.Errorf("before the kill: %v", seen)
	}

	// Restart on the same data: 1-3 are Completed from the checkpoint; the
	// resume runs 4 and 5 only.
	resume := `{"id": "before", "action": "plan.get", "at": "2026-01-05T09:00:05Z", "args": {"plan_id": "crash"}}
{"id": "resume", "action": "plan.resume", "at": "2026-01-05T09:00:05Z", "args": {"plan_id": "crash"}}
`
	out := runIn(t, env, resume, "--batch", "-", "--data", dir, "--log", logFile, "--events")
	if out.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	results, events := parseLines(t, out.stdout)
	var before, resumed runResult
	enginetest.Decode(t, results[0].Result, &before)
	enginetest.Decode(t, results[1].Result, &resumed)
	var statuses []string
	for _, s := range before.Plan.Subtasks {
		statuses = append(statuses, s.ID+":"+s.Status)
	}
	if before.Plan.Status != "interrupted" || strings.Join(statuses, " ") != "s1:Completed s2:Completed s3:Completed s4:Pending s5:Pending" {
		t.Errorf("after the crash: %s %v", before.Plan.Status, statuses)
	}
	var startedAgain []string
	for _, ev := range events {
		var d struct{ Subtask string }
		_ = json.Unmarshal(ev.Data, &d) // data that is not an object is about no subtask
		if ev.Event == "plan.subtask.started" {
			startedAgain = append(startedAgain, d.Subtask)
		}
	}
	if !slices.Equal(startedAgain, []string{"s4", "s5"}) {
		t.Errorf("the resume started %v, want s4 and s5", startedAgain)
	}
	if resumed.Plan.Status != "completed" {
		t.Fatalf("resumed: %s", results[1].Result)
	}
	for _, s := range resumed.Plan.Subtasks[:3] {
		if s.Status != "Completed" || s.Attempts != 1 || s.StartedAt != "2026-01-05T09:00:01Z" {
			t.Errorf("%s was run again: %+v", s.ID, s)
		}
	}

	// The final state is what the uninterrupted run produced.
	full := <-uninterrupted
	if full.code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s\n%s", full.code, full.stdout, full.stderr)
	}
	var straight runResult
	enginetest.Decode(t, parseResults(t, full.stdout)[1].Result, &straight)
	if straight.Plan.Status != "completed" || !bytes.Equal(compactJSON(t, straight.State), compactJSON(t, resumed.State)) {
		t.Errorf("final state after the crash:\n%s\nuninterrupted:\n%s", resumed.State, straight.State)
	}
	var state map[string]any
	enginetest.Decode(t, resumed.State, &state)
	for _, k := range []string{"c1", "c2", "c3", "c5"} {
		if state[k] != 1.0 {
			t.Errorf("counter %s = %v", k, state[k])
		}
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return b
}
