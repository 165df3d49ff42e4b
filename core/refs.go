package core

import (
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/trace"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionEngineInfo is engine.info: version, store, language model and counts per subsystem.
	ActionEngineInfo = action.NewRef[action.None, Info]("engine.info")
	// ActionActionsList is actions.list: every action with its description and argument fields.
	ActionActionsList = action.NewRef[conn.ListActionsArgs, conn.ListActionsResult]("actions.list")
	// ActionTraceList is trace.list: turn trace entries, oldest first, by turn and kind.
	ActionTraceList = action.NewRef[trace.ListArgs, trace.ListResult]("trace.list")
	// ActionTurnStart is turn.start: start a turn and assemble its working-memory context.
	ActionTurnStart = action.NewRef[TurnStartArgs, TurnStartResult]("turn.start")
	// ActionTurnEnd is turn.end: end a turn, committing its updates through the context providers.
	ActionTurnEnd = action.NewRef[TurnEndArgs, TurnEndResult]("turn.end")
	// ActionChatSend is chat.send: say something: a turn with working memory, the model's answer (if any), both recorded.
	ActionChatSend = action.NewRef[ChatSendArgs, ChatSendResult]("chat.send")
	// ActionLlmComplete is llm.complete: ask the configured language model (fails with LLMError when offline).
	ActionLlmComplete = action.NewRef[LLMCompleteArgs, LLMCompleteResult]("llm.complete")
)
