package action

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/errs"
)

type inner struct {
	Tag  string `json:"tag"`
	N    int    `json:"n,omitempty"`
	Need string `json:"need,omitempty" arg:"required"`
}

type Common struct {
	Owner string `json:"owner,omitempty" help:"who owns it"`
	Limit int    `json:"limit,omitempty" help:"shadowed by the outer limit"`
}

type testArgs struct {
	Limit   int               `json:"limit,omitempty" help:"at most this many"`
	Query   string            `json:"query" arg:"required" help:"what to look for"`
	Tags    []string          `json:"tags,omitempty"`
	Due     time.Time         `json:"due,omitempty"`
	DueP    *time.Time        `json:"due_ptr,omitempty"`
	Ratio   float64           `json:"ratio,omitempty"`
	On      bool              `json:"on,omitempty"`
	Item    *inner            `json:"item,omitempty"`
	Items   []inner           `json:"items,omitempty"`
	Updates map[string]inner  `json:"updates,omitempty"`
	Extra   map[string]any    `json:"extra,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Any     any               `json:"any,omitempty"`
	Bytes   []byte            `json:"bytes,omitempty"`
	Matrix  [][]int           `json:"matrix,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
	NoTag   string
	Skipped string `json:"-"`
	//lint:ignore U1000 never set: it is here to show that unexported fields are skipped
	internal string
	Common
}

type echo struct {
	Args testArgs `json:"args"`
	Who  string   `json:"who"`
	Turn string   `json:"turn"`
}

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func newRegistry(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry()
	Register(r, Spec{Name: "test.echo", Summary: "echo the args"}, func(ctx context.Context, call Call, a testArgs) (echo, error) {
		return echo{Args: a, Who: call.Principal, Turn: call.Turn}, nil
	})
	Register(r, Spec{Name: "engine.info", Summary: "info", ReadOnly: true}, func(context.Context, Call, struct{}) (map[string]int, error) {
		return map[string]int{"n": 1}, nil
	})
	Register(r, Spec{Name: "test.array", Summary: "returns an array"}, func(context.Context, Call, struct{}) ([]int, error) {
		return []int{1}, nil
	})
	Register(r, Spec{Name: "test.string", Summary: "returns a string"}, func(context.Context, Call, struct{}) (string, error) {
		return "x", nil
	})
	Register(r, Spec{Name: "test.nilmap", Summary: "returns a nil map"}, func(context.Context, Call, struct{}) (map[string]int, error) {
		return nil, nil
	})
	Register(r, Spec{Name: "test.unencodable", Summary: "returns a channel"}, func(context.Context, Call, struct{}) (map[string]any, error) {
		return map[string]any{"c": make(chan int)}, nil
	})
	Register(r, Spec{Name: "test.fail", Summary: "fails"}, func(context.Context, Call, struct{}) (struct{}, error) {
		return struct{}{}, errs.New(errs.NotFound, "nothing here")
	})
	return r
}

func invoke(t testing.TB, r *Registry, name, args string) (json.RawMessage, error) {
	t.Helper()
	a, err := r.Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	return a.Invoke(context.Background(), Call{Principal: "agent_a", Turn: "turn_1", Clock: clock.NewFixed(t0)}, json.RawMessage(args))
}

func decodeEcho(t *testing.T, out json.RawMessage) echo {
	t.Helper()
	var e echo
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	return e
}

// wantErr checks err's kind and that its message contains every fragment.
func wantErr(t *testing.T, err error, kind errs.Kind, fragments ...string) {
	t.Helper()
	_ = wantErrAs(t, err, kind, fragments...) // it fails t itself; the error is for a closer look
}

