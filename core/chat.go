package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-console/engram/core/action"
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

type chatSendArgs struct {
	Text         string `json:"text" arg:"required" help:"what the user says"`
	Conversation string `json:"conversation,omitempty" help:"the conversation (default \"default\")"`
	Channel      string `json:"channel,omitempty" help:"web, app, sms, whatsapp or voice"`
	ThreadID     string `json:"thread_id,omitempty" help:"the thread, for explicit channels"`
}

// ChatResult is one exchange.
type ChatResult struct {
	TurnID string `json:"turn_id"`
	// Prompt is exactly what was (or, without a model, would be) sent.
	Prompt llm.Request `json:"prompt"`
	// Answered says whether a model answered; Answer is its text.
	Answered bool   `json:"answered"`
	Answer   string `json:"answer,omitempty"`
	// LLMError says why a configured model did not answer.
	LLMError string `json:"llm_error,omitempty"`
	// Committed is what turn.end committed (the utterances recorded).
	Committed map[string]any `json:"committed"`
	// Thread is where thread.message routed the user's message (when a
	// channel was given): the thread, whether it is new, its links.
	Thread json.RawMessage `json:"thread,omitempty"`
}

const chatSystem = "You are the assistant of the person you are talking to. Use the working memory below: their goals, the conversation so far and its summary. Be concise and concrete."

func (e *Engine) registerChat() {
	action.Register(e.env.Actions, action.Spec{
		Name: "chat.send", Summary: "Say something: a turn with working memory, the model's answer (if any), both recorded",
	}, e.chatSend)
}

func (e *Engine) chatSend(ctx context.Context, call action.Call, a chatSendArgs) (ChatResult, error) {
	if strings.TrimSpace(a.Text) == "" {
		return ChatResult{}, kit.Validation("text", "say something")
	}
	if call.Turn == "" {
		call.Turn = e.env.IDs.New()
	}
	// With a channel, the message goes through the episodic layer too: it
	// picks (or starts and links) the thread the turn then draws on.
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	var routed json.RawMessage
	if _, err := e.env.Actions.Lookup("thread.message"); a.Channel != "" && err == nil {
		// thread.message commits at once: first what would fail the turn
		// after it, so that a failed send records nothing anywhere.
		if err := e.env.Store.View(func(tx *storage.Tx) error { return refuseStartedTurn(tx, call.Turn) }); err != nil {
			return ChatResult{}, err
		}
		if _, err := history.ConversationName(a.Conversation); err != nil {
			return ChatResult{}, err
		}
		args, _ := json.Marshal(map[string]string{"channel": a.Channel, "thread_id": a.ThreadID, "text": a.Text})
		raw, err := e.Do(ctx, Request{Action: "thread.message", Args: args, Principal: call.Principal, Turn: call.Turn})
		if err != nil {
			return ChatResult{}, err
		}
		json.Unmarshal(raw, &thread)
		routed, a.ThreadID = raw, thread.ThreadID
	}
	start, _ := json.Marshal(turnStartArgs{Input: a.Text, Conversation: a.Conversation, Channel: a.Channel, ThreadID: a.ThreadID})
	raw, err := e.Do(ctx, Request{Action: "turn.start", Args: start, Principal: call.Principal, Turn: call.Turn})
	if err != nil {
		return ChatResult{}, err
	}
	var started map[string]WorkingContext
	if err := json.Unmarshal(raw, &started); err != nil {
		return ChatResult{}, err
	}
	wc := started["context"]
	res := ChatResult{TurnID: call.Turn, Prompt: chatPrompt(wc), Thread: routed}
	records := []map[string]any{{"speaker": "user", "text": a.Text, "conversation": wc.Conversation}}
	if llm.Available(e.env.LLM) {
		answer, err := e.env.LLM.Complete(ctx, res.Prompt)
		if err != nil {
			res.LLMError = kit.FromLLM(err).Error()
		} else {
			res.Answered, res.Answer = true, strings.TrimSpace(answer.Text)
			records = append(records, map[string]any{"speaker": "assistant", "text": res.Answer, "conversation": wc.Conversation})
			if routed != nil && res.Answer != "" {
				args, _ := json.Marshal(map[string]string{"channel": a.Channel, "thread_id": a.ThreadID, "text": res.Answer, "speaker": "assistant"})
				if _, err := e.Do(ctx, Request{Action: "thread.message", Args: args, Principal: call.Principal, Turn: call.Turn}); err != nil {
					return ChatResult{}, errs.New(errs.KindOf(err), "recording the answer in thread %s: %w", a.ThreadID, err)
				}
			}
		}
	}
	end, _ := json.Marshal(map[string]any{"updates": map[string]any{"history": records}})
	raw, err = e.Do(ctx, Request{Action: "turn.end", Args: end, Principal: call.Principal, Turn: call.Turn})
	if err != nil {
		return ChatResult{}, errs.New(errs.KindOf(err), "ending the turn: %w", err)
	}
	var ended struct {
		Committed map[string]any `json:"committed"`
	}
	json.Unmarshal(raw, &ended)
	res.Committed = ended.Committed
	return res, nil
}

// chatPrompt turns a turn's working memory into a chat request: the memory
// in the system prompt, the buffer as the conversation, the input last.
func chatPrompt(wc WorkingContext) llm.Request {
	var sys strings.Builder
	sys.WriteString(chatSystem)
	var messages []llm.Message
	if cortex, ok := wc.Sections["cortex"].(map[string]any); ok {
		if items, _ := cortex["items"].([]any); len(items) > 0 {
			sys.WriteString("\n\nTheir open goals, actions and questions, most urgent first:")
			for _, it := range items {
				m, _ := it.(map[string]any)
				fmt.Fprintf(&sys, "\n- %v %q (%v, %v, %v%% done)", m["type"], m["title"], m["priority"], m["status"], m["progress"])
			}
		}
	}
	if hist, ok := wc.Sections["history"].(map[string]any); ok {
		if s, _ := hist["summary"].(map[string]any); s != nil && s["text"] != "" {
			fmt.Fprintf(&sys, "\n\nSummary of the earlier conversation:\n%v", s["text"])
		}
		utts, _ := hist["utterances"].([]any)
		for _, u := range utts {
			m, _ := u.(map[string]any)
			role, _ := m["speaker"].(string)
			textOf, _ := m["text"].(string)
			if role == "system" {
				fmt.Fprintf(&sys, "\n\nNote: %s", textOf)
				continue
			}
			messages = append(messages, llm.Message{Role: role, Content: textOf})
		}
	}
	if ep, ok := wc.Sections["episodic"].(map[string]any); ok {
		if t, _ := ep["text"].(string); t != "" {
			fmt.Fprintf(&sys, "\n\nFrom this conversation thread and those it continues:\n%s", t)
			// The line a reply can open with (seed 003, 4.1: the prompt
			// includes "You were asking about weather in New York").
			if recap, _ := ep["recap"].(string); recap != "" {
				fmt.Fprintf(&sys, "\nRecap: %s.", recap)
			}
		}
	}
	for _, name := range sortedKeys(wc.Sections) {
		if name == "cortex" || name == "history" || name == "episodic" {
			continue
		}
		b, _ := json.Marshal(wc.Sections[name])
		fmt.Fprintf(&sys, "\n\n%s: %s", name, b)
	}
	messages = append(messages, llm.Message{Role: "user", Content: wc.Input})
	return llm.Request{System: sys.String(), Messages: messages}
}
