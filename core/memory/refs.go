package memory

import "github.com/engram-console/engram/core/action"

// The actions of this package, each with its argument and result types:
// register and call them through these (see action.Ref).
var (
	// ActionConfigure is memory.configure: create a memory store or change its limits and policy.
	ActionConfigure = action.NewRef[ConfigureArgs, Capacity]("memory.configure")
	// ActionMemorize is memory.memorize: store a memory item (making room per the store's policy).
	ActionMemorize = action.NewRef[MemorizeArgs, MemorizeResult]("memory.memorize")
	// ActionRemember is memory.remember: items relevant to a prompt, in the store's order (importance or recency).
	ActionRemember = action.NewRef[RememberArgs, RememberResult]("memory.remember")
	// ActionForget is memory.forget: forget what an instruction names ("oldest", "items tagged x"...), soft or hard.
	ActionForget = action.NewRef[ForgetArgs, ForgetResult]("memory.forget")
	// ActionSummarize is memory.summarize: a summary of a store's items within a token limit.
	ActionSummarize = action.NewRef[SummarizeArgs, SummarizeResult]("memory.summarize")
	// ActionCapacity is memory.capacity: a store's items, tokens, limits and room left.
	ActionCapacity = action.NewRef[CapacityArgs, Capacity]("memory.capacity")
	// ActionStores is memory.stores: every memory store with its capacity.
	ActionStores = action.NewRef[action.None, StoresResult]("memory.stores")
	// ActionGet is memory.get: one memory item, forgotten ones included.
	ActionGet = action.NewRef[GetArgs, GetResult]("memory.get")
)
