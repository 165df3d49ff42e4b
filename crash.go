package main

import (
	"os"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"
)

// crashBySignal makes a fatal error of the Go runtime end engram with
// SIGABRT instead of the runtime's exit status 2, which docs/batch.md
// reserves for the person's own mistakes (bad flags, an unreadable
// script). Such errors cannot be recovered: the machine out of memory, a
// write into a memory-mapped file on a full disk (SIGBUS), a data race
// the runtime caught, a panic on a goroutine engram did not guard. A
// shell reports the signal as status 134; standard error still has the
// runtime's message and every goroutine's stack.
//
// SIGABRT would also write a core file where the system allows one,
// holding API keys and every agent's memory in plain bytes: engram turns
// that off unless ENGRAM_CORE_DUMPS=1 asks for it. The core size limit
// (ulimit -c) stops a core file; marking the process not dumpable also
// stops a core handler the system pipes cores to (apport, systemd-
// coredump), and other processes of the same user attaching a debugger.
func crashBySignal() {
	debug.SetTraceback("crash")
	if os.Getenv("ENGRAM_CORE_DUMPS") == "1" {
		return
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CORE, &lim) == nil {
		lim.Cur = 0
		_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &lim) // lowering is always allowed; a failure leaves the system's choice
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) // as above: a failure leaves the system's choice
}

// crashToLog copies such a crash's message and stacks into the log file,
// where the console (which owns the terminal) leaves its other messages.
// The runtime keeps its own copy of the file, so closing log later is
// fine.
func crashToLog(log *os.File) error {
	return debug.SetCrashOutput(log, debug.CrashOptions{})
}
