package main

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/events"
)

// The root package links every subsystem (core with the cortex, history,
// memory and episodic memory, and the planner), so events.Kinds() here is
// every kind engram can publish.

// documentedKind is one kind as docs/events.md describes it.
type documentedKind struct {
	progress string // "yes" or "no"
	payload  string // the Go type, e.g. "history.Utterance"
	// fields are the JSON names in its table, in order; a name ends in "?"
	// when its type says "or absent" (the field is left out when empty).
	fields []string
}

var (
	kindHeading = regexp.MustCompile("^## `([^`]+)`$")
	kindFacts   = regexp.MustCompile("^Progress event: (yes|no)\\. Payload: `([^`]+)`\\.$")
	fieldRow    = regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]*) \\|")
)

// readEventsDoc parses docs/events.md: a "## `kind`" heading per kind, its
// "Progress event: …" line and a table of its payload's fields.
func readEventsDoc(t *testing.T) map[string]*documentedKind {
	t.Helper()
	f, err := os.Open("docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	kinds := map[string]*documentedKind{}
	var current *documentedKind
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := kindHeading.FindStringSubmatch(line); m != nil {
			if kinds[m[1]] != nil {
				t.Errorf("docs/events.md:%d: %s is documented twice", n, m[1])
			}
			current = &documentedKind{}
			kinds[m[1]] = current
			continue
		}
		if current == nil {
			continue
		}
		if m := kindFacts.FindStringSubmatch(line); m != nil {
			current.progress, current.payload = m[1], m[2]
		} else if m := fieldRow.FindStringSubmatch(line); m != nil {
			name := m[1]
			if strings.HasSuffix(strings.TrimSpace(m[2]), "or absent") {
				name += "?"
			}
			current.fields = append(current.fields, name)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}

// jsonFields lists the JSON names of a payload type's fields in the order
// they are encoded, following embedded structs as encoding/json does; a
// name ends in "?" when the field is left out when empty (omitempty,
// omitzero), which the docs must say ("or absent").
func jsonFields(typ reflect.Type) []string {
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		omit := ""
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			omit = "?"
		}
		switch {
		case tag == "-":
		case f.Anonymous && name == "":
			names = append(names, jsonFields(f.Type)...)
		case !f.IsExported():
		case name == "":
			names = append(names, f.Name+omit)
		default:
			names = append(names, name+omit)
		}
	}
	return names
}

func TestEventsDocListsEveryKindAndField(t *testing.T) {
	doc := readEventsDoc(t)
	defined := events.Kinds()
	if len(defined) == 0 {
		t.Fatal("no event kinds are defined: the subsystems are not linked")
	}
	for _, k := range defined {
		d := doc[k.Name]
		if d == nil {
			t.Errorf("%s (%s) is not documented in docs/events.md", k.Name, k.Doc)
			continue
		}
		progress := map[bool]string{true: "yes", false: "no"}[k.Progress]
		if d.progress != progress {
			t.Errorf("%s: documented as progress event %q, is %q", k.Name, d.progress, progress)
		}
		if d.payload != k.Payload.String() {
			t.Errorf("%s: documented payload %s, is %s", k.Name, d.payload, k.Payload)
		}
		if want := jsonFields(k.Payload); !slices.Equal(d.fields, want) {
			t.Errorf("%s: documented fields\n  %v\nthe payload's\n  %v", k.Name, d.fields, want)
		}
	}
	for name := range doc {
		if !slices.ContainsFunc(defined, func(k events.KindInfo) bool { return k.Name == name }) {
			t.Errorf("docs/events.md documents %s, which no subsystem defines", name)
		}
	}
}

