package cortex

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionCreate is the cortex.create action. Create a goal, action or question (you own it).
	ActionCreate = action.NewRef[CreateArgs, ItemResult]("cortex.create")
	// ActionGet is the cortex.get action. An item with its field versions.
	ActionGet = action.NewRef[GetArgs, ItemResult]("cortex.get")
	// ActionUpdate is the cortex.update action. Update an item's fields, merging with changes to other fields.
	ActionUpdate = action.NewRef[UpdateArgs, UpdateResult]("cortex.update")
	// ActionDelete is the cortex.delete action. Soft-delete an item (status archived; queries skip it).
	ActionDelete = action.NewRef[IDArgs, ItemResult]("cortex.delete")
	// ActionHistory is the cortex.history action. An item's audit trail in order, and whether its hash chain verifies.
	ActionHistory = action.NewRef[IDArgs, HistoryResult]("cortex.history")
	// ActionVersion is the cortex.version action. An item as it was at a version.
	ActionVersion = action.NewRef[VersionArgs, ItemResult]("cortex.version")
	// ActionRevert is the cortex.revert action. Make a new version with the fields of an earlier one.
	ActionRevert = action.NewRef[VersionArgs, ItemResult]("cortex.revert")
	// ActionShare is the cortex.share action. Grant an agent permissions on an item.
	ActionShare = action.NewRef[ShareArgs, ACLResult]("cortex.share")
	// ActionRevoke is the cortex.revoke action. Remove an agent's access to an item.
	ActionRevoke = action.NewRef[RevokeArgs, ACLResult]("cortex.revoke")
	// ActionQuery is the cortex.query action. Items you can read, filtered, in active order, with count and checksum.
	ActionQuery = action.NewRef[Query, QueryResult]("cortex.query")
	// ActionActive is the cortex.active action. Your open items in turn-start order (priority, due date, blocking, age).
	ActionActive = action.NewRef[Query, QueryResult]("cortex.active")
	// ActionBatchQuery is the cortex.batch_query action. Several queries at once, results in query order.
	ActionBatchQuery = action.NewRef[BatchQueryArgs, BatchQueryResult]("cortex.batch_query")
	// ActionBatchUpdate is the cortex.batch_update action. Many updates in one atomic transaction: all or none.
	ActionBatchUpdate = action.NewRef[BatchUpdateArgs, BatchResult]("cortex.batch_update")
	// ActionCommit is the cortex.commit action. Commit a turn's updates at turn end (traced; atomic).
	ActionCommit = action.NewRef[CommitArgs, BatchResult]("cortex.commit")
)
