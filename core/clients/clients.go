// Package clients keeps the registry of the agent clients connected to an
// engine through a face other than engram's own (an MCP session): who they
// are, what they called, how it went. The console's Agents view shows it.
//
// The registry lives in the owner's memory and is rebuilt from requests:
// every request made for a client carries the client's whole description
// (conn.ClientCall), so an engram that takes over a data directory learns
// each client again from its next request. Nothing here is stored.
package clients

import (
	"errors"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/events"
)

// Client is one connected (or lately gone) agent client, as clients.list
// shows it.
type Client struct {
	// Session is unique to the client's connection (its MCP session).
	Session string `json:"session"`
	// Agent is the principal its calls act as.
	Agent string `json:"agent"`
	// Via is the face it uses: "mcp".
	Via string `json:"via"`
	// Name and Version are what the client said of itself.
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Transport is "stdio" or "http".
	Transport string `json:"transport,omitempty"`
	// PID is the engram process serving its connection (0: the owner).
	PID int `json:"pid,omitempty"`
	// Connected says whether the client is still connected.
	Connected bool `json:"connected"`
	// Since is when this engine first saw the client.
	Since time.Time `json:"since"`
	// Calls counts its calls (tool, resource and prompt calls), Errors
	// those that failed.
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
	// LastCall is what it called last, and LastAt when.
	LastCall string     `json:"last_call,omitempty"`
	LastAt   *time.Time `json:"last_at,omitempty"`
	// LastError is the message of its last failed call.
	LastError string `json:"last_error,omitempty"`
	// GoneAt is when it disconnected (or its process was found gone).
	GoneAt *time.Time `json:"gone_at,omitempty"`

	// counted and failed are the ids of its latest calls counted in Calls
	// and in Errors: a call makes several requests, which may interleave
	// with those of its other calls, or end after them (run_plan's run).
	counted []string
	failed  []string
}

// recentCalls bounds how many call ids a client remembers to count each
// call once: more than an agent has in flight at once.
const recentCalls = 64

// remember adds id to recent (keeping the latest recentCalls) and reports
// whether it was new.
func remember(recent *[]string, id string) bool {
	if slices.Contains(*recent, id) {
		return false
	}
	if len(*recent) == recentCalls {
		*recent = slices.Delete(*recent, 0, 1)
	}
	*recent = append(*recent, id)
	return true
}

// Events the registry publishes.
var (
	// EventConnected fires when the engine first sees a client.
	EventConnected = events.Define[Client]("client.connected", "when the engine sees an agent client (an MCP session) for the first time")
	// EventCall fires after every request made for a client.
	EventCall = events.Define[CallEvent]("client.call", "after every request an agent client (an MCP session) makes, successful or not")
	// EventDisconnected fires when a client disconnects or its process is
	// found gone.
	EventDisconnected = events.Define[Client]("client.disconnected", "when an agent client disconnects, or the engram process serving it is found gone")
)

// CallEvent is the payload of client.call.
type CallEvent struct {
	// Session is the client's session.
	Session string `json:"session"`
	// Agent is the principal the request acted as.
	Agent string `json:"agent"`
	// Via is the client's face: "mcp".
	Via string `json:"via"`
	// Tool is what the client called (an MCP tool, resource or prompt).
	Tool string `json:"tool"`
	// Action is the engine action the request ran.
	Action string `json:"action"`
	// OK says whether the action succeeded; ErrorKind is its error kind
	// when not.
	OK        bool   `json:"ok"`
	ErrorKind string `json:"error_kind,omitempty"`
}

// MaxKept bounds how many clients the registry keeps: past it, the ones
// gone longest are forgotten first, then the connected ones idle longest.
const MaxKept = 256

// Registry is the clients an engine has seen. It is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	clients map[string]*Client // by agent and session
	// alive reports whether a process runs; replaced in tests.
	alive func(pid int) bool
	self  int
	// owner is the engine's own agent, who may list every agent's
	// clients (set by Register).
	owner string
}

// New returns an empty registry for the engine of process self, which
// checks other processes with alive.
func New(self int, alive func(pid int) bool) *Registry {
	return &Registry{clients: map[string]*Client{}, alive: alive, self: self}
}

