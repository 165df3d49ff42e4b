package memory

import (
	"github.com/engram-console/engram/core/access"
	"github.com/engram-console/engram/core/action"
)

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionConfigure is the memory.configure action. Create a memory store or change its limits and policy.
	ActionConfigure = action.NewRef[ConfigureArgs, Capacity]("memory.configure")
	// ActionMemorize is the memory.memorize action. Store a memory item (making room per the store's policy).
	ActionMemorize = action.NewRef[MemorizeArgs, MemorizeResult]("memory.memorize")
	// ActionRemember is the memory.remember action. Items relevant to a prompt, in the store's order (importance or recency).
	ActionRemember = action.NewRef[RememberArgs, RememberResult]("memory.remember")
	// ActionForget is the memory.forget action. Forget what an instruction names ("oldest", "items tagged x"...), soft or hard.
	ActionForget = action.NewRef[ForgetArgs, ForgetResult]("memory.forget")
	// ActionSummarize is the memory.summarize action. A summary of a store's items within a token limit.
	ActionSummarize = action.NewRef[SummarizeArgs, SummarizeResult]("memory.summarize")
	// ActionCapacity is the memory.capacity action. A store's items, tokens, limits and room left.
	ActionCapacity = action.NewRef[CapacityArgs, Capacity]("memory.capacity")
	// ActionStores is the memory.stores action. Every memory store with its capacity.
	ActionStores = action.NewRef[action.None, StoresResult]("memory.stores")
	// ActionGet is the memory.get action. One memory item, forgotten ones included.
	ActionGet = action.NewRef[GetArgs, GetResult]("memory.get")
	// ActionShare is the memory.share action. Grant an agent permissions on a memory store.
	ActionShare = action.NewRef[ShareArgs, access.ACL]("memory.share")
	// ActionRevoke is the memory.revoke action. Remove an agent's access to a memory store.
	ActionRevoke = action.NewRef[RevokeArgs, access.ACL]("memory.revoke")
	// ActionUnforget is the memory.unforget action. Bring a soft-forgotten item back.
	ActionUnforget = action.NewRef[UnforgetArgs, UnforgetResult]("memory.unforget")
)
