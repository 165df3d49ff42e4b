//go:build !noplanning

// plan.create and plan.execute are the actions whose arguments may name
// files; without the planner there is nothing to refuse here.

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A TCP client is an agent on another machine, not the person at the
// owner's: no argument of its requests may name a file the owner would
// read or write (plan.create's file, plan.execute's and plan.resume's
// checkpoint path). Each is refused with nothing run and no file touched;
// the same requests without a path run.
func TestTCPRequestsMayNotNameFilesOnTheOwnersMachine(t *testing.T) {
	o := newProtocolOwner(t)
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(planFile, []byte("goal: read me\nsubtasks:\n  - id: a\n    description: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkpoint := filepath.Join(dir, "written-by-a-token.json")
	token := "Bearer egt_3c9e1f0a7b52_bzxcnnkd0vwUiQ0DhXSGovyQt8EIjlDLvGTi0YOyX-I" // ci's
	send := func(body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, o.tcp.URL+"/v1/do", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", token)
		resp, err := o.tcp.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(out)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	for _, body := range []string{
		`{"action": "plan.create", "args": {"id": "from-file", "file": ` + q(planFile) + `}}`,
		`{"action": "plan.execute", "args": {"plan_id": "p", "checkpoint": ` + q(checkpoint) + `}}`,
		`{"action": "plan.resume", "args": {"plan_id": "p", "checkpoint": ` + q(checkpoint) + `}}`,
	} {
		status, out := send(body)
		if status != http.StatusForbidden || !strings.Contains(out, "PermissionError") || !strings.Contains(out, "name a file") {
			t.Errorf("%s over TCP: %d %s, want 403 naming the file rule", body, status, out)
		}
	}
	if _, err := os.Stat(checkpoint); !os.IsNotExist(err) {
		t.Errorf("a token's request wrote %s (%v)", checkpoint, err)
	}
	// Without a path they are ordinary requests.
	if status, out := send(`{"action": "plan.create", "args": {"id": "p", "goal": "g", "subtasks": [{"id": "a", "description": "x", "action": {"name": "task.noop"}}]}}`); status != http.StatusOK || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("plan.create without a file: %d %s", status, out)
	}
	if status, out := send(`{"action": "plan.execute", "args": {"plan_id": "p", "checkpoint": true}}`); status != http.StatusOK || !strings.Contains(out, `"ok":true`) {
		t.Errorf("plan.execute with checkpoint true: %d %s", status, out)
	}
	if status, out := send(`{"action": "plan.get", "args": {"plan_id": "from-file"}}`); !strings.Contains(out, "NotFound") {
		t.Errorf("the refused plan.create made a plan: %d %s", status, out)
	}
}
