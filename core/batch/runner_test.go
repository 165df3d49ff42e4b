package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/batch"
	"github.com/engram-console/engram/core/clock"
)

var epoch = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

// newEngine is a bare engine (built-in actions only): the runner's tests
// need actions, not subsystems.
func newEngine(t testing.TB) *core.Engine {
	t.Helper()
	return openEngine(t, []core.Subsystem{})
}

// newFullEngine has every subsystem, as engram runs.
func newFullEngine(t testing.TB) *core.Engine {
	t.Helper()
	return openEngine(t, nil)
}

func openEngine(t testing.TB, subsystems []core.Subsystem) *core.Engine {
	t.Helper()
	e, err := core.Open(core.Options{InMemory: true, Clock: clock.NewFixed(epoch), IDSeed: "batch tests", Subsystems: subsystems})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

// result is a decoded output line.
type result struct {
	ID       string          `json:"id"`
	Action   string          `json:"action"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result"`
	Error    *batch.ErrorBody
	Expected *bool  `json:"expected"`
	Elapsed  *int64 `json:"elapsed_us"`
	Line     int    `json:"line"`
	Event    string `json:"event"`
}

// run runs a JSONL (or YAML) script on engine and decodes every output line.
func run(t *testing.T, engine *core.Engine, script string, yaml bool, opts batch.Options) ([]result, batch.Summary, string) {
	t.Helper()
	var out bytes.Buffer
	summary, err := batch.NewRunner(engine, &out, opts).Run(context.Background(), strings.NewReader(script), yaml)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var results []result
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("output line is not JSON: %s", line)
		}
		results = append(results, r)
	}
	return results, summary, out.String()
}

func field(t *testing.T, raw json.RawMessage, path ...string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v has no field %s", v, p)
		}
		v = m[p]
	}
	return v
}

func TestResultsInInputOrderWithLines(t *testing.T) {
	script := "# a comment\n\n" +
		`{"id": "a", "action": "engine.info"}` + "\n" +
		`{"id": "b", "action": "actions.list"}` + "\n" +
		`{"id": "c", "action": "trace.list"}` // no final newline
	results, summary, _ := run(t, newEngine(t), script, false, batch.Options{})
	if len(results) != 3 || summary.Steps != 3 || summary.Passed != 3 || !summary.OK() {
		t.Fatalf("want 3 passing results, got %d (%+v)", len(results), summary)
	}
	for i, want := range []struct {
		id, action string
		line       int
	}{{"a", "engine.info", 3}, {"b", "actions.list", 4}, {"c", "trace.list", 5}} {
		r := results[i]
		if r.ID != want.id || r.Action != want.action || r.Line != want.line || !r.OK || r.Elapsed == nil {
			t.Errorf("result %d = %+v, want id %s action %s line %d ok", i, r, want.id, want.action, want.line)
		}
	}
}

