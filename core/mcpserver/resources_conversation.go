package mcpserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
	"github.com/engram-console/engram/core/history"
)

// The conversation resources' URIs: a conversation's running summary and a
// thread's episodic context, each named by its id (path-escaped).
const (
	summaryPrefix, summarySuffix = "engram://conversations/", "/summary"
	contextPrefix, contextSuffix = "engram://threads/", "/context"
)

// SummaryURI is the URI of a conversation's summary resource.
func SummaryURI(conversation string) string {
	return summaryPrefix + url.PathEscape(conversation) + summarySuffix
}

// ThreadContextURI is the URI of a thread's context resource.
func ThreadContextURI(thread string) string {
	return contextPrefix + url.PathEscape(thread) + contextSuffix
}

// idOf is the id in uri between prefix and suffix ("" if uri is not one).
func idOf(uri, prefix, suffix string) string {
	rest, ok := strings.CutPrefix(uri, prefix)
	if !ok {
		return ""
	}
	if rest, ok = strings.CutSuffix(rest, suffix); !ok {
		return ""
	}
	id, err := url.PathUnescape(rest)
	if err != nil {
		return ""
	}
	return id
}

// jsonResource is a resource read whose content is v as JSON.
func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, protocolError(errs.New(errs.Internal, "encoding %s: %v", uri, err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// addSummaryResource registers engram://conversations/{conversation}/summary
// (conversation_summary's output), announced when the summary changes or
// the conversation is dropped.
func (s *Server) addSummaryResource() {
	s.MCP.AddResourceTemplate(&mcp.ResourceTemplate{Name: "conversation_summary", Title: "Conversation summary",
		URITemplate: summaryPrefix + "{conversation}" + summarySuffix, MIMEType: "application/json",
		Description: "A conversation's running summary: what the messages that left its buffer said (as conversation_summary gives it)."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			name := idOf(uri, summaryPrefix, summarySuffix)
			if name == "" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			out, err := conversationSummary(ctx, s.newCaller(req.Session, uri), ConversationSummaryInput{Conversation: name})
			if err != nil {
				return nil, protocolError(err)
			}
			return jsonResource(uri, out)
		})
	s.addWatch(watch{kinds: []string{history.EventSummary.Name(), history.EventDropped.Name()},
		uris: func(ev events.Event) []string {
			if d, ok := history.EventSummary.Of(ev); ok {
				return []string{SummaryURI(d.Conversation)}
			}
			if d, ok := history.EventDropped.Of(ev); ok {
				return []string{SummaryURI(d.Conversation)}
			}
			return nil
		}})
}

// addThreadContextResource registers engram://threads/{thread}/context
// (thread_context's output for the thread's next turn), announced when a
// message is added to the thread, one of its episodes is compacted, or it
// is configured.
func (s *Server) addThreadContextResource() {
	s.MCP.AddResourceTemplate(&mcp.ResourceTemplate{Name: "thread_context", Title: "Thread context",
		URITemplate: contextPrefix + "{thread}" + contextSuffix, MIMEType: "application/json",
		Description: "A thread's assembled episodic context for its next turn (as thread_context gives it)."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			id := idOf(uri, contextPrefix, contextSuffix)
			if id == "" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			out, err := threadContextFor(ctx, s.newCaller(req.Session, uri), ThreadContextInput{ThreadID: id})
			if err != nil {
				return nil, protocolError(err)
			}
			return jsonResource(uri, out)
		})
	s.addWatch(watch{kinds: []string{episodic.EventTurnAdded.Name(), episodic.EventCompacted.Name(), episodic.EventConfigured.Name()},
		uris: func(ev events.Event) []string {
			if d, ok := episodic.EventTurnAdded.Of(ev); ok {
				return []string{ThreadContextURI(d.ThreadID)}
			}
			if d, ok := episodic.EventCompacted.Of(ev); ok {
				return []string{ThreadContextURI(d.ThreadID)}
			}
			if d, ok := episodic.EventConfigured.Of(ev); ok {
				return []string{ThreadContextURI(d.ID)}
			}
			return nil
		}})
}
