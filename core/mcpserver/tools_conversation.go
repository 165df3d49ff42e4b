package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/engram-console/engram/core"
	"github.com/engram-console/engram/core/episodic"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/history"
	"github.com/engram-console/engram/core/kit"
)

// LogMessageInput is log_message's input.
type LogMessageInput struct {
	Speaker      string `json:"speaker" jsonschema:"who said it: user, assistant or system (system only without a channel)"`
	Text         string `json:"text" jsonschema:"what was said, whole"`
	Conversation string `json:"conversation,omitempty" jsonschema:"the conversation (default: default; created on its first message)"`
	Channel      string `json:"channel,omitempty" jsonschema:"where it was said: web or app (explicit: the thread is chosen), sms, whatsapp or voice (implicit: engram infers the thread). With a channel the message also goes to a conversation thread"`
	ThreadID     string `json:"thread_id,omitempty" jsonschema:"with a channel: the thread it belongs to (default: on web or app the conversation's thread on that channel, started if there is none; on sms, whatsapp or voice the thread engram infers)"`
	NewThread    bool   `json:"new_thread,omitempty" jsonschema:"with channel web or app and no thread_id: start a new thread instead of continuing the conversation's"`
}

// LogMessageOutput is log_message's output.
type LogMessageOutput struct {
	Utterance Utterance    `json:"utterance" jsonschema:"the message as written to the conversation"`
	Evicted   []int        `json:"evicted" jsonschema:"the indexes of older messages the write pushed out of the buffer (folded into the summary)"`
	Thread    *ThreadRoute `json:"thread,omitempty" jsonschema:"with a channel: the thread the message went to"`
}

// Utterance is one message of a conversation.
type Utterance struct {
	Conversation string `json:"conversation" jsonschema:"the conversation"`
	Index        int    `json:"index" jsonschema:"its index in the conversation, from 0"`
	Speaker      string `json:"speaker" jsonschema:"user, assistant or system"`
	Text         string `json:"text" jsonschema:"what was said"`
	Turn         int    `json:"turn" jsonschema:"the turn it belongs to (a user message starts the next)"`
	Timestamp    string `json:"timestamp" jsonschema:"when it was written (RFC 3339)"`
	Tokens       int    `json:"tokens" jsonschema:"its length in tokens"`
	Evicted      bool   `json:"evicted,omitempty" jsonschema:"no longer in the buffer: folded into the summary, still searchable"`
	ThreadID     string `json:"thread_id,omitempty" jsonschema:"the thread it went to, when logged with a channel"`
}

// ThreadRoute is where a message with a channel went.
type ThreadRoute struct {
	ThreadID      string   `json:"thread_id" jsonschema:"the thread (thread_context gives its context)"`
	NewThread     bool     `json:"new_thread" jsonschema:"the message started the thread"`
	TurnCount     int      `json:"turn_count" jsonschema:"the thread's turns, this one included"`
	EndedThread   string   `json:"ended_thread,omitempty" jsonschema:"the thread this one took over from (implicit channels, after a long gap)"`
	LinkedThreads []string `json:"linked_threads" jsonschema:"the earlier threads a new thread was linked to (it continues them)"`
}

// utterance turns a history utterance into the tools' shape.
func utterance(u *history.Utterance) Utterance {
	if u == nil {
		return Utterance{}
	}
	out := Utterance{Conversation: u.Conversation, Index: u.UtteranceIndex, Speaker: u.Speaker, Text: u.Text, Turn: u.TurnNumber,
		Timestamp: u.Timestamp.UTC().Format(time.RFC3339Nano), Tokens: u.TokenCount, Evicted: u.Evicted}
	if route, ok := core.ChatRouteOf(u.Metadata); ok {
		out.ThreadID = route.ThreadID
	}
	return out
}

// SearchHistoryInput is search_history's input.
type SearchHistoryInput struct {
	Query        string `json:"query" jsonschema:"words to look for"`
	Conversation string `json:"conversation,omitempty" jsonschema:"the conversation (default: default); an unknown one is a NotFoundError"`
	Speaker      string `json:"speaker,omitempty" jsonschema:"only this speaker's messages: user, assistant or system"`
	Limit        int    `json:"limit,omitempty" jsonschema:"at most this many (default 10)"`
}

