package episodic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/core/trace"
	"github.com/engram-console/engram/storage"
)

// Who may do what with threads (issue 13, item 5). Every thread has an
// owner — the principal whose message started it — and an access.ACL,
// kept under its own key so that thread results read as they always have.
// A thread stored before threads had owners has no ACL key: the legacy
// owner (the default agent) owns it. An episode has no ACL of its own: it
// is part of its thread and inherits the thread's (one object to share,
// and an episode's turns are the thread's turns anyway).
//
//   - read: thread.get, thread.list, episode.context, episode.get,
//     episode.list, episode.decisions (a decision needs read on both of
//     its threads), and being a linking candidate of the principal's new
//     threads;
//   - write: thread.message to it, thread.configure, episode.compact,
//     episode.outcome (on the decision's new thread);
//   - share: thread.share, thread.revoke.
//
// Implicit channels (sms, whatsapp, voice) continue and end only the
// principal's own threads: each agent has its own phone line. episode.tune
// moves the linking threshold for every agent, so only the default agent
// (access.LegacyOwner) may run it; episode.tuning (the threshold, numbers
// only) is readable by all.

// Object types this package registers on the access registry.
const (
	ObjectThread  = "thread"
	ObjectEpisode = "episode"
	// ObjectDecision is a linking decision, the subject of the trace
	// entries about it: it names both of its threads, so reading it
	// needs read on both.
	ObjectDecision = "linking decision"
)

func aclKey(thread string) []byte { return storage.Key(storage.PrefixEpisodic, "acl", thread) }

// loadACL returns a thread's ACL (the legacy owner's, for a thread stored
// before threads had owners).
func loadACL(tx *storage.Tx, thread string) (access.ACL, error) {
	var a access.ACL
	err := tx.GetJSON(aclKey(thread), &a)
	if errors.Is(err, storage.ErrNotFound) {
		return access.ACL{}, nil
	}
	return a, err
}

func threadObject(id string) access.Object {
	return access.Object{Type: ObjectThread, ID: id, ShareAction: "thread.share"}
}

// authorize returns a PermissionError unless principal may do op on the
// thread id (which must exist).
func (e *Episodic) authorize(tx *storage.Tx, principal, id, op string) error {
	a, err := loadACL(tx, id)
	if err != nil {
		return err
	}
	return access.Check(principal, a, op, threadObject(id), e.env.Clock.Now())
}

// canRead reports whether principal may read the thread id.
func canRead(tx *storage.Tx, principal, id string) (bool, error) {
	a, err := loadACL(tx, id)
	return err == nil && a.Can(principal, access.Read), err
}

// owns reports whether principal owns the thread id.
func owns(tx *storage.Tx, principal, id string) (bool, error) {
	a, err := loadACL(tx, id)
	return err == nil && a.OwnerOf() == principal, err
}

