package tokens

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionCreate is the token.create action. A new bearer token for an agent, shown once.
	ActionCreate = action.NewRef[CreateArgs, CreateResult]("token.create")
	// ActionList is the token.list action. Every token, without its secret.
	ActionList = action.NewRef[action.None, ListResult]("token.list")
	// ActionRevoke is the token.revoke action. Revoke a token: it authenticates no longer.
	ActionRevoke = action.NewRef[RevokeArgs, RevokeResult]("token.revoke")
)