// wantErrAs is wantErr that also returns the *errs.Error, for a closer look.
func wantErrAs(t *testing.T, err error, kind errs.Kind, fragments ...string) *errs.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s containing %q", kind, fragments)
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q (%T) is not an *errs.Error", err, err)
	}
	if e.Kind != kind {
		t.Fatalf("error kind %s (%q), want %s", e.Kind, e.Message, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
	return e
}

func TestRegisterInvoke(t *testing.T) {
	r := newRegistry(t)
	out, err := invoke(t, r, "test.echo", `{"query": "milk", "limit": 3, "tags": ["a","b"], "due": "2025-11-05T10:00:00Z",
		"item": {"tag": "x", "need": "y"}, "items": [{"tag":"p","need":"q"}], "updates": {"k": {"need": "z"}},
		"raw": [1, {"a": 2}], "any": {"Whatever": 1}, "extra": {"Free": "form"}, "NoTag": "nt", "owner": "me",
		"matrix": [[1,2],[3]], "bytes": "aGk="}`)
	if err != nil {
		t.Fatal(err)
	}
	e := decodeEcho(t, out)
	a := e.Args
	if a.Query != "milk" || a.Limit != 3 || len(a.Tags) != 2 || !a.Due.Equal(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)) ||
		a.Item == nil || a.Item.Tag != "x" || len(a.Items) != 1 || a.Updates["k"].Need != "z" ||
		string(a.Raw) != `[1,{"a":2}]` || a.NoTag != "nt" || a.Owner != "me" || len(a.Matrix) != 2 || string(a.Bytes) != "hi" {
		t.Fatalf("decoded args %+v", a)
	}
	if e.Who != "agent_a" || e.Turn != "turn_1" {
		t.Fatalf("call not passed: %+v", e)
	}
	// The handler's own error comes back untouched.
	_, err = invoke(t, r, "test.fail", "")
	wantErr(t, err, errs.NotFound, "nothing here")
}

func TestEmptyArgs(t *testing.T) {
	r := newRegistry(t)
	for _, raw := range []string{"", "null", "  null \n", "{}", " { } ", "\t"} {
		if _, err := invoke(t, r, "engine.info", raw); err != nil {
			t.Errorf("args %q: %v", raw, err)
		}
	}
	// Empty args are {}: a required field is then missing.
	_, err := invoke(t, r, "test.echo", "")
	wantErr(t, err, errs.Validation, "args.query is required", "string", "what to look for")
}

func TestUnknownField(t *testing.T) {
	r := newRegistry(t)
	_, err := invoke(t, r, "test.echo", `{"query": "q", "limmit": 5}`)
	e := wantErrAs(t, err, errs.Validation, `unknown field "limmit"`, `did you mean "limit"?`, "the fields are limit, query")
	if e.Details["field"] != "limmit" {
		t.Fatalf("details %v", e.Details)
	}
	// Far from everything: no suggestion.
	_, err = invoke(t, r, "test.echo", `{"query": "q", "zzzzzzzzzzzz": 5}`)
	e = wantErrAs(t, err, errs.Validation, `unknown field "zzzzzzzzzzzz"`)
	if strings.Contains(e.Message, "did you mean") {
		t.Fatalf("suggested something for a far-off name: %q", e.Message)
	}
	// json:"-" and unexported fields are not args.
	for _, name := range []string{"Skipped", "internal", "-", "Common"} {
		_, err = invoke(t, r, "test.echo", `{"query": "q", "`+name+`": "x"}`)
		wantErr(t, err, errs.Validation, `unknown field "`+name+`"`)
	}
	// An action with no args says so.
	_, err = invoke(t, r, "engine.info", `{"verbose": true}`)
	wantErr(t, err, errs.Validation, `unknown field "verbose"`, "takes no arguments")
}

func TestUnknownFieldIsDeterministic(t *testing.T) {
	r := newRegistry(t)
	// Two unknown fields: the first in the document is reported, every time.
	for range 50 {
		_, err := invoke(t, r, "test.echo", `{"query": "q", "bbb": 1, "aaa": 2, "ccc": 3}`)
		wantErr(t, err, errs.Validation, `unknown field "bbb"`)
	}
}

