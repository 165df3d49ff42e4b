package main

// Tests of one engram owning a data directory and the others attaching to
// it (issue 15), with real processes and real sockets.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engram-console/engram/core/enginetest"
	"github.com/engram-console/engram/core/wire"
	"github.com/engram-console/engram/storage"
)

// served is `engram serve` running as a subprocess.
type served struct {
	cmd *exec.Cmd
	// status is the one line it printed on standard error when it was
	// up; tcp the address it serves TCP on (--listen), if any.
	status, tcp string
	done        chan error
}

// startServe starts `engram serve --data dir` and returns once it serves.
func startServe(t testing.TB, env []string, dir string, args ...string) *served {
	t.Helper()
	cmd := engramCmd(t, env, append([]string{"serve", "--data", dir}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stderr)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "serves") {
		_ = cmd.Process.Kill()
		rest, _ := io.ReadAll(br)
		_ = cmd.Wait()
		t.Fatalf("engram serve did not start: %v\n%s%s", err, line, rest)
	}
	s := &served{cmd: cmd, status: line, done: make(chan error, 1)}
	if i := strings.Index(line, "on tcp "); i >= 0 {
		s.tcp = strings.Fields(line[i+len("on tcp "):])[0]
	}
	go func() {
		_, _ = io.Copy(io.Discard, br)
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop ends the server with SIGTERM and waits for it (once).
func (s *served) stop(t testing.TB) {
	t.Helper()
	if s.cmd.ProcessState != nil || s.done == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("engram serve ended with %v after SIGTERM, want a clean exit", err)
		}
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("engram serve did not stop within 20s of SIGTERM")
	}
	s.done = nil
}

