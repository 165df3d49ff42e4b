package cortex

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionCreate is cortex.create: create a goal, action or question (you own it).
	ActionCreate = action.NewRef[CreateArgs, ItemResult]("cortex.create")
	// ActionGet is cortex.get: an item with its field versions.
	ActionGet = action.NewRef[GetArgs, ItemResult]("cortex.get")
	// ActionUpdate is cortex.update: update an item's fields, merging with changes to other fields.
	ActionUpdate = action.NewRef[UpdateArgs, UpdateResult]("cortex.update")
	// ActionDelete is cortex.delete: soft-delete an item (status archived; queries skip it).
	ActionDelete = action.NewRef[IDArgs, ItemResult]("cortex.delete")
	// ActionHistory is cortex.history: an item's audit trail in order, and whether its hash chain verifies.
	ActionHistory = action.NewRef[IDArgs, HistoryResult]("cortex.history")
	// ActionVersion is cortex.version: an item as it was at a version.
	ActionVersion = action.NewRef[VersionArgs, ItemResult]("cortex.version")
	// ActionRevert is cortex.revert: make a new version with the fields of an earlier one.
	ActionRevert = action.NewRef[VersionArgs, ItemResult]("cortex.revert")
	// ActionShare is cortex.share: grant an agent permissions on an item.
	ActionShare = action.NewRef[ShareArgs, ACLResult]("cortex.share")
	// ActionRevoke is cortex.revoke: remove an agent's access to an item.
	ActionRevoke = action.NewRef[RevokeArgs, ACLResult]("cortex.revoke")
	// ActionQuery is cortex.query: items you can read, filtered, in active order, with count and checksum.
	ActionQuery = action.NewRef[Query, QueryResult]("cortex.query")
	// ActionActive is cortex.active: your open items in turn-start order (priority, due date, blocking, age).
	ActionActive = action.NewRef[Query, QueryResult]("cortex.active")
	// ActionBatchQuery is cortex.batch_query: several queries at once, results in query order.
	ActionBatchQuery = action.NewRef[BatchQueryArgs, BatchQueryResult]("cortex.batch_query")
	// ActionBatchUpdate is cortex.batch_update: many updates in one atomic transaction: all or none.
	ActionBatchUpdate = action.NewRef[BatchUpdateArgs, BatchResult]("cortex.batch_update")
	// ActionCommit is cortex.commit: commit a turn's updates at turn end (traced; atomic).
	ActionCommit = action.NewRef[CommitArgs, BatchResult]("cortex.commit")
)
