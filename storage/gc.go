package storage

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// DefaultGCInterval is how often a durable store collects its value log's
// garbage when Options.GCTick is nil.
const DefaultGCInterval = 5 * time.Minute

// gcDiscardRatio: a value log file is rewritten when at least this share
// of it is stale (Badger's advice: a lifetime write amplification of 2).
const gcDiscardRatio = 0.5

// gcMaxRewrites bounds the files one pass rewrites, so that a pass (and
// Close, which runs one) ends even while writes go on.
const gcMaxRewrites = 16

// collector runs value-log garbage collection in the background: a pass
// on every tick, until Close stops it.
type collector struct {
	stop     chan struct{}
	stopOnce sync.Once
	done     sync.WaitGroup
}

// startGC starts the background collector of a durable, writable store.
func (s *Store) startGC(tick <-chan time.Time) {
	var ticker *time.Ticker
	if tick == nil {
		ticker = time.NewTicker(DefaultGCInterval)
		tick = ticker.C
	}
	s.gc = &collector{stop: make(chan struct{})}
	s.gc.done.Add(1)
	go func() {
		defer s.gc.done.Done()
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-s.gc.stop:
				return
			case <-tick:
				_, _ = s.CollectGarbage() // best effort: the next tick tries again
			}
		}
	}()
}

// stopGC stops the background collector and waits for a pass under way.
// It may be called more than once, and at once.
func (s *Store) stopGC() {
	if s.gc == nil {
		return
	}
	s.gc.stopOnce.Do(func() { close(s.gc.stop) })
	s.gc.done.Wait()
}

// CollectGarbage rewrites the value log files that are at least half
// stale (values overwritten or deleted since), so that their space returns
// to the file system, and says how many it rewrote. A durable store does
// it in the background (Options.GCTick) and on Close; an in-memory or
// read-only store has nothing to collect. Rewriting writes the live values
// again before the old file goes: when the file system is short of the
// space writes keep free, it rewrites nothing.
func (s *Store) CollectGarbage() (int, error) {
	if s.inMemory || s.readOnly || !s.space.hasRoom(s.tableBytes()) {
		return 0, nil
	}
	return s.collect()
}

// collect runs value-log GC until a run rewrites nothing, at most
// gcMaxRewrites times.
func (s *Store) collect() (int, error) {
	n := 0
	for n < gcMaxRewrites {
		err := s.db.RunValueLogGC(gcDiscardRatio)
		switch {
		case err == nil:
			n++
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return n, nil
		}
		return n, mapErr(err)
	}
	return n, nil
}

// DiskUsage is the disk space, in bytes, the files of the store at dir
// take (their allocated blocks, as du counts them: Badger's logs are
// preallocated sparse files, whose length says little).
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by a compaction while we walked
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total, err
}
