// Package tokens is engram's bearer tokens: what a client over TCP shows to
// act as an agent (issue 15, item 4). A token is
//
//	egt_<ID>_<SECRET>
//
// ID is 12 lowercase hex digits and SECRET 32 random bytes in unpadded
// base64url, both from a cryptographic random source: never from the
// engine's id generator or its clock, which are predictable by design. The
// store keeps only the SHA-256 of SECRET (its text), with the token's agent,
// whether it is read-only, when and by whom it was made, and when it was
// revoked: the token itself is shown once, by token.create, and never again.
//
// Managing tokens (token.create, token.list, token.revoke) is for the
// engine's operator, the default agent (access.LegacyOwner), as tuning the
// episodic linker is: a token for an agent is the power to act as it.
// Authenticate checks a token presented by a client.
package tokens

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Prefix starts every token.
const Prefix = "egt_"

const (
	idBytes     = 6  // 12 hex digits
	secretBytes = 32 // 43 base64url characters
)

// Options configure the tokens subsystem.
type Options struct {
	// Random is where ids and secrets come from: crypto/rand.Reader when
	// nil. Tests and the documentation's examples give a fixed one, so that
	// what they print repeats; nothing else should.
	Random io.Reader
}

// Tokens makes, lists, revokes and checks the tokens of one engine's store.
type Tokens struct {
	env    *kit.Env
	random io.Reader
}

// Subsystem registers the token.* actions and the tokens' checker on an
// engine: add it to core.Options.Subsystems (core.DefaultSubsystems does).
func Subsystem(opts Options) func(env *kit.Env) error {
	return func(env *kit.Env) error {
		t := newTokens(env, opts)
		reg := env.Actions
		ActionCreate.Register(reg, action.Spec{Summary: "A new bearer token for an agent, shown once (operator only)", Secret: true}, t.create)
		ActionList.Register(reg, action.Spec{Summary: "Every token, without its secret (operator only)", ReadOnly: true}, t.list)
		ActionRevoke.Register(reg, action.Spec{Summary: "Revoke a token: it authenticates no longer (operator only)"}, t.revoke)
		env.AddChecker("tokens", t.check)
		return nil
	}
}

// Of returns the Tokens of the engine env belongs to (core.Engine.Env()),
// for authenticating clients: Authenticate reads the store only, so any
// number of these may be made, whether or not the subsystem is registered.
func Of(env *kit.Env) *Tokens { return newTokens(env, Options{}) }

func newTokens(env *kit.Env, opts Options) *Tokens {
	r := opts.Random
	if r == nil {
		r = rand.Reader
	}
	return &Tokens{env: env, random: r}
}

// record is what the store keeps of a token, at token/<id>.
type record struct {
	ID       string `json:"id"`
	Agent    string `json:"agent"`
	ReadOnly bool   `json:"read_only"`
	// SecretSHA256 is the hex SHA-256 of the secret's text: all that is
	// kept of it.
	SecretSHA256 string     `json:"secret_sha256"`
	CreatedAt    time.Time  `json:"created_at"`
	CreatedBy    string     `json:"created_by"`
	RevokedAt    *time.Time `json:"revoked_at"`
}

func (r record) info() Info {
	return Info{ID: r.ID, Agent: r.Agent, ReadOnly: r.ReadOnly, CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy, RevokedAt: r.RevokedAt}
}

func key(id string) []byte { return storage.Key(storage.PrefixToken, id) }

// CreateArgs is token.create's arguments.
type CreateArgs struct {
	Agent    string `json:"agent" arg:"required" help:"the agent the token acts as"`
	ReadOnly bool   `json:"read_only,omitempty" help:"the token may run read-only actions only"`
}

// CreateResult is token.create's result. Token is the whole token, shown
// here once: the store keeps only its secret's hash.
type CreateResult struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	Agent     string    `json:"agent"`
	ReadOnly  bool      `json:"read_only"`
	CreatedAt time.Time `json:"created_at"`
}

