package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/batch"
	"github.com/engram-console/engram/core/input"
)

// Issue 13, item 9: a line past the limit is one failed step with a message
// saying what to do, not a library's; the run goes on at the next line.
func TestALineOverTheLimitIsOneFailedStep(t *testing.T) {
	script := `{"action": "engine.info", "args": {"x": "` + strings.Repeat("y", input.MaxLine) + `"}}` + "\n" +
		`{"action": "actions.list"}` + "\n"
	var out bytes.Buffer
	summary, err := batch.NewRunner(newEngine(t), &out, batch.Options{}).Run(context.Background(), strings.NewReader(script), false)
	if err != nil || summary.Steps != 2 || summary.Failed != 1 {
		t.Fatalf("%v %+v\n%.300s", err, summary, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var first batch.Result
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := "line 1: the line is longer than the limit of 2 MiB; split the step (its args may be at most 1 MiB)"
	if first.OK || first.Error.Message != want || first.Line != 1 {
		t.Errorf("first result %s, want the message %q", lines[0], want)
	}
	if !strings.Contains(lines[1], `"action":"actions.list","ok":true`) {
		t.Errorf("the next line did not run: %s", lines[1])
	}
}

// Issue 13, item 3: a script is a regular file (or standard input); a
// device or a FIFO is refused before the engine opens.
func TestScriptsAreRegularFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "script.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/dev/zero": "character device", fifo: "named pipe", t.TempDir(): "directory"} {
		_, err := batch.Open(path)
		if !errors.Is(err, batch.ErrUnreadable) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--batch -") {
			t.Errorf("%s: %v, want ErrUnreadable saying %q and how to read a pipe", path, err, want)
		}
	}
}

// Issue 13, item 3: a YAML script is read whole, so it has a size limit.
func TestAYAMLScriptOverTheLimitIsUnreadable(t *testing.T) {
	huge := io.LimitReader(zeros{}, input.MaxScript+1)
	_, err := batch.NewRunner(newEngine(t), io.Discard, batch.Options{}).Run(context.Background(), huge, true)
	if !errors.Is(err, batch.ErrUnreadable) || !strings.Contains(err.Error(), "at most 4 MiB") {
		t.Errorf("err = %v, want ErrUnreadable naming the limit", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// A review found `steps: [[[[…` (80,000 deep) taking 12 s in the YAML
// parser: flow nesting is refused before a script is parsed.
func TestAYAMLScriptNestedTooDeepIsRefusedBeforeParsing(t *testing.T) {
	script := strings.NewReader("steps: " + strings.Repeat("[", 80000) + strings.Repeat("]", 80000) + "\n")
	var out strings.Builder
	_, err := batch.NewRunner(newEngine(t), &out, batch.Options{}).Run(context.Background(), script, true)
	if got := fmt.Sprint(err) + out.String(); !strings.Contains(got, "nested more than 64") || !strings.Contains(got, "ParseError") {
		t.Fatalf("a script of 80,000 nested [: %v, %s; want a refusal naming the limit", err, out.String())
	}
}