func TestReferencesSubstituteJSONValues(t *testing.T) {
	script := `{"id": "info", "action": "engine.info"}
{"id": "t", "action": "turn.start", "turn": "turn_1", "args": {"input": "hi"}}
{"id": "list", "action": "trace.list", "args": {"turn": "${t.context.turn_id}", "limit": "${info.actions}"}}
{"id": "idx", "action": "trace.list", "args": {"kind": "${list.entries.0.kind}"}}`
	results, summary, out := run(t, newEngine(t), script, false, batch.Options{})
	if !summary.OK() {
		t.Fatalf("script failed:\n%s", out)
	}
	entries := field(t, results[2].Result, "entries").([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["turn_id"] != "turn_1" {
		t.Errorf("reference to turn_id did not filter: %v", entries)
	}
	// limit came in as the number 5 (a string "5" would be a ValidationError).
	if got := field(t, results[3].Result, "count"); got != 1.0 {
		t.Errorf("index reference: count = %v, want 1", got)
	}
}

func TestReferenceErrors(t *testing.T) {
	cases := map[string]struct{ script, want string }{
		"unknown step":  {`{"action": "trace.list", "args": {"turn": "${nope.id}"}}`, `no earlier step has the id "nope"`},
		"missing field": {`{"id": "i", "action": "engine.info"}` + "\n" + `{"action": "trace.list", "args": {"turn": "${i.nope}"}}`, `has no field "nope" (it has: actions, agent`},
		"failed step":   {`{"id": "bad", "action": "nope.nope"}` + "\n" + `{"action": "trace.list", "args": {"turn": "${bad.x}"}}`, `step "bad" (line 1) failed`},
		"bad index":     {`{"id": "l", "action": "trace.list"}` + "\n" + `{"action": "trace.list", "args": {"turn": "${l.entries.3}"}}`, `is a list of 0`},
		"later step":    {`{"action": "trace.list", "args": {"turn": "${later.x}"}}` + "\n" + `{"id": "later", "action": "engine.info"}`, `no earlier step has the id "later"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			results, _, out := run(t, newEngine(t), c.script, false, batch.Options{})
			var refStep *result
			for i := range results {
				if results[i].Action == "trace.list" && results[i].Error != nil {
					refStep = &results[i]
				}
			}
			if refStep == nil {
				t.Fatalf("the referring step did not fail:\n%s", out)
			}
			if refStep.Error.Kind != "ValidationError" || !strings.Contains(refStep.Error.Message, c.want) {
				t.Errorf("got %s %q, want ValidationError containing %q", refStep.Error.Kind, refStep.Error.Message, c.want)
			}
		})
	}
}

func TestExpectError(t *testing.T) {
	script := `{"id": "right", "action": "engine.inf", "expect_error": "UnknownAction"}
{"id": "wrongkind", "action": "engine.inf", "expect_error": "ValidationError"}
{"id": "succeeded", "action": "engine.info", "expect_error": "NotFoundError"}`
	results, summary, _ := run(t, newEngine(t), script, false, batch.Options{})
	want := []bool{true, false, false}
	for i, r := range results {
		if r.Expected == nil || *r.Expected != want[i] {
			t.Errorf("%s: expected = %v, want %v", r.ID, r.Expected, want[i])
		}
	}
	if results[2].OK != true {
		t.Errorf("a step that succeeded is ok even when an error was expected")
	}
	if summary.Passed != 1 || summary.Failed != 2 || summary.OK() || summary.FirstFailure != 2 {
		t.Errorf("summary = %+v, want 1 passed, 2 failed, first failure on line 2", summary)
	}
}

func TestBadStepsAreReportedAndTheRunGoesOn(t *testing.T) {
	cases := []struct{ line, kind, mention string }{
		{`not json`, "ParseError", "line 1"},
		{`["an", "array"]`, "ParseError", "must be a JSON object"},
		{`{"action": "engine.inf"}`, "UnknownAction", `did you mean "engine.info"`},
		{`{"action": "trace.list", "args": {"limit": "ten"}}`, "ValidationError", "args.limit: expected integer"},
		{`{"action": "trace.list", "args": {"limt": 1}}`, "ValidationError", `unknown field "limt"`},
		{`{"action": "trace.list", "args": [1]}`, "ValidationError", "args must be a JSON object"},
		{`{"action": "trace.list", "args": {"limit": 1,}}`, "ParseError", "not valid JSON"},
		{`{"action": "trace.list", "at": "yesterday"}`, "ValidationError", "at: \"yesterday\" is not an RFC 3339 time"},
		{`{"action": "trace.list", "at": 12}`, "ValidationError", `"at" must be a string`},
		{`{"acton": "trace.list"}`, "ValidationError", `unknown step field "acton" (did you mean "action"?)`},
		{`{"id": "x"}`, "ValidationError", `"action" is required`},
		{`{"action": "trace.list", "expect_error": "Oops"}`, "ValidationError", "unknown error kind"},
		{`{"action": "turn.end"}`, "ValidationError", "turn.end needs the turn"},
	}
	var script strings.Builder
	for _, c := range cases {
		script.WriteString(c.line + "\n")
	}
	script.WriteString(`{"id": "last", "action": "engine.info"}` + "\n")
	engine := newEngine(t)
	before := info(t, engine)
	results, summary, _ := run(t, engine, script.String(), false, batch.Options{})
	if len(results) != len(cases)+1 {
		t.Fatalf("got %d results for %d lines", len(results), len(cases)+1)
	}
	for i, c := range cases {
		r := results[i]
		if r.OK || r.Error == nil || string(r.Error.Kind) != c.kind || !strings.Contains(r.Error.Message, c.mention) || r.Line != i+1 {
			t.Errorf("line %d %s: got %+v %+v, want %s mentioning %q", i+1, c.line, r, r.Error, c.kind, c.mention)
		}
	}
	if !results[len(cases)].OK {
		t.Error("the run did not go on after the bad lines")
	}
	if summary.Failed != len(cases) || summary.Passed != 1 {
		t.Errorf("summary = %+v", summary)
	}
	if after := info(t, engine); !bytes.Equal(before, after) {
		t.Errorf("failed steps changed what the engine keeps:\nbefore %s\nafter  %s", before, after)
	}
}

// info is engine.info's counts, the engine's view of what it keeps.
func info(t *testing.T, engine *core.Engine) json.RawMessage {
	t.Helper()
	res, err := engine.Do(context.Background(), core.Request{Action: "engine.info"})
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Counts json.RawMessage }
	if err := json.Unmarshal(res, &v); err != nil {
		t.Fatal(err)
	}
	return v.Counts
}

func TestAsSetsThePrincipal(t *testing.T) {
	script := `{"id": "a", "action": "turn.start", "turn": "t1", "as": "agent_b"}
{"id": "d", "action": "turn.start", "turn": "t2"}`
	results, _, _ := run(t, newEngine(t), script, false, batch.Options{})
	if got := field(t, results[0].Result, "context", "principal"); got != "agent_b" {
		t.Errorf("principal with as = %v, want agent_b", got)
	}
	if got := field(t, results[1].Result, "context", "principal"); got != core.DefaultAgent {
		t.Errorf("principal without as = %v, want %s", got, core.DefaultAgent)
	}
}

func TestDuplicateStepID(t *testing.T) {
	script := `{"id": "a", "action": "engine.info"}
{"id": "a", "action": "trace.list"}
{"action": "trace.list", "args": {"limit": "${a.actions}"}}`
	results, _, _ := run(t, newEngine(t), script, false, batch.Options{})
	if results[1].OK || results[1].Error.Kind != "ValidationError" || !strings.Contains(results[1].Error.Message, "line 1") {
		t.Errorf("duplicate id: %+v", results[1].Error)
	}
	if !results[2].OK {
		t.Errorf("the reference still points at the first step a: %+v", results[2].Error)
	}
}

func TestFailFastStops(t *testing.T) {
	script := `{"action": "engine.info"}
{"action": "nope.nope"}
{"action": "engine.info"}`
	results, summary, _ := run(t, newEngine(t), script, false, batch.Options{FailFast: true})
	if len(results) != 2 || !summary.Stopped || summary.OK() {
		t.Errorf("fail-fast: %d results, summary %+v; want 2 and stopped", len(results), summary)
	}
	results, summary, _ = run(t, newEngine(t), script, false, batch.Options{})
	if len(results) != 3 || summary.Stopped {
		t.Errorf("without fail-fast: %d results, summary %+v; want 3", len(results), summary)
	}
}

func TestAtPinsTheClock(t *testing.T) {
	script := `{"id": "t", "action": "turn.start", "turn": "x", "at": "2030-01-02T03:04:05.006Z"}
{"id": "l", "action": "trace.list", "at": "2030-01-02T03:04:09Z"}`
	results, _, _ := run(t, newEngine(t), script, false, batch.Options{})
	if got := field(t, results[0].Result, "context", "started_at"); got != "2030-01-02T03:04:05.006Z" {
		t.Errorf("started_at = %v, want the step's at", got)
	}
	entries := field(t, results[1].Result, "entries").([]any)
	if got := entries[0].(map[string]any)["at"]; got != "2030-01-02T03:04:05.006Z" {
		t.Errorf("trace entry at = %v", got)
	}
	for _, r := range results {
		if *r.Elapsed != 0 {
			t.Errorf("elapsed_us with a pinned clock = %d, want 0", *r.Elapsed)
		}
	}
}

// TestReproducibleByteForByte: a script with `at` everywhere prints the same
// bytes on two fresh stores, generated ids included.
func TestReproducibleByteForByte(t *testing.T) {
	script := `{"id": "t", "action": "turn.start", "at": "2025-11-05T10:00:00.010Z", "args": {"input": "no turn id: one is generated"}}
{"action": "turn.end", "turn": "fixed", "at": "2025-11-05T10:00:00.020Z", "expect_error": "NotFoundError"}
{"action": "trace.list", "at": "2025-11-05T10:00:00.030Z"}
{"action": "engine.info", "at": "2025-11-05T10:00:00.040Z"}`
	outputs := make([]string, 2)
	for i := range outputs {
		// Real clock as the base: only `at` makes it deterministic.
		e, err := core.Open(core.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		_, _, outputs[i] = run(t, e, script, false, batch.Options{Events: true})
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if outputs[0] != outputs[1] {
		t.Errorf("two runs differ:\n%s\n%s", outputs[0], outputs[1])
	}
	if !strings.Contains(outputs[0], `"turn_id":"`) {
		t.Errorf("no generated turn id in the output:\n%s", outputs[0])
	}
}

func TestEventsPrecedeTheResultOfTheirStep(t *testing.T) {
	script := `{"id": "t", "action": "turn.start", "turn": "x"}
{"id": "i", "action": "engine.info"}`
	results, _, _ := run(t, newEngine(t), script, false, batch.Options{Events: true})
	var order []string
	for _, r := range results {
		if r.Event != "" {
			order = append(order, r.Event)
		} else {
			order = append(order, r.ID)
		}
	}
	if strings.Join(order, ",") != "trace.recorded,t,i" {
		t.Errorf("output order = %v, want trace.recorded,t,i", order)
	}
	results, _, _ = run(t, newEngine(t), script, false, batch.Options{})
	for _, r := range results {
		if r.Event != "" {
			t.Errorf("event printed without --events: %+v", r)
		}
	}
}

func TestYAMLScript(t *testing.T) {
	script := `name: yaml smoke
steps:
  - id: info
    action: engine.info
  - id: t
    action: turn.start
    turn: turn_y
    at: 2025-11-05T10:00:00Z
    args:
      input: hello from YAML
  - action: trace.list
    args: {turn: "${t.context.turn_id}", limit: 5}
  - action: [not, a, string]
  - action: engine.inf
    expect_error: UnknownAction
`
	results, summary, out := run(t, newEngine(t), script, true, batch.Options{})
	if len(results) != 5 {
		t.Fatalf("want 5 results:\n%s", out)
	}
	for i, line := range []int{3, 5, 11, 13, 14} {
		if results[i].Line != line {
			t.Errorf("step %d: line %d, want %d", i, results[i].Line, line)
		}
	}
	if got := field(t, results[1].Result, "context", "started_at"); got != "2025-11-05T10:00:00Z" {
		t.Errorf("unquoted YAML timestamp: started_at = %v", got)
	}
	if got := field(t, results[2].Result, "count"); got != 1.0 {
		t.Errorf("reference in YAML: count = %v", got)
	}
	if results[3].OK || results[3].Error.Kind != "ValidationError" {
		t.Errorf("malformed step: %+v", results[3].Error)
	}
	if summary.Failed != 1 || summary.Passed != 4 {
		t.Errorf("summary = %+v", summary)
	}
}

func TestEmptyYAMLRunsNothing(t *testing.T) {
	results, summary, _ := run(t, newEngine(t), "# nothing yet\n", true, batch.Options{})
	if len(results) != 0 || !summary.OK() {
		t.Errorf("an empty YAML script: %d results, %+v; want none and success, as an empty JSONL script", len(results), summary)
	}
}

// TestInvalidYAML: a file that is not a YAML script runs nothing: one
// ParseError result saying where, and ErrUnreadable (exit status 2). Issue
// 14, bug 10: it passed for one failed step (exit 1), and a bare list was
// "not a Sequence", the YAML library's word.
func TestInvalidYAML(t *testing.T) {
	cases := map[string]struct {
		script string
		line   int
		want   string
	}{
		"syntax":       {"steps:\n  - action: engine.info\n  - action: [unclosed\n", 3, "not valid YAML"},
		"no steps":     {"name: x\n", 1, "needs a `steps:` list"},
		"unknown key":  {"steps: []\nstep:\n  - action: x\n", 2, `unknown top-level key "step"`},
		"steps scalar": {"steps: 3\n", 1, "must be a list"},
		"a list":       {"- action: engine.info\n", 1, "the script must be a list of steps under `steps:`; this is a bare list: put a line `steps:` above it"},
		"text":         {"engine.info\n", 1, "the script must be a list of steps under `steps:`, not text"},
		"a number":     {"3\n", 1, "the script must be a list of steps under `steps:`, not a single value"},
		"alias":        {"steps:\n  - &a {action: engine.info}\n  - *a\n", 3, "aliases"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := batch.NewRunner(newEngine(t), &out, batch.Options{}).Run(context.Background(), strings.NewReader(c.script), true)
			if !errors.Is(err, batch.ErrUnreadable) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: ", c.line)) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v; want ErrUnreadable naming line %d and saying %q", err, c.line, c.want)
			}
			if strings.Contains(out.String(), "Sequence") || strings.Contains(out.String(), "String") {
				t.Errorf("the YAML library's words: %s", out.String())
			}
			var r result
			if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &r) != nil {
				t.Fatalf("want one result line:\n%s", out.String())
			}
			if r.OK || r.Error.Kind != "ParseError" || !strings.Contains(r.Error.Message, c.want) || r.Line != c.line {
				t.Errorf("got line %d %s %q; want line %d ParseError containing %q", r.Line, r.Error.Kind, r.Error.Message, c.line, c.want)
			}
		})
	}
}

