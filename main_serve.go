package main

import (
	"context"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/server"
	"github.com/engram-console/engram/core/tokens"
)

// tokenAuthenticator checks the bearer tokens of TCP requests against the
// tokens stored in the owner's engine.
func tokenAuthenticator(engine *core.Engine) server.Authenticator {
	return tokenAuth{tokens.Of(engine.Env())}
}

// tokenAuth adapts core/tokens to the server's Authenticator.
type tokenAuth struct{ t *tokens.Tokens }

func (a tokenAuth) Authenticate(ctx context.Context, token string) (server.Principal, error) {
	p, err := a.t.Authenticate(ctx, token)
	return server.Principal(p), err
}
