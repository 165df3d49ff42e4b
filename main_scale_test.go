package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestScaleBuildsAStoreThatChecksHealthy: engram scale builds what its
// flags ask for into --data, says so on stdout with progress on stderr,
// and engram check finds the store healthy.
func TestScaleBuildsAStoreThatChecksHealthy(t *testing.T) {
	dir := t.TempDir() + "/scale"
	var stdout, stderr bytes.Buffer
	code := run([]string{"scale", "--data", dir, "--items", "300", "--threads", "3", "--utterances", "400", "--memories", "200"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "built 300 items, 3 threads, 400 utterances, 200 memories into "+dir) {
		t.Errorf("stdout: %s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "engram scale: 300 items in ") {
		t.Errorf("stderr has no progress: %s", stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"check", "--data", dir}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "healthy") {
		t.Fatalf("check: exit %d: %s %s", code, stdout.String(), stderr.String())
	}
}

// TestScaleWantsADataDirectory: without --data, engram scale refuses
// (exit 2) rather than write into the user's own data directory; a bad
// count is refused naming the flag.
func TestScaleWantsADataDirectory(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"scale", "--items", "10"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--data DIR is required") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"scale", "--data", t.TempDir(), "--items", "-5"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "items: -5 is out of range") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
