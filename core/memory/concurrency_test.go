package memory_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/memory"
)

// TestConcurrentMemorize: writers racing into a bounded store (with
// readers and forgetters racing them) never take it past its limits, and
// its counters always equal a recount of its live items.
func TestConcurrentMemorize(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-memory", true: "durable"}[durable], func(t *testing.T) {
			o := rigOptions{}
			if durable {
				o.dir = t.TempDir()
			}
			r := newRigWith(t, o)
			const writers, each, maxItems, budget = 6, 20, 15, 600
			r.configure(map[string]any{"store": "race", "type": "working", "max_items": maxItems, "token_budget": budget})
			var (
				wg     sync.WaitGroup
				mu     sync.Mutex
				failed []error
			)
			report := func(err error) {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						item := it(fmt.Sprintf("w%d-%02d", w, i), fmt.Sprintf("writer %d note %d about the race", w, i),
							"importance", float64((w*7+i*3)%10)/10, "tokens_estimate", 10+(w*13+i*7)%50)
						if _, err := r.Try(agent, "memory.memorize", map[string]any{"store": "race", "item": item}); err != nil {
							report(fmt.Errorf("memorize %v: %w", item["id"], err))
						}
						switch i % 5 {
						case 0:
							var c memory.Capacity
							raw, err := r.Try(agent, "memory.capacity", map[string]any{"store": "race"})
							if err == nil {
								err = jsonUnmarshal(raw, &c)
							}
							if err != nil {
								report(err)
							} else if c.ItemCount > maxItems || c.TokenUsage > budget {
								report(fmt.Errorf("over the limits: %+v", c))
							}
						case 2:
							if _, err := r.Try(agent, "memory.remember", map[string]any{"store": "race", "prompt": "race note"}); err != nil {
								report(err)
							}
						case 4:
							_, err := r.Try(agent, "memory.forget", map[string]any{"store": "race", "instruction": "least important", "mode": []string{"soft", "hard"}[w%2]})
							if err != nil && errs.KindOf(err) != errs.NotFound {
								report(err)
							}
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range failed {
				t.Error(err)
			}
			c := r.checkCounters("race")
			if c.ItemCount == 0 || c.ItemCount > maxItems || c.TokenUsage > budget {
				t.Errorf("capacity %+v", c)
			}
			live, _, deleted := r.recount("race")
			forgotten := writers * (each / 5) // one least-important forget each fifth step
			if live+deleted > writers*each || live+deleted < writers*each-forgotten {
				t.Errorf("%d live + %d deleted items of %d memorized", live, deleted, writers*each)
			}
		})
	}
}
