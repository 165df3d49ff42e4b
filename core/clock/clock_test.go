package clock

import (
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 11, 5, 10, 0, 0, 10_000_000, time.UTC)

func TestFixedSetAdvance(t *testing.T) {
	c := NewFixed(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("a fixed clock moved by itself: %v", got)
	}
	c.Advance(1500 * time.Millisecond)
	if got, want := c.Now(), t0.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after Advance: %v, want %v", got, want)
	}
	later := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	c.Set(later)
	got := c.Now()
	if !got.Equal(later) {
		t.Fatalf("after Set: %v, want %v", got, later)
	}
	if got.Location() != time.UTC {
		t.Fatalf("Set kept zone %v; the clock reads UTC", got.Location())
	}
	c.Advance(-time.Hour)
	if want := later.Add(-time.Hour); !c.Now().Equal(want) {
		t.Fatalf("Advance(-1h): %v, want %v", c.Now(), want)
	}
}

func TestNewFixedIsUTC(t *testing.T) {
	in := time.Date(2025, 1, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	got := NewFixed(in).Now()
	if got.Location() != time.UTC || !got.Equal(in) {
		t.Fatalf("NewFixed(%v).Now() = %v (%v)", in, got, got.Location())
	}
}

func TestRealIsUTCAndMoves(t *testing.T) {
	a := Real{}.Now()
	if a.Location() != time.UTC {
		t.Fatalf("Real.Now location %v", a.Location())
	}
	if d := time.Since(a); d < 0 || d > time.Minute {
		t.Fatalf("Real.Now is %v away from time.Now", d)
	}
}

func TestPinnable(t *testing.T) {
	base := NewFixed(t0)
	p := NewPinnable(base)
	if !p.Now().Equal(t0) {
		t.Fatalf("unpinned Now = %v, want base %v", p.Now(), t0)
	}
	base.Advance(time.Second)
	if want := t0.Add(time.Second); !p.Now().Equal(want) {
		t.Fatalf("unpinned clock does not follow base: %v, want %v", p.Now(), want)
	}

	pin := time.Date(2020, 2, 2, 2, 2, 2, 0, time.FixedZone("Y", -7200))
	p.Pin(pin)
	base.Advance(time.Hour)
	got := p.Now()
	if !got.Equal(pin) || got.Location() != time.UTC {
		t.Fatalf("pinned Now = %v (%v), want %v in UTC", got, got.Location(), pin)
	}
	// Re-pinning moves the pin.
	p.Pin(pin.Add(time.Minute))
	if want := pin.Add(time.Minute); !p.Now().Equal(want) {
		t.Fatalf("re-pinned Now = %v, want %v", p.Now(), want)
	}

	p.Unpin()
	if want := t0.Add(time.Second + time.Hour); !p.Now().Equal(want) {
		t.Fatalf("after Unpin Now = %v, want base %v", p.Now(), want)
	}
	p.Unpin() // idempotent
	if want := t0.Add(time.Second + time.Hour); !p.Now().Equal(want) {
		t.Fatalf("after second Unpin Now = %v, want %v", p.Now(), want)
	}
}

func TestPinnableNilBaseIsReal(t *testing.T) {
	p := NewPinnable(nil)
	if d := time.Since(p.Now()); d < 0 || d > time.Minute {
		t.Fatalf("NewPinnable(nil).Now is %v away from the wall clock", d)
	}
}

// TestConcurrent is for -race: Set/Advance/Pin/Unpin/Now from many
// goroutines, and the fixed clock ends where the sum of the advances says.
func TestConcurrent(t *testing.T) {
	base := NewFixed(t0)
	p := NewPinnable(base)
	const workers, rounds = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				base.Advance(time.Millisecond)
				_ = base.Now()
				if w%2 == 0 {
					p.Pin(t0.Add(time.Duration(i) * time.Second))
				} else {
					p.Unpin()
				}
				_ = p.Now()
			}
		}()
	}
	wg.Wait()
	if want := t0.Add(workers * rounds * time.Millisecond); !base.Now().Equal(want) {
		t.Fatalf("after concurrent advances: %v, want %v (lost updates)", base.Now(), want)
	}
	p.Unpin()
	if !p.Now().Equal(base.Now()) {
		t.Fatalf("unpinned %v != base %v", p.Now(), base.Now())
	}
}
