package ids

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/engram-console/engram/core/clock"
	"github.com/google/uuid"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

// parse checks that s is a canonical RFC 9562 UUIDv7 and returns its
// millisecond timestamp (the first 48 bits).
func parse(t *testing.T, s string) int64 {
	t.Helper()
	u, err := uuid.Parse(s)
	if err != nil {
		t.Fatalf("%q is not a UUID: %v", s, err)
	}
	if u.String() != s {
		t.Fatalf("%q is not in canonical form (%s)", s, u.String())
	}
	if u[6]>>4 != 7 {
		t.Fatalf("%s: version nibble %x, want 7", s, u[6]>>4)
	}
	if u[8]>>6 != 0b10 {
		t.Fatalf("%s: variant bits %02b, want 10", s, u[8]>>6)
	}
	if u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		t.Fatalf("%s: uuid package says version %d variant %v", s, u.Version(), u.Variant())
	}
	var b [8]byte
	copy(b[2:], u[0:6])
	return int64(binary.BigEndian.Uint64(b[:]))
}

func TestFormatAndTimestamp(t *testing.T) {
	c := clock.NewFixed(t0)
	g := New(c, "seed")
	for i := range 50 {
		id := g.New()
		if ms := parse(t, id); ms != c.Now().UnixMilli() {
			t.Fatalf("id %d %s: timestamp %d ms, want the clock's %d", i, id, ms, c.Now().UnixMilli())
		}
		c.Advance(time.Duration(i) * 7 * time.Millisecond)
	}
	// Ids read the clock at each call, including real time.
	real := New(clock.Real{}, "seed")
	before := time.Now().UnixMilli()
	ms := parse(t, real.New())
	after := time.Now().UnixMilli()
	if ms < before || ms > after {
		t.Fatalf("real-clock id timestamp %d not within [%d, %d]", ms, before, after)
	}
}

func sequence(seed string, n int, step time.Duration) []string {
	c := clock.NewFixed(t0)
	g := New(c, seed)
	out := make([]string, n)
	for i := range out {
		out[i] = g.New()
		if i%3 == 2 {
			c.Advance(step)
		}
	}
	return out
}

func TestDeterministic(t *testing.T) {
	a := sequence("run 1", 200, time.Millisecond)
	b := sequence("run 1", 200, time.Millisecond)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed and clock gave different ids at %d: %s vs %s", i, a[i], b[i])
		}
	}
	c := sequence("run 2", 200, time.Millisecond)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same != 0 {
		t.Fatalf("different seeds produced %d identical ids out of %d", same, len(a))
	}
	// The random tail differs too, not only the counter.
	if a[0][19:] == c[0][19:] {
		t.Fatalf("different seeds share the random tail: %s vs %s", a[0], c[0])
	}
}

func TestMonotonicWithinOneMillisecond(t *testing.T) {
	c := clock.NewFixed(t0)
	g := New(c, "burst")
	const n = 10_000 // > 4096: the 12-bit counter overflows and borrows the next ms
	ms0 := c.Now().UnixMilli()
	prev := ""
	maxMs := int64(0)
	for i := range n {
		id := g.New()
		if id <= prev {
			t.Fatalf("id %d %s is not greater than the previous %s", i, id, prev)
		}
		ms := parse(t, id)
		if ms < ms0 {
			t.Fatalf("id %d has timestamp %d before the clock's %d", i, ms, ms0)
		}
		maxMs = max(maxMs, ms)
		prev = id
	}
	// 10000 ids at ≤ 4096 per millisecond need at least 2 borrowed
	// milliseconds, and never more than ceil(10000/2048)=5.
	if borrowed := maxMs - ms0; borrowed < 2 || borrowed > 5 {
		t.Fatalf("borrowed %d milliseconds for %d ids in one millisecond", borrowed, n)
	}
	// When the clock catches up, ids keep increasing.
	c.Advance(time.Millisecond)
	if id := g.New(); id <= prev {
		t.Fatalf("after the clock advanced: %s <= %s", id, prev)
	}
	c.Advance(10 * time.Millisecond)
	id := g.New()
	if id <= prev {
		t.Fatalf("after the clock passed the borrowed time: %s <= %s", id, prev)
	}
	if ms := parse(t, id); ms != c.Now().UnixMilli() {
		t.Fatalf("once the clock is ahead again, the timestamp is %d, want %d", ms, c.Now().UnixMilli())
	}
}

func TestUnique100k(t *testing.T) {
	c := clock.NewFixed(t0)
	g := New(c, "many")
	seen := make(map[string]struct{}, 100_000)
	prev := ""
	for i := range 100_000 {
		if i%1000 == 0 {
			c.Advance(time.Millisecond)
		}
		id := g.New()
		if _, dup := seen[id]; dup {
			t.Fatalf("duplicate id %s at %d", id, i)
		}
		if id <= prev {
			t.Fatalf("id %d %s not after %s", i, id, prev)
		}
		seen[id] = struct{}{}
		prev = id
	}
}

func TestConcurrentUnique(t *testing.T) {
	c := clock.NewFixed(t0)
	g := New(c, "concurrent")
	const workers, each = 8, 2000
	results := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]string, each)
			for i := range out {
				if i%500 == 0 {
					c.Advance(time.Millisecond)
				}
				out[i] = g.New()
			}
			results[w] = out
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for w, out := range results {
		for i, id := range out {
			parse(t, id)
			if seen[id] {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
			// Each goroutine sees its own ids in increasing order.
			if i > 0 && id <= out[i-1] {
				t.Fatalf("worker %d: %s after %s", w, id, out[i-1])
			}
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), workers*each)
	}
}

func TestClockSteppedBack(t *testing.T) {
	c := clock.NewFixed(t0)
	g := New(c, "back")
	first := g.New()
	c.Advance(-5 * time.Millisecond) // a little: stay monotonic
	second := g.New()
	if second <= first {
		t.Fatalf("clock stepped back 5ms: %s <= %s", second, first)
	}
	if ms := parse(t, second); ms != t0.UnixMilli() {
		t.Fatalf("stepped-back id timestamp %d, want the previous %d", ms, t0.UnixMilli())
	}
	c.Advance(-990 * time.Millisecond) // 995ms behind the last id: still "a little"
	third := g.New()
	if third <= second {
		t.Fatalf("clock stepped back ~1s: %s <= %s", third, second)
	}
	// Far back (an earlier batch `at`): the ids follow the clock again.
	c.Set(t0.Add(-time.Hour))
	far := g.New()
	if ms := parse(t, far); ms != t0.Add(-time.Hour).UnixMilli() {
		t.Fatalf("after a clock set an hour back the timestamp is %d, want %d", ms, t0.Add(-time.Hour).UnixMilli())
	}
}
