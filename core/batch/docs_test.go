package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/engram-console/engram/core/batch"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the example results in docs/batch.md")

const docsPath = "../../docs/batch.md"

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

// TestDocsCoverEveryAction: every registered action has a section naming each
// of its args, and every section is about a registered action.
func TestDocsCoverEveryAction(t *testing.T) {
	engine := newEngine(t)
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

// TestDocsExamples runs every example script on a fresh in-memory engine and
// checks that it prints exactly the result the docs show.
func TestDocsExamples(t *testing.T) {
	doc, sections := readDocSections(t)
	var rewritten strings.Builder
	last := 0
	for _, sec := range sections {
		engine := newEngine(t)
		var out bytes.Buffer
		summary, err := batch.NewRunner(engine, &out, batch.Options{}).Run(context.Background(), strings.NewReader(sec.script), false)
		if err != nil {
			t.Fatalf("%s example: %v", sec.action, err)
		}
		if !summary.OK() {
			t.Errorf("%s example: a step did not pass:\n%s", sec.action, out.String())
		}
		got := indentLines(t, out.Bytes())
		if *updateDocs {
			rewritten.WriteString(doc[last:sec.resultStart])
			rewritten.WriteString(got)
			last = sec.resultEnd
			continue
		}
		if want := doc[sec.resultStart:sec.resultEnd]; got != want {
			t.Errorf("docs/batch.md: the %s example prints something else now (run go test ./core/batch -run TestDocs -update-docs if the change is deliberate)\n--- docs\n%s--- actual\n%s", sec.action, want, got)
		}
	}
	if *updateDocs {
		rewritten.WriteString(doc[last:])
		if err := os.WriteFile(docsPath, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// indentLines pretty-prints each JSON line, for reading in the docs.
func indentLines(t *testing.T, out []byte) string {
	var b strings.Builder
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, line, "", "  "); err != nil {
			t.Fatalf("result line is not JSON: %s", line)
		}
		b.Write(buf.Bytes())
		b.WriteByte('\n')
	}
	return b.String()
}