// TestEveryPublishedEventKindIsDefined runs every testdata script with
// --events: each event printed must be of a defined kind, and decode into
// its kind's payload type.
func TestEveryPublishedEventKindIsDefined(t *testing.T) {
	scripts, err := filepath.Glob("testdata/batch/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	scripts = append(scripts, "testdata/batch/smoke.yaml", "testdata/plans/breakfast.workflow.yaml")
	cassettes := map[string]string{
		"llm.jsonl":               "testdata/batch/llm.cassette.yaml",
		"breakfast.workflow.yaml": "testdata/plans/breakfast.cassette.yaml",
	}
	seen := map[string]bool{}
	for _, script := range scripts {
		// engram runs in a directory of its own: it gets absolute paths.
		args := []string{"--batch", absPath(t, script), "--in-memory", "--events"}
		if c := cassettes[filepath.Base(script)]; c != "" {
			args = append(args, "--llm", "replay", "--cassette", absPath(t, c))
		}
		out := runEngram(t, "", args...)
		if out.code != 0 {
			t.Errorf("%s: exit %d\n%s", script, out.code, out.stderr)
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
			var head struct {
				Event *string `json:"event"`
			}
			if err := json.Unmarshal([]byte(line), &head); err != nil {
				t.Errorf("%s: a line that is not JSON: %s", script, line)
				continue
			}
			if head.Event == nil {
				continue // a step's result
			}
			var ev events.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("%s: %v\n%s", script, err, line)
				continue
			}
			seen[ev.Name] = true
		}
	}
	// An unknown kind decodes (with its data as raw JSON), so check the
	// names here: every kind printed must be one engram defines.
	defined := map[string]bool{}
	for _, k := range events.Kinds() {
		defined[k.Name] = true
	}
	for name := range seen {
		if !defined[name] {
			t.Errorf("an event of kind %q was printed, but no events.Define declares it", name)
		}
	}
	// The scripts exercise most subsystems; a run printing no events (the
	// flag broken, say) would pass the loop above without checking a thing.
	for _, want := range []string{"trace.recorded", "utterance.written", "thread.created", "plan.finished"} {
		if !seen[want] {
			t.Errorf("no %s event was printed; saw %v", want, slices.Sorted(maps.Keys(seen)))
		}
	}
}

func absPath(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestEveryEventPayloadSurvivesJSON: an event of every kind, its payload
// filled in field by field, decodes from its JSON line to the same typed
// payload: what a remote face receives is what was published.
func TestEveryEventPayloadSurvivesJSON(t *testing.T) {
	at := time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)
	for _, k := range events.Kinds() {
		payload := reflect.New(k.Payload).Elem()
		fill(payload, 4)
		sent := events.Event{Seq: 7, Name: k.Name, At: at, Data: payload.Interface(), Progress: k.Progress}
		line, err := json.Marshal(sent)
		if err != nil {
			t.Errorf("%s: encoding: %v", k.Name, err)
			continue
		}
		var got events.Event
		if err := json.Unmarshal(line, &got); err != nil {
			t.Errorf("%s: decoding: %v\n%s", k.Name, err, line)
			continue
		}
		if reflect.TypeOf(got.Data) != k.Payload {
			t.Errorf("%s: decoded a %T payload, want %v", k.Name, got.Data, k.Payload)
			continue
		}
		if !reflect.DeepEqual(got, sent) {
			t.Errorf("%s: the event changed on its way through JSON\nsent %+v\ngot  %+v\nline %s", k.Name, sent, got, line)
		}
	}
}

// fill sets every settable field of v to a value that is not its zero (so
// that omitempty drops nothing), depth levels down: one element per slice
// and map, a value behind every pointer.
func fill(v reflect.Value, depth int) {
	if depth == 0 || !v.CanSet() {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2025, 11, 5, 10, 30, 15, 500, time.UTC)))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(`{"key":[1,"two"]}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("text " + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(5)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.625)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth-1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth-1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(key, depth-1)
		fill(val, depth-1)
		m.SetMapIndex(key, val)
		v.Set(m)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("any value")) // decodes back as a string
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth-1)
			}
		}
	}
}
