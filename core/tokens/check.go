package tokens

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-console/engram/storage"
)

// sortInfos orders tokens oldest first, then by id.
func sortInfos(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// check verifies every stored token for engram check: it decodes, it is
// stored under its own id, its id has the form of one, its agent is named
// and its hash is a SHA-256. A problem names the key.
func (t *Tokens) check(ctx context.Context) ([]string, error) {
	var problems []string
	err := t.env.Store.View(func(tx *storage.Tx) error {
		problems = nil
		return tx.Scan(storage.Prefix([]byte(storage.PrefixToken)), func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			rec, err := decode(k, v)
			if err != nil {
				problems = append(problems, err.Error())
				return nil
			}
			id := strings.TrimPrefix(string(k), storage.PrefixToken)
			sum, herr := hex.DecodeString(rec.SecretSHA256)
			switch {
			case rec.ID != id:
				problems = append(problems, fmt.Sprintf("token record at key %q: its id is %q", k, rec.ID))
			case len(id) != 2*idBytes || !isLowerHex(id):
				problems = append(problems, fmt.Sprintf("token record at key %q: the id is not %d lowercase hex digits", k, 2*idBytes))
			case rec.Agent == "":
				problems = append(problems, fmt.Sprintf("token record at key %q: no agent", k))
			case herr != nil || len(sum) != 32:
				problems = append(problems, fmt.Sprintf("token record at key %q: secret_sha256 is not a SHA-256 in hex", k))
			}
			return nil
		})
	})
	return problems, err
}
