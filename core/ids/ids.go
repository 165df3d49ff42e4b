// Package ids generates engram's identifiers: UUIDv7 (RFC 9562), whose first
// 48 bits are the engine clock's milliseconds, so ids sort by creation time.
// The remaining bits come from a seeded generator rather than the operating
// system, so that a run with a fixed clock and seed (a batch script with `at`
// on every step, a test) produces the same ids byte for byte.
package ids

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"github.com/engram-console/engram/core/clock"
	"github.com/google/uuid"
)

// Generator hands out UUIDv7 strings. Safe for concurrent use.
type Generator struct {
	clock clock.Clock

	mu      sync.Mutex
	rng     *rand.ChaCha8
	lastMs  int64
	counter uint16 // the 12-bit rand_a field, used as a counter within one millisecond
}

// New returns a generator reading time from c and randomness from a ChaCha8
// stream seeded with seed. Different seeds give unrelated id streams.
func New(c clock.Clock, seed string) *Generator {
	return &Generator{clock: c, rng: rand.NewChaCha8(sha256.Sum256([]byte("engram ids\x00" + seed)))}
}

// New returns a fresh id.
func (g *Generator) New() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.clock.Now().UnixMilli()
	switch {
	case ms > g.lastMs || ms < g.lastMs-1000:
		// A new millisecond (or a clock set far back, e.g. an earlier `at`):
		// start the counter at a random point in its lower half.
		g.lastMs = ms
		g.counter = uint16(g.rng.Uint64() & 0x7ff)
	default:
		// The same millisecond, or a clock that stepped back a little: stay
		// monotonic by counting, borrowing the next millisecond on overflow.
		g.counter++
		if g.counter > 0xfff {
			g.lastMs++
			g.counter = 0
		}
	}
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[0:8], uint64(g.lastMs)<<16|0x7000|uint64(g.counter))
	binary.BigEndian.PutUint64(u[8:16], g.rng.Uint64())
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u.String()
}
