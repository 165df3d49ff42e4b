package main

import (
	"os"
	"runtime/debug"
)

// crashBySignal makes a fatal error of the Go runtime end engram with
// SIGABRT instead of the runtime's exit status 2, which docs/batch.md
// reserves for the person's own mistakes (bad flags, an unreadable
// script). Such errors cannot be recovered: the machine out of memory, a
// write into a memory-mapped file on a full disk (SIGBUS), a data race
// the runtime caught, a panic on a goroutine engram did not guard. A
// shell reports the signal as status 134; standard error still has the
// runtime's message and every goroutine's stack. It also asks for a core
// dump where the system allows one (ulimit -c).
func crashBySignal() {
	debug.SetTraceback("crash")
}

// crashToLog copies such a crash's message and stacks into the log file,
// where the console (which owns the terminal) leaves its other messages.
// The runtime keeps its own copy of the file, so closing log later is
// fine.
func crashToLog(log *os.File) error {
	return debug.SetCrashOutput(log, debug.CrashOptions{})
}
