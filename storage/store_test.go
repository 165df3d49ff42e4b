package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/engram-console/engram/core/enginetest"
)

// probeEnv, when set to a directory, turns the test binary into a probe that
// opens that directory and reports the outcome on standard output (see
// TestOpenReadOnlyDirIsNotWritable, which runs it as another user).
const probeEnv = "ENGRAM_STORAGE_OPEN_PROBE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(probeEnv); dir != "" {
		os.Exit(openProbe(dir))
	}
	code := m.Run()
	removeSnapshots()
	os.Exit(code)
}

// probeResult is what openProbe reports.
type probeResult struct {
	Opened      bool   `json:"opened"`
	NotWritable bool   `json:"not_writable"`
	Message     string `json:"message"`
}

func openProbe(dir string) int {
	var res probeResult
	s, err := Open(Options{Dir: dir})
	if err == nil {
		res.Opened = true
		_ = s.Close() // only opening is probed
	} else {
		res.NotWritable = errors.Is(err, ErrNotWritable)
		res.Message = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// openDurable opens a store in dir, closed when the test ends.
func openDurable(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return s
}

// openMemory opens an in-memory store, closed when the test ends.
func openMemory(t *testing.T) *Store {
	t.Helper()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatalf("Open(in-memory): %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return s
}

// put writes key=value pairs in one transaction.
func put(t *testing.T, s *Store, kv ...string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *Tx) error {
		for i := 0; i < len(kv); i += 2 {
			if err := tx.Set([]byte(kv[i]), []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("writing %q: %v", kv, err)
	}
}

// get reads key; ok is false when it does not exist.
func get(t *testing.T, s *Store, key string) (value string, ok bool) {
	t.Helper()
	err := s.View(func(tx *Tx) error {
		b, err := tx.Get([]byte(key))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		value, ok = string(b), err == nil
		return err
	})
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return value, ok
}

func TestDurableStoreKeepsDataAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir || s.InMemory() {
		t.Errorf("Dir() = %q, InMemory() = %v; want %q, false", s.Dir(), s.InMemory(), dir)
	}
	put(t, s, "meta/a", "1", "meta/b", "2")
	put(t, s, "meta/b", "3")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openDurable(t, dir)
	for key, want := range map[string]string{"meta/a": "1", "meta/b": "3"} {
		if got, ok := get(t, s, key); !ok || got != want {
			t.Errorf("after reopening, %s = %q (exists %v), want %q", key, got, ok, want)
		}
	}
}

func TestDurableStoreDirIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := openDurable(t, "data")
	if want := filepath.Join(dir, "data"); s.Dir() != want {
		t.Errorf("Dir() = %q, want %q", s.Dir(), want)
	}
}

func TestOpenCreatesMissingDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	s := openDurable(t, dir)
	put(t, s, "meta/x", "y")
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		t.Fatalf("Open did not create %s: %v", dir, err)
	}
}

func TestInMemoryStoreWritesNothingToDisk(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{InMemory: true, Dir: dir}) // Dir is ignored when InMemory
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != "" || !s.InMemory() {
		t.Errorf("Dir() = %q, InMemory() = %v; want \"\", true", s.Dir(), s.InMemory())
	}
	put(t, s, "meta/a", "1")
	if got, ok := get(t, s, "meta/a"); !ok || got != "1" {
		t.Errorf("meta/a = %q, %v; want \"1\"", got, ok)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("an in-memory store wrote %d file(s) to %s, e.g. %s", len(entries), dir, entries[0].Name())
	}

	// A new in-memory store starts empty.
	s = openMemory(t)
	if _, ok := get(t, s, "meta/a"); ok {
		t.Errorf("a new in-memory store still has meta/a")
	}
}

func TestOpenWithoutDirectory(t *testing.T) {
	if s, err := Open(Options{}); err == nil {
		_ = s.Close() // the test fails anyway
		t.Fatal("Open without Dir or InMemory succeeded")
	}
}

