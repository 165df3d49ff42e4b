package mcpserver

import (
	"context"

	"github.com/engram-console/engram/core/action"
	"github.com/engram-console/engram/core/memory"
)

// MemoryStatsInput is memory_stats's input: none.
type MemoryStatsInput struct{}

// MemoryStatsOutput is memory_stats's output.
type MemoryStatsOutput struct {
	Stores []StoreStats `json:"stores" jsonschema:"every memory store the agent may read, by name"`
}

// StoreStats is one memory store's size and limits.
type StoreStats struct {
	Store     string `json:"store" jsonschema:"the store's name"`
	Type      string `json:"type" jsonschema:"its kind: working, episodic, semantic or procedural"`
	Items     int    `json:"items" jsonschema:"how many items it holds"`
	Tokens    int    `json:"tokens" jsonschema:"how many tokens its items take"`
	MaxItems  int    `json:"max_items" jsonschema:"its item limit (0: none)"`
	MaxTokens int    `json:"max_tokens" jsonschema:"its token limit (0: none)"`
	OnFull    string `json:"on_full" jsonschema:"what a write does when the store is full: evict the least important item, or reject the write"`
	Forgotten int    `json:"forgotten" jsonschema:"items forgotten but kept for audit (memory.unforget brings them back)"`
}

// addMemoryTools registers remember, recall, forget and memory_stats.
func (s *Server) addMemoryTools() {
	addTool(s, toolSpec{name: "memory_stats", title: "Memory stats",
		description: "How many items and tokens each of your memory stores holds, and its limits.",
		readOnly:    true, idempotent: true},
		func(ctx context.Context, cl *caller, _ MemoryStatsInput) (MemoryStatsOutput, error) {
			res, err := call(ctx, cl, memory.ActionStores, action.None{})
			if err != nil {
				return MemoryStatsOutput{}, err
			}
			out := MemoryStatsOutput{Stores: []StoreStats{}}
			for _, c := range res.Stores {
				out.Stores = append(out.Stores, StoreStats{Store: c.Store, Type: c.Type, Items: c.ItemCount, Tokens: c.TokenUsage,
					MaxItems: c.MaxItems, MaxTokens: c.MaxTokens, OnFull: c.OnFull, Forgotten: c.Deleted})
			}
			return out, nil
		})
}
