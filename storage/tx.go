package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// Tx is a transaction handed to View or Update callbacks. It is only valid
// inside the callback.
type Tx struct {
	txn      *badger.Txn
	writable bool
	store    *Store // names a damaged file
	// refuse, when set, is what a write returns: the store was opened
	// read-only because its file system is full (Store.updateWhenFull).
	refuse error
	// hooks are the CommitHooks of this attempt, by their key.
	hooks     map[any]CommitHook
	hookOrder []CommitHook
}

// Store is the store the transaction reads and writes.
func (tx *Tx) Store() *Store { return tx.store }

// CommitHook is told when the transaction it joined commits: what keeps
// something outside the store (an in-memory index) in step with it.
type CommitHook interface {
	// BeforeCommit runs after the transaction's function has succeeded,
	// right before Badger commits.
	BeforeCommit()
	// AfterCommit runs once the attempt is over: committed says whether
	// its writes are in the store. It runs for every attempt that added
	// the hook, also when BeforeCommit did not run (the function failed).
	AfterCommit(committed bool)
}

// Hook returns the hook of this transaction registered under key, adding
// the one newHook makes the first time. A transaction retried after a
// conflict is a new attempt with no hooks.
func (tx *Tx) Hook(key any, newHook func() CommitHook) CommitHook {
	if h, ok := tx.hooks[key]; ok {
		return h
	}
	if tx.hooks == nil {
		tx.hooks = map[any]CommitHook{}
	}
	h := newHook()
	tx.hooks[key] = h
	tx.hookOrder = append(tx.hookOrder, h)
	return h
}

// beforeCommit tells the hooks that the commit is next.
func (tx *Tx) beforeCommit() {
	for _, h := range tx.hookOrder {
		h.BeforeCommit()
	}
}

// afterCommit tells the hooks how the attempt ended.
func (tx *Tx) afterCommit(committed bool) {
	if tx == nil {
		return
	}
	for _, h := range tx.hookOrder {
		h.AfterCommit(committed)
	}
}

// value copies item's value. Badger answers a value it could not read from
// the value log (a checksum mismatch, a truncated file) with an empty value
// and no error, logging the error instead: an empty value of an item whose
// size is not zero is that case, and becomes a *DamagedError.
func (tx *Tx) value(item *badger.Item) ([]byte, error) {
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, tx.damaged(mapErr(err))
	}
	if len(v) == 0 && item.ValueSize() != 0 {
		reason := fmt.Sprintf("the value of %q could not be read", item.Key())
		if msg := tx.store.lastReadError.Load(); msg != nil {
			reason += ": " + *msg
		}
		return nil, tx.damaged(&DamagedError{Reason: reason})
	}
	return v, nil
}

// damaged names the file of a *DamagedError that does not name one yet.
func (tx *Tx) damaged(err error) error {
	var d *DamagedError
	if errors.As(err, &d) && d.File == "" {
		d.File = tx.store.damagedFile(d.Reason)
	}
	return err
}

// caught turns a panic inside Badger (reading a damaged table) into a
// *DamagedError in *err. Deferred by every method that calls into Badger.
func caught(err *error) {
	if r := recover(); r != nil {
		*err = &DamagedError{Reason: fmt.Sprintf("reading failed inside Badger: %v", r)}
	}
}

// Get returns a copy of the value stored at key, or ErrNotFound.
func (tx *Tx) Get(key []byte) (_ []byte, err error) {
	defer caught(&err)
	item, err := tx.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, tx.damaged(mapErr(err))
	}
	return tx.value(item)
}

// Has reports whether key exists.
func (tx *Tx) Has(key []byte) (_ bool, err error) {
	defer caught(&err)
	_, err = tx.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, tx.damaged(mapErr(err))
}

// Version is the commit version of key's value as this transaction reads
// it: every commit that writes key gives it a new, higher one, so a cache
// of what a key's writes describe is current when its version is. ok is
// false when key does not exist, and in a read-write transaction (a write
// pending in it has no version of its own yet).
func (tx *Tx) Version(key []byte) (_ uint64, ok bool, err error) {
	defer caught(&err)
	if tx.writable {
		return 0, false, nil
	}
	item, err := tx.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, tx.damaged(mapErr(err))
	}
	return item.Version(), true, nil
}

// GetJSON decodes the JSON value at key into v, or returns ErrNotFound.
func (tx *Tx) GetJSON(key []byte, v any) error {
	b, err := tx.Get(key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("storage: decoding %q: %w", key, err)
	}
	return nil
}

// Set writes value at key.
func (tx *Tx) Set(key, value []byte) error {
	if tx.refuse != nil {
		return tx.refuse
	}
	if !tx.writable {
		return ErrReadOnly
	}
	return mapErr(tx.txn.Set(key, value))
}

