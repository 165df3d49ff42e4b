package history

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionConfigure is history.configure: set a conversation's buffer size, token budget, summary limit or backend.
	ActionConfigure = action.NewRef[ConfigureRequest, Stats]("history.configure")
	// ActionWrite is history.write: record an utterance (evicting the oldest into the summary when full).
	ActionWrite = action.NewRef[WriteRequest, WriteResult]("history.write")
	// ActionRead is history.read: the buffer, oldest first (optionally one speaker's).
	ActionRead = action.NewRef[ReadArgs, Utterances]("history.read")
	// ActionLast is history.last: the n most recent utterances, oldest first.
	ActionLast = action.NewRef[LastArgs, Utterances]("history.last")
	// ActionSearch is history.search: utterances ranked by relevance, evicted ones included.
	ActionSearch = action.NewRef[SearchRequest, SearchResult]("history.search")
	// ActionSummary is history.summary: the running summary of what was evicted.
	ActionSummary = action.NewRef[SummaryArgs, SummaryResult]("history.summary")
	// ActionDelete is history.delete: remove an utterance.
	ActionDelete = action.NewRef[DeleteArgs, DeleteResult]("history.delete")
	// ActionStats is history.stats: a conversation's size, tokens, evictions and summary.
	ActionStats = action.NewRef[StatsArgs, Stats]("history.stats")
	// ActionBackend is history.backend: move a conversation to the in-memory or the durable backend.
	ActionBackend = action.NewRef[BackendArgs, Stats]("history.backend")
	// ActionList is history.list: every conversation with its backend.
	ActionList = action.NewRef[ListArgs, ListResult]("history.list")
	// ActionQuery is history.query: the free-form entry point: "Get all utterances", "Get summary", "last 5", "search X", "add".
	ActionQuery = action.NewRef[QueryArgs, QueryResult]("history.query")
)
