package batch

import (
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// FuzzDecodeStep: the line decoder never panics, every failure is a
// ParseError or ValidationError, and every success has an action.
func FuzzDecodeStep(f *testing.F) {
	for _, seed := range []string{
		`{"id": "a1", "action": "cortex.update", "as": "agent_a", "turn": "turn_A_001", "at": "2025-11-05T10:00:00.010Z", "args": {"id": "goal_123"}, "expect_error": "ConflictError"}`,
		`{"action": "engine.info"}`, `{}`, `[]`, `null`, `"x"`, `{"action": 1}`, `{"at": "nope", "action": "x"}`,
		`{"action": "x", "args": []}`, `{"action": "x", "expect_error": "Nope"}`, `{"action": "x", "extra": true}`, `{"action":"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		st, err := DecodeStep(line)
		if err != nil {
			if k := errs.KindOf(err); k != errs.Parse && k != errs.Validation {
				t.Fatalf("DecodeStep(%q): error kind %s: %v", line, k, err)
			}
			return
		}
		if st.Action == "" {
			t.Fatalf("DecodeStep(%q) succeeded without an action", line)
		}
		if len(st.Args) > 0 && st.Args[0] != '{' {
			t.Fatalf("DecodeStep(%q) accepted args that are not an object: %s", line, st.Args)
		}
	})
}
