package cortex

import (
	"strings"
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// Issue 13, item 9: control characters are refused in one-line text fields
// (an escape sequence in a title could take over a terminal), custom fields
// have a size limit, and each error names the field and the limit; a
// refused write changes nothing.
func TestTextFieldsRefuseControlsAndCustomValuesHaveALimit(t *testing.T) {
	e := newEnv(t)
	e.create(agentA, "goal", "goal_1", obj{"title": "target"})
	upd := func(updates obj) obj { return obj{"id": "goal_1", "updates": updates} }
	for name, c := range map[string]struct {
		args     obj
		fragment string
	}{
		"escape in title":    {upd(obj{"title": "red \x1b[31malert"}), "title: must not contain control characters (found U+001B)"},
		"C1 in title":        {upd(obj{"title": "next\u0085line"}), "title: must not contain control characters (found U+0085)"},
		"newline in title":   {upd(obj{"title": "two\nlines"}), "title: must not contain control characters (found U+000A)"},
		"NUL in org":         {upd(obj{"org": "a\x00b"}), "org: must not contain control characters"},
		"escape in desc":     {upd(obj{"description": "x\x1b]0;pwned\x07"}), "description: must not contain control characters (found U+001B)"},
		"big custom value":   {upd(obj{"custom": obj{"blob": strings.Repeat("x", 70_000)}}), "custom.blob: is 70002 bytes of JSON; at most 65536"},
		"control custom key": {upd(obj{"custom": obj{"a\x1bb": 1}}), "must not contain control characters"},
	} {
		t.Run(name, func(t *testing.T) {
			before := e.dump()
			e.T = t
			e.Fail(agentA, "cortex.update", c.args, errs.Validation, c.fragment)
			if d := sameDump(before, e.dump()); d != "" {
				t.Fatalf("wrote:\n%s", d)
			}
		})
	}
	// Newlines, carriage returns and tabs are text in a description.
	e.T = t
	e.update(agentA, "goal_1", obj{"description": "line one\r\n\tline two"}, -1)
}
