package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
)

// BenchmarkTakeoverAfterTheOwnerIsKilled measures issue 15's "the next
// client to notice takes ownership within 2 seconds" with real processes:
// `engram serve` owns a durable data directory and an `engram --batch -`
// client is attached to it; the owner is killed with SIGKILL, and the
// client is sent a cortex.create at once. The time from the kill to that
// step's answer (the client, now the owner, ran it) is one takeover;
// takeover-p50-ms and takeover-max-ms are over the iterations (ns/op is
// their mean). Data shape: the directory first holds 0 or 20,000 small
// goals (one title each, made by one batch run), and each iteration adds
// two more; run with -benchtime 20x or so.
func BenchmarkTakeoverAfterTheOwnerIsKilled(b *testing.B) {
	for _, goals := range []int{0, 20_000} {
		b.Run(fmt.Sprintf("goals=%d", goals), func(b *testing.B) { benchTakeover(b, goals) })
	}
}

func benchTakeover(b *testing.B, goals int) {
	b.StopTimer() // only the takeovers are timed
	env, home := hermeticEnv(b)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "engram.log")
	if goals > 0 {
		cmd := engramCmd(b, env, "--batch", "-", "--data", dir, "--log", logFile)
		cmd.Stdin = strings.NewReader(createSteps("seed", goals))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("seeding %d goals: %v\n%.2000s", goals, err, out)
		}
	}
	var took []time.Duration
	for i := range b.N {
		owner := startServe(b, env, dir, "--log", logFile)
		client := enginetest.Start(b, engramBin, env, "--batch", "-", "--data", dir, "--log", logFile)
		lines := bufio.NewScanner(client.Stdout)
		step := func(id string) {
			b.Helper()
			_, _ = fmt.Fprintf(client.Stdin, `{"id": %q, "action": "cortex.create", "args": {"type": "goal", "fields": {"title": %q}}}`+"\n", id, id)
			if !lines.Scan() {
				b.Fatalf("%s: the client ended (%v): %s", id, lines.Err(), client.Stderr)
			}
			var r result
			if err := json.Unmarshal(lines.Bytes(), &r); err != nil || !r.OK {
				b.Fatalf("%s: %s (%v)", id, lines.Bytes(), err)
			}
		}
		step(fmt.Sprint("attached-", i))
		if pid := lockPID(dir); pid != owner.cmd.Process.Pid {
			b.Fatalf("iteration %d: the lock names pid %d, not engram serve's %d", i, pid, owner.cmd.Process.Pid)
		}

		b.StartTimer()
		start := time.Now()
		if err := owner.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		// It is dead (whatever answers next is the next owner): reaped,
		// with the signal's error.
		if err := <-owner.done; err == nil {
			b.Fatal("engram serve exited cleanly after SIGKILL")
		}
		step(fmt.Sprint("after-", i))
		took = append(took, time.Since(start))
		b.StopTimer()

		if pid := lockPID(dir); pid != client.Cmd.Process.Pid {
			b.Fatalf("iteration %d: after the kill the lock names pid %d, not the client's %d", i, pid, client.Cmd.Process.Pid)
		}
		if err := client.Stdin.Close(); err != nil {
			b.Fatal(err)
		}
		if err := client.Cmd.Wait(); err != nil {
			b.Fatalf("the client: %v\n%s", err, client.Stderr)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "takeover-p50-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "takeover-max-ms")
}
