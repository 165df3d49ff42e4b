package cortex

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
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

// Issue 17, "Bad input and limits": a page over 1,000, a filter list of
// 10,000 values, a 100 KB text filter, too many words, and cursors that
// were tampered with are each a ValidationError naming the field.
func TestOversizedFiltersAndTamperedCursorsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 3 {
		e.create(agentA, "goal", fmt.Sprintf("g%d", i), obj{"title": "alpha"})
	}
	page := e.query(agentA, "cortex.query", Query{Limit: 1})
	if page.NextCursor == "" {
		t.Fatal("the test needs a cursor")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(page.NextCursor)
	many := func(v string) []string { return slices.Repeat([]string{v}, 10_000) }
	for _, c := range []struct {
		args  obj
		field string
	}{
		{obj{"limit": 1001}, "limit"},
		{obj{"tags": many("t1")}, "tags"},
		{obj{"status": many("active")}, "status"},
		{obj{"priority": many("high")}, "priority"},
		{obj{"text": strings.Repeat("alpha ", 100_000/6)}, "text"},
		{obj{"text": "w01 w02 w03 w04 w05 w06 w07 w08 w09 w10 w11 w12 w13 w14 w15 w16 w17"}, "text"},
		{obj{"cursor": "not base64!"}, "cursor"},
		{obj{"cursor": base64.RawURLEncoding.EncodeToString([]byte("zz|~|0|x\ng1"))}, "cursor"},
		{obj{"cursor": base64.RawURLEncoding.EncodeToString(append([]byte("9"), raw[1:]...)[:len(raw)-3])}, "cursor"},
		{obj{"cursor": base64.RawURLEncoding.EncodeToString(bytes.Replace(raw, []byte("|"), []byte("/"), 1))}, "cursor"},
	} {
		for _, name := range []string{"cortex.query", "cortex.active"} {
			err := e.Fail(agentA, name, c.args, errs.Validation)
			if err.Details["field"] != c.field {
				t.Errorf("%s %.80v: field %v, want %s (%s)", name, c.args, err.Details["field"], c.field, err.Message)
			}
		}
	}
}