// TestStreamsResultsStepByStep: a program driving engram through a pipe gets
// each result before it sends the next step.
func TestStreamsResultsStepByStep(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	engine := newEngine(t)
	done := make(chan batch.Summary)
	go func() {
		s, _ := batch.NewRunner(engine, outW, batch.Options{}).Run(context.Background(), inR, false)
		outW.Close()
		done <- s
	}()
	lines := bufio.NewReader(outR)
	for i, id := range []string{"one", "two", "three"} {
		if _, err := io.WriteString(inW, `{"id": "`+id+`", "action": "turn.start", "turn": "`+id+`"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !strings.Contains(line, `"id":"`+id+`"`) {
			t.Fatalf("step %d: got %s", i, line)
		}
	}
	inW.Close()
	if s := <-done; s.Steps != 3 || !s.OK() {
		t.Errorf("summary = %+v", s)
	}
}

// TestCancelWhileWaitingForInput: an interrupt ends a run that is blocked
// reading standard input.
func TestCancelWhileWaitingForInput(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := batch.NewRunner(newEngine(t), io.Discard, batch.Options{}).Run(ctx, inR, false)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
}

func TestUnreadableInput(t *testing.T) {
	_, err := batch.NewRunner(newEngine(t), io.Discard, batch.Options{}).Run(context.Background(), errReader{}, false)
	if !errors.Is(err, batch.ErrUnreadable) {
		t.Errorf("err = %v, want ErrUnreadable", err)
	}
	if _, err := batch.Open(t.TempDir()); !errors.Is(err, batch.ErrUnreadable) {
		t.Errorf("opening a directory: %v, want ErrUnreadable", err)
	}
	if _, err := batch.Open("/no/such/script.jsonl"); !errors.Is(err, batch.ErrUnreadable) {
		t.Errorf("opening a missing file: %v, want ErrUnreadable", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestSmokeScripts: the JSONL and YAML smoke scripts run and agree, line
// numbers apart.
func TestSmokeScripts(t *testing.T) {
	outputs := map[string][]result{}
	for _, path := range []string{"../../testdata/batch/smoke.jsonl", "../../testdata/batch/smoke.yaml"} {
		f, err := batch.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		summary, err := batch.NewRunner(newFullEngine(t), &out, batch.Options{}).Run(context.Background(), f, batch.IsYAML(path))
		_ = f.Close() // read-only: nothing to lose
		if err != nil || !summary.OK() || summary.Steps != 5 {
			t.Fatalf("%s: %v %+v\n%s", path, err, summary, out.String())
		}
		for _, action := range []string{"engine.info", "actions.list", "trace.list"} {
			if !strings.Contains(out.String(), `"action":"`+action+`","ok":true`) {
				t.Errorf("%s: no successful %s", path, action)
			}
		}
		var rs []result
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r result
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: result line %s: %v", path, line, err)
			}
			r.Line = 0
			rs = append(rs, r)
		}
		outputs[path] = rs
	}
	a, b := outputs["../../testdata/batch/smoke.jsonl"], outputs["../../testdata/batch/smoke.yaml"]
	for i := range a {
		ja, _ := json.Marshal(a[i])
		jb, _ := json.Marshal(b[i])
		if !bytes.Equal(ja, jb) {
			t.Errorf("step %d differs:\njsonl %s\nyaml  %s", i, ja, jb)
		}
	}
}

// A script that an action runs (tour.load) leaves the engine clock as it
// found it: pinned to the outer step's at, so that step's time holds.
func TestAScriptRunInsideAStepLeavesItsClockPinned(t *testing.T) {
	e := newEngine(t)
	outer := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e.Clock().Pin(outer)
	r, err := batch.NewEnvRunner(e.Env(), io.Discard, batch.Options{Principal: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	script := `{"action": "engine.info", "at": "2025-11-05T10:00:00Z"}` + "\n" + `{"action": "engine.info"}` + "\n"
	summary, err := r.Run(context.Background(), strings.NewReader(script), false)
	if err != nil || !summary.OK() {
		t.Fatalf("Run = %+v, %v", summary, err)
	}
	if at, pinned := e.Clock().State(); !pinned || !at.Equal(outer) {
		t.Errorf("after the inner script the clock is %v (pinned %v), want pinned at %v", at, pinned, outer)
	}
	// A script from the command line still leaves it unpinned.
	e.Clock().Unpin()
	if _, err := batch.NewRunner(e, io.Discard, batch.Options{}).Run(context.Background(), strings.NewReader(script), false); err != nil {
		t.Fatal(err)
	}
	if _, pinned := e.Clock().State(); pinned {
		t.Error("after a command-line script the clock stays pinned")
	}
}

// The steps of a script a subsystem runs act as the principal it names,
// unless a step says otherwise with "as".
func TestAnEnvRunnersStepsActAsItsPrincipal(t *testing.T) {
	e := newFullEngine(t)
	var out bytes.Buffer
	r, err := batch.NewEnvRunner(e.Env(), &out, batch.Options{Principal: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	script := `{"id": "a", "action": "cortex.create", "args": {"type": "goal", "fields": {"title": "A"}}}` + "\n" +
		`{"id": "b", "action": "cortex.create", "as": "bob", "args": {"type": "goal", "fields": {"title": "B"}}}` + "\n"
	if _, err := r.Run(context.Background(), strings.NewReader(script), false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"owner":"ann"`) || !strings.Contains(lines[1], `"owner":"bob"`) {
		t.Errorf("results:\n%s\nwant the first as ann, the second as bob", out.String())
	}
}
