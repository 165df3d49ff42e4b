package core

import (
	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/trace"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionEngineInfo is the engine.info action. Version, store, language model and counts per subsystem.
	ActionEngineInfo = action.NewRef[conn.InfoArgs, Info]("engine.info")
	// ActionReembed is the embeddings.reembed action. Re-embed every text whose vector is missing or another model's.
	ActionReembed = action.NewRef[ReembedArgs, ReembedResult]("embeddings.reembed")
	// ActionListActions is the actions.list action. Every action with its description and argument fields.
	ActionListActions = action.NewRef[conn.ListActionsArgs, conn.ListActionsResult]("actions.list")
	// ActionTraceList is the trace.list action. Turn trace entries, oldest first, by turn and kind.
	ActionTraceList = action.NewRef[trace.ListArgs, trace.ListResult]("trace.list")
	// ActionTurnStart is the turn.start action. Start a turn and assemble its working-memory context.
	ActionTurnStart = action.NewRef[TurnStartArgs, TurnStartResult]("turn.start")
	// ActionTurnEnd is the turn.end action. End a turn, committing its updates through the context providers.
	ActionTurnEnd = action.NewRef[TurnEndArgs, TurnEndResult]("turn.end")
	// ActionChatSend is the chat.send action. Say something: a turn with working memory, the model's answer (if any), both recorded.
	ActionChatSend = action.NewRef[ChatSendArgs, ChatSendResult]("chat.send")
	// ActionLLMComplete is the llm.complete action. Ask the configured language model (fails with LLMError when offline).
	ActionLLMComplete = action.NewRef[LLMCompleteArgs, LLMCompleteResult]("llm.complete")
)
