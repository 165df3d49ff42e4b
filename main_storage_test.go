package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/storage"
	"golang.org/x/sys/unix"
)

// createScript creates n goals goal_0..goal_n-1.
func createScript(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"id": "c%d", "action": "cortex.create", "args": {"type": "goal", "id": "goal_%d", "fields": {"title": "goal number %d"}}}`+"\n", i, i, i)
	}
	return b.String()
}

// getScript reads goals from..from+n-1.
func getScript(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"id": "g%d", "action": "cortex.get", "args": {"id": "goal_%d"}}`+"\n", i, i)
	}
	return b.String()
}

// Issue 13 item 2: engram check, backup and restore, through the binary:
// a backup restores into a new directory with every item; restore refuses
// a non-empty directory; a directory without its MANIFEST is refused with
// exit status 3 naming the file, and left as it was.
func TestCheckBackupRestoreThroughTheBinary(t *testing.T) {
	env, home := hermeticEnv(t)
	data := filepath.Join(home, "a")
	if out := runIn(t, env, createScript(0, 40), "--batch", "-", "--data", data); out.code != 0 {
		t.Fatalf("creating: %d %s", out.code, out.stderr)
	}
	if out := runIn(t, env, "", "check", "--data", data); out.code != 0 || !strings.Contains(out.stdout, "healthy") {
		t.Fatalf("check: %d %q %q", out.code, out.stdout, out.stderr)
	}
	file := filepath.Join(home, "a.backup")
	if out := runIn(t, env, "", "backup", file, "--data", data); out.code != 0 {
		t.Fatalf("backup: %d %s", out.code, out.stderr)
	}
	restored := filepath.Join(home, "b")
	if out := runIn(t, env, "", "restore", "--data", restored, file); out.code != 0 {
		t.Fatalf("restore: %d %s", out.code, out.stderr)
	}
	if out := runIn(t, env, "", "restore", "--data", restored, file); out.code != exitUsage || !strings.Contains(out.stderr, "not empty") {
		t.Fatalf("restore into a non-empty directory: %d %s", out.code, out.stderr)
	}
	out := runIn(t, env, getScript(0, 40), "--batch", "-", "--data", restored)
	if out.code != 0 || len(parseResults(t, out.stdout)) != 40 {
		t.Fatalf("reading the restored items: %d %s", out.code, out.stderr)
	}
	if out := runIn(t, env, "", "restore", "--help"); out.code != 0 || !strings.Contains(out.stdout, "Usage: engram restore") {
		t.Fatalf("restore --help: %d %q", out.code, out.stdout)
	}

	if err := os.Remove(filepath.Join(data, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--batch", "-", "--data", data}, {"check", "--data", data}} {
		out := runIn(t, env, getScript(0, 1), args...)
		if out.code != exitDamaged || !strings.Contains(out.stderr, filepath.Join(data, "MANIFEST")) || !strings.Contains(out.stderr, "engram restore") {
			t.Fatalf("engram %q without a MANIFEST: %d %s", args, out.code, out.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "MANIFEST")); err == nil {
		t.Fatal("a refused open created a new MANIFEST")
	}
}

// mountTmpfs mounts a tmpfs of size bytes, or skips the test when this
// machine does not allow it.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the injected-statfs test in storage covers the logic", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	return dir
}

// Issue 13 item 6: on a real 20 MB file system engram used to die of
// SIGBUS after ~2,700 creates, and again on every restart. Now it never
// crashes: it refuses with StorageFull and exit status 4.
func TestSmallFileSystemNeverCrashes(t *testing.T) {
	mnt := mountTmpfs(t, "20m")
	env, home := hermeticEnv(t)
	// Before the fix, these creates died of SIGBUS after about 2,700 ok lines.
	script := strings.ReplaceAll(createScript(0, 12000), `"fields": {`, `"fields": {"description": "`+strings.Repeat("x", 1500)+`", `)
	out := runIn(t, env, script, "--batch", "-", "--data", filepath.Join(mnt, "data"), "--log", filepath.Join(home, "log"))
	if out.code != exitFull || !strings.Contains(out.stderr, "storage full") || !strings.Contains(out.stderr, mnt) {
		t.Fatalf("a 20 MB file system: exit %d, stderr %q; want exit %d and storage full naming %s", out.code, out.stderr, exitFull, mnt)
	}
}

// Issue 13 item 6: when the file system fills up under a running engram,
// writes fail with StorageFull, reads go on, the run exits 4, and once
// space is freed everything written before is there and writing works.
func TestFullFileSystemRefusesWritesKeepsReads(t *testing.T) {
	mnt := mountTmpfs(t, "300m")
	env, home := hermeticEnv(t)
	data := filepath.Join(mnt, "data")
	log := filepath.Join(home, "log")
	if out := runIn(t, env, createScript(0, 50), "--batch", "-", "--data", data, "--log", log); out.code != 0 {
		t.Fatalf("creating: %d %s", out.code, out.stderr)
	}

	// Start a run, then fill the file system under it.
	cmd := engramCmd(t, env, "--batch", "-", "--data", data, "--log", log)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, int(st.Bavail*uint64(st.Bsize))-(100<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = fmt.Fprint(stdin, createScript(50, 1)+getScript(0, 50))
	_ = stdin.Close()
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFull {
		t.Fatalf("run on a full file system: %v, want exit %d; stderr %s", err, exitFull, stderr.String())
	}
	results := parseResults(t, stdout.String())
	if len(results) != 51 || results[0].OK || results[0].Error.Kind != "StorageFull" || !strings.Contains(results[0].Error.Message, mnt) {
		t.Fatalf("the write on a full file system: %+v", results[0])
	}
	for _, r := range results[1:] {
		if !r.OK {
			t.Fatalf("a read on a full file system failed: %+v", r)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, env, createScript(50, 1)+getScript(0, 51), "--batch", "-", "--data", data, "--log", log)
	if out.code != 0 {
		t.Fatalf("after freeing space: %d %s %s", out.code, out.stdout, out.stderr)
	}
}

// Issue 13 item 6: started on a file system that is already full, engram
// opens the store read-only rather than not at all: it says so on standard
// error and in engine.info, every read answers, every write is refused with
// StorageFull (exit status 4), and nothing is written.
func TestFullFileSystemAtStartStillReads(t *testing.T) {
	mnt := mountTmpfs(t, "300m")
	env, home := hermeticEnv(t)
	data := filepath.Join(mnt, "data")
	log := filepath.Join(home, "log")
	if out := runIn(t, env, createScript(0, 20), "--batch", "-", "--data", data, "--log", log); out.code != 0 {
		t.Fatalf("creating: %d %s", out.code, out.stderr)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, int(st.Bavail*uint64(st.Bsize))-(50<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}

	script := `{"id": "info", "action": "engine.info"}` + "\n" + getScript(0, 20) + createScript(20, 1)
	out := runIn(t, env, script, "--batch", "-", "--data", data, "--log", log)
	if out.code != exitFull || !strings.Contains(out.stderr, "read-only") || !strings.Contains(out.stderr, mnt) {
		t.Fatalf("on a full file system: exit %d, stderr %q; want %d and a read-only notice naming %s", out.code, out.stderr, exitFull, mnt)
	}
	results := parseResults(t, out.stdout)
	if len(results) != 22 {
		t.Fatalf("%d result lines, want 22:\n%s", len(results), out.stdout)
	}
	var info struct {
		ReadOnly string `json:"read_only"`
	}
	if err := json.Unmarshal(results[0].Result, &info); err != nil || !strings.Contains(info.ReadOnly, "storage full") {
		t.Errorf("engine.info says read_only %q (%v)", info.ReadOnly, err)
	}
	for _, r := range results[1:21] {
		if !r.OK {
			t.Errorf("a read on a full file system failed: %+v", r)
		}
	}
	if last := results[21]; last.OK || last.Error.Kind != "StorageFull" {
		t.Errorf("the write: %+v, want StorageFull", last)
	}
	after, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	if names(before) != names(after) {
		t.Errorf("the read-only run changed the directory:\n%s\n%s", names(before), names(after))
	}
}

// Issue 13 item 6: an engram killed with -9 (as a SIGBUS on a full disk
// kills it) leaves unfinished logs; on a file system that is full by then,
// the next engram still opens the store read-only, and every write the
// killed one acknowledged reads back.
func TestKilledEngramOnAFullFileSystemStillReads(t *testing.T) {
	mnt := mountTmpfs(t, "300m")
	env, home := hermeticEnv(t)
	data := filepath.Join(mnt, "data")
	log := filepath.Join(home, "log")
	cmd := engramCmd(t, env, "--batch", "-", "--data", data, "--log", log)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 300
	if _, err := fmt.Fprint(stdin, createScript(0, n)); err != nil {
		t.Fatal(err)
	}
	// Every result printed is acknowledged; kill once all are, with the
	// script still open.
	sc := bufio.NewScanner(stdout)
	for i := 0; i < n; i++ {
		if !sc.Scan() {
			t.Fatalf("engram stopped after %d results: %v", i, sc.Err())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed
	_ = stdin.Close()

	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, int(st.Bavail*uint64(st.Bsize))-(50<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, env, getScript(0, n), "--batch", "-", "--data", data, "--log", log)
	if out.code != 0 || !strings.Contains(out.stderr, "read-only") {
		t.Fatalf("reading after the kill on a full file system: exit %d, stderr %q", out.code, out.stderr)
	}
	if results := parseResults(t, out.stdout); len(results) != n {
		t.Fatalf("%d results, want %d", len(results), n)
	}
}

// names lists a directory's entries with their sizes.
func names(entries []os.DirEntry) string {
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err == nil {
			fmt.Fprintf(&b, "%s %d\n", e.Name(), info.Size())
		}
	}
	return b.String()
}

// Issue 13 item 2: engram check verifies the records too: an audit entry
// changed behind engram's back (its checksums intact) is reported with the
// item, and the status is 3.
func TestCheckFindsABrokenAuditChain(t *testing.T) {
	env, home := hermeticEnv(t)
	data := filepath.Join(home, "a")
	if out := runIn(t, env, createScript(0, 3), "--batch", "-", "--data", data); out.code != 0 {
		t.Fatalf("creating: %d %s", out.code, out.stderr)
	}
	s, err := storage.Open(storage.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key(storage.PrefixCortex, "audit", "goal_1", storage.Uint64(1))
	err = s.Update(t.Context(), func(tx *storage.Tx) error {
		v, err := tx.Get(key)
		if err != nil {
			return err
		}
		return tx.Set(key, bytes.Replace(v, []byte("goal number 1"), []byte("goal number 7"), 1))
	})
	if err := errors.Join(err, s.Close()); err != nil {
		t.Fatal(err)
	}
	out := runIn(t, env, "", "check", "--data", data)
	if out.code != exitDamaged || !strings.Contains(out.stdout, "cortex item goal_1: audit chain broken") {
		t.Fatalf("check of a tampered audit trail: %d %q %q", out.code, out.stdout, out.stderr)
	}
}

// Issue 13 item 2: engram backup of a directory another engram holds is
// refused, naming the process holding it.
func TestBackupOfADirectoryInUseNamesItsHolder(t *testing.T) {
	env, home := hermeticEnv(t)
	data := filepath.Join(home, "a")
	s, err := storage.Open(storage.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	out := runIn(t, env, "", "backup", "--data", data, filepath.Join(home, "b.backup"))
	if out.code != exitUsage || !strings.Contains(out.stderr, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("backup of a directory in use: %d %q", out.code, out.stderr)
	}
}
