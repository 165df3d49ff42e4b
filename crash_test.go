package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// crashEnv names the fault TestCrashHelperProcess makes (a test of the
// crash handling, not a feature of engram).
const crashEnv = "ENGRAM_TEST_CRASH"

// A fatal error of the Go runtime never exits 2, the status of a usage
// error (issue 13, item 9): engram dies by SIGABRT, and the log file has
// the runtime's message. Two faults no recover catches: an unlock of an
// unlocked mutex (a runtime throw, as a SIGBUS from a full disk is) and a
// panic on a goroutine engram did not guard. The log gets the stacks.
func TestRuntimeFatalErrorEndsBySignalNotUsageStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary in a subprocess")
	}
	for fault, want := range map[string]string{
		"throw": "fatal error: sync: unlock of unlocked mutex",
		"panic": "panic: a goroutine engram did not guard",
	} {
		t.Run(fault, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "engram.log")
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$")
			cmd.Dir = dir // where a core dump would go, if the system writes one
			cmd.Env = append(os.Environ(), crashEnv+"="+fault, "ENGRAM_LOG="+log, "ENGRAM_CORE_DUMPS=")
			stderr, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the crashing process ended with %v, want SIGABRT\n%s", err, stderr)
			}
			status := exit.Sys().(syscall.WaitStatus)
			if !status.Signaled() || status.Signal() != syscall.SIGABRT {
				t.Fatalf("the crashing process ended with %v (exit status %d), want SIGABRT; status 2 means bad usage\n%s",
					err, status.ExitStatus(), stderr)
			}
			if !strings.Contains(string(stderr), want) {
				t.Errorf("standard error lacks %q:\n%s", want, stderr)
			}
			logged, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			// The runtime writes a fatal error's first line to standard
			// error only; the stacks go to the log as well.
			if !strings.Contains(string(logged), "TestCrashHelperProcess(") {
				t.Errorf("the log file lacks the crashing goroutine's stack:\n%s", logged)
			}
		})
	}
}

// TestCrashHelperProcess is the crashing process of the test above: it
// sets engram up as main does, opens the log as run does, and faults.
func TestCrashHelperProcess(t *testing.T) {
	fault := os.Getenv(crashEnv)
	if fault == "" {
		t.Skip("run by TestRuntimeFatalErrorEndsBySignalNotUsageStatus")
	}
	crashBySignal()
	// No core file, whatever the machine's ulimit: one would hold every
	// agent's memory.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil || lim.Cur != 0 {
		t.Fatalf("core files are allowed up to %d bytes (%v)", lim.Cur, err)
	}
	if dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || dumpable != 0 {
		t.Fatalf("the process is dumpable (%d, %v): a piped core handler would get its memory", dumpable, err)
	}
	if _, closeLog, err := openLog(config{}); err != nil {
		t.Fatal(err)
	} else {
		defer closeLog()
	}
	switch fault {
	case "throw":
		var mu sync.Mutex
		mu.Unlock() //nolint:staticcheck // the fault under test
	case "panic":
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("a goroutine engram did not guard")
		}()
		<-done
	}
	t.Fatal("still running after the fault")
}
