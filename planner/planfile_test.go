//go:build !noplanning

package planner_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
)

// Issue 13, items 1 and 3: plan.create's file is read through core/input:
// aliases, devices, FIFOs, directories and oversize files are refused by
// name, and no error quotes what the file holds.
func TestPlanFilesAreReadSafely(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	laughs := "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\ngoal: g\nstate: {x: *i}\n"
	// Flow nesting is refused before parsing, naming the line; nesting in
	// block style is refused after, naming the value's path.
	deep := "goal: g\nsubtasks: [{id: a}]\nstate: {x: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}\n"
	var block strings.Builder
	block.WriteString("goal: g\nsubtasks: [{id: a}]\nstate:\n")
	for i := range 70 {
		block.WriteString(strings.Repeat("  ", i+1) + "k:\n")
	}
	for _, tc := range []struct {
		file string
		kind errs.Kind
		says string
	}{
		{write("laughs.yaml", laughs), errs.Parse, "line 2, column 8: YAML aliases (*name) are not allowed"},
		{"/dev/zero", errs.Validation, "/dev/zero: is a character device; give a regular file"},
		{fifo, errs.Validation, "is a named pipe (FIFO)"},
		{dir, errs.Validation, "is a directory"},
		{write("big.yaml", "goal: "+strings.Repeat("x", input.MaxDocument)+"\n"), errs.Validation, "the limit is 1 MiB"},
		{write("deep.yaml", deep), errs.Parse, "line 3: [ and { are nested more than 64 levels deep"},
		{write("block.yaml", block.String()), errs.Parse, "state" + strings.Repeat(".k", 63) + " is nested more than 64 levels deep"},
	} {
		e := r.fail(tc.kind, "plan.create", map[string]any{"file": tc.file})
		if !strings.Contains(e.Message, tc.says) || e.Details["field"] != "file" {
			t.Errorf("%s: %q (field %v), want it to say %q", tc.file, e.Message, e.Details["field"], tc.says)
		}
	}
	// A secret-looking first line never comes back, however the file is wrong.
	const secret = "root:$6$S3CR3TSALT$hashhash:19000:0:99999:7:::"
	for name, text := range map[string]string{
		"shadow":      secret + "\ndaemon:*:19000:0:99999:7:::\n",
		"shadow-bad":  secret + "\n  - [\n",
		"shadow-map":  "goal: " + secret + "\nsubtasks: nope\n",
		"shadow-time": "goal: g\nsubtasks: [{id: a}]\nmax_replans: " + secret + "\n",
	} {
		_, err := r.Try(enginetest.Who{}, "plan.create", map[string]any{"file": write(name, text)})
		if err == nil || strings.Contains(err.Error(), "S3CR3T") || strings.Contains(err.Error(), "19000") {
			t.Errorf("%s: the error quotes the file (or there is none): %v", name, err)
		}
	}
}

// Issue 13, item 9: a task.sleep long enough to overflow a time.Duration is
// refused, naming the field and the limit.
func TestSleepHasALimit(t *testing.T) {
	r := newRig(t)
	r.fail(errs.Validation, "task.sleep", map[string]any{"ms": int64(9_300_000_000_000)})
	e := r.fail(errs.Validation, "task.sleep", map[string]any{"ms": 86_400_001})
	if !strings.Contains(e.Message, "ms: must be from 0 to 86400000 (a day)") {
		t.Errorf("message %q", e.Message)
	}
}
