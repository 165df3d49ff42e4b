//go:build !amd64

package embed

// dot8 is the dot product of two int8 vectors of the same length.
func dot8(a, b []int8) int32 { return dot8Go(a, b) }
