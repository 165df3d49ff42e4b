package cortex

import "testing"

// Once a large index is held, the heap may grow past the live heap by
// heapHeadroom (96 MB), by at least a quarter of it and by no more than
// the default GOGC's doubling.
func TestGCPercentGivesTheHeapAFixedHeadroom(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {10 * mb, 100}, {96 * mb, 100}, {192 * mb, 50}, {320 * mb, 30}, {384 * mb, 25}, {4096 * mb, 25},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("live %d MB: GOGC %d, want %d", c.live/mb, got, c.want)
		}
	}
}
