package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// dataFlag is an example's own data directory.
var dataFlag = regexp.MustCompile(`--data \S+`)

// readmeBatchExamples are the command lines of README.md's ```sh blocks
// that run a batch script: the examples a new user types first.
func readmeBatchExamples(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, block := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```\n").FindAllStringSubmatch(string(raw), -1) {
		for l := range strings.SplitSeq(block[1], "\n") {
			if strings.Contains(l, "--batch") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	return lines
}

// TestReadmeBatchExamplesRunAsWritten: issue 14, "README". Every batch
// example of README.md runs as written from a checkout — `go run .`
// stands for the engram binary, built once for the tests — and every step
// passes. A bare `engram …` (not on a new user's PATH) fails it, and so
// does an example that would write to the default data directory: they
// run in an empty home, with no data directory but --in-memory.
func TestReadmeBatchExamplesRunAsWritten(t *testing.T) {
	examples := readmeBatchExamples(t)
	if len(examples) < 4 {
		t.Fatalf("README.md has %d batch examples, want the four of Batch mode and the replay: %q", len(examples), examples)
	}
	goRun := regexp.MustCompile(`(^|\| )go run \.( |$)`)
	for _, ex := range examples {
		t.Run(ex, func(t *testing.T) {
			if !goRun.MatchString(ex) {
				t.Fatalf("%q does not run from a checkout: write it as go run . …", ex)
			}
			line := goRun.ReplaceAllString(ex, "${1}"+engramBin+"${2}")
			// An example with its own --data runs in a fresh directory
			// (it shows several engrams sharing one); others must not
			// touch the default one.
			if dataFlag.MatchString(line) {
				line = dataFlag.ReplaceAllString(line, "--data "+t.TempDir())
			} else if !strings.Contains(ex, "--in-memory") {
				t.Errorf("%q writes to the default data directory: give it --in-memory (or --data DIR)", ex)
			}
			env, _ := hermeticEnv(t)
			cmd := exec.Command("sh", "-c", line)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", ex, err, out)
			}
			steps := 0
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var res struct {
					ID       string `json:"id"`
					OK       bool   `json:"ok"`
					Expected bool   `json:"expected"` // a failure the step expects
				}
				if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
					t.Fatalf("%s: a result line is not JSON: %v: %s", ex, err, sc.Text())
				}
				if !res.OK && !res.Expected {
					t.Errorf("%s: step %q did not pass: %s", ex, res.ID, sc.Text())
				}
				steps++
			}
			if steps == 0 {
				t.Errorf("%s printed no result", ex)
			}
		})
	}
}
