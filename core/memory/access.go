package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/storage"
)

// Who may do what to a memory store (issue 13, item 5). A store belongs to
// the agent that created it (memory.configure); the two built-in stores and
// every store made before stores had owners belong to access.LegacyOwner,
// the engine's default agent. The agent_id of an item says whom a memory is
// about and stays a filter: it grants nothing.
//
//   - read: memory.get, memory.remember, memory.summarize, memory.capacity,
//     memory.forget with dry_run, being listed by memory.stores, and the
//     store's part of turn.start;
//   - write: memory.memorize (and turn.end's updates.memory),
//     memory.configure of an existing store, memory.forget soft;
//   - delete: memory.forget hard (erasing cannot be undone, so it needs
//     more than changing items);
//   - share: memory.share, memory.revoke.

// ShareArgs is memory.share's arguments.
type ShareArgs struct {
	// Store is the store to share.
	Store string `json:"store" arg:"required" help:"the store"`
	// Principal is the agent to share with.
	Principal string `json:"principal" arg:"required" help:"the agent to share with"`
	// Permissions replace any the agent had: read, write, delete, share.
	Permissions []string `json:"permissions" arg:"required" help:"any of read, write, delete, share"`
}

// RevokeArgs is memory.revoke's arguments.
type RevokeArgs struct {
	// Store is the shared store.
	Store string `json:"store" arg:"required" help:"the store"`
	// Principal is the agent whose access to remove.
	Principal string `json:"principal" arg:"required" help:"the agent whose access to remove"`
}

func (m *Memory) actShare(ctx context.Context, call action.Call, a ShareArgs) (access.ACL, error) {
	return m.changeACL(ctx, call, a.Store, "memory.shared", a.Principal, func(acl *access.ACL, obj access.Object) error {
		return acl.Grant(call.Principal, a.Principal, a.Permissions, obj, call.Clock.Now())
	})
}

func (m *Memory) actRevoke(ctx context.Context, call action.Call, a RevokeArgs) (access.ACL, error) {
	return m.changeACL(ctx, call, a.Store, "memory.revoked", a.Principal, func(acl *access.ACL, obj access.Object) error {
		return acl.Revoke(call.Principal, a.Principal, obj, call.Clock.Now())
	})
}

// changeACL edits a store's access list in one transaction, traces the
// change as kind, and returns the list with its owner named. principal is
// the agent whose access it changes.
func (m *Memory) changeACL(ctx context.Context, call action.Call, name, kind, principal string, change func(*access.ACL, access.Object) error) (access.ACL, error) {
	if err := kit.CheckName("store", name, "/"); err != nil {
		return access.ACL{}, err
	}
	s := &store{env: m.env, name: name}
	var out access.ACL
	err := m.env.Update(ctx, func(tx *kit.Txn) error {
		st, err := s.load(tx.Tx)
		if err != nil {
			return err
		}
		before := st.audience()
		acl := st.acl().Clone()
		if err := change(&acl, s.object()); err != nil {
			return err
		}
		st.setACL(acl)
		if err := tx.SetJSON(stateKey(name), st); err != nil {
			return err
		}
		out = acl.Clone()
		out.Owner = acl.OwnerOf()
		// Who had access and who has it now both hear of the change, and
		// so does the agent whose access changed, whichever way.
		EventStoreChanged.Publish(tx, before.And(st.audience()).And(events.Only(principal)), StoreChangedEvent{Store: name, Change: strings.TrimPrefix(kind, "memory.")})
		_, err = tx.Trace(call, kind, fmt.Sprintf("memory %s: access is now %v", name, out.Readers()), out)
		return err
	})
	if err != nil {
		return access.ACL{}, m.afterFailure(ctx, call, err)
	}
	return out, nil
}

// afterFailure records in the trace what a failed call must leave behind
// although its transaction rolled back: an access denial. It returns err.
func (m *Memory) afterFailure(ctx context.Context, call action.Call, err error) error {
	// The engine's one way: counted, and shown to the owner too.
	return m.env.TraceFailure(ctx, call, err)
}

// canRead is the access.ReadCheck of memory stores.
func (m *Memory) canRead(tx *storage.Tx, principal, id string) (bool, error) {
	st, err := (&store{env: m.env, name: id}).load(tx)
	if errs.KindOf(err) == errs.NotFound {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return st.acl().Can(principal, access.Read), nil
}