// SearchHistoryOutput is search_history's output.
type SearchHistoryOutput struct {
	Results []HistoryHit `json:"results" jsonschema:"the matching messages, most relevant first, evicted ones included ([] when none)"`
}

// HistoryHit is one message search_history found.
type HistoryHit struct {
	Utterance
	Score    float64  `json:"score" jsonschema:"its relevance: BM25, blended with embedding similarity when a model is configured"`
	Lexical  float64  `json:"lexical" jsonschema:"its BM25 score"`
	Semantic *float64 `json:"semantic,omitempty" jsonschema:"the cosine similarity of its embedding to the query's (only with a model)"`
}

// ConversationSummaryInput is conversation_summary's input.
type ConversationSummaryInput struct {
	Conversation string `json:"conversation,omitempty" jsonschema:"the conversation (default: default); an unknown one is a NotFoundError"`
	TokenLimit   *int   `json:"token_limit,omitempty" jsonschema:"at most this many tokens (default: the conversation's summary limit)"`
}

// ConversationSummaryOutput is conversation_summary's output.
type ConversationSummaryOutput struct {
	Conversation string `json:"conversation" jsonschema:"the conversation"`
	Text         string `json:"text" jsonschema:"the running summary of the messages that left the buffer (empty while none has)"`
	Tokens       int    `json:"tokens" jsonschema:"its length in tokens"`
	Covered      int    `json:"covered" jsonschema:"how many messages it stands for"`
	Writer       string `json:"writer" jsonschema:"who wrote it: extractive (engram, offline) or model"`
	UpdatedAt    string `json:"updated_at,omitempty" jsonschema:"when it last changed (RFC 3339); absent before the first eviction"`
}

// ThreadContextInput is thread_context's input.
type ThreadContextInput struct {
	ThreadID string `json:"thread_id" jsonschema:"the thread (log_message with a channel says which)"`
	Channel  string `json:"channel,omitempty" jsonschema:"the channel the next message comes on (default: the thread's last)"`
	Input    string `json:"input,omitempty" jsonschema:"the message about to be answered (default: the thread's last user message)"`
}

// ThreadContextOutput is thread_context's output: the episodic context
// for the thread's next turn.
type ThreadContextOutput struct {
	ThreadID          string           `json:"thread_id" jsonschema:"the thread"`
	Channel           string           `json:"channel" jsonschema:"the channel the context is for"`
	Text              string           `json:"text" jsonschema:"the context as prompt text: put it in your prompt"`
	Recap             string           `json:"recap" jsonschema:"one line a reply can open with"`
	Topic             string           `json:"topic" jsonschema:"what the thread is about"`
	CurrentQuestion   string           `json:"current_question" jsonschema:"the message about to be answered"`
	PreviousQuestions []QuestionAnswer `json:"previous_questions" jsonschema:"the latest questions asked in the threads drawn on, with their answers"`
	Said              []QuestionAnswer `json:"said" jsonschema:"what the user said that asked nothing, with the reply"`
	Continuing        bool             `json:"continuing" jsonschema:"an earlier thread is pulled in: this one continues it"`
	GapMinutes        int              `json:"gap_minutes,omitempty" jsonschema:"the break between that earlier thread and this one"`
	Threads           []ContextThread  `json:"threads" jsonschema:"the threads drawn on, earliest first, the current one last"`
	Summaries         []string         `json:"summaries" jsonschema:"summaries of the compacted episodes drawn on"`
	Skills            []ContextSkill   `json:"skills" jsonschema:"what the compacted episodes taught (preferences, procedures...)"`
}

// QuestionAnswer is a question (or statement) and the reply it got.
type QuestionAnswer struct {
	Question string `json:"question" jsonschema:"what the user said"`
	Answer   string `json:"answer" jsonschema:"the reply (empty if none yet)"`
}

// ContextThread is one thread a context draws on.
type ContextThread struct {
	ID        string `json:"id" jsonschema:"the thread"`
	Title     string `json:"title" jsonschema:"its title"`
	Current   bool   `json:"current" jsonschema:"the thread the context is for"`
	Turns     int    `json:"turns" jsonschema:"its turns"`
	Compacted int    `json:"compacted_episodes" jsonschema:"compacted episodes it contributed as summaries"`
}

// ContextSkill is one thing a compacted episode taught.
type ContextSkill struct {
	Kind string `json:"kind" jsonschema:"what kind of skill"`
	Text string `json:"text" jsonschema:"the skill"`
	From string `json:"from" jsonschema:"who taught it: the user, or an answer the assistant gave"`
}