func key(agent, session string) string { return agent + "\x00" + session }

// Record notes one request made for a client, acting as agent, which
// failed with the error kind and message when failed is set. It returns the
// client as it is now, and whether the engine had not seen it (connected
// anew).
func (r *Registry) Record(agent string, c conn.ClientCall, at time.Time, failed bool, errMessage string) (Client, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key(agent, c.Session)
	cl, seen := r.clients[k]
	// A request of a call counted before the client went (run_plan's run
	// ending after it) is no sign the client is back: a new call is.
	fresh := !seen || (!cl.Connected && !slices.Contains(cl.counted, c.Call))
	if !seen {
		cl = &Client{Session: c.Session, Agent: agent, Since: at}
		r.clients[k] = cl
		r.trim(k)
	}
	if fresh {
		cl.Connected, cl.GoneAt = true, nil
	}
	cl.Via, cl.Name, cl.Version, cl.Transport, cl.PID = c.Via, c.Name, c.Version, c.Transport, c.PID
	if remember(&cl.counted, c.Call) {
		cl.Calls++
	}
	if failed && remember(&cl.failed, c.Call) {
		cl.Errors++
	}
	if failed {
		cl.LastError = errMessage
	}
	cl.LastCall = c.Tool
	when := at
	cl.LastAt = &when
	return *cl, fresh
}

// Disconnect marks the client of agent's session gone at at. It reports
// the client, and false when the registry has no such connected client.
func (r *Registry) Disconnect(agent, session string, at time.Time) (Client, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cl, ok := r.clients[key(agent, session)]
	if !ok || !cl.Connected {
		return Client{}, false
	}
	cl.Connected = false
	when := at
	cl.GoneAt = &when
	return *cl, true
}

// List returns the clients of agent (every agent's when agent is empty),
// connected ones first, then by their last call, newest first. A client
// whose engram process is gone is marked gone first; those are returned as
// the second result, for the caller to announce.
func (r *Registry) List(agent string, at time.Time) (list, gone []Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cl := range r.clients {
		if cl.Connected && cl.PID != 0 && cl.PID != r.self && !r.alive(cl.PID) {
			cl.Connected = false
			when := at
			cl.GoneAt = &when
			gone = append(gone, *cl)
		}
		if agent == "" || cl.Agent == agent {
			list = append(list, *cl)
		}
	}
	slices.SortFunc(list, func(a, b Client) int {
		if a.Connected != b.Connected {
			if a.Connected {
				return -1
			}
			return 1
		}
		if c := lastAt(b).Compare(lastAt(a)); c != 0 {
			return c
		}
		return compareKeys(a, b)
	})
	return list, gone
}

func lastAt(c Client) time.Time {
	if c.LastAt == nil {
		return c.Since
	}
	return *c.LastAt
}

func compareKeys(a, b Client) int {
	if a.Agent != b.Agent {
		if a.Agent < b.Agent {
			return -1
		}
		return 1
	}
	switch {
	case a.Session < b.Session:
		return -1
	case a.Session > b.Session:
		return 1
	}
	return 0
}

// trim forgets clients while there are more than MaxKept: the ones gone
// longest first, then, when every one is connected, the one idle longest
// (never keep, the one just seen). A connected client forgotten is learnt
// again from its next request; the bound is what keeps anyone who may send
// requests from growing the owner's memory with made-up sessions.
func (r *Registry) trim(keep string) {
	for len(r.clients) > MaxKept {
		gone, idle := "", ""
		var goneAt, idleAt time.Time
		for k, cl := range r.clients {
			switch {
			case k == keep:
			case !cl.Connected && cl.GoneAt != nil:
				if gone == "" || cl.GoneAt.Before(goneAt) {
					gone, goneAt = k, *cl.GoneAt
				}
			case idle == "" || lastAt(*cl).Before(idleAt):
				idle, idleAt = k, lastAt(*cl)
			}
		}
		switch {
		case gone != "":
			delete(r.clients, gone)
		case idle != "":
			delete(r.clients, idle)
		default:
			return
		}
	}
}

// ProcessAlive reports whether a process with the id runs on this machine
// (the engram mcp processes an owner serves are local: they reach it over
// its Unix socket).
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
