// Package clock is engram's source of time. Nothing in the engine calls
// time.Now directly: the real clock serves the interactive console, a fixed
// clock serves tests and golden frames, and the engine's pinnable clock lets a
// batch step's `at` field decide what time it is.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock, in UTC.
type Real struct{}

// Now returns the current time in UTC.
func (Real) Now() time.Time { return time.Now().UTC() }

// Fixed is a clock that only moves when told to. Safe for concurrent use.
type Fixed struct {
	mu sync.Mutex
	t  time.Time
}

// NewFixed returns a clock standing at t.
func NewFixed(t time.Time) *Fixed { return &Fixed{t: t.UTC()} }

// Now returns the clock's time.
func (f *Fixed) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

// Set moves the clock to t.
func (f *Fixed) Set(t time.Time) {
	f.mu.Lock()
	f.t = t.UTC()
	f.mu.Unlock()
}

// Advance moves the clock forward by d.
func (f *Fixed) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// Pinnable is the engine's clock: it reads its base clock unless pinned to an
// instant (a batch step's `at`), in which case it stands still there until
// unpinned. Safe for concurrent use.
type Pinnable struct {
	base   Clock
	mu     sync.Mutex
	pinned bool
	at     time.Time
}

// NewPinnable wraps base (Real{} when nil).
func NewPinnable(base Clock) *Pinnable {
	if base == nil {
		base = Real{}
	}
	return &Pinnable{base: base}
}

// Now returns the pinned instant, or the base clock's time.
func (p *Pinnable) Now() time.Time {
	p.mu.Lock()
	pinned, at := p.pinned, p.at
	p.mu.Unlock()
	if pinned {
		return at
	}
	return p.base.Now()
}

// Base is the base clock's time, pinned or not: what time it is for
// everyone but the request that pinned the clock.
func (p *Pinnable) Base() time.Time { return p.base.Now() }

// Pin makes Now return t until Unpin.
func (p *Pinnable) Pin(t time.Time) {
	p.mu.Lock()
	p.pinned, p.at = true, t.UTC()
	p.mu.Unlock()
}

// Unpin returns the clock to its base.
func (p *Pinnable) Unpin() {
	p.mu.Lock()
	p.pinned = false
	p.mu.Unlock()
}

// State says whether the clock is pinned, and to what instant: for a caller
// that pins it for a while and then puts it back as it found it.
func (p *Pinnable) State() (at time.Time, pinned bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at, p.pinned
}

// Restore puts back a state that State returned.
func (p *Pinnable) Restore(at time.Time, pinned bool) {
	p.mu.Lock()
	p.at, p.pinned = at, pinned
	p.mu.Unlock()
}
