//go:build !noplanning

package planner

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/input"
	"github.com/engram-console/engram/storage"
	"github.com/klauspost/compress/zstd"
)

// A checkpoint is a plan as bytes: a header — the magic "EPLN", a format
// version, the payload's length and CRC-32 — then the plan as zstd-compressed
// JSON. The header makes a truncated or corrupted checkpoint an error
// before anything is decoded; JSON keeps results (themselves JSON) as they
// are; zstd makes it small (a 100-subtask plan with short results is a few
// kilobytes; see TestCheckpointSize).
var checkpointMagic = []byte("EPLN")

const checkpointVersion = 1

// maxCheckpoint bounds what decode accepts (a corrupt length must not make
// it allocate without limit).
const maxCheckpoint = 64 << 20

// checkpointHeader is the magic, the version, the size and the checksum.
const checkpointHeader = 4 + 1 + 8

var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxCheckpoint))
)

// EncodeCheckpoint turns a plan into checkpoint bytes.
func EncodeCheckpoint(p *Plan) ([]byte, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	payload := encoder.EncodeAll(body, nil)
	var b bytes.Buffer
	b.Write(checkpointMagic)
	b.WriteByte(checkpointVersion)
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(n[4:], crc32.ChecksumIEEE(payload))
	b.Write(n[:])
	b.Write(payload)
	return b.Bytes(), nil
}

// DecodeCheckpoint reads checkpoint bytes. Anything wrong with them — short,
// not a checkpoint, another version, a bad checksum, bad compression, bad
// JSON, a plan that does not hold together — is a CheckpointError; it never
// panics (FuzzDecodeCheckpoint).
func DecodeCheckpoint(b []byte) (*Plan, error) {
	fail := func(format string, args ...any) (*Plan, error) {
		return nil, errs.New(errs.Checkpoint, "checkpoint unreadable: "+format, args...)
	}
	const header = checkpointHeader
	switch {
	case len(b) < header:
		return fail("%d bytes, shorter than its header (truncated?)", len(b))
	case !bytes.Equal(b[:4], checkpointMagic):
		return fail("not an engram plan checkpoint")
	case b[4] != checkpointVersion:
		return fail("format version %d; this engram reads version %d", b[4], checkpointVersion)
	}
	size := binary.BigEndian.Uint32(b[5:9])
	sum := binary.BigEndian.Uint32(b[9:13])
	payload := b[header:]
	switch {
	case size > maxCheckpoint:
		return fail("claims %d bytes, more than a checkpoint may be", size)
	case int(size) != len(payload):
		return fail("%d bytes of %d (truncated?)", len(payload), size)
	case crc32.ChecksumIEEE(payload) != sum:
		return fail("checksum mismatch (the bytes were damaged)")
	}
	body, err := decoder.DecodeAll(payload, nil)
	if err != nil {
		return fail("bad compression: %v", err)
	}
	var p Plan
	if err := json.Unmarshal(body, &p); err != nil {
		// Say what is wrong in JSON's terms, not Go's.
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fail("bad contents: not JSON at byte %d", syn.Offset)
		case errors.As(err, &typ) && typ.Field != "":
			return fail("bad contents: %s is a JSON %s, which a plan's %s cannot be", typ.Field, typ.Value, typ.Field)
		}
		return fail("bad contents: not a plan")
	}
	if p.ID == "" {
		return fail("the plan has no id")
	}
	for i, s := range p.Subtasks {
		if s == nil {
			return fail("subtask %d is empty", i)
		}
	}
	return &p, nil
}

// Storage: plan/<id> holds the plan (checkpoint-encoded); after each
// subtask's progress only that subtask's record plan/<id>/s/<sid> is written
// (small and quick), and loading lays those over the plan.

func planKey(id string) []byte          { return storage.Key(storage.PrefixPlan, id) }
func planPrefix() []byte                { return []byte(storage.PrefixPlan) }
func progressKey(id, sid string) []byte { return storage.Key(storage.PrefixPlan, id, "s", sid) }
func progressPrefix(id string) []byte   { return storage.PrefixKey(storage.PrefixPlan, id, "s") }

// savePlan writes the whole plan and clears the progress records it folds in.
func savePlan(tx *storage.Tx, p *Plan) error {
	b, err := EncodeCheckpoint(p)
	if err != nil {
		return err
	}
	if err := tx.Set(planKey(p.ID), b); err != nil {
		return err
	}
	var stale [][]byte
	if err := tx.Keys(storage.Prefix(progressPrefix(p.ID)), func(k []byte) error {
		stale = append(stale, k)
		return nil
	}); err != nil {
		return err
	}
	for _, k := range stale {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// saveProgress writes one subtask's record.
func saveProgress(tx *storage.Tx, planID string, s *Subtask) error {
	return tx.SetJSON(progressKey(planID, s.ID), s)
}

// loadPlan reads a plan with its progress laid over it.
func loadPlan(tx *storage.Tx, id string) (*Plan, error) {
	b, err := tx.Get(planKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errs.New(errs.NotFound, "no plan %q (plan.list lists them)", id).With("field", "plan_id")
	} else if err != nil {
		return nil, err
	}
	p, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, err
	}
	byID := p.index()
	err = tx.Scan(storage.Prefix(progressPrefix(id)), func(_, v []byte) error {
		var s Subtask
		if err := json.Unmarshal(v, &s); err != nil {
			return errs.New(errs.Checkpoint, "checkpoint of plan %s: a subtask record is unreadable: %v", id, err)
		}
		if cur := byID[s.ID]; cur != nil {
			*cur = s
		}
		return nil
	})
	return p, err
}

// prepareCheckpointFile writes the plan to a temporary file beside path,
// flushed to disk: put renames it over path (an atomic replace), discard
// removes it if put was not called (or failed). Until put, path is as it
// was.
func prepareCheckpointFile(path string, p *Plan) (put func() error, discard func(), err error) {
	b, err := EncodeCheckpoint(p)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-*")
	if err != nil {
		return nil, nil, errs.New(errs.Checkpoint, "writing the checkpoint %s: %w", path, err)
	}
	discard = func() { _ = os.Remove(tmp.Name()) } // fails once renamed; otherwise best effort
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		discard()
		return nil, nil, errs.New(errs.Checkpoint, "writing the checkpoint %s: %w", path, err)
	}
	put = func() error {
		if err := os.Rename(tmp.Name(), path); err != nil {
			return errs.New(errs.Checkpoint, "writing the checkpoint %s: %w", path, err)
		}
		return nil
	}
	return put, discard, nil
}

// readCheckpointFile reads a checkpoint file.
func readCheckpointFile(path string) (*Plan, error) {
	// A regular file no larger than a checkpoint may be (not /dev/zero).
	b, err := input.ReadFile(path, maxCheckpoint+checkpointHeader)
	if err != nil {
		return nil, errs.New(errs.Checkpoint, "reading the checkpoint: %w", err)
	}
	p, err := DecodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
