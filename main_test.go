package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/storage"
)

// engramBin is the engram binary built once by TestMain; the tests drive it
// as a subprocess, as a user or another program would.
var engramBin string

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		os.Exit(m.Run()) // the crashing subprocess of crash_test.go needs no engram
	}
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "engram-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "main_test:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a leftover temporary directory harms nothing
	// Other users (nobody, in the read-only test) must be able to run it.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "main_test:", err)
		return 1
	}
	engramBin = filepath.Join(dir, "engram")
	if err := enginetest.Build(engramBin); err != nil {
		fmt.Fprintln(os.Stderr, "main_test: building engram:", err)
		return 1
	}
	return m.Run()
}

// hermeticEnv is an environment whose HOME, XDG and ENGRAM variables all
// point into a fresh temporary directory, so that no run touches the real
// home. It returns the environment and that directory.
func hermeticEnv(t testing.TB) ([]string, string) {
	t.Helper()
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, "xdg-data"),
		"XDG_STATE_HOME=" + filepath.Join(home, "xdg-state"),
		"ENGRAM_DATA=" + filepath.Join(home, "engram-data"),
		"ENGRAM_LOG=" + filepath.Join(home, "engram-log", "engram.log"),
	}, home
}

// outcome is what one run of engram did.
type outcome struct {
	code           int
	stdout, stderr string
}

// engramCmd is a command running engram with args in env.
func engramCmd(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, engramBin, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	return cmd
}

