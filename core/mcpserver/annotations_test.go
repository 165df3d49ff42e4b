package mcpserver

import (
	"slices"
	"testing"
)

func TestMemoryAndConversationToolsSayWhatTheyChangeAndNeed(t *testing.T) {
	cs := connect(t, New(newEngine(t), Options{}))
	type want struct {
		readOnly, destructive, idempotent bool
		required                          []string
	}
	wants := map[string]want{
		// A full working store evicts its least important item to make room.
		"remember":             {destructive: true, required: []string{"text"}},
		"recall":               {readOnly: true, idempotent: true},
		"forget":               {destructive: true},
		"log_message":          {required: []string{"speaker", "text"}},
		"search_history":       {readOnly: true, idempotent: true, required: []string{"query"}},
		"conversation_summary": {readOnly: true, idempotent: true},
		"thread_context":       {readOnly: true, idempotent: true, required: []string{"thread_id"}},
		// It records a turn (started and ended at once).
		"working_memory": {required: []string{"input"}},
	}
	seen := map[string]bool{}
	for _, tool := range listTools(t, cs) {
		w, ok := wants[tool.Name]
		if !ok {
			continue
		}
		seen[tool.Name] = true
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w.readOnly || a.DestructiveHint == nil || *a.DestructiveHint != w.destructive || a.IdempotentHint != w.idempotent {
			t.Errorf("%s annotations = %+v; want read-only %v, destructive %v, idempotent %v", tool.Name, a, w.readOnly, w.destructive, w.idempotent)
		}
		schema, _ := asJSON(t, tool.InputSchema).(map[string]any)
		var required []string
		list, _ := schema["required"].([]any)
		for _, r := range list {
			required = append(required, r.(string))
		}
		slices.Sort(required)
		if !slices.Equal(required, w.required) && !(len(required) == 0 && len(w.required) == 0) {
			t.Errorf("%s requires %v; want %v", tool.Name, required, w.required)
		}
	}
	for name := range wants {
		if !seen[name] {
			t.Errorf("the server does not offer %s", name)
		}
	}
}
