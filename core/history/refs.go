package history

import (
	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionConfigure is the history.configure action. Set a conversation's buffer size, token budget, summary limit or backend.
	ActionConfigure = action.NewRef[ConfigureRequest, Stats]("history.configure")
	// ActionWrite is the history.write action. Record an utterance (evicting the oldest into the summary when full).
	ActionWrite = action.NewRef[WriteRequest, WriteResult]("history.write")
	// ActionRead is the history.read action. The buffer, oldest first (optionally one speaker's).
	ActionRead = action.NewRef[ReadArgs, Utterances]("history.read")
	// ActionLast is the history.last action. The n most recent utterances, oldest first.
	ActionLast = action.NewRef[LastArgs, Utterances]("history.last")
	// ActionSearch is the history.search action. Utterances ranked by relevance, evicted ones included.
	ActionSearch = action.NewRef[SearchRequest, SearchResult]("history.search")
	// ActionSummary is the history.summary action. The running summary of what was evicted.
	ActionSummary = action.NewRef[SummaryArgs, SummaryResult]("history.summary")
	// ActionDelete is the history.delete action. Remove an utterance.
	ActionDelete = action.NewRef[DeleteArgs, DeleteResult]("history.delete")
	// ActionDrop is the history.drop action. Delete a conversation and everything in it.
	ActionDrop = action.NewRef[DropArgs, DropResult]("history.drop")
	// ActionStats is the history.stats action. A conversation's size, tokens, evictions and summary.
	ActionStats = action.NewRef[StatsArgs, Stats]("history.stats")
	// ActionBackend is the history.backend action. Move a conversation to the in-memory or the durable backend.
	ActionBackend = action.NewRef[BackendArgs, Stats]("history.backend")
	// ActionList is the history.list action. Every conversation the caller may read, with its backend.
	ActionList = action.NewRef[ListArgs, ListResult]("history.list")
	// ActionQuery is the history.query action. The free-form entry point: "Get all utterances", "Get summary", "last 5", "search X", "add".
	ActionQuery = action.NewRef[QueryArgs, QueryResult]("history.query")
	// ActionShare is the history.share action. Give another agent read, write, delete or share access to a conversation.
	ActionShare = action.NewRef[ShareArgs, access.ACL]("history.share")
	// ActionRevoke is the history.revoke action. Take back an agent's access to a conversation.
	ActionRevoke = action.NewRef[RevokeArgs, access.ACL]("history.revoke")
)
