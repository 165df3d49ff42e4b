package storage

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// CheckReport is what Verify found.
type CheckReport struct {
	Keys  int   // keys read
	Bytes int64 // bytes of values read
}

// Verify checks a store end to end: every table block's checksum, then
// every key with its value (each value checked against its checksum as it
// is read). The first damage found is returned as a *DamagedError.
func (s *Store) Verify() (CheckReport, error) {
	var rep CheckReport
	if s.inMemory {
		return rep, nil
	}
	if err := s.verifyTables(); err != nil {
		return rep, err
	}
	err := s.View(func(tx *Tx) error {
		return tx.Scan(Prefix(nil), func(k, v []byte) error {
			rep.Keys++
			rep.Bytes += int64(len(v))
			return nil
		})
	})
	return rep, err
}

// verifyTables verifies every block of every table. Badger's check panics
// on a block that fails its checksum (it reads the nil block's offset for
// its message): the panic becomes a *DamagedError naming the table, found
// by verifying each table alone.
func (s *Store) verifyTables() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if bad, reason := findBadTable(s.dir, nil); bad != "" {
				err = &DamagedError{File: bad, Reason: reason}
				return
			}
			err = s.mapErr(&DamagedError{Reason: fmt.Sprintf("verifying the tables failed inside Badger: %v", r)})
		}
	}()
	if err := s.db.VerifyChecksum(); err != nil {
		return s.mapErr(&DamagedError{Reason: err.Error()})
	}
	return nil
}

// backupMagic starts every backup file; a SHA-256 of everything before it
// ends it, so that a damaged or cut backup is refused before anything is
// restored from it.
const backupMagic = "engram backup 1\n"

// BackupTo writes a consistent copy of every key to path (Badger's backup
// stream between engram's header and a SHA-256), through a temporary file
// renamed into place, so path is never half written. An existing path is
// refused.
func (s *Store) BackupTo(path string) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists: choose another file or remove it first", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name()) // a partial backup is worth nothing
		}
	}()
	sum := sha256.New()
	w := bufio.NewWriter(io.MultiWriter(tmp, sum))
	if _, err := w.WriteString(backupMagic); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := s.db.Backup(w, 0); err != nil {
		return fmt.Errorf("backup: %w", s.mapErr(err))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := tmp.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// ErrNotEmpty: restoring into a directory that already holds something.
var ErrNotEmpty = errors.New("the data directory is not empty")

// RestoreFrom loads the backup at path into a new store described by opts,
// whose directory must not exist yet or be empty: restoring never mixes a
// backup with other data. The backup's checksum is verified before anything
// is written; on any failure the directory is left empty.
func RestoreFrom(path string, opts Options) (err error) {
	if opts.InMemory || opts.Dir == "" {
		return errors.New("restore: give the data directory to restore into")
	}
	if entries, err := os.ReadDir(opts.Dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("restore: %w: %s (restore into a new or empty directory with --data)", ErrNotEmpty, opts.Dir)
	}
	body, closeBackup, err := readBackup(path)
	if err != nil {
		return err
	}
	defer closeBackup()
	s, err := Open(opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			clearDir(opts.Dir)
		}
	}()
	if err := s.db.Load(body, 256); err != nil {
		return fmt.Errorf("restore: loading %s: %w", path, err)
	}
	return nil
}

// readBackup checks a backup file's header and SHA-256, reading it once
// as a stream (a backup may be larger than memory), and returns a reader
// of its Badger stream and a function that closes the file. Only a regular
// file is read: /dev/zero or a pipe would never end.
func readBackup(path string) (io.Reader, func(), error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("restore: %s is not a regular file (it is a %s); give the file engram backup wrote", path, describeMode(info.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("restore: %w", err)
	}
	closeFile := func() { _ = f.Close() } // read-only
	size := info.Size()
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(f, magic); err != nil || size < int64(len(backupMagic)+sha256.Size) || string(magic) != backupMagic {
		closeFile()
		return nil, nil, &DamagedError{File: path, Reason: "not an engram backup (made by engram backup FILE), or cut short"}
	}
	h := sha256.New()
	h.Write(magic)
	if _, err := io.Copy(h, io.NewSectionReader(f, int64(len(magic)), size-int64(len(magic))-sha256.Size)); err != nil {
		closeFile()
		return nil, nil, fmt.Errorf("restore: reading %s: %w", path, err)
	}
	sum := make([]byte, sha256.Size)
	if _, err := f.ReadAt(sum, size-sha256.Size); err != nil {
		closeFile()
		return nil, nil, fmt.Errorf("restore: reading %s: %w", path, err)
	}
	if !bytes.Equal(h.Sum(nil), sum) {
		closeFile()
		return nil, nil, &DamagedError{File: path, Reason: "the backup's checksum does not match: it was changed or damaged after it was written"}
	}
	return io.NewSectionReader(f, int64(len(magic)), size-int64(len(magic))-sha256.Size), closeFile, nil
}

// describeMode names what a file that is not a regular one is.
func describeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// clearDir removes what a failed restore wrote into dir (which was empty).
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir) // nothing to clear if unreadable
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name())) // best effort
	}
}
