//go:build !noplanning

package planner

import "encoding/json"

// The state of a run is a JSON object that subtasks read and write. Each
// subtask starts from its own deep copy of the state its ancestors built:
// the plan's initial state with the delta (the keys written, and
// results.<id>) of every completed ancestor applied in execution order. The
// final state applies every completed subtask's delta the same way. So when
// two parallel branches write the same key, the one that comes later in the
// execution order (topological, ties broken by plan position) wins — the
// same value on every run, whatever finished first.

// applyDelta merges delta into state: objects merge member by member
// (recursively), anything else replaces.
func applyDelta(state, delta map[string]any) {
	for k, v := range delta {
		if sub, ok := v.(map[string]any); ok {
			if cur, ok := state[k].(map[string]any); ok {
				applyDelta(cur, sub)
				continue
			}
		}
		state[k] = deepCopy(v)
	}
}

// deepCopy copies a JSON value (maps and slices all the way down).
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

// initialState decodes the plan's initial state ({} when none).
func (p *Plan) initialState() map[string]any { return decodeState(p.State) }

func decodeState(raw json.RawMessage) map[string]any {
	out := map[string]any{}
	if len(raw) > 0 {
		// plan.create took only an object; anything else reads as the empty state.
		_ = json.Unmarshal(raw, &out)
		if out == nil {
			out = map[string]any{}
		}
	}
	return out
}

// index maps subtask ids to subtasks.
func (p *Plan) index() map[string]*Subtask {
	m := make(map[string]*Subtask, len(p.Subtasks))
	for _, s := range p.Subtasks {
		m[s.ID] = s
	}
	return m
}

// stateFrom is the state a subtask starts from: the initial state with the
// deltas of its completed ancestors applied, in execution order (the
// executor lists them). It shares nothing with them.
func stateFrom(initial json.RawMessage, deltas []map[string]any) map[string]any {
	state := decodeState(initial)
	for _, d := range deltas {
		applyDelta(state, d)
	}
	return state
}

// finalState applies every completed subtask's delta in execution order.
func (p *Plan) finalState(order []string) map[string]any {
	byID := p.index()
	state := p.initialState()
	for _, s := range order {
		if st := byID[s]; st != nil && st.Status == Completed {
			applyDelta(state, st.Delta)
		}
	}
	return state
}
