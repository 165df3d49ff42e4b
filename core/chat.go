package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/cortex"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
	"github.com/engram-console/engram/llm"
	"github.com/engram-console/engram/storage"
)

// chat.send is one exchange of the Chat tab, as an action: start a turn
// (assembling working memory), ask the model with that memory as context
// when one is configured, and end the turn recording the user's utterance
// and the answer. Without a model it returns the exact prompt that would
// have been sent.

// ChatSendArgs is chat.send's arguments.
type ChatSendArgs struct {
	Text         string `json:"text" arg:"required" help:"what the user says"`
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Channel      string `json:"channel,omitempty" help:"web, app, sms, whatsapp or voice"`
	ThreadID     string `json:"thread_id,omitempty" help:"the thread, for explicit channels (without it, and without continue_thread: a new thread)"`
	// ContinueThread is the console's way to keep a conversation in its
	// thread across restarts (issue 14, bug 6); scripts that send without
	// it keep starting a thread per message on web or app, as before.
	ContinueThread bool `json:"continue_thread,omitempty" help:"on web or app without thread_id: continue the thread the conversation's latest message on that channel went to (also after a restart), or start one if there is none"`
}

// ChatRoute is where thread.message sent a chat.send message: kept in the
// user's utterance's metadata under "thread", so that a face can say so
// under the message after a restart (issue 14, bug 6).
type ChatRoute struct {
	Channel   string `json:"channel"`
	ThreadID  string `json:"thread_id"`
	NewThread bool   `json:"new_thread,omitempty"`
	// TurnCount is the thread's turns with this message.
	TurnCount   int      `json:"turn_count"`
	EndedThread string   `json:"ended_thread,omitempty"`
	Linked      []string `json:"linked_threads,omitempty"`
	// Decisions counts a new thread's linking decisions.
	Decisions int `json:"decisions,omitempty"`
}

// NewChatRoute is where res says a message on channel went.
func NewChatRoute(channel string, res episodic.MessageResult) ChatRoute {
	return ChatRoute{Channel: channel, ThreadID: res.ThreadID, NewThread: res.NewThread, TurnCount: res.TurnCount,
		EndedThread: res.EndedThread, Linked: res.LinkedThreads, Decisions: len(res.Decisions)}
}

