package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkSubscription lets a client subscribe only to a resource its agent
// may read, refusing the others with the error a read would give: else
// the updates would tell it when another agent's conversation or thread
// changes, although it may not see how.
func (s *Server) checkSubscription(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	var err error
	switch {
	case uri == ActiveGoalsURI:
		s.goals.subscribed(ctx, s)
		return nil // the agent's own list
	case idOf(uri, summaryPrefix, summarySuffix) != "":
		_, err = conversationSummary(ctx, s.newCaller(req.Session, uri), ConversationSummaryInput{Conversation: idOf(uri, summaryPrefix, summarySuffix)})
	case idOf(uri, contextPrefix, contextSuffix) != "":
		_, err = threadContextFor(ctx, s.newCaller(req.Session, uri), ThreadContextInput{ThreadID: idOf(uri, contextPrefix, contextSuffix)})
	default:
		return mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return protocolError(err)
	}
	return nil
}

// endSubscription notes that a client no longer subscribes to a resource.
func (s *Server) endSubscription(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params.URI == ActiveGoalsURI {
		s.goals.unsubscribed()
	}
	return nil
}

// addResources registers the resources (the active goals list, a
// conversation's summary, a thread's context) and the watches that announce
// their changes. Each subsystem's file adds its own.
func (s *Server) addResources() {
	s.addGoalResources()
	s.addConversationResources()
}

// addConversationResources registers the conversation summary and thread
// context resources.
func (s *Server) addConversationResources() {
	s.addSummaryResource()
	s.addThreadContextResource()
}