// lockPID is the pid in the data directory's lock file.
func lockPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, storage.LockFileName))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// createSteps is a script of n cortex.create steps titled prefix-i.
func createSteps(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "%s-%d", "action": "cortex.create", "args": {"type": "goal", "fields": {"title": "%s-%d", "tags": [%q]}}}`+"\n", prefix, i, prefix, i, prefix)
	}
	return b.String()
}

// countGoals counts the goals tagged tag, reading through engram.
func countGoals(t *testing.T, env []string, dir, tag string) int {
	t.Helper()
	out := runIn(t, env, fmt.Sprintf(`{"action": "cortex.query", "args": {"tags": [%q], "limit": 1}}`, tag), "--batch", "-", "--data", dir)
	res := parseResults(t, out.stdout)
	if out.code != 0 || len(res) != 1 {
		t.Fatalf("counting %s: exit %d\n%s%s", tag, out.code, out.stdout, out.stderr)
	}
	var q struct {
		Count  int            `json:"count"`
		ByType map[string]int `json:"counts_by_type"`
	}
	if err := json.Unmarshal(res[0].Result, &q); err != nil {
		t.Fatal(err)
	}
	return q.ByType["goal"]
}

// TestTwoBatchClientsWriteAtOnceAndNothingIsLost: two engram --batch
// processes on one directory each write 2,000 items at once while a third
// reads; all 4,000 are there, and every run exits 0, although whichever of
// them owns the directory finishes first and hands it over.
func TestTwoBatchClientsWriteAtOnceAndNothingIsLost(t *testing.T) {
	t.Parallel() // its own home, data directory and processes
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	var reads strings.Builder
	for range 300 {
		reads.WriteString(`{"action": "cortex.query", "args": {"tags": ["a"], "limit": 5}}` + "\n")
	}
	scripts := []string{createSteps("a", 2000), createSteps("b", 2000), reads.String()}
	outs := make([]outcome, len(scripts))
	var wg sync.WaitGroup
	for i, script := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = runIn(t, env, script, "--batch", "-", "--data", dir, "--log", logFile)
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if out.code != 0 {
			t.Errorf("run %d: exit %d\nstderr:\n%s\nfailed:\n%s", i, out.code, out.stderr, failedLines(out.stdout))
		}
	}
	if a, b := countGoals(t, env, dir, "a"), countGoals(t, env, dir, "b"); a != 2000 || b != 2000 {
		t.Errorf("%d goals of a and %d of b, want 2000 each", a, b)
	}
}

// failedLines is the result lines of a run that did not pass (at most 5).
func failedLines(stdout string) string {
	var out []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, `"ok":false`) && len(out) < 5 {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestBatchThroughAClientPrintsWhatItPrintsInProcess: a script with `at` on
// every step prints the same bytes run in process (the run owns its
// directory) and run as a client of engram serve, events included; and
// two such scripts run at once, as clients of one owner, each print what
// they print alone.
func TestBatchThroughAClientPrintsWhatItPrintsInProcess(t *testing.T) {
	env, home := hermeticEnv(t)
	logFile := filepath.Join(home, "test.log")
	history, err := filepath.Abs("testdata/batch/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	goals := writeScript(t, "goals.jsonl", deterministicGoals)
	run := func(dir, script, agent string, extra ...string) string {
		t.Helper()
		out := runIn(t, env, "", append([]string{"--batch", script, "--data", dir, "--log", logFile, "--agent", agent}, extra...)...)
		if out.code != 0 {
			t.Fatalf("%s in %s: exit %d\n%s%s", script, dir, out.code, out.stdout, out.stderr)
		}
		return out.stdout
	}
	for _, extra := range [][]string{nil, {"--events"}} {
		alone := run(filepath.Join(t.TempDir(), "alone"), history, "ann", extra...)
		dir := filepath.Join(t.TempDir(), "served")
		startServe(t, env, dir, "--log", logFile)
		if client := run(dir, history, "ann", extra...); client != alone {
			t.Errorf("%v: through a client the script printed\n%s\nin process\n%s", extra, client, alone)
		}
	}

	// Two at once: neither sees the other's time, ids or data.
	aloneHistory := run(filepath.Join(t.TempDir(), "h"), history, "ann")
	aloneGoals := run(filepath.Join(t.TempDir(), "g"), goals, "bob")
	dir := filepath.Join(t.TempDir(), "both")
	startServe(t, env, dir, "--log", logFile)
	var gotHistory, gotGoals string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); gotHistory = run(dir, history, "ann") }()
	go func() { defer wg.Done(); gotGoals = run(dir, goals, "bob") }()
	wg.Wait()
	if gotHistory != aloneHistory {
		t.Errorf("history beside another script printed\n%s\nalone\n%s", gotHistory, aloneHistory)
	}
	if gotGoals != aloneGoals {
		t.Errorf("goals beside another script printed\n%s\nalone\n%s", gotGoals, aloneGoals)
	}
}

// deterministicGoals creates, updates and queries goals with `at` on every
// step: ids and times are the same on every run.
const deterministicGoals = `{"id": "g1", "action": "cortex.create", "at": "2025-11-05T10:00:00Z", "args": {"type": "goal", "fields": {"title": "Ship the offsite plan", "tags": ["bob"]}}}
{"id": "g2", "action": "cortex.create", "at": "2025-11-05T10:00:01Z", "args": {"type": "goal", "fields": {"title": "Book the venue", "tags": ["bob"]}}}
{"id": "u", "action": "cortex.update", "at": "2025-11-05T10:00:02Z", "args": {"id": "${g1.item.id}", "updates": {"progress": 40}}}
{"id": "q", "action": "cortex.query", "at": "2025-11-05T10:00:03Z", "args": {"tags": ["bob"]}}
{"id": "h", "action": "cortex.history", "at": "2025-11-05T10:00:04Z", "args": {"id": "${g1.item.id}"}}
`

// TestKillingTheOwnerLosesNoAcknowledgedWrite: the owner of a data
// directory is killed with SIGKILL 20 times while two clients write; each
// time a client takes over, and every write whose result was printed is
// in the store afterwards.
func TestKillingTheOwnerLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel() // its own home, data directory and processes
	const rounds = 20
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")

	var mu sync.Mutex
	acked := map[string]string{} // item id → title
	unavailable := 0
	var stopping atomic.Bool
	writers := map[int]*writer{} // by pid
	next := 0
	start := func() *writer {
		next++
		w := startWriter(t, env, fmt.Sprintf("w%d", next), dir, logFile, func(id, title string) {
			mu.Lock()
			acked[id] = title
			mu.Unlock()
		}, func(r result) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case stopping.Load():
				return // the step SIGTERM interrupted at the end
			case r.Error != nil && r.Error.Kind == "Unavailable":
				// In flight when the owner died, and no next owner in
				// time. (A cortex.create resent to the next owner never
				// finds its answer lost: its write and its recorded
				// answer commit together.)
				unavailable++
				return
			}
			t.Errorf("a write failed: %+v", r.Error)
		})
		writers[w.cmd.Process.Pid] = w
		return w
	}
	first := start()
	first.waitAcks(t, 1) // it owns the directory
	second := start()
	second.waitAcks(t, 1)
	for round := range rounds {
		owner := lockPID(dir)
		victim, ok := writers[owner]
		if !ok {
			t.Fatalf("round %d: the lock names pid %d, not one of the writers", round, owner)
		}
		for _, w := range writers {
			w.waitAcks(t, w.acks()+5) // writes in flight
		}
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		victim.wait()
		delete(writers, owner)
		// A client takes over within two seconds (and some slack for a
		// busy machine).
		deadline := time.Now().Add(5 * time.Second)
		for {
			pid := lockPID(dir)
			if _, ours := writers[pid]; ours && pid != owner {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no writer took over from pid %d (lock: %d)", round, owner, pid)
			}
			time.Sleep(10 * time.Millisecond) // polling a file another process writes
		}
		start().waitAcks(t, 1)
	}
	stopping.Store(true)
	for _, w := range writers {
		w.finish(t)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d writes acknowledged; %d in flight when an owner died and found no next owner", len(acked), unavailable)
	var script strings.Builder
	for id := range acked {
		fmt.Fprintf(&script, `{"id": %q, "action": "cortex.get", "args": {"id": %q}}`+"\n", id, id)
	}
	out := runIn(t, env, script.String(), "--batch", "-", "--data", dir, "--log", logFile)
	lost := 0
	for _, r := range parseResults(t, out.stdout) {
		if !r.OK {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged item %s (%s) is gone: %+v", r.ID, acked[r.ID], r.Error)
			}
		}
	}
	if lost > 0 || out.code != 0 {
		t.Errorf("%d of %d acknowledged writes lost (exit %d)", lost, len(acked), out.code)
	}
}

// writer is an engram --batch process fed cortex.create steps as fast as it
// takes them.
type writer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	n     int
	more  chan struct{} // signalled on every acknowledgement
	ended chan struct{}
}

func startWriter(t *testing.T, env []string, name, dir, logFile string, ack func(id, title string), failed func(result)) *writer {
	t.Helper()
	p := enginetest.Start(t, engramBin, env, "--batch", "-", "--data", dir, "--log", logFile)
	stdin, stdout := p.Stdin, p.Stdout
	w := &writer{cmd: p.Cmd, stdin: stdin, more: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		for i := 0; ; i++ {
			title := fmt.Sprintf("%s-%d", name, i)
			step := fmt.Sprintf(`{"id": %q, "action": "cortex.create", "args": {"type": "goal", "fields": {"title": %q}}}`+"\n", title, title)
			if _, err := io.WriteString(stdin, step); err != nil {
				return
			}
		}
	}()
	go func() {
		defer close(w.ended)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r result
			if json.Unmarshal(sc.Bytes(), &r) != nil {
				continue // a line cut by the kill
			}
			if !r.OK {
				failed(r)
				continue
			}
			var item struct {
				Item struct{ ID, Title string } `json:"item"`
			}
			if json.Unmarshal(r.Result, &item) == nil {
				ack(item.Item.ID, item.Item.Title)
			}
			w.mu.Lock()
			w.n++
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

func (w *writer) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// waitAcks waits until the writer acknowledged n writes.
func (w *writer) waitAcks(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for w.acks() < n {
		select {
		case <-w.more:
		case <-w.ended:
			if w.acks() < n {
				t.Fatalf("writer ended after %d acknowledgements, want %d", w.acks(), n)
			}
		case <-timeout:
			t.Fatalf("writer: %d acknowledgements in 30s, want %d", w.acks(), n)
		}
	}
}

// wait reaps a killed writer.
func (w *writer) wait() {
	<-w.ended
	_ = w.cmd.Wait()
}

// finish stops feeding the writer (closing its input ends its script) and
// waits for it to exit.
func (w *writer) finish(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.ended
	_ = w.cmd.Wait()
}

// dumpStore reads every key and value of a closed data directory, leaving
// out what every open changes (the id epoch, leased sequences) and the
// trace, which tracePart returns apart.
func dumpStore(t *testing.T, dir string) (data map[string]string, trace []string) {
	t.Helper()
	st, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	data = map[string]string{}
	err = st.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Range{}, func(k, v []byte) error {
			key := string(k)
			switch {
			case strings.HasPrefix(key, storage.PrefixSeq), key == string(storage.Key(storage.PrefixMeta, "id_epoch")):
			case strings.HasPrefix(key, storage.PrefixTrace):
				trace = append(trace, string(v))
			case strings.HasPrefix(key, storage.PrefixIndex+"trace/"):
			default:
				data[key] = string(v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return data, trace
}

// tcpDo posts one action over TCP with a bearer token ("" for none) and
// returns the status and the body.
func tcpDo(t *testing.T, addr, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+wire.PathDo, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// newToken runs engram token create and returns the token it printed.
func newToken(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	out := runIn(t, env, "", append([]string{"token", "create", "--data", dir}, args...)...)
	for _, line := range strings.Split(out.stdout, "\n") {
		if strings.HasPrefix(line, "egt_") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("engram token create %v printed no token (exit %d):\n%s%s", args, out.code, out.stdout, out.stderr)
	return ""
}

// TestTCPRefusalsChangeNothing: over TCP, no token, a wrong token, a
// revoked token, a read-only token writing and agent A's token reading B's
// unshared goal are each refused, and the store is unchanged (but for the
// audit entry of the refused read, which the trace keeps).
func TestTCPRefusalsChangeNothing(t *testing.T) {
	env, home := hermeticEnv(t)
	dir := filepath.Join(home, "data")
	logFile := filepath.Join(home, "test.log")
	setup := runIn(t, env, `{"id": "g", "action": "cortex.create", "as": "bob", "args": {"type": "goal", "fields": {"title": "Bob's secret goal"}}}`,
		"--batch", "-", "--data", dir, "--log", logFile)
	if setup.code != 0 {
		t.Fatalf("setup: %s%s", setup.stdout, setup.stderr)
	}
	var goal struct {
		Item struct{ ID string } `json:"item"`
	}
	if err := json.Unmarshal(parseResults(t, setup.stdout)[0].Result, &goal); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, env, dir, "--listen", "127.0.0.1:0", "--log", logFile)
	ann := newToken(t, env, dir, "--agent", "ann")
	reader := newToken(t, env, dir, "--agent", "ann", "--read-only")
	revoked := newToken(t, env, dir, "--agent", "ann")
	id := strings.SplitN(strings.TrimPrefix(revoked, "egt_"), "_", 2)[0]
	if out := runIn(t, env, "", "token", "revoke", id, "--data", dir); out.code != 0 {
		t.Fatalf("token revoke: %s%s", out.stdout, out.stderr)
	}
	// The token works for what it may do.
	if code, body := tcpDo(t, s.tcp, ann, `{"action": "engine.info"}`); code != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("a good token: %d %s", code, body)
	}
	s.stop(t)
	before, traceBefore := dumpStore(t, dir)

	s = startServe(t, env, dir, "--listen", "127.0.0.1:0", "--log", logFile)
	create := `{"action": "cortex.create", "args": {"type": "goal", "fields": {"title": "should not exist"}}}`
	for _, c := range []struct {
		name, token, body string
		status            int
		kind              string
	}{
		{"no token", "", create, 401, "PermissionError"},
		{"a wrong token", ann + "x", create, 401, "PermissionError"},
		{"a revoked token", revoked, create, 401, "PermissionError"},
		{"a read-only token writing", reader, create, 403, "PermissionError"},
		{"acting as another agent", ann, `{"action": "cortex.create", "agent": "bob", "args": {"type": "goal", "fields": {"title": "x"}}}`, 403, "PermissionError"},
		{"ann reading bob's goal", ann, fmt.Sprintf(`{"action": "cortex.get", "args": {"id": %q}}`, goal.Item.ID), 200, "PermissionError"},
	} {
		code, body := tcpDo(t, s.tcp, c.token, c.body)
		if code != c.status || !strings.Contains(body, `"kind":"`+c.kind+`"`) || !strings.Contains(body, `"ok":false`) {
			t.Errorf("%s: %d %s; want %d with a %s", c.name, code, body, c.status, c.kind)
		}
		if strings.Contains(body, "secret goal") {
			t.Errorf("%s: the answer shows bob's goal: %s", c.name, body)
		}
	}
	s.stop(t)
	after, traceAfter := dumpStore(t, dir)
	if len(after) != len(before) {
		t.Errorf("%d records before the refusals, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("record %q changed:\nbefore %s\nafter  %s", k, v, after[k])
		}
	}
	added := len(traceAfter) - len(traceBefore)
	if added != 1 || !strings.Contains(traceAfter[len(traceAfter)-1], "access_denied") {
		t.Errorf("the trace gained %d entries, want the one access_denied of the refused read: %v", added, traceAfter[len(traceBefore):])
	}
}
