// Package mcpserver is engram's face for AI agents: a Model Context
// Protocol server (the official go-sdk) whose tools, resources and prompts
// run engram's actions over a conn.Conn. Every tool maps onto existing
// actions; nothing here stores or decides anything of its own.
//
// Every call acts as the server's agent (Options.Agent): an MCP client
// cannot name another. Each request it makes carries a conn.ClientCall, so
// the engine that owns the data directory counts the client's calls,
// traces each one "via mcp", and lists the client in clients.list (the
// console's Agents view).
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/kit"
)

// Options configure a server.
type Options struct {
	// Agent is the principal every call acts as; empty: the connection's.
	Agent string
	// ReadOnly exposes only the tools that change nothing stored.
	ReadOnly bool
	// Transport is how clients reach this server, "stdio" or "http", as
	// clients.list shows it.
	Transport string
	// PID is the engram process serving the connection when it is not the
	// owner of the data directory (engram mcp attached to an owner), so that
	// the owner can tell when it is gone; 0 when the owner serves it.
	PID int
	// Version is engram's version, for the initialize handshake.
	Version string
}

// Server is an MCP server over one engram connection.
type Server struct {
	// MCP is the go-sdk server: run it on a transport (Run, Connect) or
	// hand it to mcp.NewStreamableHTTPHandler.
	MCP *mcp.Server

	c    conn.Conn
	opts Options

	// life bounds the work a call leaves running after it returns (a plan
	// run_plan started): Close cancels it and waits for that work.
	life     context.Context
	stop     context.CancelFunc
	runs     sync.WaitGroup
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]string
	next     atomic.Uint64
	calls    atomic.Uint64
	// nonce tells this server's sessions from those of an earlier process
	// that had the same id (PID) and so made the same session names.
	nonce    string
	ownStore atomic.Bool
	// goals is what the agent's active goals resource last held, and how
	// many subscribe to it: see goalsChanged.
	goals   goalsState
	watches []watch
	// watching, when set (by tests), is called once Watch has subscribed.
	watching func()
}

// New returns a server whose tools act as opts.Agent over c. Close it
// when it stops serving, before c closes: run_plan leaves plans running.
func New(c conn.Conn, opts Options) *Server {
	if opts.Agent == "" {
		opts.Agent = c.Agent()
	}
	if opts.Transport == "" {
		opts.Transport = "stdio"
	}
	s := &Server{c: c, opts: opts, sessions: map[*mcp.ServerSession]string{}, nonce: nonce()}
	s.life, s.stop = context.WithCancel(context.Background())
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "engram", Title: "engram memory", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// Setting these tells clients the server supports
		// resources/subscribe; the go-sdk keeps the subscriptions, and
		// Watch tells the subscribers when a resource changes.
		SubscribeHandler:   s.checkSubscription,
		UnsubscribeHandler: s.endSubscription,
	})
	s.MCP.AddReceivingMiddleware(s.argumentErrors)
	s.addTools()
	s.addResources()
	s.addPrompts()
	return s
}

// nonce is 8 random hex digits.
func nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Close stops what the server's calls left running (plans run_plan started
// without waiting: they end cancelled, and plan.resume continues them) and
// waits for it to stop. Call it once the server no longer serves.
func (s *Server) Close() {
	s.stop()
	s.runs.Wait()
}

// background runs fn beside the server, after the call that started it
// has returned: with a context that ends at Close, not with the call.
func (s *Server) background(fn func(ctx context.Context)) {
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		fn(s.life)
	}()
}

// instructions is what the server tells a client it is for.
const instructions = "engram is your long-term memory. Call working_memory with the user's message " +
	"at the start of a turn to get what to put in your prompt; remember facts worth keeping, recall " +
	"them by meaning, log each message of the conversation, and keep goals and plans current. " +
	"A person may be watching and steering your memory from the engram console."

// session returns the engram session id of an MCP session: the session's
// own id when the transport gives one (streamable HTTP), else one made up
// here, unique to this process.
func (s *Server) session(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sessions[ss]; ok {
		return id
	}
	id := ss.ID()
	if id == "" {
		id = fmt.Sprintf("%s-%d-%s-%d", s.opts.Transport, s.opts.PID, s.nonce, s.next.Add(1))
	}
	s.sessions[ss] = id
	return id
}

