package cortex

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/engram-console/engram/storage"
)

// Mutation is one immutable audit entry: what changed, from which version
// to which, by whom, in which turn and transaction. Entries of an item are
// hash-chained: each carries the hash of the one before, so a changed,
// removed or reordered entry is detected by cortex.history.
type Mutation struct {
	MutationID               string                 `json:"mutation_id"`
	ItemID                   string                 `json:"item_id"`
	MutationType             string                 `json:"mutation_type"` // create|update|delete|revert|share|revoke
	PreviousVersion          *int                   `json:"previous_version"`
	NewVersion               int                    `json:"new_version"`
	ChangedFields            []string               `json:"changed_fields"`
	FieldChanges             map[string]FieldChange `json:"field_changes"`
	MutatedBy                string                 `json:"mutated_by"`
	AgentID                  string                 `json:"agent_id"`
	TurnID                   string                 `json:"turn_id,omitempty"`
	MutationTimestamp        time.Time              `json:"mutation_timestamp"`
	TransactionID            string                 `json:"transaction_id"`
	MergeApplied             bool                   `json:"merge_applied"`
	AgentPermissionsVerified bool                   `json:"agent_permissions_verified"`
	// Summary says it in words: "reverted from v5 to v3", "shared with
	// agent_b, permissions: [read, write]".
	Summary  string `json:"summary,omitempty"`
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// FieldChange is one field's old and new value and its version step ("3→4").
type FieldChange struct {
	Old     any    `json:"old"`
	New     any    `json:"new"`
	Version string `json:"version"`
}

func itemKey(id string) []byte { return storage.Key(storage.PrefixCortex, "item", id) }
func versionKey(id string, v int) []byte {
	return storage.Key(storage.PrefixCortex, "ver", id, storage.Uint64(uint64(v)))
}
func auditKey(id string, v int) []byte {
	return storage.Key(storage.PrefixCortex, "audit", id, storage.Uint64(uint64(v)))
}
func auditPrefix(id string) []byte { return storage.PrefixKey(storage.PrefixCortex, "audit", id) }
func itemPrefix() []byte           { return storage.PrefixKey(storage.PrefixCortex, "item") }
func auditCountPrefix() []byte     { return storage.PrefixKey(storage.PrefixCortex, "audit") }

// sealAndEncode sets m's hash (chained to prevHash) and returns the bytes to
// store.
func sealAndEncode(m *Mutation, prevHash string) ([]byte, error) {
	m.PrevHash, m.Hash = prevHash, ""
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	sum, err := entryHash(body)
	if err != nil {
		return nil, err
	}
	m.Hash = sum
	// Hash is the last member: fill it in rather than encode m again.
	const empty = `"hash":""}`
	if !bytes.HasSuffix(body, []byte(empty)) {
		return json.Marshal(m)
	}
	sealed := make([]byte, 0, len(body)+len(sum))
	sealed = append(sealed, body[:len(body)-len(empty)]...)
	return append(sealed, `"hash":"`+sum+`"}`...), nil
}

// entryHash hashes an entry's stored form without its "hash" member, in a
// canonical member order, keeping every value's bytes as stored: any change
// to a stored value changes the hash.
func entryHash(stored []byte) (string, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(stored, &members); err != nil {
		return "", fmt.Errorf("audit entry is not a JSON object: %w", err)
	}
	delete(members, "hash")
	canonical, err := json.Marshal(members) // members sorted by name
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// headKey holds the hash of an item's latest audit entry: the anchor that
// makes rewriting the end of a trail (or all of it) detectable without also
// rewriting this key.
func headKey(id string) []byte { return storage.Key(storage.PrefixCortex, "head", id) }

// chainHead is the hash of the item's latest audit entry ("" before any).
func chainHead(tx *storage.Tx, id string) (string, error) {
	b, err := tx.Get(headKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return string(b), err
}

// ChainCheck is the outcome of verifying an item's audit trail.
type ChainCheck struct {
	Verified bool `json:"chain_verified"`
	// Problem says what broke, and BrokenAt at which entry (its new_version).
	Problem  string `json:"chain_problem,omitempty"`
	BrokenAt int    `json:"chain_broken_at,omitempty"`
}

// readHistory returns an item's audit entries in version order and checks
// the chain: every entry's hash, every link, and versions 1, 2, 3... up to
// last (the item's version) with no gap, each entry stored under its own
// version and its previous_version being the one before's new_version.
func readHistory(tx *storage.Tx, id string, last int) ([]Mutation, ChainCheck, error) {
	var out []Mutation
	check := ChainCheck{Verified: true}
	fail := func(at int, format string, args ...any) {
		if check.Verified {
			check = ChainCheck{Verified: false, BrokenAt: at, Problem: fmt.Sprintf(format, args...)}
		}
	}
	prevHash := ""
	want := 1 // the version the next entry should have
	err := tx.Scan(storage.Prefix(auditPrefix(id)), func(key, value []byte) error {
		stored, err := storage.ParseUint64(storage.LastPart(key))
		at := int(stored)
		if err != nil {
			fail(want, "entry %q has no version in its key", storage.LastPart(key))
			at = want
		}
		if at != want {
			fail(want, "version v%d is missing from the trail", want)
		}
		if at > last {
			fail(at, "entry v%d is beyond the item's version v%d", at, last)
		}
		want = at + 1
		var m Mutation
		if err := json.Unmarshal(value, &m); err != nil {
			fail(at, "entry v%d cannot be read: %v", at, err)
			prevHash = ""
			return nil
		}
		sum, err := entryHash(value)
		switch {
		case err != nil:
			fail(at, "entry v%d cannot be hashed: %v", at, err)
		case sum != m.Hash:
			fail(at, "entry v%d was altered: its hash does not match its contents", at)
		case m.ItemID != id:
			fail(at, "entry v%d belongs to %s (it was copied from another item's trail)", at, m.ItemID)
		case m.NewVersion != at:
			fail(at, "the entry stored as v%d is the one of v%d (entries were swapped or moved)", at, m.NewVersion)
		case m.PrevHash != prevHash:
			fail(at, "entry v%d does not follow the entry before it (an entry was removed, replaced or reordered)", at)
		case at == 1 && m.PreviousVersion != nil, at > 1 && (m.PreviousVersion == nil || *m.PreviousVersion != at-1):
			fail(at, "entry v%d does not start from v%d", at, at-1)
		}
		prevHash = m.Hash
		out = append(out, m)
		return nil
	})
	if err == nil && want <= last {
		fail(want, "version v%d is missing from the trail (the item is at v%d)", want, last)
	}
	if err == nil {
		head, herr := chainHead(tx, id)
		if herr != nil {
			return out, check, herr
		}
		if head != prevHash {
			fail(last, "the trail does not end at the entry the item recorded as its latest (the end of the trail was rewritten)")
		}
	}
	return out, check, err
}