// decisionReadable: a decision shows both threads' texts (its signals),
// so it needs read on both.
func decisionReadable(tx *storage.Tx, principal string, d *Decision) (bool, error) {
	for _, id := range []string{d.ThreadID, d.Candidate} {
		if ok, err := canRead(tx, principal, id); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// registerAccess tells the engine how to answer "may P read thread X /
// episode Y" (the trace, the planner ask).
func (e *Episodic) registerAccess() {
	if e.env.Access == nil {
		return
	}
	e.env.Access.Register(ObjectThread, func(tx *storage.Tx, principal, id string) (bool, error) {
		if ok, err := tx.Has(threadKey(id)); err != nil || !ok {
			return false, err
		}
		return canRead(tx, principal, id)
	})
	e.env.Access.Register(ObjectDecision, func(tx *storage.Tx, principal, id string) (bool, error) {
		var d Decision
		if err := tx.GetJSON(decisionKey(id), &d); errors.Is(err, storage.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return decisionReadable(tx, principal, &d)
	})
	e.env.Access.Register(ObjectEpisode, func(tx *storage.Tx, principal, id string) (bool, error) {
		var ep Episode
		if err := tx.GetJSON(episodeKey(id), &ep); errors.Is(err, storage.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return canRead(tx, principal, ep.ThreadID)
	})
}

// audience is who sees an event about thread id: whoever may read it (as
// tx holds its access list).
func audience(tx *storage.Tx, id string) events.Audience {
	a, err := loadACL(tx, id)
	if err != nil {
		return events.Audience{}
	}
	return events.Only(a.Readers()...)
}

// decisionAudience is who sees a linking decision: it quotes both of its
// threads, so whoever may read both.
func decisionAudience(tx *storage.Tx, d *Decision) events.Audience {
	a, err := loadACL(tx, d.ThreadID)
	if err != nil {
		return events.Audience{}
	}
	b, err := loadACL(tx, d.Candidate)
	if err != nil {
		return events.Audience{}
	}
	var both []string
	for _, p := range a.Readers() {
		if b.Can(p, access.Read) {
			both = append(both, p)
		}
	}
	return events.Only(both...)
}

// episodeAudience is audience for episode id's thread, read afresh (for
// events published outside a transaction).
func (e *Episodic) episodeAudience(id string) events.Audience {
	var out events.Audience
	_ = e.env.Store.View(func(tx *storage.Tx) error {
		var ep Episode
		if err := tx.GetJSON(episodeKey(id), &ep); err != nil {
			return err
		}
		out = audience(tx, ep.ThreadID)
		return nil
	})
	return out
}

// about is the trace subject of a thread.
func about(thread string) trace.Subject { return trace.Subject{Type: ObjectThread, ID: thread} }

// aboutDecision is the trace subject of linking decision id: trace.list
// shows an entry about it to whoever may read both of its threads.
func aboutDecision(id string) trace.Subject { return trace.Subject{Type: ObjectDecision, ID: id} }

// failed records a refusal in the trace (after its transaction rolled
// back) and returns err.
func (e *Episodic) failed(ctx context.Context, call action.Call, err error) error {
	return e.env.TraceFailure(ctx, call, err)
}

// ShareArgs is thread.share's arguments.
type ShareArgs struct {
	ThreadID    string   `json:"thread_id" arg:"required" help:"the thread"`
	Principal   string   `json:"principal" arg:"required" help:"the agent to share with"`
	Permissions []string `json:"permissions" arg:"required" help:"any of read, write, delete, share (they replace what the agent had)"`
}

// RevokeArgs is thread.revoke's arguments.
type RevokeArgs struct {
	ThreadID  string `json:"thread_id" arg:"required" help:"the thread"`
	Principal string `json:"principal" arg:"required" help:"the agent whose access to remove"`
}

// ThreadAccessEvent is the payload of EventAccess.
type ThreadAccessEvent struct {
	// ThreadID is the thread whose access changed.
	ThreadID string `json:"thread_id"`
	// Principal is the agent whose access changed.
	Principal string `json:"principal"`
	// Change is "shared" or "revoked".
	Change string `json:"change"`
	// Permissions are what the agent may do now (empty once revoked).
	Permissions []string `json:"permissions"`
}

// EventAccess fires after a thread's access changes: what an agent may see
// of threads, their links and decisions changes with it (issue 14, bug 8).
var EventAccess = events.Define[ThreadAccessEvent]("thread.access", "after thread.share or thread.revoke changes who may use a thread")

func (e *Episodic) actShare(ctx context.Context, call action.Call, a ShareArgs) (access.ACL, error) {
	return e.changeACL(ctx, call, a.ThreadID, "shared with "+a.Principal, func(acl *access.ACL) error {
		return acl.Grant(call.Principal, a.Principal, a.Permissions, threadObject(a.ThreadID), e.env.Clock.Now())
	}, ThreadAccessEvent{Principal: a.Principal, Change: "shared"})
}

func (e *Episodic) actRevoke(ctx context.Context, call action.Call, a RevokeArgs) (access.ACL, error) {
	return e.changeACL(ctx, call, a.ThreadID, "access of "+a.Principal+" revoked", func(acl *access.ACL) error {
		return acl.Revoke(call.Principal, a.Principal, threadObject(a.ThreadID), e.env.Clock.Now())
	}, ThreadAccessEvent{Principal: a.Principal, Change: "revoked"})
}

// changeACL changes a thread's ACL with change, in one transaction, and
// returns it as it now is; ev, completed with the thread and the agent's
// permissions, is published after the commit.
func (e *Episodic) changeACL(ctx context.Context, call action.Call, id, what string, change func(*access.ACL) error, ev ThreadAccessEvent) (access.ACL, error) {
	var out access.ACL
	err := e.env.Update(ctx, func(tx *kit.Txn) error {
		if _, err := loadThread(tx.Tx, id); err != nil {
			return err
		}
		acl, err := loadACL(tx.Tx, id)
		if err != nil {
			return err
		}
		if acl.Owner == "" {
			acl.Owner = access.LegacyOwner
		}
		before := events.Only(acl.Readers()...)
		if err := change(&acl); err != nil {
			return err
		}
		if err := tx.SetJSON(aclKey(id), acl); err != nil {
			return err
		}
		out = acl.Clone()
		ev.ThreadID, ev.Permissions = id, []string{}
		for _, g := range acl.Grants {
			if g.PrincipalID == ev.Principal {
				ev.Permissions = append(ev.Permissions, g.Permissions...)
			}
		}
		// Who had access, who has it now, and whose access changed hear of it.
		EventAccess.Publish(tx, before.And(events.Only(acl.Readers()...)).And(events.Only(ev.Principal)), ev)
		_, err = tx.TraceAbout(call, about(id), "thread.acl", fmt.Sprintf("thread %s: %s", id, what), acl)
		return err
	})
	if err != nil {
		return access.ACL{}, e.failed(ctx, call, err)
	}
	return out, nil
}

// errOperatorOnly is episode.tune's refusal for agents other than the
// default one. It carries an access.Denial, so that it is traced as one.
func errOperatorOnly(principal string, now time.Time) error {
	d := &access.Denial{Event: "access_denied", PrincipalID: principal, ResourceType: "linking tuning", ResourceID: "episodic",
		AttemptedOperation: access.Write, Timestamp: now, ACLChecked: true, Owner: access.LegacyOwner}
	return errs.New(errs.Permission, "%s may not run episode.tune: it moves the linking threshold for every agent; only the default agent (%s) may%w",
		principal, access.LegacyOwner, quiet{d}).With("principal", principal).With("operation", access.Write)
}

// quiet wraps an error for its type without adding to a message.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }
