package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/tokens"
	"github.com/engram-console/engram/storage"
)

// engramToken runs `engram token ARGS --data dir` in this process.
func engramToken(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"token"}, args...), "--data", dir), &stdout, &stderr)
	return outcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// authenticate opens dir's engine and checks tok as a server would.
func authenticate(t *testing.T, dir, tok string) (tokens.Principal, error) {
	t.Helper()
	e, err := core.Open(engineOptions(core.Options{DataDir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	return tokens.Of(e.Env()).Authenticate(context.Background(), tok)
}

// createToken runs engram token create and returns the token it printed.
func createToken(t *testing.T, dir string, args ...string) string {
	t.Helper()
	o := engramToken(t, dir, append([]string{"create"}, args...)...)
	if o.code != exitOK {
		t.Fatalf("engram token create %v: exit %d\n%s", args, o.code, o.stderr)
	}
	tok := strings.TrimSuffix(o.stdout, "\n")
	if !strings.HasPrefix(tok, tokens.Prefix) || strings.Contains(tok, "\n") {
		t.Fatalf("engram token create printed %q, want the token alone on its line", o.stdout)
	}
	if !strings.Contains(o.stderr, "shown once; store it now") || strings.Contains(o.stderr, tok) {
		t.Errorf("standard error: %q, want the note without the token", o.stderr)
	}
	return tok
}

func TestTokenCommandsCreateListAndRevoke(t *testing.T) {
	dir := t.TempDir()
	tok := createToken(t, dir, "--agent", "alice")
	id := tok[len(tokens.Prefix) : len(tokens.Prefix)+12]
	secret := tok[len(tokens.Prefix)+13:]

	list := engramToken(t, dir, "list")
	if list.code != exitOK || !strings.Contains(list.stdout, id) || !strings.Contains(list.stdout, "alice") || strings.Contains(list.stdout, secret) {
		t.Fatalf("engram token list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	if !strings.HasPrefix(list.stdout, "ID") || !strings.Contains(list.stdout, "REVOKED") {
		t.Errorf("engram token list: no table header:\n%s", list.stdout)
	}
	p, err := authenticate(t, dir, tok)
	if err != nil || p != (tokens.Principal{Agent: "alice"}) {
		t.Fatalf("authenticating the new token: %+v, %v", p, err)
	}
	wrong := tok[:len(tok)-2] + "AA"
	if wrong == tok {
		wrong = tok[:len(tok)-2] + "BA"
	}
	if _, err := authenticate(t, dir, wrong); !errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("a wrong secret for a real id: %v, want ErrInvalid", err)
	}

	rev := engramToken(t, dir, "revoke", id)
	if rev.code != exitOK || !strings.Contains(rev.stdout, "revoked token "+id) {
		t.Fatalf("engram token revoke: exit %d\n%s%s", rev.code, rev.stdout, rev.stderr)
	}
	if _, err := authenticate(t, dir, tok); !errors.Is(err, tokens.ErrRevoked) {
		t.Errorf("the revoked token: %v, want ErrRevoked", err)
	}
	if again := engramToken(t, dir, "revoke", id); again.code != exitFailed || !strings.Contains(again.stderr, "revoked already") {
		t.Errorf("revoking twice: exit %d, %q; want 1 and why", again.code, again.stderr)
	}
	var listed tokens.ListResult
	js := engramToken(t, dir, "list", "--json")
	if err := json.Unmarshal([]byte(js.stdout), &listed); err != nil || len(listed.Tokens) != 1 || listed.Tokens[0].RevokedAt == nil {
		t.Errorf("engram token list --json: %v\n%s", err, js.stdout)
	}

	// Nothing in the store holds the secret, in a key or a value.
	s, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	keys := 0
	err = s.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Range{}, func(k, v []byte) error {
			keys++
			if bytes.Contains(k, []byte(secret)) || bytes.Contains(v, []byte(secret)) {
				t.Errorf("key %q holds the token's secret", k)
			}
			return nil
		})
	})
	if err != nil || keys == 0 {
		t.Fatalf("scanning the store: %d keys, %v", keys, err)
	}
}

func TestReadOnlyTokenFromTheCommandAuthenticatesReadOnly(t *testing.T) {
	dir := t.TempDir()
	tok := createToken(t, dir, "--agent", "bob", "--read-only")
	p, err := authenticate(t, dir, tok)
	if err != nil || p != (tokens.Principal{Agent: "bob", ReadOnly: true}) {
		t.Errorf("authenticating: %+v, %v; want bob, read-only", p, err)
	}
}

func TestTokenCommandUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"create"},                          // no --agent
		{"create", "--agent", "a", "extra"}, // an argument too many
		{"revoke"},                          // no id
		{"rotate"},                          // no such subcommand
		{"list", "--bogus"},
	} {
		if o := engramToken(t, dir, args...); o.code != exitUsage || o.stderr == "" {
			t.Errorf("engram token %v: exit %d, %q; want 2 and why", args, o.code, o.stderr)
		}
	}
	if o := engramToken(t, dir, "revoke", "0123456789ab"); o.code != exitFailed || !strings.Contains(o.stderr, "no such token") {
		t.Errorf("revoking an unknown id: exit %d, %q", o.code, o.stderr)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "create", "-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "--read-only") {
		t.Errorf("engram token create -h: exit %d\n%s", code, stdout.String())
	}
}

func TestCheckPassesWithTokensAndIdempotencyRecords(t *testing.T) {
	dir := t.TempDir()
	createToken(t, dir, "--agent", "alice")
	script := writeScript(t, "keyed.jsonl", `{"action": "cortex.create", "idempotency_key": "k-1", "args": {"type": "goal", "fields": {"title": "x"}}}`+"\n")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--batch", script, "--data", dir, "--log", filepath.Join(t.TempDir(), "log")}, &stdout, &stderr); code != exitOK {
		t.Fatalf("the keyed script: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"check", "--data", dir}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "tokens") {
		t.Errorf("engram check: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