// ChatRouteOf reads the route chat.send recorded in an utterance's
// metadata; false if there is none.
func ChatRouteOf(metadata json.RawMessage) (ChatRoute, bool) {
	var m struct {
		Thread *ChatRoute `json:"thread"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil || m.Thread == nil || m.Thread.ThreadID == "" {
		return ChatRoute{}, false
	}
	return *m.Thread, true
}

// ChatSendResult is chat.send's result: one exchange.
type ChatSendResult struct {
	TurnID string `json:"turn_id"`
	// Prompt is exactly what was (or, without a model, would be) sent.
	Prompt llm.Request `json:"prompt"`
	// Answered says whether a model answered; Answer is its text.
	Answered bool   `json:"answered"`
	Answer   string `json:"answer,omitempty"`
	// LLMError says why a configured model did not answer.
	LLMError string `json:"llm_error,omitempty"`
	// Committed is what turn.end committed, per context provider (the
	// utterances recorded).
	Committed map[string]json.RawMessage `json:"committed"`
	// Thread is where thread.message routed the user's message (when a
	// channel was given): the thread, whether it is new, its links.
	Thread *episodic.MessageResult `json:"thread,omitempty"`
}

const chatSystem = "You are the assistant of the person you are talking to. Use the working memory below: their goals, the conversation so far and its summary. Be concise and concrete."

func (e *Engine) registerChat() {
	ActionChatSend.Register(e.env.Actions, action.Spec{Summary: "Say something: a turn with working memory, the model's answer (if any), both recorded"}, e.chatSend)
}

func (e *Engine) chatSend(ctx context.Context, call action.Call, a ChatSendArgs) (ChatSendResult, error) {
	if strings.TrimSpace(a.Text) == "" {
		return ChatSendResult{}, kit.Validation("text", "say something")
	}
	if a.ContinueThread && !episodic.IsExplicit(a.Channel) {
		return ChatSendResult{}, kit.Validation("continue_thread", "%s", continueRefusal(a.Channel))
	}
	if call.Turn == "" {
		call.Turn = e.env.IDs.New()
	}
	// The steps run as actions of this call's principal and turn, so that
	// each is checked and traced as if sent on its own.
	as := conn.Request{Principal: call.Principal, Turn: call.Turn}
	// The turn writes the conversation only as it ends, after the thread
	// message and the turn's start are recorded: ask first, so that a
	// refused send records nothing anywhere.
	conversation, err := history.ConversationName(a.Conversation)
	if err != nil {
		return ChatSendResult{}, err
	}
	err = e.env.Store.View(func(tx *storage.Tx) error {
		return e.env.Access.CheckWrite(tx, history.ObjectType, call.Principal, conversation, e.env.Clock.Now())
	})
	if err != nil {
		return ChatSendResult{}, e.env.TraceFailure(ctx, call, err)
	}
	// With a channel, the message goes through the episodic layer too: it
	// picks (or starts and links) the thread the turn then draws on.
	var routed *episodic.MessageResult
	if _, err := e.env.Actions.Lookup(episodic.ActionThreadMessage.Name()); a.Channel != "" && err == nil {
		// thread.message commits at once: first what would fail the turn
		// after it, so that a failed send records nothing anywhere.
		if err := e.env.Store.View(func(tx *storage.Tx) error { return refuseStartedTurn(tx, call.Principal, call.Turn) }); err != nil {
			return ChatSendResult{}, err
		}
		res, err := conn.CallAs(ctx, e, as, episodic.ActionThreadMessage,
			episodic.MessageRequest{Channel: a.Channel, ThreadID: a.ThreadID, Text: a.Text, Conversation: conversation,
				NewThread: episodic.IsExplicit(a.Channel) && a.ThreadID == "" && !a.ContinueThread})
		if err != nil {
			return ChatSendResult{}, err
		}
		routed, a.ThreadID = &res, res.ThreadID
	}
	started, err := conn.CallAs(ctx, e, as, ActionTurnStart,
		TurnStartArgs{Input: a.Text, Conversation: a.Conversation, Channel: a.Channel, ThreadID: a.ThreadID})
	if err != nil {
		return ChatSendResult{}, err
	}
	res, err := e.chatTurn(ctx, as, a, started.Context, routed)
	if err != nil {
		// The turn started: end it (committing nothing) rather than leave
		// it open for ever (a failed turn.end rolled back, so it is open).
		if _, endErr := conn.CallAs(context.WithoutCancel(ctx), e, as, ActionTurnEnd, TurnEndArgs{}); endErr != nil {
			err = errors.Join(err, endErr)
		}
	}
	return res, err
}

// chatTurn is chat.send once its turn has started: the prompt, the model's
// answer, and the turn's end.
func (e *Engine) chatTurn(ctx context.Context, as conn.Request, a ChatSendArgs, wc WorkingContext, routed *episodic.MessageResult) (ChatSendResult, error) {
	prompt, err := chatPrompt(wc)
	if err != nil {
		return ChatSendResult{}, err
	}
	res := ChatSendResult{TurnID: as.Turn, Prompt: prompt, Thread: routed}
	// Once the turn has started, it is finished and recorded even if the
	// send is cancelled (the console quitting): only the model's answer,
	// which may take long, gives way to the cancel.
	finish := context.WithoutCancel(ctx)
	records := []history.WriteRequest{{Speaker: "user", Text: a.Text, Conversation: wc.Conversation}}
	if routed != nil {
		// Where the message went stays with it in the conversation.
		meta, err := json.Marshal(map[string]ChatRoute{"thread": NewChatRoute(a.Channel, *routed)})
		if err != nil {
			return ChatSendResult{}, errs.New(errs.Internal, "encoding the message's thread: %w", err)
		}
		records[0].Metadata = meta
	}
	if llm.Available(e.env.LLM) {
		answer, err := e.env.LLM.Complete(ctx, res.Prompt)
		if err != nil {
			res.LLMError = kit.FromLLM(err).Error()
		} else {
			res.Answered, res.Answer = true, strings.TrimSpace(answer.Text)
			records = append(records, history.WriteRequest{Speaker: "assistant", Text: res.Answer, Conversation: wc.Conversation})
			if routed != nil && res.Answer != "" {
				_, err := conn.CallAs(finish, e, as, episodic.ActionThreadMessage,
					episodic.MessageRequest{Channel: a.Channel, ThreadID: a.ThreadID, Text: res.Answer, Speaker: "assistant"})
				if err != nil {
					return ChatSendResult{}, errs.New(errs.KindOf(err), "recording the answer in thread %s: %w", a.ThreadID, err)
				}
			}
		}
	}
	written, err := json.Marshal(records)
	if err != nil {
		return ChatSendResult{}, errs.New(errs.Internal, "encoding the turn's utterances: %w", err)
	}
	ended, err := conn.CallAs(finish, e, as, ActionTurnEnd, TurnEndArgs{Updates: map[string]json.RawMessage{"history": written}})
	if err != nil {
		return ChatSendResult{}, errs.New(errs.KindOf(err), "ending the turn: %w", err)
	}
	res.Committed = ended.Committed
	return res, nil
}

// ChatPrompt is the request chat.send would send a language model for a
// turn's working memory: for faces that hand the memory to a model of
// their own (the MCP working_memory tool and with_memory prompt).
func ChatPrompt(wc WorkingContext) (llm.Request, error) { return chatPrompt(wc) }

// chatPrompt turns a turn's working memory into a chat request: the memory
// in the system prompt, the buffer as the conversation, the input last.
func chatPrompt(wc WorkingContext) (llm.Request, error) {
	var sys strings.Builder
	sys.WriteString(chatSystem)
	var messages []llm.Message
	var goals cortex.ContextSection
	if _, err := wc.Section("cortex", &goals); err != nil {
		return llm.Request{}, err
	}
	if len(goals.Items) > 0 {
		sys.WriteString("\n\nTheir open goals, actions and questions, most urgent first:")
		for _, it := range goals.Items {
			fmt.Fprintf(&sys, "\n- %s %q (%s, %s, %d%% done)", it.Type, it.Title, it.Priority, it.Status, it.Progress)
		}
	}
	var hist history.ContextData
	if _, err := wc.Section("history", &hist); err != nil {
		return llm.Request{}, err
	}
	if hist.Summary.Text != "" {
		fmt.Fprintf(&sys, "\n\nSummary of the earlier conversation:\n%s", hist.Summary.Text)
	}
	if len(hist.Recalled) > 0 {
		sys.WriteString("\n\nEarlier in the conversation, what best answers this message:")
		for _, h := range hist.Recalled {
			fmt.Fprintf(&sys, "\n- %s, %s: %s", h.Timestamp.Format("2006-01-02"), h.Speaker, h.Text)
		}
	}
	for _, u := range hist.Utterances {
		if u.Speaker == "system" {
			fmt.Fprintf(&sys, "\n\nNote: %s", u.Text)
			continue
		}
		messages = append(messages, llm.Message{Role: u.Speaker, Content: u.Text})
	}
	var thread episodic.Context
	if _, err := wc.Section("episodic", &thread); err != nil {
		return llm.Request{}, err
	}
	if thread.Text != "" {
		fmt.Fprintf(&sys, "\n\nFrom this conversation thread and those it continues:\n%s", thread.Text)
		// The line a reply can open with (seed 003, 4.1: the prompt
		// includes "You were asking about weather in New York").
		if thread.Recap != "" {
			fmt.Fprintf(&sys, "\nRecap: %s.", thread.Recap)
		}
	}
	for _, name := range sortedKeys(wc.Sections) {
		if name == "cortex" || name == "history" || name == "episodic" {
			continue
		}
		// Another provider's section goes in as JSON with its keys sorted,
		// as it always has: recorded cassettes answer this exact prompt.
		var v any
		if err := json.Unmarshal(wc.Sections[name], &v); err != nil {
			return llm.Request{}, errs.New(errs.Internal, "the %s section of turn %s is not JSON: %v", name, wc.TurnID, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return llm.Request{}, errs.New(errs.Internal, "encoding the %s section: %v", name, err)
		}
		fmt.Fprintf(&sys, "\n\n%s: %s", name, b)
	}
	messages = append(messages, llm.Message{Role: "user", Content: wc.Input})
	return llm.Request{System: sys.String(), Messages: messages}, nil
}

// continueRefusal says why continue_thread does not go with channel c.
func continueRefusal(c string) string {
	if c == "" {
		return "continuing a thread needs a channel: web or app"
	}
	return "a thread is chosen on web or app; on " + c + " engram infers the thread"
}