// runIn runs engram in env with stdin and waits for it to exit.
func runIn(t *testing.T, env []string, stdin string, args ...string) outcome {
	t.Helper()
	cmd := engramCmd(t, env, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running engram %q: %v", args, err)
	}
	if exitErr != nil && !exitErr.Exited() {
		t.Fatalf("engram %q did not exit normally: %v\nstderr:\n%s", args, err, stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic:") {
		t.Errorf("engram %q printed a Go stack trace:\n%s", args, stderr.Bytes())
	}
	return outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// runEngram runs engram hermetically, logging to a temporary file.
func runEngram(t *testing.T, stdin string, args ...string) outcome {
	t.Helper()
	env, home := hermeticEnv(t)
	return runIn(t, env, stdin, append(args, "--log", filepath.Join(home, "test.log"))...)
}

// writeScript writes a script file and returns its path.
func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is one result line of a batch run.
type result struct {
	ID       string          `json:"id"`
	Action   string          `json:"action"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result"`
	Error    *resultError    `json:"error"`
	Expected *bool           `json:"expected"`
	Line     *int            `json:"line"`
}

type resultError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// parseResults decodes every line of a batch run's standard output.
func parseResults(t *testing.T, stdout string) []result {
	t.Helper()
	var out []result
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("result line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// traceEntries is trace.list's result.
type traceEntries struct {
	Entries []struct {
		Seq    uint64 `json:"seq"`
		TurnID string `json:"turn_id"`
		Kind   string `json:"kind"`
	} `json:"entries"`
	Count int `json:"count"`
}

func TestSmokeScript(t *testing.T) {
	const script = "testdata/batch/smoke.jsonl"
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var step struct{ ID string }
		if err := json.Unmarshal([]byte(line), &step); err != nil {
			t.Fatalf("%s: %q: %v", script, line, err)
		}
		ids = append(ids, step.ID)
	}

	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	out := runEngram(t, "", "--in-memory", "--batch", abs)
	if out.code != 0 {
		t.Fatalf("exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	if out.stderr != "" {
		t.Errorf("stderr is not empty:\n%s", out.stderr)
	}
	results := parseResults(t, out.stdout)
	if len(results) != len(ids) {
		t.Fatalf("%d result lines for %d steps:\n%s", len(results), len(ids), out.stdout)
	}
	for i, r := range results {
		if !r.OK || r.ID != ids[i] {
			t.Errorf("result %d = {id: %q, ok: %v, error: %+v}; want {id: %q, ok: true}", i, r.ID, r.OK, r.Error, ids[i])
		}
	}
}

// TestScriptsWithBackgroundWorkAreReproducible: a script with "at" on
// every step prints the same bytes on every run, events included
// (--events), though episode compaction and summary folds run in the
// background (testdata/batch/episodic.jsonl, testdata/batch/history.jsonl).
func TestScriptsWithBackgroundWorkAreReproducible(t *testing.T) {
	t.Parallel() // thirty engram runs, each on its own temporary directories
	for _, script := range []string{"testdata/batch/episodic.jsonl", "testdata/batch/history.jsonl", "testdata/batch/tour.jsonl"} {
		abs, err := filepath.Abs(script)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{{"--in-memory"}, {"--in-memory", "--events"}} {
			reproducible(t, abs, flags...)
		}
	}
}

// reproducible runs script with flags five times and wants the same bytes.
func reproducible(t *testing.T, abs string, flags ...string) {
	t.Helper()
	var first string
	for run := range 5 {
		out := runEngram(t, "", append(flags, "--batch", abs)...)
		if out.code != 0 {
			t.Fatalf("run %d: exit status %d\nstdout:\n%s\nstderr:\n%s", run, out.code, out.stdout, out.stderr)
		}
		if run == 0 {
			first = out.stdout
			if strings.Contains(filepath.Base(abs), "episodic") && (!strings.Contains(first, `"decision":"LINK"`) || !strings.Contains(first, `"status":"compacted"`)) {
				t.Fatalf("the script no longer links and compacts:\n%s", first)
			}
			if filepath.Base(abs) == "tour.jsonl" && (!strings.Contains(first, `"loaded":true`) || !strings.Contains(first, `"kind":"ConflictError"`)) {
				t.Fatalf("the tour script no longer loads, or loads twice:\n%s", first)
			}
			if strings.Contains(filepath.Base(abs), "history") && !strings.Contains(first, "Lisbon") {
				t.Fatalf("the summary does not have the evicted utterances:\n%s", first)
			}
			continue
		}
		if out.stdout != first {
			t.Fatalf("%v, run %d printed something else than run 1:\n%s\n---\n%s", flags, run, out.stdout, first)
		}
	}
}

// The tour's data outlives the run that loaded it: a later run sees it
// loaded, refuses to load it again, and removes it.
func TestTourLoadedInOneRunIsRemovedInAnother(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env, _ := hermeticEnv(t)
	first := runIn(t, env, `{"action": "tour.load"}`+"\n", "--batch", "-", "--data", dir)
	if first.code != 0 {
		t.Fatalf("loading: status %d\nstdout:\n%s\nstderr:\n%s", first.code, first.stdout, first.stderr)
	}
	second := runIn(t, env, `{"action": "tour.load", "expect_error": "ConflictError"}`+"\n"+`{"action": "tour.remove"}`+"\n"+`{"action": "tour.status"}`+"\n",
		"--batch", "-", "--data", dir)
	if second.code != 0 {
		t.Fatalf("the second run: status %d\nstdout:\n%s\nstderr:\n%s", second.code, second.stdout, second.stderr)
	}
	r := parseResults(t, second.stdout)
	var st struct {
		Loaded bool `json:"loaded"`
		Kept   []struct {
			Kind string `json:"kind"`
		} `json:"kept"`
	}
	if len(r) != 3 || json.Unmarshal(r[2].Result, &st) != nil || st.Loaded {
		t.Fatalf("after tour.remove in the second run, tour.status says %s", second.stdout)
	}
}

func TestFailingStepExitsOne(t *testing.T) {
	script := writeScript(t, "fail.jsonl", `{"id": "a", "action": "engine.info"}
{"id": "b", "action": "engine.nosuch"}
{"id": "c", "action": "engine.info"}
`)
	out := runEngram(t, "", "--in-memory", "--batch", script)
	if out.code != 1 {
		t.Fatalf("exit status %d, want 1\nstderr:\n%s", out.code, out.stderr)
	}
	results := parseResults(t, out.stdout)
	if len(results) != 3 {
		t.Fatalf("%d result lines, want 3 (the run goes on after a failed step):\n%s", len(results), out.stdout)
	}
	if !results[0].OK || results[1].OK || !results[2].OK {
		t.Errorf("ok = %v, %v, %v; want true, false, true", results[0].OK, results[1].OK, results[2].OK)
	}
	if e := results[1].Error; e == nil || e.Kind != "UnknownAction" {
		t.Errorf("the unknown action's error = %+v, want kind UnknownAction", e)
	}
	if !strings.Contains(out.stderr, "1 of 3") {
		t.Errorf("stderr does not say how many steps failed:\n%s", out.stderr)
	}
}

func TestExpectedErrorPasses(t *testing.T) {
	script := writeScript(t, "expect.jsonl", `{"id": "a", "action": "engine.nosuch", "expect_error": "UnknownAction"}
`)
	out := runEngram(t, "", "--in-memory", "--batch", script)
	if out.code != 0 {
		t.Fatalf("exit status %d, want 0 (the step failed as expected)\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	if r := parseResults(t, out.stdout); len(r) != 1 || r[0].OK || r[0].Expected == nil || !*r[0].Expected {
		t.Errorf("results = %s, want one with ok false, expected true", out.stdout)
	}
}

func TestUnreadableScriptExitsTwo(t *testing.T) {
	env, home := hermeticEnv(t)
	out := runIn(t, env, "", "--batch", "/nonexistent/script.jsonl", "--log", filepath.Join(home, "test.log"))
	if out.code != 2 {
		t.Fatalf("exit status %d, want 2\nstderr:\n%s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, "/nonexistent/script.jsonl") || out.stdout != "" {
		t.Errorf("stdout %q, stderr %q: want nothing on stdout and the path on stderr", out.stdout, out.stderr)
	}
	// An unreadable script changes nothing: the default data directory was not even created.
	if _, err := os.Stat(filepath.Join(home, "engram-data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory exists after an unreadable script: %v", err)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"in-memory and data", []string{"--in-memory", "--data", "X", "--batch", "-"}, "--in-memory and --data"},
		{"fail-fast without batch", []string{"--in-memory", "--fail-fast"}, "only apply with --batch"},
		{"stray argument", []string{"--in-memory", "script.jsonl"}, `unexpected argument "script.jsonl"`},
		{"bad duration", []string{"--in-memory", "--llm-timeout", "soon"}, "llm-timeout"},
		{"unknown provider", []string{"--in-memory", "--llm", "gpt"}, `--llm "gpt": unknown provider`},
		{"replay without cassette", []string{"--in-memory", "--llm", "replay"}, "--llm replay needs --cassette"},
		{"cassette without replay", []string{"--in-memory", "--cassette", "x.yaml"}, "--cassette only applies with --llm replay"},
		{"record offline", []string{"--in-memory", "--record", "x.yaml"}, "--record only applies with a live provider"},
		{"url offline", []string{"--in-memory", "--llm-url", "http://x"}, "--llm-url only applies"},
		{"missing cassette", []string{"--in-memory", "--llm", "replay", "--cassette", "/no/such.yaml"}, "/no/such.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := runEngram(t, "", c.args...)
			if out.code != 2 {
				t.Fatalf("exit status %d, want 2\nstderr:\n%s", out.code, out.stderr)
			}
			if !strings.Contains(out.stderr, c.want) {
				t.Errorf("stderr does not mention %q:\n%s", c.want, out.stderr)
			}
			if out.stdout != "" {
				t.Errorf("stdout is not empty: %q", out.stdout)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out := runEngram(t, "", "--version")
	if out.code != 0 || out.stdout != "engram "+core.Version+"\n" {
		t.Errorf("--version: status %d, stdout %q; want 0, %q", out.code, out.stdout, "engram "+core.Version+"\n")
	}
}

func TestScriptFromStandardInput(t *testing.T) {
	stdin := `{"id": "a", "action": "engine.info"}

# a comment
{"id": "b", "action": "actions.list"}
`
	out := runEngram(t, stdin, "--in-memory", "--batch", "-")
	if out.code != 0 {
		t.Fatalf("exit status %d, want 0\nstderr:\n%s", out.code, out.stderr)
	}
	results := parseResults(t, out.stdout)
	if len(results) != 2 || results[0].ID != "a" || results[1].ID != "b" || !results[0].OK || !results[1].OK {
		t.Errorf("results:\n%s\nwant a and b, both ok", out.stdout)
	}
}

// TestInvalidYAMLScript: a YAML syntax error makes the script unreadable:
// exit status 2, saying so and where, not "1 of 1 step(s) did not pass"
// (issue 14, bug 10); standard output still has its ParseError result.
func TestInvalidYAMLScript(t *testing.T) {
	script := writeScript(t, "bad.yaml", "steps:\n  - action: engine.info\n  - {action: [unclosed\n")
	out := runEngram(t, "", "--in-memory", "--batch", script)
	if out.code != 2 || !strings.Contains(out.stderr, "engram: cannot read the script: line ") || strings.Contains(out.stderr, "did not pass") {
		t.Fatalf("exit status %d, want 2 saying the script cannot be read\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	results := parseResults(t, out.stdout)
	if len(results) != 1 {
		t.Fatalf("%d result lines, want 1:\n%s", len(results), out.stdout)
	}
	r := results[0]
	if r.OK || r.Error == nil || r.Error.Kind != "ParseError" {
		t.Fatalf("result %s, want a ParseError", out.stdout)
	}
	if r.Line == nil || *r.Line < 1 {
		t.Errorf("the ParseError result carries no line: %s", out.stdout)
	} else if !strings.Contains(r.Error.Message, "line "+strconv.Itoa(*r.Line)) {
		t.Errorf("the message %q does not name line %d", r.Error.Message, *r.Line)
	}
}

func TestDataDirIsARegularFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runEngram(t, `{"action": "engine.info"}`, "--batch", "-", "--data", file)
	if out.code != 2 {
		t.Fatalf("exit status %d, want 2\nstderr:\n%s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, file) || !strings.Contains(out.stderr, "not a directory") {
		t.Errorf("stderr does not say that %s is not a directory:\n%s", file, out.stderr)
	}
}

func TestLockedDataDir(t *testing.T) {
	// Engram waits 5 s for the holder to answer before it gives up: other
	// tests run meanwhile (a temporary directory and engram of its own).
	t.Parallel()
	dir := t.TempDir()
	held, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := held.Close(); err != nil {
			t.Error(err)
		}
	}()
	out := runEngram(t, `{"action": "engine.info"}`, "--batch", "-", "--data", dir)
	if out.code != 2 {
		t.Fatalf("exit status %d, want 2\nstderr:\n%s", out.code, out.stderr)
	}
	for _, want := range []string{dir, "in use", fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, out.stderr)
		}
	}
	if out.stdout != "" {
		t.Errorf("stdout is not empty: %q", out.stdout)
	}
}

func TestReadOnlyDataDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, "info.jsonl", `{"action": "engine.info"}`+"\n")
	env, home := hermeticEnv(t)
	args := []string{"--batch", script, "--data", dir, "--log", filepath.Join(home, "test.log")}
	var out outcome
	if os.Geteuid() != 0 {
		out = runIn(t, env, "", args...)
	} else {
		// Root writes anywhere: run as nobody, who may read the script and
		// write its home and log, but not the data directory.
		for _, d := range []string{base, filepath.Dir(base), filepath.Dir(script), filepath.Dir(filepath.Dir(script)), filepath.Dir(home)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(home, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		out = runAsNobody(t, env, args...)
	}
	if out.code != 2 {
		t.Fatalf("exit status %d, want 2\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stderr, dir) || !strings.Contains(out.stderr, "not writable") {
		t.Errorf("stderr does not say that %s is not writable:\n%s", dir, out.stderr)
	}
}

const nobody = 65534

// runAsNobody runs engram as user nobody (the caller must be root).
func runAsNobody(t *testing.T, env []string, args ...string) outcome {
	t.Helper()
	cmd := engramCmd(t, env, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot run a process as nobody here: %v", err)
	}
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running engram as nobody: %v", err)
	}
	return outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func TestDurableRunsKeepDataAndLogOnlyToTheFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env, home := hermeticEnv(t)
	logFile := filepath.Join(home, "test.log")
	first := runIn(t, env, `{"action": "turn.start", "turn": "t-1", "args": {"input": "hello"}}`+"\n",
		"--batch", "-", "--data", dir, "--log", logFile)
	if first.code != 0 {
		t.Fatalf("first run: status %d\nstdout:\n%s\nstderr:\n%s", first.code, first.stdout, first.stderr)
	}
	second := runIn(t, env, `{"action": "trace.list", "args": {"turn": "t-1", "kind": "turn.start"}}`+"\n",
		"--batch", "-", "--data", dir, "--log", logFile)
	if second.code != 0 {
		t.Fatalf("second run: status %d\nstderr:\n%s", second.code, second.stderr)
	}
	for i, out := range []outcome{first, second} {
		if out.stderr != "" {
			t.Errorf("run %d wrote to stderr (Badger's log must never reach the terminal):\n%s", i+1, out.stderr)
		}
	}
	var entries traceEntries
	if r := parseResults(t, second.stdout); len(r) != 1 || json.Unmarshal(r[0].Result, &entries) != nil {
		t.Fatalf("trace.list output: %s", second.stdout)
	}
	if entries.Count != 1 || entries.Entries[0].TurnID != "t-1" || entries.Entries[0].Kind != "turn.start" {
		t.Errorf("the second run's trace of t-1 = %+v, want the turn.start of the first run", entries)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "component=badger") {
		t.Errorf("Badger's messages are not in the log file:\n%s", log)
	}
}

func TestDefaultDataDirAndLog(t *testing.T) {
	cases := []struct {
		name  string
		unset []string // variables removed from the hermetic environment
		data  string   // expected, relative to the temporary home
		log   string
	}{
		{"ENGRAM variables", nil, "engram-data", "engram-log/engram.log"},
		{"XDG variables", []string{"ENGRAM_DATA", "ENGRAM_LOG"}, "xdg-data/engram", "xdg-state/engram/engram.log"},
		{"home", []string{"ENGRAM_DATA", "ENGRAM_LOG", "XDG_DATA_HOME", "XDG_STATE_HOME"}, ".local/share/engram", ".local/state/engram/engram.log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, home := hermeticEnv(t)
			env = slices.DeleteFunc(env, func(kv string) bool {
				return slices.Contains(c.unset, kv[:strings.IndexByte(kv, '=')])
			})
			out := runIn(t, env, `{"action": "engine.info"}`+"\n", "--batch", "-")
			if out.code != 0 {
				t.Fatalf("status %d\nstderr:\n%s", out.code, out.stderr)
			}
			var info core.Info
			if r := parseResults(t, out.stdout); len(r) != 1 || json.Unmarshal(r[0].Result, &info) != nil {
				t.Fatalf("engine.info output: %s", out.stdout)
			}
			if want := filepath.Join(home, c.data); info.DataDir != want || info.Store != "durable" {
				t.Errorf("store %s in %q, want durable in %q", info.Store, info.DataDir, want)
			}
			if _, err := os.Stat(filepath.Join(home, c.log)); err != nil {
				t.Errorf("no log file: %v", err)
			}
		})
	}
}

// TestKill9KeepsAcknowledgedWrites streams turn.start steps into engram,
// SIGKILLs it after 300 acknowledgements while it is still writing, and checks
// that every turn acknowledged by an ok result line is in the store.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	const ackBeforeKill = 300
	dir := filepath.Join(t.TempDir(), "data")
	env, home := hermeticEnv(t)
	logFile := filepath.Join(home, "test.log")
	cmd := engramCmd(t, env, "--batch", "-", "--data", dir, "--log", logFile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// The writer sends steps as fast as engram takes them, until the pipe breaks.
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 1; i <= 1_000_000; i++ {
			turn := fmt.Sprintf("t-%07d", i)
			step := fmt.Sprintf(`{"id": %q, "action": "turn.start", "turn": %q, "args": {"input": "x"}}`+"\n", turn, turn)
			if _, err := io.WriteString(stdin, step); err != nil {
				return
			}
		}
	}()

	// Every ok line engram wrote acknowledges a committed turn, including
	// those still in the pipe when it was killed.
	var acked []string
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("result line %q: %v", sc.Bytes(), err)
			continue
		}
		if !r.OK {
			t.Errorf("step %s failed: %+v", r.ID, r.Error)
			continue
		}
		acked = append(acked, r.ID)
		if len(acked) == ackBeforeKill && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		}
	}
	waitErr := cmd.Wait()
	<-writerDone
	if !killed {
		t.Fatalf("engram stopped after %d acknowledgements, before the kill: %v\nstderr:\n%s", len(acked), waitErr, stderr.Bytes())
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("engram ended with %v, want death by SIGKILL (it must still have been running)", waitErr)
	}
	t.Logf("%d turns acknowledged before engram died", len(acked))

	// Reopen the store (the dead process's lock must be gone), add turns
	// (new trace entries must not reuse the numbers of acknowledged ones), list.
	script := `{"action": "turn.start", "turn": "after-1"}
{"action": "turn.start", "turn": "after-2"}
{"id": "list", "action": "trace.list", "args": {"kind": "turn.start", "limit": 100000}}
`
	out := runIn(t, env, script, "--batch", "-", "--data", dir, "--log", logFile)
	if out.code != 0 {
		t.Fatalf("reopening after kill -9: status %d\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	results := parseResults(t, out.stdout)
	var list traceEntries
	if len(results) != 3 || json.Unmarshal(results[2].Result, &list) != nil {
		t.Fatalf("output after reopening:\n%s", out.stdout)
	}
	present := map[string]bool{}
	seqs := map[uint64]bool{}
	for _, e := range list.Entries {
		if present[e.TurnID] || seqs[e.Seq] {
			t.Errorf("turn %s (seq %d) appears twice in the trace", e.TurnID, e.Seq)
		}
		present[e.TurnID], seqs[e.Seq] = true, true
	}
	missing := 0
	for _, turn := range append(acked, "after-1", "after-2") {
		if !present[turn] {
			missing++
			if missing <= 10 {
				t.Errorf("turn %s was acknowledged but is not in the store", turn)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged turns lost (%d entries in the store)", missing, len(acked)+2, len(list.Entries))
	}
}

func TestSignalStopsBatchCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			env, home := hermeticEnv(t)
			logFile := filepath.Join(home, "test.log")
			cmd := engramCmd(t, env, "--batch", "-", "--data", dir, "--log", logFile)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			// Open until the end: engram is waiting on it when signalled. Wait
			// has closed it by then, so Close's error says nothing.
			defer func() { _ = stdin.Close() }()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// One acknowledged step: engram is now running the script (and
			// handling signals), waiting for the next line.
			if _, err := io.WriteString(stdin, `{"action": "turn.start", "turn": "before-signal"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(stdout)
			line, err := br.ReadString('\n')
			if err != nil || !strings.Contains(line, `"ok":true`) {
				t.Fatalf("first result %q, %v\nstderr:\n%s", line, err, stderr.Bytes())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() {
				_, _ = io.Copy(io.Discard, br) // drain the rest; Wait says how engram ended
				exited <- cmd.Wait()
			}()
			select {
			case err = <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill() // fails only if it has just exited, which is as good
				t.Fatalf("engram did not exit within 10s of %v (then killed: %v)", sig, <-exited)
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Fatalf("after %v: %v (status %d), want exit status 1\nstderr:\n%s", sig, err, code, stderr.Bytes())
			}
			if !strings.Contains(stderr.String(), "stopped") || strings.Contains(stderr.String(), "goroutine ") {
				t.Errorf("stderr after %v:\n%s", sig, stderr.Bytes())
			}

			// The store was closed cleanly: it opens again and kept the step.
			out := runIn(t, env, `{"action": "trace.list", "args": {"turn": "before-signal", "kind": "turn.start"}}`+"\n",
				"--batch", "-", "--data", dir, "--log", logFile)
			if out.code != 0 {
				t.Fatalf("reopening: status %d\nstderr:\n%s", out.code, out.stderr)
			}
			var list traceEntries
			if r := parseResults(t, out.stdout); len(r) != 1 || json.Unmarshal(r[0].Result, &list) != nil || list.Count != 1 {
				t.Errorf("trace of the turn before the signal: %s", out.stdout)
			}
		})
	}
}

// The console palette's history is kept per data directory and agent,
// never for --in-memory: a command holds what was typed (a memory's text),
// which another agent or store must not see (issue 14, bug 11; a review
// found one history file shared by all).
func TestPaletteHistoryIsTheDataDirectorysAndTheAgents(t *testing.T) {
	data := t.TempDir()
	alice := paletteHistory(config{data: data, agent: "alice"})
	bob := paletteHistory(config{data: data, agent: "bob"})
	other := paletteHistory(config{data: t.TempDir(), agent: "alice"})
	odd := paletteHistory(config{data: data, agent: "../x"})
	if alice == bob || alice == other || filepath.Dir(alice) != data || filepath.Dir(odd) != data {
		t.Errorf("history files: alice %s, bob %s, alice elsewhere %s, ../x %s", alice, bob, other, odd)
	}
	if got := paletteHistory(config{inMemory: true, agent: "alice"}); got != "" {
		t.Errorf("--in-memory keeps a history file: %s", got)
	}
}
