// Package access is engram's one principal model. Every object a principal
// can own — a cortex item, a memory store, a conversation, a thread, a plan —
// has an owner and an ACL of the same shape, and every subsystem decides
// access with these functions, so the rules are the same on every face
// (batch, console, socket, MCP).
//
// The rules:
//   - the owner holds every permission; its access cannot be changed;
//   - a grant gives another principal some of read, write, delete, share;
//   - every operation but read also needs read (results show the object);
//   - sharing passes on access and never creates more: a sharer grants only
//     what it holds itself and cannot raise its own;
//   - a refused request changes nothing, and says who can grant access.
package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/storage"
)

// Permissions, in the order results list them.
const (
	Read   = "read"
	Write  = "write"
	Delete = "delete"
	Share  = "share"
)

// Permissions lists every permission a grant may hold.
var Permissions = []string{Read, Write, Delete, Share}

// LegacyOwner owns objects stored before they had owners: the engine's
// default agent, which is who made them in a single-agent setup.
const LegacyOwner = "local"

// Entry grants a principal permissions on an object. Its JSON is the one
// cortex items have always had.
type Entry struct {
	PrincipalType string   `json:"principal_type"`
	PrincipalID   string   `json:"principal_id"`
	Permissions   []string `json:"permissions"`
}

// ACL is an object's owner and the grants to other principals.
type ACL struct {
	Owner  string  `json:"owner"`
	Grants []Entry `json:"grants,omitempty"`
}

// New is the ACL of an object owner just made: no grants.
func New(owner string) ACL { return ACL{Owner: owner} }

// owner is Owner, or LegacyOwner for an object stored without one.
func (a ACL) owner() string {
	if a.Owner == "" {
		return LegacyOwner
	}
	return a.Owner
}

// OwnerOf is who owns the object: its owner, or LegacyOwner.
func (a ACL) OwnerOf() string { return a.owner() }

// Can reports whether principal holds perm on the object.
func (a ACL) Can(principal, perm string) bool {
	if principal == a.owner() {
		return true
	}
	for _, e := range a.Grants {
		if e.PrincipalID == principal && slices.Contains(e.Permissions, perm) {
			return true
		}
	}
	return false
}

// Readers are the principals that may read the object, owner first.
func (a ACL) Readers() []string {
	out := []string{a.owner()}
	for _, e := range a.Grants {
		if slices.Contains(e.Permissions, Read) {
			out = append(out, e.PrincipalID)
		}
	}
	return out
}

// Clone is a deep copy.
func (a ACL) Clone() ACL {
	c := ACL{Owner: a.Owner}
	for _, e := range a.Grants {
		e.Permissions = slices.Clone(e.Permissions)
		c.Grants = append(c.Grants, e)
	}
	return c
}

// Object names what an ACL guards, for errors and the trace.
type Object struct {
	// Type is what the object is, e.g. "memory store", "conversation".
	Type string
	// ID is its name or id.
	ID string
	// ShareAction is the action that grants access to it, e.g.
	// "memory.share": errors tell the refused principal to ask for it.
	ShareAction string
}

func (o Object) String() string { return fmt.Sprintf("%s %q", o.Type, o.ID) }

// Denial is what a refused request leaves in the trace (seed 3.2's
// access_denied record). Check's errors wrap one; DenialOf finds it.
type Denial struct {
	Event              string    `json:"event"`
	PrincipalID        string    `json:"principal_id"`
	ResourceType       string    `json:"resource_type"`
	ResourceID         string    `json:"resource_id"`
	AttemptedOperation string    `json:"attempted_operation"`
	Timestamp          time.Time `json:"timestamp"`
	ACLChecked         bool      `json:"acl_checked"`
	// Owner is the object's owner: the trace shows the denial to it (and
	// to the refused principal) only. Not part of the record's JSON.
	Owner string `json:"-"`
}

func (d *Denial) Error() string { return "access denied" }

