package history_test

import (
	"testing"

	"github.com/engram-console/engram/core/errs"
)

// Issue 13, item 9: a turn_number so large that the next turn's number
// would overflow is refused, naming the field and the limit.
func TestTurnNumberHasALimit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.fail("history.write", `{"speaker": "user", "text": "x", "turn_number": 9223372036854775807}`, errs.Validation,
		"turn_number: must be from 0 to 1000000000")
	r.do("history.write", `{"speaker": "user", "text": "x", "turn_number": 1000000000}`, nil)
}
