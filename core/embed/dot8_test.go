package embed

import (
	"math/rand/v2"
	"testing"
)

// TestDot8MatchesPlainGo: the AVX2 dot product of int8 vectors (and the
// Go one used without AVX2) is the plain one, at lengths that are and are not multiples of 32.
func TestDot8MatchesPlainGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 31, 32, 33, 64, 100, 256, 768, 1536} {
		for range 20 {
			a, b := make([]int8, n), make([]int8, n)
			for i := range a {
				a[i], b[i] = int8(r.IntN(255)-127), int8(r.IntN(255)-127)
			}
			if n > 0 {
				a[0], b[0] = 127, -127 // the extremes quantise makes
			}
			var want int32
			for i := range a {
				want += int32(a[i]) * int32(b[i])
			}
			if got := dot8(a, b); got != want {
				t.Fatalf("n=%d: dot8 = %d, want %d", n, got, want)
			}
			if got := dot8Go(a, b); got != want { // without AVX2
				t.Fatalf("n=%d: dot8Go = %d, want %d", n, got, want)
			}
		}
	}
}