// Sessions returns the engram session ids of the MCP sessions this server
// has seen, for the caller to disconnect when they end.
func (s *Server) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sessions))
	for _, id := range s.sessions {
		out = append(out, id)
	}
	return out
}

// caller is one MCP call as it runs actions: every request it makes acts
// as the server's agent and names the client and the call.
type caller struct {
	c      conn.Conn
	agent  string
	client conn.ClientCall
	// ownStore is set once the agent's own working store is known to
	// exist (shared by the server's calls): see ownStoreMissing.
	ownStore *atomic.Bool
	// req is the tool call being served (nil for a resource or prompt):
	// its session and progress token, for a tool that reports progress.
	req *mcp.CallToolRequest
}

// newCaller returns the caller for one call of tool (or resource, prompt)
// name made in the MCP session ss.
func (s *Server) newCaller(ss *mcp.ServerSession, name string) *caller {
	cc := conn.ClientCall{Session: s.session(ss), Via: "mcp", Transport: s.opts.Transport, PID: s.opts.PID,
		Tool: callName(name), Call: strconv.FormatUint(s.calls.Add(1), 10)}
	if cc.Session == "" {
		cc.Session = fmt.Sprintf("%s-%d-%s-0", s.opts.Transport, s.opts.PID, s.nonce)
	}
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			cc.Name, cc.Version = clientText(p.ClientInfo.Name), clientText(p.ClientInfo.Version)
		}
	}
	return &caller{c: s.c, agent: s.opts.Agent, client: cc, ownStore: &s.ownStore}
}

// callName is name as a client call's tool: a resource's URI, which
// holds a conversation's escaped name, may be longer than a name may be
// (kit.MaxName bytes); it is cut, so that the call is not refused for it.
func callName(name string) string {
	if len(name) <= kit.MaxName {
		return name
	}
	cut := kit.MaxName - len("…")
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// clientText is what a client said of itself (clientInfo's name or
// version) made fit to be a name: valid UTF-8, control characters as
// spaces, cut to kit.MaxName bytes. It is the client's to say: an odd one
// must not get its calls refused.
func clientText(v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(v, "\uFFFD"))
	return callName(strings.TrimSpace(v))
}

// call runs the action ref names with args for the caller and decodes its
// result.
func call[A, R any](ctx context.Context, cl *caller, ref action.Ref[A, R], args A) (R, error) {
	req := conn.Request{Principal: cl.agent}
	if cl.client.Session != "" {
		client := cl.client
		req.Client = &client
	}
	return conn.CallAs(ctx, cl.c, req, ref, args)
}

// ownCaller runs the server's own reads, which are no client's call: as
// its agent, neither counted nor traced.
func (s *Server) ownCaller() *caller {
	return &caller{c: s.c, agent: s.opts.Agent, ownStore: &s.ownStore}
}

// toolSpec describes one tool: its name, what it is for, and whether it
// changes anything (its MCP annotations say the same, truthfully).
type toolSpec struct {
	name, title, description string
	// readOnly: changes nothing stored. destructive: may delete or
	// overwrite what is stored. idempotent: calling it again with the
	// same arguments changes nothing more.
	readOnly, destructive, idempotent bool
}

// addTool registers a tool whose handler runs actions through a caller.
// A read-only server leaves out every tool that is not read-only. An error
// becomes an MCP tool error (see toolError), never a protocol failure.
func addTool[In, Out any](s *Server, spec toolSpec, run func(ctx context.Context, cl *caller, in In) (Out, error)) {
	if s.opts.ReadOnly && !spec.readOnly {
		return
	}
	destructive := spec.destructive
	closedWorld := false
	t := &mcp.Tool{Name: spec.name, Title: spec.title, Description: spec.description,
		Annotations: &mcp.ToolAnnotations{Title: spec.title, ReadOnlyHint: spec.readOnly, DestructiveHint: &destructive,
			IdempotentHint: spec.idempotent, OpenWorldHint: &closedWorld}}
	// The output schema is Out's, but the handler returns it as an any:
	// the go-sdk then leaves a failed call's structured content (the
	// ToolError) alone, instead of replacing it with a zero Out that its
	// own output check would refuse.
	schema, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the output schema of %s: %v", spec.name, err)) // a bug in the type
	}
	t.OutputSchema = schema
	mcp.AddTool(s.MCP, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		cl := s.newCaller(req.Session, spec.name)
		cl.req = req
		out, err := run(ctx, cl, in)
		if err != nil {
			return toolError(err), nil, nil
		}
		return nil, out, nil
	})
}

