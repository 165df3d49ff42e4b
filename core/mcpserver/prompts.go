package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-console/engram/core/errs"
)

// addPrompts registers the with_memory prompt. Getting it records a turn
// (as working_memory does), so a read-only server leaves it out.
func (s *Server) addPrompts() {
	if s.opts.ReadOnly {
		return
	}
	s.MCP.AddPrompt(&mcp.Prompt{Name: "with_memory", Title: "With memory",
		Description: "The user's message with engram's working memory for it: your goals, the conversation's summary and " +
			"recent messages, the thread's context and the memories relevant to it (working_memory's, as prompt messages).",
		Arguments: []*mcp.PromptArgument{
			{Name: "message", Title: "Message", Description: "the user's message to answer", Required: true},
			{Name: "conversation", Title: "Conversation", Description: "the conversation it belongs to (default: default)"},
		}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args := req.Params.Arguments
			wm, err := workingMemory(ctx, s.newCaller(req.Session, "with_memory"), WorkingMemoryInput{Input: args["message"], Conversation: args["conversation"]})
			if err != nil {
				// The prompt's argument for working_memory's input is message.
				return nil, protocolError(renameField(err, "input", "message"))
			}
			return withMemory(wm), nil
		})
}

// protocolError is an action's error as a JSON-RPC error, for a prompt or
// a resource (which have no tool errors): its message "KIND: message" as a
// tool error's text, its data the ToolError. Errors in what was asked
// (not found, invalid, refused, in conflict) are Invalid Params, as MCP
// has a missing resource be.
func protocolError(err error) error {
	e := errs.As(err)
	if e == nil {
		e = errs.New(errs.Internal, "%v", err)
	}
	te := ToolError{Kind: e.Kind, Message: e.Message, Details: e.Details}
	data, merr := json.Marshal(te)
	if merr != nil {
		data = nil
	}
	code := int64(jsonrpc.CodeInternalError)
	switch e.Kind {
	case errs.NotFound, errs.Validation, errs.Permission, errs.Conflict:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: string(te.Kind) + ": " + te.Message, Data: data}
}

// withMemory is a working memory as prompt messages: the memory first, as
// the user's context (a prompt has no system role), then the conversation
// and the message.
func withMemory(wm WorkingMemoryOutput) *mcp.GetPromptResult {
	res := &mcp.GetPromptResult{Description: "engram's working memory for the message (turn " + wm.TurnID + ")"}
	res.Messages = append(res.Messages, &mcp.PromptMessage{Role: "user",
		Content: &mcp.TextContent{Text: "Working memory from engram (use it to answer the last message):\n\n" + wm.System}})
	for _, m := range wm.Messages {
		res.Messages = append(res.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: &mcp.TextContent{Text: m.Content}})
	}
	return res
}