// Info describes a stored token (never its secret).
type Info struct {
	ID        string     `json:"id"`
	Agent     string     `json:"agent"`
	ReadOnly  bool       `json:"read_only"`
	CreatedAt time.Time  `json:"created_at"`
	CreatedBy string     `json:"created_by"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// ListResult is token.list's result: every token, oldest first.
type ListResult struct {
	Tokens []Info `json:"tokens"`
}

// RevokeArgs is token.revoke's arguments.
type RevokeArgs struct {
	ID string `json:"id" arg:"required" help:"the token's id (the 12 hex digits after egt_)"`
}

// RevokeResult is token.revoke's result.
type RevokeResult struct {
	ID        string    `json:"id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// operatorOnly refuses every principal but the engine's operator. The
// refusal carries an access.Denial, so that it is traced as one.
func (t *Tokens) operatorOnly(call action.Call, name string) error {
	if call.Principal == access.LegacyOwner {
		return nil
	}
	d := &access.Denial{Event: "access_denied", PrincipalID: call.Principal, ResourceType: "tokens", ResourceID: "tokens",
		AttemptedOperation: access.Write, Timestamp: t.env.Clock.Now(), ACLChecked: true, Owner: access.LegacyOwner}
	return errs.New(errs.Permission, "%s may not run %s: a token is the power to act as its agent; only the default agent (%s) manages tokens%w",
		call.Principal, name, access.LegacyOwner, quiet{d}).With("principal", call.Principal).With("operation", access.Write)
}

// quiet wraps an error for its type without adding to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

func (t *Tokens) create(ctx context.Context, call action.Call, args CreateArgs) (CreateResult, error) {
	if err := t.operatorOnly(call, ActionCreate.Name()); err != nil {
		return CreateResult{}, t.env.TraceFailure(ctx, call, err)
	}
	if args.Agent == "" {
		return CreateResult{}, kit.Validation("agent", "is required: the agent the token acts as")
	}
	if err := kit.CheckName("agent", args.Agent, ""); err != nil {
		return CreateResult{}, err
	}
	// Drawn before the transaction, which may run more than once.
	idRaw := make([]byte, idBytes)
	secretRaw := make([]byte, secretBytes)
	if _, err := io.ReadFull(t.random, idRaw); err != nil {
		return CreateResult{}, errs.New(errs.Internal, "token.create: reading random bytes: %w", err)
	}
	if _, err := io.ReadFull(t.random, secretRaw); err != nil {
		return CreateResult{}, errs.New(errs.Internal, "token.create: reading random bytes: %w", err)
	}
	id := hex.EncodeToString(idRaw)
	secret := base64.RawURLEncoding.EncodeToString(secretRaw)
	rec := record{ID: id, Agent: args.Agent, ReadOnly: args.ReadOnly, SecretSHA256: hashSecret(secret),
		CreatedAt: t.env.Clock.Now(), CreatedBy: call.Principal}
	err := t.env.Update(ctx, func(tx *kit.Txn) error {
		if taken, err := tx.Has(key(id)); err != nil {
			return err
		} else if taken {
			// 48 random bits: a repeat is as good as impossible, and
			// never overwrites a token.
			return errs.New(errs.Conflict, "token.create: the random id %s is taken already; run it again", id)
		}
		if err := tx.SetJSON(key(id), rec); err != nil {
			return err
		}
		mode := ""
		if args.ReadOnly {
			mode = " (read-only)"
		}
		_, err := tx.Trace(call, "token.create", fmt.Sprintf("token %s created for agent %s%s", id, args.Agent, mode),
			map[string]any{"id": id, "agent": args.Agent, "read_only": args.ReadOnly})
		return err
	})
	if err != nil {
		return CreateResult{}, err
	}
	return CreateResult{ID: id, Token: Prefix + id + "_" + secret, Agent: rec.Agent, ReadOnly: rec.ReadOnly, CreatedAt: rec.CreatedAt}, nil
}

func (t *Tokens) list(ctx context.Context, call action.Call, _ action.None) (ListResult, error) {
	if err := t.operatorOnly(call, ActionList.Name()); err != nil {
		return ListResult{}, t.env.TraceFailure(ctx, call, err)
	}
	out := ListResult{Tokens: []Info{}}
	err := t.env.Store.View(func(tx *storage.Tx) error {
		out.Tokens = out.Tokens[:0]
		return tx.Scan(storage.Prefix([]byte(storage.PrefixToken)), func(k, v []byte) error {
			rec, err := decode(k, v)
			if err != nil {
				return err
			}
			out.Tokens = append(out.Tokens, rec.info())
			return nil
		})
	})
	if err != nil {
		return ListResult{}, err
	}
	// Oldest first; ids break ties (they are random, so the order of
	// tokens made at one instant is arbitrary but stable).
	sortInfos(out.Tokens)
	return out, nil
}

func (t *Tokens) revoke(ctx context.Context, call action.Call, args RevokeArgs) (RevokeResult, error) {
	if err := t.operatorOnly(call, ActionRevoke.Name()); err != nil {
		return RevokeResult{}, t.env.TraceFailure(ctx, call, err)
	}
	if args.ID == "" {
		return RevokeResult{}, kit.Validation("id", "is required: the token's id, as token.list shows it")
	}
	if err := kit.CheckName("id", args.ID, ""); err != nil {
		return RevokeResult{}, err
	}
	var out RevokeResult
	err := t.env.Update(ctx, func(tx *kit.Txn) error {
		v, err := tx.Get(key(args.ID))
		if errors.Is(err, storage.ErrNotFound) {
			return errs.New(errs.NotFound, "token %s: no such token (token.list lists them)", args.ID).With("id", args.ID)
		}
		if err != nil {
			return err
		}
		rec, err := decode(key(args.ID), v)
		if err != nil {
			return err
		}
		if rec.RevokedAt != nil {
			return errs.New(errs.Conflict, "token %s: revoked already, at %s", args.ID, rec.RevokedAt.Format(time.RFC3339Nano)).
				With("current", rec.info())
		}
		now := t.env.Clock.Now()
		rec.RevokedAt = &now
		if err := tx.SetJSON(key(args.ID), rec); err != nil {
			return err
		}
		out = RevokeResult{ID: rec.ID, RevokedAt: now}
		_, err = tx.Trace(call, "token.revoke", fmt.Sprintf("token %s of agent %s revoked", rec.ID, rec.Agent),
			map[string]any{"id": rec.ID, "agent": rec.Agent})
		return err
	})
	if err != nil {
		return RevokeResult{}, err
	}
	return out, nil
}

// decode reads a stored token record.
func decode(k, v []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(v, &rec); err != nil {
		return record{}, fmt.Errorf("token record at key %q: %w", k, err)
	}
	return rec, nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Principal is who a token acts as: its agent, and whether it may only
// read. It has the fields of the server's principal.
type Principal struct {
	Agent    string
	ReadOnly bool
}

// ErrInvalid and ErrRevoked are what Authenticate's errors wrap (they are
// PermissionErrors): a token that is malformed, unknown or whose secret does
// not match; and a token that was revoked.
var (
	ErrInvalid = errors.New("invalid token")
	ErrRevoked = errors.New("revoked token")
)

// Authenticate checks a token a client presents and returns who it acts
// as. Its errors never repeat the token.
func (t *Tokens) Authenticate(ctx context.Context, token string) (Principal, error) {
	if err := ctx.Err(); err != nil {
		return Principal{}, err
	}
	id, secret, ok := parse(token)
	if !ok {
		return Principal{}, invalid()
	}
	var rec record
	found := false
	err := t.env.Store.View(func(tx *storage.Tx) error {
		v, err := tx.Get(key(id))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec, err = decode(key(id), v); err != nil {
			return err
		}
		found = true
		return nil
	})
	if err != nil {
		return Principal{}, err
	}
	want, err := hex.DecodeString(rec.SecretSHA256)
	if !found || err != nil || len(want) != sha256.Size {
		// Compare anyway, so that an unknown id takes the time a wrong
		// secret does.
		want = make([]byte, sha256.Size)
		found = false
	}
	got := sha256.Sum256([]byte(secret))
	if subtle.ConstantTimeCompare(got[:], want) != 1 || !found {
		return Principal{}, invalid()
	}
	if rec.RevokedAt != nil {
		return Principal{}, errs.New(errs.Permission, "%w: token %s was revoked at %s; ask for a new one", ErrRevoked, id, rec.RevokedAt.Format(time.RFC3339))
	}
	return Principal{Agent: rec.Agent, ReadOnly: rec.ReadOnly}, nil
}

func invalid() error {
	return errs.New(errs.Permission, "%w: present a token made by engram token create (egt_...)", ErrInvalid)
}

// parse splits a token into its id and secret, checking their form.
func parse(token string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(token, Prefix)
	if !found {
		return "", "", false
	}
	id, secret, found = strings.Cut(rest, "_")
	if !found || len(id) != 2*idBytes || !isLowerHex(id) {
		return "", "", false
	}
	// The secret's alphabet has "_" too: the id never does, so the first
	// "_" after the prefix ends it.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(secret)
	if err != nil || len(raw) != secretBytes {
		return "", "", false
	}
	return id, secret, true
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