// Message is the one-line trace message of the denial.
func (d *Denial) Message() string {
	return fmt.Sprintf("access denied: %s may not %s %s %s", d.PrincipalID, d.AttemptedOperation, d.ResourceType, d.ResourceID)
}

// DenialOf returns the denial err carries, if it is a refusal by Check.
func DenialOf(err error) (*Denial, bool) {
	var d *Denial
	ok := errors.As(err, &d)
	return d, ok
}

// Check returns a PermissionError unless principal may do op on the
// object. Every operation but read needs read as well.
func Check(principal string, a ACL, op string, obj Object, now time.Time) error {
	if a.Can(principal, op) && (op == Read || a.Can(principal, Read)) {
		return nil
	}
	if a.Can(principal, op) {
		op = Read
	}
	d := &Denial{Event: "access_denied", PrincipalID: principal, ResourceType: obj.Type, ResourceID: obj.ID,
		AttemptedOperation: op, Timestamp: now, ACLChecked: true, Owner: a.owner()}
	how := "the owner (" + a.owner() + ") can grant it"
	if obj.ShareAction != "" {
		how += " with " + obj.ShareAction
	}
	return errs.New(errs.Permission, "%s may not %s %s: %s%w", principal, op, obj, how, quiet{d}).
		With("principal", principal).With("operation", op)
}

// quiet wraps an error for its type without adding to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }

// CleanPermissions checks perms (the field named field) and returns them
// without repeats, in the order of Permissions.
func CleanPermissions(field string, perms []string) ([]string, error) {
	if len(perms) == 0 {
		return nil, errs.New(errs.Validation, "%s: give at least one of %s", field, strings.Join(Permissions, ", ")).With("field", field)
	}
	var clean []string
	for _, p := range perms {
		if !slices.Contains(Permissions, p) {
			return nil, errs.New(errs.Validation, "%s: unknown permission %q; use any of %s", field, p, strings.Join(Permissions, ", ")).With("field", field)
		}
		if !slices.Contains(clean, p) {
			clean = append(clean, p)
		}
	}
	slices.SortFunc(clean, func(a, b string) int { return slices.Index(Permissions, a) - slices.Index(Permissions, b) })
	return clean, nil
}

// Grant gives principal perms on the object (replacing what it had), as
// by asks. by needs share; the owner needs nothing. Errors name the field;
// a refusal carries its Denial for the trace, like Check's.
func (a *ACL) Grant(by, principal string, perms []string, obj Object, now time.Time) error {
	if principal == "" {
		return errs.New(errs.Validation, "principal: give the agent to share with").With("field", "principal")
	}
	clean, err := CleanPermissions("permissions", perms)
	if err != nil {
		return err
	}
	if err := Check(by, *a, Share, obj, now); err != nil {
		return err
	}
	if principal == a.owner() {
		return errs.New(errs.Validation, "principal: %s owns %s and has every permission", principal, obj).With("field", "principal")
	}
	i := slices.IndexFunc(a.Grants, func(g Entry) bool { return g.PrincipalID == principal })
	if by != a.owner() {
		if principal == by {
			return a.refuse(by, Share, obj, now, "%s may not change its own access to %s; ask the owner (%s)", by, obj, a.owner())
		}
		for _, p := range clean {
			if !a.Can(by, p) {
				return a.refuse(by, Share, obj, now, "%s may not grant %q on %s: it does not hold that permission itself", by, p, obj)
			}
		}
		// Replacing a grant takes away what it had: the same rule as
		// revoking it, so a sharer cannot strip rights it does not hold.
		if i >= 0 {
			for _, p := range a.Grants[i].Permissions {
				if !a.Can(by, p) {
					return a.refuse(by, Share, obj, now, "%s may not change %s's access to %s: %s holds %q, which %s does not", by, principal, obj, principal, p, by)
				}
			}
		}
	}
	e := Entry{PrincipalType: "agent", PrincipalID: principal, Permissions: clean}
	if i >= 0 {
		a.Grants[i] = e
	} else {
		a.Grants = append(a.Grants, e)
	}
	return nil
}