func TestCaseMismatch(t *testing.T) {
	r := newRegistry(t)
	_, err := invoke(t, r, "test.echo", `{"query": "q", "Limit": 5}`)
	wantErr(t, err, errs.Validation, `unknown field "Limit"`, `did you mean "limit"?`)
	_, err = invoke(t, r, "test.echo", `{"QUERY": "q"}`)
	wantErr(t, err, errs.Validation, `unknown field "QUERY"`, `did you mean "query"?`)
	// Nested objects are as strict as the top level.
	_, err = invoke(t, r, "test.echo", `{"query": "q", "item": {"TAG": "x", "need": "y"}}`)
	e := wantErrAs(t, err, errs.Validation, `args.item: unknown field "TAG"`, `did you mean "tag"?`, "the fields are tag, n, need")
	if e.Details["field"] != "item.TAG" {
		t.Fatalf("details %v", e.Details)
	}
	_, err = invoke(t, r, "test.echo", `{"query": "q", "items": [{"need": "y"}, {"Need": "y"}]}`)
	wantErr(t, err, errs.Validation, `args.items[1]: unknown field "Need"`)
	_, err = invoke(t, r, "test.echo", `{"query": "q", "updates": {"k": {"need": "y", "Tag": "t"}}}`)
	wantErr(t, err, errs.Validation, `args.updates.k: unknown field "Tag"`)
	// Free-form values (any, maps of any, raw JSON) take whatever keys they get.
	if _, err = invoke(t, r, "test.echo", `{"query": "q", "any": {"X": 1}, "extra": {"Y": {"Z": 2}}, "raw": {"W": 3}}`); err != nil {
		t.Fatal(err)
	}
}

func TestNestedUnknownField(t *testing.T) {
	r := newRegistry(t)
	_, err := invoke(t, r, "test.echo", `{"query": "q", "item": {"need": "y", "color": "red"}}`)
	wantErr(t, err, errs.Validation, `args.item: unknown field "color"`)
	_, err = invoke(t, r, "test.echo", `{"query": "q", "items": [{"need": "y", "zz": 1}]}`)
	wantErr(t, err, errs.Validation, `args.items[0]: unknown field "zz"`)
}

func TestWrongType(t *testing.T) {
	r := newRegistry(t)
	cases := []struct {
		args, field, msg string
	}{
		{`{"query": "q", "limit": "5"}`, "limit", "args.limit: expected integer, got string"},
		{`{"query": "q", "limit": 1.5}`, "limit", "args.limit: expected integer, got number 1.5"},
		{`{"query": 7}`, "query", "args.query: expected string, got number"},
		{`{"query": "q", "tags": "a"}`, "tags", "args.tags: expected array of string, got string"},
		{`{"query": "q", "tags": [1]}`, "tags", "args.tags: expected string, got number"},
		{`{"query": "q", "on": "yes"}`, "on", "args.on: expected boolean, got string"},
		{`{"query": "q", "ratio": true}`, "ratio", "args.ratio: expected number, got bool"},
		{`{"query": "q", "item": []}`, "item", "args.item: expected object, got array"},
		{`{"query": "q", "item": {"need": "y", "n": "2"}}`, "item.n", "args.item.n: expected integer, got string"},
		{`{"query": "q", "due": 5}`, "due", "args.due: expected string (RFC 3339 time), got number"},
		{`{"query": "q", "due_ptr": {}}`, "due_ptr", "args.due_ptr: expected string (RFC 3339 time), got object"},
		{`{"query": "q", "due": "tomorrow"}`, "due", `args.due: "tomorrow" is not an RFC 3339 time`},
		{`{"query": "q", "items": [{"need": "y", "tag": "t"}, {"need": "y", "tag": {}}]}`, "items.tag", "expected string, got object"},
		{`{"query": "q", "bytes": 5}`, "bytes", "args.bytes: expected string (base64), got number"},
	}
	for _, c := range cases {
		_, err := invoke(t, r, "test.echo", c.args)
		e := wantErrAs(t, err, errs.Validation, c.msg)
		if e.Details["field"] != c.field {
			t.Errorf("%s: field detail %v, want %q", c.args, e.Details["field"], c.field)
		}
	}
}