// threadContext turns an episodic context into the tools' shape.
func threadContext(c episodic.Context) ThreadContextOutput {
	out := ThreadContextOutput{ThreadID: c.ThreadID, Channel: c.Channel, Text: c.Text, Recap: c.Recap, Topic: c.Topic,
		CurrentQuestion: c.CurrentQuestion, Continuing: c.Continuing, GapMinutes: c.GapMinutes,
		PreviousQuestions: []QuestionAnswer{}, Said: []QuestionAnswer{}, Threads: []ContextThread{}, Summaries: []string{}, Skills: []ContextSkill{}}
	for _, qa := range c.PreviousQuestions {
		out.PreviousQuestions = append(out.PreviousQuestions, QuestionAnswer(qa))
	}
	for _, qa := range c.Said {
		out.Said = append(out.Said, QuestionAnswer(qa))
	}
	for _, t := range c.Threads {
		out.Threads = append(out.Threads, ContextThread{ID: t.ID, Title: t.Title, Current: t.Current, Turns: t.Turns, Compacted: t.Compacted})
	}
	out.Summaries = append(out.Summaries, c.Summaries...)
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, ContextSkill{Kind: s.Kind, Text: s.Text, From: s.From})
	}
	return out
}

// summaryOutput turns a conversation's summary into the tools' shape.
func summaryOutput(conversation string, s history.Summary) ConversationSummaryOutput {
	out := ConversationSummaryOutput{Conversation: conversation, Text: s.Text, Tokens: s.TokenCount, Covered: len(s.Covers), Writer: s.Writer}
	for _, sp := range s.CoveredSpans {
		out.Covered += sp.To - sp.From + 1
	}
	if s.UpdatedAt != nil {
		out.UpdatedAt = s.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// knownConversation checks the conversation (default: "default") is one
// the caller may read (history.list), and returns its name. The history
// actions read an unknown conversation as an empty one; an agent that
// misspells a name is told instead.
func knownConversation(ctx context.Context, cl *caller, conversation string) (string, error) {
	name, err := history.ConversationName(conversation)
	if err != nil {
		return "", err
	}
	list, err := call(ctx, cl, history.ActionList, history.ListArgs{})
	if err != nil {
		return "", err
	}
	for _, c := range list.Conversations {
		if c.Conversation == name {
			return name, nil
		}
	}
	return "", errs.New(errs.NotFound, "conversation: no conversation %q that you may read (log_message starts one with its first message)", name).With("field", "conversation")
}

// conversationSummary runs history.summary for the caller.
func conversationSummary(ctx context.Context, cl *caller, in ConversationSummaryInput) (ConversationSummaryOutput, error) {
	name, err := knownConversation(ctx, cl, in.Conversation)
	if err != nil {
		return ConversationSummaryOutput{}, err
	}
	res, err := call(ctx, cl, history.ActionSummary, history.SummaryArgs{Conversation: name, TokenLimit: in.TokenLimit})
	if err != nil {
		return ConversationSummaryOutput{}, err
	}
	return summaryOutput(name, res.Summary), nil
}

// threadContextFor runs episode.context for the caller.
func threadContextFor(ctx context.Context, cl *caller, in ThreadContextInput) (ThreadContextOutput, error) {
	res, err := call(ctx, cl, episodic.ActionEpisodeContext, episodic.ContextArgs{ThreadID: in.ThreadID, Channel: in.Channel, Input: in.Input})
	if err != nil {
		return ThreadContextOutput{}, err
	}
	return threadContext(res.Context), nil
}

// addConversationTools registers log_message, search_history,
// conversation_summary and thread_context.
func (s *Server) addConversationTools() {
	addTool(s, toolSpec{name: "log_message", title: "Log a message",
		description: "Write one message of the conversation (the user's or yours) to engram's history. With a channel it also " +
			"goes to a conversation thread (engram picks or starts it, and links it to the threads it continues): " +
			"thread_context then gives that thread's context."},
		logMessage)
	addTool(s, toolSpec{name: "search_history", title: "Search history",
		description: "Search a conversation's messages (the buffer and the evicted archive) by words, most relevant first.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, in SearchHistoryInput) (SearchHistoryOutput, error) {
			name, err := knownConversation(ctx, cl, in.Conversation)
			if err != nil {
				return SearchHistoryOutput{}, err
			}
			res, err := call(ctx, cl, history.ActionSearch, history.SearchRequest{Conversation: name, Query: in.Query, Speaker: in.Speaker, Limit: in.Limit})
			if err != nil {
				return SearchHistoryOutput{}, err
			}
			out := SearchHistoryOutput{Results: []HistoryHit{}}
			for _, h := range res.Results {
				out.Results = append(out.Results, HistoryHit{Utterance: utterance(h.Utterance), Score: h.RelevanceScore, Lexical: h.Lexical, Semantic: h.Semantic})
			}
			return out, nil
		})
	addTool(s, toolSpec{name: "conversation_summary", title: "Conversation summary",
		description: "The running summary of a conversation: what the messages that left its buffer said.",
		readOnly:    true, idempotent: true},
		conversationSummary)
	addTool(s, toolSpec{name: "thread_context", title: "Thread context",
		description: "The assembled episodic context for a thread's next turn: its recent questions and answers, the earlier " +
			"threads it continues, summaries and skills of compacted episodes, and the prompt text for them.",
		readOnly: true, idempotent: true},
		threadContextFor)
}

// logMessage writes a message to the conversation, and with a channel to
// a thread first: thread.message checks the channel, the thread and the
// text before anything is stored, and the conversation's message then
// records where it went (as chat.send's do). history.write's dry run
// checks what it would refuse before the thread is touched, so that a
// refused message is stored nowhere.
func logMessage(ctx context.Context, cl *caller, in LogMessageInput) (LogMessageOutput, error) {
	conversation, err := history.ConversationName(in.Conversation)
	if err != nil {
		return LogMessageOutput{}, err
	}
	write := history.WriteRequest{Conversation: conversation, Speaker: in.Speaker, Text: in.Text}
	var route *ThreadRoute
	if in.Channel == "" && (in.ThreadID != "" || in.NewThread) {
		// Dropping them would tell the agent nothing of the thread it meant.
		return LogMessageOutput{}, kit.Validation("channel", "give the channel the message came on (web, app, sms, whatsapp or voice): thread_id and new_thread route it to a thread, which only a message on a channel goes to")
	}
	if in.Channel != "" {
		if !slices.Contains(episodic.Speakers, in.Speaker) {
			return LogMessageOutput{}, kit.Validation("speaker", "a message on a channel is the user's or the assistant's, not %q; log system messages without a channel", in.Speaker)
		}
		if in.NewThread && (!episodic.IsExplicit(in.Channel) || in.ThreadID != "") {
			return LogMessageOutput{}, kit.Validation("new_thread", "a new thread is started on web or app, without thread_id")
		}
		// thread.message commits at once: first ask whether the
		// conversation will take the message (fields, access, budget).
		check := write
		check.DryRun = true
		if _, err := call(ctx, cl, history.ActionWrite, check); err != nil {
			return LogMessageOutput{}, err
		}
		res, err := call(ctx, cl, episodic.ActionThreadMessage, episodic.MessageRequest{Channel: in.Channel, ThreadID: in.ThreadID,
			Text: in.Text, Speaker: in.Speaker, Conversation: conversation, NewThread: in.NewThread})
		if err != nil {
			return LogMessageOutput{}, err
		}
		meta, err := json.Marshal(map[string]core.ChatRoute{"thread": core.NewChatRoute(in.Channel, res)})
		if err != nil {
			return LogMessageOutput{}, errs.New(errs.Internal, "encoding the message's thread: %v", err)
		}
		write.Metadata = meta
		route = &ThreadRoute{ThreadID: res.ThreadID, NewThread: res.NewThread, TurnCount: res.TurnCount, EndedThread: res.EndedThread,
			LinkedThreads: append([]string{}, res.LinkedThreads...)}
	}
	res, err := call(ctx, cl, history.ActionWrite, write)
	if err != nil {
		if route != nil {
			return LogMessageOutput{}, errs.New(errs.KindOf(err), "the message went to thread %s, but writing it to conversation %s failed: %v", route.ThreadID, conversation, err)
		}
		return LogMessageOutput{}, err
	}
	out := LogMessageOutput{Utterance: utterance(res.Utterance), Evicted: res.Evicted, Thread: route}
	if out.Evicted == nil {
		out.Evicted = []int{}
	}
	return out, nil
}
