package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
)

// WorkingMemoryInput is working_memory's input (and with_memory's
// arguments).
type WorkingMemoryInput struct {
	Input        string `json:"input" jsonschema:"the user's message you are about to answer"`
	Conversation string `json:"conversation,omitempty" jsonschema:"the conversation it belongs to (default: default); a named one must exist"`
	Channel      string `json:"channel,omitempty" jsonschema:"where it was said: web, app, sms, whatsapp or voice (adds the thread's episodic context)"`
	ThreadID     string `json:"thread_id,omitempty" jsonschema:"the thread it belongs to (log_message with a channel says which)"`
}

// WorkingMemoryOutput is working_memory's output: what engram would put in
// a model's prompt for the message.
type WorkingMemoryOutput struct {
	TurnID       string         `json:"turn_id" jsonschema:"the turn engram recorded for the question (started and ended at once, committing nothing)"`
	Input        string         `json:"input" jsonschema:"the message"`
	Conversation string         `json:"conversation" jsonschema:"the conversation"`
	System       string         `json:"system" jsonschema:"the system prompt: your goals, the conversation's summary, the thread's context and the memories relevant to the message"`
	Messages     []ChatMessage  `json:"messages" jsonschema:"the conversation's buffered messages, oldest first, then the message itself"`
	Providers    []string       `json:"providers" jsonschema:"the context providers asked, in order"`
	Sections     map[string]any `json:"sections" jsonschema:"each provider's part as engram's JSON (cortex: goals; history: buffer and summary; episodic: the thread; memory: relevant items per store)"`
}

// ChatMessage is one message of a prompt.
type ChatMessage struct {
	Role    string `json:"role" jsonschema:"user or assistant"`
	Content string `json:"content" jsonschema:"what was said"`
}

// callInTurn is call for a request of the given turn.
func callInTurn[A, R any](ctx context.Context, cl *caller, turn string, ref action.Ref[A, R], args A) (R, error) {
	client := cl.client
	return conn.CallAs(ctx, cl.c, conn.Request{Principal: cl.agent, Turn: turn, Client: &client}, ref, args)
}

// workingMemory assembles a message's working memory: turn.start, then at
// once turn.end committing nothing, so that no turn is left open; the
// agent records the messages themselves with log_message.
func workingMemory(ctx context.Context, cl *caller, in WorkingMemoryInput) (WorkingMemoryOutput, error) {
	if strings.TrimSpace(in.Input) == "" {
		return WorkingMemoryOutput{}, errs.New(errs.Validation, "input: give the user's message").With("field", "input")
	}
	if in.Conversation != "" {
		if _, err := knownConversation(ctx, cl, in.Conversation); err != nil {
			return WorkingMemoryOutput{}, err
		}
	}
	started, err := call(ctx, cl, core.ActionTurnStart, core.TurnStartArgs{Input: in.Input, Conversation: in.Conversation, Channel: in.Channel, ThreadID: in.ThreadID})
	if err != nil {
		return WorkingMemoryOutput{}, err
	}
	wc := started.Context
	// The turn ends even if the call was cancelled meanwhile.
	if _, err := callInTurn(context.WithoutCancel(ctx), cl, wc.TurnID, core.ActionTurnEnd, core.TurnEndArgs{}); err != nil {
		return WorkingMemoryOutput{}, errs.New(errs.KindOf(err), "ending turn %s: %v", wc.TurnID, err)
	}
	prompt, err := core.ChatPrompt(wc)
	if err != nil {
		return WorkingMemoryOutput{}, err
	}
	out := WorkingMemoryOutput{TurnID: wc.TurnID, Input: wc.Input, Conversation: wc.Conversation, System: prompt.System,
		Messages: []ChatMessage{}, Providers: wc.Providers, Sections: map[string]any{}}
	for _, m := range prompt.Messages {
		out.Messages = append(out.Messages, ChatMessage{Role: m.Role, Content: m.Content})
	}
	for name, raw := range wc.Sections {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return WorkingMemoryOutput{}, errs.New(errs.Internal, "the %s section of turn %s is not JSON: %v", name, wc.TurnID, err)
		}
		out.Sections[name] = v
	}
	if out.Providers == nil {
		out.Providers = []string{}
	}
	return out, nil
}

// addWorkingMemoryTool registers working_memory.
func (s *Server) addWorkingMemoryTool() {
	addTool(s, toolSpec{name: "working_memory", title: "Working memory",
		description: "What to put in your prompt for the user's message: engram's working memory for it (your open goals, the " +
			"conversation's summary and recent messages, the thread's episodic context, the memories relevant to it) " +
			"as a system prompt and messages, and each part as data. Call it at the start of a turn. It records a turn " +
			"in engram's trace, started and ended at once, committing nothing: log the messages with log_message."},
		workingMemory)
}
