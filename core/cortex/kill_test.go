package cortex

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	enginetest.RemoveBinary()
	os.Exit(code)
}

// Issue 17: the query index stays exact after a kill -9. A store is saved
// with its snapshot; then a real engram process changes items in it
// (creates, updates, deletes, shares) and is killed with SIGKILL mid-run.
// Reopened, the index loads the snapshot, reads again what changed after
// it, and every query answers what a brute-force filter over the stored
// items answers; every change whose result engram printed is there.
func TestTheQueryIndexIsExactAfterAKill(t *testing.T) {
	withSnapshotsOfAnySize(t)
	dir := filepath.Join(t.TempDir(), "data")
	e, closeEngine, _ := openDurable(t, dir)
	for i := range 60 {
		e.create([]call{agentA, agentB}[i%2], "goal", fmt.Sprintf("seed-%02d", i),
			obj{"title": "alpha seed", "priority": Priorities[i%4], "tags": []string{"t1"}})
	}
	closeEngine()

	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "ENGRAM_LOG=" + filepath.Join(home, "engram.log")}
	p := enginetest.Start(t, enginetest.Binary(t), env, "--batch", "-", "--data", dir)
	go func() {
		for i := 0; i < 100_000; i++ {
			var step any
			seed := fmt.Sprintf("seed-%02d", i%60)
			switch i % 4 {
			case 0:
				step = obj{"id": fmt.Sprint(i), "action": "cortex.create", "as": "agent_a",
					"args": obj{"type": "action", "id": fmt.Sprintf("k-%05d", i), "fields": obj{"title": fmt.Sprintf("alps %d", i), "tags": []string{"t1"}}}}
			case 1:
				step = obj{"id": fmt.Sprint(i), "action": "cortex.update", "as": []string{"agent_a", "agent_b"}[i%60%2],
					"args": obj{"id": seed, "updates": obj{"status": Statuses[i/4%len(Statuses)], "priority": Priorities[i/8%4]}}}
			case 2:
				step = obj{"id": fmt.Sprint(i), "action": "cortex.share", "as": "agent_a",
					"args": obj{"id": fmt.Sprintf("k-%05d", i-2), "principal": "agent_b", "permissions": []string{"read"}}}
			default:
				step = obj{"id": fmt.Sprint(i), "action": "cortex.delete", "as": "agent_a", "args": obj{"id": fmt.Sprintf("k-%05d", i-3)}}
			}
			line, _ := json.Marshal(step)
			if _, err := p.Stdin.Write(append(line, '\n')); err != nil {
				return // killed
			}
		}
		_ = p.Stdin.Close()
	}()
	acked := map[string]bool{} // created ids whose result was printed
	killed := false
	sc := bufio.NewScanner(p.Stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 0; sc.Scan(); n++ {
		var res struct {
			Action string `json:"action"`
			OK     bool   `json:"ok"`
			Result struct {
				Item struct {
					ID string `json:"id"`
				} `json:"item"`
			} `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil || !res.OK {
			t.Fatalf("result %s (%v)\nstderr: %s", sc.Bytes(), err, p.Stderr)
		}
		if res.Action == "cortex.create" {
			acked[res.Result.Item.ID] = true
		}
		if n == 400 && !killed {
			if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	_, _ = io.Copy(io.Discard, p.Stdout)
	var exit *exec.ExitError
	if err := p.Cmd.Wait(); !killed || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("engram was not killed mid-run: %v\nstderr: %s", err, p.Stderr)
	}

	e, _, _ = openDurable(t, dir)
	if src, replayed := e.indexSource(); src != "snapshot" || replayed < 100 {
		t.Fatalf("reopened from %q with %d items read again; want the snapshot and every item changed since", src, replayed)
	}
	all := e.allItems()
	stored := map[string]bool{}
	for _, it := range all {
		stored[it.ID] = true
	}
	for id := range acked {
		if !stored[id] {
			t.Errorf("item %s was acknowledged, then lost", id)
		}
	}
	for _, who := range []call{agentA, agentB} {
		for _, q := range []Query{
			{Limit: 50}, {IncludeDeleted: true, Limit: 100}, {Status: []string{"active", "blocked"}, Priority: []string{"critical", "low"}, Limit: 9},
			{Type: "action", Text: "alp", Tags: []string{"t1"}, Limit: 20}, {Type: "goal", IncludeDeleted: true, Limit: 7},
		} {
			checkAgainstBruteForce(t, e, who, q, all)
		}
	}
}
