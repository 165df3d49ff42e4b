// Package enginetest is what the Go tests of engram's subsystems share:
// action arguments written as a batch step would have them, checking an
// error's kind and message, and the engram binary for the tests that run it
// as a subprocess (kill -9 and the like). Only tests import it.
package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/errs"
)

// Args is an action's arguments: a string is taken as JSON as it is, any
// other value is marshalled.
func Args(t testing.TB, v any) json.RawMessage {
	t.Helper()
	if s, ok := v.(string); ok {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CheckErr fails t unless err is an *errs.Error of kind whose message holds
// every fragment; name, args and res say which call it was.
func CheckErr(t testing.TB, name string, args any, res json.RawMessage, err error, kind errs.Kind, fragments ...string) *errs.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s %s: succeeded with %s; want %s", name, Short(args), Short(string(res)), kind)
	}
	var ee *errs.Error
	if !errors.As(err, &ee) {
		t.Fatalf("%s: error %q (%T) has no *errs.Error", name, err, err)
	}
	got := errs.As(err)
	if got.Kind != kind {
		t.Fatalf("%s %s: %s (%s), want %s", name, Short(args), got.Kind, got.Message, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(got.Message, f) {
			t.Errorf("%s: message %q lacks %q", name, got.Message, f)
		}
	}
	return got
}

// Decode unmarshals raw into v, failing t (from the test's own goroutine)
// when raw is not the JSON that v expects.
func Decode(t testing.TB, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decoding %s into %T: %v", Short(string(raw)), v, err)
	}
}

// Short renders v for a failure message (JSON for values that are not
// already text), cut to 400 bytes.
func Short(v any) string {
	s := fmt.Sprint(v)
	if b, err := json.Marshal(v); err == nil && !strings.HasPrefix(s, "{") {
		if _, isString := v.(string); !isString {
			s = string(b)
		}
	}
	if len(s) > 400 {
		return s[:400] + "..."
	}
	return s
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// Binary builds the engram command once per test process and returns its
// path. A package whose tests call it removes it in TestMain with
// RemoveBinary.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "engram-test-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "engram")
		buildErr = Build(binPath)
	})
	if buildErr != nil {
		t.Fatalf("building engram: %v", buildErr)
	}
	return binPath
}

// Build puts the engram command, built with the given build tags, at
// dest. It has go run hand the binary to cp (go run -exec cp): go run keeps
// what it links in the build cache, so the test packages that run engram
// (and every run after the first, until the code changes) copy one binary
// instead of each linking its own, ~2 s apiece and more on a busy machine.
// go run leaves out the debug information (DWARF) that go build adds; a
// panic's stack trace names its functions all the same.
func Build(dest string, tags ...string) error {
	args := []string{"run"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-exec", "cp", "github.com/engram-console/engram", dest)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// RemoveBinary removes what Binary built (if it built anything).
func RemoveBinary() {
	if binDir != "" {
		_ = os.RemoveAll(binDir) // best effort: a leftover temporary directory harms nothing
	}
}

// Proc is engram running as a subprocess, its standard input and output
// piped to the test (a batch script in, result lines out).
type Proc struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout io.Reader
	Stderr *bytes.Buffer
}

// Start runs bin with args in the environment env, for a minute at most.
func Start(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	p := &Proc{Cmd: exec.CommandContext(ctx, bin, args...), Stderr: &bytes.Buffer{}}
	p.Cmd.Env, p.Cmd.Stderr = env, p.Stderr
	var err error
	if p.Stdin, err = p.Cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.Stdout, err = p.Cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// LockedBuffer is a bytes.Buffer safe to write from many goroutines: a log
// that a server's or Badger's goroutines write while a test reads it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