func TestRequired(t *testing.T) {
	r := newRegistry(t)
	for _, args := range []string{`{}`, `{"limit": 1}`, `{"query": null}`, `{"query": "q", "query": null}`} {
		_, err := invoke(t, r, "test.echo", args)
		e := wantErrAs(t, err, errs.Validation, "args.query is required (string): what to look for")
		if e.Details["field"] != "query" {
			t.Errorf("%s: details %v", args, e.Details)
		}
	}
	// Present with a zero value is present.
	if _, err := invoke(t, r, "test.echo", `{"query": ""}`); err != nil {
		t.Fatal(err)
	}
	// Required fields of nested objects too, but only when the object is given.
	_, err := invoke(t, r, "test.echo", `{"query": "q", "item": {"tag": "x"}}`)
	wantErr(t, err, errs.Validation, "args.item.need is required (string)")
	_, err = invoke(t, r, "test.echo", `{"query": "q", "items": [{"need": "a"}, {"need": null}]}`)
	wantErr(t, err, errs.Validation, "args.items[1].need is required")
	if _, err := invoke(t, r, "test.echo", `{"query": "q", "item": null}`); err != nil {
		t.Fatal(err)
	}
}

func TestNotAnObject(t *testing.T) {
	r := newRegistry(t)
	for raw, what := range map[string]string{`[1,2]`: "an array", `"x"`: "a string", `3`: "a number", `true`: "a boolean"} {
		_, err := invoke(t, r, "test.echo", raw)
		wantErr(t, err, errs.Validation, "args must be a JSON object, not "+what)
	}
}

func TestInvalidJSON(t *testing.T) {
	r := newRegistry(t)
	for _, raw := range []string{`{`, `{"query": }`, `{'query': 1}`, `nul`, `{"query": "q"} {}`, `{"query": "q"} x`, `{"query": "q"},`} {
		_, err := invoke(t, r, "test.echo", raw)
		wantErr(t, err, errs.Parse, "not valid JSON")
	}
}

func TestResultMustBeObject(t *testing.T) {
	r := newRegistry(t)
	for _, name := range []string{"test.array", "test.string", "test.nilmap"} {
		_, err := invoke(t, r, name, "")
		wantErr(t, err, errs.Internal, name, "not a JSON object")
	}
	_, err := invoke(t, r, "test.unencodable", "")
	wantErr(t, err, errs.Internal, "test.unencodable: encoding its result")
}

func TestLookup(t *testing.T) {
	r := newRegistry(t)
	if a, err := r.Lookup("engine.info"); err != nil || a.Name != "engine.info" || !a.ReadOnly {
		t.Fatalf("Lookup(engine.info) = %v, %v", a, err)
	}
	_, err := r.Lookup("engine.inf")
	e := wantErrAs(t, err, errs.UnknownAction, `"engine.inf"`, `did you mean "engine.info"?`)
	if e.Details["nearest"] != "engine.info" {
		t.Fatalf("details %v", e.Details)
	}
	// A known namespace with a far-off verb still points into the namespace.
	_, err = r.Lookup("engine.completely_different_verb")
	wantErr(t, err, errs.UnknownAction, `did you mean "engine.info"?`)
	// Nothing close at all.
	_, err = r.Lookup("zzzzzzzzzzzzzzzzzzzz.qqqqqqqqqqqqq")
	e = wantErrAs(t, err, errs.UnknownAction, "zzzzzzzzzzzzzzzzzzzz.qqqqqqqqqqqqq", "actions.list")
	if strings.Contains(e.Message, "did you mean") {
		t.Fatalf("suggested a far-off action: %q", e.Message)
	}
	// An empty registry suggests nothing.
	_, err = NewRegistry().Lookup("engine.info")
	e = wantErrAs(t, err, errs.UnknownAction, "engine.info")
	if strings.Contains(e.Message, "did you mean") {
		t.Fatalf("empty registry suggested: %q", e.Message)
	}
}