func TestGetSetHasDelete(t *testing.T) {
	s := openMemory(t)
	ctx := context.Background()
	key := []byte("meta/k")
	err := s.View(func(tx *Tx) error {
		if _, err := tx.Get(key); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
		}
		if has, err := tx.Has(key); has || err != nil {
			t.Errorf("Has of a missing key = %v, %v", has, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	err = s.Update(ctx, func(tx *Tx) error {
		if err := tx.Set(key, []byte("v1")); err != nil {
			return err
		}
		// A transaction reads its own writes.
		if b, err := tx.Get(key); err != nil || string(b) != "v1" {
			t.Errorf("Get after Set in the same transaction = %q, %v", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx *Tx) error {
		if has, err := tx.Has(key); !has || err != nil {
			t.Errorf("Has after Set = %v, %v", has, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// An empty value is a value.
	put(t, s, "meta/empty", "")
	if got, ok := get(t, s, "meta/empty"); !ok || got != "" {
		t.Errorf("meta/empty = %q, %v; want \"\", true", got, ok)
	}

	for range 2 { // deleting twice: the second is a no-op
		if err := s.Update(ctx, func(tx *Tx) error { return tx.Delete(key) }); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if _, ok := get(t, s, string(key)); ok {
		t.Errorf("%s still exists after Delete", key)
	}
}

func TestGetReturnsACopy(t *testing.T) {
	s := openMemory(t)
	put(t, s, "meta/k", "first")
	var kept []byte
	if err := s.View(func(tx *Tx) (err error) { kept, err = tx.Get([]byte("meta/k")); return err }); err != nil {
		t.Fatal(err)
	}
	put(t, s, "meta/k", "XXXXXXXXXXXXXXX")
	if string(kept) != "first" {
		t.Errorf("a value kept from an earlier transaction changed to %q", kept)
	}
}

func TestJSONValues(t *testing.T) {
	type record struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
		N    int      `json:"n"`
	}
	s := openMemory(t)
	ctx := context.Background()
	want := record{Name: "goal", Tags: []string{"a", "b"}, N: 7}
	key := Key(PrefixMeta, "rec")
	if err := s.Update(ctx, func(tx *Tx) error { return tx.SetJSON(key, want) }); err != nil {
		t.Fatal(err)
	}
	if raw, _ := get(t, s, string(key)); raw != `{"name":"goal","tags":["a","b"],"n":7}` {
		t.Errorf("stored JSON = %s", raw)
	}
	err := s.View(func(tx *Tx) error {
		var got record
		if err := tx.GetJSON(key, &got); err != nil {
			return err
		}
		if got.Name != want.Name || got.N != want.N || !slices.Equal(got.Tags, want.Tags) {
			t.Errorf("GetJSON = %+v, want %+v", got, want)
		}
		if err := tx.GetJSON(Key(PrefixMeta, "missing"), &got); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetJSON of a missing key: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	put(t, s, "meta/garbage", "{not json")
	err = s.View(func(tx *Tx) error {
		var got record
		return tx.GetJSON([]byte("meta/garbage"), &got)
	})
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "meta/garbage") {
		t.Errorf("GetJSON of a value that is not JSON: %v; want a decoding error naming the key", err)
	}

	err = s.Update(ctx, func(tx *Tx) error {
		if err := tx.Set([]byte("meta/before"), []byte("x")); err != nil {
			return err
		}
		return tx.SetJSON([]byte("meta/chan"), make(chan int))
	})
	if err == nil || !strings.Contains(err.Error(), "meta/chan") {
		t.Errorf("SetJSON of a channel: %v; want an encoding error naming the key", err)
	}
	if _, ok := get(t, s, "meta/before"); ok {
		t.Errorf("a transaction whose SetJSON failed still committed its other write")
	}
}

func TestWriteInViewFails(t *testing.T) {
	s := openMemory(t)
	put(t, s, "meta/k", "v")
	var setErr, delErr error
	err := s.View(func(tx *Tx) error {
		setErr = tx.Set([]byte("meta/new"), []byte("x"))
		delErr = tx.Delete([]byte("meta/k"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if setErr == nil || !strings.Contains(setErr.Error(), "read-only") {
		t.Errorf("Set in View: %v, want a read-only error", setErr)
	}
	if delErr == nil || !strings.Contains(delErr.Error(), "read-only") {
		t.Errorf("Delete in View: %v, want a read-only error", delErr)
	}
	if err := s.View(func(tx *Tx) error { return tx.SetJSON([]byte("meta/json"), 1) }); err == nil {
		t.Errorf("SetJSON in View succeeded")
	}
	if _, ok := get(t, s, "meta/new"); ok {
		t.Errorf("Set in View wrote meta/new")
	}
	if _, ok := get(t, s, "meta/k"); !ok {
		t.Errorf("Delete in View removed meta/k")
	}
}

func TestUpdateRollsBackWhenFnFails(t *testing.T) {
	s := openMemory(t)
	put(t, s, "meta/keep", "old")
	errBoom := errors.New("boom")
	err := s.Update(context.Background(), func(tx *Tx) error {
		for _, kv := range [][2]string{{"meta/a", "1"}, {"meta/b", "2"}, {"meta/keep", "new"}} {
			if err := tx.Set([]byte(kv[0]), []byte(kv[1])); err != nil {
				return err
			}
		}
		if err := tx.Delete([]byte("meta/keep")); err != nil {
			return err
		}
		return fmt.Errorf("step 3: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	for _, key := range []string{"meta/a", "meta/b"} {
		if _, ok := get(t, s, key); ok {
			t.Errorf("%s was written by a transaction that failed", key)
		}
	}
	if got, ok := get(t, s, "meta/keep"); !ok || got != "old" {
		t.Errorf("meta/keep = %q, %v after a failed transaction; want \"old\"", got, ok)
	}
}

func TestTooBigTransaction(t *testing.T) {
	s := openMemory(t)
	value := bytes.Repeat([]byte("x"), 100<<10)
	err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range 100 { // 10 MB: more than one commit may hold
			if err := tx.Set(Key(PrefixMeta, "big", strconv.Itoa(i)), value); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("Update of 10 MB: %v, want ErrTooBig", err)
	}
	var n int
	if err := s.View(func(tx *Tx) (err error) { n, err = tx.Count(PrefixKey(PrefixMeta, "big")); return err }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d keys of a too-big transaction were committed", n)
	}
}

// scanFixture writes keys around the prefix "p/": below it, in it (including
// "p0", the first key after it) and above it.
func scanFixture(t *testing.T) *Store {
	s := openMemory(t)
	put(t, s, "o/z", "oz", "p", "p", "p/a", "1", "p/b", "2", "p/c", "3", "p/d", "4", "p0", "p0", "q/a", "qa")
	return s
}

func TestKeysAndScanRanges(t *testing.T) {
	s := scanFixture(t)
	all := []string{"o/z", "p", "p/a", "p/b", "p/c", "p/d", "p0", "q/a"}
	cases := []struct {
		name string
		r    Range
		want []string
	}{
		{"prefix", Prefix([]byte("p/")), []string{"p/a", "p/b", "p/c", "p/d"}},
		{"start at a key", Range{Prefix: []byte("p/"), Start: []byte("p/b")}, []string{"p/b", "p/c", "p/d"}},
		{"start between keys", Range{Prefix: []byte("p/"), Start: []byte("p/bb")}, []string{"p/c", "p/d"}},
		{"start before the prefix", Range{Prefix: []byte("p/"), Start: []byte("a")}, []string{"p/a", "p/b", "p/c", "p/d"}},
		{"start after the prefix", Range{Prefix: []byte("p/"), Start: []byte("p0")}, nil},
		{"reverse", Range{Prefix: []byte("p/"), Reverse: true}, []string{"p/d", "p/c", "p/b", "p/a"}},
		{"reverse from a key", Range{Prefix: []byte("p/"), Start: []byte("p/c"), Reverse: true}, []string{"p/c", "p/b", "p/a"}},
		{"reverse from between keys", Range{Prefix: []byte("p/"), Start: []byte("p/bb"), Reverse: true}, []string{"p/b", "p/a"}},
		{"reverse from after the prefix", Range{Prefix: []byte("p/"), Start: []byte("z"), Reverse: true}, []string{"p/d", "p/c", "p/b", "p/a"}},
		{"reverse from before the prefix", Range{Prefix: []byte("p/"), Start: []byte("o/zz"), Reverse: true}, nil},
		{"no such prefix", Prefix([]byte("x/")), nil},
		{"no such prefix, reverse", Range{Prefix: []byte("x/"), Reverse: true}, nil},
		{"every key", Range{}, all},
		{"every key, reverse", Range{Reverse: true}, reversed(all)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var keys, scanned []string
			err := s.View(func(tx *Tx) error {
				if err := tx.Keys(c.r, func(k []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
					return err
				}
				return tx.Scan(c.r, func(k, v []byte) error {
					if want, _ := get(t, s, string(k)); string(v) != want {
						t.Errorf("Scan gave %s = %q, want %q", k, v, want)
					}
					scanned = append(scanned, string(k))
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, c.want) {
				t.Errorf("Keys = %q, want %q", keys, c.want)
			}
			if !slices.Equal(scanned, c.want) {
				t.Errorf("Scan = %q, want %q", scanned, c.want)
			}
		})
	}
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func TestReverseScanReachesKeysWithHighBytes(t *testing.T) {
	s := openMemory(t)
	put(t, s, "p/a", "", "p/\xff", "", "p/\xff\x01", "", "p/\xff\xff\xff", "", "p0", "",
		"\xfe", "", "\xff\xff", "", "\xff\xff\x00", "", "\xff\xff\xff", "")
	cases := []struct {
		prefix string
		want   []string
	}{
		{"p/", []string{"p/\xff\xff\xff", "p/\xff\x01", "p/\xff", "p/a"}},
		{"\xff\xff", []string{"\xff\xff\xff", "\xff\xff\x00", "\xff\xff"}}, // a prefix with no key after it
	}
	for _, c := range cases {
		var got []string
		err := s.View(func(tx *Tx) error {
			return tx.Keys(Range{Prefix: []byte(c.prefix), Reverse: true}, func(k []byte) error { got = append(got, string(k)); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("reverse scan of %q = %q, want %q", c.prefix, got, c.want)
		}
	}
}

func TestScanKeysOutliveTheCallback(t *testing.T) {
	s := openMemory(t)
	var want []string
	var kv []string
	for i := range 300 {
		k := Key(PrefixTrace, Uint64(uint64(i)))
		want = append(want, string(k))
		kv = append(kv, string(k), strconv.Itoa(i))
	}
	put(t, s, kv...)
	var keys, values [][]byte
	err := s.View(func(tx *Tx) error {
		return tx.Scan(Prefix([]byte(PrefixTrace)), func(k, v []byte) error {
			keys, values = append(keys, k), append(values, v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(want) {
		t.Fatalf("Scan gave %d keys, want %d", len(keys), len(want))
	}
	for i := range keys {
		if string(keys[i]) != want[i] || string(values[i]) != strconv.Itoa(i) {
			t.Fatalf("kept entry %d = %q=%q, want %q=%d", i, keys[i], values[i], want[i], i)
		}
	}
}

func TestScanStopsEarly(t *testing.T) {
	s := scanFixture(t)
	var got []string
	err := s.View(func(tx *Tx) error {
		return tx.Keys(Prefix([]byte("p/")), func(k []byte) error {
			got = append(got, string(k))
			if len(got) == 2 {
				return ErrStop
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("a scan ended with ErrStop returned %v, want nil", err)
	}
	if !slices.Equal(got, []string{"p/a", "p/b"}) {
		t.Errorf("keys before ErrStop = %q", got)
	}

	errBoom := errors.New("boom")
	visited := 0
	err = s.View(func(tx *Tx) error {
		return tx.Scan(Prefix([]byte("p/")), func(k, v []byte) error {
			visited++
			return fmt.Errorf("at %s: %w", k, errBoom)
		})
	})
	if !errors.Is(err, errBoom) || visited != 1 {
		t.Errorf("a scan whose callback failed returned %v after %d key(s); want the error after 1", err, visited)
	}
}

func TestCount(t *testing.T) {
	s := scanFixture(t)
	err := s.View(func(tx *Tx) error {
		for prefix, want := range map[string]int{"p/": 4, "p": 6, "x/": 0, "": 8} {
			if n, err := tx.Count([]byte(prefix)); err != nil || n != want {
				t.Errorf("Count(%q) = %d, %v; want %d", prefix, n, err, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readCounter reads a decimal counter inside a transaction (0 when absent).
func readCounter(tx *Tx, key []byte) (int, error) {
	b, err := tx.Get(key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}

func TestUpdateRetriesConflicts(t *testing.T) {
	// n writers increment one counter. On its first run each writer waits,
	// after reading, until all have read: all n then write on the same read,
	// so all but the first to commit conflict and must be retried. Each failed
	// run of a writer needs another writer's commit, so none fails more than
	// n-1 times: n <= the default retry limit cannot exhaust it.
	const n = 16
	s := openMemory(t)
	key := Key(PrefixMeta, "counter")
	var allRead sync.WaitGroup
	allRead.Add(n)
	var runs atomic.Int64
	errs := make(chan error, n)
	for range n {
		go func() {
			first := true
			errs <- s.Update(context.Background(), func(tx *Tx) error {
				runs.Add(1)
				c, err := readCounter(tx, key)
				if err != nil {
					return err
				}
				if first {
					first = false
					allRead.Done()
					allRead.Wait()
				}
				return tx.Set(key, []byte(strconv.Itoa(c+1)))
			})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Update: %v", err)
		}
	}
	if got, _ := get(t, s, string(key)); got != strconv.Itoa(n) {
		t.Errorf("counter = %s after %d concurrent increments, want %d", got, n, n)
	}
	if r := runs.Load(); r < 2*n-1 {
		t.Errorf("fn ran %d times; the %d conflicting first runs must have been retried (>= %d runs)", r, n-1, 2*n-1)
	}
}

// conflictingWrite commits value at key from another goroutine and waits for
// it: a transaction that read key before this and writes it will conflict.
func conflictingWrite(s *Store, key []byte, value string) error {
	done := make(chan error)
	go func() {
		done <- s.Update(context.Background(), func(tx *Tx) error { return tx.Set(key, []byte(value)) })
	}()
	return <-done
}

func TestUpdateGivesUpWithErrConflict(t *testing.T) {
	s, err := Open(Options{InMemory: true, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	}()
	key := Key(PrefixMeta, "contended")
	runs := 0
	err = s.Update(context.Background(), func(tx *Tx) error {
		runs++
		if _, err := tx.Get(key); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := conflictingWrite(s, key, "rival "+strconv.Itoa(runs)); err != nil {
			return err
		}
		return tx.Set(key, []byte("mine"))
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Update that always conflicts returned %v, want ErrConflict", err)
	}
	if runs != 3 {
		t.Errorf("fn ran %d times with MaxRetries 3", runs)
	}
	if got, _ := get(t, s, string(key)); got != "rival 3" {
		t.Errorf("value = %q, want the last rival's write (the conflicting transaction must not commit)", got)
	}
}

func TestUpdateStopsRetryingWhenContextEnds(t *testing.T) {
	s := openMemory(t)
	key := Key(PrefixMeta, "contended")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	err := s.Update(ctx, func(tx *Tx) error {
		runs++
		if _, err := tx.Get(key); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := conflictingWrite(s, key, "rival"); err != nil {
			return err
		}
		cancel()
		return tx.Set(key, []byte("mine"))
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update returned %v, want context.Canceled", err)
	}
	if runs != 1 {
		t.Errorf("fn ran %d times after its context was cancelled, want 1", runs)
	}
}

func TestSequence(t *testing.T) {
	s := openMemory(t)
	a, err := s.Sequence("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Sequence("a"); again != a {
		t.Errorf("Sequence(\"a\") twice gave two sequences")
	}
	b, err := s.Sequence("b")
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(1); want <= 3*sequenceLeasing; want++ { // across several leases
		if n, err := a.Next(); err != nil || n != want {
			t.Fatalf("a.Next() = %d, %v; want %d", n, err, want)
		}
	}
	if n, err := b.Next(); err != nil || n != 1 {
		t.Errorf("the first number of another sequence = %d, %v; want 1", n, err)
	}
}

func TestSequenceIsUniqueUnderConcurrency(t *testing.T) {
	s := openMemory(t)
	seq, err := s.Sequence("ids")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 100
	results := make(chan []uint64, workers)
	for range workers {
		go func() {
			var got []uint64
			for range each {
				n, err := seq.Next()
				if err != nil {
					t.Error(err)
					break
				}
				got = append(got, n)
			}
			results <- got
		}()
	}
	seen := map[uint64]bool{}
	for range workers {
		for _, n := range <-results {
			if seen[n] {
				t.Errorf("number %d handed out twice", n)
			}
			seen[n] = true
		}
	}
	if len(seen) != workers*each {
		t.Errorf("%d distinct numbers, want %d", len(seen), workers*each)
	}
}

func TestSequenceContinuesAfterReopen(t *testing.T) {
	dir := t.TempDir()
	var last uint64
	for round := range 3 {
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		seq, err := s.Sequence("ids")
		if err != nil {
			t.Fatal(err)
		}
		for range sequenceLeasing + 5 {
			n, err := seq.Next()
			if err != nil {
				t.Fatal(err)
			}
			if n <= last {
				t.Fatalf("round %d: Next() = %d after %d", round, n, last)
			}
			last = n
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCloseIsIdempotentAndLaterUseFails(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			opts := Options{InMemory: true}
			if durable {
				opts = Options{Dir: t.TempDir()}
			}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			seq, err := s.Sequence("ids")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := seq.Next(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("first Close: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := s.View(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
				t.Errorf("View after Close: %v, want ErrClosed", err)
			}
			ran := false
			if err := s.Update(context.Background(), func(*Tx) error { ran = true; return nil }); !errors.Is(err, ErrClosed) || ran {
				t.Errorf("Update after Close: %v (fn ran: %v), want ErrClosed without running fn", err, ran)
			}
			if _, err := s.Sequence("other"); !errors.Is(err, ErrClosed) {
				t.Errorf("Sequence after Close: %v, want ErrClosed", err)
			}
			if n, err := seq.Next(); !errors.Is(err, ErrClosed) || n != 0 {
				t.Errorf("Next after Close = %d, %v; want 0, ErrClosed", n, err)
			}
		})
	}
}

// assertOpenError checks that err is an *OpenError for dir with the given
// reason, and that its message names dir.
func assertOpenError(t *testing.T, err, reason error, dir string) {
	t.Helper()
	if !errors.Is(err, reason) {
		t.Fatalf("Open(%s): %v, want %v", dir, err, reason)
	}
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Dir != dir {
		t.Errorf("Open(%s): %#v is not an *OpenError for the directory", dir, err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("the message %q does not name %s", err, dir)
	}
}

func TestOpenLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	first := openDurable(t, dir)
	_, err := Open(Options{Dir: dir})
	assertOpenError(t, err, ErrLocked, dir)
	if pid := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), pid) {
		t.Errorf("the message %q does not name the holder (%s)", err, pid)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openDurable(t, dir) // Close released the lock
}

func TestOpenRegularFileIsNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte("not a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Dir: file})
	assertOpenError(t, err, ErrNotDirectory, file)

	below := filepath.Join(file, "sub")
	_, err = Open(Options{Dir: below})
	assertOpenError(t, err, ErrNotDirectory, below)

	if b, _ := os.ReadFile(file); string(b) != "not a store" {
		t.Errorf("Open changed the regular file to %q", b)
	}
}

func TestOpenReadOnlyDirIsNotWritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		_, err := Open(Options{Dir: dir})
		assertOpenError(t, err, ErrNotWritable, dir)
		return
	}
	// Root writes anywhere: open the directory as nobody, from a copy of this
	// test binary that nobody can run.
	makeReachable(t, dir)
	res := runProbeAsNobody(t, dir)
	if res.Opened || !res.NotWritable {
		t.Fatalf("opening a read-only directory as nobody: %+v, want ErrNotWritable", res)
	}
	if !strings.Contains(res.Message, dir) || !strings.Contains(res.Message, "not writable") {
		t.Errorf("the message %q does not say that %s is not writable", res.Message, dir)
	}
}

func TestOpenWritableDirAsNobody(t *testing.T) {
	// The control for TestOpenReadOnlyDirIsNotWritable: the probe does open
	// a directory nobody may write to.
	if os.Geteuid() != 0 {
		t.Skip("runs only as root (tests the read-only probe)")
	}
	dir := filepath.Join(t.TempDir(), "rw")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	makeReachable(t, dir)
	if res := runProbeAsNobody(t, dir); !res.Opened {
		t.Fatalf("nobody could not open its own directory: %+v", res)
	}
}

const nobody = 65534

// makeReachable lets other users reach path's parent: t.TempDir makes
// directories only their owner can enter.
func makeReachable(t *testing.T, path string) {
	t.Helper()
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// runProbeAsNobody runs a copy of this test binary as user nobody, opening dir.
func runProbeAsNobody(t *testing.T, dir string) probeResult {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "storage.test")
	copyFile(t, self, bin, 0o755)
	makeReachable(t, bin)
	cmd := exec.Command(bin)
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = []string{probeEnv + "=" + dir, "HOME=" + filepath.Dir(bin)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot run a process as nobody here: %v", err)
	}
	if err != nil {
		t.Fatalf("probe as nobody: %v\n%s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Errorf("the probe wrote to stderr (Badger's log must not reach the terminal):\n%s", stderr.Bytes())
	}
	var res probeResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	return res
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }() // read-only: nothing to lose
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerLogsGoToTheLogger(t *testing.T) {
	var buf enginetest.LockedBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := Open(Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "meta/a", "1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "component=badger") {
		t.Errorf("no Badger message reached the logger; got:\n%s", buf.String())
	}
}

// A callback's *SkipTo moves a forward scan on to its key, within the
// range; one that does not move forward (or in a reverse scan) is the
// callback's error, returned as it is.
func TestScanSkipsToAKey(t *testing.T) {
	s := scanFixture(t)
	var got []string
	err := s.View(func(tx *Tx) error {
		return tx.Keys(Prefix([]byte("p")), func(k []byte) error {
			got = append(got, string(k))
			if string(k) == "p/a" {
				return &SkipTo{Key: PrefixEnd([]byte("p/b"))}
			}
			return nil
		})
	})
	if err != nil || !slices.Equal(got, []string{"p", "p/a", "p/c", "p/d", "p0"}) {
		t.Errorf("skipping from p/a past p/b read %q (err %v), want p, p/a, p/c, p/d, p0", got, err)
	}
	for _, r := range []Range{Prefix([]byte("p/")), {Prefix: []byte("p/"), Reverse: true}} {
		back := &SkipTo{Key: []byte("p/")}
		if r.Reverse {
			back = &SkipTo{Key: []byte("p/zz")}
		}
		err := s.View(func(tx *Tx) error {
			return tx.Keys(r, func([]byte) error { return back })
		})
		if err != back {
			t.Errorf("a SkipTo that does not go forward (reverse %v) returned %v, want it back", r.Reverse, err)
		}
	}
}

// A *SkipTo past a group that nothing sorts after (PrefixEnd of keys of
// only 0xFF is nil) ends the scan, as skipping past the last key does,
// rather than failing it.
func TestScanSkipPastTheLastPossibleKeyEndsIt(t *testing.T) {
	s := openMemory(t)
	put(t, s, "p/a", "1", "\xff", "ff", "\xff\xff", "ffff")
	var got []string
	err := s.View(func(tx *Tx) error {
		return tx.Keys(Prefix(nil), func(k []byte) error {
			got = append(got, string(k))
			return &SkipTo{Key: PrefixEnd(k)}
		})
	})
	if err != nil || !slices.Equal(got, []string{"p/a", "\xff"}) {
		t.Errorf("skipping past each key read %q (err %v), want p/a and \\xff, then the end", got, err)
	}
}
