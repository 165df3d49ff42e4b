package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A script whose cortex.create carries an idempotency key, run twice on one
// data directory (a client retrying after its owner went away), creates one
// goal, and the second run prints the first run's result.
func TestScriptWithIdempotencyKeyRunTwiceCreatesOneItem(t *testing.T) {
	env, home := hermeticEnv(t)
	data := filepath.Join(home, "data")
	script := writeScript(t, "create.jsonl",
		`{"id": "g", "action": "cortex.create", "idempotency_key": "create-goal-1", "args": {"type": "goal", "fields": {"title": "Ship it"}}}`+"\n")
	first := runIn(t, env, "", "--batch", script, "--data", data)
	second := runIn(t, env, "", "--batch", script, "--data", data)
	for i, o := range []outcome{first, second} {
		if o.code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, o.code, o.stdout, o.stderr)
		}
	}
	a, b := parseResults(t, first.stdout), parseResults(t, second.stdout)
	if len(a) != 1 || len(b) != 1 || string(a[0].Result) != string(b[0].Result) {
		t.Errorf("the second run's result:\n%s\nwant the first's:\n%s", second.stdout, first.stdout)
	}
	count := writeScript(t, "count.jsonl", `{"id": "q", "action": "cortex.query", "args": {"type": "goal"}}`+"\n")
	o := runIn(t, env, "", "--batch", count, "--data", data)
	res := parseResults(t, o.stdout)
	var q struct {
		Items []json.RawMessage `json:"items"`
	}
	if len(res) != 1 || json.Unmarshal(res[0].Result, &q) != nil || len(q.Items) != 1 {
		t.Errorf("goals after two runs:\n%s\nwant one", o.stdout)
	}
	if !strings.Contains(string(a[0].Result), "Ship it") {
		t.Errorf("the result: %s", a[0].Result)
	}
}
