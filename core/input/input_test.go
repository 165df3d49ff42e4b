package input_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/input"
)

// billionLaughs is a 600-byte YAML file whose aliases expand to billions of
// nodes (issue 13, item 3).
const billionLaughs = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
goal: [*i]
`

func write(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 13, item 3.
func TestYAMLAliasesAreRefusedBeforeTheyExpand(t *testing.T) {
	path := write(t, "laughs.yaml", billionLaughs)
	data, err := input.ReadFile(path, input.MaxDocument)
	if err != nil {
		t.Fatal(err)
	}
	_, err = input.YAMLToJSON(path, data)
	var ie *input.Error
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "aliases") || ie.Line != 2 {
		t.Fatalf("want an alias error on line 2, got %v", err)
	}
}

// Issue 13, item 3: /dev/zero, a FIFO and a directory are refused by name,
// without being read (a FIFO without a writer would block an open).
func TestOnlyRegularFilesAreRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero":                        "is a character device",
		fifo:                               "is a named pipe",
		dir:                                "is a directory",
		filepath.Join(dir, "missing.yaml"): "no such file",
	} {
		_, err := input.ReadFile(path, input.MaxDocument)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), path+":") {
			t.Errorf("%s: want %q naming the file, got %v", path, want, err)
		}
	}
}

// Issue 13, item 3.
func TestAFileOverItsLimitIsRefused(t *testing.T) {
	path := write(t, "big.yaml", strings.Repeat("x", 2000))
	if _, err := input.ReadFile(path, 1000); err == nil || !strings.Contains(err.Error(), "the limit is 1000 bytes") {
		t.Fatalf("want a size error, got %v", err)
	}
	if data, err := input.ReadFile(path, 2000); err != nil || len(data) != 2000 {
		t.Fatalf("a file at the limit: %d bytes, %v", len(data), err)
	}
}

// Issue 13, items 1 and 3: a secret file named as input never comes back
// in an error, whatever is wrong with it.
func TestErrorsNeverQuoteTheFile(t *testing.T) {
	const secret = "root:$6$S3CR3TSALT$hashhashhash:19000:0:99999:7:::"
	for name, text := range map[string]string{
		"scalar":       secret + "\n",
		"bad syntax":   secret + "\n  - [unclosed: {\n",
		"tab indented": "a:\n\t" + secret + "\n",
		"two docs":     secret + "\n---\n" + secret + "\n",
	} {
		path := write(t, "shadow", text)
		data, err := input.ReadFile(path, input.MaxDocument)
		if err != nil {
			t.Fatal(err)
		}
		_, err = input.YAMLToJSON(path, data)
		if err != nil && strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}

// Issue 13, item 4.
func TestCheckDepthNamesThePathOfTheValueTooDeep(t *testing.T) {
	deep := `{"state": {"a": [1, {"b": ` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}]}}`
	where, err := input.CheckDepth([]byte(deep), input.MaxDepth)
	if !errors.Is(err, input.ErrTooDeep) {
		t.Fatalf("not refused: %v", err)
	}
	// Levels 1-4 hold b; its 61st bracket is level 65.
	if want := "state.a[1].b" + strings.Repeat("[0]", 60); where != want {
		t.Errorf("path %q, want %q", where, want)
	}
	ok := `{"s": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\"[["}`
	if _, err := input.CheckDepth([]byte(ok), input.MaxDepth); err != nil {
		t.Errorf("brackets inside a string count as nesting: %v", err)
	}
	at := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if _, err := input.CheckDepth([]byte(at), input.MaxDepth); err != nil {
		t.Errorf("64 levels refused: %v", err)
	}
}

func TestSizeIsForPeople(t *testing.T) {
	for n, want := range map[int64]string{600: "600 bytes", 1 << 20: "1 MiB", 8 << 20: "8 MiB", 1536: "1.5 KiB", 3 << 19: "1.5 MiB"} {
		if got := input.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func BenchmarkCheckDepth1MiB(b *testing.B) {
	doc := []byte(`{"text": "` + strings.Repeat("words and {brackets} ", 1<<20/21) + `"}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := input.CheckDepth(doc, input.MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRedactKeepsFieldNamesOnly(t *testing.T) {
	got := input.Redact(`args: unknown field "daemon:*:19000:0:99999:7::"; did you mean "subtasks"? "a\"b"`)
	if want := `args: unknown field "…"; did you mean "subtasks"? "…"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A review found a 1 MB file of nested [ hanging the YAML parser for
// minutes: flow nesting is refused before parsing, naming the line.
func TestDeepFlowNestingIsRefusedBeforeParsing(t *testing.T) {
	deep := "goal: x\nsubtasks: " + strings.Repeat("[", 500000) + strings.Repeat("]", 500000) + "\n"
	_, err := input.CheckYAML("deep.yaml", []byte(deep))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "64") {
		t.Fatalf("CheckYAML of 500,000 nested [ = %v, want a refusal naming line 2 and the limit", err)
	}
	// Quotes and comments hide brackets, but only to the end of their line.
	fine := "a: \"[[[[\" # [[[[\nb: don't\nc: [1, [2, {d: 3}]]\n"
	if _, err := input.CheckYAML("fine.yaml", []byte(fine)); err != nil {
		t.Errorf("CheckYAML of a shallow file = %v", err)
	}
	for _, hidden := range []string{
		"a: don't\nb: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
		"x: [a', " + strings.Repeat("[", 100) + strings.Repeat("]", 101) + "\n", // a review's: on the same line
	} {
		if _, err := input.CheckYAML("hidden.yaml", []byte(hidden)); err == nil {
			t.Errorf("an apostrophe in a word hid deep nesting: %.40q", hidden)
		}
	}
}