func TestRemovedNamespace(t *testing.T) {
	r := newRegistry(t)
	r.Removed("plan", "the planner is not in this build (built with -tags noplanning)")
	_, err := r.Lookup("plan.create")
	e := wantErrAs(t, err, errs.UnknownAction, `"plan.create"`, "-tags noplanning")
	if strings.Contains(e.Message, "did you mean") {
		t.Fatalf("removed namespace guessed a neighbour: %q", e.Message)
	}
	// Other namespaces are unaffected.
	if _, err := r.Lookup("engine.info"); err != nil {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	r := newRegistry(t)
	list := r.List()
	if len(list) != 7 {
		t.Fatalf("List has %d actions", len(list))
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Name >= list[i].Name {
			t.Fatalf("List not sorted: %s before %s", list[i-1].Name, list[i].Name)
		}
	}
}

func TestFields(t *testing.T) {
	r := newRegistry(t)
	a, _ := r.Lookup("test.echo")
	want := []Field{
		{Name: "limit", Type: "integer", Help: "at most this many"},
		{Name: "query", Type: "string", Required: true, Help: "what to look for"},
		{Name: "tags", Type: "array of string"},
		{Name: "due", Type: "string (RFC 3339 time)"},
		{Name: "due_ptr", Type: "string (RFC 3339 time)"},
		{Name: "ratio", Type: "number"},
		{Name: "on", Type: "boolean"},
		{Name: "item", Type: "object"},
		{Name: "items", Type: "array of object"},
		{Name: "updates", Type: "object"},
		{Name: "extra", Type: "object"},
		{Name: "raw", Type: "any JSON value"},
		{Name: "any", Type: "any JSON value"},
		{Name: "bytes", Type: "string (base64)"},
		{Name: "matrix", Type: "array of array of integer"},
		{Name: "meta", Type: "object"},
		{Name: "NoTag", Type: "string"},
		// promoted from the embedded Common; its "limit" is shadowed
		{Name: "owner", Type: "string", Help: "who owns it"},
	}
	if len(a.Fields) != len(want) {
		t.Fatalf("fields:\n got  %+v\n want %+v", a.Fields, want)
	}
	for i := range want {
		if a.Fields[i] != want[i] {
			t.Errorf("field %d: got %+v, want %+v", i, a.Fields[i], want[i])
		}
	}
	info, _ := r.Lookup("engine.info")
	if len(info.Fields) != 0 {
		t.Fatalf("struct{} args have fields %+v", info.Fields)
	}
	if got := info.Skeleton(false); got != "{}" {
		t.Fatalf("empty skeleton %q", got)
	}
	sk := a.Skeleton(false)
	var m map[string]any
	if err := json.Unmarshal([]byte(sk), &m); err != nil {
		t.Fatalf("skeleton %s is not JSON: %v", sk, err)
	}
	if m["limit"] != 0.0 || m["tags"] == nil || m["query"] != "" || m["on"] != false || m["raw"] != nil {
		t.Fatalf("skeleton %s", sk)
	}
	// The embedded struct's promoted field decodes into it.
	out, err := invoke(t, r, "test.echo", `{"query": "q", "owner": "me", "limit": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	if e := decodeEcho(t, out); e.Args.Owner != "me" || e.Args.Limit != 2 || e.Args.Common.Limit != 0 {
		t.Fatalf("embedded decode %+v", e.Args)
	}
}

func TestRegisterPanics(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	r := newRegistry(t)
	h := func(context.Context, Call, struct{}) (struct{}, error) { return struct{}{}, nil }
	mustPanic("duplicate registration", func() { Register(r, Spec{Name: "engine.info", Summary: "again"}, h) })
	mustPanic("name without namespace", func() { Register(r, Spec{Name: "info", Summary: "x"}, h) })
	mustPanic("no summary", func() { Register(r, Spec{Name: "x.y"}, h) })
	mustPanic("non-struct args", func() {
		Register(r, Spec{Name: "x.z", Summary: "x"}, func(context.Context, Call, int) (struct{}, error) { return struct{}{}, nil })
	})
	// The failed registrations left the registry as it was.
	if n := len(r.List()); n != 7 {
		t.Fatalf("registry has %d actions after failed registrations", n)
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"engine.inf", "engine.info", 1}, {"Limit", "limit", 1}, {"flaw", "lawn", 2}, {"abc", "abc", 0},
		{"abc", "cba", 2},
	}
	for _, c := range cases {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
		if got := editDistance(c.b, c.a); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.d)
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"turn.start", "turn.end", "trace.list", "engine.info", "actions.list"}
	cases := map[string]string{
		"turn.strat":                      "turn.start",
		"turn.ned":                        "turn.end",
		"trace.lst":                       "trace.list",
		"engine.inf":                      "engine.info",
		"engine":                          "engine.info", // a bare namespace
		"turn.finish":                     "turn.end",    // far, but same namespace
		"qqqqqqqqqqqqqqqqqq.xxxxxxxxxxxx": "",
	}
	for in, want := range cases {
		if got := Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Nearest("x", nil); got != "" {
		t.Errorf("Nearest with no candidates = %q", got)
	}
	// Ties go to the alphabetically first candidate, whatever the input order.
	a := Nearest("ab", []string{"ac", "aa"})
	b := Nearest("ab", []string{"aa", "ac"})
	if a != "aa" || b != "aa" {
		t.Errorf("tie broken as %q / %q, want aa", a, b)
	}
	// The candidates slice is not reordered.
	in := []string{"b", "a"}
	Nearest("a", in)
	if in[0] != "b" {
		t.Error("Nearest sorted its argument")
	}
}

// FuzzDecodeArgs feeds arbitrary bytes as args. Decoding must never panic,
// and every failure must be a ParseError or a ValidationError.
func FuzzDecodeArgs(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `1`, `{`, `{"query":"q"}`, `{"query":"q","limit":"x"}`,
		`{"query":"q","Limit":1}`, `{"query":"q","item":{"TAG":1}}`, `{"query":"q","items":[{"need":null}]}`,
		`{"query":"q","due":"2025-11-05T10:00:00Z"}`, `{"query":"q","due":5}`, `{"query":"q"} {}`,
		`{"query":"q","updates":{"a":{"need":"x","n":1e400}}}`, `{"query":"q","bytes":"!!"}`,
		`{"query":"q","matrix":[[1],[2,"x"]]}`, `{"query":"q","raw":{"a":[1,2,{"b":null}]}}`,
		"{\"query\":\"\xff\"}", `{"query":"q","due_ptr":null,"item":null}`,
	} {
		f.Add([]byte(seed))
	}
	r := newRegistry(f)
	a, _ := r.Lookup("test.echo")
	call := Call{Principal: "p", Clock: clock.NewFixed(t0)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := a.Invoke(context.Background(), call, raw)
		if err == nil {
			if !json.Valid(out) || out[0] != '{' {
				t.Fatalf("args %q: result %q is not a JSON object", raw, out)
			}
			return
		}
		var e *errs.Error
		if !errors.As(err, &e) {
			t.Fatalf("args %q: error %q (%T) is not an *errs.Error", raw, err, err)
		}
		if e.Kind != errs.Parse && e.Kind != errs.Validation {
			t.Fatalf("args %q: error kind %s (%q)", raw, e.Kind, e.Message)
		}
		if e.Message == "" {
			t.Fatalf("args %q: empty message", raw)
		}
	})
}

// NamesFile: an action that always names a file does; one with FileArgs
// does when one of them is given as a string (a path), not as true/false
// or an empty string, and not for args it cannot read.
func TestNamesFileOnlyWhenAFileArgumentIsAPath(t *testing.T) {
	always := &Action{Spec: Spec{Name: "t.read", NamesFiles: true}}
	maybe := &Action{Spec: Spec{Name: "t.run", FileArgs: []string{"checkpoint", "file"}}}
	never := &Action{Spec: Spec{Name: "t.get"}}
	cases := []struct {
		a    *Action
		args string
		want bool
	}{
		{always, `{}`, true},
		{maybe, `{"checkpoint": "/tmp/x"}`, true},
		{maybe, `{"file": "plan.yaml", "checkpoint": true}`, true},
		{maybe, `{"checkpoint": true}`, false},
		{maybe, `{"checkpoint": false, "file": ""}`, false},
		{maybe, `{}`, false},
		{maybe, `[1]`, false},
		{never, `{"file": "/etc/passwd"}`, false},
	}
	for _, c := range cases {
		if got := c.a.NamesFile(json.RawMessage(c.args)); got != c.want {
			t.Errorf("%s %s: NamesFile = %v, want %v", c.a.Name, c.args, got, c.want)
		}
	}
}
