package memory_test

import (
	"encoding/json"
	"testing"
)

// windowPrompts are benchPrompts' kind of prompt with a time expression.
// Over bigRig's store (an item every five minutes for the year before the
// clock) "last month" places about 11,000 items, "in March" 9,000 and
// "after May" (open to the clock) 38,000 — more than remember reads keys
// of (maxWindowKeys), so most of these windows are told item by item.
var windowPrompts = []string{"Lisbon flight last month", "quarterly budget report in March", "passport renewal after May",
	"Maria invoice three weeks ago", "dentist appointment Friday last week", "car insurance in the summer of 2025"}

// BenchmarkMemoryRememberWindow100k: remember with a 2-3 word prompt and a
// time expression over 100,000 items (bigRig's store), through engine.Do
// (default limit 10, recency order among the relevant items): what the
// key scan of each window's part of the time index adds to
// BenchmarkMemoryRemember100k.
func BenchmarkMemoryRememberWindow100k(b *testing.B) {
	r := bigRig(b)
	args := make([]json.RawMessage, len(windowPrompts))
	for i, p := range windowPrompts {
		args[i], _ = json.Marshal(map[string]any{"store": "big", "prompt": p})
	}
	times := timeRemember(b, r.e, args)
	percentiles(b, times)
}
