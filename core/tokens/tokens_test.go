package tokens_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/tokens"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/storage"
)

// counting is a repeatable random source: 0, 1, 2, ... byte by byte.
type counting struct{ n byte }

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 0, time.UTC)

func open(t *testing.T) (*core.Engine, *clock.Fixed) {
	t.Helper()
	clk := clock.NewFixed(t0)
	e, err := core.Open(core.Options{InMemory: true, Clock: clk, IDSeed: "tokens", Random: &counting{n: 0xa5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing: %v", err)
		}
	})
	return e, clk
}

func create(t *testing.T, e *core.Engine, agent string, readOnly bool) tokens.CreateResult {
	t.Helper()
	res, err := conn.Call(context.Background(), e, tokens.ActionCreate, tokens.CreateArgs{Agent: agent, ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCreatedTokenAuthenticatesAsItsAgent(t *testing.T) {
	e, _ := open(t)
	res := create(t, e, "alice", false)
	if !strings.HasPrefix(res.Token, "egt_"+res.ID+"_") || len(res.ID) != 12 || len(res.Token) != len("egt_")+12+1+43 {
		t.Fatalf("token %q, id %q: not egt_<12 hex>_<43 base64url>", res.Token, res.ID)
	}
	if !res.CreatedAt.Equal(t0) || res.Agent != "alice" || res.ReadOnly {
		t.Errorf("result %+v", res)
	}
	p, err := tokens.Of(e.Env()).Authenticate(context.Background(), res.Token)
	if err != nil {
		t.Fatal(err)
	}
	if p != (tokens.Principal{Agent: "alice"}) {
		t.Errorf("principal %+v, want alice, read-write", p)
	}
}

func TestReadOnlyTokenAuthenticatesReadOnly(t *testing.T) {
	e, _ := open(t)
	res := create(t, e, "bob", true)
	p, err := tokens.Of(e.Env()).Authenticate(context.Background(), res.Token)
	if err != nil {
		t.Fatal(err)
	}
	if p != (tokens.Principal{Agent: "bob", ReadOnly: true}) {
		t.Errorf("principal %+v, want bob, read-only", p)
	}
}

func TestWrongOrMalformedTokensAreRefusedWithoutEchoingThem(t *testing.T) {
	e, _ := open(t)
	res := create(t, e, "alice", false)
	secret := res.Token[len("egt_")+13:]
	wrong := "A" + secret[1:]
	if wrong == secret {
		wrong = "B" + secret[1:]
	}
	other := create(t, e, "bob", false)
	cases := map[string]string{
		"wrong secret for a real id": "egt_" + res.ID + "_" + wrong,
		"another token's secret":     "egt_" + res.ID + "_" + other.Token[len("egt_")+13:],
		"unknown id":                 "egt_0123456789ab_" + secret,
		"no prefix":                  res.Token[len("egt_"):],
		"empty":                      "",
		"short secret":               res.Token[:len(res.Token)-1],
		"upper-case id":              "egt_" + strings.ToUpper(res.ID) + "_" + secret,
		"padding":                    res.Token + "=",
	}
	for name, tok := range cases {
		_, err := tokens.Of(e.Env()).Authenticate(context.Background(), tok)
		if !errors.Is(err, tokens.ErrInvalid) || errs.KindOf(err) != errs.Permission {
			t.Errorf("%s: %v, want a PermissionError wrapping ErrInvalid", name, err)
			continue
		}
		if tok != "" && strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error repeats the token: %v", name, err)
		}
	}
}

func TestRevokedTokenIsRefused(t *testing.T) {
	e, clk := open(t)
	res := create(t, e, "alice", false)
	clk.Advance(time.Hour)
	rev, err := conn.Call(context.Background(), e, tokens.ActionRevoke, tokens.RevokeArgs{ID: res.ID})
	if err != nil {
		t.Fatal(err)
	}
	if rev.ID != res.ID || !rev.RevokedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("revoke result %+v", rev)
	}
	_, err = tokens.Of(e.Env()).Authenticate(context.Background(), res.Token)
	if !errors.Is(err, tokens.ErrRevoked) || strings.Contains(err.Error(), res.Token) {
		t.Errorf("authenticating a revoked token: %v, want ErrRevoked without the token", err)
	}
	// Again: a ConflictError carrying the token as it stands.
	_, err = conn.Call(context.Background(), e, tokens.ActionRevoke, tokens.RevokeArgs{ID: res.ID})
	if errs.KindOf(err) != errs.Conflict {
		t.Errorf("revoking twice: %v, want ConflictError", err)
	}
	_, err = conn.Call(context.Background(), e, tokens.ActionRevoke, tokens.RevokeArgs{ID: "0123456789ab"})
	if errs.KindOf(err) != errs.NotFound {
		t.Errorf("revoking an unknown id: %v, want NotFoundError", err)
	}
}

func TestListShowsTokensWithoutSecretsAndNothingStoredHoldsOne(t *testing.T) {
	e, clk := open(t)
	a := create(t, e, "alice", false)
	clk.Advance(time.Second)
	b := create(t, e, "bob", true)
	list, err := e.Do(context.Background(), conn.Request{Action: tokens.ActionList.Name()})
	if err != nil {
		t.Fatal(err)
	}
	var got tokens.ListResult
	res, err := conn.Call(context.Background(), e, tokens.ActionList, action.None{})
	if err != nil {
		t.Fatal(err)
	}
	got = res
	if len(got.Tokens) != 2 || got.Tokens[0].ID != a.ID || got.Tokens[1].ID != b.ID || !got.Tokens[1].ReadOnly ||
		got.Tokens[0].CreatedBy != core.DefaultAgent || got.Tokens[0].RevokedAt != nil {
		t.Errorf("token.list: %+v", got)
	}
	for _, tok := range []tokens.CreateResult{a, b} {
		secret := tok.Token[len("egt_")+13:]
		if bytes.Contains(list, []byte(secret)) {
			t.Errorf("token.list shows a secret: %s", list)
		}
		// Nothing anywhere in the store holds the secret (the trace
		// included).
		err := e.Env().Store.View(func(tx *storage.Tx) error {
			return tx.Scan(storage.Range{}, func(k, v []byte) error {
				if bytes.Contains(v, []byte(secret)) || bytes.Contains(k, []byte(secret)) {
					t.Errorf("key %q holds a token's secret", k)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tr, err := conn.Call(context.Background(), e, core.ActionTraceList, trace.ListArgs{Kind: "token.create"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 {
		t.Errorf("trace: %d token.create entries, want 2", len(tr.Entries))
	}
}

func TestOnlyTheOperatorManagesTokens(t *testing.T) {
	e, _ := open(t)
	tok := create(t, e, "alice", false)
	for name, args := range map[string]string{
		"token.create": `{"agent":"mallory"}`,
		"token.list":   `{}`,
		"token.revoke": `{"id":"` + tok.ID + `"}`,
	} {
		_, err := e.Do(context.Background(), conn.Request{Action: name, Args: []byte(args), Principal: "alice"})
		if errs.KindOf(err) != errs.Permission {
			t.Errorf("alice runs %s: %v, want PermissionError", name, err)
		}
	}
	if _, err := tokens.Of(e.Env()).Authenticate(context.Background(), tok.Token); err != nil {
		t.Errorf("the token after refused revocation: %v", err)
	}
}

func TestCreateChecksTheAgent(t *testing.T) {
	e, _ := open(t)
	for _, args := range []string{`{}`, `{"agent":""}`, `{"agent":"a\u0007b"}`} {
		_, err := e.Do(context.Background(), conn.Request{Action: "token.create", Args: []byte(args)})
		var ee *errs.Error
		if !errors.As(err, &ee) || ee.Kind != errs.Validation || ee.Details["field"] != "agent" {
			t.Errorf("token.create %s: %v, want a ValidationError naming agent", args, err)
		}
	}
	list, err := conn.Call(context.Background(), e, tokens.ActionList, action.None{})
	if err != nil || len(list.Tokens) != 0 {
		t.Errorf("after bad input: %+v, %v; want no token", list, err)
	}
}

func TestCheckFindsADamagedTokenRecord(t *testing.T) {
	e, _ := open(t)
	create(t, e, "alice", false)
	found, err := e.Env().Check(context.Background())
	if err != nil || len(found["tokens"]) != 0 {
		t.Fatalf("a healthy store: %v, %v", found["tokens"], err)
	}
	err = e.Env().Store.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Set(storage.Key(storage.PrefixToken, "zz"), []byte(`{"id":"zz","agent":"x","secret_sha256":"00"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	found, err = e.Env().Check(context.Background())
	if err != nil || len(found["tokens"]) != 1 {
		t.Errorf("a damaged record: %v, %v; want one problem", found["tokens"], err)
	}
}
