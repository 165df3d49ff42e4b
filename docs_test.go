//go:build !noplanning

// docs/batch.md describes the full build, so these tests run only in it.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/batch"
	"github.com/engram-console/engram/core/clock"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the example results in docs/batch.md")

const docsPath = "docs/batch.md"

// docSection is one action's part of docs/batch.md.
type docSection struct {
	action string
	text   string // the whole section
	script string // the ```jsonl block
	// result is the ```json block after the script: its content's byte range in the file.
	resultStart, resultEnd int
}

var fence = regexp.MustCompile("(?m)^```(jsonl|json)\n((?s:.*?))^```\n")

func readDocSections(t *testing.T) (string, []docSection) {
	t.Helper()
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	actionsAt := strings.Index(doc, "\n## Actions\n")
	if actionsAt < 0 {
		t.Fatal("docs/batch.md has no \"## Actions\" section")
	}
	var sections []docSection
	heads := regexp.MustCompile(`(?m)^### (\S+)\n`).FindAllStringSubmatchIndex(doc[actionsAt:], -1)
	for i, h := range heads {
		start, end := actionsAt+h[0], len(doc)
		if i+1 < len(heads) {
			end = actionsAt + heads[i+1][0]
		}
		sec := docSection{action: doc[actionsAt+h[2] : actionsAt+h[3]], text: doc[start:end]}
		blocks := fence.FindAllStringSubmatchIndex(doc[start:end], -1)
		if len(blocks) < 2 || doc[start+blocks[0][2]:start+blocks[0][3]] != "jsonl" || doc[start+blocks[1][2]:start+blocks[1][3]] != "json" {
			t.Errorf("docs/batch.md: section %s needs a ```jsonl example followed by a ```json result", sec.action)
			continue
		}
		sec.script = doc[start+blocks[0][4] : start+blocks[0][5]]
		sec.resultStart, sec.resultEnd = start+blocks[1][4], start+blocks[1][5]
		sections = append(sections, sec)
	}
	return doc, sections
}

// docsEngine is engram as it runs (every subsystem, the planner included),
// in memory, on a fixed clock and id seed.
func docsEngine(t *testing.T) *core.Engine {
	t.Helper()
	e, err := core.Open(engineOptions(core.Options{InMemory: true, Clock: clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)), IDSeed: "batch tests", Random: &docsRandom{}}))
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

// docsRandom stands in for crypto/rand in the examples, so that the
// tokens they make repeat: the bytes 0, 1, 2, ... from the start.
type docsRandom struct{ n byte }

func (r *docsRandom) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.n
		r.n++
	}
	return len(p), nil
}

// TestDocsCoverEveryAction: every registered action has a section naming each
// of its args, and every section is about a registered action.
func TestDocsCoverEveryAction(t *testing.T) {
	engine := docsEngine(t)
	_, sections := readDocSections(t)
	documented := map[string]docSection{}
	for _, s := range sections {
		documented[s.action] = s
	}
	var names []string
	for _, a := range engine.Actions() {
		names = append(names, a.Name)
		sec, ok := documented[a.Name]
		if !ok {
			t.Errorf("docs/batch.md does not document %s: add a \"### %s\" section with an example", a.Name, a.Name)
			continue
		}
		for _, f := range a.Fields {
			if !strings.Contains(sec.text, "`"+f.Name+"`") {
				t.Errorf("docs/batch.md: section %s does not describe its arg `%s`", a.Name, f.Name)
			}
		}
	}
	for name := range documented {
		if !slices.Contains(names, name) {
			t.Errorf("docs/batch.md documents %s, which is not a registered action", name)
		}
	}
}

