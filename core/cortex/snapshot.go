package cortex

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/engram-console/engram/core/cortex/memindex"
	"github.com/engram-console/engram/storage"
)

// The query index of a durable store is saved in a snapshot file beside
// the store, so that opening a million items does not read and decode a
// million items (seconds) but loads the snapshot (a fraction of one).
//
// The store says which snapshot is current and what changed since:
//   - meta/cortex-index/snapshot holds the token of the current snapshot,
//     the first line of its file. A file whose token is not the store's
//     (written by a save that did not finish, or beside a restored store)
//     is not used: the index is built from the items instead.
//   - meta/cortex-index/changed/<id> holds the version of an item each
//     commit that changes it writes, in the same transaction. Loading the
//     snapshot then reads just those items again. A save deletes the keys
//     its snapshot covers (same or older version).
//
// So the index is exact after a kill -9 too: every committed change is in
// the snapshot or named by a changed key. (An engram older than the index
// writes no changed keys: run this one's `engram check` after one has
// written a store.)
const snapshotFile = "cortex-index.snap"

// snapshotMinItems is the size from which an index is worth a snapshot:
// below it, building from the items takes no longer than loading (a
// variable for the tests).
var snapshotMinItems = 10_000

// saveAfterChanges is how many changed items make a running engine save a
// new snapshot, bounding what the next open reads again.
const saveAfterChanges = 100_000

func snapshotTokenKey() []byte { return storage.Key(storage.PrefixMeta, "cortex-index", "snapshot") }
func changedKey(id string) []byte {
	return storage.Key(storage.PrefixMeta, "cortex-index", "changed", id)
}
func changedPrefix() []byte { return storage.PrefixKey(storage.PrefixMeta, "cortex-index", "changed") }

// journal records in tx that item it changed to its version, for the next
// open (durable stores only: an in-memory one has no snapshot).
func (c *Cortex) journal(tx *storage.Tx, it *Item) error {
	if c.env.Store.Dir() == "" {
		return nil
	}
	return tx.Set(changedKey(it.ID), []byte(strconv.Itoa(it.GlobalVersion)))
}

// loadSnapshot returns the index of the store's current snapshot with
// every change since applied, or nil if there is no usable snapshot. It
// reads the changes in tx, the snapshot the index is then exact for.
// (Queries wait meanwhile: startIndexing saw the file.)
func loadSnapshot(tx *storage.Tx, dir string) (*memindex.Index, int, error) {
	if dir == "" {
		return nil, 0, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	if err != nil {
		// Missing or unreadable (another owner's, a directory): no
		// snapshot, so the index is built from the items, as for a
		// damaged one, rather than not at all.
		return nil, 0, nil
	}
	token, body, ok := bytes.Cut(data, []byte("\n"))
	want, err := tx.Get(snapshotTokenKey())
	if errors.Is(err, storage.ErrNotFound) || !ok || !bytes.Equal(token, want) {
		return nil, 0, nil // not the store's current snapshot
	} else if err != nil {
		return nil, 0, err
	}
	if snapshotLoadHook != nil {
		snapshotLoadHook(dir)
	}
	idx, err := memindex.ReadSnapshot(body)
	if err != nil {
		return nil, 0, nil // damaged: build from the items instead
	}
	replayed := 0
	err = tx.Keys(storage.Prefix(changedPrefix()), func(k []byte) error {
		id := storage.LastPart(k)
		var it Item
		switch err := tx.GetJSON(itemKey(id), &it); {
		case errors.Is(err, storage.ErrNotFound):
			idx.Remove(id)
		case err != nil:
			return err
		default:
			idx.Put(rowOf(&it))
		}
		replayed++
		return nil
	})
	return idx, replayed, err
}

// save writes a snapshot of the index and makes it the store's current
// one, deleting the changed keys it covers. Commits may go on meanwhile:
// it holds the index for reading only while it encodes it.
func (li *liveIndex) save(store *storage.Store) error {
	dir := store.Dir()
	if dir == "" {
		return nil
	}
	var buf bytes.Buffer
	token := make([]byte, 16)
	_, _ = rand.Read(token) // never fails (crypto/rand's contract)
	buf.WriteString(hex.EncodeToString(token) + "\n")
	covered := map[string]int{} // changed item → the version saved
	li.mu.RLock()
	if li.idx == nil {
		li.mu.RUnlock()
		return nil
	}
	err := li.idx.WriteSnapshot(&buf)
	if err == nil {
		err = store.View(func(tx *storage.Tx) error {
			return tx.Keys(storage.Prefix(changedPrefix()), func(k []byte) error {
				id := storage.LastPart(k)
				covered[id] = li.idx.Version(id)
				return nil
			})
		})
	}
	li.changed = 0
	li.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := writeFileDurably(filepath.Join(dir, snapshotFile), buf.Bytes()); err != nil {
		return err
	}
	// The token first, with the first of the covered keys: a key left
	// over (a crash between batches) only has its item read again. A
	// Badger transaction holds some 100,000 writes, and an import leaves
	// a changed key per item: the rest go in batches.
	ids := slices.Sorted(maps.Keys(covered))
	first := true
	for first || len(ids) > 0 {
		batch := ids[:min(len(ids), saveBatch)]
		ids = ids[len(batch):]
		err := store.Update(context.Background(), func(tx *storage.Tx) error {
			for _, id := range batch {
				v, err := tx.Get(changedKey(id))
				if errors.Is(err, storage.ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
				// A change committed after the encoding has a later version:
				// its key stays. (Reading the key puts it in the transaction's
				// conflict set, so a change committed meanwhile retries this.)
				if n, err := strconv.Atoi(string(v)); err == nil && n <= covered[id] {
					if err := tx.Delete(changedKey(id)); err != nil {
						return err
					}
				}
			}
			if first {
				return tx.Set(snapshotTokenKey(), []byte(hex.EncodeToString(token)))
			}
			return nil
		})
		if err != nil {
			return err
		}
		first = false
	}
	return nil
}

// saveBatch is how many changed keys a save deletes a transaction.
const saveBatch = 10_000

// writeFileDurably replaces path with data: a temporary file, synced, then
// renamed over it, and the directory synced.
func writeFileDurably(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: the next save truncates it anyway
		return fmt.Errorf("saving the cortex query index: %w", err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
