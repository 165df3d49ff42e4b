package embed

import "golang.org/x/sys/cpu"

// hasAVX2 says whether dot8 may use the AVX2 instructions: 32 products
// of bytes at once, where Go's compiler makes one at a time.
var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func dot8AVX2(a, b *int8, n int) int32

// dot8 is the dot product of two int8 vectors of the same length, none
// of whose elements is -128 (quantise never makes one).
func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	n := len(a) &^ 31
	var s int32
	if hasAVX2 && n > 0 {
		s = dot8AVX2(&a[0], &b[0], n)
	} else {
		n = 0
	}
	return s + dot8Go(a[n:], b[n:])
}