// TestDocsExamples runs every example script on a fresh in-memory engine:
// every step must pass, and the docs show the last step's result line. The
// docs may leave members out for readability (hashes, the versions a field
// last changed at), but every member they show must be exactly what engram
// prints.
func TestDocsExamples(t *testing.T) {
	doc, sections := readDocSections(t)
	var rewritten strings.Builder
	last := 0
	for _, sec := range sections {
		engine := docsEngine(t)
		var out bytes.Buffer
		summary, err := batch.NewRunner(engine, &out, batch.Options{}).Run(context.Background(), strings.NewReader(sec.script), false)
		if err != nil {
			t.Fatalf("%s example: %v", sec.action, err)
		}
		if !summary.OK() {
			t.Errorf("%s example: a step did not pass:\n%s", sec.action, out.String())
		}
		lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
		lastLine := lines[len(lines)-1]
		var actual any
		if err := json.Unmarshal(lastLine, &actual); err != nil {
			t.Fatalf("%s example: result line is not JSON: %v", sec.action, err)
		}
		if *updateDocs {
			rewritten.WriteString(doc[last:sec.resultStart])
			rewritten.WriteString(readable(t, lastLine))
			last = sec.resultEnd
			continue
		}
		var documented any
		if err := json.Unmarshal([]byte(doc[sec.resultStart:sec.resultEnd]), &documented); err != nil {
			t.Errorf("docs/batch.md: the %s result is not JSON: %v", sec.action, err)
			continue
		}
		if where := shown(documented, actual, "result"); where != "" {
			t.Errorf("docs/batch.md: the %s example prints something else now at %s (run go test . -run TestDocs -update-docs if the change is deliberate)\n--- actual\n%s",
				sec.action, where, lines[len(lines)-1])
		}
	}
	if *updateDocs {
		rewritten.WriteString(doc[last:])
		if err := os.WriteFile(docsPath, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// noisyMembers are left out of the documented results: true, but long and
// no help to a reader.
// search_p50_ms is wall time, which differs from run to run.
var noisyMembers = []string{"field_changed_at", "hash", "prev_hash", "search_p50_ms"}

// readable is a result line indented, in engram's member order, without
// the noisy members.
func readable(t *testing.T, line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var b bytes.Buffer
	if err := copyWithout(dec, &b); err != nil {
		t.Fatalf("re-encoding %s: %v", line, err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		t.Fatalf("indenting %s: %v", b.Bytes(), err)
	}
	return out.String() + "\n"
}

// copyWithout copies one JSON value token by token, leaving out object
// members named in noisyMembers.
func copyWithout(dec *json.Decoder, b *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		b.WriteByte('{')
		first := true
		for dec.More() {
			key, _ := dec.Token()
			name := key.(string)
			if slices.Contains(noisyMembers, name) {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			k, _ := json.Marshal(name)
			b.Write(k)
			b.WriteByte(':')
			if err := copyWithout(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing '}'
			return err
		}
		b.WriteByte('}')
	case json.Delim('['):
		b.WriteByte('[')
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := copyWithout(dec, b); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing ']'
			return err
		}
		b.WriteByte(']')
	default:
		v, err := json.Marshal(tok)
		if err != nil {
			return err
		}
		b.Write(v)
	}
	return nil
}

// elided ends a documented list that shows only its first elements.
const elided = "..."

// elides says whether a documented list shows only its first elements, and
// how many.
func elides(d []any) (int, bool) {
	if len(d) > 0 && d[len(d)-1] == elided {
		return len(d) - 1, true
	}
	return len(d), false
}

// shown says where documented is not what actual shows ("" when it is):
// every member of a documented object is in the actual one with a value
// shown by it; a documented list has the actual one's elements, or its
// first ones when it ends with "...".
func shown(documented, actual any, path string) string {
	switch d := documented.(type) {
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return path + " (not an object)"
		}
		for k, dv := range d {
			av, ok := a[k]
			if !ok {
				return path + "." + k + " (absent)"
			}
			if where := shown(dv, av, path+"."+k); where != "" {
				return where
			}
		}
		return ""
	case []any:
		a, ok := actual.([]any)
		n, cut := elides(d)
		if !ok || len(a) < n || (!cut && len(a) != n) {
			return path + " (a list of another length)"
		}
		for i := range n {
			if where := shown(d[i], a[i], fmt.Sprintf("%s[%d]", path, i)); where != "" {
				return where
			}
		}
		return ""
	}
	if !reflect.DeepEqual(documented, actual) {
		return fmt.Sprintf("%s (%v, documented %v)", path, actual, documented)
	}
	return ""
}

// TestDocsIdempotencyExample runs the example of the section "Idempotency
// keys" (outside the actions, so TestDocsExamples does not) as that test
// runs an action's: the retry must print what the docs show.
func TestDocsIdempotencyExample(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Idempotency keys\n")
	if start < 0 {
		t.Fatal("docs/batch.md has no \"## Idempotency keys\" section")
	}
	end := start + 1 + strings.Index(doc[start+1:], "\n## ")
	blocks := fence.FindAllStringSubmatchIndex(doc[start:end], -1)
	if len(blocks) != 2 || doc[start+blocks[0][2]:start+blocks[0][3]] != "jsonl" || doc[start+blocks[1][2]:start+blocks[1][3]] != "json" {
		t.Fatal("docs/batch.md: the idempotency section needs a ```jsonl example followed by a ```json result")
	}
	script := doc[start+blocks[0][4] : start+blocks[0][5]]
	resultStart, resultEnd := start+blocks[1][4], start+blocks[1][5]
	engine := docsEngine(t)
	var out bytes.Buffer
	summary, err := batch.NewRunner(engine, &out, batch.Options{}).Run(context.Background(), strings.NewReader(script), false)
	if err != nil || !summary.OK() {
		t.Fatalf("the idempotency example: %v\n%s", err, out.String())
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	var first, retry map[string]json.RawMessage
	if len(lines) != 2 || json.Unmarshal(lines[0], &first) != nil || json.Unmarshal(lines[1], &retry) != nil ||
		!bytes.Equal(first["result"], retry["result"]) {
		t.Fatalf("the retry's result is not the first step's:\n%s", out.String())
	}
	if info, err := engine.Info(context.Background()); err != nil || info.Counts["cortex"]["items"] != 1 {
		t.Errorf("after the example: %v, %v; want one item", info.Counts["cortex"], err)
	}
	if *updateDocs {
		doc = doc[:resultStart] + readable(t, lines[1]) + doc[resultEnd:]
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var documented, actual any
	if err := json.Unmarshal([]byte(doc[resultStart:resultEnd]), &documented); err != nil {
		t.Fatalf("docs/batch.md: the idempotency result is not JSON: %v", err)
	}
	if err := json.Unmarshal(lines[1], &actual); err != nil {
		t.Fatal(err)
	}
	if where := shown(documented, actual, "result"); where != "" {
		t.Errorf("docs/batch.md: the idempotency example prints something else now at %s (go test . -run TestDocs -update-docs)\n--- actual\n%s", where, lines[1])
	}
}