// Revoke removes principal's grant, as by asks: the owner, the principal
// itself (giving up access), or a sharer holding every permission the
// grant has.
func (a *ACL) Revoke(by, principal string, obj Object, now time.Time) error {
	if principal == "" {
		return errs.New(errs.Validation, "principal: give the agent whose access to revoke").With("field", "principal")
	}
	if principal == a.owner() {
		return errs.New(errs.Validation, "principal: %s owns %s; an owner's access cannot be revoked", principal, obj).With("field", "principal")
	}
	if principal != by {
		if err := Check(by, *a, Share, obj, now); err != nil {
			return err
		}
	}
	i := slices.IndexFunc(a.Grants, func(g Entry) bool { return g.PrincipalID == principal })
	if i < 0 {
		return errs.New(errs.NotFound, "%s has no access to %s to revoke", principal, obj).With("field", "principal")
	}
	if by != a.owner() && principal != by {
		for _, p := range a.Grants[i].Permissions {
			if !a.Can(by, p) {
				return a.refuse(by, "revoke", obj, now, "%s may not revoke %s's access to %s: %s holds %q, which %s does not", by, principal, obj, principal, p, by)
			}
		}
	}
	a.Grants = slices.Delete(a.Grants, i, i+1)
	return nil
}

// refuse is a PermissionError with the given message that carries a
// Denial of op, so that the attempt is traced like any refusal.
func (a ACL) refuse(by, op string, obj Object, now time.Time, format string, args ...any) error {
	d := &Denial{Event: "access_denied", PrincipalID: by, ResourceType: obj.Type, ResourceID: obj.ID,
		AttemptedOperation: op, Timestamp: now, ACLChecked: true, Owner: a.owner()}
	return errs.New(errs.Permission, format+"%w", append(args, quiet{d})...).With("principal", by).With("operation", op)
}

// ReadCheck reports whether principal may read the object of a type with
// the given id, looking it up inside tx. Subsystems register one per type
// they own, so that the trace and the engine can ask about any subject.
type ReadCheck func(tx *storage.Tx, principal, id string) (bool, error)

// Registry maps object types to their read checks, and to the write checks
// of the types an action asks about ahead of writing (WriteCheck).
type Registry struct {
	mu     sync.RWMutex
	checks map[string]ReadCheck
	writes map[string]WriteCheck
}

// WriteCheck returns nil when principal may write the object id at now,
// else the PermissionError of Check (its denial goes to the trace).
type WriteCheck func(tx *storage.Tx, principal, id string, now time.Time) error

// RegisterWrite sets the write check of objects of type typ.
func (r *Registry) RegisterWrite(typ string, check WriteCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writes == nil {
		r.writes = map[string]WriteCheck{}
	}
	r.writes[typ] = check
}

// CheckWrite asks ahead whether principal may write the object typ/id, so
// that an action made of several steps can refuse before its first one
// changes anything (chat.send records a thread message before the turn
// writes the conversation). Nil when no write check is registered for typ:
// the step that writes still checks.
func (r *Registry) CheckWrite(tx *storage.Tx, typ, principal, id string, now time.Time) error {
	r.mu.RLock()
	check := r.writes[typ]
	r.mu.RUnlock()
	if check == nil {
		return nil
	}
	return check(tx, principal, id, now)
}

// Register sets the read check of objects of type typ.
func (r *Registry) Register(typ string, check ReadCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checks == nil {
		r.checks = map[string]ReadCheck{}
	}
	r.checks[typ] = check
}

// CanRead reports whether principal may read the object typ/id. An object
// of a type nobody registered is not readable: unknown means no.
func (r *Registry) CanRead(tx *storage.Tx, typ, principal, id string) (bool, error) {
	r.mu.RLock()
	check := r.checks[typ]
	r.mu.RUnlock()
	if check == nil {
		return false, nil
	}
	return check(tx, principal, id)
}
