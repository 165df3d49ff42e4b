package core

import (
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// token.create's result is the token itself: an idempotency key would keep
// it, in the clear, in the key's record (and hand it out again on replay).
func TestAnIdempotencyKeyNeverKeepsATokensSecret(t *testing.T) {
	e, _ := newFullEngine(t)
	_, err := keyed(e, "", "tok-1", "token.create", `{"agent":"ci"}`)
	if errs.KindOf(err) != errs.Validation {
		t.Fatalf("token.create with an idempotency key: %v, want a ValidationError", err)
	}
	if _, err := keyed(e, "", "", "token.create", `{"agent":"ci"}`); err != nil {
		t.Fatalf("token.create without a key: %v", err)
	}
}
