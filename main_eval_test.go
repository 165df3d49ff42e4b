package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/evalret"
	"github.com/engram-console/engram/core/history"
)

const tinySet = "testdata/eval/tiny.json"

// TestEvalRetrievalPrintsEachCategoryWithTheBaselineBeside: engram eval
// retrieval prints, split by split, a row per category with the product's
// figures and the baseline's under them, and its progress on stderr.
func TestEvalRetrievalPrintsEachCategoryWithTheBaselineBeside(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "retrieval", tinySet}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"tiny: 1 conversation, 6 turns, 4 questions\n", "R@k: share of questions with an evidence turn in the top k",
		"split dev (3 questions)", "split heldout (1 question)", "split all (4 questions)",
		"category  n  retriever    R@1    R@5   R@10  all@10    MRR  nDCG@10",
		"history: search p50 ", "bm25: search p50 ", "hybrid: search p50 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table does not say %q:\n%s", want, out)
		}
	}
	// Each category's row names it and history; the baseline's row and
	// the hybrid's under it name the retriever only.
	rows := regexp.MustCompile(`(?m)^ *single-hop +1 +history( +\d\.\d{3}){6}\n +bm25( +\d\.\d{3}){6}\n +hybrid( +\d\.\d{3}){6}$`)
	if n := len(rows.FindAllString(out, -1)); n != 2 {
		t.Errorf("%d single-hop row pairs (dev, all), want 2:\n%s", n, out)
	}
	if !strings.Contains(stderr.String(), "engram eval: loaded conversation ana-ben (6 utterances)") {
		t.Errorf("no progress on stderr: %q", stderr.String())
	}
}

// TestEvalRetrievalJSONIsTheActionsResult: --json prints what the
// eval.retrieval action returns for the same arguments (but the wall
// times).
func TestEvalRetrievalJSONIsTheActionsResult(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "retrieval", "--json", "--retriever", "bm25", "--split", "heldout", tinySet}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var printed evalret.Result
	if err := json.Unmarshal(stdout.Bytes(), &printed); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout.String())
	}
	e := openEvalEngine(t, "")
	got, err := conn.Call(context.Background(), e, evalret.ActionRetrieval, evalret.RetrievalArgs{File: tinySet, Retriever: "bm25", Split: "heldout"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || len(printed.Runs) != 1 {
		t.Fatalf("runs: %+v and %+v", got.Runs, printed.Runs)
	}
	got.Runs[0].SearchP50Ms, printed.Runs[0].SearchP50Ms = 0, 0
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(printed)
	if !bytes.Equal(a, b) {
		t.Errorf("--json printed\n%s\nthe action returned\n%s", b, a)
	}
}

// TestEvalRetrievalRefusesBadFlagsAndFiles: exit status 2, saying what is
// wrong and what to do, for a bad flag, a missing or bad file, or no
// evaluation named.
func TestEvalRetrievalRefusesBadFlagsAndFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"conversations": [{"id": "c", "speakers": ["a"], "sessions": [{"id": "s", "date_time": "2024-01-01T00:00:00Z", "turns": [{"id": "t1", "speaker": "a", "text": "hi"}]}]}],
		"questions": [{"id": "q", "conversation": "c", "text": "hi?", "category": "single-hop", "evidence": ["t9"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "retrieval", "--retriever", "vector", tinySet}, `--retriever: "vector" is unknown; use history, bm25, hybrid, hashed, hybrid+hashed or all`},
		{[]string{"eval", "retrieval", "--split", "test", tinySet}, `--split: "test" is unknown; use dev, heldout or all`},
		{[]string{"eval", "retrieval", "testdata/eval/none.json"}, "testdata/eval/none.json: no such file"},
		{[]string{"eval", "retrieval", bad}, `file ` + bad + `: questions[0].evidence[0] "t9" is no turn of the file; name a turn's id`},
		{[]string{"eval", "retrieval"}, "give one evaluation FILE"},
		{[]string{"eval", "recall", tinySet}, `got "recall"; the one evaluation is retrieval`},
		{[]string{"eval", "retrieval", "--top", "5", tinySet}, "flag provided but not defined: -top"},
		{[]string{"eval", "retrieval", "--details", tinySet}, "--details lists every question, which only --json prints; add --json"},
		{[]string{"eval", "retrieval", "--split", "test", "testdata/eval/none.json"}, `--split: "test" is unknown`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v printed %q", c.args, stdout.String())
		}
	}
}

// TestEvalHelpSaysWhatItDoes: engram eval --help prints its usage and
// flags; engram -h lists the command.
func TestEvalHelpSaysWhatItDoes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"Usage: " + evalUsage, "scratch engine", "-retriever", "-split", "-json"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help does not say %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "engram eval retrieval FILE") {
		t.Errorf("engram -h does not list eval (exit %d):\n%s", code, stdout.String())
	}
}

// TestEvalNeverTouchesTheDataDirectory: engram eval retrieval opens no
// data directory (the default one is not even created), and the action
// leaves the engine it runs on as it was, whether it succeeds or not.
func TestEvalNeverTouchesTheDataDirectory(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	t.Setenv("ENGRAM_DATA", data)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"eval", "retrieval", "--retriever", "history", tinySet}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("engram eval made the data directory %s (%v)", data, err)
	}

	e := openEvalEngine(t, filepath.Join(t.TempDir(), "store"))
	ctx := context.Background()
	if _, err := conn.Call(ctx, e, history.ActionWrite, history.WriteRequest{Conversation: "mine", Speaker: "user", Text: "my own words"}); err != nil {
		t.Fatal(err)
	}
	before, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Counts["history"]["conversations"] != 1 || before.Counts["history"]["buffered"] != 1 {
		t.Fatalf("engine.info does not count the conversation written: %v", before.Counts)
	}
	if _, err := conn.Call(ctx, e, evalret.ActionRetrieval, evalret.RetrievalArgs{File: tinySet}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Call(ctx, e, evalret.ActionRetrieval, evalret.RetrievalArgs{File: filepath.Join(t.TempDir(), "none.json")})
	if errs.KindOf(err) != errs.Validation || errs.As(err).Details["field"] != "file" {
		t.Errorf("a missing file: %v", err)
	}
	after, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(before.Counts)
	b2, _ := json.Marshal(after.Counts)
	if !bytes.Equal(b1, b2) {
		t.Errorf("the evaluation changed the store:\n%s\n%s", b1, b2)
	}
	list, err := conn.Call(ctx, e, history.ActionList, history.ListArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(list); strings.Contains(string(got), "ana-ben") {
		t.Errorf("the set's conversation is in the engine's history: %s", got)
	}
}

// openEvalEngine opens engram as it runs, on dir (in memory when "").
func openEvalEngine(t *testing.T, dir string) *core.Engine {
	t.Helper()
	e, err := core.Open(engineOptions(core.Options{InMemory: dir == "", DataDir: dir, Clock: clock.NewFixed(time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)), IDSeed: "eval tests"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}
