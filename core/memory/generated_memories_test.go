package memory_test

import (
	"github.com/engram-console/engram/core/memory"
	"github.com/engram-console/engram/core/scale"
)

// corpus makes realistic, varied short memories: a person, a place, a
// thing, a day, an amount in one of many sentence shapes, with 1-3 of
// about 20 tags, one of several agents, an importance and a timestamp
// spread over a year. It is engram scale's generator (core/scale), so
// that the 1M-memory store it builds is this corpus.
type corpus struct{ gen *scale.Memories }

func newCorpus(seed uint64) *corpus { return &corpus{gen: scale.NewMemories(seed)} }

// item is the i-th memory of a data set (call it for i = 0, 1, 2...).
func (c *corpus) item(i int) memory.Item { return c.gen.Item(i) }

// benchPrompts are 2-3 word prompts over the corpus's vocabulary.
var benchPrompts = []string{"Lisbon flight", "dentist appointment Friday", "Maria invoice", "urgent server migration",
	"passport renewal", "hotel in Osaka", "quarterly budget report", "Tom birthday dinner", "overdue tax refund",
	"allergic peanuts", "Berlin conference ticket", "car insurance"}