// SetJSON writes v, encoded as JSON, at key.
func (tx *Tx) SetJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("storage: encoding %q: %w", key, err)
	}
	return tx.Set(key, b)
}

// Delete removes key (a no-op when it does not exist).
func (tx *Tx) Delete(key []byte) error {
	if tx.refuse != nil {
		return tx.refuse
	}
	if !tx.writable {
		return ErrReadOnly
	}
	return mapErr(tx.txn.Delete(key))
}

// Range selects keys for a scan: those starting with Prefix, beginning at
// Start (inclusive; defaults to the first key of the prefix, or the last one
// when Reverse; a Start before the prefix's first key, or after its last one
// when Reverse, means the same as none).
type Range struct {
	Prefix  []byte
	Start   []byte
	Reverse bool
}

// Prefix is the Range of every key starting with p, in ascending order.
func Prefix(p []byte) Range { return Range{Prefix: p} }

// Keys calls fn with a copy of each key in r without reading values: the
// cheap scan that index lookups are made of. fn may return ErrStop, or a
// *SkipTo.
func (tx *Tx) Keys(r Range, fn func(key []byte) error) error {
	return tx.iterate(r, false, func(key, _ []byte) error { return fn(key) })
}

// Scan calls fn with a copy of each key and value in r. fn may return
// ErrStop, or a *SkipTo.
func (tx *Tx) Scan(r Range, fn func(key, value []byte) error) error {
	return tx.iterate(r, true, fn)
}

// Any reports whether a key starts with prefix (it reads one key).
func (tx *Tx) Any(prefix []byte) (bool, error) {
	found := false
	err := tx.Keys(Prefix(prefix), func([]byte) error { found = true; return ErrStop })
	return found, err
}

// Count returns how many keys start with prefix (a key-only scan).
func (tx *Tx) Count(prefix []byte) (int, error) {
	n := 0
	err := tx.Keys(Prefix(prefix), func([]byte) error { n++; return nil })
	return n, err
}

// iterate calls fn with a copy of each key in r, and of its value when values.
func (tx *Tx) iterate(r Range, values bool, fn func(key, value []byte) error) (err error) {
	// A panic inside Badger is a damaged table; one in fn is the caller's
	// and goes on up.
	inFn := false
	defer func() {
		if r := recover(); r != nil {
			if inFn {
				panic(r)
			}
			err = &DamagedError{Reason: fmt.Sprintf("reading failed inside Badger: %v", r)}
		}
	}()
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = values
	opts.Reverse = r.Reverse
	// end is the first key after every key with the prefix (nil: there is none).
	end := PrefixEnd(r.Prefix)
	start := r.Start
	if r.Reverse {
		// Badger's reverse Seek lands on the greatest key <= start: seek to
		// end and step over end itself should it exist. That needs
		// opts.Prefix unset, as Badger's Valid hides keys outside it.
		// (Seeking to prefix+0xFF instead misses keys like prefix+0xFF+0x01.)
		if start == nil || (end != nil && bytes.Compare(start, end) > 0) {
			start = end
		}
	} else {
		opts.Prefix = r.Prefix
		if bytes.Compare(start, r.Prefix) < 0 {
			start = r.Prefix // a Start before the prefix means its first key
		}
	}
	it := tx.txn.NewIterator(opts)
	defer it.Close()
	if start == nil {
		it.Rewind()
	} else {
		it.Seek(start)
	}
	if r.Reverse && end != nil && it.Valid() && bytes.Equal(it.Item().Key(), end) {
		it.Next()
	}
	for it.ValidForPrefix(r.Prefix) {
		item := it.Item()
		var value []byte
		if values {
			if value, err = tx.value(item); err != nil {
				return err
			}
		}
		key := item.KeyCopy(nil)
		inFn = true
		err := fn(key, value)
		inFn = false
		var skip *SkipTo
		switch {
		case err == nil:
			it.Next()
		case errors.Is(err, ErrStop):
			return nil
		case errors.As(err, &skip) && !r.Reverse && skip.Key == nil:
			return nil // past every key there can be (PrefixEnd's nil)
		case errors.As(err, &skip) && !r.Reverse && bytes.Compare(skip.Key, key) > 0:
			it.Seek(skip.Key)
		default:
			return err
		}
	}
	return nil
}

// SkipTo, returned from a forward Keys or Scan callback, moves the scan on
// to the first key at or after Key (which must be after the current key;
// nil, PrefixEnd's answer when no key can follow, ends the scan): how a
// caller that needs one key of each group skips the rest of it.
type SkipTo struct{ Key []byte }

func (s *SkipTo) Error() string { return fmt.Sprintf("skip the scan to %q", s.Key) }

// PrefixEnd returns the smallest key greater than every key starting with
// prefix, or nil when there is none (an empty prefix, or one of only 0xFF):
// a *SkipTo past a group of keys.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] < 0xFF {
			end := append([]byte{}, prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}
