package cortex

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/engram-console/engram/storage"
)

// checkStored verifies every item's audit chain (engram check): each
// entry's hash, each link, and versions 1..global_version with no gap,
// anchored by the chain head. A problem names the item and the version.
func (c *Cortex) checkStored(ctx context.Context) ([]string, error) {
	var problems []string
	err := c.env.Store.View(func(tx *storage.Tx) error {
		return tx.Scan(storage.Prefix(itemPrefix()), func(key, value []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var it Item
			if err := json.Unmarshal(value, &it); err != nil {
				problems = append(problems, fmt.Sprintf("cortex item at key %q: unreadable: %v", key, err))
				return nil
			}
			_, check, err := readHistory(tx, it.ID, it.GlobalVersion)
			if err != nil {
				return err
			}
			if !check.Verified {
				problems = append(problems, fmt.Sprintf("cortex item %s: audit chain broken at version %d: %s", it.ID, check.BrokenAt, check.Problem))
			}
			return nil
		})
	})
	return problems, err
}
