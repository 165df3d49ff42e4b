package clients

import (
	"context"
	"fmt"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// The actions of this package, each with its argument and result types.
var (
	// ActionList is the clients.list action. The agent clients (MCP sessions) connected now or lately, with their calls.
	ActionList = action.NewRef[ListArgs, ListResult]("clients.list")
	// ActionDisconnect is the clients.disconnect action. Mark an agent client's session disconnected.
	ActionDisconnect = action.NewRef[DisconnectArgs, Client]("clients.disconnect")
	// ActionRefuse is the clients.refuse action. Fail with the ValidationError given: a client call refused before it ran any action, counted and traced.
	ActionRefuse = action.NewRef[RefuseArgs, action.None]("clients.refuse")
)

// RefuseArgs is clients.refuse's arguments.
type RefuseArgs struct {
	Field   string `json:"field,omitempty" help:"the argument that was refused, when one was"`
	Message string `json:"message" arg:"required" help:"why the call was refused"`
}

// ListArgs is clients.list's arguments.
type ListArgs struct {
	All bool `json:"all,omitempty" help:"every agent's clients, not only the caller's: only for the operator, local"`
}

// ListResult is clients.list's result.
type ListResult struct {
	// Clients are connected clients first, then by their last call,
	// newest first.
	Clients []Client `json:"clients"`
}

// DisconnectArgs is clients.disconnect's arguments.
type DisconnectArgs struct {
	Session string `json:"session" arg:"required" help:"the client's session, as clients.list shows it"`
}

// Register adds the clients.* actions over r to env. owner is the engine's
// own agent: the only one that may list every agent's clients.
func Register(env *kit.Env, r *Registry, owner string) {
	r.mu.Lock()
	r.owner = owner
	r.mu.Unlock()
	ActionList.Register(env.Actions, action.Spec{Summary: "The agent clients (MCP sessions) connected now or lately, with their calls", ReadOnly: true},
		func(ctx context.Context, call action.Call, args ListArgs) (ListResult, error) {
			agent := call.Principal
			if args.All {
				if call.Principal != owner {
					return ListResult{}, errs.New(errs.Permission, "all: every agent's clients are only for the engine's own agent %q, not %q; leave all out to list your own clients", owner, call.Principal).With("field", "all")
				}
				agent = ""
			}
			list, gone := r.List(agent, call.Clock.Now())
			for _, c := range gone {
				EventDisconnected.Publish(env.Events, r.audience(c.Agent), c)
			}
			if list == nil {
				list = []Client{}
			}
			return ListResult{Clients: list}, nil
		})
	// An MCP client's call whose arguments did not fit the tool's schema
	// is refused by the MCP library before any action runs. The face then
	// sends this, naming the client, so that the call is counted and
	// traced as failed like any other (Note does it: this fails).
	ActionRefuse.Register(env.Actions, action.Spec{Summary: "Fail with the ValidationError given: a client call refused before it ran any action, counted and traced", ReadOnly: true},
		func(ctx context.Context, call action.Call, args RefuseArgs) (action.None, error) {
			if args.Field != "" {
				return action.None{}, kit.Validation(args.Field, "%s", args.Message)
			}
			return action.None{}, errs.New(errs.Validation, "%s", args.Message)
		})
	ActionDisconnect.Register(env.Actions, action.Spec{Summary: "Mark an agent client's session disconnected"},
		func(ctx context.Context, call action.Call, args DisconnectArgs) (Client, error) {
			c, ok := r.Disconnect(call.Principal, args.Session, call.Clock.Now())
			if !ok {
				return Client{}, errs.New(errs.NotFound, "clients.disconnect: agent %q has no connected client with session %q; clients.list shows them", call.Principal, args.Session)
			}
			EventDisconnected.Publish(env.Events, r.audience(c.Agent), c)
			return c, nil
		})
}

// audience is who sees an event about agent's clients: the agent, and the
// engine's own agent, as clients.list shows them.
func (r *Registry) audience(agent string) events.Audience {
	r.mu.Lock()
	defer r.mu.Unlock()
	return events.Only(agent, r.owner)
}

// Note records one request made for a client (req.Client) that ran as
// call and failed with err (nil: succeeded): it counts the call, publishes
// client.connected for a client seen anew and client.call, and leaves a
// trace entry of kind VIA.call ("mcp.call") naming the tool and action.
// A trace entry that cannot be written (a full disk) is logged, never a
// failure of the request.
func Note(ctx context.Context, env *kit.Env, r *Registry, call action.Call, req conn.Request, err error) {
	c := *req.Client
	kind, message := errs.KindOf(err), ""
	if err != nil {
		message = err.Error()
	}
	client, fresh := r.Record(call.Principal, c, call.Clock.Now(), err != nil, message)
	if fresh {
		EventConnected.Publish(env.Events, r.audience(client.Agent), client)
	}
	ev := CallEvent{Session: c.Session, Agent: call.Principal, Via: c.Via, Tool: c.Tool, Action: req.Action, OK: err == nil}
	if err != nil {
		ev.ErrorKind = string(kind)
	}
	EventCall.Publish(env.Events, r.audience(call.Principal), ev)
	text := fmt.Sprintf("%s via %s: %s", c.Tool, c.Via, req.Action)
	if err != nil {
		text += " failed (" + string(kind) + ")"
	}
	data := traceData{Via: c.Via, Tool: c.Tool, Action: req.Action, Session: c.Session, Client: c.Name, OK: err == nil, ErrorKind: ev.ErrorKind}
	terr := env.Update(context.WithoutCancel(ctx), func(tx *kit.Txn) error {
		_, err := tx.Trace(call, c.Via+".call", text, data)
		return err
	})
	if terr != nil {
		env.Log.Warn("writing a client call to the trace failed", "err", terr, "via", c.Via, "tool", c.Tool)
	}
}

// traceData is the data of a client call's trace entry.
type traceData struct {
	Via       string `json:"via"`
	Tool      string `json:"tool"`
	Action    string `json:"action"`
	Session   string `json:"session"`
	Client    string `json:"client,omitempty"`
	OK        bool   `json:"ok"`
	ErrorKind string `json:"error_kind,omitempty"`
}

// Check holds a request's client description to the limits every name
// has: session, via, tool and call present, none over kit.MaxName bytes
// or with control characters, and pid not negative.
func Check(c *conn.ClientCall) error {
	for _, f := range []struct {
		field, value string
		required     bool
	}{
		{"client.session", c.Session, true}, {"client.via", c.Via, true},
		{"client.name", c.Name, false}, {"client.version", c.Version, false},
		{"client.transport", c.Transport, false},
		{"client.tool", c.Tool, true}, {"client.call", c.Call, true},
	} {
		if f.required && f.value == "" {
			return kit.Validation(f.field, "is required when a request names its client")
		}
		if err := kit.CheckName(f.field, f.value, ""); err != nil {
			return err
		}
	}
	if c.PID < 0 {
		return kit.Validation("client.pid", "is %d; a process id is 0 or more", c.PID)
	}
	return nil
}
