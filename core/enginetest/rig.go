package enginetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clock"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// Who is who runs an action in a test: a principal ("" for the engine's
// agent) and the turn it belongs to ("" for none).
type Who struct{ As, Turn string }

// Runner runs one request: an engine's Do, any conn.Conn's, or a bare
// registry's (see ForRegistry).
type Runner func(ctx context.Context, req conn.Request) (json.RawMessage, error)

// Rig is the one test rig every package's tests share: Try, Do and Fail
// over a Runner. Packages embed it in their own rig and add what only they
// need (a clock, the subsystem's Go API).
type Rig struct {
	T   testing.TB
	Run Runner
}

// ForConn is a rig running actions through c (an engine, or a client).
func ForConn(t testing.TB, c conn.Conn) Rig { return Rig{T: t, Run: c.Do} }

// ForRegistry is a rig running actions straight through a registry, the way
// the engine does, for packages whose tests cannot build an engine (the
// engine imports them).
func ForRegistry(t testing.TB, reg *action.Registry, clk clock.Clock) Rig {
	return Rig{T: t, Run: func(ctx context.Context, req conn.Request) (json.RawMessage, error) {
		a, err := reg.Lookup(req.Action)
		if err != nil {
			return nil, err
		}
		return a.Invoke(ctx, action.Call{Principal: req.Principal, Turn: req.Turn, Clock: clk}, req.Args)
	}}
}

// Try runs an action as who; args is a JSON string or a Go value.
func (r Rig) Try(who Who, name string, args any) (json.RawMessage, error) {
	r.T.Helper()
	return r.Run(context.Background(), conn.Request{Action: name, Args: Args(r.T, args), Principal: who.As, Turn: who.Turn})
}

// Do runs an action that must succeed, decoding its result into out (if
// not nil).
func (r Rig) Do(who Who, name string, args any, out any) json.RawMessage {
	r.T.Helper()
	res, err := r.Try(who, name, args)
	if err != nil {
		r.T.Fatalf("%s %s%s: %s", name, Short(args), by(who), Short(err))
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			r.T.Fatalf("%s: decoding %s: %v", name, Short(string(res)), err)
		}
	}
	return res
}

// Fail runs an action that must fail with kind, its message holding every
// fragment, and returns the error.
func (r Rig) Fail(who Who, name string, args any, kind errs.Kind, fragments ...string) *errs.Error {
	r.T.Helper()
	res, err := r.Try(who, name, args)
	return CheckErr(r.T, name+by(who), args, res, err, kind, fragments...)
}

// Call runs an action that must succeed and returns its result decoded
// as an R: the typed form of Do.
func Call[R any](r Rig, who Who, name string, args any) R {
	r.T.Helper()
	var out R
	r.Do(who, name, args, &out)
	return out
}

func by(who Who) string {
	if who.As == "" {
		return ""
	}
	return " by " + who.As
}