// ToolError is the structured content of a failed tool call: engram's error
// kind, message and details, as a batch result's error object.
type ToolError struct {
	Kind    errs.Kind      `json:"kind"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// toolError turns an action's error into an MCP tool error: its text is
// "KIND: message" (a ValidationError's message names the field), and its
// structured content the ToolError.
func toolError(err error) *mcp.CallToolResult {
	e := errs.As(err)
	if e == nil {
		e = errs.New(errs.Internal, "%v", err)
	}
	te := ToolError{Kind: e.Kind, Message: e.Message, Details: e.Details}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(te.Kind) + ": " + te.Message}},
		StructuredContent: te,
	}
}

// argumentErrors gives the tool errors of arguments that do not fit a
// tool's input schema (a missing required field, a wrong type), which the
// go-sdk reports before any handler runs, the structured content of every
// other tool error (toolError's): a ValidationError whose message names
// the field. The refusal is sent to the engine too (clients.refuse), so
// that the call is counted and traced as failed like any other.
func (s *Server) argumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		tr, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || tr == nil || !tr.IsError || tr.StructuredContent != nil {
			return res, err
		}
		msg := ""
		if e := tr.GetError(); e != nil {
			msg = e.Error()
		} else if len(tr.Content) > 0 {
			if t, ok := tr.Content[0].(*mcp.TextContent); ok {
				msg = t.Text
			}
		}
		te := ToolError{Kind: errs.Validation, Message: msg}
		tr.Content = []mcp.Content{&mcp.TextContent{Text: string(te.Kind) + ": " + te.Message}}
		tr.StructuredContent = te
		if ctr, ok := req.(*mcp.CallToolRequest); ok && ctr.Params != nil {
			// Its error is the refusal itself: nothing to do with it.
			_, _ = call(ctx, s.newCaller(ctr.Session, ctr.Params.Name), clients.ActionRefuse, clients.RefuseArgs{Message: msg})
		}
		return tr, nil
	}
}

// addTools registers every tool, by subsystem.
func (s *Server) addTools() {
	s.addMemoryTools()
	s.addConversationTools()
	s.addGoalTools()
	s.addPlanTools()
	s.addWorkingMemoryTool()
}

// watch says which resources an engine event changes: the URIs of the
// resources to announce as updated.
type watch struct {
	// kinds are the event kinds to subscribe to.
	kinds []string
	// uris returns the URIs of the resources ev changed (none: nil).
	uris func(ev events.Event) []string
	// changed, when set, says whether a URI uris named changed for this
	// server's agent: it is announced only then.
	changed func(ctx context.Context) bool
}

// addWatch registers w for Watch.
func (s *Server) addWatch(w watch) {
	s.watches = append(s.watches, w)
}

// Watch tells the clients subscribed to a resource (resources/subscribe)
// when an engine event changes it, until ctx is done. Run it beside the
// server, once per Server.
func (s *Server) Watch(ctx context.Context) {
	var kinds []string
	for _, w := range s.watches {
		kinds = append(kinds, w.kinds...)
	}
	if len(kinds) == 0 {
		<-ctx.Done()
		return
	}
	evs := s.c.SubscribeAs(ctx, s.opts.Agent, kinds...)
	if s.watching != nil {
		s.watching()
	}
	for ev := range evs {
		sent := map[string]bool{}
		for _, w := range s.watches {
			if !slices.Contains(w.kinds, ev.Name) {
				continue
			}
			for _, uri := range w.uris(ev) {
				if sent[uri] || (w.changed != nil && !w.changed(ctx)) {
					continue
				}
				sent[uri] = true
				_ = s.MCP.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}) // only fails when nobody listens
			}
		}
	}
}
